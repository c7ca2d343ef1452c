"""The sandbox's share coordinator rewrites and prunes ``__share_group_state`` as Kafka 4.2 does.

On a real broker, history in the state topic does not stay: idle share-partitions
are snapshotted again every ``share.coordinator.cold.partition.snapshot.interval.ms``,
a snapshot follows every ``share.coordinator.snapshot.update.records.per.snapshot``
updates, and every ``share.coordinator.state.topic.prune.interval.ms`` the records
before the latest snapshots are deleted (DeleteRecords: the log start offset moves).
These tests shorten the timers through the broker configs and read the topic as any
client does -- a confluent-kafka Consumer, ListOffsets, Fetch -- then replay it with
``state.replay`` and look at it with ``kshare inflight``. Each test starts its own
sandbox (the timers are broker configs), so none runs against a real cluster.
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    AcknowledgeType,
    Consumer,
    KafkaError,
    Producer,
    ShareConsumer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from typer.testing import CliRunner

from kshare_cli.cli.app import app
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.sandbox.share_coordinator import SnapshotOffsets, cold_snapshots
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.partitioning import DEFAULT_STATE_PARTITIONS, SHARE_STATE_TOPIC
from kshare_cli.state.records import (
    ShareSnapshotValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    decode_record,
)
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from tests.support.raw import call
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

PER_SNAPSHOT = "share.coordinator.snapshot.update.records.per.snapshot"
PRUNE_MS = "share.coordinator.state.topic.prune.interval.ms"
COLD_MS = "share.coordinator.cold.partition.snapshot.interval.ms"
RECORDS = 8
REJECTED = 1  # this offset is rejected (Archived); the others are accepted
HEARTBEAT_MS = 100
#: Assignments at once (Kafka 4.3+'s ``group.share.assignment.interval.ms`` 0, as 4.2): with
#: the 1 s default a new share-partition sits idle that long before its first
#: acknowledgement, longer than the cold-snapshot intervals below, and its cold snapshot
#: then comes before the consumer's writes (and, the shard quiet, none after them).
SETTINGS = BrokerGroupSettings(
    share_heartbeat_interval_ms=HEARTBEAT_MS,
    share_min_heartbeat_interval_ms=HEARTBEAT_MS,
    share_assignment_interval_ms=0,
)

#: offset -> record, for one state-topic partition
Partition = dict[int, StateRecord]


@dataclass(frozen=True)
class StateTopic:
    """``__share_group_state`` as a client reads it: log start and records, per partition."""

    log_start: dict[int, int]
    records: dict[int, Partition]

    def of_group(self, group: str) -> dict[int, Partition]:
        """The partitions holding the group's records, with only its records."""
        found: dict[int, Partition] = {}
        for partition, records in self.records.items():
            mine = {o: r for o, r in records.items() if r.key.group_id == group}
            if mine:
                found[partition] = mine
        return found


def read_state_topic(bootstrap: str, timeout: float = 30) -> StateTopic:
    """Every record of the state topic, from each partition's log start to its end.

    The coordinator prunes while the test reads: a log start that moves between the
    watermarks and the fetch answers OFFSET_OUT_OF_RANGE, and the read starts again from
    the new log start (what any reader of a pruned topic does)."""
    return wait_for(
        lambda: _read_state_topic_once(bootstrap, timeout), timeout, what="a whole state topic read"
    )


def _read_state_topic_once(bootstrap: str, timeout: float) -> StateTopic | None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kshare-test-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    try:
        log_start: dict[int, int] = {}
        ends: dict[int, int] = {}
        for partition in range(DEFAULT_STATE_PARTITIONS):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(SHARE_STATE_TOPIC, partition), timeout=timeout
            )
            log_start[partition], ends[partition] = low, high
        wanted = {p: end for p, end in ends.items() if end > log_start[p]}
        records: dict[int, Partition] = {p: {} for p in wanted}
        consumer.assign([TopicPartition(SHARE_STATE_TOPIC, p, log_start[p]) for p in wanted])

        pruned = False

        def done() -> bool:
            nonlocal pruned
            for message in consumer.consume(500, 0.2):
                error = message.error()
                if error is not None and error.code() == KafkaError._AUTO_OFFSET_RESET:
                    pruned = True
                    return True
                assert error is None, error
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                key = message.key()
                assert key is not None
                records[partition][offset] = decode_record(key, message.value())
            return all(
                max(records[p], default=log_start[p] - 1) + 1 >= end for p, end in wanted.items()
            )

        wait_for(done, timeout, interval=0, what="the state topic read to its end")
        return None if pruned else StateTopic(log_start, records)
    finally:
        consumer.close()


def replay(records: Mapping[int, StateRecord]) -> dict[SharePartitionKey, SharePartitionState]:
    state = ShareCoordinatorState()
    state.apply_all(records[offset] for offset in sorted(records))
    return state.states()


def what_it_says(state: SharePartitionState) -> tuple[Any, ...]:
    """A state without its snapshot epoch and timestamps: what it says about the records."""
    return (
        state.state_epoch,
        state.leader_epoch,
        state.start_offset,
        state.delivery_complete_count,
        state.state_batches,
    )


def run_scenario(bootstrap: str, topic: str, group: str) -> None:
    """Produce RECORDS records; a share consumer rejects one, accepts the rest, one commit each.

    One acknowledgement a commit makes one WriteShareGroupState a record: RECORDS
    writes, enough to cross a small snapshot threshold several times.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    entry = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(RECORDS):
        producer.produce(topic, value=f"record-{index}".encode())
    assert producer.flush(30) == 0
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    acknowledged: set[int] = set()
    try:

        def all_acknowledged() -> bool:
            for message in consumer.poll(0.1):
                if message.error() is not None:
                    continue
                offset = message.offset()
                assert offset is not None
                kind = AcknowledgeType.REJECT if offset == REJECTED else AcknowledgeType.ACCEPT
                consumer.acknowledge(message, kind)
                assert not any(consumer.commit_sync(10).values())
                acknowledged.add(offset)
            return len(acknowledged) == RECORDS

        wait_for(all_acknowledged, timeout=60, interval=0, what="every record acknowledged")
    finally:
        consumer.close()


def inflight_windows(bootstrap: str, group: str, profiles: Path) -> list[Any]:
    result = CliRunner().invoke(
        app,
        ["inflight", group, "-o", "json", "-b", bootstrap],
        env={"KSHARE_CONFIG": str(profiles), "KSHARE_BOOTSTRAP_SERVERS": None},
    )
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    return [
        (entry["topic"], entry["partition"], entry["window"]) for entry in document["partitions"]
    ]


def fetch_error(bootstrap: str, partition: int, offset: int) -> int:
    """The error of a Fetch of one state-topic partition at ``offset``."""
    request = FetchRequest(
        cluster_id=None,
        replica_id=-1,  # type: ignore[arg-type]
        max_wait=datetime.timedelta(0),  # type: ignore[arg-type]
        min_bytes=0,  # type: ignore[arg-type]
        max_bytes=1_000_000,  # type: ignore[arg-type]
        isolation_level=0,  # type: ignore[arg-type]
        session_id=0,  # type: ignore[arg-type]
        session_epoch=-1,  # type: ignore[arg-type]
        topics=(
            FetchTopic(
                topic=SHARE_STATE_TOPIC,  # type: ignore[arg-type]
                partitions=(
                    FetchPartition(
                        partition=partition,  # type: ignore[arg-type]
                        current_leader_epoch=-1,  # type: ignore[arg-type]
                        fetch_offset=offset,  # type: ignore[arg-type]
                        last_fetched_epoch=-1,  # type: ignore[arg-type]
                        log_start_offset=-1,  # type: ignore[arg-type]
                        partition_max_bytes=1_000_000,  # type: ignore[arg-type]
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    (topic,) = call(bootstrap, request).responses
    (answer,) = topic.partitions
    return int(answer.error_code)


# --------------------------------------------------------------------------- cold snapshots


def test_an_idle_share_partition_gets_the_same_state_again_after_the_cold_interval(
    unique: str,
) -> None:
    interval_ms = 300
    group, topic = f"cold-{unique}", f"cold-{unique}"
    # Every write a snapshot: on a loaded machine the share-partition may sit idle for
    # the interval before the consumer's acknowledgements, and the cold snapshot then
    # restating its initial state makes the shard quiet (every state cold) -- as in
    # Kafka, acknowledgements written as updates after it would never be restated.
    # A write's own snapshot (create = write timestamp) ends that quiet.
    config = {COLD_MS: str(interval_ms), PER_SNAPSHOT: "0"}
    with SandboxThread(settings=SETTINGS, config=config) as sandbox:
        run_scenario(sandbox.bootstrap, topic, group)

        def cold_snapshot() -> tuple[Partition, int] | None:
            """A cold snapshot restating the consumer's state (not an earlier one that
            restated the initial state)."""
            for records in read_state_topic(sandbox.bootstrap).of_group(group).values():
                for offset, record in sorted(records.items()):
                    value = record.value
                    if (
                        isinstance(value, ShareSnapshotValue)
                        and value.create_timestamp != value.write_timestamp
                        and _acknowledged_before(records, offset)
                    ):
                        return records, offset
            return None

        records, offset = wait_for(cold_snapshot, timeout=30, what="a cold snapshot")
    cold = records[offset].value
    assert isinstance(cold, ShareSnapshotValue)
    (before,) = replay({o: r for o, r in records.items() if o < offset}).values()
    assert cold.snapshot_epoch == before.snapshot_epoch + 1
    assert cold.create_timestamp == before.create_timestamp
    assert cold.write_timestamp >= before.write_timestamp + interval_ms
    assert what_it_says(SharePartitionState.from_snapshot(cold)) == what_it_says(before)
    # the state it restates is the consumer's: everything acknowledged, one record archived
    assert before.start_offset >= 0 and before.delivery_complete_count != 0


def _acknowledged_before(records: Partition, offset: int) -> bool:
    """Whether the state before ``offset`` is past the consumer's acknowledgements."""
    (before,) = replay({o: r for o, r in records.items() if o < offset}).values()
    return before.start_offset >= 0 and before.delivery_complete_count != 0


KEY_A = SharePartitionKey("group-a", uuid.UUID(int=1), 0)
KEY_B = SharePartitionKey("group-b", uuid.UUID(int=2), 0)


def _coordinator(clock: list[int]) -> ShareCoordinatorState:
    coordinator = ShareCoordinatorState(clock=lambda: clock[0])
    for key in (KEY_A, KEY_B):
        coordinator.apply(coordinator.initialize(key, state_epoch=0, start_offset=5))
    return coordinator


def test_a_cold_pass_snapshots_only_share_partitions_whose_snapshot_is_old_enough() -> None:
    clock = [1_000]
    coordinator = _coordinator(clock)
    clock[0] = 1_299
    assert cold_snapshots(coordinator, [KEY_A, KEY_B], now=clock[0], interval_ms=300) == []
    clock[0] = 1_300
    written = cold_snapshots(coordinator, [KEY_A, KEY_B], now=clock[0], interval_ms=300)
    assert [(r.key.group_id, r.key.kind) for r in written] == [
        ("group-a", StateRecordKind.SNAPSHOT),
        ("group-b", StateRecordKind.SNAPSHOT),
    ]
    assert all(
        isinstance(r.value, ShareSnapshotValue)
        and (r.value.snapshot_epoch, r.value.create_timestamp, r.value.write_timestamp)
        == (1, 1_000, 1_300)
        for r in written
    )


def test_a_quiet_shard_is_left_alone_but_an_idle_partition_beside_a_busy_one_is_not() -> None:
    """Kafka skips the pass when every state already comes from a cold snapshot."""
    clock = [1_000]
    coordinator = _coordinator(clock)
    clock[0] = 2_000
    coordinator.apply_all(cold_snapshots(coordinator, [KEY_A, KEY_B], now=2_000, interval_ms=300))
    clock[0] = 3_000
    assert cold_snapshots(coordinator, [KEY_A, KEY_B], now=3_000, interval_ms=300) == []
    # B is reset (a fresh snapshot: create == write): the shard is no longer quiet, and
    # A, idle all along, is restated again.
    coordinator.apply(coordinator.initialize(KEY_B, state_epoch=1, start_offset=9))
    clock[0] = 3_100
    (again,) = cold_snapshots(coordinator, [KEY_A, KEY_B], now=3_100, interval_ms=300)
    assert again.key.group_id == "group-a"
    assert isinstance(again.value, ShareSnapshotValue)
    assert (again.value.snapshot_epoch, again.value.write_timestamp) == (2, 3_100)


def test_a_cold_snapshot_folds_the_updates_since_the_last_snapshot() -> None:
    clock = [1_000]
    coordinator = _coordinator(clock)
    batch = StateBatch(5, 7, 2, 1)  # Acknowledged
    coordinator.apply(
        coordinator.write(
            KEY_A,
            start_offset=8,
            delivery_complete_count=0,
            leader_epoch=0,
            state_epoch=0,
            state_batches=[batch],
        )
    )
    expected = coordinator.state(KEY_A)
    assert expected is not None
    clock[0] = 1_500
    (cold,) = cold_snapshots(coordinator, [KEY_A], now=1_500, interval_ms=300)
    assert isinstance(cold.value, ShareSnapshotValue)
    assert what_it_says(SharePartitionState.from_snapshot(cold.value)) == what_it_says(expected)


# --------------------------------------------------------------------------- every N updates


def test_a_snapshot_follows_every_few_updates_as_configured(unique: str) -> None:
    group, topic = f"per-n-{unique}", f"per-n-{unique}"
    with SandboxThread(settings=SETTINGS, config={PER_SNAPSHOT: "2"}) as sandbox:
        run_scenario(sandbox.bootstrap, topic, group)
        (records,) = read_state_topic(sandbox.bootstrap).of_group(group).values()
    kinds = "".join(
        "S" if records[o].key.kind is StateRecordKind.SNAPSHOT else "U" for o in sorted(records)
    )
    # An initial snapshot, then never more than three updates in a row (Kafka 4.2.0
    # counts the first update after the initial snapshot as 0) and more snapshots.
    assert kinds.startswith("S") and kinds.count("S") >= 3, kinds
    assert "UUUU" not in kinds, kinds
    snapshots = [r.value for r in records.values() if isinstance(r.value, ShareSnapshotValue)]
    assert [s.snapshot_epoch for s in snapshots] == list(range(len(snapshots)))
    assert all(s.create_timestamp == s.write_timestamp for s in snapshots)  # none is cold


# --------------------------------------------------------------------------- pruning


def test_snapshot_offsets_give_the_lowest_latest_snapshot() -> None:
    """ShareCoordinatorOffsetsManager's example: key1 at 0; key2 and key3 keep writing."""
    offsets = SnapshotOffsets()

    def snapshot(key: SharePartitionKey, offset: int, *, tombstone: bool = False) -> None:
        value = None if tombstone else ShareSnapshotValue(0, 0, 0, 0, -1, 0, 0, ())
        offsets.replayed(StateRecord(key.record_key(StateRecordKind.SNAPSHOT), value), offset)

    key3 = SharePartitionKey("group-c", uuid.UUID(int=3), 0)
    assert offsets.last_redundant_offset() is None
    snapshot(KEY_A, 0)
    assert offsets.last_redundant_offset() is None  # 0: nothing to delete
    snapshot(KEY_B, 1)
    snapshot(key3, 2)
    snapshot(KEY_B, 3)
    assert offsets.last_redundant_offset() is None  # KEY_A's only snapshot holds it at 0
    snapshot(KEY_A, 4)
    assert offsets.last_redundant_offset() == 2
    update = StateRecord(KEY_A.record_key(StateRecordKind.UPDATE), None)
    offsets.replayed(update, 5)  # updates never move it
    assert offsets.last_redundant_offset() == 2
    snapshot(key3, 6, tombstone=True)  # counts once, then key3 is forgotten
    assert offsets.last_redundant_offset() == 3
    snapshot(KEY_B, 7)
    assert offsets.last_redundant_offset() == 4
    snapshot(KEY_A, 8)  # the tombstone at 6 no longer holds anything back
    assert offsets.last_redundant_offset() == 7


@dataclass(frozen=True)
class Pruned:
    """One group's state topic before pruning, after it, and after a restart."""

    group: str
    before: StateTopic
    after: StateTopic
    restarted: StateTopic
    windows_before: list[Any]
    windows_after: list[Any]
    fetch_at_zero: dict[int, int]


@pytest.fixture(scope="module")
def pruned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pruned]:
    """A scenario with a snapshot every 2 updates, then restarts of its --data-dir.

    First without pruning (the whole history is read), then with a 100 ms prune
    interval until the log start moves, then once more without pruning.
    """
    data_dir = tmp_path_factory.mktemp("pruned-data")
    profiles = tmp_path_factory.mktemp("profiles") / "profiles.toml"
    unique = uuid.uuid4().hex[:8]
    group, topic = f"prune-{unique}", f"prune-{unique}"
    config = {PER_SNAPSHOT: "2"}
    with SandboxThread(data_dir=data_dir, settings=SETTINGS, config=config) as sandbox:
        run_scenario(sandbox.bootstrap, topic, group)
        before = read_state_topic(sandbox.bootstrap)
        windows_before = inflight_windows(sandbox.bootstrap, group, profiles)
    mine = before.of_group(group)
    with SandboxThread(
        data_dir=data_dir, settings=SETTINGS, config={**config, PRUNE_MS: "100"}
    ) as sandbox:

        def moved() -> StateTopic | None:
            read = read_state_topic(sandbox.bootstrap)
            return read if all(read.log_start[p] > 0 for p in mine) else None

        after = wait_for(moved, timeout=30, what="the log start offset moved")
        windows_after = inflight_windows(sandbox.bootstrap, group, profiles)
        fetch_at_zero = {p: fetch_error(sandbox.bootstrap, p, 0) for p in mine}
    with SandboxThread(data_dir=data_dir, settings=SETTINGS) as sandbox:
        restarted = read_state_topic(sandbox.bootstrap)
    yield Pruned(group, before, after, restarted, windows_before, windows_after, fetch_at_zero)


def test_pruning_moves_the_log_start_to_the_oldest_latest_snapshot(pruned: Pruned) -> None:
    mine = pruned.before.of_group(pruned.group)
    assert mine and all(pruned.before.log_start[p] == 0 for p in mine)
    for partition, records in mine.items():
        latest: dict[SharePartitionKey, int] = {}
        for offset in sorted(records):
            if records[offset].key.kind is StateRecordKind.SNAPSHOT:
                latest[SharePartitionKey.of(records[offset].key)] = offset
        assert pruned.after.log_start[partition] == min(latest.values()) > 0
        # what is left is exactly the tail of what was there
        tail = {o: r for o, r in records.items() if o >= pruned.after.log_start[partition]}
        assert pruned.after.records[partition] == tail


def test_reading_from_the_beginning_starts_at_a_snapshot_and_replays_the_same_state(
    pruned: Pruned,
) -> None:
    for partition, records in pruned.before.of_group(pruned.group).items():
        left = pruned.after.records[partition]
        first = left[min(left)]
        assert min(left) == pruned.after.log_start[partition]
        assert first.key.kind is StateRecordKind.SNAPSHOT and first.value is not None
        assert replay(left) == replay(records)


def test_fetch_below_the_log_start_is_offset_out_of_range(pruned: Pruned) -> None:
    assert pruned.fetch_at_zero
    assert set(pruned.fetch_at_zero.values()) == {ErrorCode.offset_out_of_range}


def test_inflight_shows_the_same_window_after_pruning(pruned: Pruned) -> None:
    ((_, _, window),) = pruned.windows_before
    assert window  # the consumer's acknowledgements are there to compare
    assert pruned.windows_after == pruned.windows_before


def test_data_dir_keeps_the_pruned_log_start_across_a_restart(pruned: Pruned) -> None:
    for partition in pruned.before.of_group(pruned.group):
        assert pruned.restarted.log_start[partition] == pruned.after.log_start[partition] > 0
        assert pruned.restarted.records[partition] == pruned.after.records[partition]
