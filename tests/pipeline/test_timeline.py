"""The timeline's replay and lag (`pipeline.timeline`) on small hand-built DataFrames
(`tests.pipeline.story`)."""

from __future__ import annotations

import datetime
import random

from pyspark.sql import DataFrame, SparkSession

from kshare_cli.pipeline.timeline import (
    REPLAYED_SCHEMA,
    REPLAYED_WITH_BATCHES_SCHEMA,
    SOURCE_OFFSETS_SCHEMA,
    TIMELINE_SCHEMA,
    replay_states,
    timeline,
)
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import StateBatch, StateRecord
from kshare_cli.state.replay import SharePartitionKey, ShareStateReplayer
from tests.pipeline.story import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    EPOCH_MS,
    TOPIC,
    batches_of,
    encoded,
    frame,
    golden_44_rows,
    golden_44_topic_names,
    kafka_rows,
    snapshot,
    snapshot_key,
    story_rows,
    time_at,
    topic_names,
    update,
    update_key,
)

# --------------------------------------------------------------------------- replay


def test_replay_gives_the_state_after_every_record_in_log_order(spark: SparkSession) -> None:
    records = frame(spark, story_rows())
    assert replay_states(records).schema == REPLAYED_SCHEMA
    replayed = replay_states(records, with_batches=True)
    assert replayed.schema == REPLAYED_WITH_BATCHES_SCHEMA
    rows = sorted(replayed.collect(), key=lambda row: (row["partition"], row["state_offset"]))
    assert {row["group_id"] for row in rows} == {"g"}

    first = [row for row in rows if row["partition"] == 0]
    assert [row["state_offset"] for row in first] == [100, 101, 102, 103, 104, 105]
    summary = [
        (
            row["start_offset"],
            row["end_offset"],
            row["available"],
            row["acknowledged"],
            row["archived"],
            row["unrecorded"],
            row["max_delivery_count"],
            row["corrupt_records"],
        )
        for row in first
    ]
    assert summary == [
        (0, 0, 0, 0, 0, 0, 0, 0),  # initialised, nothing in flight
        (0, 5, 5, 0, 0, 0, 1, 0),  # 0-4 released once
        (3, 5, 2, 0, 0, 0, 1, 0),  # 0-2 done, start offset 3
        (3, 5, 2, 0, 0, 0, 1, 1),  # the corrupt update: state unchanged, counted
        (3, 5, 1, 0, 1, 0, 2, 1),  # 3 archived, 4 available again
        (5, 5, 0, 0, 0, 0, 0, 1),  # 4 acknowledged: all done
    ]
    corrupt = first[3]
    assert corrupt["error"] == "value: update value truncated (9 bytes)"
    assert corrupt["kind"] == "update" and corrupt["has_state"]
    assert batches_of(first[4], "state_batches") == [(3, 3, 4, 2), (4, 4, 0, 2)]
    assert [row["delivery_complete_count"] for row in first] == [0, 0, 0, 0, 0, 0]

    second = [row for row in rows if row["partition"] == 1]
    assert [(row["state_offset"], row["has_state"], row["tombstone"]) for row in second] == [
        (40, True, False),
        (41, False, True),
    ]
    assert second[0]["available"] == 2 and second[0]["max_delivery_count"] == 3
    assert second[1]["start_offset"] is None and second[1]["state_batches"] is None


def test_replay_agrees_with_the_single_process_replay(spark: SparkSession) -> None:
    """The coordinator's own records, many writes over three share-partitions: the last row
    of every share-partition is the state `ShareStateReplayer` ends with."""
    coordinator = ShareCoordinatorState(updates_per_snapshot=5)
    chooser = random.Random(11)
    share_partitions = [SharePartitionKey("audit", TOPIC, p) for p in range(3)]
    log: list[StateRecord] = []

    def append(record: StateRecord | None) -> None:
        if record is not None:
            coordinator.apply(record)
            log.append(record)

    for share_partition in share_partitions:
        append(coordinator.initialize(share_partition, state_epoch=0, start_offset=0))
    for _ in range(120):
        share_partition = chooser.choice(share_partitions)
        current = coordinator.state(share_partition)
        assert current is not None
        first = current.start_offset + chooser.randrange(0, 6)
        last = first + chooser.randrange(0, 4)
        state = chooser.choice([AVAILABLE, ACKNOWLEDGED, ARCHIVED])
        advance = chooser.random() < 0.2
        append(
            coordinator.write(
                share_partition,
                start_offset=first if advance else -1,
                delivery_complete_count=chooser.randrange(0, 9),
                leader_epoch=0,
                state_epoch=0,
                state_batches=[StateBatch(first, last, state, chooser.randrange(1, 5))],
            )
        )
    reference = ShareStateReplayer()
    reference.apply_all(log)

    replayed = replay_states(
        frame(spark, kafka_rows(encoded(*log), state_partition=0)),
        with_batches=True,
    )
    last_rows = {
        row["partition"]: row
        for row in sorted(replayed.collect(), key=lambda row: row["state_offset"])
    }

    assert sorted(last_rows) == [0, 1, 2]
    for share_partition in share_partitions:
        expected = reference.state(share_partition)
        assert expected is not None
        row = last_rows[share_partition.partition]
        assert row["start_offset"] == expected.start_offset
        assert row["delivery_complete_count"] == expected.delivery_complete_count
        assert row["snapshot_epoch"] == expected.snapshot_epoch
        assert batches_of(row, "state_batches") == [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in expected.state_batches
        ]


# --------------------------------------------------------------------------- timeline


def _positions(spark: SparkSession, records: list[tuple[int, int, int]]) -> DataFrame:
    """Source records (partition, offset, milliseconds after EPOCH_MS) of topic orders."""
    return frame(
        spark,
        [
            (
                None,
                b"v",
                "orders",
                partition,
                offset,
                datetime.datetime.fromtimestamp((EPOCH_MS + at) / 1000),
                0,
                None,
            )
            for partition, offset, at in records
        ],
    )


def _timeline_rows(result: DataFrame) -> list[tuple[object, ...]]:
    return [
        (
            row["partition"],
            row["state_offset"],
            row["record"],
            row["start_offset"],
            row["end_offset"],
            row["log_end_offset"],
            row["lag"],
            row["lag_basis"],
        )
        for row in sorted(result.collect(), key=lambda row: (row["partition"], row["state_offset"]))
    ]


def test_timeline_dates_the_log_end_offset_by_record_timestamps(spark: SparkSession) -> None:
    records = frame(spark, story_rows())
    # Offsets 0-4 were produced before the first state record, offset 5 between the
    # state records at positions 4 (E+4 s) and 5 (E+5 s); 6 is the log end now.
    positions = _positions(spark, [(0, offset, -1000) for offset in range(5)] + [(0, 5, 4500)])
    offsets = spark.createDataFrame([("orders", 0, 6, 0)], SOURCE_OFFSETS_SCHEMA)

    result = timeline(
        replay_states(records),
        topic_names(spark),
        source_offsets=offsets,
        source_positions=positions,
    )

    assert result.schema == TIMELINE_SCHEMA
    by_time = "record_timestamps"
    assert _timeline_rows(result) == [
        (0, 100, "snapshot", 0, 0, 5, 5, by_time),
        (0, 101, "update", 0, 5, 5, 5, by_time),
        (0, 102, "update", 3, 5, 5, 2, by_time),
        (0, 103, "corrupt", 3, 5, 5, 2, by_time),
        (0, 104, "update", 3, 5, 5, 2, by_time),
        # The last state is the state now: today's log end offset, describe's lag.
        (0, 105, "update", 5, 5, 6, 1, "end_offsets"),
        # Partition 1's source was not read: no log end offset to date its state by.
        (1, 40, "snapshot", 10, 12, None, None, None),
        (1, 41, "tombstone", None, None, None, None, None),
    ]
    rows = {row["state_offset"]: row for row in result.collect()}
    assert rows[100]["topic"] == "orders" and rows[100]["topic_id"] == kafka_uuid(TOPIC)
    assert rows[104]["time"] == time_at(4)
    assert (rows[104]["available"], rows[104]["archived"], rows[104]["max_delivery_count"]) == (
        1,
        1,
        2,
    )


def test_timeline_lag_is_unknown_where_retention_took_the_records(spark: SparkSession) -> None:
    """Offsets below 3 are gone: before the first remaining record the log end offset is
    only known where the window itself proves it reached that far."""
    records = frame(spark, story_rows())
    positions = _positions(spark, [(0, 3, 1500), (0, 4, 1500), (0, 5, 4500)])
    offsets = spark.createDataFrame([("orders", 0, 6, 3)], SOURCE_OFFSETS_SCHEMA)

    result = timeline(
        replay_states(records),
        topic_names(spark),
        source_offsets=offsets,
        source_positions=positions,
    )

    first = [row for row in _timeline_rows(result) if row[0] == 0]
    assert [row[5:] for row in first] == [
        (None, None, None),  # nothing persisted yet, records 0-2 gone: unknown
        (5, 5, "record_timestamps"),  # the window reaches offset 4: the log did too
        (5, 2, "record_timestamps"),
        (5, 2, "record_timestamps"),
        (5, 2, "record_timestamps"),
        (6, 1, "end_offsets"),
    ]


def test_timeline_without_the_source_has_only_todays_lag(spark: SparkSession) -> None:
    records = frame(spark, story_rows())
    offsets = spark.createDataFrame([("orders", 0, 9, None)], SOURCE_OFFSETS_SCHEMA)

    result = timeline(replay_states(records), topic_names(spark), source_offsets=offsets)

    assert [row[5:] for row in _timeline_rows(result) if row[0] == 0] == [
        (None, None, None)
    ] * 5 + [(9, 4, "end_offsets")]


def test_timeline_leaves_out_snapshots_that_restate_the_state(spark: SparkSession) -> None:
    """An idle share-partition is force-snapshotted every cold-snapshot interval (snapshot
    epoch + 1, a new write time, the same state): those rows are no points; a snapshot
    that changes something is one."""
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(2, (0, 1, ACKNOWLEDGED, 1))),
            StateRecord(snapshot_key("g", 0), snapshot(2, snapshot_epoch=1)),
            StateRecord(snapshot_key("g", 0), snapshot(2, snapshot_epoch=2)),
            StateRecord(snapshot_key("g", 0), snapshot(2, (2, 2, ARCHIVED, 5), snapshot_epoch=3)),
            StateRecord(snapshot_key("g", 0), snapshot(2, (2, 2, ARCHIVED, 5), snapshot_epoch=4)),
        ),
        state_partition=0,
    )
    offsets = spark.createDataFrame([("orders", 0, 3, None)], SOURCE_OFFSETS_SCHEMA)
    replayed = replay_states(frame(spark, rows))

    result = timeline(replayed, topic_names(spark), source_offsets=offsets)

    assert [
        row["state_offset"]
        for row in sorted(replayed.collect(), key=lambda row: row[1])
        if row["restated"]
    ] == [2, 3, 5]
    assert [(row[1], row[2], row[3], row[5], row[6], row[7]) for row in _timeline_rows(result)] == [
        (0, "snapshot", 0, None, None, None),
        (1, "update", 2, None, None, None),
        # The last point is the state now, dated when it last changed, with today's lag.
        (4, "snapshot", 2, 3, 1, "end_offsets"),
    ]


def test_timeline_counts_kafka_44s_archiving_apart_from_archived(spark: SparkSession) -> None:
    """golden-dg's golden-d:1 on a real Kafka 4.4 broker (state partition 5): o3 ARCHIVING in
    the first update and ARCHIVED in the next; o5 released four times, ARCHIVING at its
    fifth delivery, then ARCHIVED. A record on its way to the DLQ is neither archived nor
    available; the last point's lag is describe's (LAG 0)."""
    replayed = replay_states(frame(spark, golden_44_rows()), group_ids=("golden-dg",))
    offsets = spark.createDataFrame([("golden-d", 1, 15, None)], SOURCE_OFFSETS_SCHEMA)

    result = timeline(replayed, golden_44_topic_names(spark), source_offsets=offsets)

    assert [
        (
            row["state_offset"],
            row["start_offset"],
            row["available"],
            row["acknowledged"],
            row["archiving"],
            row["archived"],
            row["lag"],
        )
        for row in sorted(result.collect(), key=lambda row: row["state_offset"])
        if row["partition"] == 1
    ] == [
        (0, -1, 0, 0, 0, 0, None),
        (1, 0, 1, 13, 1, 0, None),
        (2, 3, 1, 10, 0, 1, None),
        (3, 5, 1, 9, 0, 0, None),
        (4, 5, 1, 9, 0, 0, None),
        (5, 5, 1, 9, 0, 0, None),
        (6, 5, 0, 9, 1, 0, None),
        (7, 5, 0, 9, 0, 1, 0),
    ]
