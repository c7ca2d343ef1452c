"""The control-plane Kafka client: bootstrap, versions, metadata, connections, deadlines.

The aiokafka ``client.py`` role over kio messages: a pool of connections keyed
by broker address (so the bootstrap connection serves its broker's node id
too), ApiVersions negotiation per broker, a metadata cache (state in
``cluster.py``), and one deadline per public call -- the client's timeout, or
the command's deadline handed in by the caller, never a second one wrapped
around it -- inside which dropped connections, moved leaders and moved
coordinators are retried with exponential backoff after fresh metadata, as
Java's admin client does. So is every error Kafka classes as retriable
(``errors.is_retriable``), at each level a broker reports one: a broker's whole
answer (ListGroups' COORDINATOR_LOAD_IN_PROGRESS while it loads a group
coordinator), a group's, a partition's. Whatever is still unfinished at the
deadline becomes ``TimedOut`` naming the last error seen, so an operator learns
why, not only that, it took too long.

The client also remembers which brokers refuse connections and which it gave up
on, so that one dead or hung broker costs a command its wait once, not at every
step. The fan-outs (``fan_out_to_brokers``, ``fan_out_to_leaders`` in
``fanout.py``; ``find_coordinators``, ``fan_out_to_coordinators`` in
``coordinators.py``) are public methods here and live in those modules, which
reach the pool, the deadlines and that memory through the typed interfaces they
declare (``fanout.BrokerPool``, ``coordinators.CoordinatorPool``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, TypeVar

from kshare_cli.connect.bootstrap import split_host_port
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    IncompatibleBroker,
    TimedOut,
    UsageError,
)
from kshare_cli.kafka.api_keys import METADATA
from kshare_cli.wire import coordinators, fanout
from kshare_cli.wire.backoff import Backoff
from kshare_cli.wire.build import build
from kshare_cli.wire.cluster import (
    BrokerApiVersions,
    BrokerNode,
    ClusterMetadata,
    ClusterState,
    TopicPartitionKey,
    api_name,
    format_address,
    metadata_from_response,
)
from kshare_cli.wire.connection import BrokerConnection
from kshare_cli.wire.errors import (
    BrokerUnreachable,
    ConnectionReplaced,
    KafkaError,
    NodeLeft,
    NotKafka,
)
from kshare_cli.wire.fanout import Body
from kshare_cli.wire.framing import request_schema

log = logging.getLogger("kshare.wire")

#: How long a Metadata answer serves later questions without asking the broker again.
DEFAULT_METADATA_MAX_AGE_S: Final = 5.0
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
_ZERO_UUID: Final = uuid.UUID(int=0)

Address = tuple[str, int]
T = TypeVar("T")


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
        #: Keyed by address and lane: "" for every request but those a coordinator may
        #: hold, which have a connection of their own (``coordinators.HELD_LANE``).
        self._connections: dict[tuple[Address, str], BrokerConnection] = {}
        self._connecting: dict[tuple[Address, str], asyncio.Task[BrokerConnection]] = {}
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
                        task = loop.create_task(self.open_connection(self._bootstrap[started]))
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
        self._connections[(address, "")] = connection
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

    def note(self, error: object) -> None:
        call = self._call.get()
        while call is not None:
            call.last_error = str(error)
            call = call.parent
        log.debug("retrying after: %s", error)

    async def within_share(self, work: Callable[[], Awaitable[T]]) -> T:
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

    def share_deadline(self) -> float:
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

    async def open_connection(self, address: Address) -> BrokerConnection:
        """A new connection to ``address`` outside the pool (the pool's own go through
        ``connection``); the caller closes it."""
        return await BrokerConnection.open(
            address[0],
            address[1],
            client_id=self._settings.client_id,
            ssl_context=self._ssl_context,
            sasl=self._sasl,
            on_request=self._count_request,
        )

    async def connection(self, address: Address, lane: str = "") -> BrokerConnection:
        """A live connection to ``address``, opening one (once, however many ask) if needed.

        ``lane`` names a connection of its own to the same broker: a broker answers one
        connection's requests in order, so requests a coordinator may hold for long go
        on a lane apart, and the others never queue behind them.
        """
        key = (address, lane)
        existing = self._connections.get(key)
        if existing is not None and not existing.closed:
            return existing
        if existing is not None:
            del self._connections[key]
        task = self._connecting.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self.open_connection(address))
            self._connecting[key] = task

            def settled(done: asyncio.Task[BrokerConnection]) -> None:
                if self._connecting.get(key) is done:
                    del self._connecting[key]
                if not done.cancelled() and done.exception() is None:
                    if self._closed:
                        asyncio.get_running_loop().create_task(done.result().close())
                    else:
                        self._connections[key] = done.result()

            task.add_done_callback(settled)
        # Shielded: one caller's deadline must not abort a connect others wait for.
        return await asyncio.shield(task)

    async def _any_connection(self) -> BrokerConnection:
        """A connection to any broker: a live one if there is one, else the first that opens."""
        for (_, lane), connection in self._connections.items():
            if not lane and not connection.closed:
                return connection
        candidates: list[Address] = []
        if self._bootstrap_address is not None:
            candidates.append(self._bootstrap_address)
        candidates.extend(node.address for node in self._cluster.brokers.values())
        candidates.extend(self._bootstrap)
        failure: ConnectionFailed | None = None
        for address in dict.fromkeys(candidates):
            try:
                return await self.connection(address)
            except (AuthenticationFailed, IncompatibleBroker):
                raise
            except ConnectionFailed as error:
                failure = error
        raise failure or ConnectionFailed("no broker to connect to")

    async def adopt_connection(
        self, node: BrokerNode, fresh: BrokerConnection, lane: str = ""
    ) -> None:
        """Make ``fresh`` the pool's connection to ``node`` on ``lane``, closing the one it
        replaces (a request stuck on that one would hold every later request behind it)."""
        stuck = self._connections.pop((node.address, lane), None)
        self._connections[(node.address, lane)] = fresh
        if stuck is not None and stuck is not fresh:
            await stuck.close(
                ConnectionReplaced(f"connection to {stuck.address} replaced: a request held it")
            )

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

    def refusing_too_long(self, node_id: int) -> bool:
        """Whether ``node_id`` has refused connections for ``UNREACHABLE_AFTER_S``: a
        fan-out stops planning on it coming back (its answer is its failure)."""
        return self._failing_for(node_id) >= UNREACHABLE_AFTER_S

    async def connection_failed(self, node: BrokerNode, error: ConnectionFailed) -> None:
        """After a connection to ``node`` could not be opened: re-plan, retry, or give up.

        Fresh metadata decides (the node may be gone): NodeLeft when it no longer
        lists the node, BrokerUnreachable when it still does but the node has
        refused for ``UNREACHABLE_AFTER_S``; otherwise the caller retries.
        """
        now = asyncio.get_running_loop().time()
        since = self._failing.get(node.node_id, (now, ""))[0]
        self._failing[node.node_id] = (since, str(error))
        self.note(f"broker {node.node_id} ({node}): {str(error).removeprefix(f'{node}: ')}")
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

    def check_given_up(self, node: BrokerNode) -> None:
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

    async def give_up(self, node: BrokerNode | None, error: BaseException) -> None:
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
        for key in [key for key in self._connections if key[0] == node.address]:
            await self._connections.pop(key).close()

    def given_up_recently(self, node_id: int) -> bool:
        """Whether ``node_id`` was given up on less than ``GIVE_UP_FOR_S`` ago."""
        entry = self._given_up.get(node_id)
        return entry is not None and asyncio.get_running_loop().time() - entry[0] < GIVE_UP_FOR_S

    def answered(self, node_id: int) -> None:
        """``node_id`` answered: it is neither refusing nor given up on any more."""
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

    async def attempt(
        self,
        connection: BrokerConnection,
        api_key: int,
        body: Body,
        min_version: int,
        max_version: int | None,
    ) -> tuple[int, Any]:
        """One request on ``connection``, not retried (the coordinator fan-out's own sends).

        Through ``_attempt``, the one place every request leaves the client.
        """
        return await self._attempt(connection, api_key, body, min_version, max_version)

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
            backoff = Backoff()
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
                    self.note(error)
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
        self.check_given_up(broker)
        try:
            connection = await self.connection(broker.address)
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except ConnectionFailed as error:
            # Refused, unreachable, or lost during the handshake (not Kafka, or hung).
            await self.connection_failed(broker, error)
            raise
        answer = await self._attempt(connection, api_key, body, min_version, max_version)
        self.answered(node_id)
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
                    pass  # that request failed: this one asks on its own

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

    @property
    def cluster(self) -> ClusterState:
        """What the client knows of the cluster, the coordinator cache included."""
        return self._cluster

    def forget_metadata(self) -> None:
        """Drop cached topics (e.g. after creating or deleting one)."""
        self._cluster.forget_topics()

    # -- fan-outs (fanout.py, coordinators.py) ----------------------------------

    async def find_coordinators(
        self, group_ids: Sequence[str]
    ) -> dict[str, BrokerNode | KafkaError]:
        """Each group's coordinator, cached or found (``coordinators.find_coordinators``)."""
        return await coordinators.find_coordinators(self, group_ids)

    async def fan_out_to_brokers(
        self,
        api_key: int,
        body: Body,
        *,
        min_version: int = 0,
        max_version: int | None = None,
        error_code: Callable[[Any], int] | None = None,
    ) -> dict[BrokerNode, tuple[int, Any] | KafkaError]:
        """One request to every broker in the metadata (``fanout.fan_out_to_brokers``)."""
        return await fanout.fan_out_to_brokers(
            self,
            api_key,
            body,
            min_version=min_version,
            max_version=max_version,
            error_code=error_code,
        )

    async def fan_out_to_leaders(
        self,
        api_key: int,
        partitions: Sequence[TopicPartitionKey],
        body: Callable[[int, Sequence[TopicPartitionKey]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[TopicPartitionKey, tuple[int, Any]]],
        *,
        min_version: int = 0,
    ) -> dict[TopicPartitionKey, Any | KafkaError]:
        """One request per partition leader (``fanout.fan_out_to_leaders``)."""
        return await fanout.fan_out_to_leaders(
            self, api_key, partitions, body, split, min_version=min_version
        )

    async def fan_out_to_coordinators(
        self,
        api_key: int,
        group_ids: Sequence[str],
        body: Callable[[int, Sequence[str]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[str, tuple[int, Any]]],
        *,
        min_version: int = 0,
        batch_size: int | None = None,
        max_in_flight: int = coordinators.DEFAULT_MAX_IN_FLIGHT,
        ask_again: Callable[[Any], bool] | None = None,
    ) -> dict[str, Any | KafkaError]:
        """One request per group coordinator (``coordinators.fan_out_to_coordinators``)."""
        return await coordinators.fan_out_to_coordinators(
            self,
            api_key,
            group_ids,
            body,
            split,
            min_version=min_version,
            batch_size=batch_size,
            max_in_flight=max_in_flight,
            ask_again=ask_again,
        )


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


class _NotShared(Exception):
    """A Metadata request others waited for failed: each of them asks on its own."""
