"""TLS and SASL listeners of the sandbox, checked with third-party clients and raw frames.

confluent-kafka (librdkafka) and kcat must authenticate against the sandbox as
they would against Kafka, and fail the way they fail against Kafka -- with the
same error messages, since those are what an operator sees. What librdkafka
cannot show (the order of states, which request closes a connection) is
checked with hand-built kio frames against Kafka's SaslServerAuthenticator.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListGroupsResponse
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeRequestV0
from kio.schema.sasl_handshake.v0.response import (
    SaslHandshakeResponse as SaslHandshakeResponseV0,
)
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.static.primitive import i8

from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.security import (
    InvalidToken,
    ListenerSecurity,
    SaslGate,
    certificate_principal,
    server_ssl_context,
    unsecured_jwt_principal,
)
from kshare_cli.wire.framing import FrameError, decode_response, encode_request
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import USERS, SecureSandbox, TlsMaterial, librdkafka_config

SHARE_GROUP_APIS = {76, 77, 78, 79, 90, 91, 92}


# -- helpers -------------------------------------------------------------------------


def _jwt(claims: dict[str, Any], alg: str = "none", signature: str = "") -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': alg})}.{part(claims)}.{signature}"


def _round_trip(config: dict[str, object], topic: str) -> bytes:
    """Create a topic, produce one record and consume it back, all through librdkafka."""
    admin = AdminClient(config)
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(15)
    assert topic in admin.list_topics(timeout=10).topics
    producer = Producer(config)
    producer.produce(topic, key=b"k", value=f"hello {topic}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer({**config, "group.id": f"g-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert isinstance(value, bytes)
            return value
    finally:
        consumer.close()
    raise AssertionError(f"no record came back from {topic}")


def _first_failure(config: dict[str, object], timeout: float = 15) -> KafkaError:
    """The first error librdkafka reports (other than 'all brokers down') for a connection."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        producer.poll(0.1)
        found = [e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
        if found:
            return found[0]
    raise AssertionError(f"librdkafka reported no failure, only {errors}")


@contextmanager
def _socket(bootstrap: str, context: ssl.SSLContext | None = None) -> Iterator[socket.socket]:
    host, port = bootstrap.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=10)
    sock = raw if context is None else context.wrap_socket(raw, server_hostname=host)
    with sock:
        yield sock


def _read_frame(sock: socket.socket) -> bytes | None:
    """One size-prefixed frame, or None when the peer closed the connection."""
    data = b""
    size: int | None = None
    while True:
        want = 4 if size is None else size
        while len(data) < want:
            try:
                chunk = sock.recv(want - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        if size is not None:
            return data
        (size,) = struct.unpack(">i", data)
        data = b""
        if size == 0:
            return b""


_correlation = iter(range(1, 1_000_000))


def _exchange(sock: socket.socket, payload: Any, schema: type[Any]) -> Any:
    correlation_id = next(_correlation)
    sock.sendall(encode_request(payload, correlation_id, "security-tests"))
    frame = _read_frame(sock)
    assert frame is not None, f"connection closed instead of answering {type(payload).__name__}"
    got, response = decode_response(frame, schema)
    assert got == correlation_id
    return response


def _closed_after(sock: socket.socket, payload: Any) -> bool:
    sock.sendall(encode_request(payload, next(_correlation), "security-tests"))
    return _read_frame(sock) is None


def _api_versions(sock: socket.socket) -> dict[int, tuple[int, int]]:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    response = _exchange(sock, request, ApiVersionsResponse)
    assert response.error_code == 0
    return {e.api_key: (e.min_version, e.max_version) for e in response.api_keys}


def _metadata(sock: socket.socket) -> Any:
    request = MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return _exchange(sock, request, MetadataResponse)


def _plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


# -- third-party clients: what works ---------------------------------------------------


def test_ssl_listener_serves_admin_producer_and_consumer(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str
) -> None:
    sandbox = secure_sandbox("SSL")
    config = librdkafka_config(sandbox, tls_material)
    assert _round_trip(config, f"ssl-{unique}") == f"hello ssl-{unique}".encode()
    # The broker advertises itself on the TLS listener, so the second connection is TLS too.
    brokers = AdminClient(config).list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", sandbox.port)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_each_sasl_mechanism_authenticates_librdkafka(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str, mechanism: str
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=(mechanism,))
    config = librdkafka_config(sandbox, tls_material, mechanism=mechanism)
    topic = f"sasl-{mechanism.lower()}-{unique}"
    assert _round_trip(config, topic) == f"hello {topic}".encode()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_ssl_authenticates_inside_tls(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str, mechanism: str
) -> None:
    sandbox = secure_sandbox("SASL_SSL")
    config = librdkafka_config(
        sandbox, tls_material, mechanism=mechanism, username="bob", password=USERS["bob"]
    )
    topic = f"sasl-ssl-{mechanism.lower()}-{unique}"
    assert _round_trip(config, topic) == f"hello {topic}".encode()


@pytest.mark.parametrize("client_key", ["pem", "encrypted-pem", "pkcs12-keystore"])
def test_mutual_tls_accepts_the_client_certificate_in_every_format(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str, client_key: str
) -> None:
    sandbox = secure_sandbox("SSL", require_client_cert=True)
    key_config: dict[str, object] = {
        "pem": {
            "ssl.certificate.location": str(tls_material.client_cert),
            "ssl.key.location": str(tls_material.client_key),
        },
        "encrypted-pem": {
            "ssl.certificate.location": str(tls_material.client_cert),
            "ssl.key.location": str(tls_material.client_key_encrypted),
            "ssl.key.password": tls_material.key_password,
        },
        "pkcs12-keystore": {
            "ssl.keystore.location": str(tls_material.keystore),
            "ssl.keystore.password": tls_material.keystore_password,
        },
    }[client_key]
    config = librdkafka_config(sandbox, tls_material, **key_config)
    topic = f"mtls-{client_key}-{unique}"
    assert _round_trip(config, topic) == f"hello {topic}".encode()


def _kcat_sasl_args(bootstrap: str, ca: str, mechanism: str) -> list[str]:
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is installed by scripts/test.sh (Debian package kcat)"
    return [
        kcat, "-b", bootstrap,
        "-X", "security.protocol=SASL_SSL",
        "-X", f"ssl.ca.location={ca}",
        "-X", f"sasl.mechanisms={mechanism}",
        "-X", "sasl.username=alice",
        "-X", f"sasl.password={USERS['alice']}",
    ]  # fmt: skip


def _kcat_librdkafka_version() -> tuple[int, ...]:
    kcat = shutil.which("kcat")
    assert kcat is not None
    banner = subprocess.run([kcat, "-V"], capture_output=True, timeout=30).stdout.decode()
    found = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", banner)
    assert found is not None, banner
    return tuple(int(part) for part in found.groups())


def test_kcat_produces_consumes_and_lists_over_sasl_ssl(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str
) -> None:
    sandbox = secure_sandbox("SASL_SSL", mechanisms=("PLAIN",))
    common = _kcat_sasl_args(sandbox.bootstrap, str(tls_material.ca_pem), "PLAIN")
    topic = f"kcat-sasl-{unique}"
    lines = "".join(f"key{i}:value {i}\n" for i in range(5))
    subprocess.run(
        [*common, "-P", "-t", topic, "-K", ":", "-p", "0"],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [*common, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k=%s@%o\n"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    assert out.splitlines() == [f"key{i}=value {i}@{i}" for i in range(5)]
    listing = subprocess.run(
        [*common, "-L", "-t", topic], capture_output=True, check=True, timeout=60
    ).stdout.decode()
    assert f'topic "{topic}" with 1 partitions' in listing


def test_kcat_scram_meets_kafka_4s_strict_nonce_check(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    """librdkafka before 2.6.1 repeats the client nonce in client-final (librdkafka#4895).

    Kafka 4.x compares the nonce strictly (RFC 5802, ScramSaslServer) and refuses
    such clients; so does the sandbox. A kcat built on a fixed librdkafka succeeds.
    """
    sandbox = secure_sandbox("SASL_SSL", mechanisms=("SCRAM-SHA-256",))
    common = _kcat_sasl_args(sandbox.bootstrap, str(tls_material.ca_pem), "SCRAM-SHA-256")
    result = subprocess.run([*common, "-L", "-m", "2"], capture_output=True, timeout=60)
    if _kcat_librdkafka_version() >= (2, 6, 1):
        assert result.returncode == 0, result.stderr.decode()
        return
    assert result.returncode != 0
    assert (
        "Authentication failed during authentication due to invalid credentials "
        "with SASL mechanism SCRAM-SHA-256" in result.stderr.decode()
    )


def test_static_oauth_tokens_accept_only_the_configured_ones(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str
) -> None:
    good = _jwt({"sub": "svc", "exp": 4_000_000_000}, alg="RS256", signature="c2ln")
    other = _jwt({"sub": "svc", "exp": 4_000_000_000}, alg="RS256", signature="b3RoZXI")
    sandbox = secure_sandbox(
        "SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",), oauth_tokens=frozenset({good})
    )

    def config(token: str) -> dict[str, object]:
        def refresh(_: object) -> tuple[str, float, str, dict[str, str]]:
            return token, time.time() + 3600, "svc", {}

        return {
            "bootstrap.servers": sandbox.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": refresh,
        }

    topic = f"oauth-static-{unique}"
    assert _round_trip(config(good), topic) == f"hello {topic}".encode()
    failure = _first_failure(config(other))
    assert failure.code() == KafkaError._AUTHENTICATION
    assert '{"status":"invalid_token"}' in failure.str()


# -- third-party clients: how it fails -------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "username", "message"),
    [
        ("PLAIN", "alice", "Authentication failed: Invalid username or password"),
        ("PLAIN", "mallory", "Authentication failed: Invalid username or password"),
        (
            "SCRAM-SHA-256",
            "alice",
            "Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-256",
        ),
        (
            "SCRAM-SHA-512",
            "mallory",
            "Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-512",
        ),
    ],
)
def test_wrong_credentials_fail_with_kafkas_message(
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    mechanism: str,
    username: str,
    message: str,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT")
    config = librdkafka_config(
        sandbox, tls_material, mechanism=mechanism, username=username, password="wrong"
    )
    failure = _first_failure(config)
    assert failure.code() == KafkaError._AUTHENTICATION
    assert message in failure.str()
    with pytest.raises(KafkaException):
        AdminClient({**config, "log_level": 0}).list_topics(timeout=1)


def test_mechanism_not_enabled_is_named_with_the_enabled_ones(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN", "SCRAM-SHA-256"))
    failure = _first_failure(librdkafka_config(sandbox, tls_material, mechanism="SCRAM-SHA-512"))
    assert failure.code() == KafkaError._AUTHENTICATION
    assert "Unsupported SASL mechanism" in failure.str()
    assert "broker's supported mechanisms: PLAIN,SCRAM-SHA-256" in failure.str()


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "alice", "exp": 1_000_000_000},  # expired in 2001
        {"exp": 4_000_000_000},  # no principal
        {"sub": "alice"},  # no expiry: Kafka's unsecured validator insists
    ],
)
def test_invalid_unsecured_jwt_gets_kafkas_invalid_token_status(
    secure_sandbox: SecureSandbox, claims: dict[str, Any]
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    token = _jwt(claims)

    def refresh(_: object) -> tuple[str, float, str, dict[str, str]]:
        return token, time.time() + 3600, "alice", {}

    failure = _first_failure(
        {
            "bootstrap.servers": sandbox.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": refresh,
        }
    )
    assert failure.code() == KafkaError._AUTHENTICATION
    assert '{"status":"invalid_token"}' in failure.str()


def test_untrusted_server_certificate_fails_the_tls_handshake(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SASL_SSL")
    config = librdkafka_config(
        sandbox,
        tls_material,
        mechanism="PLAIN",
        **{"ssl.ca.location": str(tls_material.untrusted_ca_pem)},
    )
    failure = _first_failure(config)
    # librdkafka files it under _SSL or, when the alert races the read, _TRANSPORT.
    assert failure.code() in (KafkaError._SSL, KafkaError._TRANSPORT)
    assert "in state SSL_HANDSHAKE" in failure.str()
    assert "certificate verify failed" in failure.str()


def test_hostname_mismatch_fails_unless_verification_is_off(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, unique: str
) -> None:
    # The certificate names 127.0.0.1 and localhost; the listener is 127.0.0.2 (loopback too).
    sandbox = secure_sandbox("SSL", host="127.0.0.2")
    failure = _first_failure(librdkafka_config(sandbox, tls_material))
    # librdkafka files it under _SSL or, when the alert races the read, _TRANSPORT.
    assert failure.code() in (KafkaError._SSL, KafkaError._TRANSPORT)
    assert "certificate verify failed" in failure.str()
    unchecked = librdkafka_config(
        sandbox, tls_material, **{"ssl.endpoint.identification.algorithm": "none"}
    )
    topic = f"no-hostname-check-{unique}"
    assert _round_trip(unchecked, topic) == f"hello {topic}".encode()


@pytest.mark.parametrize("client", ["no certificate", "certificate from an untrusted CA"])
def test_mutual_tls_refuses_clients_without_a_trusted_certificate(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, client: str
) -> None:
    sandbox = secure_sandbox("SSL", require_client_cert=True)
    context = ssl.create_default_context(cafile=str(tls_material.ca_pem))
    extra: dict[str, object] = {}
    if client != "no certificate":
        context.load_cert_chain(
            str(tls_material.untrusted_client_cert), str(tls_material.untrusted_client_key)
        )
        extra = {
            "ssl.certificate.location": str(tls_material.untrusted_client_cert),
            "ssl.key.location": str(tls_material.untrusted_client_key),
        }
    # librdkafka sees the server hang up (TLS 1.3 reports the refusal after the handshake)...
    config = librdkafka_config(sandbox, tls_material, log_level=0, **extra)
    with pytest.raises(KafkaException) as raised:
        AdminClient(config).list_topics(timeout=1.5)
    assert raised.value.args[0].code() == KafkaError._TRANSPORT
    # ... and so does Python's ssl module: no answer, at most the server's TLS alert.
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    try:
        with _socket(sandbox.bootstrap, context) as sock:
            assert _closed_after(sock, request)
    except ssl.SSLError as error:
        assert "certificate" in str(error).lower()


def test_librdkafka_with_the_wrong_protocol_gets_no_service(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT")
    # A PLAINTEXT client's Metadata request comes before authentication: the broker hangs up.
    with pytest.raises(KafkaException):
        AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 0}).list_topics(timeout=3)


# -- Kafka's authenticator, frame by frame -----------------------------------------------


def test_every_listener_advertises_the_sasl_apis_as_kafka_does(
    cluster: Cluster, secure_sandbox: SecureSandbox
) -> None:
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: this checks the sandbox's own advertised table")
    sandbox = secure_sandbox("SASL_PLAINTEXT")
    for bootstrap in (cluster.bootstrap, sandbox.bootstrap):
        with _socket(bootstrap) as sock:
            versions = _api_versions(sock)
        # Kafka 4.2.0's recorded ApiVersions (golden step1-check line 1): 17 0-1, 36 0-2.
        assert versions[17] == (0, 1)
        assert versions[36] == (0, 2)


def test_requests_before_authentication_close_the_connection(
    secure_sandbox: SecureSandbox,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    with _socket(sandbox.bootstrap) as sock:
        assert _closed_after(
            sock,
            MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
    with _socket(sandbox.bootstrap) as sock:  # SaslAuthenticate before SaslHandshake
        assert _closed_after(sock, SaslAuthenticateRequest(auth_bytes=_plain_token("alice", "x")))
    with _socket(sandbox.bootstrap) as sock:  # ApiVersions is allowed once
        _api_versions(sock)
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        assert _closed_after(sock, request)
    with _socket(sandbox.bootstrap) as sock:  # only SaslAuthenticate after the handshake
        response = _exchange(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse)
        assert response.error_code == 0
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        assert _closed_after(sock, request)


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_client_without_sasl_gets_api_versions_then_a_silent_close(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, protocol: str
) -> None:
    """Kafka's SaslServerAuthenticator: ApiVersions is answered, the next non-SASL request
    ("Unexpected Kafka request of type METADATA during SASL handshake") closes the
    connection with no answer; a PLAINTEXT (or SSL-only) client sees only the close."""
    sandbox = secure_sandbox(protocol, mechanisms=("SCRAM-SHA-512",))
    context = tls_material.client_context() if protocol == "SASL_SSL" else None
    with _socket(sandbox.bootstrap, context) as sock:
        assert 3 in _api_versions(sock)
        assert _closed_after(
            sock,
            MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )


def test_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed(
    secure_sandbox: SecureSandbox,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-512", "PLAIN"))
    with _socket(sandbox.bootstrap) as sock:
        _api_versions(sock)
        response = _exchange(sock, SaslHandshakeRequest(mechanism="GSSAPI"), SaslHandshakeResponse)
        assert response.error_code == ErrorCode.unsupported_sasl_mechanism
        assert list(response.mechanisms) == ["SCRAM-SHA-512", "PLAIN"]
        assert _read_frame(sock) is None


def test_sasl_authenticate_v2_then_normal_service_and_no_second_authentication(
    secure_sandbox: SecureSandbox,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    with _socket(sandbox.bootstrap) as sock:
        versions = _api_versions(sock)
        assert SHARE_GROUP_APIS <= versions.keys()
        handshake = _exchange(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse)
        assert (handshake.error_code, list(handshake.mechanisms)) == (0, ["PLAIN"])
        token = SaslAuthenticateRequest(auth_bytes=_plain_token("alice", USERS["alice"]))
        authenticated = _exchange(sock, token, SaslAuthenticateResponse)
        assert authenticated.error_code == 0
        assert authenticated.auth_bytes == b""
        assert authenticated.session_lifetime.total_seconds() == 0
        assert _metadata(sock).brokers[0].port == sandbox.port
        again = _exchange(sock, token, SaslAuthenticateResponse)
        assert again.error_code == ErrorCode.illegal_sasl_state  # from KafkaApis
        assert again.error_message == (
            "SaslAuthenticate request received after successful authentication"
        )
        handshake = _exchange(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse)
        assert handshake.error_code == ErrorCode.illegal_sasl_state
        assert _metadata(sock).cluster_id == "kshare-sandbox-cluster"


def test_failed_sasl_authenticate_is_answered_then_closed(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    with _socket(sandbox.bootstrap) as sock:
        _exchange(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse)
        token = SaslAuthenticateRequest(auth_bytes=_plain_token("alice", "wrong"))
        failed = _exchange(sock, token, SaslAuthenticateResponse)
        assert failed.error_code == ErrorCode.sasl_authentication_failed
        assert failed.error_message == "Authentication failed: Invalid username or password"
        assert _read_frame(sock) is None


def test_sasl_handshake_v0_exchanges_bare_tokens(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    with _socket(sandbox.bootstrap) as sock:
        handshake = _exchange(
            sock, SaslHandshakeRequestV0(mechanism="PLAIN"), SaslHandshakeResponseV0
        )
        assert handshake.error_code == 0
        token = _plain_token("bob", USERS["bob"])
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert _read_frame(sock) == b""  # PLAIN's empty server token, size-prefixed
        assert _metadata(sock).cluster_id == "kshare-sandbox-cluster"
    with _socket(sandbox.bootstrap) as sock:
        _exchange(sock, SaslHandshakeRequestV0(mechanism="PLAIN"), SaslHandshakeResponseV0)
        token = _plain_token("bob", "wrong")
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert _read_frame(sock) is None  # v0 has no error frame: the broker just hangs up


def test_plaintext_listener_answers_sasl_requests_with_illegal_state(cluster: Cluster) -> None:
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: its listener may well be SASL, not PLAINTEXT")
    with _socket(cluster.bootstrap) as sock:
        response = _exchange(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse)
        assert response.error_code == ErrorCode.illegal_sasl_state
        assert _metadata(sock).brokers


def test_oversized_frame_before_authentication_closes(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT")
    with _socket(sandbox.bootstrap) as sock:
        # Kafka's sasl.server.max.receive.size is 512 KiB; the data plane allows 100 MiB.
        sock.sendall(struct.pack(">i", 524_289) + b"\0" * 64)
        assert _read_frame(sock) is None


# -- a broker without share groups ----------------------------------------------------


def test_broker_without_share_groups_looks_like_kafka_3() -> None:
    with SandboxThread(share_groups=False) as sandbox:
        with _socket(sandbox.bootstrap) as sock:
            request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
            response = _exchange(sock, request, ApiVersionsResponse)
            versions = {e.api_key: (e.min_version, e.max_version) for e in response.api_keys}
            assert not SHARE_GROUP_APIS & versions.keys()
            assert versions[10] == (0, 5)  # FindCoordinator v6 brought the share key type
            assert versions[16] == (0, 5)
            assert [f.name for f in response.supported_features] == []
            listed = _exchange(
                sock,
                ListGroupsRequest(states_filter=(), types_filter=("share",)),
                ListGroupsResponse,
            )
            assert (listed.error_code, listed.groups) == (0, ())
            # A share-group API it does not offer closes the connection, as on Kafka 3.x.
            request = ShareGroupDescribeRequest(
                group_ids=("g",), include_authorized_operations=False
            )
            assert _closed_after(sock, request)
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        assert admin.list_consumer_groups().result(10).valid == []
        assert "__share_group_state" not in admin.list_topics(timeout=10).topics
        with _socket(sandbox.bootstrap) as sock:
            coordinator = _exchange(
                sock,
                FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("g",)),
                FindCoordinatorResponse,
            )
            assert coordinator.coordinators[0].error_code == 0


# -- the pieces, directly ---------------------------------------------------------------


def test_listener_security_refuses_inconsistent_settings(tls_material: TlsMaterial) -> None:
    context = tls_material.server_context()
    with pytest.raises(ValueError, match="unknown security protocol"):
        ListenerSecurity("SASL_TLS")
    with pytest.raises(ValueError, match="needs an ssl_context"):
        ListenerSecurity("SSL")
    with pytest.raises(ValueError, match="takes no ssl_context"):
        ListenerSecurity("SASL_PLAINTEXT", context)
    with pytest.raises(ValueError, match="CERT_REQUIRED"):
        ListenerSecurity("SSL", context, require_client_cert=True)
    with pytest.raises(ValueError, match="unsupported SASL mechanisms"):
        ListenerSecurity("SASL_PLAINTEXT", mechanisms=("GSSAPI",))
    with pytest.raises(ValueError, match="at least one SASL mechanism"):
        ListenerSecurity("SASL_PLAINTEXT", mechanisms=())


def test_unsecured_jwt_rules_follow_kafkas_validator() -> None:
    now = 2_000_000_000
    assert unsecured_jwt_principal(_jwt({"sub": "alice", "exp": now + 60}), now) == "alice"
    refused: list[tuple[str, str]] = [
        (_jwt({"sub": "alice", "exp": now - 1}), "in the past"),
        (_jwt({"sub": "alice"}), "No expiration time"),
        (_jwt({"exp": now + 60}), "No principal name"),
        (_jwt({"sub": "a", "exp": now + 60}, alg="HS256"), "'none' for an algorithm"),
        (_jwt({"sub": "a", "exp": now + 60}, signature="c2ln"), "must not contain a digital"),
        (_jwt({"sub": "a", "exp": now + 60, "iat": now + 30}), "Issued At value is in the future"),
        ("abc", "3 dot-separated parts"),
        ("a..b", "contains '..'"),
    ]
    for token, reason in refused:
        with pytest.raises(InvalidToken, match=reason):
            unsecured_jwt_principal(token, now)


def test_unsecured_jwt_times_are_compared_in_kafkas_milliseconds() -> None:
    """Kafka's clock is ``currentTimeMillis()`` and a claim counts as ``1000 * seconds``, with
    no clock skew allowed: within one millisecond a later ``iat`` is already in the future,
    and an ``exp`` a fraction later is not yet past."""
    now = 2_000_000_000.0009  # Kafka's clock reads 2_000_000_000_000 ms
    same_ms = _jwt({"sub": "alice", "exp": now + 60, "iat": 2_000_000_000})
    assert unsecured_jwt_principal(same_ms, now) == "alice"
    with pytest.raises(InvalidToken, match="Issued At value is in the future"):
        unsecured_jwt_principal(_jwt({"sub": "a", "exp": now + 60, "iat": 2e9 + 0.0005}), now)
    expires_this_ms = _jwt({"sub": "alice", "exp": 2_000_000_000.0005})
    assert unsecured_jwt_principal(expires_this_ms, now) == "alice"
    with pytest.raises(InvalidToken, match="in the past"):
        unsecured_jwt_principal(_jwt({"sub": "a", "exp": 2_000_000_000}), now)


def _gate_round(gate: SaslGate, payload: Any, schema: type[Any]) -> Any:
    frame = encode_request(payload, 5, "gate", size_prefix=False)
    step = gate.receive(frame)
    assert step.reply is not None and not step.close
    return decode_response(step.reply[4:], schema)[1]


def test_scram_exchange_sets_kafkas_principal() -> None:
    from scramp import ScramClient  # type: ignore[import-untyped, unused-ignore]

    gate = SaslGate(ListenerSecurity("SASL_PLAINTEXT", users={"a,b=c": "pw"}))
    _gate_round(gate, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), SaslHandshakeResponse)
    client = ScramClient(["SCRAM-SHA-256"], "a=2Cb=3Dc", "pw")
    first = _gate_round(
        gate,
        SaslAuthenticateRequest(auth_bytes=client.get_client_first().encode()),
        SaslAuthenticateResponse,
    )
    client.set_server_first(first.auth_bytes.decode())
    assert not gate.complete
    final = _gate_round(
        gate,
        SaslAuthenticateRequest(auth_bytes=client.get_client_final().encode()),
        SaslAuthenticateResponse,
    )
    client.set_server_final(final.auth_bytes.decode())  # verifies the server's signature
    assert gate.complete
    assert gate.principal == "User:a,b=c"


def test_ssl_principal_is_the_certificate_subject(tls_material: TlsMaterial) -> None:
    from cryptography.hazmat.primitives.serialization import Encoding

    pem = tls_material.client_cert.read_bytes()
    der = x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)
    principal = certificate_principal(der)
    # Kafka's default principal builder: X500Principal.getName(), most specific RDN first.
    assert principal.startswith("User:CN=kshare-client,OU=Testing cert #"), principal
    assert principal.endswith(",O=trustme v" + trustme.__version__), principal
    assert certificate_principal(None) == "User:ANONYMOUS"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER", "NOPE"]),
    tokens=st.lists(st.binary(max_size=80), max_size=3),
    garbage=st.binary(max_size=40),
)
def test_no_client_bytes_break_the_gate(
    mechanism: str, tokens: list[bytes], garbage: bytes
) -> None:
    """Whatever a client sends, the gate answers, closes, or reports a framing error."""
    gate = SaslGate(ListenerSecurity("SASL_PLAINTEXT", users={"alice": "pw"}))
    frames = [encode_request(SaslHandshakeRequest(mechanism=mechanism), 1, "f", size_prefix=False)]
    frames += [
        encode_request(SaslAuthenticateRequest(auth_bytes=t), 2, "f", size_prefix=False)
        for t in tokens
    ]
    frames.append(garbage)
    for frame in frames:
        try:
            step = gate.receive(frame)
        except FrameError:
            return
        if step.close:
            return


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        ("PLAINTEXT", [(18, "User:ANONYMOUS"), (3, "User:ANONYMOUS")]),
        ("SSL", [(18, "User:CN=kshare-client"), (3, "User:CN=kshare-client")]),
        ("SASL_SSL", [(18, None), (3, "User:bob")]),
    ],
)
def test_handlers_see_the_connections_principal(
    tls_material: TlsMaterial, protocol: str, expected: list[tuple[int, str | None]]
) -> None:
    seen: list[tuple[int, str | None]] = []

    async def scenario() -> None:
        broker = Broker(share_groups=False)
        original = broker.dispatch

        async def spy(request: Any, connection: Any) -> Any:
            seen.append((request.api_key, connection.authenticated_principal))
            return await original(request, connection)

        broker.dispatch = spy  # type: ignore[method-assign]
        security = ListenerSecurity(
            protocol,
            None
            if protocol == "PLAINTEXT"
            else server_ssl_context(
                tls_material.server_cert, tls_material.server_key, ca_file=tls_material.ca_pem
            ),
            users=USERS,
        )
        port = await broker.start(security=security)
        try:
            await asyncio.to_thread(client, f"127.0.0.1:{port}")
        finally:
            await broker.close()

    def client(bootstrap: str) -> None:
        context = (
            None if protocol == "PLAINTEXT" else tls_material.client_context(with_client_cert=True)
        )
        with _socket(bootstrap, context) as sock:
            _api_versions(sock)
            if protocol == "SASL_SSL":
                _exchange(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse)
                token = SaslAuthenticateRequest(auth_bytes=_plain_token("bob", USERS["bob"]))
                assert _exchange(sock, token, SaslAuthenticateResponse).error_code == 0
            _metadata(sock)

    asyncio.run(scenario())
    # A client certificate's principal carries the whole subject; compare its first RDN.
    assert [(key, p if p is None else p.split(",")[0]) for key, p in seen] == expected


def test_truststores_hold_the_ca(tls_material: TlsMaterial) -> None:
    for path in (tls_material.truststore, tls_material.truststore_certs_only):
        store = pkcs12.load_pkcs12(path.read_bytes(), tls_material.truststore_password.encode())
        assert store.key is None
        ca = x509.load_pem_x509_certificate(tls_material.ca_pem.read_bytes())
        assert [c.certificate.subject for c in store.additional_certs] == [ca.subject]
    keystore = pkcs12.load_pkcs12(
        tls_material.keystore.read_bytes(), tls_material.keystore_password.encode()
    )
    assert keystore.key is not None and keystore.cert is not None


# -- kshare sandbox --tls-dir / --sasl-users ------------------------------------------------

KSHARE = [sys.executable, "-m", "kshare_cli", "sandbox", "--port", "0"]


def test_sandbox_command_serves_sasl_ssl_and_its_demo_authenticates(tmp_path: Path) -> None:
    tls_dir = tmp_path / "tls"
    process = subprocess.Popen(
        [*KSHARE, "--tls-dir", str(tls_dir), "--sasl-users", "alice:s3cret,bob:pw",
         "--sasl-mechanisms", "scram-sha-256,PLAIN", "--demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        assert bootstrap.startswith("127.0.0.1:"), bootstrap
        # The CA it made lets a client verify the listener; bob authenticates with SCRAM.
        config: dict[str, object] = {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(tls_dir / "ca.pem"),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "bob",
            "sasl.password": "pw",
            "group.id": "watcher",
        }
        consumer = Consumer(config)
        try:
            deadline = time.monotonic() + 30
            high = 0
            while high == 0 and time.monotonic() < deadline:
                # The demo's producer got in with the properties the command printed.
                _, high = consumer.get_watermark_offsets(TopicPartition("demo-orders", 0), 5)
                time.sleep(0.2)
            assert high > 0
        finally:
            consumer.close()
        plaintext = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        with pytest.raises(KafkaException):
            plaintext.list_topics(timeout=1.5)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "listener: SASL_SSL (SCRAM-SHA-256, PLAIN)" in stderr
    assert f"ssl.ca.location={tls_dir / 'ca.pem'}" in stderr
    assert "sasl.username=alice sasl.password=***" in stderr
    assert "s3cret" not in stderr
    assert (tls_dir / "server.key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--sasl-users", "alice"], "expected USER:PASSWORD, got 'alice'"),
        (["--sasl-users", "alice:x", "--sasl-mechanisms", "GSSAPI"], "GSSAPI"),
        (["--sasl-users", ","], "name at least one USER:PASSWORD"),
        (["--tls-dir", "{half}"], "needs both server.pem and server.key"),
    ],
)
def test_sandbox_command_refuses_bad_security_flags(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    half = tmp_path / "half"
    half.mkdir()
    (half / "server.pem").write_text("not a certificate")
    args = [flag.replace("{half}", str(half)) for flag in flags]
    result = subprocess.run([*KSHARE, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr
