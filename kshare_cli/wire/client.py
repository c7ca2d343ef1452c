"""The control-plane Kafka client: bootstrap, versions, metadata, coordinators, retries.

The aiokafka ``client.py`` role over kio messages: a pool of connections keyed
by broker address (so the bootstrap connection serves its broker's node id
too), ApiVersions negotiation per broker, a metadata and coordinator cache
(state in ``cluster.py``), and one deadline per public call -- the client's
timeout, or the command's deadline handed in by the caller, never a second one
wrapped around it -- inside which dropped connections, moved leaders and moved
coordinators are retried with exponential backoff after fresh metadata, as
Java's admin client does. So is every error Kafka classes as retriable
(``errors.is_retriable``), at each level a broker reports one: a broker's whole
answer (ListGroups' COORDINATOR_LOAD_IN_PROGRESS while it loads a group
coordinator), a group's, a partition's. Whatever is still unfinished at the
deadline becomes ``TimedOut`` naming the last error seen, so an operator learns
why, not only that, it took too long.

The fan-outs (``fan_out_to_brokers``, ``fan_out_to_leaders``,
``fan_out_to_coordinators``) never let one broker cost the whole answer: each
branch gets a share of what is left of the deadline, a broker that fresh
metadata still lists but that keeps refusing connections is given up after
``UNREACHABLE_AFTER_S`` (Kafka lists a dead broker until it is fenced, about
9 s), a broker that left the metadata is planned around, and an incompatible
broker fails only its own part. Each such branch ends as a ``KafkaError`` for
its broker, groups or partitions, naming the broker and the last error, while
the others' answers stand (franz-go's kadm: partial results are data).

Group RPCs go through ``fan_out_to_coordinators``: the groups are batched per
coordinator (one FindCoordinator v4+ round trip finds them all), one request
per coordinator carries all of its groups -- or, with ``batch_size``, a few of
them per request, sent concurrently, at most ``max_in_flight`` at a time per
coordinator, for RPCs a broker serves group by group -- and only the groups
whose coordinator moved are asked again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, TypeVar

from kio.schema.errors import ErrorCode

from kshare_cli.connect.bootstrap import split_host_port
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    IncompatibleBroker,
    TimedOut,
    UsageError,
)
from kshare_cli.kafka.api_keys import FIND_COORDINATOR, METADATA
from kshare_cli.wire.build import build
from kshare_cli.wire.cluster import (
    BrokerApiVersions,
    BrokerNode,
    ClusterMetadata,
    ClusterState,
    api_name,
    format_address,
    metadata_from_response,
)
from kshare_cli.wire.connection import BrokerConnection
from kshare_cli.wire.errors import (
    COORDINATOR_MOVED,
    BrokerUnreachable,
    KafkaError,
    NodeLeft,
    NotKafka,
    is_retriable,
    retriable_for_topic,
)
from kshare_cli.wire.framing import request_schema

log = logging.getLogger("kshare.wire")

#: FindCoordinator's key type for consumer, classic and share groups alike.
GROUP_KEY_TYPE: Final = 0
#: The first FindCoordinator version with ``coordinator_keys`` (KIP-699).
BATCHED_FIND_COORDINATOR: Final = 4

BACKOFF_FIRST_S: Final = 0.05
BACKOFF_MAX_S: Final = 1.0
#: How long a Metadata answer serves later questions without asking the broker again.
DEFAULT_METADATA_MAX_AGE_S: Final = 5.0
#: Requests of one fan-out in flight to one coordinator at a time. A Kafka broker
#: reads no further request from a connection until it has answered the last (its
#: socket server mutes the channel), so more in flight only wait in socket buffers:
#: 32 keeps the pipe full across a round trip, far below the broker's request
#: queue (``queued.max.requests``, 500, shared by all its clients).
DEFAULT_MAX_IN_FLIGHT: Final = 32
#: Of what is left of a call's deadline, the part one fan-out branch (one broker's
#: ListGroups, one leader's ListOffsets, one coordinator's groups) may use, and the
#: part a fan-out spends re-planning: half, so a silent broker still leaves the
#: healthy answers, and the steps after them, time to be shown.
BRANCH_SHARE: Final = 0.5
#: The most one branch may wait, whatever is left: a broker answers an admin request in
#: milliseconds, so a branch silent for this long is hung (or holding the request on a
#: hung share coordinator), and a 30 s --timeout must not cost 15 s per silent step. The
#: handshake of a new connection has the same bound (``HANDSHAKE_TIMEOUT_S``).
BRANCH_MAX_S: Final = 5.0
#: How long a broker that fresh metadata still lists may refuse connections before
#: it is reported unreachable. Kafka lists a dead broker until the controller fences
#: it (``broker.session.timeout.ms``, about 9 s); one refusal could be a restart's
#: blink, a second of them is a broker that is down.
UNREACHABLE_AFTER_S: Final = 1.0
#: How long one bootstrap server has alone before the next is tried alongside it: a
#: Kafka broker answers ApiVersions in milliseconds, so one hung (stopped, not
#: refusing) server costs this, not its share of --timeout.
BOOTSTRAP_STAGGER_S: Final = 0.5
#: How long a broker given up on (unreachable, or silent for a branch's whole share) is
#: reported so again without a new attempt. Without it each step of one command (list,
#: then describe, then end offsets) paid a hung broker's 5 s handshake again; after it,
#: one attempt is made, so a broker that came back is asked within a metadata age.
GIVE_UP_FOR_S: Final = 5.0
#: How long a broker has to complete a fresh handshake when a coordinator held a request:
#: on a healthy cluster a handshake takes milliseconds, so a second tells alive from hung.
PROBE_S: Final = 1.0
#: A group asked again alone, once its coordinator was found holding another group's
#: request: how long it may take, and how many such connections are open at once.
ALONE_S: Final = 2.0
ALONE_IN_FLIGHT: Final = 8
_ZERO_UUID: Final = uuid.UUID(int=0)

Body = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]
Address = tuple[str, int]
TopicPartitionKey = tuple[str, int]
T = TypeVar("T")


class _Backoff:
    """50 ms doubling to 1 s: fast when a coordinator is merely moving, gentle when down."""

    def __init__(self) -> None:
        self._delay = BACKOFF_FIRST_S

    def fits_before(self, deadline: float) -> bool:
        """Whether waiting once more still ends before ``deadline``."""
        return asyncio.get_running_loop().time() + self._delay < deadline

    def fits_within(self, remaining_s: float) -> bool:
        """Whether waiting once more still leaves time, of ``remaining_s``, to ask again."""
        return self._delay < remaining_s

    async def wait(self) -> None:
        await asyncio.sleep(self._delay)
        self._delay = min(self._delay * 2, BACKOFF_MAX_S)


@dataclass(slots=True)
class _Call:
    """One public call's deadline, shared by the tasks it spawns (they copy the context).

    A fan-out branch is a ``_Call`` of its own with a nearer deadline; errors noted
    in it are noted in its parent too, so a call that times out as a whole still
    names the last thing that went wrong anywhere below it.
    """

    deadline: float
    last_error: str | None = None
    parent: _Call | None = None


def transport_error(error: Exception) -> KafkaError:
    """A branch that could not be asked, in Kafka's words, keeping our own message.

    Timed out: REQUEST_TIMED_OUT; a broker without the API or version needed:
    UNSUPPORTED_VERSION; unreachable or dropped: NETWORK_EXCEPTION.
    """
    if isinstance(error, TimedOut):
        code = ErrorCode.request_timed_out
    elif isinstance(error, IncompatibleBroker):
        code = ErrorCode.unsupported_version
    else:
        code = ErrorCode.network_exception
    return KafkaError.of(code, str(error))


class KafkaClient:
    """An asyncio Kafka client for admin RPCs; create it with ``await KafkaClient.connect()``."""

    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        timeout_s: float,
        ssl_context: ssl.SSLContext | None,
        deadline: float | None = None,
    ) -> None:
        self._settings = settings
        self.timeout_s = timeout_s
        #: The command's deadline (the event loop's clock), when the caller has one:
        #: no call of this client runs past it.
        self.deadline = deadline
        self._ssl_context = ssl_context
        self._sasl = settings.sasl if settings.security_protocol.startswith("SASL") else None
        self._bootstrap = [split_host_port(server) for server in settings.bootstrap_servers]
        self._connections: dict[Address, BrokerConnection] = {}
        self._connecting: dict[Address, asyncio.Task[BrokerConnection]] = {}
        self._cluster = ClusterState()
        self._versions: BrokerApiVersions | None = None
        self._bootstrap_address: Address | None = None
        self._call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
            f"kshare-call-{id(self)}", default=None
        )
        self._closed = False
        #: When each broker that refuses connections first did, and the last refusal
        #: (cleared once it answers).
        self._failing: dict[int, tuple[float, str]] = {}
        #: Every broker ever listed, so one that left can still be named by address.
        self._seen: dict[int, BrokerNode] = {}
        #: Metadata requests on their way, by the topics asked: the same question asked
        #: again meanwhile waits for that answer (a thousand groups read side by side
        #: each asked for their topic's metadata, all missing the cache at once).
        self._metadata_pending: dict[frozenset[str] | None, asyncio.Future[ClusterMetadata]] = {}
        #: Brokers given up on, when, and the error to report for them meanwhile.
        self._given_up: dict[int, tuple[float, BrokerUnreachable]] = {}
        self.metadata_max_age_s = DEFAULT_METADATA_MAX_AGE_S
        #: Requests sent on every connection, handshakes included (benchmarks print it).
        self.round_trips = 0

    # -- lifecycle ---------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        settings: ConnectionSettings,
        *,
        timeout_s: float = 30.0,
        deadline: float | None = None,
    ) -> KafkaClient:
        """Connect to the first bootstrap server that answers, and negotiate versions.

        The servers are tried in order, each next one ``BOOTSTRAP_STAGGER_S`` after
        the last (at once when it fails), and the first to answer wins: a hung
        server costs half a second, not half of --timeout. ``deadline`` (the event
        loop's clock) is the command's, shared by every later call of the client.

        Raises ConnectionFailed when none can be reached or none answers as Kafka
        (naming them all: a web server or SSH daemon in the list, or one silent to
        ApiVersions for the handshake bound, costs only its own attempt),
        AuthenticationFailed when TLS or SASL refuses us, TimedOut when the time ran
        out before a handshake finished.
        """
        if not settings.bootstrap_servers:
            raise UsageError("no bootstrap servers given")
        protocol = settings.security_protocol.upper()
        if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise UsageError(f"unknown security.protocol {settings.security_protocol!r}")
        if protocol.startswith("SASL") and settings.sasl is None:
            raise UsageError(f"security.protocol {protocol} needs sasl.mechanism and credentials")
        ssl_context = settings.ssl_context() if protocol.endswith("SSL") else None
        if protocol.endswith("SSL") and ssl_context is None:
            ssl_context = ssl.create_default_context()
        client = cls(settings, timeout_s=timeout_s, ssl_context=ssl_context, deadline=deadline)
        try:
            await client._connect_bootstrap()
        except BaseException:
            await client.close()
            raise
        return client

    async def _connect_bootstrap(self) -> None:
        servers = ", ".join(self._settings.bootstrap_servers)
        loop = asyncio.get_running_loop()
        deadline = self._top_deadline()
        failures: dict[int, str] = {}
        attempts: dict[asyncio.Task[BrokerConnection], int] = {}
        started = 0
        chosen: asyncio.Task[BrokerConnection] | None = None
        spare: list[BrokerConnection] = []
        try:
            async with asyncio.timeout_at(deadline):
                while chosen is None:
                    if started < len(self._bootstrap):
                        task = loop.create_task(self._open(self._bootstrap[started]))
                        attempts[task] = started
                        started += 1
                    if not attempts:
                        break
                    stagger = BOOTSTRAP_STAGGER_S if started < len(self._bootstrap) else None
                    done, _ = await asyncio.wait(
                        attempts, timeout=stagger, return_when=asyncio.FIRST_COMPLETED
                    )
                    for task in sorted(done, key=lambda done_task: attempts[done_task]):
                        index = attempts.pop(task)
                        error = task.exception()
                        if error is None and chosen is None:
                            chosen = task
                        elif error is None:
                            spare.append(task.result())
                        elif isinstance(error, AuthenticationFailed | IncompatibleBroker):
                            raise error
                        elif isinstance(error, ConnectionFailed):
                            failures[index] = str(error)
                        else:
                            raise error
        except TimeoutError:
            for index in sorted(attempts.values()):
                where = format_address(*self._bootstrap[index])
                failures[index] = f"{where}: no answer within {self.timeout_s:g} s"
            detail = "; ".join(failures[index] for index in sorted(failures))
            raise TimedOut(
                f"cannot connect to any bootstrap server ({servers}) within "
                f"{self.timeout_s:g} s: {detail}"
            ) from None
        finally:
            for connection in spare:
                await connection.close()
            await _abandon(attempts)
        if chosen is None:
            detail = "; ".join(failures[index] for index in sorted(failures))
            raise ConnectionFailed(f"cannot connect to any bootstrap server ({servers}): {detail}")
        connection = chosen.result()
        address = (connection.host, connection.port)
        self._connections[address] = connection
        self._bootstrap_address = address
        self._versions = connection.api_versions

    async def close(self) -> None:
        """Close every connection; the client cannot be used afterwards."""
        self._closed = True
        for task in list(self._connecting.values()):
            task.cancel()
        for task in list(self._connecting.values()):
            with contextlib.suppress(BaseException):
                await task
        self._connecting.clear()
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            await connection.close()

    async def __aenter__(self) -> KafkaClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # -- deadlines ---------------------------------------------------------------

    def _top_deadline(self) -> float:
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        return deadline if self.deadline is None else min(deadline, self.deadline)

    def remaining_s(self) -> float:
        """Seconds left of the current call's deadline (of the client's, outside a call)."""
        current = self._call.get()
        deadline = self._top_deadline() if current is None else current.deadline
        return max(0.0, deadline - asyncio.get_running_loop().time())

    @contextlib.asynccontextmanager
    async def bounded(self, what: str, timeout_s: float | None = None) -> AsyncIterator[None]:
        """Run several calls under one deadline, as one operation named ``what``.

        A command wraps its whole work in this (instead of a timeout of its own
        around the client), so that the fan-outs inside see the real deadline and
        end their slow branches as failures before it, and a command that does
        time out says what it was doing and the last error seen. ``timeout_s``
        shortens the deadline of this one operation (a dashboard refresh, which must
        not wait out the client's whole timeout for one silent broker).
        """
        async with self._bounded(what, timeout_s):
            yield

    @contextlib.asynccontextmanager
    async def _bounded(self, what: str, timeout_s: float | None = None) -> AsyncIterator[_Call]:
        """Bound a public call by the client's timeout; nested calls share the outer deadline."""
        current = self._call.get()
        if current is not None:
            yield current
            return
        if self._closed:
            raise ConnectionFailed("the Kafka client is closed")
        deadline = self._top_deadline()
        bound_s = self.timeout_s
        if timeout_s is not None and timeout_s < bound_s:
            deadline = min(deadline, asyncio.get_running_loop().time() + timeout_s)
            bound_s = timeout_s
        call = _Call(deadline)
        token = self._call.set(call)
        try:
            async with asyncio.timeout_at(call.deadline):
                yield call
        except TimeoutError:
            detail = f" (last error: {call.last_error})" if call.last_error else ""
            raise TimedOut(f"{what} did not finish within {bound_s:g} s{detail}") from None
        finally:
            self._call.reset(token)

    def _note(self, error: object) -> None:
        call = self._call.get()
        while call is not None:
            call.last_error = str(error)
            call = call.parent
        log.debug("retrying after: %s", error)

    async def _within_share(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run one fan-out branch within ``BRANCH_SHARE`` of what is left of the call
        (at most ``BRANCH_MAX_S``).

        Raises TimedOut (naming the branch's last error) when the share runs out,
        which the fan-out turns into that branch's failure; the call goes on.
        """
        parent = self._call.get()
        if parent is None:
            raise RuntimeError("a fan-out branch runs inside a bounded call")
        now = asyncio.get_running_loop().time()
        share = min(max(0.0, parent.deadline - now) * BRANCH_SHARE, BRANCH_MAX_S)
        call = _Call(now + share, parent=parent)
        token = self._call.set(call)
        try:
            async with asyncio.timeout_at(call.deadline) as scope:
                return await work()
        except TimeoutError:
            if not scope.expired():
                raise
            detail = f" (last error: {call.last_error})" if call.last_error else ""
            raise TimedOut(f"no answer within {share:.3g} s{detail}") from None
        finally:
            self._call.reset(token)

    def _share_deadline(self) -> float:
        """Until when a fan-out may keep re-planning: ``BRANCH_SHARE`` of what is left."""
        now = asyncio.get_running_loop().time()
        return now + self.remaining_s() * BRANCH_SHARE

    # -- versions ----------------------------------------------------------------

    @property
    def broker_versions(self) -> BrokerApiVersions:
        """The bootstrap broker's ApiVersions answer.

        Only for questions about the cluster as a whole (does it have share groups
        at all); every request's version is chosen against the broker it goes to.
        """
        if self._versions is None:
            raise ConnectionFailed("the Kafka client is not connected")
        return self._versions

    def api_version(
        self, api_key: int, *, min_version: int = 0, max_version: int | None = None
    ) -> int:
        """The highest version both kshare and the broker speak, within the bounds given.

        Raises IncompatibleBroker naming the API (and, for share-group APIs, the
        Kafka release that has them).
        """
        return self.broker_versions.choose(api_key, min_version, max_version)

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        return self.broker_versions.supports(api_key, min_version)

    # -- connections -------------------------------------------------------------

    def _count_request(self) -> None:
        self.round_trips += 1

    async def _open(self, address: Address) -> BrokerConnection:
        return await BrokerConnection.open(
            address[0],
            address[1],
            client_id=self._settings.client_id,
            ssl_context=self._ssl_context,
            sasl=self._sasl,
            on_request=self._count_request,
        )

    async def _connection(self, address: Address) -> BrokerConnection:
        """A live connection to ``address``, opening one (once, however many ask) if needed."""
        existing = self._connections.get(address)
        if existing is not None and not existing.closed:
            return existing
        if existing is not None:
            del self._connections[address]
        task = self._connecting.get(address)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._open(address))
            self._connecting[address] = task

            def settled(done: asyncio.Task[BrokerConnection]) -> None:
                if self._connecting.get(address) is done:
                    del self._connecting[address]
                if not done.cancelled() and done.exception() is None:
                    if self._closed:
                        asyncio.get_running_loop().create_task(done.result().close())
                    else:
                        self._connections[address] = done.result()

            task.add_done_callback(settled)
        # Shielded: one caller's deadline must not abort a connect others wait for.
        return await asyncio.shield(task)

    async def _any_connection(self) -> BrokerConnection:
        """A connection to any broker: a live one if there is one, else the first that opens."""
        for connection in self._connections.values():
            if not connection.closed:
                return connection
        candidates: list[Address] = []
        if self._bootstrap_address is not None:
            candidates.append(self._bootstrap_address)
        candidates.extend(node.address for node in self._cluster.brokers.values())
        candidates.extend(self._bootstrap)
        failure: ConnectionFailed | None = None
        for address in dict.fromkeys(candidates):
            try:
                return await self._connection(address)
            except (AuthenticationFailed, IncompatibleBroker):
                raise
            except ConnectionFailed as error:
                failure = error
        raise failure or ConnectionFailed("no broker to connect to")

    async def _node(self, node_id: int) -> BrokerNode:
        found = self._cluster.broker(node_id)
        if found is None:
            await self.metadata([], refresh=True)
            found = self._cluster.broker(node_id)
        if found is None:
            seen = self._seen.get(node_id)
            now = asyncio.get_running_loop().time()
            # Still named as a leader, no longer listed: the clock of UNREACHABLE_AFTER_S runs.
            since, cause = self._failing.setdefault(node_id, (now, ""))
            address = "address unknown" if seen is None else str(seen)
            raise NodeLeft(node_id, address, cause or None)
        return found

    def _failing_for(self, node_id: int) -> float:
        """How long ``node_id`` has been refusing connections (0 when it is not)."""
        failing = self._failing.get(node_id)
        return 0.0 if failing is None else asyncio.get_running_loop().time() - failing[0]

    async def _connection_failed(self, node: BrokerNode, error: ConnectionFailed) -> None:
        """After a connection to ``node`` could not be opened: re-plan, retry, or give up.

        Fresh metadata decides (the node may be gone): NodeLeft when it no longer
        lists the node, BrokerUnreachable when it still does but the node has
        refused for ``UNREACHABLE_AFTER_S``; otherwise the caller retries.
        """
        now = asyncio.get_running_loop().time()
        since = self._failing.get(node.node_id, (now, ""))[0]
        self._failing[node.node_id] = (since, str(error))
        self._note(f"broker {node.node_id} ({node}): {str(error).removeprefix(f'{node}: ')}")
        try:
            metadata = await self.metadata([], refresh=True)
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except ConnectionFailed:
            metadata = None  # no broker answers: the node's own failure is the news
        if metadata is not None:
            current = metadata.brokers.get(node.node_id)
            if current is None:
                raise NodeLeft(node.node_id, str(node), str(error))
            if current.address != node.address:
                return  # the node came back elsewhere: worth asking at once
        # NotKafka from a broker the metadata lists: it accepted and then said nothing to
        # ApiVersions for the whole handshake bound (a hung broker), longer than the
        # refusals allowed: asking again would cost another handshake bound.
        if isinstance(error, NotKafka) or now - since >= UNREACHABLE_AFTER_S:
            unreachable = BrokerUnreachable(node.node_id, node.host, node.port, str(error))
            self._given_up[node.node_id] = (now, unreachable)
            raise unreachable

    def _check_given_up(self, node: BrokerNode) -> None:
        """Raise the broker's BrokerUnreachable again if it was given up on a moment ago."""
        entry = self._given_up.get(node.node_id)
        if entry is None:
            return
        at, unreachable = entry
        same = (unreachable.host, unreachable.port) == node.address
        # A command's client (it has the command's deadline) keeps it given up to the end:
        # each later step would otherwise pay the broker's silence again once 5 s passed.
        recent = asyncio.get_running_loop().time() - at < GIVE_UP_FOR_S
        if same and (recent or self.deadline is not None):
            raise unreachable
        del self._given_up[node.node_id]

    async def _give_up(self, node: BrokerNode | None, error: BaseException) -> None:
        """A fan-out branch to ``node`` ran out of its share without an answer (a hung broker).

        Its connection is closed (a request stuck on it would hold every later one) and
        the broker is given up on for ``GIVE_UP_FOR_S``, so the next step of the same
        command reports it at once instead of waiting out another share.
        """
        if node is None or not isinstance(error, TimedOut):
            return
        now = asyncio.get_running_loop().time()
        self._given_up[node.node_id] = (
            now,
            BrokerUnreachable(node.node_id, node.host, node.port, f"silent: {error}"),
        )
        connection = self._connections.pop(node.address, None)
        if connection is not None:
            await connection.close()

    def _answered(self, node_id: int) -> None:
        self._failing.pop(node_id, None)
        self._given_up.pop(node_id, None)

    # -- requests ----------------------------------------------------------------

    async def _attempt(
        self,
        connection: BrokerConnection,
        api_key: int,
        body: Body,
        min_version: int,
        max_version: int | None,
    ) -> tuple[int, Any]:
        """One request on one connection, its version chosen against that broker."""
        version = connection.api_versions.choose(api_key, min_version, max_version)
        data = body(version) if callable(body) else body
        payload = build(request_schema(api_key, version), data)
        return version, await connection.send(payload)

    async def request(
        self,
        api_key: int,
        body: Body,
        *,
        node: int | None = None,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> tuple[int, Any]:
        """Send one request of the negotiated version; return (version, kio response).

        ``body`` is a version-agnostic mapping for ``wire.build``, or a function of
        the chosen version that returns one. ``node`` None means any broker. A
        dropped connection is retried on a new connection with backoff until the
        deadline. For a given ``node``, a connection that cannot be opened is
        checked against fresh metadata: NodeLeft when the node is gone (plan
        again), BrokerUnreachable once it has refused for ``UNREACHABLE_AFTER_S``.
        """
        async with self._bounded(api_name(api_key)):
            backoff = _Backoff()
            while True:
                try:
                    if node is None:
                        connection = await self._any_connection()
                        return await self._attempt(
                            connection, api_key, body, min_version, max_version
                        )
                    return await self._request_node(node, api_key, body, min_version, max_version)
                except (AuthenticationFailed, IncompatibleBroker, NodeLeft, BrokerUnreachable):
                    raise
                except ConnectionFailed as error:
                    self._note(error)
                await backoff.wait()

    async def _request_node(
        self,
        node_id: int,
        api_key: int,
        body: Body,
        min_version: int,
        max_version: int | None,
    ) -> tuple[int, Any]:
        broker = await self._node(node_id)
        self._check_given_up(broker)
        try:
            connection = await self._connection(broker.address)
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except ConnectionFailed as error:
            # Refused, unreachable, or lost during the handshake (not Kafka, or hung).
            await self._connection_failed(broker, error)
            raise
        answer = await self._attempt(connection, api_key, body, min_version, max_version)
        self._answered(node_id)
        return answer

    # -- metadata ----------------------------------------------------------------

    async def metadata(
        self, topics: Sequence[str] | None = None, *, refresh: bool = False
    ) -> ClusterMetadata:
        """Brokers and topics (all topics when None), served from a short-lived cache.

        Never creates topics. ``refresh`` skips the cache; answers younger than
        ``metadata_max_age_s`` are reused otherwise.
        """
        async with self._bounded("Metadata"):
            now = asyncio.get_running_loop().time()
            if not refresh:
                cached = self._cluster.cached(topics, now=now, max_age=self.metadata_max_age_s)
                if cached is not None:
                    return cached
            wanted = None if topics is None else list(dict.fromkeys(topics))
            question = None if wanted is None else frozenset(wanted)
            pending = None if refresh else self._metadata_pending.get(question)
            if pending is not None:
                try:
                    return await asyncio.shield(pending)
                except _NotShared:
                    pass  # that request failed: this one asks on its own, as before

            def body(version: int) -> Mapping[str, Any]:
                names: list[dict[str, Any]] | None
                if wanted is None:
                    names = [] if version == 0 else None  # v0 has no null: empty means all
                else:
                    names = [{"name": name, "topic_id": _ZERO_UUID} for name in wanted]
                fields: dict[str, Any] = {
                    "topics": names,
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                }
                if version <= 10:
                    # Only v8-v10 have it; naming it at v11+ would send build() looking
                    # through every Metadata version for it (tens of ms on every command).
                    fields["include_cluster_authorized_operations"] = False
                return fields

            answer: asyncio.Future[ClusterMetadata] = asyncio.get_running_loop().create_future()
            # Nobody may be waiting: a failure nobody took must not be logged as lost.
            answer.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._metadata_pending[question] = answer
            try:
                _, response = await self.request(METADATA, body)
                metadata = metadata_from_response(response)
                self._cluster.update(metadata, all_topics=wanted is None, now=now)
                self._seen.update(metadata.brokers)
            except BaseException:
                # Its deadline or its cancellation is not the waiters': they ask again.
                answer.set_exception(_NotShared())
                raise
            else:
                answer.set_result(metadata)
            finally:
                if self._metadata_pending.get(question) is answer:
                    del self._metadata_pending[question]
            return metadata

    def forget_metadata(self) -> None:
        """Drop cached topics (e.g. after creating or deleting one)."""
        self._cluster.forget_topics()

    # -- coordinators ------------------------------------------------------------

    async def find_coordinators(
        self, group_ids: Sequence[str]
    ) -> dict[str, BrokerNode | KafkaError]:
        """Each group's coordinator: cached, else one batched FindCoordinator for all missing.

        Coordinators still loading or not yet elected (any retriable error) are
        asked again with backoff for ``BRANCH_SHARE`` of what is left of the
        deadline, then come back as their last error, like any other per-group
        error: a group without a coordinator must not cost the other groups their
        answers.
        """
        wanted = list(dict.fromkeys(group_ids))
        async with self._bounded("FindCoordinator"):
            give_up_at = self._share_deadline()
            found: dict[str, BrokerNode | KafkaError] = {}
            missing: list[str] = []
            for group_id in wanted:
                cached = self._cluster.coordinator(group_id)
                if cached is None:
                    missing.append(group_id)
                else:
                    found[group_id] = cached
            backoff = _Backoff()
            while missing:
                answers = await self._find_coordinators_once(missing)
                missing = []
                retry = backoff.fits_before(give_up_at)
                for group_id, answer in answers.items():
                    if retry and isinstance(answer, KafkaError) and is_retriable(answer.code):
                        self._note(f"FindCoordinator for group {group_id!r}: {answer}")
                        missing.append(group_id)
                        continue
                    if isinstance(answer, BrokerNode):
                        self._cluster.set_coordinator(group_id, answer)
                        answer = self._cluster.coordinator(group_id) or answer
                    found[group_id] = answer
                if missing:
                    await backoff.wait()
            return {group_id: found[group_id] for group_id in wanted}

    async def _find_coordinators_once(
        self, group_ids: Sequence[str]
    ) -> dict[str, BrokerNode | KafkaError]:
        if self.supports(FIND_COORDINATOR, BATCHED_FIND_COORDINATOR):
            # Asked of any broker; the bootstrap one's answer stands for the cluster.
            _, response = await self.request(
                FIND_COORDINATOR,
                {"key_type": GROUP_KEY_TYPE, "coordinator_keys": list(group_ids)},
                min_version=BATCHED_FIND_COORDINATOR,
            )
            answered = {entry.key: entry for entry in response.coordinators}
            unanswered: KafkaError | None = None
            answers: dict[str, BrokerNode | KafkaError] = {}
            for group_id in group_ids:
                entry = answered.get(group_id)
                if entry is not None:
                    answers[group_id] = _coordinator(entry)
                    continue
                if unanswered is None:  # built once, and only when needed (1,000s of groups)
                    unanswered = KafkaError.of(-1, "the broker did not answer for this group")
                answers[group_id] = unanswered
            return answers

        async def one(group_id: str) -> BrokerNode | KafkaError:
            _, response = await self.request(
                FIND_COORDINATOR,
                {"key": group_id, "key_type": GROUP_KEY_TYPE},
                max_version=BATCHED_FIND_COORDINATOR - 1,
            )
            return _coordinator(response)

        results = await asyncio.gather(*(one(group_id) for group_id in group_ids))
        return dict(zip(group_ids, results, strict=True))

    async def fan_out_to_brokers(
        self,
        api_key: int,
        body: Body,
        *,
        min_version: int = 0,
        max_version: int | None = None,
        error_code: Callable[[Any], int] | None = None,
    ) -> dict[BrokerNode, tuple[int, Any] | KafkaError]:
        """Send one request to every broker in the metadata (ListGroups' way of listing).

        Each broker's answer is (version, response), or a KafkaError naming the
        broker and the last error when it could not be asked within its share of
        the deadline: unreachable (NETWORK_EXCEPTION), silent (REQUEST_TIMED_OUT),
        or without the API or version (UNSUPPORTED_VERSION). A broker that left
        the metadata after failing is still reported (what only it knew may not
        have reached the others yet); brokers that joined meanwhile are asked.

        ``error_code(response)`` reads a response's top-level error: a broker that
        answers a retriable one (a Kafka 4.2 broker's ListGroups while it loads a
        group-coordinator partition: COORDINATOR_LOAD_IN_PROGRESS) is asked again
        with backoff within its share; its last answer stands when the share runs out.
        """
        async with self._bounded(api_name(api_key)):
            results: dict[BrokerNode, tuple[int, Any] | KafkaError] = {}
            asked: set[int] = set()
            metadata = await self.metadata([])
            while True:
                todo = [
                    broker
                    for node_id, broker in sorted(metadata.brokers.items())
                    if node_id not in asked
                ]
                if not todo:
                    return results

                def ask(broker: BrokerNode) -> Callable[[], Awaitable[tuple[int, Any]]]:
                    async def until_not_retriable() -> tuple[int, Any]:
                        backoff = _Backoff()
                        while True:
                            answer = await self.request(
                                api_key,
                                body,
                                node=broker.node_id,
                                min_version=min_version,
                                max_version=max_version,
                            )
                            code = 0 if error_code is None else int(error_code(answer[1]))
                            if not is_retriable(code) or not backoff.fits_within(
                                self.remaining_s()
                            ):
                                return answer
                            self._note(
                                f"{api_name(api_key)} from broker {broker.node_id} ({broker}): "
                                f"{KafkaError.of(code)}"
                            )
                            await backoff.wait()

                    return until_not_retriable

                outcomes = await asyncio.gather(
                    *(self._within_share(ask(broker)) for broker in todo),
                    return_exceptions=True,
                )
                replan = False
                for broker, outcome in zip(todo, outcomes, strict=True):
                    asked.add(broker.node_id)
                    if isinstance(outcome, NodeLeft):
                        replan = True
                    if isinstance(outcome, BaseException):
                        await self._give_up(broker, outcome)
                        results[broker] = _branch_failure(outcome, broker)
                    else:
                        results[broker] = outcome
                if not replan:
                    return results
                metadata = await self.metadata([], refresh=True)

    async def fan_out_to_leaders(
        self,
        api_key: int,
        partitions: Sequence[TopicPartitionKey],
        body: Callable[[int, Sequence[TopicPartitionKey]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[TopicPartitionKey, tuple[int, Any]]],
        *,
        min_version: int = 0,
    ) -> dict[TopicPartitionKey, Any | KafkaError]:
        """Ask each partition's leader about its partitions: one request per leader.

        ``body(version, partitions)`` describes the request; ``split(response)``
        maps each (topic, partition) answered to (error code, result). Partitions
        answered with a retriable error (a moved leader, a leader that does not
        know the topic yet, OFFSET_NOT_AVAILABLE...), that fresh metadata gives
        without a leader or with a retriable error, or whose leader left the
        metadata are looked up again in fresh metadata and re-asked with backoff,
        for ``BRANCH_SHARE`` of what is left of the deadline; after that they keep
        their last error. Unknown topics (``retriable_for_topic``), unreachable or
        silent leaders, and leaders without the API are per-partition KafkaErrors.
        """
        wanted = list(dict.fromkeys(partitions))
        async with self._bounded(api_name(api_key)):
            give_up_at = self._share_deadline()
            results: dict[TopicPartitionKey, Any | KafkaError] = {}
            pending = wanted
            refresh = False
            backoff = _Backoff()
            while pending:
                topics = sorted({topic for topic, _ in pending})
                metadata = await self.metadata(topics, refresh=refresh)
                by_leader: dict[int, list[TopicPartitionKey]] = {}
                retry: list[TopicPartitionKey] = []
                for key in pending:
                    topic = metadata.topics.get(key[0])
                    if topic is not None and topic.error_code != 0:
                        results[key] = KafkaError.of(topic.error_code)
                        if retriable_for_topic(topic.error_code):
                            retry.append(key)
                        continue
                    partition = None if topic is None else topic.partitions.get(key[1])
                    if partition is None:
                        results[key] = KafkaError.of(ErrorCode.unknown_topic_or_partition)
                    elif partition.leader_id < 0 or is_retriable(partition.error_code):
                        results[key] = KafkaError.of(
                            partition.error_code or ErrorCode.leader_not_available
                        )
                        retry.append(key)
                    else:
                        by_leader.setdefault(partition.leader_id, []).append(key)
                leaders = sorted(by_leader)

                def ask(
                    keys: list[TopicPartitionKey], leader: int
                ) -> Callable[[], Awaitable[tuple[int, Any]]]:
                    return lambda: self.request(
                        api_key,
                        lambda version: body(version, keys),
                        node=leader,
                        min_version=min_version,
                    )

                outcomes = await asyncio.gather(
                    *(self._within_share(ask(by_leader[leader], leader)) for leader in leaders),
                    return_exceptions=True,
                )
                for leader, outcome in zip(leaders, outcomes, strict=True):
                    keys = by_leader[leader]
                    if isinstance(outcome, NodeLeft):
                        results.update({key: transport_error(outcome) for key in keys})
                        if self._failing_for(leader) < UNREACHABLE_AFTER_S:
                            retry.extend(keys)  # the new leader may be in the next metadata
                        continue
                    if isinstance(outcome, BaseException):
                        node = metadata.brokers.get(leader)
                        await self._give_up(node, outcome)
                        failure = _branch_failure(outcome, node)
                        results.update({key: failure for key in keys})
                        continue
                    answered = split(outcome[1])
                    for key in keys:
                        if key not in answered:
                            results[key] = KafkaError.of(
                                ErrorCode.unknown_server_error,
                                f"leader {leader} did not answer for it",
                            )
                            continue
                        code, result = answered[key]
                        if code == 0:
                            results[key] = result
                            continue
                        results[key] = KafkaError.of(code, getattr(result, "error_message", None))
                        if is_retriable(code):
                            self._note(f"{api_name(api_key)} for {key[0]}-{key[1]}: {results[key]}")
                            retry.append(key)
                if not retry or not backoff.fits_before(give_up_at):
                    break
                await backoff.wait()
                pending = retry
                refresh = True
            return {key: results[key] for key in wanted}

    async def fan_out_to_coordinators(
        self,
        api_key: int,
        group_ids: Sequence[str],
        body: Callable[[int, Sequence[str]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[str, tuple[int, Any]]],
        *,
        min_version: int = 0,
        batch_size: int | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        ask_again: Callable[[Any], bool] | None = None,
    ) -> dict[str, Any | KafkaError]:
        """Ask each group's coordinator about its groups: one request per coordinator.

        ``body(version, group_ids)`` describes the request for some groups;
        ``split(response)`` maps each group in a response to (error code, result).
        Groups answered with a retriable error are re-asked with backoff for
        ``BRANCH_SHARE`` of what is left of the deadline; those answered with
        NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE
        (``COORDINATOR_MOVED``), or whose coordinator could not be reached, have
        their coordinator found again first. The answer maps every group to its
        result, or to a KafkaError: any other error code, the last retriable
        error once the time for re-asking is over, a coordinator that stayed unreachable
        (NETWORK_EXCEPTION naming it), silent (REQUEST_TIMED_OUT) or without the
        API (UNSUPPORTED_VERSION). ``ask_again(result)`` marks an answer as
        transient (a share-partition whose leader is moving): it is asked again
        while there is time, and kept as it is otherwise.

        ``batch_size`` caps the groups per request, for RPCs a broker serves one
        group after the other (Kafka 4.2's DescribeShareGroupOffsets: one request
        of 112 groups 2.40 s, 112 one-group requests 0.11 s); the requests to one
        coordinator are then sent concurrently, ``max_in_flight`` at a time. The
        coordinators are still found with one FindCoordinator for all groups.
        """
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        wanted = list(dict.fromkeys(group_ids))

        async def ask(
            gate: asyncio.Semaphore, node: BrokerNode, groups: list[str]
        ) -> tuple[dict[str, Any | KafkaError], list[str]]:
            async with gate:
                return await self._within_share(
                    lambda: self._ask_coordinator(
                        api_key, node, groups, body, split, min_version, ask_again
                    )
                )

        async with self._bounded(api_name(api_key)):
            give_up_at = self._share_deadline()
            results: dict[str, Any | KafkaError] = {}
            pending = wanted
            backoff = _Backoff()
            while pending:
                coordinators = await self.find_coordinators(pending)
                by_node: dict[BrokerNode, list[str]] = {}
                for group_id in pending:
                    coordinator = coordinators[group_id]
                    if isinstance(coordinator, KafkaError):
                        results[group_id] = coordinator
                    else:
                        by_node.setdefault(coordinator, []).append(group_id)
                asks: list[Coroutine[Any, Any, tuple[dict[str, Any | KafkaError], list[str]]]] = []
                asked: list[tuple[BrokerNode, list[str]]] = []
                for node, groups in by_node.items():
                    gate = asyncio.Semaphore(max_in_flight)
                    size = batch_size or len(groups)
                    for start in range(0, len(groups), size):
                        asked.append((node, groups[start : start + size]))
                        asks.append(ask(gate, node, groups[start : start + size]))
                outcomes = await asyncio.gather(*asks, return_exceptions=True)
                pending = []
                silent_branches: dict[BrokerNode, list[tuple[list[str], BaseException]]] = {}
                for (node, groups), outcome in zip(asked, outcomes, strict=True):
                    if isinstance(outcome, TimedOut):
                        silent_branches.setdefault(node, []).append((groups, outcome))
                        continue
                    if isinstance(outcome, BaseException):
                        await self._give_up(node, outcome)
                        failure = _branch_failure(outcome, node)
                        results.update({group_id: failure for group_id in groups})
                        continue
                    answered, retry = outcome
                    results.update(answered)
                    pending.extend(retry)
                for node, branches in silent_branches.items():
                    results.update(
                        await self._coordinator_silent(
                            api_key, node, branches, body, split, min_version
                        )
                    )
                if pending and not backoff.fits_before(give_up_at):
                    break  # what they were last answered stands (set in _ask_coordinator)
                if pending:
                    await backoff.wait()
            return {group_id: results[group_id] for group_id in wanted}

    async def _coordinator_silent(
        self,
        api_key: int,
        node: BrokerNode,
        branches: Sequence[tuple[list[str], BaseException]],
        body: Callable[[int, Sequence[str]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[str, tuple[int, Any]]],
        min_version: int,
    ) -> dict[str, Any | KafkaError]:
        """The groups of a coordinator whose requests got no answer in their share.

        A coordinator that did not answer in time is not always the broker at fault:
        Kafka's group coordinator holds DescribeShareGroupOffsets (and the other offset
        RPCs) until the share coordinators it reads from answer, about 180 s for a hung
        one (``PersisterStateManager``: five 30 s attempts). And a broker serves one
        connection's requests in order, so one held request holds every group asked
        after it on that connection. So the coordinator is checked with a fresh
        handshake. One that does not answer is given up, and its groups fail naming it.
        One that answers is holding: it stays in use (its stuck connection replaced),
        each of its silent groups is asked once more on a connection of its own, and
        the groups held again fail naming the brokers that do not answer as the cause.
        """
        groups = [group_id for each, _ in branches for group_id in each]
        error = branches[0][1]
        fresh = await self._fresh_connection(node)
        if fresh is None:
            await self._give_up(node, error)
            failure = _branch_failure(error, node)
            return {group_id: failure for group_id in groups}
        stuck = self._connections.pop(node.address, None)
        self._connections[node.address] = fresh
        if stuck is not None and stuck is not fresh:
            await stuck.close()
        gate = asyncio.Semaphore(ALONE_IN_FLIGHT)

        async def alone(group_id: str) -> Any | KafkaError | None:
            async with gate:
                return await self._ask_alone(api_key, node, group_id, body, split, min_version)

        answers = dict(zip(groups, await asyncio.gather(*map(alone, groups)), strict=True))
        held = [group_id for group_id, answer in answers.items() if answer is None]
        results: dict[str, Any | KafkaError] = {
            group_id: answer for group_id, answer in answers.items() if answer is not None
        }
        if held:
            silent = await self._silent_brokers(exclude=node.node_id)
            what = f"broker {node.node_id} ({node}) holds {api_name(api_key)} unanswered"
            if silent:
                named = ", ".join(f"broker {each.node_id} ({each})" for each in silent)
                verb = "does" if len(silent) == 1 else "do"
                message = f"{named} {verb} not answer, and {what} meanwhile ({error})"
            else:
                message = (
                    f"{what} ({error}) though it answers: Kafka holds it while a share "
                    "coordinator it reads from does not answer"
                )
            failure = KafkaError.of(ErrorCode.request_timed_out, message)
            results.update({group_id: failure for group_id in held})
        return results

    async def _ask_alone(
        self,
        api_key: int,
        node: BrokerNode,
        group_id: str,
        body: Callable[[int, Sequence[str]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[str, tuple[int, Any]]],
        min_version: int,
    ) -> Any | KafkaError | None:
        """One group asked once on a connection of its own; None when that is held too."""
        within = min(ALONE_S, self.remaining_s())
        if within <= 0:
            return None
        try:
            async with asyncio.timeout(within):
                connection = await self._open(node.address)
                try:
                    _, response = await self._attempt(
                        connection,
                        api_key,
                        lambda version: body(version, [group_id]),
                        min_version,
                        None,
                    )
                finally:
                    await connection.close()
        except (ConnectionFailed, TimedOut, TimeoutError):
            return None
        code, result = split(response).get(group_id, (-1, None))
        if int(code) == 0:
            return result
        return KafkaError.of(int(code), getattr(result, "error_message", None))

    async def _fresh_connection(self, node: BrokerNode) -> BrokerConnection | None:
        """A new connection to ``node`` if it completes a handshake within ``PROBE_S``."""
        within = min(PROBE_S, self.remaining_s())
        if within <= 0:
            return None
        try:
            async with asyncio.timeout(within):
                return await self._open(node.address)
        except (ConnectionFailed, TimedOut, TimeoutError):
            return None

    async def _silent_brokers(self, exclude: int) -> list[BrokerNode]:
        """The listed brokers (but ``exclude``) given up on, or silent to a fresh handshake."""
        try:
            listed = (await self.metadata([])).brokers
        except (ConnectionFailed, TimedOut):
            listed = self._cluster.brokers
        now = asyncio.get_running_loop().time()
        nodes = sorted(
            (node for node in listed.values() if node.node_id != exclude),
            key=lambda node: node.node_id,
        )
        known = {
            node.node_id
            for node in nodes
            if (entry := self._given_up.get(node.node_id)) is not None
            and now - entry[0] < GIVE_UP_FOR_S
        }
        unknown = [node for node in nodes if node.node_id not in known]
        probes = await asyncio.gather(*(self._fresh_connection(node) for node in unknown))
        silent = set(known)
        for node, probe in zip(unknown, probes, strict=True):
            if probe is None:
                silent.add(node.node_id)
            else:
                await probe.close()
        return [node for node in nodes if node.node_id in silent]

    async def _ask_coordinator(
        self,
        api_key: int,
        node: BrokerNode,
        group_ids: list[str],
        body: Callable[[int, Sequence[str]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[str, tuple[int, Any]]],
        min_version: int,
        ask_again: Callable[[Any], bool] | None,
    ) -> tuple[dict[str, Any | KafkaError], list[str]]:
        """One coordinator's share of a fan-out: (answers so far, groups to find again).

        A group to find again also has an answer: its last error (or transient
        result), which stands if the fan-out runs out of time for it.
        """
        try:
            self._check_given_up(node)
        except BrokerUnreachable:
            self._cluster.forget_coordinators(group_ids)  # found again once it may have moved
            raise
        try:
            connection = await self._connection(node.address)
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except ConnectionFailed as error:
            self._cluster.forget_coordinators(group_ids)
            try:
                await self._connection_failed(node, error)
            except NodeLeft as left:
                if self._failing_for(node.node_id) >= UNREACHABLE_AFTER_S:
                    raise  # and still named as their coordinator: the groups fail
                # Its groups may have moved with it: find them again.
                return {group_id: transport_error(left) for group_id in group_ids}, group_ids
            named = BrokerUnreachable(node.node_id, node.host, node.port, str(error))
            failure = transport_error(named)
            return {group_id: failure for group_id in group_ids}, group_ids
        try:
            _, response = await self._attempt(
                connection, api_key, lambda version: body(version, group_ids), min_version, None
            )
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except ConnectionFailed as error:
            self._note(error)
            self._cluster.forget_coordinators(group_ids)
            failure = transport_error(error)
            return {group_id: failure for group_id in group_ids}, group_ids
        self._answered(node.node_id)
        answered: dict[str, Any | KafkaError] = {}
        retry: list[str] = []
        moved: list[str] = []
        per_group = split(response)
        for group_id in group_ids:
            if group_id not in per_group:
                answered[group_id] = KafkaError.of(
                    -1, f"the coordinator {node} did not answer for this group"
                )
                continue
            code, result = per_group[group_id]
            code = int(code)
            if code == 0:
                answered[group_id] = result
                if ask_again is not None and ask_again(result):
                    self._note(f"{api_name(api_key)} for group {group_id!r}: a transient error")
                    retry.append(group_id)
            elif is_retriable(code):
                self._note(f"{api_name(api_key)} for group {group_id!r}: {KafkaError.of(code)}")
                answered[group_id] = KafkaError.of(code, getattr(result, "error_message", None))
                retry.append(group_id)
                if code in COORDINATOR_MOVED:
                    moved.append(group_id)
            else:
                answered[group_id] = KafkaError.of(code, getattr(result, "error_message", None))
        self._cluster.forget_coordinators(moved)
        return answered, retry


def _branch_failure(error: BaseException, node: BrokerNode | None) -> KafkaError:
    """A fan-out branch that ended in an exception, as its broker's KafkaError.

    Authentication failures and programming errors are not a broker's partial
    failure: they propagate.
    """
    if isinstance(error, AuthenticationFailed):
        raise error
    if not isinstance(error, ConnectionFailed | TimedOut):
        raise error
    if node is not None and not isinstance(error, BrokerUnreachable | NodeLeft):
        # Name the broker, as BrokerUnreachable does, whatever the error was.
        named = f"broker {node.node_id} ({node}): {error}"
        return KafkaError.of(transport_error(error).code, named)
    return transport_error(error)


async def _abandon(attempts: Mapping[asyncio.Task[BrokerConnection], int]) -> None:
    """Cancel the bootstrap attempts that lost the race, closing any that connected anyway."""
    for task in attempts:
        task.cancel()
    for task in attempts:
        try:
            connection = await task
        except (asyncio.CancelledError, ConnectionFailed, TimedOut):
            continue
        await connection.close()


def _coordinator(entry: Any) -> BrokerNode | KafkaError:
    code = int(entry.error_code)
    if code != 0:
        message = entry.error_message
        return KafkaError.of(code, None if message in ("", "NONE") else message)
    return BrokerNode(int(entry.node_id), entry.host, int(entry.port))


class _NotShared(Exception):
    """A Metadata request others waited for failed: each of them asks on its own."""
