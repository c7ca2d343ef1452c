"""Which share-partitions' history the records read hold (`pipeline.history`) on small
hand-built DataFrames (`tests.pipeline.story`)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from kshare_cli.pipeline.history import state_history
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import StateRecord
from tests.pipeline.story import (
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
        # 1: the earliest record left is a cold snapshot (epoch 4): pruned before it.
        *kafka_rows(
            encoded(StateRecord(snapshot_key("g", 1), snapshot(3, snapshot_epoch=4))),
            state_partition=2,
            first_offset=30,
        ),
        # 2: an update first: its snapshot is gone.
        *kafka_rows(
            encoded(StateRecord(update_key("g", 2), update(-1, (0, 0, AVAILABLE, 1)))),
            state_partition=3,
        ),
        # 3 and 4 share state-topic partition 5, whose records 42..49 were never read:
        # 3 began before the gap, 4 after it (an epoch-0 snapshot: nothing of it was lost).
        *kafka_rows(encoded(StateRecord(snapshot_key("g", 3), snapshot(0))), 5, 40),
        *kafka_rows(encoded(StateRecord(snapshot_key("g", 4), snapshot(0))), 5, 50),
        # Another group's pruned history is not this audit's.
        *kafka_rows(encoded(StateRecord(snapshot_key("h", 9), snapshot(0, snapshot_epoch=7))), 6),
    ]

    result = state_history(frame(spark, rows), group_ids=("g",), gaps={5: 50})

    assert _history(result) == [
        (0, 1, 10, time_at(0), True, None),
        (1, 2, 30, time_at(0), False, "pruned"),
        (2, 3, 0, time_at(0), False, "pruned"),
        (3, 5, 40, time_at(0), False, "gap"),
        (4, 5, 50, time_at(0), True, None),
    ]
    assert {row["topic_id"] for row in result.collect()} == {kafka_uuid(TOPIC)}
