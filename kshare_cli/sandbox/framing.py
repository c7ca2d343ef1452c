"""The broker's end of a Kafka connection: decoding requests, encoding responses.

Only the sandbox's server reads requests and writes responses; the client's end
(``wire/framing.py``) encodes requests and decodes responses. Both use the same
frame layout, size prefix and schema lookup from ``wire/framing.py``, so the
two ends cannot disagree about where a header ends.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from kshare_cli.wire.framing import MalformedFrame, encode_frame, request_schema

__all__ = ["Request", "decode_request", "encode_response", "peek_request_prefix"]

_PREFIX = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: who sent it, which API and version, and its payload."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    payload: Any
    trailing_bytes: int = 0


def peek_request_prefix(frame: bytes) -> tuple[int, int, int]:
    """API key, version and correlation id: the part of every request header that never varies.

    The broker needs these even when the rest cannot be parsed, to answer an
    unsupported ApiVersions request with the versions it does support.
    """
    if len(frame) < _PREFIX.size:
        raise MalformedFrame(f"request frame of {len(frame)} bytes has no header")
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame)
    return api_key, api_version, correlation_id


def decode_request(frame: bytes) -> Request:
    """Decode a request frame (without its size prefix)."""
    api_key, api_version, correlation_id = peek_request_prefix(frame)
    schema = request_schema(api_key, api_version, correlation_id)
    try:
        header, header_size = entity_reader(schema.__header_schema__)(frame, 0)
        payload, body_size = entity_reader(schema)(frame, header_size)
    except Exception as error:  # noqa: BLE001 -- kio raises many types on bad bytes
        raise MalformedFrame(
            f"{schema.__name__} v{api_version}: {type(error).__name__}: {error}"
        ) from None
    return Request(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=header.client_id,
        payload=payload,
        trailing_bytes=len(frame) - header_size - body_size,
    )


def encode_response(
    payload: ResponsePayload, correlation_id: int, *, size_prefix: bool = True
) -> bytes:
    """Encode a response with the header its API version calls for."""
    header_type = type(payload).__header_schema__
    header: ResponseHeaderV0 | ResponseHeaderV1 = header_type(correlation_id=i32(correlation_id))
    return encode_frame(header_type, header, payload, size_prefix=size_prefix)
