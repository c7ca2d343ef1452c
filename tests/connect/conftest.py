"""A throw-away PKI for the connect/ tests, and a TLS server that reports what it saw.

The material is generated here (``trustme`` + ``cryptography``) rather than taken
from a shared fixture, because these tests need odd shapes on purpose: an
encrypted key, a key and certificate in one file, PKCS12 stores with and without
a password, a file that only looks like a JKS keystore, a server certificate
for another host name.

``tls_server`` answers TLS on 127.0.0.1 and records, per connection, the
client certificate's common name (or the handshake error). Tests wait on that
record, never on time.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

# Distinctive, so a test can prove they never leak into output or errors.
KEY_PASSWORD = "key-pass-5ecret-K1"
KEYSTORE_PASSWORD = "store-pass-5ecret-K2"
TRUSTSTORE_PASSWORD = "trust-pass-5ecret-K3"
CLIENT_CN = "kshare-client"


@dataclass(frozen=True)
class Pki:
    directory: Path
    ca_pem: Path  # the CA that signed the server and client certificates
    server_chain: Path  # server certificate for 127.0.0.1 and localhost
    server_key: Path
    other_host_chain: Path  # a server certificate for kafka.example only (same CA)
    other_host_key: Path
    client_cert: Path  # CN kshare-client
    client_key: Path  # unencrypted
    client_key_encrypted: Path  # PKCS8, KEY_PASSWORD
    client_key_traditional: Path  # OpenSSL's "Proc-Type: 4,ENCRYPTED" PEM, KEY_PASSWORD
    client_combined: Path  # key and certificate chain in one PEM file
    keystore: Path  # PKCS12: client key + chain, KEYSTORE_PASSWORD
    keystore_no_password: Path  # PKCS12 without a password
    truststore: Path  # PKCS12: the CA only, TRUSTSTORE_PASSWORD
    untrusted_ca_pem: Path  # a CA that signed nothing here
    stray_key: Path  # a key that belongs to no certificate
    jks: Path  # starts with Java's JKS magic number

    def text(self, path: Path) -> str:
        return path.read_text()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _make_pki(directory: Path) -> Pki:
    ca = trustme.CA(organization_name="kshare connect test CA")
    server = ca.issue_cert("127.0.0.1", "localhost")
    other_host = ca.issue_cert("kafka.example")
    client = ca.issue_cert(f"{CLIENT_CN}@example.com", common_name=CLIENT_CN)
    stray = trustme.CA().issue_cert("stray.example")

    def chain(leaf: trustme.LeafCert) -> bytes:
        return b"".join(blob.bytes() for blob in leaf.cert_chain_pems)

    key = serialization.load_pem_private_key(client.private_key_pem.bytes(), None)
    certificates = [x509.load_pem_x509_certificate(b.bytes()) for b in client.cert_chain_pems]
    ca_certificate = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    encrypted, traditional = (
        key.private_bytes(
            serialization.Encoding.PEM,
            key_format,
            serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
        )
        for key_format in (
            serialization.PrivateFormat.PKCS8,
            serialization.PrivateFormat.TraditionalOpenSSL,
        )
    )

    def keystore(password: bytes | None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password)
            if password
            else serialization.NoEncryption()
        )
        return pkcs12.serialize_key_and_certificates(
            b"client",
            key,  # type: ignore[arg-type]
            certificates[0],
            certificates[1:] or None,
            encryption,
        )

    truststore = pkcs12.serialize_key_and_certificates(
        None,
        None,
        None,
        [ca_certificate],
        serialization.BestAvailableEncryption(TRUSTSTORE_PASSWORD.encode()),
    )
    d = directory
    return Pki(
        directory=d,
        ca_pem=_write(d / "ca.pem", ca.cert_pem.bytes()),
        server_chain=_write(d / "server.pem", chain(server)),
        server_key=_write(d / "server.key", server.private_key_pem.bytes()),
        other_host_chain=_write(d / "other-host.pem", chain(other_host)),
        other_host_key=_write(d / "other-host.key", other_host.private_key_pem.bytes()),
        client_cert=_write(d / "client.pem", chain(client)),
        client_key=_write(d / "client.key", client.private_key_pem.bytes()),
        client_key_encrypted=_write(d / "client-encrypted.key", encrypted),
        client_key_traditional=_write(d / "client-traditional.key", traditional),
        client_combined=_write(
            d / "client-combined.pem", client.private_key_pem.bytes() + chain(client)
        ),
        keystore=_write(d / "client.p12", keystore(KEYSTORE_PASSWORD.encode())),
        keystore_no_password=_write(d / "client-nopass.p12", keystore(None)),
        truststore=_write(d / "truststore.p12", truststore),
        untrusted_ca_pem=_write(d / "untrusted-ca.pem", trustme.CA().cert_pem.bytes()),
        stray_key=_write(d / "stray.key", stray.private_key_pem.bytes()),
        jks=_write(d / "truststore.jks", b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 64),
    )


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return _make_pki(tmp_path_factory.mktemp("pki"))


@dataclass
class TlsServer:
    port: int
    seen: list[str] = field(default_factory=list)  # client CN, "-" for none, or "error: ..."
    changed: threading.Condition = field(default_factory=threading.Condition)

    def record(self, entry: str) -> None:
        with self.changed:
            self.seen.append(entry)
            self.changed.notify_all()

    def wait_for(self, count: int, timeout: float = 15.0) -> list[str]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.seen) >= count, timeout)
            return list(self.seen)


@contextlib.contextmanager
def tls_server(
    chain_file: Path, key_file: Path, *, client_ca: Path | None = None
) -> Iterator[TlsServer]:
    """Serve TLS handshakes on 127.0.0.1 until the block ends; requires a client certificate
    signed by ``client_ca`` when given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(chain_file), str(key_file))
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(client_ca))
    listener = socket.create_server(("127.0.0.1", 0))
    server = TlsServer(port=listener.getsockname()[1])
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            raw.settimeout(5)
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    server.record(_common_name(tls.getpeercert()))
                    tls.sendall(b"k")
            except (ssl.SSLError, OSError) as error:
                server.record(f"error: {error}")
            finally:
                raw.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stopping.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        listener.close()
        thread.join(10)
        assert not thread.is_alive()


def _common_name(peer: Any) -> str:
    subject = (peer or {}).get("subject", ())
    names = [value for rdn in subject for key, value in rdn if key == "commonName"]
    return str(names[0]) if names else "-"


def handshake(context: ssl.SSLContext, port: int, server_hostname: str = "127.0.0.1") -> bytes:
    """Connect, complete the handshake and read the server's one byte (TLS 1.3 reports a
    refused client certificate only on the first read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=server_hostname) as tls:
            return tls.recv(1)
