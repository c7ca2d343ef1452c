"""TLS settings: trust and client identity from PEM, PKCS12 or inline text, as Kafka reads them.

The control plane gets an :class:`ssl.SSLContext` (:meth:`TlsSettings.ssl_context`),
the data plane librdkafka's ``ssl.*`` names (``librdkafka_config.py``), from the same
files and with the same checks and messages. Files (CA bundles, keystores) are read
when a connection needs them, not when the settings are resolved: a rotated
certificate is picked up by the next connection. Java keystores (JKS, JCEKS) are
refused with the ``keytool`` command that converts them.
"""

from __future__ import annotations

import os
import re
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kshare_cli.connect.secret import REDACTED, Secret
from kshare_cli.errors import UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
    from cryptography.x509 import Certificate

__all__ = ["TlsSettings", "canonical_pem"]

# As tolerant as Kafka's own PEM parser: inline PEM in a .properties file usually
# arrives on one line (continuation lines are joined without their line breaks).
_PEM_BLOCK = re.compile(
    rb"-+BEGIN\s+(?P<label>[A-Z0-9]+(?:\s+[A-Z0-9]+)*)\s*-+\s+"
    rb"(?P<headers>(?:[A-Za-z][A-Za-z0-9-]*:[^\r\n]*[\r\n]+)*)"
    rb"(?P<body>[A-Za-z0-9/+=\s]*?)"
    rb"-+END\s+(?P=label)\s*-+"
)
_CERTIFICATE_LABELS = ("CERTIFICATE", "X509 CERTIFICATE")
_JKS_MAGIC = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}


def _read(path: Path, role: str) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"cannot read the {role} {path}: it is a directory") from None
    except OSError as error:
        raise UsageError(f"cannot read the {role} {path}: {error.strerror or error}") from None


def _store_kind(data: bytes) -> str:
    """What a key/trust store file really is, whatever its declared type says."""
    if data[:4] in _JKS_MAGIC:
        return _JKS_MAGIC[data[:4]]
    if not data.startswith(b"\x30") and b"-BEGIN" in data:
        return "PEM"
    return "PKCS12"


def _refuse_java_store(kind: str, path: Path, what: str) -> UsageError:
    target = path.with_suffix(".p12").name
    return UsageError(
        f"{path} is a {kind} {what}: {kind} {what}s are not supported; convert it with "
        f"keytool -importkeystore -srckeystore {path} -destkeystore {target} "
        f"-deststoretype PKCS12, then point ssl.{what}.location at {target} "
        f"(ssl.{what}.type=PKCS12)"
    )


def _pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """(label, canonical PEM) for each block, re-wrapped at 64 columns as OpenSSL expects."""
    blocks = []
    for match in _PEM_BLOCK.finditer(data):
        label = b" ".join(match.group("label").split())
        body = b"".join(match.group("body").split())
        wrapped = b"\n".join(body[at : at + 64] for at in range(0, len(body), 64))
        header_lines = match.group("headers").splitlines()
        headers = b"".join(line.strip() + b"\n" for line in header_lines if line.strip())
        if headers:
            headers += b"\n"
        pem = b"-----BEGIN %s-----\n%s%s\n-----END %s-----\n" % (label, headers, wrapped, label)
        blocks.append((label.decode("ascii"), pem))
    return blocks


def canonical_pem(text: str, *, keys: bool = False) -> str:
    """Certificates (or, with ``keys``, private keys) of PEM text, one block per line group."""
    wanted = (lambda label: "PRIVATE KEY" in label) if keys else _CERTIFICATE_LABELS.__contains__
    data = text.encode("ascii", "replace")
    return "".join(pem.decode("ascii") for label, pem in _pem_blocks(data) if wanted(label))


def _pem_certificates(data: bytes, source: str) -> list[Certificate]:
    from cryptography import x509

    blocks = [block for label, block in _pem_blocks(data) if label in _CERTIFICATE_LABELS]
    if not blocks:
        raise UsageError(f"{source} holds no PEM certificate")
    try:
        return [x509.load_pem_x509_certificate(block) for block in blocks]
    except ValueError:
        raise UsageError(f"{source} holds a malformed PEM certificate") from None


def _as_pem(certificates: list[Certificate]) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return "".join(cert.public_bytes(Encoding.PEM).decode("ascii") for cert in certificates)


def _pem_private_key(data: bytes, password: Secret | None, source: str) -> PrivateKeyTypes:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    blocks = [(label, block) for label, block in _pem_blocks(data) if "PRIVATE KEY" in label]
    if not blocks:
        raise UsageError(f"{source} holds no PEM private key")
    label, block = blocks[0]
    encrypted = label.startswith("ENCRYPTED") or b"Proc-Type: 4,ENCRYPTED" in block
    if encrypted and not password:
        raise UsageError(f"the private key in {source} is encrypted: set ssl.key.password")
    try:
        return load_pem_private_key(
            block, password.reveal().encode("utf-8") if encrypted and password else None
        )
    except (ValueError, TypeError, UnsupportedAlgorithm):
        reason = "wrong ssl.key.password" if encrypted else "malformed or unsupported key"
        raise UsageError(f"cannot load the private key in {source}: {reason}") from None


def _pkcs12_attempts(password: Secret | None) -> list[bytes | None]:
    """Passwords to try: without one, both "no password" and the empty password (openssl's)."""
    if password is None:
        return [None, b""]
    return [password.reveal().encode("utf-8")]


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Where trust and client identity come from; each file is read when a context is built.

    Trust: ``ca_file`` (PEM bundle, or a directory of hashed certificates),
    ``ca_pem`` (PEM text) or ``truststore_file`` (PKCS12), else the system's CAs.
    Identity (mutual TLS): ``keystore_file`` (PKCS12), ``cert_file`` + ``key_file``
    (PEM; without ``key_file`` the key is in ``cert_file``), or ``cert_pem`` +
    ``key_pem`` (inline PEM).
    """

    ca_file: Path | None = None
    ca_pem: str | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: Secret | None = None
    keystore_file: Path | None = None
    keystore_password: Secret | None = None
    truststore_file: Path | None = None
    truststore_password: Secret | None = None
    check_hostname: bool = True
    cert_pem: str | None = None
    key_pem: Secret | None = None
    verify_certificates: bool = True

    # -- trust ------------------------------------------------------------------------------

    def trusted_pem(self) -> str | None:
        """The configured CA certificates as PEM text, a PKCS12 truststore converted.

        The first of ``ca_pem``, ``truststore_file``, ``ca_file`` counts. None when
        the system's CAs apply or ``ca_file`` is a directory.
        """
        if self.ca_pem is not None:
            return _as_pem(_pem_certificates(self.ca_pem.encode("utf-8"), "the inline CA PEM"))
        if self.truststore_file is not None:
            return self._truststore_pem(self.truststore_file)
        if self.ca_file is not None and not self.ca_file.is_dir():
            data = _read(self.ca_file, "CA file")
            kind = _store_kind(data)
            if kind in _JKS_MAGIC.values():
                raise _refuse_java_store(kind, self.ca_file, "truststore")
            if kind != "PEM":
                raise UsageError(
                    f"the CA file {self.ca_file} is not PEM (a PKCS12 truststore? then set "
                    "ssl.truststore.location and ssl.truststore.type=PKCS12)"
                )
            return _as_pem(_pem_certificates(data, f"the CA file {self.ca_file}"))
        return None

    def _truststore_pem(self, path: Path) -> str:
        from cryptography.hazmat.primitives.serialization import pkcs12

        data = _read(path, "truststore")
        kind = _store_kind(data)
        if kind in _JKS_MAGIC.values():
            raise _refuse_java_store(kind, path, "truststore")
        if kind == "PEM":
            return _as_pem(_pem_certificates(data, f"the truststore {path}"))
        for attempt in _pkcs12_attempts(self.truststore_password):
            try:
                store = pkcs12.load_pkcs12(data, attempt)
                break
            except ValueError:
                continue
        else:
            raise UsageError(
                f"cannot open the PKCS12 truststore {path}: wrong or missing "
                "ssl.truststore.password, or not a PKCS12 file"
            )
        if store.key is not None:
            # Java's TrustManagerFactory trusts only a store's certificate entries; a
            # keystore has none, so Java refuses it. Trusting the key's own chain instead
            # would accept any broker that certificate's CA signed, not the cluster's CA.
            raise UsageError(
                f"ssl.truststore.location {path} is a keystore (it holds a private key): "
                "a truststore holds only the CA certificates to trust; point "
                "ssl.truststore.location at the cluster's truststore, and the keystore at "
                "ssl.keystore.location"
            )
        certificates = [entry.certificate for entry in store.additional_certs]
        if store.cert is not None:
            certificates.insert(0, store.cert.certificate)
        if not certificates:
            raise UsageError(f"the PKCS12 truststore {path} holds no certificates")
        return _as_pem(certificates)

    # -- identity ---------------------------------------------------------------------------

    def _client_identity(self) -> tuple[list[Certificate], PrivateKeyTypes] | None:
        """The client certificate chain (leaf first) and its key, from whichever source is set."""
        if self.keystore_file is not None:
            return self._keystore_identity(self.keystore_file)
        if self.cert_file is not None:
            cert_data = _read(self.cert_file, "client certificate")
            key_source = self.key_file or self.cert_file
            key_data = cert_data if self.key_file is None else _read(self.key_file, "client key")
            certificates = _pem_certificates(cert_data, f"the client certificate {self.cert_file}")
            key = _pem_private_key(key_data, self.key_password, str(key_source))
            return self._matched(certificates, key, str(self.cert_file))
        if self.cert_pem is not None and self.key_pem is not None:
            certificates = _pem_certificates(
                self.cert_pem.encode("utf-8"), "ssl.keystore.certificate.chain"
            )
            key = _pem_private_key(
                self.key_pem.reveal().encode("utf-8"), self.key_password, "ssl.keystore.key"
            )
            return self._matched(certificates, key, "ssl.keystore.certificate.chain")
        return None

    def _keystore_identity(self, path: Path) -> tuple[list[Certificate], PrivateKeyTypes]:
        from cryptography.hazmat.primitives.serialization import pkcs12

        data = _read(path, "keystore")
        kind = _store_kind(data)
        if kind in _JKS_MAGIC.values():
            raise _refuse_java_store(kind, path, "keystore")
        if kind == "PEM":
            certificates = _pem_certificates(data, f"the keystore {path}")
            return self._matched(
                certificates, _pem_private_key(data, self.key_password, str(path)), str(path)
            )
        for attempt in _pkcs12_attempts(self.keystore_password):
            try:
                key, certificate, additional = pkcs12.load_key_and_certificates(data, attempt)
                break
            except ValueError:
                continue
        else:
            raise UsageError(
                f"cannot open the PKCS12 keystore {path}: wrong or missing "
                "ssl.keystore.password, or not a PKCS12 file"
            )
        if key is None or certificate is None:
            raise UsageError(f"the PKCS12 keystore {path} holds no private key with a certificate")
        return self._matched([certificate, *additional], key, str(path))

    @staticmethod
    def _matched(
        certificates: list[Certificate], key: PrivateKeyTypes, source: str
    ) -> tuple[list[Certificate], PrivateKeyTypes]:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        def spki(public_key: Any) -> bytes:
            encoded: bytes = public_key.public_bytes(
                Encoding.DER, PublicFormat.SubjectPublicKeyInfo
            )
            return encoded

        if spki(key.public_key()) != spki(certificates[0].public_key()):
            raise UsageError(f"{source}: the private key does not match the certificate")
        return certificates, key

    # -- the context ------------------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext:
        """A client context: TLS 1.2+, hostname verification unless turned off.

        Raises UsageError with one line naming the file (never a password) when a
        file is missing, unreadable, of the wrong kind, or locked with another password.
        """
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            if self._ca_directory():
                context.load_verify_locations(capath=str(self.ca_file))
            elif (cadata := self.trusted_pem()) is not None:
                context.load_verify_locations(cadata=cadata)
            elif self.verify_certificates:
                context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        except ssl.SSLError as error:
            reason = error.reason or error.strerror or "refused by OpenSSL"
            raise UsageError(f"cannot use the configured CA certificates: {reason}") from None
        identity = self._client_identity()
        if identity is not None:
            _load_identity(context, *identity)
        if not self.verify_certificates:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context.check_hostname = self.check_hostname
        return context

    def _ca_directory(self) -> bool:
        return (
            self.ca_pem is None
            and self.truststore_file is None
            and self.ca_file is not None
            and self.ca_file.is_dir()
        )

    def add_librdkafka_config(self, config: dict[str, str]) -> None:
        """This TLS setup in librdkafka's ``ssl.*`` names, into ``config`` (secrets revealed)."""
        config["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else "none"
        if not self.verify_certificates:
            config["enable.ssl.certificate.verification"] = "false"
        if self.ca_file is not None and self.truststore_file is None and self.ca_pem is None:
            self.trusted_pem()  # the same checks (and messages) as the control plane
            config["ssl.ca.location"] = str(self.ca_file)
        elif (cadata := self.trusted_pem()) is not None:
            config["ssl.ca.pem"] = cadata
        # The same checks (and messages: "wrong ssl.key.password") as the control plane,
        # before librdkafka words them its own way ("ssl.key.location failed: ... PEM lib").
        self._client_identity()
        if self.key_password is not None:
            config["ssl.key.password"] = self.key_password.reveal()
        if self.keystore_file is not None:
            kind = _store_kind(_read(self.keystore_file, "keystore"))
            if kind in _JKS_MAGIC.values():
                raise _refuse_java_store(kind, self.keystore_file, "keystore")
            if kind == "PEM":
                config["ssl.certificate.location"] = str(self.keystore_file)
                config["ssl.key.location"] = str(self.keystore_file)
            else:
                config["ssl.keystore.location"] = str(self.keystore_file)
                if self.keystore_password is not None:
                    config["ssl.keystore.password"] = self.keystore_password.reveal()
        elif self.cert_file is not None:
            config["ssl.certificate.location"] = str(self.cert_file)
            config["ssl.key.location"] = str(self.key_file or self.cert_file)
        elif self.cert_pem is not None and self.key_pem is not None:
            config["ssl.certificate.pem"] = canonical_pem(self.cert_pem)
            config["ssl.key.pem"] = canonical_pem(self.key_pem.reveal(), keys=True)

    def add_redacted(self, shown: dict[str, str]) -> None:
        """This TLS setup as ``--debug`` and ``kshare profile show`` print it, into ``shown``."""
        shown["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else "none"
        shown["enable.ssl.certificate.verification"] = str(self.verify_certificates).lower()
        for key, path in (
            ("ssl.ca.location", self.ca_file),
            ("ssl.truststore.location", self.truststore_file),
            ("ssl.keystore.location", self.keystore_file),
            ("ssl.certificate.location", self.cert_file),
            ("ssl.key.location", self.key_file),
        ):
            if path is not None:
                shown[key] = str(path)
        if self.ca_pem is not None:
            shown["ssl.ca.pem"] = f"({self.ca_pem.count('BEGIN CERTIFICATE')} inline certificates)"
        if self.cert_pem is not None:
            shown["ssl.certificate.pem"] = "(inline certificate chain)"
        for key, secret in (
            ("ssl.truststore.password", self.truststore_password),
            ("ssl.keystore.password", self.keystore_password),
            ("ssl.key.password", self.key_password),
            ("ssl.key.pem", self.key_pem),
        ):
            if secret is not None:
                shown[key] = REDACTED


def _load_identity(
    context: ssl.SSLContext, certificates: list[Certificate], key: PrivateKeyTypes
) -> None:
    """Hand a certificate chain and key to ``ssl``, which reads keys only from files.

    The key goes to a private (0600) temporary file, encrypted with a one-time
    random passphrase, and the file is deleted as soon as OpenSSL has read it: no
    plaintext key ever touches the disk.
    """
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        PrivateFormat,
    )

    passphrase = secrets.token_hex(32).encode("ascii")
    pem = key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(passphrase)
    ) + b"".join(certificate.public_bytes(Encoding.PEM) for certificate in certificates)
    descriptor, name = tempfile.mkstemp(prefix="kshare-identity-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
        context.load_cert_chain(name, password=passphrase)
    except ssl.SSLError as error:
        reason = error.reason or error.strerror or "refused by OpenSSL"
        raise UsageError(f"cannot use the client certificate: {reason}") from None
    finally:
        os.unlink(name)
