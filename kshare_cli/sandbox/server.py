"""The sandbox's network side: accept connections, read frames, dispatch, answer.

Requests on one connection are answered strictly in order, one at a time, as
Kafka's network layer does (it mutes a channel while a request is in flight);
clients rely on that ordering. Frames that cannot be understood get what Kafka
gives them: an ApiVersions request of an unknown version is answered in v0 with
UNSUPPORTED_VERSION and the versions on offer, anything else malformed closes
the connection. No client input can stop the server.

A listener's ``ListenerSecurity`` (``security.py``) decides TLS (the handshake
happens before the first frame; an untrusted peer never gets that far) and
SASL: until a connection has authenticated, its frames go through the
listener's SASL gate instead of the broker, exactly as Kafka's authenticator
sits in front of its request handlers.

A node of a sandbox cluster can die the two ways a broker process does:
``abort`` is ``kill -9`` (every connection reset, the port refuses), ``hang``
is a process that stopped running (``kill -STOP``, a long GC pause): the kernel
still accepts connections and takes requests, nothing is ever answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kshare_cli.kafka.api_keys import API_VERSIONS
from kshare_cli.sandbox.framing import (
    Request,
    decode_request,
    encode_response,
    peek_request_prefix,
)
from kshare_cli.sandbox.security import (
    ANONYMOUS,
    PLAINTEXT,
    ListenerSecurity,
    certificate_principal,
)
from kshare_cli.wire.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameError,
    UnsupportedVersion,
    read_frame,
)

log = logging.getLogger("kshare.sandbox")


@dataclass(slots=True)
class Connection:
    """What a handler may need to know about the peer.

    ``authenticated_principal`` is Kafka's principal: ``User:<name>`` after SASL,
    ``User:<certificate subject>`` on SSL with a client certificate, else
    ``User:ANONYMOUS``; None while a SASL connection has not authenticated yet.
    """

    peer_host: str
    peer_port: int
    listener: str = "PLAINTEXT"
    authenticated_principal: str | None = None
    #: The sandbox cluster node the connection reached (``--brokers``).
    node_id: int = 1


class AnswerDropped(Exception):
    """Raised by ``dispatch`` after handling a request: close the connection, answer nothing.

    A broker that applied a request and died (or lost the connection) before its
    answer left: the client cannot tell whether the request took effect.
    """


Dispatch = Callable[[Request, Connection], Awaitable[Any | None]]
UnsupportedApiVersions = Callable[[int], bytes]


class FrameServer:
    """An asyncio TCP server that turns frames into ``dispatch`` calls.

    ``dispatch`` returns a kio response payload, or None for requests that get
    no response (Produce with acks=0).
    """

    def __init__(
        self,
        dispatch: Dispatch,
        unsupported_api_versions: UnsupportedApiVersions,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        security: ListenerSecurity = PLAINTEXT,
        node_id: int = 1,
    ) -> None:
        self._dispatch = dispatch
        self._node_id = node_id
        self._unsupported_api_versions = unsupported_api_versions
        self._max_frame_bytes = max_frame_bytes
        self._security = security
        self._ssl_context = security.ssl_context
        self._listener = security.protocol
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        #: Cleared while the node hangs: frames are read and never answered.
        self._running = asyncio.Event()
        self._running.set()

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port (useful with port 0)."""
        self._server = await asyncio.start_server(
            self._on_connect, host, port, ssl=self._ssl_context, limit=2**20
        )
        sockets = self._server.sockets
        return int(sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    def hang(self) -> None:
        """Stop answering: requests read from now on (or being handled) get no response."""
        self._running.clear()

    async def abort(self) -> None:
        """Die as a killed process does: close the port and reset every connection (RST)."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                # Linger 0: close sends RST, as the kernel does for a killed process's sockets.
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        await self.close()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._writers.add(writer)
        peer = writer.get_extra_info("peername") or ("unknown", 0)
        connection = Connection(str(peer[0]), int(peer[1]), self._listener, node_id=self._node_id)
        if not self._security.sasl:
            connection.authenticated_principal = ANONYMOUS
            ssl_object = writer.get_extra_info("ssl_object")
            if ssl_object is not None:
                connection.authenticated_principal = certificate_principal(
                    ssl_object.getpeercert(binary_form=True)
                )
        try:
            await self._serve(reader, writer, connection)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            # The server is closing; ending quietly keeps asyncio from logging the
            # cancellation as an error of the connection callback.
            pass
        except FrameError as error:
            log.info("closing connection from %s: %s", connection.peer_host, error)
        finally:
            if task is not None:
                self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: Connection
    ) -> None:
        gate = self._security.new_gate()
        while True:
            authenticating = gate is not None and not gate.complete
            limit = self._max_frame_bytes
            if gate is not None and authenticating:
                limit = min(limit, gate.max_frame_bytes)
            frame = await read_frame(reader, limit)
            if frame is None:
                return
            await self._running.wait()
            request: Request | None = None
            try:
                if gate is not None and authenticating:
                    step = gate.receive(frame)
                    if step.reply is not None:
                        writer.write(step.reply)
                        await writer.drain()
                    if step.close:
                        return
                    if gate.complete:
                        connection.authenticated_principal = gate.principal
                    if step.request is None:
                        continue
                    request = step.request
                else:
                    request = decode_request(frame)
                response = await self._dispatch(request, connection)
            except UnsupportedVersion as error:
                if error.api_key != API_VERSIONS:
                    raise
                _, _, correlation_id = peek_request_prefix(frame)
                writer.write(self._unsupported_api_versions(correlation_id))
                await writer.drain()
                continue
            except FrameError:
                raise
            except AnswerDropped:
                log.info("dropped the connection from %s unanswered", connection.peer_host)
                return
            except Exception:
                # A bug in a handler must not take the broker down; Kafka would
                # answer UNKNOWN_SERVER_ERROR, the closest we can do generically is
                # to drop the connection, which every client treats as retriable.
                if request is None:
                    log.exception("SASL authentication of %s failed", connection.peer_host)
                else:
                    log.exception(
                        "handler for API %d v%d failed", request.api_key, request.api_version
                    )
                return
            await self._running.wait()
            if response is not None:
                writer.write(encode_response(response, request.correlation_id))
                await writer.drain()
