"""Hostile and malformed input: Kafka's error answer or a closed connection, never a dead server."""

from __future__ import annotations

import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from kshare_cli.wire.framing import decode_response, encode_request
from tests.support.sandbox import Cluster


def _connect(cluster: Cluster) -> socket.socket:
    host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _read_frame(sock: socket.socket) -> bytes | None:
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (size,) = struct.unpack(">i", header)
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def _api_versions_ok(cluster: Cluster) -> bool:
    with _connect(cluster) as sock:
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        sock.sendall(encode_request(request, 7, "robustness"))
        frame = _read_frame(sock)
    assert frame is not None
    correlation_id, response = decode_response(frame, ApiVersionsResponse)
    return correlation_id == 7 and response.error_code == 0


def _closed_or_answered(sock: socket.socket) -> None:
    sock.settimeout(10)
    try:
        _read_frame(sock)
    except (ConnectionError, TimeoutError):
        pass


def test_unsupported_api_versions_version_gets_v0_error_with_its_own_range(
    cluster: Cluster,
) -> None:
    """Kafka 4.2 answers only ApiVersions' range (``ApiVersionsRequest.getErrorResponse``)."""
    with _connect(cluster) as sock:
        # ApiVersions v99: header v2 prefix is enough for the broker to answer.
        body = struct.pack(">hhih", 18, 99, 42, 1) + b"x" + b"\x00"
        sock.sendall(struct.pack(">i", len(body)) + body)
        frame = _read_frame(sock)
    assert frame is not None
    correlation_id, response = decode_response(frame, ApiVersionsResponseV0)
    assert correlation_id == 42
    assert response.error_code == ErrorCode.unsupported_version
    keys = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    assert keys == {18: (0, 4)}


def test_unknown_api_key_and_unsupported_version_close_the_connection(cluster: Cluster) -> None:
    for api_key, version in ((999, 0), (3, 99), (78, 0)):
        with _connect(cluster) as sock:
            body = struct.pack(">hhih", api_key, version, 1, -1)
            sock.sendall(struct.pack(">i", len(body)) + body)
            sock.settimeout(10)
            assert _read_frame(sock) is None
    assert _api_versions_ok(cluster)


def test_oversized_and_negative_size_prefixes_close_the_connection(cluster: Cluster) -> None:
    for size in (2**31 - 1, -5):
        with _connect(cluster) as sock:
            sock.sendall(struct.pack(">i", size) + b"\x00" * 16)
            sock.settimeout(10)
            assert _read_frame(sock) is None
    assert _api_versions_ok(cluster)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.binary(min_size=0, max_size=64), api_key=st.sampled_from([0, 1, 3, 18, 76, 78, 90]))
def test_garbage_bodies_never_kill_the_server(cluster: Cluster, body: bytes, api_key: int) -> None:
    frame = struct.pack(">hhi", api_key, 1, 3) + body
    with _connect(cluster) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        _closed_or_answered(sock)
    assert _api_versions_ok(cluster)
