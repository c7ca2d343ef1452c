"""Which share-partitions' history the records read hold (`pipeline.history_coverage`) on small
hand-built DataFrames (`tests.pipeline.story`)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from kshare_cli.pipeline.history_coverage import state_history
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import StateRecord
from tests.pipeline.story import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    TOPIC,
    encoded,
    frame,
    kafka_rows,
    snapshot,
    snapshot_key,
    time_at,
    update,
    update_key,
)

# --------------------------------------------------------------------------- history


def _history(result: DataFrame) -> list[tuple[object, ...]]:
    return sorted(
        (
            row["partition"],
            row["state_partition"],
            row["first_state_offset"],
            row["history_from"],
            row["history_complete"],
            row["history_missing"],
            row["unknown_first_offset"],
            row["unknown_last_offset"],
        )
        for row in result.collect()
    )


def test_state_history_says_which_share_partitions_lost_their_beginning(
    spark: SparkSession,
) -> None:
    rows = [
        # 0: from its first snapshot (epoch 0, InitializeShareGroupState) on: complete.
        *kafka_rows(
            encoded(
                StateRecord(snapshot_key("g", 0), snapshot(0)),
                StateRecord(update_key("g", 0), update(-1, (0, 0, ARCHIVED, 5))),
            ),
            state_partition=1,
            first_offset=10,
        ),
        # 1: the earliest record left is a cold snapshot (epoch 4) starting at 3: pruned
        # before it, and nothing read says what became of offsets 0-2.
        *kafka_rows(
            encoded(StateRecord(snapshot_key("g", 1), snapshot(3, snapshot_epoch=4))),
            state_partition=2,
            first_offset=30,
        ),
        # 2: an update first: its snapshot is gone. It names offset 0 and states no start
        # offset, so no offset is left unknown, only times.
        *kafka_rows(
            encoded(StateRecord(update_key("g", 2), update(-1, (0, 0, AVAILABLE, 1)))),
            state_partition=3,
        ),
        # 3 and 4 share state-topic partition 5, whose records 42..49 were never read:
        # 3 began before the gap, 4 after it (an epoch-0 snapshot: nothing of it was lost).
        # Nothing of 3 comes after the gap: every offset from its start offset 0 on may
        # have changed there.
        *kafka_rows(encoded(StateRecord(snapshot_key("g", 3), snapshot(0))), 5, 40),
        *kafka_rows(encoded(StateRecord(snapshot_key("g", 4), snapshot(0))), 5, 50),
        # Another group's pruned history is not this audit's.
        *kafka_rows(encoded(StateRecord(snapshot_key("h", 9), snapshot(0, snapshot_epoch=7))), 6),
    ]

    result = state_history(frame(spark, rows), group_ids=("g",), gaps={5: 50})

    assert _history(result) == [
        (0, 1, 10, time_at(0), True, None, None, None),
        (1, 2, 30, time_at(0), False, "pruned", 0, 2),
        (2, 3, 0, time_at(0), False, "pruned", None, None),
        (3, 5, 40, time_at(0), False, "gap", 0, None),
        (4, 5, 50, time_at(0), True, None, None, None),
    ]
    assert {row["topic_id"] for row in result.collect()} == {kafka_uuid(TOPIC)}


def test_state_history_names_the_offsets_no_record_read_knows(spark: SparkSession) -> None:
    """The range ends just below the first offset the records read speak of: the first
    stated start offset, or an offset an update before it names."""
    rows = [
        # 0: Kafka's cold snapshot starting at 15 is all that is left: 0-14 are unknown.
        *kafka_rows(
            encoded(
                StateRecord(
                    snapshot_key("g", 0), snapshot(15, (15, 16, ARCHIVED, 5), snapshot_epoch=3)
                ),
                StateRecord(update_key("g", 0), update(-1, (17, 17, ARCHIVED, 5))),
            ),
            state_partition=0,
        ),
        # 1: an update whose snapshot was pruned names 12-13, then the next snapshot starts
        # at 15: 0-11 are unknown (12-13 are what the update said).
        *kafka_rows(
            encoded(
                StateRecord(update_key("g", 1), update(-1, (12, 13, ARCHIVED, 5))),
                StateRecord(snapshot_key("g", 1), snapshot(15, snapshot_epoch=6)),
            ),
            state_partition=1,
        ),
        # 2: pruned, but the earliest snapshot still starts at 0: no offset is unknown.
        *kafka_rows(
            encoded(
                StateRecord(
                    snapshot_key("g", 2), snapshot(0, (0, 3, ARCHIVED, 5), snapshot_epoch=2)
                )
            ),
            state_partition=2,
        ),
        # 3: a capture read its start up to 5, then state-topic records 2..9 were lost;
        # the first snapshot after the gap starts at 9: 5-8 may have changed unseen.
        *kafka_rows(
            encoded(
                StateRecord(snapshot_key("g", 3), snapshot(0)),
                StateRecord(update_key("g", 3), update(5, (0, 4, ACKNOWLEDGED, 1))),
            ),
            state_partition=3,
        ),
        *kafka_rows(
            encoded(
                StateRecord(
                    snapshot_key("g", 3), snapshot(9, (9, 9, AVAILABLE, 1), snapshot_epoch=4)
                )
            ),
            state_partition=3,
            first_offset=10,
        ),
        # 4: the same gap, but the start offset had not moved: nothing unknown.
        *kafka_rows(
            encoded(
                StateRecord(snapshot_key("g", 4), snapshot(0)),
                StateRecord(update_key("g", 4), update(5, (0, 4, ACKNOWLEDGED, 1))),
            ),
            state_partition=4,
        ),
        *kafka_rows(
            encoded(StateRecord(snapshot_key("g", 4), snapshot(5, snapshot_epoch=4))),
            state_partition=4,
            first_offset=10,
        ),
    ]

    result = state_history(frame(spark, rows), group_ids=("g",), gaps={3: 10, 4: 10})

    assert [(row[0], *row[-3:]) for row in _history(result)] == [
        (0, "pruned", 0, 14),
        (1, "pruned", 0, 11),
        (2, "pruned", None, None),
        (3, "gap", 5, 8),
        (4, "gap", None, None),
    ]
