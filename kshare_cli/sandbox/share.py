"""Share groups in the sandbox: the group coordinator, share-partitions and share coordinator.

This module is the broker glue around three pure engines -- ``group_coordinator``
(membership, epochs, assignment), ``share_partition`` (acquisition locks,
delivery counts, acknowledgements) and ``state.replay`` (the share coordinator's
durable state) -- and the RPCs that reach them: ShareGroupHeartbeat, ShareFetch,
ShareAcknowledge, and the admin RPCs. Durable state goes where Kafka puts it,
as ShareSnapshot/ShareUpdate records in ``__share_group_state``, written through
the same partition logs as any topic and replayed from them on start; the
in-memory share-partitions are a cache rebuilt from that state, exactly like a
share-partition leader reading ReadShareGroupState after a restart.

On a sandbox cluster (``--brokers``) the group RPCs are answered only by the
group's coordinator (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS
while it has just taken the group over), ShareFetch and ShareAcknowledge only
by each partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere, with the current
leader, KIP-951), and share sessions are per node, as Kafka's share-session
cache is per broker. A partition whose leader changes drops its in-memory
share-partition: the new leader rebuilds it from the persisted state, so records
that were acquired and not acknowledged become available again, as on Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Final

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_GROUPS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_CONFIGS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.kafka.group_configs import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from kshare_cli.sandbox.broker import (
    SHARE_STATE_PARTITIONS,
    Broker,
    BrokerExtension,
    handles,
    now_ms,
    response_type,
)
from kshare_cli.sandbox.broker_config import ShareCoordinatorConfig
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.group_config_file import load_group_configs, save_group_configs
from kshare_cli.sandbox.group_configs import (
    BrokerGroupSettings,
    ConfigEntry,
    GroupConfigError,
    GroupConfigStore,
)
from kshare_cli.sandbox.group_coordinator import ShareGroupCoordinator, ShareInitialization
from kshare_cli.sandbox.log import Topic
from kshare_cli.sandbox.record_batches import encode_batch
from kshare_cli.sandbox.server import Connection
from kshare_cli.sandbox.share_coordinator import SnapshotOffsets, cold_snapshots
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.sandbox.share_partition import (
    AcknowledgementBatch,
    SharePartition,
    SharePartitionConfig,
    StateWrite,
)
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.records import StateRecord, decode_record, encode_record
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.wire.build import build

log = logging.getLogger("kshare.sandbox")

TIMER_INTERVAL_S: Final = 0.05
#: Kafka 4.2 answered one DescribeShareGroupOffsets of 112 groups in 2.40 s (DESIGN.md,
#: measured facts): what each group waits for the one before it in the same request.
KAFKA_SUMMARY_READ_WAIT_S: Final = 2.40 / 112


@dataclass(slots=True)
class ShareSession:
    """A member's share session: which partitions it fetches and the epoch it must send next."""

    group_id: str
    member_id: str
    next_epoch: int
    partitions: set[tuple[uuid.UUID, int]] = field(default_factory=set)


class ShareGroups(BrokerExtension):
    """Everything share-group about the broker, installed as an extension."""

    def __init__(
        self,
        broker: Broker,
        *,
        settings: BrokerGroupSettings | None = None,
        coordinator: ShareCoordinatorConfig | None = None,
        summary_read_wait_s: float = KAFKA_SUMMARY_READ_WAIT_S,
    ) -> None:
        self.broker = broker
        if summary_read_wait_s < 0:
            raise ValueError(f"summary_read_wait_s must not be negative: {summary_read_wait_s}")
        #: See ``describe_share_group_offsets``: the wait of each further group of a request.
        self.summary_read_wait_s = summary_read_wait_s
        self.configs = GroupConfigStore(settings)
        data_dir = broker.data_dir
        if data_dir is not None:
            # Kafka replays group ConfigRecords from its metadata log; this is ours.
            self.configs.restore(load_group_configs(data_dir))
            self.configs.on_change = lambda: save_group_configs(data_dir, self.configs.snapshot())
        self.groups = ShareGroupCoordinator(self.configs)
        #: The share coordinator's ``share.coordinator.*`` settings (``--config``).
        self.coordinator = coordinator or ShareCoordinatorConfig()
        self.state = ShareCoordinatorState(
            updates_per_snapshot=self.coordinator.snapshot_update_records_per_snapshot,
            clock=now_ms,
        )
        #: Per state-topic partition: where each share-partition's latest snapshot is, and
        #: the offset the last prune deleted up to (Kafka's ``lastPrunedOffsets``).
        self.snapshot_offsets = [SnapshotOffsets() for _ in range(SHARE_STATE_PARTITIONS)]
        self.pruned_to: dict[int, int] = {}
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        #: Share sessions by (node id, group, member): each broker has its own cache.
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}

    # -- lifecycle -----------------------------------------------------------

    async def started(self, broker: Broker) -> None:
        if broker.topic(SHARE_STATE_TOPIC) is None:
            broker.create_topic(SHARE_STATE_TOPIC, SHARE_STATE_PARTITIONS, internal=True)
        self._replay_state_topic()
        broker.spawn(self._timers())
        broker.spawn(
            self._every(self.coordinator.cold_partition_snapshot_interval_ms, self.snapshot_cold)
        )
        broker.spawn(self._every(self.coordinator.state_topic_prune_interval_ms, self.prune))

    def _replay_state_topic(self) -> None:
        from kio.records.readers import read_batch

        topic = self.broker.topic(SHARE_STATE_TOPIC)
        assert topic is not None
        for partition_log in topic.partitions:
            snapshot_offsets = self.snapshot_offsets[partition_log.partition]
            for stored in partition_log.batches:
                decoded, _ = read_batch(stored.data, 0)
                for record in decoded.records:
                    if record.key is None or record.offset < partition_log.log_start_offset:
                        continue
                    state_record = decode_record(bytes(record.key), _bytes(record.value))
                    self.state.apply(state_record)
                    snapshot_offsets.replayed(state_record, int(record.offset))
        # Kafka keeps share groups themselves in __consumer_offsets; the sandbox has no
        # such log, so a restart re-creates each group that still has share-partition
        # state, empty, with its partitions marked initialised.
        for key in self.state.states():
            topic = self.broker.logs.by_id.get(key.topic_id)
            if topic is None:
                continue
            self.groups.ensure_group(key.group_id)
            self.groups.mark_initialized(key.group_id, {topic.name: [key.partition]})

    async def _timers(self) -> None:
        while True:
            await asyncio.sleep(TIMER_INTERVAL_S)
            try:
                self.tick(now_ms())
            except Exception:
                log.exception("share-group timers failed")

    async def _every(self, interval_ms: int, job: Any) -> None:
        """Run ``job`` every ``interval_ms`` on the loop's clock, re-armed after each run.

        Kafka's share coordinator re-adds its TimerTask when a pass has finished,
        failure or not; so does this.
        """
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                job()
            except Exception:
                log.exception("share coordinator job %s failed", getattr(job, "__name__", job))

    def snapshot_cold(self) -> None:
        """One cold-partition pass over every state-topic partition (see ``cold_snapshots``)."""
        by_partition: dict[int, list[SharePartitionKey]] = {}
        for key in self.state.states():
            by_partition.setdefault(state_partition_for(key, SHARE_STATE_PARTITIONS), []).append(
                key
            )
        now = now_ms()
        interval_ms = self.coordinator.cold_partition_snapshot_interval_ms
        for partition, keys in sorted(by_partition.items()):
            records = cold_snapshots(self.state, keys, now=now, interval_ms=interval_ms)
            if records:
                self._append_state_records(partition, records)

    def prune(self) -> None:
        """One prune pass: DeleteRecords up to each state-topic partition's last redundant offset.

        ``ShareCoordinatorService.performRecordPruning``: skipped where the offset
        is unknown or the previous pass already deleted up to it.
        """
        for partition, snapshot_offsets in enumerate(self.snapshot_offsets):
            offset = snapshot_offsets.last_redundant_offset()
            if offset is None or self.pruned_to.get(partition) == offset:
                continue
            log_ = self.broker.partition_log(SHARE_STATE_TOPIC, partition)
            assert log_ is not None
            log_.delete_records_before(offset)
            self.pruned_to[partition] = offset

    def tick(self, now: int) -> None:
        """Expire acquisition locks and member sessions: what Kafka's timers do."""
        released = False
        for key, share_partition in list(self.partitions.items()):
            for write in share_partition.release_expired_locks(now):
                self._persist(key, write)
                released = True
        for removed in self.groups.expire_members(now):
            self._member_gone(removed.group_id, removed.member_id, now)
            released = True
        if released:
            self.broker.notify_data_changed()

    def topic_deleted(self, broker: Broker, topic: Topic) -> None:
        for key in [k for k in self.partitions if k.topic_id == topic.topic_id]:
            del self.partitions[key]

    def leader_changed(self, broker: Broker, topic: Topic, partition: int) -> None:
        """The old leader's share-partitions go; the new leader reads the persisted state."""
        moved = (topic.topic_id, partition)
        self.forget_live([k for k in self.partitions if (k.topic_id, k.partition) == moved])

    # -- durable state -------------------------------------------------------

    def _append_state(self, key: SharePartitionKey, record: StateRecord) -> None:
        self._append_state_records(state_partition_for(key, SHARE_STATE_PARTITIONS), [record])

    def _append_state_records(self, partition: int, records: list[StateRecord]) -> None:
        """Append records to one state-topic partition as one batch, then replay them."""
        log_ = self.broker.partition_log(SHARE_STATE_TOPIC, partition)
        assert log_ is not None
        now = now_ms()
        base_offset = log_.append(encode_batch([encode_record(r) for r in records], now), now)
        snapshot_offsets = self.snapshot_offsets[partition]
        for index, record in enumerate(records):
            self.state.apply(record)
            snapshot_offsets.replayed(record, base_offset + index)

    def _persist(self, key: SharePartitionKey, write: StateWrite) -> None:
        record = self.state.write(
            key,
            start_offset=write.start_offset,
            delivery_complete_count=write.delivery_complete_count,
            leader_epoch=write.leader_epoch,
            state_epoch=write.state_epoch,
            state_batches=list(write.state_batches),
        )
        self._append_state(key, record)

    def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        self._append_state(
            key, self.state.initialize(key, state_epoch=state_epoch, start_offset=start_offset)
        )

    def initialize_assigned(self, initialization: ShareInitialization) -> None:
        """Write the first state of newly assigned share-partitions (InitializeShareGroupState)."""
        for name, partitions in sorted(initialization.partitions.items()):
            topic = self.broker.topic(name)
            if topic is None:
                continue
            for partition in sorted(partitions):
                key = SharePartitionKey(initialization.group_id, topic.topic_id, partition)
                if self.state.state(key) is None:
                    self.initialize(key, initialization.state_epoch, initialization.start_offset)

    def persisted(self, key: SharePartitionKey) -> SharePartitionState | None:
        return self.state.state(key)

    # -- share-partitions ----------------------------------------------------

    def share_partition(self, key: SharePartitionKey) -> SharePartition | None:
        """The live share-partition, built from durable state on first use (as a leader does)."""
        found = self.partitions.get(key)
        if found is not None:
            return found
        topic = self.broker.logs.by_id.get(key.topic_id)
        if topic is None or not 0 <= key.partition < len(topic.partitions):
            return None
        persisted = self.state.state(key)
        if persisted is None:
            self.initialize(key, 1, -1)
            persisted = self.state.state(key)
            assert persisted is not None
        partition_log = topic.partitions[key.partition]
        reset_to: int | None = None
        if persisted.start_offset < 0:
            reset_to = self._auto_offset_reset(key.group_id, partition_log)
        config = SharePartitionConfig(
            max_in_flight_records=self.configs.max_record_locks(key.group_id),
            delivery_count_limit=self.configs.delivery_count_limit(key.group_id),
            record_lock_duration_ms=self.configs.record_lock_duration_ms(key.group_id),
        )
        share_partition = SharePartition(
            start_offset=persisted.start_offset,
            state_epoch=persisted.state_epoch,
            state_batches=[
                b
                for b in persisted.state_batches
                if b.last_offset >= max(persisted.start_offset, 0)
            ],
            leader_epoch=persisted.leader_epoch,
            reset_start_offset=reset_to,
            config=config,
        )
        self.partitions[key] = share_partition
        return share_partition

    def _auto_offset_reset(self, group_id: str, partition_log: Any) -> int:
        strategy = self.configs.auto_offset_reset_strategy(group_id)
        if strategy.kind == "earliest":
            return int(partition_log.log_start_offset)
        if strategy.kind == "latest":
            return int(partition_log.log_end_offset)
        found = partition_log.offset_for_timestamp(strategy.timestamp(now_ms()))
        return int(partition_log.log_end_offset if found is None else found[0])

    def _member_gone(
        self, group_id: str, member_id: str, now: int, led_by: int | None = None
    ) -> None:
        """A member left or was fenced: release what it held (``led_by``: on that node only).

        Its share session stays until the client closes it (epoch -1) -- Kafka answers
        the closing ShareAcknowledge that follows a leave heartbeat without error. A
        closed session releases what the member holds on that session's broker.
        """
        for key, share_partition in list(self.partitions.items()):
            if key.group_id != group_id:
                continue
            if led_by is not None and self._leader_of(key) != led_by:
                continue
            write = share_partition.release_member(member_id, now)
            if write is not None:
                self._persist(key, write)

    def group_topic_states(self, group_id: str) -> dict[SharePartitionKey, SharePartitionState]:
        return self.states_by_group().get(group_id, {})

    def states_by_group(self) -> dict[str, dict[SharePartitionKey, SharePartitionState]]:
        """Every share-partition's state, by group: one pass, for requests naming many groups."""
        by_group: dict[str, dict[SharePartitionKey, SharePartitionState]] = {}
        for key, state in self.state.states().items():
            by_group.setdefault(key.group_id, {})[key] = state
        return by_group

    def _leader_of(self, key: SharePartitionKey) -> int:
        topic = self.broker.logs.by_id.get(key.topic_id)
        return -1 if topic is None else self.broker.cluster.leader(topic.name, key.partition)

    def forget_live(self, keys: list[SharePartitionKey]) -> None:
        for key in keys:
            self.partitions.pop(key, None)


def install_share_groups(broker: Broker, **options: Any) -> ShareGroups:
    """Install the share-group parts on a broker and return them (tests reach in here)."""
    extension = ShareGroups(broker, **options)
    broker.extensions.append(extension)
    return extension


def installed_share_groups(broker: Broker) -> ShareGroups | None:
    """The share-group parts, None on a broker built without them (``share_groups=False``)."""
    for extension in broker.extensions:
        if isinstance(extension, ShareGroups):
            return extension
    return None


def share_groups(broker: Broker) -> ShareGroups:
    found = installed_share_groups(broker)
    if found is None:
        raise RuntimeError("share groups are not installed on this broker")
    return found


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


#: Kafka's ``Errors.message()`` of the errors a group RPC gets from the wrong node.
COORDINATOR_MESSAGES: Final[dict[int, str]] = {
    ErrorCode.not_coordinator: "This is not the correct coordinator.",
    ErrorCode.coordinator_load_in_progress: (
        "The coordinator is loading and hence can't process requests."
    ),
}


# -- ShareGroupHeartbeat ------------------------------------------------------


@handles(SHARE_GROUP_HEARTBEAT)
async def share_group_heartbeat(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    refused = broker.group_coordinator_error(connection, payload.group_id)
    if refused:
        return build(
            response_type(request),
            {
                "throttle_time": 0,
                "error_code": refused,
                "error_message": COORDINATOR_MESSAGES[refused],
                "member_id": None,
                "member_epoch": 0,
                "heartbeat_interval": 0,
                "assignment": None,
            },
        )
    now = now_ms()
    topics = {name: len(t.partitions) for name, t in broker.logs.topics.items() if not t.internal}
    result = shares.groups.heartbeat(
        group_id=payload.group_id,
        member_id=payload.member_id,
        member_epoch=int(payload.member_epoch),
        rack_id=payload.rack_id,
        client_id=request.client_id or "",
        client_host=f"/{connection.peer_host}",
        subscribed_topic_names=(
            None if payload.subscribed_topic_names is None else list(payload.subscribed_topic_names)
        ),
        topic_partitions=topics,
        now_ms=now,
    )
    if result.removed_member is not None:
        removed = result.removed_member
        shares._member_gone(removed.group_id, removed.member_id, now)
    if result.initialization is not None:
        shares.initialize_assigned(result.initialization)
    assignment = None
    if result.assignment is not None:
        topic_partitions = []
        for name, partitions in sorted(result.assignment.items()):
            topic = broker.topic(name)
            if topic is None:
                continue
            for partition in partitions:
                shares.share_partition(
                    SharePartitionKey(payload.group_id, topic.topic_id, partition)
                )
            topic_partitions.append({"topic_id": topic.topic_id, "partitions": sorted(partitions)})
        assignment = {"topic_partitions": topic_partitions}
    broker.notify_data_changed()
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "error_message": result.error_message,
            "member_id": result.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval": result.heartbeat_interval_ms,
            "assignment": assignment,
        },
    )


# -- ShareFetch / ShareAcknowledge --------------------------------------------


def _session_for(
    shares: ShareGroups, node_id: int, group_id: str, member_id: str, epoch: int
) -> tuple[ShareSession | None, int]:
    """Kafka's share-session rules: 0 opens, -1 closes, otherwise the epoch must follow on."""
    key = (node_id, group_id, member_id)
    if epoch == 0:
        opened = ShareSession(group_id, member_id, 1)
        shares.sessions[key] = opened
        return opened, ErrorCode.none
    session = shares.sessions.get(key)
    if session is None:
        return None, ErrorCode.share_session_not_found
    if epoch == -1:
        return session, ErrorCode.none
    if epoch != session.next_epoch:
        return None, ErrorCode.invalid_share_session_epoch
    session.next_epoch = epoch + 1 if epoch < 2**31 - 1 else 1
    return session, ErrorCode.none


def _acknowledge(
    shares: ShareGroups,
    connection: Connection,
    group_id: str,
    member_id: str,
    topics: Any,
    now: int,
    deferred: list[SharePartition] | None = None,
) -> dict[tuple[uuid.UUID, int], int]:
    """Apply acknowledgements; with ``deferred``, their records stay mid-write until committed.

    A real broker cannot hand out a record whose acknowledgement is still being
    persisted, so a ShareFetch that piggybacks a release gets that record back
    only on a later fetch; ``deferred`` reproduces that ordering.
    """
    results: dict[tuple[uuid.UUID, int], int] = {}
    for topic in topics:
        for partition in topic.partitions:
            if not partition.acknowledgement_batches:
                continue
            key = SharePartitionKey(group_id, topic.topic_id, int(partition.partition_index))
            refused = _leader_error(shares.broker, connection, topic.topic_id, key.partition)
            if refused:
                results[(topic.topic_id, key.partition)] = refused
                continue
            share_partition = shares.share_partition(key)
            if share_partition is None:
                results[(topic.topic_id, key.partition)] = ErrorCode.unknown_topic_or_partition
                continue
            batches = [
                AcknowledgementBatch(
                    int(b.first_offset),
                    int(b.last_offset),
                    tuple(int(t) for t in b.acknowledge_types),
                )
                for b in partition.acknowledgement_batches
            ]
            outcome = share_partition.acknowledge(
                member_id, batches, now, defer_commit=deferred is not None
            )
            if deferred is not None and share_partition.has_pending_writes:
                deferred.append(share_partition)
            if outcome.state_write is not None:
                shares._persist(key, outcome.state_write)
            results[(topic.topic_id, key.partition)] = outcome.error_code
    return results


def _leader_error(
    broker: Broker, connection: Connection, topic_id: uuid.UUID, partition: int
) -> int:
    """NOT_LEADER_OR_FOLLOWER for a share-partition this node does not lead (else NONE)."""
    topic = broker.logs.by_id.get(topic_id)
    if topic is None:
        return ErrorCode.none
    return broker.leader_error(connection, topic.name, partition)


def _current_leader(broker: Broker, topic_id: uuid.UUID, partition: int) -> dict[str, int]:
    topic = broker.logs.by_id.get(topic_id)
    if topic is None:
        return _LEADER
    return broker.current_leader(topic.name, partition)


def _acquire(
    shares: ShareGroups,
    session: ShareSession,
    max_records: int,
    max_bytes: int,
    batch_size: int,
    now: int,
) -> dict[tuple[uuid.UUID, int], tuple[bytes, list[dict[str, int]]]]:
    fetched: dict[tuple[uuid.UUID, int], tuple[bytes, list[dict[str, int]]]] = {}
    remaining = max_records
    for topic_id, partition in sorted(session.partitions, key=lambda p: (str(p[0]), p[1])):
        if remaining <= 0 or max_bytes <= 0:
            break
        key = SharePartitionKey(session.group_id, topic_id, partition)
        share_partition = shares.share_partition(key)
        topic = shares.broker.logs.by_id.get(topic_id)
        if share_partition is None or topic is None:
            continue
        partition_log = topic.partitions[partition]
        start = share_partition.next_fetch_offset()
        if start >= partition_log.log_end_offset:
            continue
        acquired = share_partition.acquire(
            session.member_id,
            partition_log.log_end_offset,
            remaining,
            now,
            record_batches=partition_log.batch_ranges(start, partition_log.log_end_offset),
            batch_size=batch_size or None,
        )
        if not acquired:
            continue
        first = min(a.first_offset for a in acquired)
        last = max(a.last_offset for a in acquired)
        chunks = []
        size = 0
        for first_offset, last_offset in partition_log.batch_ranges(first, last + 1):
            index = partition_log.batch_index(first_offset)
            data = partition_log.batches[index].data
            chunks.append(data)
            size += len(data)
            del last_offset
        remaining -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
        max_bytes -= size
        fetched[(topic_id, partition)] = (
            b"".join(chunks),
            [
                {
                    "first_offset": a.first_offset,
                    "last_offset": a.last_offset,
                    "delivery_count": a.delivery_count,
                }
                for a in acquired
            ],
        )
    return fetched


_LEADER: Final = {"leader_id": 0, "leader_epoch": 0}


def _top_level_error(request: Request, error_code: int, **extra: Any) -> Any:
    """A ShareFetch/ShareAcknowledge response that fails the whole request."""
    body: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": error_code,
        "error_message": None,
        "responses": [],
        "node_endpoints": [],
    }
    return build(response_type(request), {**body, **extra})


def _session_node(broker: Broker, connection: Connection) -> int | None:
    """Whose partitions a closing session releases: all of them on a one-node sandbox."""
    return connection.node_id if len(broker.cluster.node_ids) > 1 else None


def _commit(deferred: list[SharePartition]) -> None:
    for share_partition in deferred:
        share_partition.commit_pending()
    deferred.clear()


@handles(SHARE_FETCH)
async def share_fetch(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id or ""
    member_id = payload.member_id or ""
    epoch = int(payload.share_session_epoch)
    lock_ms = shares.configs.record_lock_duration_ms(group_id) if group_id else 30000

    def top_level(error_code: int) -> Any:
        return _top_level_error(request, error_code, acquisition_lock_timeout=lock_ms)

    if not group_id or not member_id:
        return top_level(ErrorCode.invalid_request)
    has_acks = any(p.acknowledgement_batches for t in payload.topics for p in t.partitions)
    if epoch == 0 and has_acks:
        return top_level(ErrorCode.invalid_request)
    session, error = _session_for(shares, connection.node_id, group_id, member_id, epoch)
    if session is None:
        return top_level(error)
    now = now_ms()
    deferred: list[SharePartition] = []
    ack_results = _acknowledge(
        shares, connection, group_id, member_id, payload.topics, now, deferred
    )
    for forgotten in payload.forgotten_topics_data:
        for partition in forgotten.partitions:
            session.partitions.discard((forgotten.topic_id, int(partition)))
    errors: dict[tuple[uuid.UUID, int], int] = {}
    # A partition of the session whose leadership moved away is reported once and dropped.
    for topic_id, index in sorted(session.partitions, key=lambda p: (str(p[0]), p[1])):
        if refused := _leader_error(broker, connection, topic_id, index):
            errors[(topic_id, index)] = refused
            session.partitions.discard((topic_id, index))
    for topic in payload.topics:
        for partition in topic.partitions:
            key = SharePartitionKey(group_id, topic.topic_id, int(partition.partition_index))
            if refused := _leader_error(broker, connection, topic.topic_id, key.partition):
                errors[(topic.topic_id, key.partition)] = refused
            elif shares.share_partition(key) is None:
                errors[(topic.topic_id, key.partition)] = (
                    ErrorCode.unknown_topic_id
                    if topic.topic_id not in broker.logs.by_id
                    else ErrorCode.unknown_topic_or_partition
                )
            elif epoch != -1:
                session.partitions.add((topic.topic_id, key.partition))
    fetched: dict[tuple[uuid.UUID, int], tuple[bytes, list[dict[str, int]]]] = {}
    if epoch == -1:
        # Closing the session releases whatever the member still holds on this node.
        shares.sessions.pop((connection.node_id, group_id, member_id), None)
        shares._member_gone(group_id, member_id, now, led_by=_session_node(broker, connection))
        broker.notify_data_changed()
    else:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + payload.max_wait.total_seconds()
        while True:
            fetched = _acquire(
                shares,
                session,
                int(payload.max_records) or 500,
                int(payload.max_bytes),
                int(getattr(payload, "batch_size", 0) or 0),
                now_ms(),
            )
            if not fetched and deferred:
                # Kafka parks such a fetch until the acknowledgement's write completes.
                _commit(deferred)
                continue
            remaining = deadline - loop.time()
            if fetched or ack_results or remaining <= 0:
                break
            await broker.wait_data_changed(remaining)
    _commit(deferred)
    touched = set(ack_results) | set(fetched) | set(errors)
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for topic_id, partition in sorted(touched, key=lambda p: (str(p[0]), p[1])):
        records, acquired = fetched.get((topic_id, partition), (b"", []))
        error_code = errors.get((topic_id, partition), ErrorCode.none)
        ack_error_code = ack_results.get((topic_id, partition), ErrorCode.none)
        current_leader = _LEADER
        if ErrorCode.not_leader_or_follower in (error_code, ack_error_code):
            current_leader = _current_leader(broker, topic_id, partition)
            leaders.add(current_leader["leader_id"])
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": error_code,
                "error_message": None,
                "acknowledge_error_code": ack_error_code,
                "acknowledge_error_message": None,
                "current_leader": current_leader,
                "records": records,
                "acquired_records": acquired,
            }
        )
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "acquisition_lock_timeout": lock_ms,
            "responses": [
                {"topic_id": topic_id, "partitions": partitions}
                for topic_id, partitions in by_topic.items()
            ],
            "node_endpoints": broker.node_endpoints(leaders),
        },
    )


@handles(SHARE_ACKNOWLEDGE)
async def share_acknowledge(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id or ""
    member_id = payload.member_id or ""
    epoch = int(payload.share_session_epoch)

    def top_level(error_code: int) -> Any:
        return _top_level_error(request, error_code)

    if not group_id or not member_id:
        return top_level(ErrorCode.invalid_request)
    if epoch == 0:
        return top_level(ErrorCode.invalid_share_session_epoch)
    session, error = _session_for(shares, connection.node_id, group_id, member_id, epoch)
    if session is None:
        return top_level(error)
    now = now_ms()
    results = _acknowledge(shares, connection, group_id, member_id, payload.topics, now)
    if epoch == -1:
        # Closing the session releases whatever the member still holds on this node.
        shares.sessions.pop((connection.node_id, group_id, member_id), None)
        shares._member_gone(group_id, member_id, now, led_by=_session_node(broker, connection))
    broker.notify_data_changed()
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for (topic_id, partition), code in sorted(
        results.items(), key=lambda r: (str(r[0][0]), r[0][1])
    ):
        current_leader = _LEADER
        if code == ErrorCode.not_leader_or_follower:
            current_leader = _current_leader(broker, topic_id, partition)
            leaders.add(current_leader["leader_id"])
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": code,
                "error_message": None,
                "current_leader": current_leader,
            }
        )
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "responses": [{"topic_id": t, "partitions": p} for t, p in by_topic.items()],
            "node_endpoints": broker.node_endpoints(leaders),
        },
    )


# -- admin RPCs ----------------------------------------------------------------


@handles(LIST_GROUPS)
async def list_groups(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = installed_share_groups(broker)
    payload = request.payload
    states = {s.lower() for s in (getattr(payload, "states_filter", ()) or ())}
    types = {t.lower() for t in (getattr(payload, "types_filter", ()) or ())}
    groups = []
    # Without share groups the broker is a 3.x one with no groups at all.
    if shares is not None:
        listed = [*shares.groups.list_groups(states), *shares.groups.list_classic_groups(states)]
        # Each broker lists the groups it coordinates; an admin client asks them all.
        here = set(
            broker.cluster.groups_coordinated_by(
                connection.node_id, [listing.group_id for listing in listed]
            )
        )
        for listing in listed:
            if types and listing.group_type not in types:
                continue
            if listing.group_id not in here:
                continue
            groups.append(
                {
                    "group_id": listing.group_id,
                    "protocol_type": listing.protocol_type,
                    "group_state": listing.state,
                    "group_type": listing.group_type,
                }
            )
    return build(
        response_type(request), {"throttle_time": 0, "error_code": ErrorCode.none, "groups": groups}
    )


@handles(OFFSET_COMMIT)
async def offset_commit(broker: Broker, request: Request, connection: Connection) -> Any:
    """A simple consumer's commit (no JoinGroup): it makes a classic group of that id.

    The sandbox has no classic group protocol; this is the one way to host a group
    of another type, so that kshare's "not a share group" paths meet the answers
    Kafka gives for one.
    """
    shares = installed_share_groups(broker)
    payload = request.payload

    def name_of(topic: Any) -> str:
        # v10 names topics by id (KIP-848); earlier versions by name.
        name = str(getattr(topic, "name", "") or "")
        topic_id = getattr(topic, "topic_id", None)
        known = None if topic_id is None else broker.logs.by_id.get(topic_id)
        return name or ("" if known is None else known.name)

    offsets = {
        (name_of(topic), int(partition.partition_index)): int(partition.committed_offset)
        for topic in payload.topics
        for partition in topic.partitions
    }
    refused = broker.group_coordinator_error(connection, str(payload.group_id))
    code: int
    if shares is None:
        code = ErrorCode.coordinator_not_available  # a 3.x-like broker here hosts no groups at all
    elif refused:
        code = refused
    else:
        code = shares.groups.commit_classic(str(payload.group_id), offsets)
    topics = [
        {
            "name": getattr(topic, "name", ""),
            "topic_id": getattr(topic, "topic_id", None),
            "partitions": [
                {"partition_index": partition.partition_index, "error_code": code}
                for partition in topic.partitions
            ],
        }
        for topic in payload.topics
    ]
    return build(response_type(request), {"throttle_time": 0, "topics": topics})


@handles(SHARE_GROUP_DESCRIBE)
async def share_group_describe(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    groups = []
    for group_id in request.payload.group_ids:
        if refused := broker.group_coordinator_error(connection, group_id):
            groups.append(
                {
                    "error_code": refused,
                    "error_message": COORDINATOR_MESSAGES[refused],
                    "group_id": group_id,
                    "group_state": "",
                    "group_epoch": 0,
                    "assignment_epoch": 0,
                    "assignor_name": "",
                    "members": [],
                    "authorized_operations": -2147483648,
                }
            )
            continue
        description = shares.groups.describe(group_id)
        if description.error_code != ErrorCode.none:
            groups.append(
                {
                    "error_code": description.error_code,
                    "error_message": description.error_message,
                    "group_id": group_id,
                    # Kafka leaves the defaults: "", 0, 0 (golden line 249, no-such-group).
                    "group_state": description.state,
                    "group_epoch": description.group_epoch,
                    "assignment_epoch": description.assignment_epoch,
                    "assignor_name": description.assignor_name,
                    "members": [],
                    "authorized_operations": -2147483648,
                }
            )
            continue
        members = []
        for member in description.members:
            topic_partitions = []
            for name, partitions in sorted(member.assignment.items()):
                topic = broker.topic(name)
                if topic is None:
                    continue
                topic_partitions.append(
                    {
                        "topic_id": topic.topic_id,
                        "topic_name": name,
                        "partitions": sorted(partitions),
                    }
                )
            members.append(
                {
                    "member_id": member.member_id,
                    "rack_id": member.rack_id,
                    "member_epoch": member.member_epoch,
                    "client_id": member.client_id,
                    "client_host": member.client_host,
                    "subscribed_topic_names": list(member.subscribed_topic_names),
                    "assignment": {"topic_partitions": topic_partitions},
                }
            )
        groups.append(
            {
                "error_code": ErrorCode.none,
                "error_message": None,
                "group_id": group_id,
                "group_state": description.state,
                "group_epoch": description.group_epoch,
                "assignment_epoch": description.assignment_epoch,
                "assignor_name": description.assignor_name,
                "members": members,
                "authorized_operations": -2147483648,
            }
        )
    return build(response_type(request), {"throttle_time": 0, "groups": groups})


def _group_error(shares: ShareGroups, group_id: str, *, must_be_empty: bool) -> int:
    description = shares.groups.describe(group_id)
    if description.error_code != ErrorCode.none:
        return description.error_code
    if must_be_empty and description.members:
        return ErrorCode.non_empty_group
    return ErrorCode.none


@handles(DESCRIBE_SHARE_GROUP_OFFSETS)
async def describe_share_group_offsets(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    """Start offset and lag of each group's share-partitions, the groups read one by one.

    Kafka 4.2 reads each group's offsets from the share coordinator
    (``GroupCoordinatorService.describeShareGroupAllOffsets`` ->
    ``readShareGroupStateSummary`` -> ``persister.readSummary``: one
    ReadShareGroupStateSummary per group). ``KafkaApis.handleDescribeShareGroupOffsetsRequest``
    starts every group's read and answers when all are done, but the persister
    (``PersisterStateManager.SendThread.generateRequests``) coalesces reads per group
    only, takes one queued handler per wake-up and keeps one SUMMARY request in flight
    per share-coordinator node, so the groups of one request are read one after the
    other: 112 groups took 2.40 s. One-group requests never queue there -- the socket
    server reads a connection's next request only after answering the last -- and 112
    of them took 0.11 s in all.

    So the sandbox reads the first group of a request at once and makes each further
    group wait ``summary_read_wait_s`` (default: Kafka's 2.40 s / 112) behind the one
    before it, with ``asyncio.sleep``, so other connections are served meanwhile; a
    group's state is read when its turn comes, by share-partition key (a scan of
    every group's state per request would make a thousand one-group requests cost
    the sandbox time quadratic in the groups, which Kafka's per-group read does not).
    """
    shares = share_groups(broker)
    groups = []
    for index, wanted in enumerate(request.payload.groups):
        if index and shares.summary_read_wait_s:
            await asyncio.sleep(shares.summary_read_wait_s)
        group_id = wanted.group_id
        if refused := broker.group_coordinator_error(connection, group_id):
            groups.append(
                {
                    "group_id": group_id,
                    "topics": [],
                    "error_code": refused,
                    "error_message": COORDINATOR_MESSAGES[refused],
                }
            )
            continue
        # Kafka answers for an unknown group as for one with no share-partitions:
        # no error, no topics (or start offset -1 for named partitions); it is the
        # tool that finds out the group is missing, from ShareGroupDescribe.
        states = _group_states(broker, shares, group_id)
        requested: list[tuple[str, list[int] | None]]
        if wanted.topics is None:
            names = sorted(
                {t.name for k in states if (t := broker.logs.by_id.get(k.topic_id)) is not None}
            )
            requested = [(name, None) for name in names]
        else:
            requested = [(t.topic_name, [int(p) for p in t.partitions]) for t in wanted.topics]
        topics = []
        for name, partitions in requested:
            topic = broker.topic(name)
            if topic is None:
                topics.append(
                    {
                        "topic_name": name,
                        "topic_id": uuid.UUID(int=0),
                        # Kafka: an unknown topic is absence of data (offset -1), not an error.
                        "partitions": [
                            _offset_entry(p, -1, -1, -1, ErrorCode.none) for p in partitions or []
                        ],
                    }
                )
                continue
            if partitions is None:
                partitions = sorted(
                    k.partition for k in states if k.topic_id == topic.topic_id and states[k]
                )
            entries = []
            for partition in partitions:
                key = SharePartitionKey(group_id, topic.topic_id, partition)
                persisted = states.get(key)
                if not 0 <= partition < len(topic.partitions):
                    entries.append(
                        _offset_entry(partition, -1, -1, -1, ErrorCode.unknown_topic_or_partition)
                    )
                elif persisted is None:
                    entries.append(_offset_entry(partition, -1, -1, -1, ErrorCode.none))
                elif broker.cluster.loading(
                    SHARE_STATE_TOPIC, state_partition_for(key, SHARE_STATE_PARTITIONS)
                ):
                    # Its share coordinator moved a moment ago: Kafka 4.2 answered this
                    # share-partition NOT_LEADER_OR_FOLLOWER until the move settled.
                    entries.append(
                        _offset_entry(partition, -1, -1, -1, ErrorCode.not_leader_or_follower)
                    )
                else:
                    end = topic.partitions[partition].log_end_offset
                    lag = share_partition_lag(
                        end, persisted.start_offset, persisted.delivery_complete_count
                    )
                    entries.append(
                        _offset_entry(
                            partition,
                            persisted.start_offset,
                            persisted.leader_epoch,
                            -1 if lag is None else lag,
                            ErrorCode.none,
                        )
                    )
            topics.append({"topic_name": name, "topic_id": topic.topic_id, "partitions": entries})
        groups.append(
            {
                "group_id": group_id,
                "topics": topics,
                "error_code": ErrorCode.none,
                "error_message": None,
            }
        )
    return build(response_type(request), {"throttle_time": 0, "groups": groups})


def _group_states(
    broker: Broker, shares: ShareGroups, group_id: str
) -> dict[SharePartitionKey, SharePartitionState]:
    """One group's persisted share-partition states, on the topics that exist now."""
    states: dict[SharePartitionKey, SharePartitionState] = {}
    for topic_id, topic in broker.logs.by_id.items():
        for partition in range(len(topic.partitions)):
            key = SharePartitionKey(group_id, topic_id, partition)
            state = shares.state.state(key)
            if state is not None:
                states[key] = state
    return states


def _offset_entry(
    partition: int, start_offset: int, leader_epoch: int, lag: int, error_code: int
) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "start_offset": start_offset,
        "leader_epoch": leader_epoch,
        "lag": lag,
        "error_code": error_code,
        "error_message": None,
    }


def _group_refused(request: Request, group_id: str, error: int) -> Any:
    """Alter/DeleteShareGroupOffsets refused for the whole group, with Kafka's message."""
    messages: dict[int, str] = {
        ErrorCode.non_empty_group: "The group is not empty.",
        ErrorCode.group_id_not_found: f"Group {group_id} not found.",
        **COORDINATOR_MESSAGES,
    }
    message = messages.get(error)
    body: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": error,
        "error_message": message,
        "responses": [],
    }
    return build(response_type(request), body)


@handles(ALTER_SHARE_GROUP_OFFSETS)
async def alter_share_group_offsets(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id
    if refused := broker.group_coordinator_error(connection, group_id):
        return _group_refused(request, group_id, refused)
    error = _group_error(shares, group_id, must_be_empty=True)
    if error == ErrorCode.group_id_not_found:
        # Kafka 4.2 (GroupMetadataManager.alterShareGroupOffsets) makes a new ShareGroup but
        # persists it only through the ShareGroupStatePartitionMetadata record, written when
        # at least one requested topic is in its metadata image; replaying that record adds
        # the group (getOrMaybeCreatePersistedShareGroup). With only unknown topics every
        # partition answers UNKNOWN_TOPIC_OR_PARTITION and no group exists afterwards.
        if any(broker.topic(wanted.topic_name) is not None for wanted in payload.topics):
            shares.groups.ensure_group(group_id)
        error = ErrorCode.none
    if error != ErrorCode.none:
        return _group_refused(request, group_id, error)
    body: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None}
    group_epoch = shares.groups.describe(group_id).group_epoch
    responses = []
    for wanted in payload.topics:
        topic = broker.topic(wanted.topic_name)
        partitions = []
        for partition in wanted.partitions:
            index = int(partition.partition_index)
            start = int(partition.start_offset)
            code = ErrorCode.none
            message = None
            if topic is None or not 0 <= index < len(topic.partitions):
                code = ErrorCode.unknown_topic_or_partition
                message = "This server does not host this topic-partition."
            else:
                key = SharePartitionKey(group_id, topic.topic_id, index)
                # Kafka initializes the state with the group epoch as the state epoch (the
                # golden reset after close wrote stateEpoch 3 twice, at group epoch 3).
                shares.initialize(key, group_epoch, start)
                shares.forget_live([key])
                shares.groups.mark_initialized(group_id, {wanted.topic_name: [index]})
            partitions.append(
                {"partition_index": index, "error_code": code, "error_message": message}
            )
        responses.append(
            {
                "topic_name": wanted.topic_name,
                "topic_id": uuid.UUID(int=0) if topic is None else topic.topic_id,
                "partitions": partitions,
            }
        )
    body["responses"] = responses
    return build(response_type(request), body)


@handles(DELETE_SHARE_GROUP_OFFSETS)
async def delete_share_group_offsets(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id
    if refused := broker.group_coordinator_error(connection, group_id):
        return _group_refused(request, group_id, refused)
    error = _group_error(shares, group_id, must_be_empty=True)
    if error != ErrorCode.none:
        return _group_refused(request, group_id, error)
    body: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None}
    states = shares.group_topic_states(group_id)
    responses = []
    for wanted in payload.topics:
        topic = broker.topic(wanted.topic_name)
        if topic is None:
            responses.append(
                {
                    "topic_name": wanted.topic_name,
                    "topic_id": uuid.UUID(int=0),
                    "error_code": ErrorCode.unknown_topic_or_partition,
                    "error_message": "This server does not host this topic-partition.",
                }
            )
            continue
        keys = [k for k in states if k.topic_id == topic.topic_id]
        if not keys and wanted.topic_name not in shares.groups.initialized_partitions(group_id):
            # Kafka 4.2 (sharePartitionsEligibleForOffsetDeletion): a topic the group has
            # no initialised share-partitions on is refused, not silently "deleted".
            responses.append(
                {
                    "topic_name": wanted.topic_name,
                    "topic_id": uuid.UUID(int=0),
                    "error_code": ErrorCode.unknown_topic_or_partition,
                    "error_message": "There is no offset information to delete.",
                }
            )
            continue
        for key in sorted(keys, key=lambda k: k.partition):
            record = shares.state.delete(key)
            if record is not None:
                shares._append_state(key, record)
        shares.forget_live(keys)
        shares.groups.mark_uninitialized(group_id, [wanted.topic_name])
        responses.append(
            {
                "topic_name": wanted.topic_name,
                "topic_id": topic.topic_id,
                "error_code": ErrorCode.none,
                "error_message": None,
            }
        )
    body["responses"] = responses
    return build(response_type(request), body)


@handles(DELETE_GROUPS)
async def delete_groups(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = installed_share_groups(broker)
    results = []
    for group_id in request.payload.groups_names:
        if shares is None:
            results.append({"group_id": group_id, "error_code": ErrorCode.group_id_not_found})
            continue
        if refused := broker.group_coordinator_error(connection, group_id):
            results.append({"group_id": group_id, "error_code": refused})
            continue
        error = _group_error(shares, group_id, must_be_empty=True)
        if error == ErrorCode.none:
            states = shares.group_topic_states(group_id)
            for key in sorted(states, key=lambda k: (str(k.topic_id), k.partition)):
                record = shares.state.delete(key)
                if record is not None:
                    shares._append_state(key, record)
            shares.forget_live(list(states))
            shares.groups.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": error})
    return build(response_type(request), {"throttle_time": 0, "results": results})


# -- group configs ---------------------------------------------------------------


@handles(DESCRIBE_CONFIGS)
async def describe_configs(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = installed_share_groups(broker)
    payload = request.payload
    include_synonyms = bool(getattr(payload, "include_synonyms", False))
    include_documentation = bool(getattr(payload, "include_documentation", False))
    results = []
    for resource in payload.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        entry: dict[str, Any] = {
            "error_code": ErrorCode.none,
            # Kafka leaves the schema default, "", on a successful result (golden line 396).
            "error_message": "",
            "resource_type": kind,
            "resource_name": name,
            "configs": [],
        }
        if kind == GROUP_RESOURCE and shares is None:
            entry.update(
                error_code=ErrorCode.invalid_request, error_message="Unsupported resource type"
            )
        elif kind == GROUP_RESOURCE and shares is not None:
            try:
                configs = shares.configs.describe(
                    name,
                    None
                    if resource.configuration_keys is None
                    else list(resource.configuration_keys),
                    include_documentation,
                    include_synonyms=include_synonyms,
                )
            except GroupConfigError as error:
                entry.update(error_code=error.error_code, error_message=error.message)
            else:
                entry["configs"] = [_config_entry(c) for c in configs]
        elif kind == TOPIC_RESOURCE:
            topic = broker.topic(name)
            if topic is None:
                entry.update(
                    error_code=ErrorCode.unknown_topic_or_partition,
                    error_message=f"Topic {name} does not exist.",
                )
        elif kind == BROKER_RESOURCE and name:
            # ConfigHelper: this broker's own id gets its configs (the sandbox has its
            # group.* settings), another id or a non-number is INVALID_REQUEST. The
            # empty name (cluster-wide dynamic defaults) has none here: an empty list.
            try:
                broker_id: int | None = int(name)
            except ValueError:
                broker_id = None
            if broker_id is None:
                entry.update(
                    error_code=ErrorCode.invalid_request,
                    error_message=f"Broker id must be an integer, but it is: {name}",
                )
            elif broker_id != connection.node_id:
                entry.update(
                    error_code=ErrorCode.invalid_request,
                    error_message=(
                        f"Unexpected broker id, expected {connection.node_id} or empty string, "
                        f"but received {name}"
                    ),
                )
            elif shares is not None:
                entry["configs"] = [
                    _config_entry(c)
                    for c in shares.configs.describe_broker(
                        None
                        if resource.configuration_keys is None
                        else list(resource.configuration_keys),
                        include_synonyms=include_synonyms,
                    )
                ]
        elif kind != BROKER_RESOURCE:
            entry.update(
                error_code=ErrorCode.invalid_request, error_message="Unsupported resource type"
            )
        results.append(entry)
    return build(response_type(request), {"throttle_time": 0, "results": results})


def _config_entry(config: ConfigEntry) -> dict[str, Any]:
    """One DescribeConfigs result entry, for ``build``."""
    return {
        "name": config.name,
        "value": config.value,
        "read_only": config.read_only,
        "config_source": int(config.source),
        "is_sensitive": config.is_sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": int(s.source)} for s in config.synonyms
        ],
        "config_type": int(config.config_type),
        "documentation": config.documentation,
    }


@handles(INCREMENTAL_ALTER_CONFIGS)
async def incremental_alter_configs(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    shares = installed_share_groups(broker)
    payload = request.payload
    responses = []
    for resource in payload.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        if kind != GROUP_RESOURCE or shares is None:
            responses.append(
                {
                    "error_code": ErrorCode.invalid_request,
                    "error_message": "The sandbox only alters GROUP configs."
                    if shares is not None
                    else "Unsupported resource type",
                    "resource_type": kind,
                    "resource_name": name,
                }
            )
            continue
        ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
        code, message = shares.configs.incremental_alter(name, ops, bool(payload.validate_only))
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": kind,
                "resource_name": name,
            }
        )
    return build(response_type(request), {"throttle_time": 0, "responses": responses})
