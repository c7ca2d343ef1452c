"""One connection to one broker: frames, correlation ids, pending futures, one reader task.

The aiokafka ``conn.py`` split: many requests may be in flight on a connection;
each gets a correlation id and a future, and a single reader task matches
responses to futures (Kafka answers a connection's requests in order, but
matching by id makes a stray or late frame harmless). The connection opens with
TLS when asked, negotiates ApiVersions (its response header is always v0, and
an old broker answers a version it lacks in v0 with UNSUPPORTED_VERSION), then
runs SASL. Any failure of an established connection fails every pending request
with ``ConnectionLost``, which the client retries on a new connection.

Opening errors are worded for an operator: which broker, and the likely cause
(a TLS client on a PLAINTEXT port, a certificate the CA does not sign).
Timeouts are the caller's: every await here is cancellable, and the client
bounds each operation by its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
from collections.abc import Callable
from typing import Any, Final

from kshare_cli import __version__
from kshare_cli.connect.settings import SaslSettings
from kshare_cli.errors import AuthenticationFailed, ConnectionFailed, IncompatibleBroker
from kshare_cli.wire.build import build
from kshare_cli.wire.cluster import BrokerApiVersions, format_address, our_versions
from kshare_cli.wire.errors import UNSUPPORTED_VERSION, ConnectionLost, error_name
from kshare_cli.wire.framing import (
    API_VERSIONS_KEY,
    DEFAULT_MAX_FRAME_BYTES,
    FrameError,
    OversizedFrame,
    decode_response,
    encode_request,
    read_frame,
    request_schema,
    response_schema,
)
from kshare_cli.wire.sasl import authenticate

log = logging.getLogger("kshare.wire")

CLIENT_SOFTWARE_NAME: Final = "kshare"
_CORRELATION = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")
_MAX_CORRELATION_ID: Final = 2**31 - 1

Decoder = Callable[[bytes], Any]


def decode_response_frame(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """Decode a response frame (no size prefix) the way the client does: (correlation id, body).

    ApiVersions is the one special case: a broker that lacks the version asked
    for answers in v0 with UNSUPPORTED_VERSION and its own ranges, so that error
    code, read before the body, selects the v0 schema.
    """
    if api_key == API_VERSIONS_KEY and api_version > 0 and len(frame) >= 6:
        (code,) = _ERROR_CODE.unpack_from(frame, 4)
        if code == UNSUPPORTED_VERSION:
            api_version = 0
    return decode_response(frame, response_schema(api_key, api_version))


def _looks_like_tls(size: int) -> bool:
    """A TLS record (alert 0x15, handshake 0x16; version 0x03xx) read as a size prefix."""
    return (size >> 24) in (0x15, 0x16) and ((size >> 16) & 0xFF) == 0x03


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


class BrokerConnection:
    """A live, negotiated (and, when configured, authenticated) connection to one broker."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        host: str,
        port: int,
        client_id: str | None,
        on_request: Callable[[], None] | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.host = host
        self.port = port
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._on_request = on_request
        self._max_frame_bytes = max_frame_bytes
        self._next_correlation_id = 0
        self._pending: dict[int, tuple[asyncio.Future[Any], Decoder]] = {}
        self._failure: ConnectionLost | None = None
        self._negotiating = True
        self._api_versions: BrokerApiVersions | None = None
        self._reader_task = asyncio.get_running_loop().create_task(
            self._read_responses(), name=f"kshare-reader-{self.address}"
        )

    # -- opening ---------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "kshare",
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslSettings | None = None,
        on_request: Callable[[], None] | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> BrokerConnection:
        """Connect, negotiate ApiVersions and authenticate; raise a one-line KshareError.

        ConnectionFailed for refused, unreachable or wrong-protocol brokers,
        AuthenticationFailed for rejected credentials or certificates,
        IncompatibleBroker for a broker without the APIs a handshake needs.
        """
        where = format_address(host, port)
        try:
            reader, writer = await asyncio.open_connection(
                host,
                port,
                ssl=ssl_context,
                server_hostname=host if ssl_context is not None else None,
                limit=2**20,
            )
        except ssl.SSLCertVerificationError as error:
            raise AuthenticationFailed(
                f"TLS: certificate verify failed: {_one_line(error.verify_message)} "
                f"(broker {where})"
            ) from None
        except ssl.SSLError as error:
            raise ConnectionFailed(
                f"TLS handshake with {where} failed: {_one_line(error.reason or error)}; "
                "is it a TLS listener? (check security.protocol)"
            ) from None
        except ConnectionRefusedError:
            raise ConnectionFailed(f"{where}: connection refused") from None
        except OSError as error:
            if ssl_context is not None and isinstance(error, ConnectionError | EOFError):
                raise ConnectionFailed(
                    f"TLS handshake with {where} failed: the broker closed the connection; "
                    "is it a PLAINTEXT listener? (check security.protocol)"
                ) from None
            raise ConnectionFailed(f"{where}: {_one_line(error.strerror or error)}") from None
        connection = cls(
            reader,
            writer,
            host=host,
            port=port,
            client_id=client_id,
            on_request=on_request,
            max_frame_bytes=max_frame_bytes,
        )
        try:
            await connection._negotiate_api_versions(tls=ssl_context is not None)
            if sasl is not None:
                await authenticate(connection, sasl)
        except BaseException:
            await connection.close()
            raise
        return connection

    async def _negotiate_api_versions(self, *, tls: bool) -> None:
        ours = our_versions(API_VERSIONS_KEY)
        assert ours is not None
        version = ours[1]
        while True:
            payload = build(
                request_schema(API_VERSIONS_KEY, version),
                {
                    "client_software_name": CLIENT_SOFTWARE_NAME,
                    "client_software_version": __version__,
                },
            )
            try:
                response = await self.send(payload)
            except ConnectionLost as error:
                if tls:
                    # The TLS handshake succeeded, so the broker is a TLS listener that
                    # dropped us at once: with TLS 1.3 that is how a refused client
                    # certificate shows on the client side.
                    raise AuthenticationFailed(
                        f"TLS: {error}; the broker may require a client certificate "
                        "(ssl.client.auth=required) or refuse the one given"
                    ) from None
                if "answered with TLS" in str(error):
                    raise ConnectionFailed(str(error)) from None
                raise ConnectionFailed(
                    f"{error}; if it is a TLS listener, set security.protocol to SSL or SASL_SSL"
                ) from None
            ranges = {
                int(entry.api_key): (int(entry.min_version), int(entry.max_version))
                for entry in response.api_keys
            }
            code = int(response.error_code)
            if code == UNSUPPORTED_VERSION:
                offered = ranges.get(API_VERSIONS_KEY, (0, 0))[1]
                if offered >= version:
                    raise ConnectionFailed(f"{self.address} refused every ApiVersions version")
                version = offered
                continue
            if code != 0:
                raise ConnectionFailed(
                    f"{self.address} answered ApiVersions with {error_name(code)}"
                )
            self._api_versions = BrokerApiVersions(self.address, ranges)
            self._negotiating = False
            return

    # -- state -------------------------------------------------------------------

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    @property
    def api_versions(self) -> BrokerApiVersions:
        """The broker's ApiVersions answer (available once ``open`` has returned)."""
        if self._api_versions is None:
            raise RuntimeError("ApiVersions not negotiated yet")
        return self._api_versions

    @property
    def closed(self) -> bool:
        return self._failure is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # -- requests ----------------------------------------------------------------

    async def send(self, payload: Any) -> Any:
        """Send a kio request payload and return the decoded kio response payload.

        Raises ConnectionLost if the connection breaks before the answer arrives,
        IncompatibleBroker if the answer does not decode as the version asked for.
        Cancelling the await abandons the request; a late answer is dropped.
        """
        if self._failure is not None:
            raise self._failure
        api_key = int(payload.__api_key__)
        api_version = int(payload.__version__)
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) % _MAX_CORRELATION_ID
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def decode(frame: bytes) -> Any:
            return decode_response_frame(api_key, api_version, frame)[1]

        self._pending[correlation_id] = (future, decode)
        try:
            self._writer.write(encode_request(payload, correlation_id, self._client_id))
            if self._on_request is not None:
                self._on_request()
            await self._writer.drain()
            return await future
        except (ConnectionError, OSError) as error:
            lost = ConnectionLost(f"{self.address}: {_one_line(error)}")
            self._fail(lost)
            raise (self._failure or lost) from None
        finally:
            self._pending.pop(correlation_id, None)

    async def _read_responses(self) -> None:
        try:
            while True:
                frame = await self._next_frame()
                (correlation_id,) = _CORRELATION.unpack_from(frame)
                entry = self._pending.pop(correlation_id, None)
                if entry is None:
                    log.debug("%s: dropping a response to abandoned request %d", self.address,
                              correlation_id)  # fmt: skip
                    continue
                future, decode = entry
                if future.done():
                    continue
                try:
                    future.set_result(decode(frame))
                except FrameError as error:
                    # Not retried: asking again would get the same answer. The frame
                    # boundary held, so the connection itself is still good.
                    future.set_exception(
                        IncompatibleBroker(
                            f"{self.address} sent a response kshare cannot decode: {error}"
                        )
                    )
        except ConnectionLost as error:
            self._fail(error)
        except OversizedFrame as error:
            if _looks_like_tls(error.size):
                self._fail(ConnectionLost(
                    f"{self.address} answered with TLS: it is a TLS listener; "
                    "set security.protocol to SSL or SASL_SSL"
                ))  # fmt: skip
            else:
                self._fail(ConnectionLost(f"{self.address} sent a bad frame: {error}"))
        except FrameError as error:
            self._fail(ConnectionLost(f"{self.address}: {error}"))
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as error:
            self._fail(ConnectionLost(f"{self.address}: {_one_line(error) or 'connection lost'}"))
        except asyncio.CancelledError:
            self._fail(ConnectionLost(f"connection to {self.address} closed"))
            raise

    async def _next_frame(self) -> bytes:
        frame = await read_frame(self._reader, self._max_frame_bytes)
        if frame is None:
            if self._negotiating:
                raise ConnectionLost(
                    f"{self.address} closed the connection before answering ApiVersions"
                )
            raise ConnectionLost(f"{self.address} closed the connection")
        if len(frame) < _CORRELATION.size:
            raise ConnectionLost(f"{self.address} sent a frame without a header")
        return frame

    def _fail(self, error: ConnectionLost) -> None:
        if self._failure is None:
            self._failure = error
            self._writer.close()
        for future, _ in self._pending.values():
            if not future.done():
                future.set_exception(self._failure)
        self._pending.clear()

    async def close(self) -> None:
        """Close the socket and fail whatever is still pending."""
        self._fail(ConnectionLost(f"connection to {self.address} closed"))
        if not self._reader_task.done():
            self._reader_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionLost):
            await self._reader_task
        try:
            # A TLS peer that never answers the close_notify must not hold up the caller.
            await asyncio.wait_for(self._writer.wait_closed(), 0.5)
        except TimeoutError:
            self._writer.transport.abort()
        except (ConnectionError, OSError):
            pass  # closing a connection that already broke
