"""Kafka frames: the 4-byte size prefix, request and response headers, kio payloads.

The client's end of a connection: it encodes requests and decodes responses.
The sandbox broker's end (decoding requests, encoding responses) is in
``sandbox/framing.py`` and builds on the same pieces here -- the size prefix,
the frame layout, the schema lookup -- so the two can never disagree about
where a header ends. The header version is not in the frame: it follows from
the API key and version (flexible versions use request header v2 and response
header v1), with one historical exception, ApiVersions, whose response header
is always v0 so that a client can read the error of a version it does not speak.
"""

from __future__ import annotations

import asyncio
import functools
import io
import struct
from typing import Any, Final

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

#: Kafka's default ``socket.request.max.bytes``: larger frames are refused unread.
DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """A frame that cannot be turned into a request or response."""


class OversizedFrame(FrameError):
    """The size prefix announces more than the receiver accepts.

    ``size`` is kept because its bytes tell what the peer really is: a TLS record
    read as a Kafka size prefix starts 0x15/0x16 0x03.
    """

    def __init__(self, size: int, max_bytes: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {max_bytes}")
        self.size = size


class UnknownApiKey(FrameError):
    """The request names an API key that kio (and so Kafka 4.2) does not define."""

    def __init__(self, api_key: int, correlation_id: int) -> None:
        super().__init__(f"unknown API key {api_key}")
        self.api_key = api_key
        self.correlation_id = correlation_id


class UnsupportedVersion(FrameError):
    """The request uses a version of a known API that has no schema."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported version {api_version} of API key {api_key}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class MalformedFrame(FrameError):
    """The bytes do not decode as the schema they claim to follow."""


def _schema(load: Any, api_key: int, api_version: int, correlation_id: int) -> Any:
    """kio's type for a message, with its lookup errors turned into FrameErrors.

    Found once per message type: kio resolves its dotted path (``pkgutil.resolve_name``)
    at every call, a tenth of a millisecond each, paid twice per request.
    """
    try:
        return _loaded(load, api_key, api_version)
    except UnknownAPIKey:
        raise UnknownApiKey(api_key, correlation_id) from None
    except UnknownEntity:
        raise UnsupportedVersion(api_key, api_version, correlation_id) from None


@functools.cache
def _loaded(load: Any, api_key: int, api_version: int) -> Any:
    """``load(api_key, api_version)``, remembered (a lookup error is not: it raises again)."""
    return load(api_key, api_version)


def request_schema(
    api_key: int, api_version: int, correlation_id: int = -1
) -> type[RequestPayload]:
    """The kio request type, or a FrameError that says whether key or version is unknown.

    ``correlation_id`` goes into the error, for a broker answering the request it could not read.
    """
    schema: type[RequestPayload] = _schema(
        load_request_schema, api_key, api_version, correlation_id
    )
    return schema


def response_schema(api_key: int, api_version: int) -> type[ResponsePayload]:
    """The kio response type for an API version (raising FrameError when kio has none)."""
    schema: type[ResponsePayload] = _schema(load_response_schema, api_key, api_version, -1)
    return schema


def encode_request(
    payload: RequestPayload, correlation_id: int, client_id: str | None, *, size_prefix: bool = True
) -> bytes:
    """Encode a request with the header its API version calls for."""
    header_type = type(payload).__header_schema__
    header: RequestHeaderV1 | RequestHeaderV2 = header_type(
        request_api_key=payload.__api_key__,
        request_api_version=payload.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    return encode_frame(header_type, header, payload, size_prefix=size_prefix)


def decode_response(frame: bytes, schema: type[ResponsePayload]) -> tuple[int, Any]:
    """Decode a response frame (without size prefix) as ``schema``: (correlation id, payload)."""
    try:
        header, header_size = entity_reader(schema.__header_schema__)(frame, 0)
        payload, _ = entity_reader(schema)(frame, header_size)
    except Exception as error:  # noqa: BLE001 -- kio raises many types on bad bytes
        raise MalformedFrame(f"{schema.__name__}: {type(error).__name__}: {error}") from None
    return int(header.correlation_id), payload


def encode_frame(
    header_type: type[Entity], header: Entity, payload: Entity, *, size_prefix: bool = True
) -> bytes:
    """A header and a payload as one frame, size-prefixed unless asked not to be."""
    buffer = io.BytesIO()
    if size_prefix:
        buffer.write(b"\0\0\0\0")
    entity_writer(header_type)(buffer, header)
    entity_writer(type(payload))(buffer, payload)
    data = bytearray(buffer.getvalue())
    if size_prefix:
        _SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)


async def read_frame(
    reader: asyncio.StreamReader, max_bytes: int = DEFAULT_MAX_FRAME_BYTES
) -> bytes | None:
    """Read one size-prefixed frame; None at a clean end of stream.

    The size is checked before the body is read, so a hostile prefix cannot make
    the reader allocate gigabytes.
    """
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            return None
        raise MalformedFrame("connection closed inside a size prefix") from None
    (size,) = _SIZE.unpack(prefix)
    if size < 0 or size > max_bytes:
        raise OversizedFrame(size, max_bytes)
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise MalformedFrame("connection closed inside a frame") from None
