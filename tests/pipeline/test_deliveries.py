"""Delivery outcomes per offset range (`pipeline.deliveries`) on small hand-built DataFrames
(`tests.pipeline.story`), pruned histories and capture gaps included."""

from __future__ import annotations

import random

from pyspark.sql import DataFrame, SparkSession

from kshare_cli.pipeline.deliveries import DELIVERIES_SCHEMA, deliveries
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.records import DeliveryState, StateBatch, StateRecord
from kshare_cli.state.replay import SharePartitionKey
from tests.pipeline.story import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    EPOCH_MS,
    TOPIC,
    encoded,
    frame,
    golden_44_rows,
    golden_44_time,
    kafka_rows,
    snapshot,
    snapshot_key,
    story_rows,
    time_at,
    update,
    update_key,
)

# --------------------------------------------------------------------------- deliveries


def _ranges(result: DataFrame) -> list[tuple[object, ...]]:
    return sorted(
        (
            row["partition"],
            row["first_offset"],
            row["last_offset"],
            row["max_delivery_count"],
            row["final_state"],
            row["final_delivery_count"],
            row["complete"],
            row["last_changed"],
        )
        for row in result.collect()
    )


def test_deliveries_give_the_highest_count_and_last_state_per_range(spark: SparkSession) -> None:
    result = deliveries(frame(spark, story_rows()))
    assert result.schema == DELIVERIES_SCHEMA

    # Positions in the first state-topic partition: 0-2 STORY[0:3], 3 the corrupt update,
    # 4-5 STORY[3:]; the second partition's snapshot is at position 0.
    assert _ranges(result) == [
        # 0-2 were acknowledged in the very write that moved the start offset past them:
        # replay prunes them at once, the write's own batches still say what happened.
        (0, 0, 2, 1, "acknowledged", 1, True, time_at(2)),
        (0, 3, 3, 2, "archived", 2, True, time_at(4)),
        # 4: released twice, then acknowledged on its third delivery, again in the write
        # that moved the start offset to 5.
        (0, 4, 4, 3, "acknowledged", 3, True, time_at(5)),
        # The second share-partition was deleted (tombstone); what its records said stays.
        (1, 10, 11, 3, "available", 3, False, time_at(0)),
    ]
    assert {row["group_id"] for row in result.collect()} == {"g"}


def test_deliveries_count_the_records_they_could_not_decode(spark: SparkSession) -> None:
    """The truncated update is left out of the ranges and counted (the key that names no
    share-partition never reaches the grouped pass)."""
    skipped = spark.sparkContext.accumulator(0)
    result = deliveries(frame(spark, story_rows()), corrupt=skipped).persist()
    try:
        assert result.count() == 4
        assert skipped.value == 1
        assert len(result.collect()) == 4 and skipped.value == 1  # the cache, not a rerun
    finally:
        result.unpersist()


def test_deliveries_follow_kafkas_acknowledge_and_advance_in_one_write(
    spark: SparkSession,
) -> None:
    """Kafka 4.2 acknowledges 0-9 and moves the start offset to 10 in one ShareUpdate whose
    batches are [0-9 acknowledged] (the lead's example; the golden corpus writes the
    start offset of before the acknowledgement, which comes to the same)."""
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 9, AVAILABLE, 1))),
            StateRecord(update_key("g", 0), update(10, (0, 9, ACKNOWLEDGED, 2))),
        ),
        state_partition=0,
    )

    result = deliveries(frame(spark, rows))

    assert _ranges(result) == [(0, 0, 9, 2, "acknowledged", 2, True, time_at(2))]


def test_a_snapshot_restating_an_outcome_does_not_move_last_changed(spark: SparkSession) -> None:
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 1, ARCHIVED, 5), (2, 3, AVAILABLE, 1))),
            # The coordinator folds its updates into a snapshot: the same batches again,
            # except that offset 3 was delivered once more meanwhile.
            StateRecord(
                snapshot_key("g", 0),
                snapshot(0, (0, 1, ARCHIVED, 5), (2, 2, AVAILABLE, 1), (3, 3, AVAILABLE, 2)),
            ),
        ),
        state_partition=0,
    )

    result = deliveries(frame(spark, rows))

    assert _ranges(result) == [
        # Archived, and the snapshot still says so: done with, although below no start offset.
        (0, 0, 1, 5, "archived", 5, True, time_at(1)),
        (0, 2, 2, 1, "available", 1, False, time_at(1)),
        (0, 3, 3, 2, "available", 2, False, time_at(2)),
    ]


def test_a_later_lower_count_keeps_the_highest_and_takes_the_final_state(
    spark: SparkSession,
) -> None:
    """After an offset reset records are delivered afresh (count 1 again): the highest
    count reached stays, the final state and count are the last record's."""
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 3, AVAILABLE, 4))),
            StateRecord(snapshot_key("g", 0), snapshot(0, snapshot_epoch=1)),  # the reset
            StateRecord(update_key("g", 0), update(-1, (1, 2, ACKNOWLEDGED, 1))),
        ),
        state_partition=0,
    )

    result = deliveries(frame(spark, rows))

    assert _ranges(result) == [
        (0, 0, 0, 4, "available", 4, False, time_at(1)),
        (0, 1, 2, 4, "acknowledged", 1, True, time_at(3)),
        (0, 3, 3, 4, "available", 4, False, time_at(1)),
    ]


def test_deliveries_since_keep_the_outcomes_reached_since_offset_by_offset(
    spark: SparkSession,
) -> None:
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 4, ACKNOWLEDGED, 1))),
            StateRecord(update_key("g", 0), update(-1, (5, 9, ACKNOWLEDGED, 1))),
            StateRecord(update_key("g", 0), update(-1, (10, 10, ARCHIVED, 5))),
            # A snapshot restates 0-10: not a change.
            StateRecord(
                snapshot_key("g", 0), snapshot(0, (0, 9, ACKNOWLEDGED, 1), (10, 10, ARCHIVED, 5))
            ),
        ),
        state_partition=0,
    )

    everything = deliveries(frame(spark, rows))
    since = deliveries(frame(spark, rows), since_ms=EPOCH_MS + 2000)

    # Without since, 0-9 are one range however many writes acknowledged them.
    assert _ranges(everything) == [
        (0, 0, 9, 1, "acknowledged", 1, True, time_at(2)),
        (0, 10, 10, 5, "archived", 5, True, time_at(3)),
    ]
    assert _ranges(since) == [
        (0, 5, 9, 1, "acknowledged", 1, True, time_at(2)),
        (0, 10, 10, 5, "archived", 5, True, time_at(3)),
    ]


def test_deliveries_split_a_range_at_the_start_offset(spark: SparkSession) -> None:
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0, (0, 9, AVAILABLE, 2))),
            StateRecord(update_key("g", 0), update(6)),
        ),
        state_partition=0,
    )

    result = deliveries(frame(spark, rows))

    assert sorted(
        (row["first_offset"], row["last_offset"], row["complete"]) for row in result.collect()
    ) == [(0, 5, True), (6, 9, False)]


def test_complete_means_never_delivered_again(spark: SparkSession) -> None:
    """Finished ranges read complete at once, before Kafka's stored start offset moves past
    them (it trails acknowledgements); a reset's snapshot, which names none of them, makes
    the ones at or above its start offset incomplete again: Kafka delivers them again."""
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(
                update_key("g", 0),
                update(-1, (0, 3, ACKNOWLEDGED, 1), (4, 4, ARCHIVED, 5), (5, 6, AVAILABLE, 1)),
            ),
        ),
        state_partition=0,
    )
    reset = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(
                update_key("g", 0),
                update(-1, (0, 3, ACKNOWLEDGED, 1), (4, 4, ARCHIVED, 5), (5, 6, AVAILABLE, 1)),
            ),
            # Reset to offset 2 (AlterShareGroupOffsets): a snapshot without batches.
            StateRecord(snapshot_key("g", 0), snapshot(2, snapshot_epoch=1)),
            # 3 is acknowledged anew after the reset.
            StateRecord(update_key("g", 0), update(-1, (3, 3, ACKNOWLEDGED, 1))),
        ),
        state_partition=0,
    )

    finished = deliveries(frame(spark, rows))
    after_reset = deliveries(frame(spark, reset))

    assert [row[1:3] + row[4:5] + row[6:7] for row in _ranges(finished)] == [
        (0, 3, "acknowledged", True),
        (4, 4, "archived", True),
        (5, 6, "available", False),
    ]
    assert [row[1:3] + row[4:5] + row[6:7] for row in _ranges(after_reset)] == [
        (0, 1, "acknowledged", True),  # below the start offset: skipped by the reset
        (2, 2, "acknowledged", False),  # cleared by the reset: delivered again
        (3, 3, "acknowledged", True),
        (4, 4, "archived", False),
        (5, 6, "available", False),
    ]


def _archiving_ranges(result: DataFrame) -> list[tuple[object, ...]]:
    return sorted(
        (
            row["partition"],
            row["first_offset"],
            row["last_offset"],
            row["max_delivery_count"],
            row["final_state"],
            row["complete"],
            row["last_changed"],
            row["archiving_at"],
        )
        for row in result.collect()
    )


def test_kafka_44s_archiving_then_archived_keeps_when_it_became_archiving(
    spark: SparkSession,
) -> None:
    """Scenario D on a real Kafka 4.4 broker (tests/golden/kafka-4.4/state): each dead-lettered
    offset was ARCHIVING in one update and ARCHIVED in a later one; the range is archived,
    last changed at the ARCHIVED write, archiving_at the ARCHIVING one. Left behind (the
    broker stopped before p1 o5's ARCHIVED write): final, never delivered, archiving."""
    at = golden_44_time
    everything = deliveries(frame(spark, golden_44_rows()), group_ids=("golden-dg",))
    left_behind = deliveries(
        frame(spark, golden_44_rows(keep=lambda partition, offset: (partition, offset) != (5, 7))),
        group_ids=("golden-dg",),
    )

    assert _archiving_ranges(everything) == [
        (0, 0, 1, 1, "acknowledged", True, at(6, 1), None),
        (0, 2, 2, 2, "acknowledged", True, at(6, 3), None),
        (0, 3, 3, 1, "acknowledged", True, at(6, 1), None),
        (0, 4, 4, 1, "archived", True, at(6, 2), at(6, 1)),
        (0, 5, 14, 1, "acknowledged", True, at(6, 1), None),
        (1, 0, 2, 1, "acknowledged", True, at(5, 1), None),
        (1, 3, 3, 1, "archived", True, at(5, 2), at(5, 1)),
        (1, 4, 4, 1, "acknowledged", True, at(5, 1), None),
        (1, 5, 5, 5, "archived", True, at(5, 7), at(5, 6)),
        (1, 6, 14, 1, "acknowledged", True, at(5, 1), None),
    ]
    assert _archiving_ranges(left_behind)[-2] == (1, 5, 5, 5, "archiving", True, at(5, 6), at(5, 6))


def test_archiving_at_is_for_this_archiving_only(spark: SparkSession) -> None:
    """Archived directly (Kafka 4.2, no DLQ): no archiving_at. An ARCHIVING cleared by a reset
    and delivered again loses it; its next ARCHIVING (another count) has its own. A
    snapshot restating ARCHIVED keeps it; since keeps it with the outcome."""
    archiving = int(DeliveryState.ARCHIVING)
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 0, ARCHIVED, 1), (1, 2, archiving, 1))),
            StateRecord(update_key("g", 0), update(-1, (1, 1, ARCHIVED, 1))),
            StateRecord(snapshot_key("g", 0), snapshot(0, snapshot_epoch=1)),  # a reset
            StateRecord(update_key("g", 0), update(-1, (2, 2, AVAILABLE, 1))),
            StateRecord(update_key("g", 0), update(-1, (2, 2, archiving, 2))),
            StateRecord(
                snapshot_key("g", 0),
                snapshot(0, (0, 1, ARCHIVED, 1), (2, 2, archiving, 2), snapshot_epoch=2),
            ),
        ),
        state_partition=0,
    )

    result = deliveries(frame(spark, rows))
    since = deliveries(frame(spark, rows), since_ms=EPOCH_MS + 2000)

    assert _archiving_ranges(result) == [
        (0, 0, 0, 1, "archived", True, time_at(1), None),
        (0, 1, 1, 1, "archived", True, time_at(2), time_at(1)),
        (0, 2, 2, 2, "archiving", True, time_at(5), time_at(5)),
    ]
    assert _archiving_ranges(since) == _archiving_ranges(result)[1:]


def test_deliveries_of_a_share_partition_without_batches_are_empty(spark: SparkSession) -> None:
    rows = kafka_rows(encoded(StateRecord(snapshot_key("g", 0), snapshot(3))), state_partition=0)
    assert deliveries(frame(spark, rows)).collect() == []


def test_deliveries_agree_with_an_offset_by_offset_reference(spark: SparkSession) -> None:
    """Random writes of the coordinator (overlapping, out of order, snapshots folding
    updates): the ranges, spelled out per offset, are what a dictionary that simply
    remembers every mention says."""
    coordinator = ShareCoordinatorState(updates_per_snapshot=4)
    chooser = random.Random(5)
    share_partition = SharePartitionKey("audit", TOPIC, 0)
    log = [coordinator.initialize(share_partition, state_epoch=0, start_offset=0)]
    coordinator.apply(log[0])
    for _ in range(60):
        current = coordinator.state(share_partition)
        assert current is not None
        first = current.start_offset + chooser.randrange(0, 8)
        last = first + chooser.randrange(0, 5)
        record = coordinator.write(
            share_partition,
            start_offset=first if chooser.random() < 0.15 else -1,
            delivery_complete_count=0,
            leader_epoch=0,
            state_epoch=0,
            state_batches=[
                StateBatch(
                    first,
                    last,
                    chooser.choice([AVAILABLE, ACKNOWLEDGED, ARCHIVED]),
                    chooser.randrange(1, 6),
                )
            ],
        )
        coordinator.apply(record)
        log.append(record)
    expected: dict[int, tuple[int, str, int, int]] = {}
    for position, record in enumerate(log):
        value = record.value
        assert value is not None
        for batch in value.state_batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                highest, state, count, changed = expected.get(offset, (0, "", 0, position))
                name = DeliveryState(batch.delivery_state).name.lower()
                if (state, count) != (name, batch.delivery_count):
                    changed = position
                expected[offset] = (
                    max(highest, batch.delivery_count),
                    name,
                    batch.delivery_count,
                    changed,
                )

    result = deliveries(frame(spark, kafka_rows(encoded(*log), state_partition=0)))

    per_offset = {
        offset: (row["max_delivery_count"], row["final_state"], row["final_delivery_count"])
        for row in result.collect()
        for offset in range(row["first_offset"], row["last_offset"] + 1)
    }
    assert per_offset == {
        offset: (highest, state, count) for offset, (highest, state, count, _) in expected.items()
    }
    # A range's last_changed is the latest first-said time of its offsets.
    for row in result.collect():
        offsets = range(row["first_offset"], row["last_offset"] + 1)
        assert row["last_changed"] == time_at(max(expected[offset][3] for offset in offsets))


def test_deliveries_leave_the_time_of_a_pruned_history_unknown(spark: SparkSession) -> None:
    """The first record left is a cold snapshot: offsets 0-1 were archived before it, at a
    time the topic no longer holds -- never the snapshot's time. Offset 2, archived
    afterwards with the same count, keeps its own time and is not joined to them."""
    rows = kafka_rows(
        encoded(
            StateRecord(
                snapshot_key("g", 0),
                snapshot(0, (0, 1, ARCHIVED, 5), (2, 2, AVAILABLE, 4), snapshot_epoch=3),
            ),
            StateRecord(update_key("g", 0), update(-1, (2, 2, ARCHIVED, 5))),
            # The next cold snapshot restates all three.
            StateRecord(snapshot_key("g", 0), snapshot(0, (0, 2, ARCHIVED, 5), snapshot_epoch=4)),
        ),
        state_partition=0,
    )

    result = deliveries(frame(spark, rows))

    assert _ranges(result) == [
        (0, 0, 1, 5, "archived", 5, True, None),
        (0, 2, 2, 5, "archived", 5, True, time_at(1)),
    ]


def test_deliveries_after_a_gap_do_not_date_what_the_gap_held(spark: SparkSession) -> None:
    """State-topic records 2..9 were lost between a capture and the live log: what the
    first record after them says anew happened in the gap, at an unknown time."""
    rows = [
        *kafka_rows(
            encoded(
                StateRecord(snapshot_key("g", 0), snapshot(0)),
                StateRecord(update_key("g", 0), update(-1, (0, 0, ARCHIVED, 5))),
            ),
            state_partition=0,
        ),
        *kafka_rows(
            encoded(
                StateRecord(
                    snapshot_key("g", 0),
                    snapshot(0, (0, 0, ARCHIVED, 5), (1, 1, ARCHIVED, 5), snapshot_epoch=2),
                ),
                StateRecord(update_key("g", 0), update(-1, (2, 2, ARCHIVED, 5))),
            ),
            state_partition=0,
            first_offset=10,
        ),
    ]

    result = deliveries(frame(spark, rows), gaps={0: 10})

    assert _ranges(result) == [
        (0, 0, 0, 5, "archived", 5, True, time_at(1)),
        (0, 1, 1, 5, "archived", 5, True, None),
        (0, 2, 2, 5, "archived", 5, True, time_at(1)),
    ]
