"""A few-line synchronous Kafka request sender for tests: one request, one response.

Tests use it to ask a broker what a third-party admin client cannot (ShareGroupDescribe,
DescribeShareGroupOffsets, raw golden frames), without depending on kshare's own client.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kshare_cli.wire.framing import decode_response, encode_request, response_schema


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def send_raw(bootstrap: str, frame: bytes, timeout: float = 30) -> bytes:
    """Send one size-prefixed request frame, return the response frame (no size prefix)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(frame)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        return _read_exactly(sock, size)


def call(bootstrap: str, payload: Any, client_id: str = "kshare-tests") -> Any:
    """Send a kio request payload and return the decoded kio response payload."""
    frame = encode_request(payload, 1, client_id)
    raw = send_raw(bootstrap, frame)
    schema = response_schema(payload.__api_key__, payload.__version__)
    _, response = decode_response(raw, schema)
    return response
