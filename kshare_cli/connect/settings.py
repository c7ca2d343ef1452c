"""One connection-settings object for both planes: our asyncio client and confluent-kafka.

An operator configures TLS and SASL once, in the ``--command-config`` file they
already pass to ``kafka-share-groups.sh`` (Java names) or to librdkafka tools
(librdkafka names); both vocabularies map onto the same :class:`ConnectionSettings`.
The control plane asks it for an :class:`ssl.SSLContext` and SASL credentials;
the data plane asks it for a librdkafka configuration. Neither plane sees the
other's vocabulary, so a property can never mean one thing to the admin commands
and another to ``kshare consume``.

Secrets travel as :class:`Secret`, whose ``repr`` and ``str`` are ``***``: a
settings object can be logged, put in an exception or shown by ``--debug``
without leaking a password. Only :meth:`Secret.reveal` gives the text, and only
the code that hands it to a socket or to librdkafka calls it.

Files (CA bundles, keystores, token files) are read when a connection needs
them, not when the settings are resolved: a rotated certificate or token is
picked up by the next connection, and ``kshare profile add`` does not need the
files on the machine that writes the profile.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
import secrets
import ssl
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kshare_cli.errors import AuthenticationFailed, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
    from cryptography.x509 import Certificate

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
BOOTSTRAP_ENV = "KSHARE_BOOTSTRAP_SERVERS"
COMMAND_CONFIG_ENV = "KSHARE_COMMAND_CONFIG"
NO_BOOTSTRAP = (
    "no bootstrap server: pass --bootstrap-server, set KSHARE_BOOTSTRAP_SERVERS, "
    "or add a profile with `kshare profile add`"
)
DEFAULT_CLIENT_ID = "kshare"
REDACTED = "***"
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# A static token's lifetime is unknown when it is not a JWT: librdkafka then asks
# again (re-reading a token file) after 80% of this.
_OPAQUE_TOKEN_LIFETIME_S = 300.0
# What librdkafka is told of a token that has already expired: long enough to send it, so
# that the broker's refusal, not a callback failure, ends the connection.
_REFUSED_TOKEN_LIFETIME_S = 5.0


class Secret:
    """A string that never shows itself: ``repr`` and ``str`` are ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret text, for the one place that must send it."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(
            self._value.encode("utf-8", "surrogatepass"),
            other._value.encode("utf-8", "surrogatepass"),
        )

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


# --- bootstrap servers --------------------------------------------------------------------------

_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def split_host_port(address: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port`` to (host, port); UsageError saying what is wrong."""
    import ipaddress

    text = address.strip()
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise UsageError(f"bootstrap server {address!r}: write host:port, without '{scheme}://'")
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise UsageError(
                f"bootstrap server {address!r}: write IPv6 addresses as [address]:port"
            )
        host, port_text = text[1:close], text[close + 2 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise UsageError(
                f"bootstrap server {address!r}: {host!r} is not an IPv6 address"
            ) from None
    else:
        host, separator, port_text = text.rpartition(":")
        if not separator or not host:
            raise UsageError(f"bootstrap server {address!r}: expected host:port")
        if ":" in host:
            raise UsageError(
                f"bootstrap server {address!r}: write IPv6 addresses as [address]:port"
            )
        if not _HOST.fullmatch(host):
            raise UsageError(f"bootstrap server {address!r}: {host!r} is not a host name")
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise UsageError(f"bootstrap server {address!r}: the port must be 1-65535")
    return host, int(port_text)


def parse_bootstrap(value: str) -> tuple[str, ...]:
    """A comma-separated ``host:port`` list, each validated, normalised (IPv6 in brackets)."""
    servers = []
    for part in value.split(","):
        if not part.strip():
            continue
        host, port = split_host_port(part)
        servers.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    if not servers:
        raise UsageError("empty bootstrap server list: expected host:port[,host:port...]")
    return tuple(servers)


# --- OAUTHBEARER ---------------------------------------------------------------------------------

ClaimValue = str | float | tuple[str, ...]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _jwt_claims(token: str) -> dict[str, Any] | None:
    """The claims of a JWS compact token, unverified; None for an opaque token."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def _numeric_claim(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def token_claims_problem(token: str, now: float | None = None) -> str | None:
    """Why a bearer token's own claims make any broker refuse it now; None when they do not.

    The one home of the time checks of Kafka's validators
    (``OAuthBearerValidationUtils``: ``exp`` not yet passed, ``iat`` not in the
    future, with no clock skew allowed by default; JWT validators also honour
    ``nbf``). kshare holds the token, so it says which claim and when, before a
    client is built (librdkafka refuses an expired token only after waiting 10 s
    for one) and after a broker answered ``invalid_token``. An opaque (non-JWT)
    token has no claims to read: None.
    """
    claims = _jwt_claims(token)
    if claims is None:
        return None
    now = time.time() if now is None else now
    expires = _numeric_claim(claims, "exp")
    if expires is not None and expires <= now:
        return f"the OAUTHBEARER token expired at {_utc(expires)} ({_span(now - expires)} ago)"
    not_before = _numeric_claim(claims, "nbf")
    if not_before is not None and not_before > now:
        return (
            f"the OAUTHBEARER token is not valid before {_utc(not_before)} "
            f"(in {_span(not_before - now)})"
        )
    issued = _numeric_claim(claims, "iat")
    if issued is not None and issued > now:
        return (
            f"the OAUTHBEARER token was issued in the future, at {_utc(issued)} "
            f"({_span(issued - now)} from now: check this machine's clock)"
        )
    return None


@dataclass(frozen=True, slots=True)
class UnsecuredJwt:
    """An unsigned JWT minted afresh for each connection, as Kafka's unsecured login does.

    ``OAuthBearerUnsecuredLoginCallbackHandler`` (``unsecuredLoginStringClaim_sub="alice"``)
    and librdkafka's ``enable.sasl.oauthbearer.unsecure.jwt`` both build
    ``base64url({"alg":"none"}).base64url(claims).`` with ``exp`` and ``iat``; only
    brokers configured for unsecured tokens (test clusters) accept it.
    """

    claims: tuple[tuple[str, ClaimValue], ...]
    principal_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    lifetime_seconds: int = 3600

    @property
    def principal(self) -> str:
        value = dict(self.claims).get(self.principal_claim_name)
        return value if isinstance(value, str) else ""

    def mint(self, now: float | None = None) -> str:
        """A token whose ``iat`` is never after ``now``, as Kafka's validator sees it.

        Kafka's validator (clock skew 0 by default) refuses ``1000 * iat`` greater
        than its own ``currentTimeMillis()``, so the time is cut (floored) to the
        millisecond as Kafka's login handler does (``time.milliseconds() / 1000.0``):
        rounding could put ``iat`` up to half a millisecond in the future.
        """
        issued_ms = math.floor((time.time() if now is None else now) * 1000)
        payload: dict[str, Any] = {
            "exp": (issued_ms + self.lifetime_seconds * 1000) / 1000,
            "iat": issued_ms / 1000,
        }
        for name, value in self.claims:
            payload[name] = list(value) if isinstance(value, tuple) else value
        header = json.dumps({"alg": "none"}, separators=(",", ":")).encode()
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        return f"{_b64url(header)}.{_b64url(body)}."


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """SASL mechanism and credentials; the password and any static token are :class:`Secret`."""

    mechanism: str  # "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" | "OAUTHBEARER"
    username: str | None = None
    password: Secret | None = None
    token: Secret | None = None  # OAUTHBEARER static token
    token_file: Path | None = None  # OAUTHBEARER token, re-read for every connection
    unsecured_jwt: UnsecuredJwt | None = None  # OAUTHBEARER unsecured token, minted per connection
    extensions: tuple[tuple[str, str], ...] = ()  # OAUTHBEARER SASL extensions (RFC 7628)
    # The token oauth_cb last handed to librdkafka, kept for a refresh that cannot read a new one.
    _handed_out: list[str] = field(default_factory=list, compare=False, repr=False, hash=False)

    def oauth_token(self, *, check_claims: bool = True) -> str:
        """The bearer token for the next connection (re-reading ``token_file``, or minting).

        Raises UsageError naming the file when it cannot be read or is empty, and
        (unless ``check_claims`` is false) AuthenticationFailed when the token's
        own claims say no broker will take it now (:func:`token_claims_problem`).
        """
        token = self._read_token()
        problem = token_claims_problem(token) if check_claims else None
        if problem is not None:
            raise AuthenticationFailed(f"{problem}; {self._fresh_token_hint()}")
        return token

    def _fresh_token_hint(self) -> str:
        if self.token_file is not None:
            return f"put a fresh token in kshare.oauthbearer.token.file {self.token_file}"
        return "set kshare.oauthbearer.token to a fresh token"

    def _read_token(self) -> str:
        if self.token is not None:
            return self.token.reveal()
        if self.token_file is not None:
            try:
                text = self.token_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                reason = getattr(error, "strerror", None) or "not UTF-8 text"
                raise UsageError(
                    f"cannot read kshare.oauthbearer.token.file {self.token_file}: {reason}"
                ) from None
            if not text:
                raise UsageError(f"kshare.oauthbearer.token.file {self.token_file} is empty")
            return text
        if self.unsecured_jwt is not None:
            return self.unsecured_jwt.mint()
        raise UsageError(f"SASL/{self.mechanism} has no bearer token configured")

    def oauth_cb(self, config: str = "") -> tuple[str, float, str, dict[str, str]]:
        """confluent-kafka's ``oauth_cb``: ``(token, expiry epoch seconds, principal, extensions)``.

        librdkafka has no setting for a static token; it calls this before the
        token expires (at 80% of its lifetime), which re-reads a token file. A
        JWT's own ``exp`` is used when present; an opaque token is re-read every
        few minutes. ``config`` is librdkafka's ``sasl.oauthbearer.config``, unused.

        Whatever this raises, confluent-kafka turns into a 10 s wait and "OAuth
        token not set" (a SystemError when a ShareConsumer is being built), so an
        expired token is checked before any client is built
        (:meth:`ConnectionSettings.confluent_config`) and here it is handed over
        as it is: librdkafka refuses an ``exp`` already past, so a token that
        expired since is given a moment's lifetime, the broker answers
        ``invalid_token``, and kshare names the claim (:func:`token_claims_problem`).
        """
        try:
            token = self.oauth_token(check_claims=False)
        except UsageError:
            if not self._handed_out:
                raise  # the first token, read moments ago by confluent_config: a race
            # A token file being rewritten (or gone): keep the session on the token it has.
            token = self._handed_out[-1]
        self._handed_out[:] = [token]
        claims = _jwt_claims(token) or {}
        expiry = _numeric_claim(claims, "exp")
        if expiry is None:
            expiry = time.time() + _OPAQUE_TOKEN_LIFETIME_S
        expiry = max(expiry, time.time() + _REFUSED_TOKEN_LIFETIME_S)
        principal_claim = (
            self.unsecured_jwt.principal_claim_name if self.unsecured_jwt is not None else "sub"
        )
        principal = claims.get(principal_claim)
        if not isinstance(principal, str) or not principal:
            principal = self.username or "kshare"
        return token, float(expiry), principal, dict(self.extensions)


# --- TLS ---------------------------------------------------------------------------------------

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

    def _librdkafka(self, config: dict[str, str]) -> None:
        config["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else "none"
        if not self.verify_certificates:
            config["enable.ssl.certificate.verification"] = "false"
        if self.ca_file is not None and self.truststore_file is None and self.ca_pem is None:
            self.trusted_pem()  # the same checks (and messages) as the control plane
            config["ssl.ca.location"] = str(self.ca_file)
        elif (cadata := self.trusted_pem()) is not None:
            config["ssl.ca.pem"] = cadata
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

    def _redacted(self, shown: dict[str, str]) -> None:
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


# --- the settings object -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Everything needed to reach a cluster, for either plane. Safe to print."""

    bootstrap_servers: tuple[str, ...]
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    tls: TlsSettings | None = None  # set when the protocol is SSL or SASL_SSL
    sasl: SaslSettings | None = None  # set when the protocol is SASL_*
    client_id: str = DEFAULT_CLIENT_ID
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    # One line per problem kshare ignored (unknown properties, ...); the command prints them.
    warnings: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def _effective_tls(self) -> TlsSettings | None:
        """``tls``, or Kafka's defaults (system CAs, hostname checks) for SSL without it."""
        if self.tls is not None:
            return self.tls
        return TlsSettings() if self.security_protocol in ("SSL", "SASL_SSL") else None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The control plane's TLS context; None for PLAINTEXT and SASL_PLAINTEXT."""
        tls = self._effective_tls()
        return tls.ssl_context() if tls is not None else None

    def librdkafka_config(self) -> dict[str, str]:
        """The same settings in librdkafka's names, secrets revealed, for confluent-kafka.

        OAUTHBEARER with a static token or token file cannot be said in strings:
        librdkafka needs a token callback. Use :meth:`confluent_config`, which adds
        ``oauth_cb`` (:meth:`SaslSettings.oauth_cb`) when it is needed. An unsecured
        JWT with only a principal and a scope maps onto librdkafka's own
        ``enable.sasl.oauthbearer.unsecure.jwt``. Raises UsageError on the same file
        problems as :meth:`ssl_context` (a PKCS12 truststore is converted to
        ``ssl.ca.pem`` here).
        """
        config = {
            "bootstrap.servers": ",".join(self.bootstrap_servers),
            "security.protocol": self.security_protocol,
            "client.id": self.client_id,
        }
        if (tls := self._effective_tls()) is not None:
            tls._librdkafka(config)
        sasl = self.sasl
        if sasl is not None:
            config["sasl.mechanism"] = sasl.mechanism
            if sasl.username is not None:
                config["sasl.username"] = sasl.username
            if sasl.password is not None:
                config["sasl.password"] = sasl.password.reveal()
            if _librdkafka_unsecured_jwt(sasl):
                assert sasl.unsecured_jwt is not None
                config["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
                config["sasl.oauthbearer.config"] = _librdkafka_oauthbearer_config(sasl)
        return config

    def needs_oauth_cb(self) -> bool:
        """Whether confluent-kafka needs ``oauth_cb`` (OAUTHBEARER beyond librdkafka's own JWT)."""
        return (
            self.sasl is not None
            and self.sasl.mechanism == "OAUTHBEARER"
            and not _librdkafka_unsecured_jwt(self.sasl)
        )

    def confluent_config(self) -> dict[str, Any]:
        """:meth:`librdkafka_config` plus ``oauth_cb`` when librdkafka cannot get a token alone.

        Raises AuthenticationFailed when that token has expired (or is not valid
        yet), and UsageError when its file cannot be read: before a client is built.
        """
        config: dict[str, Any] = dict(self.librdkafka_config())
        if self.needs_oauth_cb():
            assert self.sasl is not None
            # Before any client exists: confluent-kafka waits 10 s for a token it refuses.
            self.sasl.oauth_token()
            config["oauth_cb"] = self.sasl.oauth_cb
        return config

    def redacted(self) -> dict[str, str]:
        """The settings for ``--debug`` and ``kshare profile show``: secrets as ``***``."""
        shown = {
            "bootstrap.servers": ",".join(self.bootstrap_servers),
            "security.protocol": self.security_protocol,
            "client.id": self.client_id,
            "request.timeout.ms": str(self.request_timeout_ms),
        }
        if self.sasl is not None:
            sasl = self.sasl
            shown["sasl.mechanism"] = sasl.mechanism
            if sasl.username is not None:
                shown["sasl.username"] = sasl.username
            if sasl.password is not None:
                shown["sasl.password"] = REDACTED
            if sasl.token is not None:
                shown["kshare.oauthbearer.token"] = REDACTED
            if sasl.token_file is not None:
                shown["kshare.oauthbearer.token.file"] = str(sasl.token_file)
            if sasl.unsecured_jwt is not None:
                shown["oauthbearer.unsecured.principal"] = sasl.unsecured_jwt.principal
            if sasl.extensions:
                shown["oauthbearer.extensions"] = ",".join(name for name, _ in sasl.extensions)
        if (tls := self._effective_tls()) is not None:
            tls._redacted(shown)
        return shown


def _librdkafka_unsecured_jwt(sasl: SaslSettings) -> bool:
    """Whether librdkafka's built-in unsecured JWT says exactly what ours would.

    librdkafka's ``sasl.oauthbearer.config`` holds a principal, a list-valued scope
    and extensions, separated by spaces; anything else (other claims, a string
    scope, a space in a value) goes through ``oauth_cb`` instead.
    """
    jwt = sasl.unsecured_jwt
    if sasl.mechanism != "OAUTHBEARER" or jwt is None or sasl.token or sasl.token_file:
        return False
    claims = dict(jwt.claims)
    if not set(claims) <= {jwt.principal_claim_name, jwt.scope_claim_name}:
        return False
    scope = claims.get(jwt.scope_claim_name)
    if scope is not None and not (
        isinstance(scope, tuple)
        and scope
        and all(part and " " not in part and "," not in part for part in scope)
    ):
        return False
    return (
        " " not in jwt.principal
        and 0 < jwt.lifetime_seconds <= 2**31 - 1
        and all(" " not in value for _, value in sasl.extensions)
    )


def _librdkafka_oauthbearer_config(sasl: SaslSettings) -> str:
    jwt = sasl.unsecured_jwt
    assert jwt is not None
    parts = [f"principal={jwt.principal}", f"lifeSeconds={jwt.lifetime_seconds}"]
    if jwt.principal_claim_name != "sub":
        parts.append(f"principalClaimName={jwt.principal_claim_name}")
    scope = dict(jwt.claims).get(jwt.scope_claim_name)
    if scope is not None:
        if jwt.scope_claim_name != "scope":
            parts.append(f"scopeClaimName={jwt.scope_claim_name}")
        assert isinstance(scope, tuple)  # _librdkafka_unsecured_jwt admits list scopes only
        parts.append(f"scope={','.join(scope)}")
    parts.extend(f"extension_{name}={value}" for name, value in sasl.extensions)
    return " ".join(parts)


# --- precedence --------------------------------------------------------------------------------


def resolve_settings(
    *,
    bootstrap: str | None,
    command_config: Path | None,
    profile: str | None,
    environ: Mapping[str, str] = os.environ,
    profiles_path: Path | None = None,
    overrides: Mapping[str, str] | None = None,
    profile_warnings: bool = False,
) -> ConnectionSettings:
    """The settings a command runs with: flags, then environment, then the profile.

    - Bootstrap servers: ``--bootstrap-server``; ``--profile NAME``; ``KSHARE_BOOTSTRAP_SERVERS``;
      the current profile; ``bootstrap.servers`` inside the client properties. An empty
      ``--bootstrap-server`` is a UsageError; an empty variable counts as unset.
    - Client properties: ``--command-config``; the named profile's; ``KSHARE_COMMAND_CONFIG``;
      the current profile's. A profile's properties are its ``command_config`` file
      plus its inline ``properties`` (which win).
    - ``overrides`` (``--property``-style) win over every file.
    - Warnings about a profile's own properties (unused, unknown) were given when it
      was saved (``kshare profile add``); a command using it does not repeat them on
      every run. ``profile_warnings`` asks for them (``kshare profile show``).

    An explicit ``--profile`` is a flag, so it outranks the environment. The
    *current* profile is only consulted when neither a flag nor the environment
    names a bootstrap server: ``--bootstrap-server localhost:9092`` must never
    send the current profile's credentials to another cluster.
    """
    # Imported here: properties.py builds settings objects, so it imports this module.
    from kshare_cli.connect.profiles import Profile, ProfileStore, default_profiles_path
    from kshare_cli.connect.properties import PropertySources, settings_from_properties

    if bootstrap is not None and not bootstrap.strip():
        # An empty flag is a mistake (an unset shell variable: -b "$BROKERS"); falling back
        # to the environment or a profile would silently reach some other cluster.
        raise UsageError("--bootstrap-server is empty: expected host:port[,host:port...]")
    # An empty variable counts as unset, as shells treat KSHARE_BOOTSTRAP_SERVERS= .
    env_bootstrap = (environ.get(BOOTSTRAP_ENV) or "").strip() or None
    env_config_text = (environ.get(COMMAND_CONFIG_ENV) or "").strip()
    env_config = Path(env_config_text).expanduser() if env_config_text else None

    def store() -> ProfileStore:
        return ProfileStore(profiles_path or default_profiles_path(environ))

    chosen: Profile | None = None
    chosen_label = ""
    if profile is not None:
        chosen = store().get(profile)
        chosen_label = f"profile '{profile}'"
    elif bootstrap is None and env_bootstrap is None:
        chosen = store().get_current()
        chosen_label = f"current profile '{chosen.name}'" if chosen else ""

    sources = PropertySources()
    quiet: set[str] = set()  # the origins of a saved profile's properties

    def merge_profile(chosen: Profile) -> None:
        if chosen.command_config is not None:
            sources.add_file(chosen.command_config, label=f"{chosen_label} command_config")
            quiet.add(str(chosen.command_config))
        sources.add(chosen.property_map(), chosen_label)
        quiet.add(chosen_label)

    if command_config is not None:
        sources.add_file(command_config)
    elif profile is not None and chosen is not None:
        merge_profile(chosen)
    elif env_config is not None:
        sources.add_file(env_config, label=COMMAND_CONFIG_ENV)
    elif chosen is not None:
        merge_profile(chosen)
    sources.add(overrides or {}, "--property")
    properties, origins = sources.properties, sources.origins

    if bootstrap is not None:
        servers = parse_bootstrap(bootstrap)
    elif profile is not None and chosen is not None:
        servers = _parse_bootstrap_from(",".join(chosen.bootstrap_servers), chosen_label)
    elif env_bootstrap is not None:
        servers = _parse_bootstrap_from(env_bootstrap, BOOTSTRAP_ENV)
    elif chosen is not None:
        servers = _parse_bootstrap_from(",".join(chosen.bootstrap_servers), chosen_label)
    elif properties.get("bootstrap.servers", "").strip():
        servers = _parse_bootstrap_from(
            properties["bootstrap.servers"], origins.get("bootstrap.servers", "")
        )
    else:
        raise UsageError(NO_BOOTSTRAP)
    return settings_from_properties(
        properties,
        bootstrap_servers=servers,
        origins=origins,
        notes=sources.notes,
        quiet_origins=() if profile_warnings else quiet,
    )


def _parse_bootstrap_from(value: str, origin: str) -> tuple[str, ...]:
    try:
        return parse_bootstrap(value)
    except UsageError as error:
        raise UsageError(f"{origin}: {error}") from None
