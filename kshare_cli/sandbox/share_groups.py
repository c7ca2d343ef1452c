"""The sandbox broker's share-group extension: the state the share RPCs work on.

``ShareGroups`` holds, per broker, the share-group coordinator, the in-memory
share-partitions, the share sessions, the group configs and the share
coordinator's state, and keeps ``__share_group_state`` and the in-memory view in
step (timers, cold snapshots, pruning, rebuilding share-partitions from the
persisted state after a leader change). The RPC handlers that reach it are in
``share_consumer_rpcs.py``, ``share_admin_rpcs.py`` and ``group_config_rpcs.py``;
``share.py`` installs the extension with all of them.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Final

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.group_configs import (
    DLQ_COPY_RECORD_ENABLE,
    DLQ_GROUP_ENABLE,
    DLQ_TOPIC_NAME,
    DLQ_TOPIC_NAME_PREFIX_DEFAULT,
)
from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.sandbox.broker import (
    SHARE_STATE_PARTITIONS,
    Broker,
    BrokerExtension,
    now_ms,
)
from kshare_cli.sandbox.broker_config import ShareCoordinatorConfig
from kshare_cli.sandbox.group_config_file import load_group_configs, save_group_configs
from kshare_cli.sandbox.group_configs import (
    BrokerGroupSettings,
    GroupConfigStore,
)
from kshare_cli.sandbox.group_coordinator import ShareGroupCoordinator, ShareInitialization
from kshare_cli.sandbox.log import Topic
from kshare_cli.sandbox.record_batches import encode_batch
from kshare_cli.sandbox.share_coordinator import SnapshotOffsets, cold_snapshots
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.sandbox.share_partition import (
    DeadLetter,
    SharePartition,
    SharePartitionConfig,
    StateWrite,
)
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.records import (
    DELIVERY_COMPLETE_COUNT_UNKNOWN,
    StateRecord,
    decode_record,
    encode_record,
)
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState

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
        self.configs = GroupConfigStore(settings, kafka_version=broker.profile.kafka_version)
        data_dir = broker.data_dir
        if data_dir is not None:
            # Kafka replays group ConfigRecords from its metadata log; this is ours.
            self.configs.restore(load_group_configs(data_dir))
            self.configs.on_change = lambda: save_group_configs(data_dir, self.configs.snapshot())
        self.groups = ShareGroupCoordinator(
            self.configs,
            initial_group_epoch=broker.profile.initial_group_epoch,
            assignment_batching=broker.profile.assignment_batching,
        )
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
        #: Kafka 4.4's cluster configs ``errors.deadletterqueue.topic.name.prefix`` and
        #: ``errors.deadletterqueue.auto.create.topics.enable`` (dynamic in Kafka).
        self.dlq_topic_name_prefix = DLQ_TOPIC_NAME_PREFIX_DEFAULT
        self.dlq_auto_create_topics = False
        #: Share-partitions with ARCHIVING records whose DLQ write is still to come.
        self._dead_letter_keys: set[SharePartitionKey] = set()

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
        if self._dead_letter_keys:
            self.drain_dead_letters()
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
        if any(b.delivery_state == DeliveryState.ARCHIVING for b in write.state_batches):
            self._dead_letter_keys.add(key)
            self.drain_dead_letters()

    # -- dead-letter queue (Kafka 4.4) ----------------------------------------

    def drain_dead_letters(self) -> None:
        """Phase 2 of Kafka's DLQ flow for every ARCHIVING write that completed: the DLQ
        record, then ARCHIVED persisted (``SharePartition.initiateDLQAndArchive``).

        A failed DLQ write (no topic, no ``errors.deadletterqueue.group.enable``, a name
        without the cluster's prefix) is logged and the records are archived all the same,
        as Kafka does. Runs right after each state write and on the timer, so a write whose
        acknowledgement was deferred (a ShareFetch) is finished once it commits.
        """
        for key in sorted(self._dead_letter_keys, key=str):
            share_partition = self.partitions.get(key)
            if share_partition is None:
                self._dead_letter_keys.discard(key)
                continue
            for letter in share_partition.take_dead_letters():
                try:
                    self.write_dead_letter(key, letter)
                except DeadLetterError as error:
                    # Kafka logs this as an error and archives all the same.
                    log.warning("Failed to write to DLQ, proceeding to ARCHIVED: %s", error)
                write = share_partition.archive_dead_letter(letter)
                if write is not None:
                    self._persist(key, write)
            if not share_partition.has_pending_writes and not share_partition.has_dead_letters:
                self._dead_letter_keys.discard(key)

    def write_dead_letter(self, key: SharePartitionKey, letter: DeadLetter) -> None:
        """Write one DLQ record per offset, as Kafka 4.4's ``ShareGroupDLQStateManager`` does.

        Six ``__dlq.errors.*`` headers in order, key and value only with the group's
        ``errors.deadletterqueue.copy.record.enable``, the original headers never, CreateTime
        now, partition = source partition mod the DLQ topic's partition count.
        """
        overrides = self.configs.overrides(key.group_id)
        name = overrides.get(DLQ_TOPIC_NAME, "").strip()
        if not name:
            raise DeadLetterError(
                f"Configured DLQ topic name in share group: {key.group_id} is empty."
            )
        if name.startswith("__"):
            raise DeadLetterError(
                f"Configured DLQ topic name in share group: {key.group_id} cannot start "
                f"with __, topic: {name}."
            )
        topic = self.broker.topic(name)
        if topic is not None and topic.configs.get(DLQ_GROUP_ENABLE, "").strip().lower() != "true":
            raise DeadLetterError(
                f"DLQ is not enabled on configured DLQ topic for share group: {key.group_id}, "
                f"topic: {name}."
            )
        if topic is None and not self.dlq_auto_create_topics:
            raise DeadLetterError(
                "DLQ topic does not exist and auto create is disabled on cluster for share "
                f"group: {key.group_id}, topic: {name}."
            )
        prefix = self.dlq_topic_name_prefix
        if prefix and not name.startswith(prefix):
            raise DeadLetterError(
                "Configured DLQ topic name does not comply with the DLQ topic prefix in share "
                f"group: {key.group_id}, topic: {name}, prefix: {prefix}."
            )
        if topic is None:
            topic = self.broker.create_topic(
                name,
                self.broker.default_partitions,
                configs={DLQ_GROUP_ENABLE: "true", "message.timestamp.type": "CreateTime"},
            )
        source = self.broker.logs.by_id.get(key.topic_id)
        source_name = source.name if source is not None else _kafka_uuid_text(key.topic_id)
        copy = overrides.get(DLQ_COPY_RECORD_ENABLE, "").strip().lower() == "true"
        originals = (
            _records_at(source.partitions[key.partition], letter.first_offset, letter.last_offset)
            if copy and source is not None and key.partition < len(source.partitions)
            else {}
        )
        records: list[tuple[bytes | None, bytes | None]] = []
        headers: list[list[tuple[str, bytes]]] = []
        for offset in range(letter.first_offset, letter.last_offset + 1):
            records.append(originals.get(offset, (None, None)))
            headers.append(
                [
                    ("__dlq.errors.topic", source_name.encode()),
                    ("__dlq.errors.partition", str(key.partition).encode()),
                    ("__dlq.errors.offset", str(offset).encode()),
                    ("__dlq.errors.group", key.group_id.encode()),
                    ("__dlq.errors.delivery.count", str(letter.delivery_count).encode()),
                    ("__dlq.errors.message", letter.reason.value.encode()),
                ]
            )
        partition_log = topic.partitions[key.partition % len(topic.partitions)]
        now = now_ms()
        partition_log.append(encode_batch(records, now, headers=headers), now)
        self.broker.notify_data_changed()

    def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        """Write a share-partition's first snapshot (start -1) or a reset's (start given)."""
        count = (
            self.broker.profile.reset_delivery_complete_count
            if start_offset >= 0
            else DELIVERY_COMPLETE_COUNT_UNKNOWN
        )
        record = self.state.initialize(
            key, state_epoch=state_epoch, start_offset=start_offset, delivery_complete_count=count
        )
        self._append_state(key, record)

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
            dead_letter_queue=self.dead_letter_queue(key.group_id),
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
        if share_partition.has_dead_letters:
            # ARCHIVING left behind by a broker that stopped between the two writes.
            self._dead_letter_keys.add(key)
        return share_partition

    def dead_letter_queue(self, group_id: str) -> bool:
        """Whether the group's rejected records go through ARCHIVING to a DLQ topic:
        ``share.version`` 2 and the group's ``errors.deadletterqueue.topic.name`` set
        (``SharePartition.isDLQEnabledForGroup``); with ``share.version`` 1 Kafka 4.4
        keeps the configs and ignores them."""
        if not self.broker.profile.dead_letter_queue:
            return False
        return bool(self.configs.overrides(group_id).get(DLQ_TOPIC_NAME, "").strip())

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


class DeadLetterError(Exception):
    """A DLQ write Kafka would refuse (its ``ConfigException`` messages)."""


def _kafka_uuid_text(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def _records_at(partition_log: Any, first: int, last: int) -> dict[int, tuple[Any, Any]]:
    """The (key, value) of each offset in [first, last] still in the log."""
    from kio.records.readers import read_batch

    found: dict[int, tuple[Any, Any]] = {}
    for index in range(partition_log.batch_index(first), len(partition_log.batches)):
        stored = partition_log.batches[index]
        if stored.base_offset > last:
            break
        decoded, _ = read_batch(stored.data, 0)
        for record in decoded.records:
            if first <= record.offset <= last:
                found[int(record.offset)] = (_bytes(record.key), _bytes(record.value))
    return found


#: Kafka's ``Errors.message()`` of the errors a group RPC gets from the wrong node.
COORDINATOR_MESSAGES: Final[dict[int, str]] = {
    ErrorCode.not_coordinator: "This is not the correct coordinator.",
    ErrorCode.coordinator_load_in_progress: (
        "The coordinator is loading and hence can't process requests."
    ),
}
