"""The sandbox broker: one node, or a cluster of nodes over one shared model.

Handlers are registered per API key with the version range Kafka 4.2 offers
(taken from the golden recording of its ApiVersions response) intersected with
what kio can decode; ApiVersions advertises exactly that table, so clients
negotiate with the sandbox as they would with Kafka. Each handler describes
its response once, version-agnostically, and ``wire.build`` keeps the fields of
the version asked for.

A broker built with ``share_groups=False`` offers what a Kafka 3.x broker does:
no share-group APIs in ApiVersions, no ``share.version`` feature, FindCoordinator
without the share key type (v6) -- the "broker too old for share groups" case.

A broker of ``nodes`` > 1 listens once per node (node ids 1..N, consecutive
ports from the first). Logs, groups and share-partition state stay one
in-process model; what each node answers follows ``cluster.ControllerState``:
Metadata lists the registered nodes and each partition's leader, FindCoordinator
names the coordinator's node, and a request that needs a leader or a
coordinator, sent to another node, gets Kafka's error for it. ``stop_node``,
``hang_node``, ``restart_node``, ``move_leader``, ``move_*_coordinator`` and
``drop_answer`` (a request applied, its answer lost with the connection) are
the faults a test can cause; a node down for ``broker.session.timeout.ms`` is
fenced and its leaderships move.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    FETCH,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SHARE_GROUP_APIS,
)
from kshare_cli.sandbox.authorizer import Authorizer, DenyList
from kshare_cli.sandbox.cluster import (
    ControllerState,
    NodeState,
)
from kshare_cli.sandbox.framing import Request, encode_response
from kshare_cli.sandbox.log import LogStore, PartitionLog, RecordBatchError, Topic
from kshare_cli.sandbox.profile import KafkaProfile
from kshare_cli.sandbox.security import PLAINTEXT, ListenerSecurity
from kshare_cli.sandbox.server import AnswerDropped, Connection, FrameServer
from kshare_cli.state.partitioning import DEFAULT_STATE_PARTITIONS, SHARE_STATE_TOPIC
from kshare_cli.wire.build import build, has_field
from kshare_cli.wire.framing import UnsupportedVersion

log = logging.getLogger("kshare.sandbox")

NODE_ID: Final = 1
SHARE_STATE_PARTITIONS: Final = DEFAULT_STATE_PARTITIONS

# Error codes, named as Kafka names them.

Handler = Callable[["Broker", Request, Connection], Awaitable[Any | None]]

#: Kafka 4.2.0's advertised ranges (golden ApiVersions v4 response), for the APIs we answer.
KAFKA_42_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 10: (0, 6), 16: (0, 5), 18: (0, 4),
    19: (2, 7), 20: (1, 6), 32: (1, 4), 42: (0, 2), 44: (0, 1), 60: (0, 2),
    76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0),
    17: (0, 1), 36: (0, 2), 22: (0, 5), 8: (2, 10), 21: (0, 2),
}  # fmt: skip


#: Where a broker without share groups (Kafka 3.9) offers less than 4.2 for an API we answer.
PRE_SHARE_GROUP_VERSIONS: Final[dict[int, tuple[int, int]]] = {10: (0, 5)}

HANDLERS: dict[int, Handler] = {}


def handles(api_key: int) -> Callable[[Handler], Handler]:
    """Register a handler; its versions come from KAFKA_42_VERSIONS."""

    def register(handler: Handler) -> Handler:
        HANDLERS[api_key] = handler
        return handler

    return register


def response_type(request: Request) -> type[Any]:
    return load_response_schema(request.api_key, request.api_version)


def now_ms() -> int:
    return int(time.time() * 1000)


def is_valid_topic_name(name: str) -> bool:
    if not name or len(name) > 249 or name in (".", ".."):
        return False
    return all(c.isascii() and (c.isalnum() or c in "._-") for c in name)


@dataclass(frozen=True, slots=True)
class Listener:
    """Where the broker listens and what it advertises."""

    host: str
    port: int


class Broker:
    """State and lifecycle of the sandbox node; handlers read and change it.

    ``auto_create_topics`` and ``default_partitions`` are Kafka's
    ``auto.create.topics.enable`` (default true) and ``num.partitions`` (default
    1): a Metadata request that allows it creates an unknown topic, as a
    producer's first record to a new topic does on Kafka.
    """

    def __init__(
        self,
        *,
        data_dir: Path | None = None,
        cluster_id: str = "kshare-sandbox-cluster",
        default_partitions: int = 1,
        auto_create_topics: bool = True,
        share_groups: bool = True,
        nodes: int = 1,
        session_timeout_ms: int = 9000,
        default_replication_factor: int = 1,
        coordinator_load_ms: int = 200,
        profile: KafkaProfile | None = None,
        deny: DenyList | None = None,
    ) -> None:
        if not 1 <= default_replication_factor <= nodes:
            raise ValueError(
                f"default replication factor {default_replication_factor} needs 1..{nodes}"
            )
        self.logs = LogStore(data_dir)
        #: The Kafka release (and ``share.version``) the whole cluster behaves as.
        self.profile = profile or KafkaProfile()
        #: Which node leads what and which nodes are registered (``--brokers``).
        self.cluster = ControllerState(nodes, coordinator_load_s=coordinator_load_ms / 1000)
        #: Kafka's ``broker.session.timeout.ms``: how long a silent node stays registered.
        self.session_timeout_ms = session_timeout_ms
        #: Kafka's ``default.replication.factor``, for topics created without one.
        self.default_replication_factor = default_replication_factor
        for name in sorted(self.logs.topics):
            loaded = self.logs.topics[name]
            self.cluster.assign(name, len(loaded.partitions), self._replication_for(loaded))
        self.share_groups = share_groups
        #: The last producer id InitProducerId handed out.
        self.last_producer_id = 999
        self.security = PLAINTEXT
        self.data_dir = data_dir
        self.cluster_id = cluster_id
        self.default_partitions = default_partitions
        self.auto_create_topics = auto_create_topics
        self.advertised = Listener("127.0.0.1", 0)
        #: Each node's address, by node id.
        self.listeners: dict[int, Listener] = {}
        self._host = "127.0.0.1"
        self._servers: dict[int, FrameServer] = {}
        self._fencing: dict[int, asyncio.TimerHandle] = {}
        self._data_changed = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []
        self.extensions: list[BrokerExtension] = []
        #: One-shot faults (``drop_answer``): the next request each matches goes unanswered.
        self._answer_drops: list[Callable[[Request], bool]] = []
        #: How many answers those faults withheld so far.
        self.answers_dropped = 0
        #: Kafka's ACLs as a deny list by principal (``authorizer.py``); None allows everything.
        self.authorizer = Authorizer(deny) if deny else None

    # -- lifecycle ---------------------------------------------------------

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, *, security: ListenerSecurity | None = None
    ) -> int:
        """Listen (PLAINTEXT unless ``security`` says otherwise); returns node 1's bound port.

        Node ``n`` listens on ``port + n - 1`` (each on a free port when ``port`` is 0);
        when one cannot, those already listening close and the OSError propagates.
        """
        self.security = security or PLAINTEXT
        advertised_host = host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        self._host = host
        try:
            for node_id in self.cluster.node_ids:
                node_port = 0 if port == 0 else port + node_id - 1
                bound = await self._listen(node_id, host, node_port)
                self.listeners[node_id] = Listener(advertised_host, bound)
        except BaseException:
            for server in self._servers.values():
                await server.close()
            self._servers.clear()
            raise
        self.advertised = self.listeners[1]
        for extension in self.extensions:
            await extension.started(self)
        return self.advertised.port

    async def _listen(self, node_id: int, host: str, port: int) -> int:
        server = FrameServer(
            self.dispatch, self.unsupported_api_versions, security=self.security, node_id=node_id
        )
        bound = await server.start(host, port)
        self._servers[node_id] = server
        return bound

    async def close(self) -> None:
        for extension in self.extensions:
            await extension.stopping(self)
        for task in self._background:
            task.cancel()
        for handle in self._fencing.values():
            handle.cancel()
        for server in self._servers.values():
            await server.close()

    @property
    def bootstrap_servers(self) -> str:
        """Every node's address, comma-separated, node 1 first."""
        return ",".join(f"{node.host}:{node.port}" for _, node in sorted(self.listeners.items()))

    # -- faults (sandbox clusters) -------------------------------------------

    async def stop_node(self, node_id: int) -> None:
        """``kill -9`` the node: connections reset, its port refuses, it is fenced later."""
        self.cluster.node_down(node_id, NodeState.STOPPED)
        server = self._servers.pop(node_id, None)
        if server is not None:
            await server.abort()
        self._arm_fencing(node_id)

    def hang_node(self, node_id: int) -> None:
        """Freeze the node: its port accepts, nothing is answered, it is fenced later."""
        self.cluster.node_down(node_id, NodeState.HUNG)
        server = self._servers.get(node_id)
        if server is not None:
            server.hang()
        self._arm_fencing(node_id)

    async def restart_node(self, node_id: int) -> None:
        """Start the node again on its port (killing it first if it hangs or runs).

        It registers again at once (unfenced); it leads only what had no live
        replica meanwhile -- Kafka moves other leaderships back only by a
        preferred-leader election, ``move_leader`` here.
        """
        self.cluster.check_node(node_id)
        server = self._servers.pop(node_id, None)
        if server is not None:
            await server.abort()
        handle = self._fencing.pop(node_id, None)
        if handle is not None:
            handle.cancel()
        await self._listen(node_id, self._host, self.listeners[node_id].port)
        self._leaders_changed(self.cluster.node_up(node_id))

    def fence_node(self, node_id: int) -> None:
        """What the controller does once the node's session timed out (also callable early)."""
        self._fencing.pop(node_id, None)
        self._leaders_changed(self.cluster.fence(node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> int:
        """Elect ``node_id`` leader of the partition; returns the new leader epoch."""
        epoch = self.cluster.move_leader(topic, partition, node_id).epoch
        self._leaders_changed([(topic, partition)])
        return epoch

    def move_group_coordinator(self, group_id: str, node_id: int) -> int:
        """Move the group's ``__consumer_offsets`` partition (and its other groups) to the node."""
        return self.move_leader(*self.cluster.group_coordinator(group_id), node_id)

    def move_share_coordinator(self, key: str, node_id: int) -> int:
        """Move the ``__share_group_state`` partition of ``group:topicId:partition`` to the node."""
        return self.move_leader(*self.cluster.share_coordinator(key), node_id)

    def drop_answer(self, match: Callable[[Request], bool]) -> None:
        """Handle the next request ``match`` accepts, then close its connection unanswered.

        The request takes effect (records acknowledged, offsets moved) and the
        client sees only a lost connection: the case where it cannot know whether
        the broker applied it. One request per call; ``answers_dropped`` counts them.
        """
        self._answer_drops.append(match)

    def _arm_fencing(self, node_id: int) -> None:
        if node_id in self.cluster.fenced or node_id in self._fencing:
            return
        self._fencing[node_id] = asyncio.get_running_loop().call_later(
            max(0, self.session_timeout_ms) / 1000, self.fence_node, node_id
        )

    def _leaders_changed(self, moved: list[tuple[str, int]]) -> None:
        for name, partition in moved:
            topic = self.topic(name)
            if topic is None:
                continue
            for extension in self.extensions:
                extension.leader_changed(self, topic, partition)
        if moved:
            self.notify_data_changed()

    def spawn(self, coroutine: Awaitable[None]) -> None:
        """Run a background task for the broker's lifetime (lock timers, session expiry)."""

        async def run() -> None:
            await coroutine

        self._background.append(asyncio.ensure_future(run()))

    # -- data change notification (long polls wait on it) ------------------

    def notify_data_changed(self) -> None:
        self._data_changed.set()
        self._data_changed = asyncio.Event()

    async def wait_data_changed(self, timeout_s: float) -> None:
        event = self._data_changed
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return

    # -- dispatch ------------------------------------------------------------

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        versions = {k: v for k, v in KAFKA_42_VERSIONS.items() if k in HANDLERS}
        if not self.share_groups:
            for key in SHARE_GROUP_APIS:
                versions.pop(key, None)
            for key, (low, high) in PRE_SHARE_GROUP_VERSIONS.items():
                if key in versions:
                    versions[key] = (max(low, versions[key][0]), min(high, versions[key][1]))
        return versions

    async def dispatch(self, request: Request, connection: Connection) -> Any | None:
        handler = HANDLERS.get(request.api_key)
        low, high = self.supported_versions().get(request.api_key, (0, -1))
        if handler is None or not low <= request.api_version <= high:
            # ApiVersions gets a v0 error answer from the server; others are dropped.
            raise UnsupportedVersion(request.api_key, request.api_version, request.correlation_id)
        if self.authorizer is None:
            response = await handler(self, request, connection)
        else:
            response = await self.authorizer.dispatch(
                request,
                connection,
                lambda allowed: handler(self, allowed, connection),
                self._topic_name,
            )
        for index, match in enumerate(self._answer_drops):
            if match(request):
                del self._answer_drops[index]
                self.answers_dropped += 1
                raise AnswerDropped(request.api_key, request.correlation_id)
        return response

    def _topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        topic = self.topic_by_name_or_id(None, topic_id) if topic_id is not None else None
        return None if topic is None else topic.name

    def api_versions_body(self, error_code: int) -> dict[str, Any]:
        return {
            "error_code": error_code,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(self.supported_versions().items())
            ],
            "throttle_time": 0,
            "supported_features": [
                {"name": f.name, "min_version": f.min_version, "max_version": f.max_version}
                for f in self.profile.supported_features(share_groups=self.share_groups)
            ],
            "finalized_features_epoch": 1,
            "finalized_features": [
                {"name": f.name, "max_version_level": f.level, "min_version_level": f.level}
                for f in self.profile.features(share_groups=self.share_groups)
            ],
        }

    def unsupported_api_versions(self, correlation_id: int) -> bytes:
        """ApiVersions v0 with UNSUPPORTED_VERSION: what Kafka sends for a version it lacks.

        Only ApiVersions' own range, not the whole table (KIP-511; Kafka 4.2
        ``ApiVersionsRequest.getErrorResponse``, called by ``KafkaApis.handleApiVersionsRequest``):
        the client retries with a version from it and gets the table then.
        """
        body = self.api_versions_body(ErrorCode.unsupported_version)
        body["api_keys"] = [key for key in body["api_keys"] if key["api_key"] == API_VERSIONS]
        return encode_response(build(load_response_schema(18, 0), body), correlation_id)

    # -- topics ----------------------------------------------------------------

    def topic(self, name: str) -> Topic | None:
        return self.logs.topics.get(name)

    def topic_by_name_or_id(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        """Older versions name topics, newer ones (Produce v13, Fetch v13+) send ids."""
        if name is not None:
            return self.topic(name)
        return None if topic_id is None else self.logs.by_id.get(topic_id)

    def create_topic(
        self, name: str, partitions: int, *, replication_factor: int = -1, **kwargs: Any
    ) -> Topic:
        """Create the topic and place its partitions; ``replication_factor`` -1 is the default."""
        topic = self.logs.create(name, partitions, **kwargs)
        self.cluster.assign(
            name,
            partitions,
            self._replication_for(topic) if replication_factor == -1 else replication_factor,
        )
        for extension in self.extensions:
            extension.topic_created(self, topic)
        return topic

    def _replication_for(self, topic: Topic) -> int:
        """Internal topics get Kafka's 3 replicas (as many as there are nodes, if fewer)."""
        return (
            self.cluster.internal_replication_factor
            if topic.internal
            else self.default_replication_factor
        )

    def delete_topic(self, name: str) -> None:
        topic = self.logs.delete(name)
        self.cluster.forget(name)
        for extension in self.extensions:
            extension.topic_deleted(self, topic)

    def partition_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.partition(topic, partition)

    def metadata_topic(self, topic: Topic) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.none,
            "name": topic.name,
            "topic_id": topic.topic_id,
            "is_internal": topic.internal,
            "partitions": [
                self.metadata_partition(topic.name, p.partition) for p in topic.partitions
            ],
            "topic_authorized_operations": -2147483648,
        }

    def metadata_partition(self, topic: str, partition: int) -> dict[str, Any]:
        """Leader, epoch and replicas; a fenced replica is out of the ISR and offline.

        Kafka keeps the last ISR member in the ISR of a partition that lost its
        leader with it (leader -1, LEADER_NOT_AVAILABLE), so that member can lead
        again when it comes back.
        """
        found = self.cluster.leadership(topic, partition)
        replicas = [NODE_ID] if found is None else list(found.replicas)
        fenced = self.cluster.fenced
        leader = NODE_ID if found is None else found.leader
        return {
            "error_code": ErrorCode.none if leader != -1 else ErrorCode.leader_not_available,
            "partition_index": partition,
            "leader_id": leader,
            "leader_epoch": 0 if found is None else found.epoch,
            "replica_nodes": replicas,
            "isr_nodes": [n for n in replicas if n not in fenced] or replicas[:1],
            "offline_replicas": [n for n in replicas if n in fenced],
        }

    def broker_entry(self, node_id: int = NODE_ID) -> dict[str, Any]:
        listener = self.listeners.get(node_id, self.advertised)
        return {"node_id": node_id, "host": listener.host, "port": listener.port, "rack": None}

    def broker_entries(self) -> list[dict[str, Any]]:
        """The registered nodes, as Metadata lists them."""
        return [self.broker_entry(node_id) for node_id in self.cluster.registered]

    def cluster_broker_entries(self) -> list[dict[str, Any]]:
        """The registered nodes, as DescribeCluster lists them (``broker_id``, ``is_fenced``)."""
        return [
            {"broker_id": entry.pop("node_id"), **entry, "is_fenced": False}
            for entry in self.broker_entries()
        ]

    def current_leader(self, topic: str, partition: int) -> dict[str, int]:
        """A response's ``current_leader`` (KIP-951), so a client re-routes without Metadata."""
        found = self.cluster.leadership(topic, partition)
        if found is None:
            return {"leader_id": -1, "leader_epoch": -1}
        return {"leader_id": found.leader, "leader_epoch": found.epoch}

    def node_endpoints(self, node_ids: set[int]) -> list[dict[str, Any]]:
        """A response's ``node_endpoints``: where the leaders it names listen."""
        return [
            {"node_id": n, "host": self.listeners[n].host, "port": self.listeners[n].port,
             "rack": None}
            for n in sorted(node_ids)
            if n in self.listeners
        ]  # fmt: skip

    def leader_error(
        self, connection: Connection, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> int:
        """NOT_LEADER_OR_FOLLOWER (or an epoch error) where this node may not serve it."""
        return self.cluster.leader_error(connection.node_id, topic, partition, current_leader_epoch)

    def group_coordinator_error(self, connection: Connection, group_id: str) -> int:
        """NOT_COORDINATOR on a node that does not coordinate the group; loading, for a moment."""
        return self.cluster.coordinator_error(
            connection.node_id, *self.cluster.group_coordinator(group_id)
        )


class BrokerExtension:
    """Hooks for the share-group parts, so the core broker stays about logs and topics."""

    async def started(self, broker: Broker) -> None:
        return None

    async def stopping(self, broker: Broker) -> None:
        return None

    def topic_created(self, broker: Broker, topic: Topic) -> None:
        return None

    def topic_deleted(self, broker: Broker, topic: Topic) -> None:
        return None

    def leader_changed(self, broker: Broker, topic: Topic, partition: int) -> None:
        return None


# -- ApiVersions -------------------------------------------------------------


@handles(API_VERSIONS)
async def api_versions(broker: Broker, request: Request, connection: Connection) -> Any:
    body = broker.api_versions_body(ErrorCode.none)
    if request.api_version < 4:
        # KIP-1022: a v3 client may not understand a supported range from 0, so Kafka
        # leaves those features out below v4 (the 4.2 recording: metadata.version only).
        body["supported_features"] = [f for f in body["supported_features"] if f["min_version"]]
    return build(response_type(request), body)


# -- SaslHandshake / SaslAuthenticate -------------------------------------------
# A SASL listener's gate (security.py) answers these until the connection has
# authenticated; what reaches the broker comes later or on a listener without
# SASL, and gets what KafkaApis gives it.


@handles(SASL_HANDSHAKE)
async def sasl_handshake(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(
        response_type(request), {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    )


@handles(SASL_AUTHENTICATE)
async def sasl_authenticate(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(
        response_type(request),
        {
            "error_code": ErrorCode.illegal_sasl_state,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"",
            "session_lifetime": 0,
        },
    )


# -- InitProducerId ------------------------------------------------------------
# An idempotent producer (librdkafka's enable.idempotence, as `kshare audit --dlq-topic`
# uses it) asks for a producer id before its first Produce. The sandbox hands out a fresh
# id each time and appends the batches as they come: with one node and no replication a
# retried batch is the only duplicate it could see, and it does not deduplicate those.
# Transactions have no coordinator here: a transactional id gets Kafka's
# COORDINATOR_NOT_AVAILABLE.


@handles(INIT_PRODUCER_ID)
async def init_producer_id(broker: Broker, request: Request, connection: Connection) -> Any:
    if getattr(request.payload, "transactional_id", None):
        body = {
            "error_code": ErrorCode.coordinator_not_available,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    else:
        broker.last_producer_id += 1
        body = {
            "error_code": ErrorCode.none,
            "producer_id": broker.last_producer_id,
            "producer_epoch": 0,
        }
    return build(response_type(request), {"throttle_time": 0, **body})


# -- Metadata ----------------------------------------------------------------


@handles(METADATA)
async def metadata(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    topics: list[dict[str, Any]] = []
    if payload.topics is None:
        topics = [broker.metadata_topic(t) for t in broker.logs.topics.values()]
    else:
        allow_create = bool(getattr(payload, "allow_auto_topic_creation", True))
        for wanted in payload.topics:
            name = wanted.name
            topic_id = getattr(wanted, "topic_id", None)
            if name is None and topic_id is not None and topic_id.int != 0:
                found = broker.logs.by_id.get(topic_id)
                if found is None:
                    topics.append(_unknown_topic(None, topic_id, ErrorCode.unknown_topic_id))
                    continue
                topics.append(broker.metadata_topic(found))
                continue
            if name is None:
                continue
            found = broker.topic(name)
            if found is not None:
                topics.append(broker.metadata_topic(found))
            elif not is_valid_topic_name(name):
                topics.append(_unknown_topic(name, None, ErrorCode.invalid_topic_exception))
            else:
                if allow_create and broker.auto_create_topics:
                    # auto.create.topics.enable: Kafka 4.2 hands the creation to its
                    # controller and answers this request before the topic exists
                    # (AutoTopicCreationManager.sendCreateTopicRequest), so the client
                    # asks again; here the topic is there by its next Metadata request.
                    broker.create_topic(name, broker.default_partitions)
                topics.append(_unknown_topic(name, None, ErrorCode.unknown_topic_or_partition))
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "brokers": broker.broker_entries(),
            "cluster_id": broker.cluster_id,
            "controller_id": broker.cluster.controller_id(),
            "topics": topics,
            "cluster_authorized_operations": -2147483648,
            "error_code": ErrorCode.none,
        },
    )


#: Kafka's ``Topic.INTERNAL_TOPICS``: flagged internal even in an error answer.
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state", SHARE_STATE_TOPIC})


def _unknown_topic(name: str | None, topic_id: uuid.UUID | None, code: int) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id or uuid.UUID(int=0),
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": -2147483648,
    }


# -- DescribeCluster -------------------------------------------------------


@handles(DESCRIBE_CLUSTER)
async def describe_cluster(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": broker.cluster_id,
            "controller_id": broker.cluster.controller_id(),
            "brokers": broker.cluster_broker_entries(),
            "cluster_authorized_operations": -2147483648,
        },
    )


# -- CreateTopics / DeleteTopics --------------------------------------------


@handles(CREATE_TOPICS)
async def create_topics(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    results: list[dict[str, Any]] = []
    for wanted in payload.topics:
        name = wanted.name
        partitions = int(wanted.num_partitions)
        replication = int(wanted.replication_factor)
        if wanted.assignments:
            partitions = len(wanted.assignments)
        if partitions == -1:
            partitions = broker.default_partitions
        result: dict[str, Any] = {
            "name": name,
            "topic_id": uuid.UUID(int=0),
            "error_code": ErrorCode.none,
            "error_message": None,
            "num_partitions": partitions,
            "replication_factor": (
                broker.default_replication_factor if replication == -1 else replication
            ),
            "configs": [],
        }
        if not is_valid_topic_name(name):
            result.update(
                error_code=ErrorCode.invalid_topic_exception,
                error_message=f"Topic name {name!r} is illegal.",
            )
        elif broker.topic(name) is not None:
            result.update(
                error_code=ErrorCode.topic_already_exists,
                error_message=f"Topic '{name}' already exists.",
            )
        elif partitions <= 0:
            result.update(
                error_code=ErrorCode.invalid_partitions,
                error_message="Number of partitions was set to an invalid non-positive value.",
            )
        elif replication != -1 and not 1 <= replication <= len(broker.cluster.registered):
            registered = len(broker.cluster.registered)
            result.update(
                error_code=ErrorCode.invalid_replication_factor,
                error_message=f"Unable to replicate the partition {replication} time(s): "
                "The target replication factor of "
                f"{replication} cannot be reached because only {registered} broker(s) "
                "are registered.",
            )
        elif (refusal := _topic_config_refusal(broker, wanted.configs)) is not None:
            result.update(error_code=refusal[0], error_message=refusal[1])
        elif not payload.validate_only:
            configs = {c.name: c.value for c in wanted.configs if c.value is not None}
            topic = broker.create_topic(
                name, partitions, replication_factor=replication, configs=configs
            )
            result["topic_id"] = topic.topic_id
        results.append(result)
    return build(response_type(request), {"throttle_time": 0, "topics": results})


def _topic_config_refusal(broker: Broker, configs: Any) -> tuple[int, str] | None:
    """The group-config RPCs' check of the topic configs they know (4.4's DLQ flag)."""
    from kshare_cli.sandbox.group_config_rpcs import topic_config_refusal
    from kshare_cli.sandbox.share_groups import installed_share_groups

    shares = installed_share_groups(broker)
    return topic_config_refusal(
        None if shares is None else shares.configs, {c.name: c.value for c in configs}
    )


@handles(DELETE_TOPICS)
async def delete_topics(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    results: list[dict[str, Any]] = []
    wanted_names: list[tuple[str | None, uuid.UUID | None]] = []
    if getattr(payload, "topic_names", None):
        wanted_names = [(n, None) for n in payload.topic_names]
    for state in getattr(payload, "topics", ()) or ():
        wanted_names.append((state.name, state.topic_id))
    for name, topic_id in wanted_names:
        topic = broker.topic(name) if name else None
        if topic is None and topic_id is not None and topic_id.int != 0:
            topic = broker.logs.by_id.get(topic_id)
        if topic is None or topic.internal:
            code = (
                ErrorCode.unknown_topic_id if name is None else ErrorCode.unknown_topic_or_partition
            )
            results.append(
                {"name": name, "topic_id": topic_id or uuid.UUID(int=0), "error_code": code,
                 "error_message": None}
            )  # fmt: skip
            continue
        broker.delete_topic(topic.name)
        results.append(
            {"name": topic.name, "topic_id": topic.topic_id, "error_code": ErrorCode.none,
             "error_message": None}
        )  # fmt: skip
    return build(response_type(request), {"throttle_time": 0, "responses": results})


# -- DeleteRecords -------------------------------------------------------------


@handles(DELETE_RECORDS)
async def delete_records(broker: Broker, request: Request, connection: Connection) -> Any:
    """Kafka's DeleteRecords (``kafka-delete-records.sh``, ``AdminClient.delete_records``):
    each partition's log start offset moves up to the offset asked (-1: the high
    watermark), never back; the answer is the new low watermark. An offset past the
    end is OFFSET_OUT_OF_RANGE, as in Kafka's ``UnifiedLog.deleteRecordsOnLeader``."""
    topics: list[dict[str, Any]] = []
    for wanted in request.payload.topics:
        partitions: list[dict[str, Any]] = []
        for part in wanted.partitions:
            entry: dict[str, Any] = {
                "partition_index": part.partition_index,
                "low_watermark": -1,
                "error_code": ErrorCode.none,
            }
            topic = broker.topic(wanted.name)
            log_ = broker.partition_log(wanted.name, part.partition_index)
            offset = int(part.offset)
            if log_ is None or topic is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
            elif code := broker.leader_error(connection, wanted.name, part.partition_index):
                entry["error_code"] = code
            elif offset < -1 or offset > log_.log_end_offset:
                entry["error_code"] = ErrorCode.offset_out_of_range
            else:
                target = log_.log_end_offset if offset == -1 else offset
                entry["low_watermark"] = log_.delete_records_before(target)
            partitions.append(entry)
        topics.append({"name": wanted.name, "partitions": partitions})
    return build(response_type(request), {"throttle_time": 0, "topics": topics})


# -- Produce -----------------------------------------------------------------


@handles(PRODUCE)
async def produce(broker: Broker, request: Request, connection: Connection) -> Any | None:
    payload = request.payload
    acks = int(payload.acks)
    responses: list[dict[str, Any]] = []
    leaders: set[int] = set()
    now = now_ms()
    for topic_data in payload.topic_data:
        name = getattr(topic_data, "name", None)
        topic_id = getattr(topic_data, "topic_id", None)
        topic = broker.topic_by_name_or_id(name, topic_id)
        partitions: list[dict[str, Any]] = []
        for data in topic_data.partition_data:
            entry: dict[str, Any] = {
                "index": data.index,
                "error_code": ErrorCode.none,
                "base_offset": -1,
                "log_append_time": None,
                "log_start_offset": -1,
                "record_errors": [],
                "error_message": None,
            }
            partition = None if topic is None else broker.partition_log(topic.name, data.index)
            if acks not in (-1, 0, 1):
                entry["error_code"] = ErrorCode.invalid_required_acks
            elif partition is None or topic is None or topic.internal:
                entry["error_code"] = (
                    ErrorCode.unknown_topic_id
                    if name is None
                    else ErrorCode.unknown_topic_or_partition
                )
            elif code := broker.leader_error(connection, topic.name, data.index):
                entry["error_code"] = code
                entry["current_leader"] = broker.current_leader(topic.name, data.index)
                leaders.add(entry["current_leader"]["leader_id"])
            elif data.records:
                try:
                    entry["base_offset"] = partition.append(bytes(data.records), now)
                    entry["log_start_offset"] = partition.log_start_offset
                except RecordBatchError as error:
                    entry["error_code"] = ErrorCode.corrupt_message
                    entry["error_message"] = str(error)
            partitions.append(entry)
        responses.append({"name": name, "topic_id": topic_id, "partition_responses": partitions})
    broker.notify_data_changed()
    if acks == 0:
        return None
    return build(
        response_type(request),
        {
            "responses": responses,
            "throttle_time": 0,
            "node_endpoints": broker.node_endpoints(leaders),
        },
    )


# -- Fetch -------------------------------------------------------------------


@handles(FETCH)
async def fetch(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    max_wait_s = payload.max_wait.total_seconds()
    deadline = asyncio.get_running_loop().time() + max_wait_s
    min_bytes = int(payload.min_bytes)
    while True:
        responses, total, leaders = _fetch_once(broker, payload, connection)
        remaining = deadline - asyncio.get_running_loop().time()
        if total >= min_bytes or remaining <= 0:
            break
        await broker.wait_data_changed(remaining)
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "session_id": 0,
            "responses": responses,
            "node_endpoints": broker.node_endpoints(leaders),
        },
    )


def _fetch_once(
    broker: Broker, payload: Any, connection: Connection
) -> tuple[list[dict[str, Any]], int, set[int]]:
    responses: list[dict[str, Any]] = []
    leaders: set[int] = set()
    total = 0
    budget = int(payload.max_bytes)
    for wanted in payload.topics:
        name = getattr(wanted, "topic", None)
        topic_id = getattr(wanted, "topic_id", None)
        topic = broker.topic_by_name_or_id(name, topic_id)
        partitions: list[dict[str, Any]] = []
        for part in wanted.partitions:
            entry: dict[str, Any] = {
                "partition_index": part.partition,
                "error_code": ErrorCode.none,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            log_ = None if topic is None else broker.partition_log(topic.name, part.partition)
            if topic is None or log_ is None:
                # Empty records, as Kafka's MemoryRecords.EMPTY: librdkafka cannot parse a
                # null record set ("invalid MessageSetSize -1") and would log it in a loop.
                entry["error_code"] = (
                    ErrorCode.unknown_topic_id
                    if name is None
                    else ErrorCode.unknown_topic_or_partition
                )
            elif code := broker.leader_error(
                connection,
                topic.name,
                part.partition,
                int(getattr(part, "current_leader_epoch", -1)),
            ):
                entry["error_code"] = code
                entry["current_leader"] = broker.current_leader(topic.name, part.partition)
                leaders.add(entry["current_leader"]["leader_id"])
            else:
                offset = int(part.fetch_offset)
                entry["high_watermark"] = log_.log_end_offset
                entry["last_stable_offset"] = log_.log_end_offset
                entry["log_start_offset"] = log_.log_start_offset
                if offset < log_.log_start_offset or offset > log_.log_end_offset:
                    entry["error_code"] = ErrorCode.offset_out_of_range
                elif budget > 0:
                    data = log_.read(offset, min(int(part.partition_max_bytes), budget))
                    entry["records"] = data
                    budget -= len(data)
                    total += len(data)
            partitions.append(entry)
        responses.append({"topic": name, "topic_id": topic_id, "partitions": partitions})
    return responses, total, leaders


# -- ListOffsets -------------------------------------------------------------


@handles(LIST_OFFSETS)
async def list_offsets(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    topics: list[dict[str, Any]] = []
    for wanted in payload.topics:
        partitions: list[dict[str, Any]] = []
        for part in wanted.partitions:
            entry: dict[str, Any] = {
                "partition_index": part.partition_index,
                "error_code": ErrorCode.none,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": 0,
            }
            log_ = broker.partition_log(wanted.name, part.partition_index)
            if log_ is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
                entry["leader_epoch"] = -1
            elif code := broker.leader_error(
                connection,
                wanted.name,
                part.partition_index,
                int(getattr(part, "current_leader_epoch", -1)),
            ):
                entry["error_code"] = code
                entry["leader_epoch"] = -1
            else:
                current = broker.current_leader(wanted.name, part.partition_index)
                entry["leader_epoch"] = current["leader_epoch"]
                timestamp = int(part.timestamp)
                if timestamp == -2:  # EARLIEST
                    entry["offset"] = log_.log_start_offset
                elif timestamp in (-1, -4):  # LATEST, EARLIEST_LOCAL... LATEST_TIERED
                    entry["offset"] = log_.log_end_offset
                elif timestamp == -3:  # MAX_TIMESTAMP
                    found = log_.max_timestamp()
                    if found is not None:
                        entry["offset"], entry["timestamp"] = found
                elif timestamp == -5:  # EARLIEST_LOCAL
                    entry["offset"] = log_.log_start_offset
                else:
                    found = log_.offset_for_timestamp(timestamp)
                    if found is not None:
                        entry["offset"], entry["timestamp"] = found
            partitions.append(entry)
        topics.append({"name": wanted.name, "partitions": partitions})
    return build(response_type(request), {"throttle_time": 0, "topics": topics})


# -- FindCoordinator -------------------------------------------------------


@handles(FIND_COORDINATOR)
async def find_coordinator(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    keys = list(getattr(payload, "coordinator_keys", ()) or ())
    if not keys and getattr(payload, "key", None) is not None:
        keys = [payload.key]
    share_key = int(getattr(payload, "key_type", 0)) == SHARE_KEY_TYPE
    coordinators = [_coordinator(broker, key, share_key) for key in keys]
    body: dict[str, Any] = {"throttle_time": 0, "coordinators": coordinators}
    if not has_field(response_type(request), "coordinators"):
        (found,) = coordinators
        body = {
            "throttle_time": 0,
            "error_code": found["error_code"],
            "error_message": "NONE"
            if found["error_code"] == ErrorCode.none
            else found["error_message"],
            "node_id": found["node_id"],
            "host": found["host"],
            "port": found["port"],
        }
    return build(response_type(request), body)


#: FindCoordinator's key type of a share coordinator ("group:topicId:partition").
SHARE_KEY_TYPE: Final = 2


def _coordinator(broker: Broker, key: str, share_key: bool) -> dict[str, Any]:
    """The leader of the key's coordinator partition, or COORDINATOR_NOT_AVAILABLE when none.

    A node that died but is not fenced yet still leads, so it is still the answer,
    as on Kafka until ``broker.session.timeout.ms`` passes.
    """
    cluster = broker.cluster
    leader = cluster.leader(
        *(cluster.share_coordinator(key) if share_key else cluster.group_coordinator(key))
    )
    if leader == -1:
        return {
            "key": key, "node_id": -1, "host": "", "port": -1,
            "error_code": ErrorCode.coordinator_not_available,
            "error_message": "The coordinator is not available.",
        }  # fmt: skip
    node = broker.broker_entry(leader)
    return {
        "key": key, "node_id": node["node_id"], "host": node["host"], "port": node["port"],
        "error_code": ErrorCode.none, "error_message": "",
    }  # fmt: skip
