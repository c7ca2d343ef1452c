"""Certificates, key stores and secured sandbox listeners for TLS and SASL tests.

``tls_material`` (session scope) is a throw-away PKI made with ``trustme``: a CA,
a server certificate for 127.0.0.1 and localhost, a client certificate, the
client key also encrypted with a password, PKCS12 key and trust stores as Java
and librdkafka users have them, and a second, unrelated CA whose certificates
nobody trusts (for the negative tests). ``secure_sandbox`` starts a sandbox
whose listener is SSL, SASL_PLAINTEXT or SASL_SSL with those certificates.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kshare_cli.sandbox.security import MECHANISMS, ListenerSecurity, server_ssl_context
from tests.support.sandbox_thread import SandboxThread

#: SASL users of ``secure_sandbox`` unless a test gives its own.
USERS: Mapping[str, str] = {"alice": "alice-secret", "bob": "bob-secret"}

KEY_PASSWORD = "client-key-pass"
KEYSTORE_PASSWORD = "keystore-pass"
TRUSTSTORE_PASSWORD = "truststore-pass"


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of the PEM and PKCS12 files, and the passwords that open them."""

    directory: Path
    ca: trustme.CA
    ca_pem: Path  # ca.pem: the CA that signed the server and client certificates
    server_cert: Path  # server.pem (SAN 127.0.0.1, localhost)
    server_key: Path  # server.key
    client_cert: Path  # client.pem (CN kshare-client)
    client_key: Path  # client.key (unencrypted PKCS8)
    client_key_encrypted: Path  # client-encrypted.key, password KEY_PASSWORD
    key_password: str
    keystore: Path  # client.p12: client key + certificate chain, password KEYSTORE_PASSWORD
    keystore_password: str
    truststore: Path  # truststore.p12: the CA only, password TRUSTSTORE_PASSWORD
    truststore_certs_only: Path  # truststore-certs.p12: the CA as a plain PKCS12 cert bag
    truststore_password: str
    untrusted_ca_pem: Path  # untrusted-ca.pem: a CA that signed nothing the server trusts
    untrusted_server_cert: Path  # untrusted-server.pem / .key: a server cert from that CA
    untrusted_server_key: Path
    untrusted_client_cert: Path  # untrusted-client.pem / .key: a client cert from that CA
    untrusted_client_key: Path

    def server_context(self, *, require_client_cert: bool = False) -> ssl.SSLContext:
        """The sandbox's server context; with ``require_client_cert``, ssl.client.auth=required."""
        return server_ssl_context(
            self.server_cert,
            self.server_key,
            ca_file=self.ca_pem if require_client_cert else None,
            require_client_cert=require_client_cert,
        )

    def client_context(self, *, with_client_cert: bool = False) -> ssl.SSLContext:
        """A Python client context that trusts the CA (for raw-socket tests)."""
        context = ssl.create_default_context(cafile=str(self.ca_pem))
        if with_client_cert:
            context.load_cert_chain(str(self.client_cert), str(self.client_key))
        return context


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def make_tls_material(directory: Path) -> TlsMaterial:
    """Write a fresh PKI into ``directory``."""
    ca = trustme.CA(organization_name="kshare test CA")
    server = ca.issue_cert("127.0.0.1", "localhost", common_name="kshare-sandbox")
    client = ca.issue_cert("kshare-client@example.com", common_name="kshare-client")
    untrusted = trustme.CA(organization_name="kshare untrusted CA")
    untrusted_server = untrusted.issue_cert("127.0.0.1", "localhost", common_name="impostor")
    untrusted_client = untrusted.issue_cert("mallory@example.com", common_name="mallory")

    def chain(leaf: trustme.LeafCert) -> bytes:
        return b"".join(blob.bytes() for blob in leaf.cert_chain_pems)

    client_key = serialization.load_pem_private_key(client.private_key_pem.bytes(), None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    client_certs = [x509.load_pem_x509_certificate(b.bytes()) for b in client.cert_chain_pems]
    encrypted_key = client_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
    )
    keystore = pkcs12.serialize_key_and_certificates(
        b"kshare-client",
        client_key,  # type: ignore[arg-type]
        client_certs[0],
        client_certs[1:] or None,
        serialization.BestAvailableEncryption(KEYSTORE_PASSWORD.encode()),
    )
    encryption = serialization.BestAvailableEncryption(TRUSTSTORE_PASSWORD.encode())
    certs_only = pkcs12.serialize_key_and_certificates(None, None, None, [ca_cert], encryption)
    if hasattr(pkcs12, "serialize_java_truststore"):
        # Java's truststore.p12: each certificate flagged as a trusted entry.
        truststore = pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(ca_cert, b"kshare-ca")], encryption
        )
    else:  # older cryptography: a plain certificate bag, which Python and librdkafka read too
        truststore = certs_only

    return TlsMaterial(
        directory=directory,
        ca=ca,
        ca_pem=_write(directory / "ca.pem", ca.cert_pem.bytes()),
        server_cert=_write(directory / "server.pem", chain(server)),
        server_key=_write(directory / "server.key", server.private_key_pem.bytes()),
        client_cert=_write(directory / "client.pem", chain(client)),
        client_key=_write(directory / "client.key", client.private_key_pem.bytes()),
        client_key_encrypted=_write(directory / "client-encrypted.key", encrypted_key),
        key_password=KEY_PASSWORD,
        keystore=_write(directory / "client.p12", keystore),
        keystore_password=KEYSTORE_PASSWORD,
        truststore=_write(directory / "truststore.p12", truststore),
        truststore_certs_only=_write(directory / "truststore-certs.p12", certs_only),
        truststore_password=TRUSTSTORE_PASSWORD,
        untrusted_ca_pem=_write(directory / "untrusted-ca.pem", untrusted.cert_pem.bytes()),
        untrusted_server_cert=_write(directory / "untrusted-server.pem", chain(untrusted_server)),
        untrusted_server_key=_write(
            directory / "untrusted-server.key", untrusted_server.private_key_pem.bytes()
        ),
        untrusted_client_cert=_write(directory / "untrusted-client.pem", chain(untrusted_client)),
        untrusted_client_key=_write(
            directory / "untrusted-client.key", untrusted_client.private_key_pem.bytes()
        ),
    )


@pytest.fixture(scope="session")
def tls_material(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


SecureSandbox = Callable[..., SandboxThread]


@pytest.fixture
def secure_sandbox(tls_material: TlsMaterial) -> Iterator[SecureSandbox]:
    """Factory: ``secure_sandbox("SASL_SSL", mechanisms=("PLAIN",), users={...})``.

    Returns a started SandboxThread (``.bootstrap``, ``.security``); every sandbox
    it started is stopped at teardown. ``oauth_tokens`` and other SandboxThread
    keywords (``share_groups=False``, ``settings=...``) pass through.
    """
    started: list[SandboxThread] = []

    def start(
        protocol: str,
        mechanisms: Sequence[str] = MECHANISMS,
        users: Mapping[str, str] = USERS,
        require_client_cert: bool = False,
        oauth_tokens: frozenset[str] | None = None,
        **options: object,
    ) -> SandboxThread:
        tls = protocol in ("SSL", "SASL_SSL")
        security = ListenerSecurity(
            protocol=protocol,
            ssl_context=(
                tls_material.server_context(require_client_cert=require_client_cert)
                if tls
                else None
            ),
            require_client_cert=require_client_cert,
            users=users,
            mechanisms=tuple(mechanisms),
            oauth_tokens=oauth_tokens,
        )
        sandbox = SandboxThread(security=security, **options)  # type: ignore[arg-type]
        sandbox.start()
        started.append(sandbox)
        return sandbox

    yield start
    for sandbox in started:
        sandbox.stop()


def librdkafka_config(
    sandbox: SandboxThread,
    material: TlsMaterial,
    *,
    mechanism: str | None = None,
    username: str | None = None,
    password: str | None = None,
    **extra: object,
) -> dict[str, object]:
    """confluent-kafka properties for a secured sandbox: protocol, CA, and SASL when asked."""
    security = sandbox.security
    protocol = "PLAINTEXT" if security is None else security.protocol
    config: dict[str, object] = {
        "bootstrap.servers": sandbox.bootstrap,
        "security.protocol": protocol,
    }
    if protocol in ("SSL", "SASL_SSL"):
        config["ssl.ca.location"] = str(material.ca_pem)
    if mechanism is not None:
        config["sasl.mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            config["enable.sasl.oauthbearer.unsecure.jwt"] = True
            config["sasl.oauthbearer.config"] = f"principal={username or 'alice'}"
        else:
            config["sasl.username"] = username or "alice"
            config["sasl.password"] = password if password is not None else USERS["alice"]
    config.update(extra)
    return config
