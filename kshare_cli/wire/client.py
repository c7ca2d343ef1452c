"""The control-plane Kafka client: bootstrap, versions, metadata, coordinators, retries.

The aiokafka ``client.py`` role over kio messages: a pool of connections keyed
by broker address (so the bootstrap connection serves its broker's node id
too), ApiVersions negotiation, a metadata and coordinator cache (state in
``cluster.py``), and one deadline per public call -- the client's timeout --
inside which dropped connections and moved coordinators are retried with
exponential backoff. Whatever is still unfinished at the deadline becomes
``TimedOut`` naming the last error seen, so an operator learns why, not only
that, it took too long.

Group RPCs go through ``fan_out_to_coordinators``: the groups are batched per
coordinator (one FindCoordinator v4+ round trip finds them all), one request
per coordinator carries all of its groups -- or, with ``batch_size``, a few of
them per request, sent concurrently, at most ``max_in_flight`` at a time per
coordinator, for RPCs a broker serves group by group -- and only the groups
whose coordinator moved are asked again. Per-group errors are data, not
exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import ssl
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from kshare_cli.connect.settings import ConnectionSettings, split_host_port
from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    IncompatibleBroker,
    TimedOut,
    UsageError,
)
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
from kshare_cli.wire.errors import COORDINATOR_MOVED, KafkaError
from kshare_cli.wire.framing import request_schema

log = logging.getLogger("kshare.wire")

METADATA_KEY: Final = 3
FIND_COORDINATOR_KEY: Final = 10
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
_ZERO_UUID: Final = uuid.UUID(int=0)

Body = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]
Address = tuple[str, int]


class _Backoff:
    """50 ms doubling to 1 s: fast when a coordinator is merely moving, gentle when down."""

    def __init__(self) -> None:
        self._delay = BACKOFF_FIRST_S

    async def wait(self) -> None:
        await asyncio.sleep(self._delay)
        self._delay = min(self._delay * 2, BACKOFF_MAX_S)


@dataclass(slots=True)
class _Call:
    """One public call's deadline, shared by the tasks it spawns (they copy the context)."""

    deadline: float
    last_error: str | None = None


class KafkaClient:
    """An asyncio Kafka client for admin RPCs; create it with ``await KafkaClient.connect()``."""

    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        timeout_s: float,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self._settings = settings
        self.timeout_s = timeout_s
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
        self.metadata_max_age_s = DEFAULT_METADATA_MAX_AGE_S
        #: Requests sent on every connection, handshakes included (benchmarks print it).
        self.round_trips = 0

    # -- lifecycle ---------------------------------------------------------------

    @classmethod
    async def connect(cls, settings: ConnectionSettings, *, timeout_s: float = 30.0) -> KafkaClient:
        """Connect to the first bootstrap server that answers, and negotiate versions.

        Raises ConnectionFailed when none can be reached or none answers as Kafka
        (naming them all: a web server or SSH daemon in the list, or one silent to
        ApiVersions for the handshake bound, costs only its own attempt),
        AuthenticationFailed when TLS or SASL refuses us, TimedOut when --timeout
        (each server's share of it) ran out before a handshake finished.
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
        client = cls(settings, timeout_s=timeout_s, ssl_context=ssl_context)
        try:
            await client._connect_bootstrap()
        except BaseException:
            await client.close()
            raise
        return client

    async def _connect_bootstrap(self) -> None:
        servers = ", ".join(self._settings.bootstrap_servers)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        failures: list[str] = []
        timed_out = False
        for index, address in enumerate(self._bootstrap):
            # Each untried server gets an equal share of what is left, so one silent
            # server cannot use up the time the others would have needed.
            share = (deadline - loop.time()) / (len(self._bootstrap) - index)
            try:
                async with asyncio.timeout(share):
                    connection = await self._open(address)
            except TimeoutError:
                timed_out = True
                failures.append(f"{format_address(*address)}: no answer within {share:.3g} s")
                continue
            except (AuthenticationFailed, IncompatibleBroker):
                raise
            except ConnectionFailed as error:
                failures.append(str(error))
                continue
            self._connections[address] = connection
            self._bootstrap_address = address
            self._versions = connection.api_versions
            return
        detail = "; ".join(failures)
        if timed_out:
            raise TimedOut(
                f"cannot connect to any bootstrap server ({servers}) within "
                f"{self.timeout_s:g} s: {detail}"
            )
        raise ConnectionFailed(f"cannot connect to any bootstrap server ({servers}): {detail}")

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

    @contextlib.asynccontextmanager
    async def _bounded(self, what: str) -> AsyncIterator[_Call]:
        """Bound a public call by the client's timeout; nested calls share the outer deadline."""
        current = self._call.get()
        if current is not None:
            yield current
            return
        if self._closed:
            raise ConnectionFailed("the Kafka client is closed")
        loop = asyncio.get_running_loop()
        call = _Call(loop.time() + self.timeout_s)
        token = self._call.set(call)
        try:
            async with asyncio.timeout_at(call.deadline):
                yield call
        except TimeoutError:
            detail = f" (last error: {call.last_error})" if call.last_error else ""
            raise TimedOut(f"{what} did not finish within {self.timeout_s:g} s{detail}") from None
        finally:
            self._call.reset(token)

    def _note(self, error: object) -> None:
        call = self._call.get()
        if call is not None:
            call.last_error = str(error)
        log.debug("retrying after: %s", error)

    # -- versions ----------------------------------------------------------------

    @property
    def broker_versions(self) -> BrokerApiVersions:
        """The bootstrap broker's ApiVersions answer."""
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
            raise ConnectionFailed(f"broker {node_id} is not in the cluster metadata")
        return found

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
        dropped connection (or a broker that cannot be reached) is retried on a
        new connection with backoff until the deadline.
        """
        async with self._bounded(api_name(api_key)):
            backoff = _Backoff()
            while True:
                try:
                    if node is None:
                        connection = await self._any_connection()
                    else:
                        connection = await self._connection((await self._node(node)).address)
                    return await self._attempt(connection, api_key, body, min_version, max_version)
                except (AuthenticationFailed, IncompatibleBroker):
                    raise
                except ConnectionFailed as error:
                    self._note(error)
                await backoff.wait()

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

            def body(version: int) -> Mapping[str, Any]:
                names: list[dict[str, Any]] | None
                if wanted is None:
                    names = [] if version == 0 else None  # v0 has no null: empty means all
                else:
                    names = [{"name": name, "topic_id": _ZERO_UUID} for name in wanted]
                return {
                    "topics": names,
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False,
                }

            _, response = await self.request(METADATA_KEY, body)
            metadata = metadata_from_response(response)
            self._cluster.update(metadata, all_topics=wanted is None, now=now)
            return metadata

    def forget_metadata(self) -> None:
        """Drop cached topics (e.g. after creating or deleting one)."""
        self._cluster.forget_topics()

    # -- coordinators ------------------------------------------------------------

    async def find_coordinators(
        self, group_ids: Sequence[str]
    ) -> dict[str, BrokerNode | KafkaError]:
        """Each group's coordinator: cached, else one batched FindCoordinator for all missing.

        Coordinators still loading or not yet elected are asked again with
        backoff until the deadline; other per-group errors come back as KafkaError.
        """
        wanted = list(dict.fromkeys(group_ids))
        async with self._bounded("FindCoordinator"):
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
                for group_id, answer in answers.items():
                    if isinstance(answer, KafkaError) and answer.code in COORDINATOR_MOVED:
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
        if self.supports(FIND_COORDINATOR_KEY, BATCHED_FIND_COORDINATOR):
            _, response = await self.request(
                FIND_COORDINATOR_KEY,
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
                FIND_COORDINATOR_KEY,
                {"key": group_id, "key_type": GROUP_KEY_TYPE},
                max_version=BATCHED_FIND_COORDINATOR - 1,
            )
            return _coordinator(response)

        results = await asyncio.gather(*(one(group_id) for group_id in group_ids))
        return dict(zip(group_ids, results, strict=True))

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
    ) -> dict[str, Any | KafkaError]:
        """Ask each group's coordinator about its groups: one request per coordinator.

        ``body(version, group_ids)`` describes the request for some groups;
        ``split(response)`` maps each group in a response to (error code, result).
        Groups answered with NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
        COORDINATOR_NOT_AVAILABLE, or whose coordinator could not be reached, are
        found again and re-asked with backoff until the deadline. The answer maps
        every group to its result, or to a KafkaError for any other error code.

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
                return await self._ask_coordinator(api_key, node, groups, body, split, min_version)

        async with self._bounded(api_name(api_key)):
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
                for node, groups in by_node.items():
                    gate = asyncio.Semaphore(max_in_flight)
                    size = batch_size or len(groups)
                    asks.extend(
                        ask(gate, node, groups[start : start + size])
                        for start in range(0, len(groups), size)
                    )
                outcomes = await asyncio.gather(*asks, return_exceptions=True)
                pending = []
                for outcome in outcomes:
                    if isinstance(outcome, BaseException):
                        raise outcome
                    answered, retry = outcome
                    results.update(answered)
                    pending.extend(retry)
                if pending:
                    await backoff.wait()
            return {group_id: results[group_id] for group_id in wanted}

    async def _ask_coordinator(
        self,
        api_key: int,
        node: BrokerNode,
        group_ids: list[str],
        body: Callable[[int, Sequence[str]], Mapping[str, Any]],
        split: Callable[[Any], Mapping[str, tuple[int, Any]]],
        min_version: int,
    ) -> tuple[dict[str, Any | KafkaError], list[str]]:
        """One coordinator's share of a fan-out: (final answers, groups to find again)."""
        try:
            connection = await self._connection(node.address)
            _, response = await self._attempt(
                connection, api_key, lambda version: body(version, group_ids), min_version, None
            )
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except ConnectionFailed as error:
            self._note(error)
            self._cluster.forget_coordinators(group_ids)
            return {}, group_ids
        answered: dict[str, Any | KafkaError] = {}
        retry: list[str] = []
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
            elif code in COORDINATOR_MOVED:
                self._note(f"{api_name(api_key)} for group {group_id!r}: {KafkaError.of(code)}")
                retry.append(group_id)
            else:
                answered[group_id] = KafkaError.of(code, getattr(result, "error_message", None))
        self._cluster.forget_coordinators(retry)
        return answered, retry


def _coordinator(entry: Any) -> BrokerNode | KafkaError:
    code = int(entry.error_code)
    if code != 0:
        message = entry.error_message
        return KafkaError.of(code, None if message in ("", "NONE") else message)
    return BrokerNode(int(entry.node_id), entry.host, int(entry.port))
