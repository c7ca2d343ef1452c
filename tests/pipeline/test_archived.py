"""The archived offsets and their source records (`pipeline.archived`) on small hand-built
DataFrames (`tests.pipeline.story`)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.pipeline.archived import (
    ARCHIVED_OFFSETS_SCHEMA,
    ARCHIVED_SCHEMA,
    archived_offsets,
    archived_records,
)
from kshare_cli.pipeline.deliveries import deliveries
from kshare_cli.state.records import StateRecord
from tests.pipeline.story import (
    ACKNOWLEDGED,
    ARCHIVED,
    encoded,
    frame,
    golden_44_rows,
    golden_44_time,
    golden_44_topic_names,
    kafka_rows,
    snapshot,
    snapshot_key,
    time_at,
    topic_names,
    update,
    update_key,
)

# --------------------------------------------------------------------------- archived


def test_archived_records_join_the_source_records(spark: SparkSession) -> None:
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 1, ACKNOWLEDGED, 1))),
            StateRecord(update_key("g", 0), update(-1, (2, 3, ARCHIVED, 5), (4, 4, ARCHIVED, 1))),
            StateRecord(update_key("g", 0), update(5, (5, 5, ARCHIVED, 2))),
        ),
        state_partition=0,
    )
    source = frame(
        spark,
        [
            (
                f"k{offset}".encode(),
                f"v{offset}".encode(),
                "orders",
                0,
                offset,
                time_at(offset),
                0,
                [["h", f"x{offset}".encode()]] if offset % 2 else None,
            )
            # Offset 4 is gone (retention): still reported, without its record.
            for offset in (0, 1, 2, 3, 5)
        ],
    )
    ranges = deliveries(frame(spark, rows))

    offsets = archived_offsets(ranges)
    result = archived_records(offsets, topic_names(spark), source)

    assert offsets.schema == ARCHIVED_OFFSETS_SCHEMA
    assert result.schema == ARCHIVED_SCHEMA
    archived = sorted(result.collect(), key=lambda row: row["offset"])
    assert [
        (
            row["topic"],
            row["partition"],
            row["offset"],
            row["delivery_count"],
            row["archived_at"],
            row["record_found"],
            row["key"],
            row["value"],
            None if row["headers"] is None else [tuple(header) for header in row["headers"]],
        )
        for row in archived
    ] == [
        ("orders", 0, 2, 5, time_at(2), True, b"k2", b"v2", None),
        ("orders", 0, 3, 5, time_at(2), True, b"k3", b"v3", [("h", b"x3")]),
        ("orders", 0, 4, 1, time_at(2), False, None, None, None),
        ("orders", 0, 5, 2, time_at(3), True, b"k5", b"v5", [("h", b"x5")]),
    ]
    assert {row["group_id"] for row in archived} == {"g"}
    assert archived_records(offsets, topic_names(spark), None).filter("record_found").count() == 0


def test_archiving_then_archived_is_one_record_and_archiving_left_behind_is_reported_so(
    spark: SparkSession,
) -> None:
    """Kafka 4.4 persists a dead-lettered record twice, ARCHIVING (3) then ARCHIVED (4): one
    archived record, dated by the ARCHIVED write. A state 3 left behind (the broker stopped
    between the two writes) is reported as archiving, never as delivered; acknowledged
    offsets are not reported."""
    archiving = int(DeliveryState.ARCHIVING)
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0)),
            StateRecord(update_key("g", 0), update(-1, (0, 0, ACKNOWLEDGED, 1))),
            StateRecord(update_key("g", 0), update(-1, (1, 1, archiving, 1))),
            StateRecord(update_key("g", 0), update(-1, (1, 1, ARCHIVED, 1))),
            StateRecord(update_key("g", 0), update(-1, (2, 2, archiving, 5))),
        ),
        state_partition=0,
    )
    ranges = deliveries(frame(spark, rows))

    result = archived_records(archived_offsets(ranges), topic_names(spark), None)

    assert sorted(
        (
            row["offset"],
            row["delivery_count"],
            row["state"],
            row["archiving_at"],
            row["archived_at"],
        )
        for row in result.collect()
    ) == [
        # When it became ARCHIVING, and when ARCHIVED (the DLQ write done).
        (1, 1, "archived", time_at(2), time_at(3)),
        # Not ARCHIVED yet: no archived time, its ARCHIVING time.
        (2, 5, "archiving", time_at(4), None),
    ]


def _golden_archived(
    spark: SparkSession, rows: list[tuple[object, ...]]
) -> list[tuple[object, ...]]:
    ranges = deliveries(frame(spark, rows), group_ids=("golden-dg",))
    result = archived_records(archived_offsets(ranges), golden_44_topic_names(spark), None)
    return sorted(
        (
            row["topic"],
            row["partition"],
            row["offset"],
            row["delivery_count"],
            row["state"],
            row["archiving_at"],
            row["archived_at"],
        )
        for row in result.collect()
    )


def test_kafka_44s_dead_lettered_records_give_their_archiving_and_archived_times(
    spark: SparkSession,
) -> None:
    """Scenario D on a real Kafka 4.4 broker: each of golden-dg's three dead-lettered records
    once, when it became ARCHIVING (the update before the DLQ write) and when ARCHIVED."""
    at = golden_44_time

    assert _golden_archived(spark, golden_44_rows()) == [
        ("golden-d", 0, 4, 1, "archived", at(6, 1), at(6, 2)),
        ("golden-d", 1, 3, 1, "archived", at(5, 1), at(5, 2)),
        ("golden-d", 1, 5, 5, "archived", at(5, 6), at(5, 7)),
    ]


def test_a_recorded_archiving_left_behind_is_archiving_without_an_archived_time(
    spark: SparkSession,
) -> None:
    """The same records as if the broker had stopped between p1 o5's two writes (its ARCHIVED
    update, state partition 5 offset 7, never written)."""
    rows = golden_44_rows(keep=lambda partition, offset: (partition, offset) != (5, 7))

    assert _golden_archived(spark, rows)[-1] == (
        "golden-d",
        1,
        5,
        5,
        "archiving",
        golden_44_time(5, 6),
        None,
    )
