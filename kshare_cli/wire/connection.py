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

One bound is this module's own, because only here is it known what a Kafka
broker would have done: a port that answers but is not Kafka (a web server, an
SSH daemon, a TLS listener reached in plaintext) must fail at once, as
``NotKafka``, and not after the operator's whole --timeout. Its first bytes,
read as a size prefix, announce a frame no ApiVersions answer comes near
(``HTTP`` is 0x48545450, 1.2 GB), and they say what the peer is where that is
certain; a peer that says nothing to ApiVersions for ``HANDSHAKE_TIMEOUT_S`` is
not Kafka, or a hung broker.

Likewise a SASL listener reached without SASL: Kafka's ``SaslServerAuthenticator``
answers ApiVersions, then closes the connection without a word at the first
other request ("Unexpected Kafka request of type METADATA during SASL
handshake"). Retrying would only meet the same close until --timeout, so a
connection without SASL that is closed before its first request after ApiVersions
is answered asks the port, on a second connection, for its SASL mechanisms
(``sasl_mechanisms``); a listener that offers some is reported at once, naming
the ``security.protocol`` to set.
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
from kshare_cli.connect.sasl_settings import SaslSettings
from kshare_cli.errors import AuthenticationFailed, ConnectionFailed, IncompatibleBroker
from kshare_cli.kafka.api_keys import API_VERSIONS, SASL_HANDSHAKE
from kshare_cli.wire.build import build
from kshare_cli.wire.cluster import BrokerApiVersions, format_address, our_versions
from kshare_cli.wire.errors import (
    UNSUPPORTED_SASL_MECHANISM,
    UNSUPPORTED_VERSION,
    ConnectionLost,
    NotKafka,
    error_name,
)
from kshare_cli.wire.framing import (
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
_SIZE = struct.Struct(">i")  # the frame's size prefix, re-packed to show a peer's first bytes
_ERROR_CODE = struct.Struct(">h")
_MAX_CORRELATION_ID: Final = 2**31 - 1

#: How long a peer that accepted the connection may take to answer ApiVersions
#: (nested in the caller's deadline, so the bound is min(5 s, what is left of it)).
#: A Kafka broker answers at once: the request needs no disk, quorum or coordinator.
#: Silence this long means not Kafka, or a hung broker; either way the next
#: bootstrap server deserves the time that is left, and an operator deserves to
#: hear it now rather than when --timeout runs out.
HANDSHAKE_TIMEOUT_S: Final = 5.0
#: The largest ApiVersions answer accepted (Kafka 4.2's is about 1 KB). A larger
#: size prefix is some other protocol's first bytes, not a frame to wait for.
MAX_HANDSHAKE_FRAME_BYTES: Final = 1024 * 1024
#: How long the TLS probe waits for the answer to its ClientHello (see ``answers_tls``).
TLS_PROBE_TIMEOUT_S: Final = 2.0
#: What is read past a non-Kafka prefix to name the peer: its first line, if already sent.
_PEEK_BYTES: Final = 256
_PEEK_WAIT_S: Final = 0.2
_SHOWN_CHARS: Final = 60

Decoder = Callable[[bytes], Any]


def decode_response_frame(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """Decode a response frame (no size prefix) the way the client does: (correlation id, body).

    ApiVersions is the one special case: a broker that lacks the version asked
    for answers in v0 with UNSUPPORTED_VERSION and its own ranges, so that error
    code, read before the body, selects the v0 schema. A peer that answers
    UNSUPPORTED_VERSION in some other layout (librdkafka's mock cluster writes the
    version asked for) has still said one certain thing: ask again in v0, which
    every broker speaks; so the answer reads as UNSUPPORTED_VERSION with no ranges.
    """
    if api_key == API_VERSIONS and api_version > 0 and len(frame) >= 6:
        (code,) = _ERROR_CODE.unpack_from(frame, 4)
        if code == UNSUPPORTED_VERSION:
            try:
                return decode_response(frame, response_schema(api_key, 0))
            except FrameError:
                (correlation_id,) = _CORRELATION.unpack_from(frame)
                answer = {"error_code": UNSUPPORTED_VERSION, "api_keys": []}
                return correlation_id, build(response_schema(api_key, 0), answer)
    return decode_response(frame, response_schema(api_key, api_version))


def looks_like_tls(first: bytes) -> bool:
    """A TLS record header: alert 0x15 or handshake 0x16, then version 0x03 0x00-0x04.

    A Kafka answer never starts so: those bytes as a size prefix announce 350 MB.
    """
    return len(first) >= 3 and first[0] in (0x15, 0x16) and first[1] == 0x03 and first[2] <= 0x04


def _first_line(data: bytes) -> str:
    line = data.split(b"\n", 1)[0].rstrip(b"\r").decode("ascii", "replace")
    shown = "".join(char if char.isprintable() else "?" for char in line)
    return shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 3] + "..."


_TLS_LISTENER: Final = "it answered with TLS: a TLS listener; set security.protocol=SSL or SASL_SSL"


def not_kafka_detail(first: bytes) -> str:
    """What a non-Kafka answer was, said only as far as its first bytes make it certain.

    The TLS hint (set security.protocol) comes only with TLS bytes: told to an
    operator whose port is a web server, it would send them the wrong way.
    """
    if looks_like_tls(first):
        return _TLS_LISTENER
    if first.startswith(b"HTTP/"):
        return f'it answered with HTTP ("{_first_line(first)}"): an HTTP server'
    if first.startswith(b"SSH-"):
        return f'it sent an SSH banner ("{_first_line(first)}"): an SSH server'
    return f"its answer starts {first[:8].hex(' ')}, which no Kafka response does"


def not_kafka(address: str, detail: str) -> NotKafka:
    """The one wording of the error, so every way of finding out reads the same."""
    return NotKafka(f"{address} does not answer as a Kafka broker: {detail}")


async def answers_tls(host: str, port: int, timeout_s: float = TLS_PROBE_TIMEOUT_S) -> bool:
    """Whether ``host:port`` answers a TLS ClientHello with TLS: proof of a TLS listener.

    Asked only after a plaintext connection closed before ApiVersions was answered.
    A Kafka broker's TLS listener (Java) sends an alert to a plaintext client,
    which ``not_kafka_detail`` recognises; servers built on OpenSSL (TLS proxies,
    the sandbox) close without a byte, so the hint needs this second look. The
    probe verifies nothing: it only reads the first bytes of the answer.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    client = context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname=host)
    with contextlib.suppress(ssl.SSLWantReadError):
        client.do_handshake()
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(outgoing.read())
            await writer.drain()
            first = await reader.readexactly(3)
    except (TimeoutError, OSError, asyncio.IncompleteReadError):
        return False
    finally:
        if writer is not None:
            writer.transport.abort()
    return looks_like_tls(first)


async def sasl_mechanisms(
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None,
    timeout_s: float = TLS_PROBE_TIMEOUT_S,
) -> tuple[str, ...] | None:
    """The mechanisms ``host:port`` offers as a SASL listener; None when it is not one.

    A fresh connection sends ApiVersions, then SaslHandshake (v1) for PLAIN. A SASL
    listener answers with NONE or UNSUPPORTED_SASL_MECHANISM and its enabled
    mechanisms (Kafka's ``handleHandshakeRequest``); a listener without SASL answers
    ILLEGAL_SASL_STATE. Anything else (no answer, a close, a refusal) proves
    nothing and gives None. The probe never sends a credential.
    """
    try:
        async with asyncio.timeout(timeout_s):
            probe = await BrokerConnection.open(
                host, port, ssl_context=ssl_context, handshake_timeout_s=timeout_s
            )
            probe._sasl_listener_check = False
            try:
                version = probe.api_versions.choose(SASL_HANDSHAKE, min_version=1)
                schema = request_schema(SASL_HANDSHAKE, version)
                answer = await probe.send(build(schema, {"mechanism": "PLAIN"}))
            finally:
                await probe.close()
    except (TimeoutError, ConnectionFailed):
        return None
    if int(answer.error_code) not in (0, UNSUPPORTED_SASL_MECHANISM):
        return None
    return tuple(str(name) for name in answer.mechanisms)


def sasl_listener_error(
    address: str, mechanisms: tuple[str, ...], *, tls: bool
) -> AuthenticationFailed:
    """The one wording of "this port wants SASL and we spoke none"."""
    protocol = "SASL_SSL" if tls else "SASL_PLAINTEXT"
    offered = ", ".join(mechanisms) or "none enabled"
    return AuthenticationFailed(
        f"{address} closed the connection at the first request after ApiVersions, as a "
        f"Kafka SASL listener does with a client that does not authenticate (it offers "
        f"{offered}): set security.protocol={protocol} and sasl.mechanism, with "
        "sasl.jaas.config for the credentials"
    )


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
        self._ssl_context: ssl.SSLContext | None = None
        #: Whether a close before the first answer after ApiVersions is worth asking
        #: the port about (no SASL configured, not itself a probe).
        self._sasl_listener_check = False
        self._answered = False
        self._sasl_probe: asyncio.Task[AuthenticationFailed | None] | None = None
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
        handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
    ) -> BrokerConnection:
        """Connect, negotiate ApiVersions and authenticate; raise a one-line KshareError.

        ConnectionFailed for refused, unreachable or wrong-protocol brokers (NotKafka
        for a peer that answers, or stays silent for ``handshake_timeout_s``, but not
        as Kafka), AuthenticationFailed for rejected credentials or certificates,
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
        connection._ssl_context = ssl_context
        connection._sasl_listener_check = sasl is None
        try:
            try:
                async with asyncio.timeout(handshake_timeout_s):
                    await connection._negotiate_api_versions(tls=ssl_context is not None)
            except TimeoutError:
                # Only this bound's own expiry lands here; the caller's deadline
                # arrives as a cancellation and stays the caller's TimedOut.
                raise not_kafka(
                    where,
                    f"no answer to ApiVersions within {handshake_timeout_s:g} s "
                    "(not a Kafka listener, or a hung broker)",
                ) from None
            if sasl is not None:
                await authenticate(connection, sasl)
        except BaseException:
            await connection.close()
            raise
        return connection

    async def _negotiate_api_versions(self, *, tls: bool) -> None:
        ours = our_versions(API_VERSIONS)
        assert ours is not None
        version = ours[1]
        while True:
            payload = build(
                request_schema(API_VERSIONS, version),
                {
                    "client_software_name": CLIENT_SOFTWARE_NAME,
                    "client_software_version": __version__,
                },
            )
            try:
                response = await self.send(payload)
            except NotKafka:
                raise
            except ConnectionLost as error:
                if tls:
                    # The TLS handshake succeeded, so the broker is a TLS listener that
                    # dropped us at once: with TLS 1.3 that is how a refused client
                    # certificate shows on the client side.
                    raise AuthenticationFailed(
                        f"TLS: {error}; the broker may require a client certificate "
                        "(ssl.client.auth=required) or refuse the one given"
                    ) from None
                if await answers_tls(self.host, self.port):
                    raise not_kafka(self.address, _TLS_LISTENER) from None
                raise ConnectionFailed(str(error)) from None
            ranges = {
                int(entry.api_key): (int(entry.min_version), int(entry.max_version))
                for entry in response.api_keys
            }
            code = int(response.error_code)
            if code == UNSUPPORTED_VERSION:
                offered = ranges.get(API_VERSIONS, (0, 0))[1]
                if offered >= version:
                    raise ConnectionFailed(f"{self.address} refused every ApiVersions version")
                version = offered
                continue
            if code != 0:
                raise ConnectionFailed(
                    f"{self.address} answered ApiVersions with {error_name(code)}"
                )
            self._api_versions = BrokerApiVersions(
                self.address,
                ranges,
                {
                    str(feature.name): int(feature.max_version_level)
                    for feature in getattr(response, "finalized_features", ()) or ()
                },
                {
                    str(feature.name): (int(feature.min_version), int(feature.max_version))
                    for feature in getattr(response, "supported_features", ()) or ()
                },
            )
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
            raise (await self._sasl_listener() or self._failure or lost) from None
        except ConnectionLost as lost:
            raise (await self._sasl_listener() or lost) from None
        finally:
            self._pending.pop(correlation_id, None)

    async def _sasl_listener(self) -> AuthenticationFailed | None:
        """After a close: the SASL-listener error when that explains it (module docstring)."""
        if not self._sasl_listener_check or self._negotiating or self._answered:
            return None
        if self._sasl_probe is None:
            # One probe however many requests were pending on the connection.
            self._sasl_probe = asyncio.get_running_loop().create_task(self._probe_sasl())
        return await asyncio.shield(self._sasl_probe)

    async def _probe_sasl(self) -> AuthenticationFailed | None:
        mechanisms = await sasl_mechanisms(self.host, self.port, self._ssl_context)
        if mechanisms is None:
            return None
        return sasl_listener_error(self.address, mechanisms, tls=self._ssl_context is not None)

    async def _read_responses(self) -> None:
        try:
            while True:
                frame = await self._next_frame()
                (correlation_id,) = _CORRELATION.unpack_from(frame)
                entry = self._pending.pop(correlation_id, None)
                if entry is None and self._negotiating:
                    # Kafka answers a connection's requests in order, and the handshake
                    # has sent just one: an answer to another is some other protocol.
                    raise not_kafka(self.address, not_kafka_detail(_SIZE.pack(len(frame)) + frame))
                if entry is None:
                    log.debug("%s: dropping a response to abandoned request %d", self.address,
                              correlation_id)  # fmt: skip
                    continue
                future, decode = entry
                if not self._negotiating:
                    self._answered = True
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
            if self._negotiating:
                first = _SIZE.pack(error.size) + await self._already_sent()
                self._fail(not_kafka(self.address, not_kafka_detail(first)))
            else:
                self._fail(ConnectionLost(f"{self.address} sent a bad frame: {error}"))
        except FrameError as error:
            self._fail(ConnectionLost(f"{self.address}: {error}"))
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as error:
            self._fail(ConnectionLost(f"{self.address}: {_one_line(error) or 'connection lost'}"))
        except asyncio.CancelledError:
            self._fail(ConnectionLost(f"connection to {self.address} closed"))
            raise

    async def _already_sent(self) -> bytes:
        """What the peer sent past its first four bytes, if it comes at once (to name it)."""
        try:
            return await asyncio.wait_for(self._reader.read(_PEEK_BYTES), _PEEK_WAIT_S)
        except (TimeoutError, ConnectionError, OSError):
            return b""

    async def _next_frame(self) -> bytes:
        limit = self._max_frame_bytes
        if self._negotiating:
            limit = min(limit, MAX_HANDSHAKE_FRAME_BYTES)
        frame = await read_frame(self._reader, limit)
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

    async def close(self, reason: ConnectionLost | None = None) -> None:
        """Close the socket and fail whatever is still pending (with ``reason``, when
        the caller knows why better than "closed")."""
        self._fail(reason or ConnectionLost(f"connection to {self.address} closed"))
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
