"""Each share-partition's pass without Spark's exchange (`state_records.per_share_partition`
with whole_state_partitions): where every input partition holds whole state-topic partitions,
as the audit's own read of the state topic does, the Python workers split their partition's
records by share-partition, and the timeline, deliveries and history rows are exactly those
Spark's grouping gives."""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession

from kshare_cli.pipeline.batch import BatchAudit, GroupState, audit_state
from kshare_cli.pipeline.deliveries import deliveries
from kshare_cli.pipeline.history_coverage import state_history
from kshare_cli.pipeline.jobs import AuditScope
from kshare_cli.pipeline.models import AuditJob
from kshare_cli.pipeline.state_records import share_partition_tables
from kshare_cli.pipeline.timeline import replay_states
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.partitioning import state_partition_for
from kshare_cli.state.records import StateBatch, StateRecord, encode_record
from kshare_cli.state.replay import SharePartitionKey
from tests.pipeline.story import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    EPOCH_MS,
    OTHER_TOPIC,
    TOPIC,
    frame,
    kafka_rows,
    story_rows,
)

STATE_PARTITIONS = 5


def _coordinator_log(seed: int) -> list[tuple[SharePartitionKey, StateRecord]]:
    """A share coordinator's writes over eight share-partitions of two groups (not the
    story's), interleaved, with snapshots every few updates and start offsets that move on."""
    coordinator = ShareCoordinatorState(updates_per_snapshot=4, clock=lambda: EPOCH_MS)
    chooser = random.Random(seed)
    keys = [
        SharePartitionKey(group, topic, partition)
        for group in ("g", "other")
        for topic in (TOPIC, OTHER_TOPIC)
        for partition in (2, 3)
    ]
    log: list[tuple[SharePartitionKey, StateRecord]] = []

    def append(key: SharePartitionKey, record: StateRecord | None) -> None:
        if record is not None:
            coordinator.apply(record)
            log.append((key, record))

    for key in keys:
        append(key, coordinator.initialize(key, state_epoch=0, start_offset=0))
    for _ in range(240):
        key = chooser.choice(keys)
        current = coordinator.state(key)
        assert current is not None
        first = current.start_offset + chooser.randrange(0, 6)
        last = first + chooser.randrange(0, 4)
        state = chooser.choice([AVAILABLE, ACKNOWLEDGED, ARCHIVED])
        append(
            key,
            coordinator.write(
                key,
                start_offset=first if chooser.random() < 0.2 else -1,
                delivery_complete_count=chooser.randrange(0, 9),
                leader_epoch=0,
                state_epoch=0,
                state_batches=[StateBatch(first, last, state, chooser.randrange(1, 5))],
            ),
        )
    return log


def _log_rows(seed: int) -> list[tuple[object, ...]]:
    """The log as the Kafka source reads it: each record in the state-topic partition Kafka
    puts its share-partition in (past the story's), at that partition's next offset."""
    by_partition: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    for key, record in _coordinator_log(seed):
        by_partition.setdefault(10 + state_partition_for(key, STATE_PARTITIONS), []).append(
            encode_record(record)
        )
    assert len(by_partition) > 1
    rows = [
        row
        for partition, records in sorted(by_partition.items())
        for row in kafka_rows(records, state_partition=partition)
    ]
    random.Random(seed).shuffle(rows)
    return rows


def _records(spark: SparkSession) -> DataFrame:
    """The coordinator's log and the story (a truncated record, a tombstone, a key that does
    not decode), in input partitions that each hold whole state-topic partitions."""
    records = frame(spark, _log_rows(3) + story_rows())
    return records.repartition(4, "partition")


def _sorted_rows(result: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in result.collect()), key=repr)


# --------------------------------------------------------------------------- splitting


def _batch(rows: list[tuple[int, int, bytes]]) -> Any:
    """(state_partition, state_offset, key) rows as `share_partition_records` gives them,
    without the share-partition column."""
    return pa.RecordBatch.from_pydict(
        {
            "state_partition": pa.array([row[0] for row in rows], pa.int32()),
            "state_offset": pa.array([row[1] for row in rows], pa.int64()),
            "state_timestamp": pa.array([row[1] for row in rows], pa.timestamp("us", tz="UTC")),
            "key": pa.array([row[2] for row in rows], pa.binary()),
            "value": pa.array([b"v%d" % row[1] for row in rows], pa.binary()),
        }
    )


def test_a_partitions_records_split_into_share_partitions_in_log_order() -> None:
    """A snapshot's key and an update's name the same share-partition (the key without its
    type): one table each, its records in state-topic order, whatever order they came in."""
    snapshot, update = b"\x00\x00", b"\x00\x01"
    batches = [
        _batch([(7, 5, update + b"A"), (3, 2, snapshot + b"B"), (7, 1, snapshot + b"A")]),
        _batch([]),
        _batch([(3, 4, update + b"B"), (7, 3, update + b"A"), (7, 2, update + b"C")]),
    ]

    tables = list(share_partition_tables(batches))

    assert [
        (
            table.column("key").to_pylist(),
            table.column("state_partition").to_pylist(),
            table.column("state_offset").to_pylist(),
            table.column("value").to_pylist(),
        )
        for table in tables
    ] == [
        (
            [snapshot + b"A", update + b"A", update + b"A"],
            [7, 7, 7],
            [1, 3, 5],
            [b"v1", b"v3", b"v5"],
        ),
        ([snapshot + b"B", update + b"B"], [3, 3], [2, 4], [b"v2", b"v4"]),
        ([update + b"C"], [7], [2], [b"v2"]),
    ]
    assert tables[0].column_names == [
        "state_partition",
        "state_offset",
        "state_timestamp",
        "key",
        "value",
    ]
    assert list(share_partition_tables([_batch([])])) == []


# --------------------------------------------------------------------------- same rows


def _both(
    spark: SparkSession, transform: Callable[..., DataFrame], **options: Any
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    records = _records(spark)
    grouped = transform(records, **options)
    split = transform(records, whole_state_partitions=True, **options)
    return _sorted_rows(grouped), _sorted_rows(split)


def test_the_replay_without_an_exchange_gives_the_grouped_rows(spark: SparkSession) -> None:
    grouped, split = _both(spark, replay_states, group_ids=("g",))

    assert split == grouped
    # Both groups' share-partitions are there without the filter, every record a row.
    assert len(grouped) == len({(row[0], row[1]) for row in grouped}) > 100
    unfiltered, unfiltered_split = _both(spark, replay_states, with_batches=True)
    assert unfiltered_split == unfiltered
    assert {row[3] for row in unfiltered} == {"g", "other"}


def test_the_deliveries_without_an_exchange_give_the_grouped_rows(spark: SparkSession) -> None:
    grouped, split = _both(spark, deliveries, group_ids=("g",), gaps={3: 41})

    assert split == grouped
    assert len({(row[1], row[2]) for row in grouped}) > 2
    since, since_split = _both(spark, deliveries, since_ms=EPOCH_MS + 100_000)
    assert since_split == since


def test_the_undecoded_records_are_counted_once_without_an_exchange(spark: SparkSession) -> None:
    records = _records(spark)
    counts = []
    for whole in (False, True):
        corrupt = spark.sparkContext.accumulator(0)
        deliveries(records, group_ids=("g",), corrupt=corrupt, whole_state_partitions=whole).count()
        counts.append(corrupt.value)

    assert counts == [1, 1]


def test_the_history_without_an_exchange_gives_the_grouped_rows(spark: SparkSession) -> None:
    grouped, split = _both(spark, state_history, gaps={3: 41})

    assert split == grouped
    assert len(grouped) == 10  # eight of the coordinator's share-partitions, two of the story


def test_an_audit_of_whole_state_partitions_gives_the_same_result(spark: SparkSession) -> None:
    """The batch audit as it runs on its own read of the state topic: every job's rows, the
    notes and the history are what the grouped passes give."""
    audit = BatchAudit(
        job=AuditJob.TIMELINE,
        scope=AuditScope("g", read_source=False),
        report=True,
        delivery_limit=5,
    )
    records = _records(spark)

    grouped, _ = audit_state(spark, audit, GroupState(records))
    split, _ = audit_state(spark, audit, GroupState(records, whole_state_partitions=True))

    assert split == grouped
    assert len(grouped.timeline) > 100
    assert grouped.deliveries
    assert grouped.notes


def _plan(result: DataFrame) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result.explain()
    return printed.getvalue()


def test_whole_state_partitions_need_no_exchange_by_share_partition(spark: SparkSession) -> None:
    """The split runs in the Python workers of the input's own partitions: the only exchange
    left in the plan is the test's own repartition by state-topic partition."""
    records = _records(spark)

    grouped = _plan(replay_states(records))
    split = _plan(replay_states(records, whole_state_partitions=True))

    assert "FlatMapGroupsInArrow" in grouped
    assert grouped.count("Exchange hashpartitioning") == 2
    assert "FlatMapGroupsInArrow" not in split
    assert "MapInArrow" in split
    assert split.count("Exchange hashpartitioning") == 1
    assert "Exchange hashpartitioning(partition" in split
