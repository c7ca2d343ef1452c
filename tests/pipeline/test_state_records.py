"""Choosing, grouping and decoding the state topic's records (`pipeline.state_records`) on
small hand-built DataFrames (`tests.pipeline.story`)."""

from __future__ import annotations

import datetime

from pyspark.sql import DataFrame, SparkSession

from kshare_cli.pipeline.state_records import (
    DECODED_SCHEMA,
    decode_state_records,
    share_partition_records,
    state_records_of,
)
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import StateRecord, encode_record
from tests.pipeline.story import (
    ARCHIVED,
    AVAILABLE,
    EPOCH_MS,
    OTHER_TOPIC,
    TOPIC,
    batches_of,
    encoded,
    frame,
    kafka_rows,
    snapshot,
    snapshot_key,
    update,
    update_key,
)

# --------------------------------------------------------------------------- decode


def test_decode_gives_one_flat_row_per_record(spark: SparkSession) -> None:
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(7, (7, 9, ARCHIVED, 5), snapshot_epoch=3)),
            StateRecord(
                update_key("g", 0),
                update(-1, (10, 10, AVAILABLE, 1), delivery_complete_count=4),
            ),
            StateRecord(snapshot_key("g", 0), None),
        ),
        state_partition=5,
        first_offset=20,
    )

    decoded = decode_state_records(frame(spark, rows))
    result = sorted(decoded.collect(), key=lambda row: row["state_offset"])

    assert decoded.schema == DECODED_SCHEMA
    topic_id = kafka_uuid(TOPIC)
    first, second, third = result
    assert first.asDict() | {"batches": None} == {
        "state_partition": 5,
        "state_offset": 20,
        "state_timestamp": datetime.datetime.fromtimestamp(EPOCH_MS / 1000),
        "group_id": "g",
        "topic_id": topic_id,
        "partition": 0,
        "kind": "snapshot",
        "tombstone": False,
        "snapshot_epoch": 3,
        "state_epoch": 1,
        "leader_epoch": 2,
        "start_offset": 7,
        "delivery_complete_count": 0,
        "create_timestamp_ms": EPOCH_MS,
        "write_timestamp_ms": EPOCH_MS + 5,
        "batches": None,
        "error": None,
    }
    assert batches_of(first) == [(7, 9, 4, 5)]
    assert (second["kind"], second["start_offset"], second["delivery_complete_count"]) == (
        "update",
        -1,
        4,
    )
    assert (second["state_epoch"], second["create_timestamp_ms"]) == (None, None)
    assert batches_of(second) == [(10, 10, 0, 1)]
    assert (third["kind"], third["tombstone"], third["start_offset"], third["batches"]) == (
        "snapshot",
        True,
        None,
        None,
    )
    assert third["error"] is None


def test_corrupt_records_become_error_rows_not_failures(spark: SparkSession) -> None:
    good_key, good_value = encode_record(StateRecord(snapshot_key("g", 0), snapshot(0)))
    assert good_value is not None
    rows = kafka_rows(
        [
            (good_key, good_value[:5]),  # truncated value: the share-partition is still known
            (b"\x00\x09garbage", b"\x00\x00"),  # record type 9 does not exist
            (None, good_value),  # no key at all
            (good_key, good_value),
        ],
        state_partition=0,
    )

    result = sorted(decode_state_records(frame(spark, rows)).collect(), key=lambda r: r[1])

    truncated, unknown_type, keyless, good = result
    assert truncated["group_id"] == "g" and truncated["partition"] == 0
    assert truncated["error"] == "value: snapshot value truncated (5 bytes)"
    assert truncated["tombstone"] is None and truncated["start_offset"] is None
    assert unknown_type["group_id"] is None
    assert unknown_type["error"].startswith("key: unknown record type 9")
    assert keyless["error"] == "record has no key"
    assert good["error"] is None and good["start_offset"] == 0


def test_a_group_filter_drops_other_groups_but_keeps_unattributable_errors(
    spark: SparkSession,
) -> None:
    rows = kafka_rows(
        [
            *encoded(
                StateRecord(snapshot_key("orders", 0), snapshot(0)),
                StateRecord(snapshot_key("billing", 0), snapshot(0)),
                StateRecord(update_key("orders", 1), update(4)),
            ),
            (b"\x00", b""),
        ],
        state_partition=0,
    )

    result = decode_state_records(frame(spark, rows), group_ids={"orders"}).collect()

    assert sorted((row["state_offset"], row["group_id"]) for row in result) == [
        (0, "orders"),
        (2, "orders"),
        (3, None),
    ]


def test_state_records_of_chooses_groups_and_topics_by_key_bytes(spark: SparkSession) -> None:
    rows = kafka_rows(
        [
            *encoded(
                StateRecord(snapshot_key("orders", 0), snapshot(0)),
                StateRecord(update_key("orders", 1, OTHER_TOPIC), update(4)),
                StateRecord(snapshot_key("orders-2", 0), snapshot(0)),  # a longer name, same start
                StateRecord(snapshot_key("billing", 0), snapshot(0)),
                StateRecord(update_key("orders", 3), None),
            ),
            (b"\x00", b""),
            (None, b"x"),
        ],
        state_partition=0,
    )
    records = frame(spark, rows)

    def offsets(result: DataFrame) -> list[int]:
        return sorted(row["offset"] for row in result.collect())

    assert offsets(state_records_of(records, group_ids={"orders"})) == [0, 1, 4]
    assert offsets(state_records_of(records, group_ids={"orders", "billing"})) == [0, 1, 3, 4]
    assert offsets(
        state_records_of(records, group_ids={"orders"}, topic_ids={kafka_uuid(OTHER_TOPIC)})
    ) == [1]
    assert offsets(state_records_of(records)) == [0, 1, 2, 3, 4]
    grouped = share_partition_records(records, group_ids={"orders"}).collect()
    assert {bytes(row["share_partition"]) for row in grouped} == {
        bytes(row["key"])[2:] for row in grouped
    }
    assert len({bytes(row["share_partition"]) for row in grouped}) == 3
