"""The sandbox broker: one node that is its own controller, group and share coordinator.

Handlers are registered per API key with the version range Kafka 4.2 offers
(taken from the golden recording of its ApiVersions response) intersected with
what kio can decode; ApiVersions advertises exactly that table, so clients
negotiate with the sandbox as they would with Kafka. Each handler describes
its response once, version-agnostically, and ``wire.build`` keeps the fields of
the version asked for.

A broker built with ``share_groups=False`` offers what a Kafka 3.x broker does:
no share-group APIs in ApiVersions, no ``share.version`` feature, FindCoordinator
without the share key type (v6) -- the "broker too old for share groups" case.
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

from kshare_cli.sandbox.log import LogStore, PartitionLog, RecordBatchError, Topic
from kshare_cli.sandbox.security import ILLEGAL_SASL_STATE, PLAINTEXT, ListenerSecurity
from kshare_cli.sandbox.server import Connection, FrameServer
from kshare_cli.state.partitioning import DEFAULT_STATE_PARTITIONS, SHARE_STATE_TOPIC
from kshare_cli.wire.build import build, has_field
from kshare_cli.wire.framing import Request, UnsupportedVersion, encode_response

log = logging.getLogger("kshare.sandbox")

NODE_ID: Final = 1
SHARE_STATE_PARTITIONS: Final = DEFAULT_STATE_PARTITIONS

# Error codes, named as Kafka names them.
NONE: Final = 0
CORRUPT_MESSAGE: Final = 2
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
INVALID_TOPIC_EXCEPTION: Final = 17
INVALID_REQUIRED_ACKS: Final = 21
UNSUPPORTED_VERSION: Final = 35
TOPIC_ALREADY_EXISTS: Final = 36
INVALID_PARTITIONS: Final = 37
INVALID_REPLICATION_FACTOR: Final = 38
INVALID_REQUEST: Final = 42
UNKNOWN_TOPIC_ID: Final = 100

Handler = Callable[["Broker", Request, Connection], Awaitable[Any | None]]

#: Kafka 4.2.0's advertised ranges (golden ApiVersions v4 response), for the APIs we answer.
KAFKA_42_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 10: (0, 6), 16: (0, 5), 18: (0, 4),
    19: (2, 7), 20: (1, 6), 32: (1, 4), 42: (0, 2), 44: (0, 1), 60: (0, 2),
    76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0),
    17: (0, 1), 36: (0, 2), 22: (0, 5), 8: (2, 10),
}  # fmt: skip

#: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge,
#: Describe/Alter/DeleteShareGroupOffsets: what a broker without share groups lacks.
SHARE_GROUP_APIS: Final = frozenset({76, 77, 78, 79, 90, 91, 92})

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
    ) -> None:
        self.logs = LogStore(data_dir)
        self.share_groups = share_groups
        #: The last producer id InitProducerId handed out.
        self.last_producer_id = 999
        self.security = PLAINTEXT
        self.data_dir = data_dir
        self.cluster_id = cluster_id
        self.default_partitions = default_partitions
        self.auto_create_topics = auto_create_topics
        self.advertised = Listener("127.0.0.1", 0)
        self._servers: list[FrameServer] = []
        self._data_changed = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []
        self.extensions: list[BrokerExtension] = []

    # -- lifecycle ---------------------------------------------------------

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, *, security: ListenerSecurity | None = None
    ) -> int:
        """Listen (PLAINTEXT unless ``security`` says otherwise); returns the bound port."""
        self.security = security or PLAINTEXT
        server = FrameServer(self.dispatch, self.unsupported_api_versions, security=self.security)
        bound = await server.start(host, port)
        self._servers.append(server)
        self.advertised = Listener(
            host if host not in ("0.0.0.0", "::", "") else "127.0.0.1", bound
        )
        for extension in self.extensions:
            await extension.started(self)
        return bound

    async def close(self) -> None:
        for extension in self.extensions:
            await extension.stopping(self)
        for task in self._background:
            task.cancel()
        for server in self._servers:
            await server.close()

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
        return await handler(self, request, connection)

    def api_versions_body(self, error_code: int) -> dict[str, Any]:
        return {
            "error_code": error_code,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(self.supported_versions().items())
            ],
            "throttle_time": 0,
            "supported_features": (
                [{"name": "share.version", "min_version": 0, "max_version": 1}]
                if self.share_groups
                else []
            ),
            "finalized_features_epoch": 1,
            "finalized_features": (
                [{"name": "share.version", "max_version_level": 1, "min_version_level": 1}]
                if self.share_groups
                else []
            ),
        }

    def unsupported_api_versions(self, correlation_id: int) -> bytes:
        """ApiVersions v0 with UNSUPPORTED_VERSION: what Kafka sends for a version it lacks.

        Only ApiVersions' own range, not the whole table (KIP-511; Kafka 4.2
        ``ApiVersionsRequest.getErrorResponse``, called by ``KafkaApis.handleApiVersionsRequest``):
        the client retries with a version from it and gets the table then.
        """
        body = self.api_versions_body(UNSUPPORTED_VERSION)
        body["api_keys"] = [key for key in body["api_keys"] if key["api_key"] == 18]
        return encode_response(build(load_response_schema(18, 0), body), correlation_id)

    # -- topics ----------------------------------------------------------------

    def topic(self, name: str) -> Topic | None:
        return self.logs.topics.get(name)

    def topic_by_name_or_id(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        """Older versions name topics, newer ones (Produce v13, Fetch v13+) send ids."""
        if name is not None:
            return self.topic(name)
        return None if topic_id is None else self.logs.by_id.get(topic_id)

    def create_topic(self, name: str, partitions: int, **kwargs: Any) -> Topic:
        topic = self.logs.create(name, partitions, **kwargs)
        for extension in self.extensions:
            extension.topic_created(self, topic)
        return topic

    def delete_topic(self, name: str) -> None:
        topic = self.logs.delete(name)
        for extension in self.extensions:
            extension.topic_deleted(self, topic)

    def partition_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.partition(topic, partition)

    def metadata_topic(self, topic: Topic) -> dict[str, Any]:
        return {
            "error_code": NONE,
            "name": topic.name,
            "topic_id": topic.topic_id,
            "is_internal": topic.internal,
            "partitions": [
                {
                    "error_code": NONE,
                    "partition_index": p.partition,
                    "leader_id": NODE_ID,
                    "leader_epoch": 0,
                    "replica_nodes": [NODE_ID],
                    "isr_nodes": [NODE_ID],
                    "offline_replicas": [],
                }
                for p in topic.partitions
            ],
            "topic_authorized_operations": -2147483648,
        }

    def broker_entry(self) -> dict[str, Any]:
        return {
            "node_id": NODE_ID,
            "broker_id": NODE_ID,
            "host": self.advertised.host,
            "port": self.advertised.port,
            "rack": None,
            "is_fenced": False,
        }


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


# -- ApiVersions -------------------------------------------------------------


@handles(18)
async def api_versions(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(response_type(request), broker.api_versions_body(NONE))


# -- SaslHandshake / SaslAuthenticate -------------------------------------------
# A SASL listener's gate (security.py) answers these until the connection has
# authenticated; what reaches the broker comes later or on a listener without
# SASL, and gets what KafkaApis gives it.


@handles(17)
async def sasl_handshake(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(response_type(request), {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []})


@handles(36)
async def sasl_authenticate(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(
        response_type(request),
        {
            "error_code": ILLEGAL_SASL_STATE,
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

COORDINATOR_NOT_AVAILABLE: Final = 15


@handles(22)
async def init_producer_id(broker: Broker, request: Request, connection: Connection) -> Any:
    if getattr(request.payload, "transactional_id", None):
        body = {"error_code": COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
    else:
        broker.last_producer_id += 1
        body = {"error_code": NONE, "producer_id": broker.last_producer_id, "producer_epoch": 0}
    return build(response_type(request), {"throttle_time": 0, **body})


# -- Metadata ----------------------------------------------------------------


@handles(3)
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
                    topics.append(_unknown_topic(None, topic_id, UNKNOWN_TOPIC_ID))
                    continue
                topics.append(broker.metadata_topic(found))
                continue
            if name is None:
                continue
            found = broker.topic(name)
            if found is not None:
                topics.append(broker.metadata_topic(found))
            elif not is_valid_topic_name(name):
                topics.append(_unknown_topic(name, None, INVALID_TOPIC_EXCEPTION))
            else:
                if allow_create and broker.auto_create_topics:
                    # auto.create.topics.enable: Kafka 4.2 hands the creation to its
                    # controller and answers this request before the topic exists
                    # (AutoTopicCreationManager.sendCreateTopicRequest), so the client
                    # asks again; here the topic is there by its next Metadata request.
                    broker.create_topic(name, broker.default_partitions)
                topics.append(_unknown_topic(name, None, UNKNOWN_TOPIC_OR_PARTITION))
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "brokers": [broker.broker_entry()],
            "cluster_id": broker.cluster_id,
            "controller_id": NODE_ID,
            "topics": topics,
            "cluster_authorized_operations": -2147483648,
            "error_code": NONE,
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


@handles(60)
async def describe_cluster(broker: Broker, request: Request, connection: Connection) -> Any:
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": broker.cluster_id,
            "controller_id": NODE_ID,
            "brokers": [broker.broker_entry()],
            "cluster_authorized_operations": -2147483648,
        },
    )


# -- CreateTopics / DeleteTopics --------------------------------------------


@handles(19)
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
            "error_code": NONE,
            "error_message": None,
            "num_partitions": partitions,
            "replication_factor": 1,
            "configs": [],
        }
        if not is_valid_topic_name(name):
            result.update(
                error_code=INVALID_TOPIC_EXCEPTION, error_message=f"Topic name {name!r} is illegal."
            )
        elif broker.topic(name) is not None:
            result.update(
                error_code=TOPIC_ALREADY_EXISTS, error_message=f"Topic '{name}' already exists."
            )
        elif partitions <= 0:
            result.update(
                error_code=INVALID_PARTITIONS,
                error_message="Number of partitions was set to an invalid non-positive value.",
            )
        elif replication not in (-1, 1):
            result.update(
                error_code=INVALID_REPLICATION_FACTOR,
                error_message=f"Unable to replicate the partition {replication} time(s): "
                "The target replication factor of "
                f"{replication} cannot be reached because only 1 broker(s) are registered.",
            )
        elif not payload.validate_only:
            configs = {c.name: c.value for c in wanted.configs if c.value is not None}
            topic = broker.create_topic(name, partitions, configs=configs)
            result["topic_id"] = topic.topic_id
        results.append(result)
    return build(response_type(request), {"throttle_time": 0, "topics": results})


@handles(20)
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
            code = UNKNOWN_TOPIC_ID if name is None else UNKNOWN_TOPIC_OR_PARTITION
            results.append(
                {"name": name, "topic_id": topic_id or uuid.UUID(int=0), "error_code": code,
                 "error_message": None}
            )  # fmt: skip
            continue
        broker.delete_topic(topic.name)
        results.append(
            {"name": topic.name, "topic_id": topic.topic_id, "error_code": NONE,
             "error_message": None}
        )  # fmt: skip
    return build(response_type(request), {"throttle_time": 0, "responses": results})


# -- Produce -----------------------------------------------------------------


@handles(0)
async def produce(broker: Broker, request: Request, connection: Connection) -> Any | None:
    payload = request.payload
    acks = int(payload.acks)
    responses: list[dict[str, Any]] = []
    now = now_ms()
    for topic_data in payload.topic_data:
        name = getattr(topic_data, "name", None)
        topic_id = getattr(topic_data, "topic_id", None)
        topic = broker.topic_by_name_or_id(name, topic_id)
        partitions: list[dict[str, Any]] = []
        for data in topic_data.partition_data:
            entry: dict[str, Any] = {
                "index": data.index,
                "error_code": NONE,
                "base_offset": -1,
                "log_append_time": None,
                "log_start_offset": -1,
                "record_errors": [],
                "error_message": None,
            }
            partition = None if topic is None else broker.partition_log(topic.name, data.index)
            if acks not in (-1, 0, 1):
                entry["error_code"] = INVALID_REQUIRED_ACKS
            elif partition is None or (topic is not None and topic.internal):
                entry["error_code"] = (
                    UNKNOWN_TOPIC_ID if name is None else UNKNOWN_TOPIC_OR_PARTITION
                )
            elif data.records:
                try:
                    entry["base_offset"] = partition.append(bytes(data.records), now)
                    entry["log_start_offset"] = partition.log_start_offset
                except RecordBatchError as error:
                    entry["error_code"] = CORRUPT_MESSAGE
                    entry["error_message"] = str(error)
            partitions.append(entry)
        responses.append({"name": name, "topic_id": topic_id, "partition_responses": partitions})
    broker.notify_data_changed()
    if acks == 0:
        return None
    return build(response_type(request), {"responses": responses, "throttle_time": 0})


# -- Fetch -------------------------------------------------------------------


@handles(1)
async def fetch(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    max_wait_s = payload.max_wait.total_seconds()
    deadline = asyncio.get_running_loop().time() + max_wait_s
    min_bytes = int(payload.min_bytes)
    while True:
        responses, total = _fetch_once(broker, payload)
        remaining = deadline - asyncio.get_running_loop().time()
        if total >= min_bytes or remaining <= 0:
            break
        await broker.wait_data_changed(remaining)
    return build(
        response_type(request),
        {"throttle_time": 0, "error_code": NONE, "session_id": 0, "responses": responses},
    )


def _fetch_once(broker: Broker, payload: Any) -> tuple[list[dict[str, Any]], int]:
    responses: list[dict[str, Any]] = []
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
                "error_code": NONE,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            log_ = None if topic is None else broker.partition_log(topic.name, part.partition)
            if log_ is None:
                # Empty records, as Kafka's MemoryRecords.EMPTY: librdkafka cannot parse a
                # null record set ("invalid MessageSetSize -1") and would log it in a loop.
                entry["error_code"] = (
                    UNKNOWN_TOPIC_ID if name is None else UNKNOWN_TOPIC_OR_PARTITION
                )
            else:
                offset = int(part.fetch_offset)
                entry["high_watermark"] = log_.log_end_offset
                entry["last_stable_offset"] = log_.log_end_offset
                entry["log_start_offset"] = log_.log_start_offset
                if offset < log_.log_start_offset or offset > log_.log_end_offset:
                    entry["error_code"] = 1  # OFFSET_OUT_OF_RANGE
                elif budget > 0:
                    data = log_.read(offset, min(int(part.partition_max_bytes), budget))
                    entry["records"] = data
                    budget -= len(data)
                    total += len(data)
            partitions.append(entry)
        responses.append({"topic": name, "topic_id": topic_id, "partitions": partitions})
    return responses, total


# -- ListOffsets -------------------------------------------------------------


@handles(2)
async def list_offsets(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    topics: list[dict[str, Any]] = []
    for wanted in payload.topics:
        partitions: list[dict[str, Any]] = []
        for part in wanted.partitions:
            entry: dict[str, Any] = {
                "partition_index": part.partition_index,
                "error_code": NONE,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": 0,
            }
            log_ = broker.partition_log(wanted.name, part.partition_index)
            if log_ is None:
                entry["error_code"] = UNKNOWN_TOPIC_OR_PARTITION
                entry["leader_epoch"] = -1
            else:
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


@handles(10)
async def find_coordinator(broker: Broker, request: Request, connection: Connection) -> Any:
    payload = request.payload
    node = broker.broker_entry()
    keys = list(getattr(payload, "coordinator_keys", ()) or ())
    if not keys and getattr(payload, "key", None) is not None:
        keys = [payload.key]
    coordinators = [
        {
            "key": key,
            "node_id": node["node_id"],
            "host": node["host"],
            "port": node["port"],
            "error_code": NONE,
            "error_message": "",
        }
        for key in keys
    ]
    body: dict[str, Any] = {"throttle_time": 0, "coordinators": coordinators}
    if not has_field(response_type(request), "coordinators"):
        body = {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": "NONE",
            "node_id": node["node_id"],
            "host": node["host"],
            "port": node["port"],
        }
    return build(response_type(request), body)
