"""The state-topic transforms on small hand-built DataFrames.

Records are encoded with `state.records.encode_record`, exactly the bytes a
share coordinator writes, and put in a DataFrame with the Kafka source's
columns; the rows that come out are compared field by field with what the
story of each share-partition says they must be.
"""

from __future__ import annotations

import datetime
import random
import uuid

from pyspark.sql import DataFrame, Row, SparkSession

from kshare_cli.pipeline.kafka_source import KAFKA_SCHEMA
from kshare_cli.pipeline.transforms import (
    DECODED_SCHEMA,
    DELIVERIES_SCHEMA,
    REPLAYED_SCHEMA,
    REPLAYED_WITH_BATCHES_SCHEMA,
    decode_state_records,
    deliveries,
    replay_states,
)
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import (
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    encode_record,
)
from kshare_cli.state.replay import (
    ShareCoordinatorState,
    SharePartitionKey,
    ShareStateReplayer,
)

TOPIC = uuid.UUID("5f1b3b9e-33a1-4f4e-9d0c-6a1b2c3d4e5f")
OTHER_TOPIC = uuid.UUID("0a0b0c0d-0e0f-4000-8000-000000000001")
AVAILABLE, ACKNOWLEDGED, ARCHIVED = (
    DeliveryState.AVAILABLE,
    DeliveryState.ACKNOWLEDGED,
    DeliveryState.ARCHIVED,
)
EPOCH_MS = 1_767_225_600_000


def snapshot_key(group: str, partition: int, topic: uuid.UUID = TOPIC) -> ShareStateKey:
    return ShareStateKey(StateRecordKind.SNAPSHOT, group, topic, partition)


def update_key(group: str, partition: int, topic: uuid.UUID = TOPIC) -> ShareStateKey:
    return ShareStateKey(StateRecordKind.UPDATE, group, topic, partition)


def snapshot(
    start_offset: int, *batches: tuple[int, int, int, int], snapshot_epoch: int = 0
) -> ShareSnapshotValue:
    return ShareSnapshotValue(
        snapshot_epoch=snapshot_epoch,
        state_epoch=1,
        leader_epoch=2,
        start_offset=start_offset,
        delivery_complete_count=0,
        create_timestamp=EPOCH_MS,
        write_timestamp=EPOCH_MS + 5,
        state_batches=tuple(StateBatch(*batch) for batch in batches),
    )


def update(
    start_offset: int, *batches: tuple[int, int, int, int], delivery_complete_count: int = 0
) -> ShareUpdateValue:
    return ShareUpdateValue(
        snapshot_epoch=0,
        leader_epoch=-1,
        start_offset=start_offset,
        delivery_complete_count=delivery_complete_count,
        state_batches=tuple(StateBatch(*batch) for batch in batches),
    )


def kafka_rows(
    records: list[tuple[bytes | None, bytes | None]], state_partition: int, first_offset: int = 0
) -> list[tuple[object, ...]]:
    """Records as the Kafka source would return them from one state-topic partition."""
    return [
        (
            key,
            value,
            "__share_group_state",
            state_partition,
            first_offset + index,
            datetime.datetime.fromtimestamp((EPOCH_MS + index * 1000) / 1000),
            0,
            None,
        )
        for index, (key, value) in enumerate(records)
    ]


def encoded(*records: StateRecord) -> list[tuple[bytes | None, bytes | None]]:
    return [encode_record(record) for record in records]


def frame(spark: SparkSession, rows: list[tuple[object, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def batches_of(row: Row, column: str = "batches") -> list[tuple[int, int, int, int]] | None:
    value = row[column]
    if value is None:
        return None
    return [
        (
            batch["first_offset"],
            batch["last_offset"],
            batch["delivery_state"],
            batch["delivery_count"],
        )
        for batch in value
    ]


# The story of share-partition g/TOPIC/0 in state-topic partition 7 (offsets 100..), and of
# g/TOPIC/1 in partition 3. A corrupt update sits in the middle of the first.
STORY = [
    StateRecord(snapshot_key("g", 0), snapshot(0)),
    # Offsets 0-4 were delivered and released: Available, delivery count 1.
    StateRecord(update_key("g", 0), update(-1, (0, 4, AVAILABLE, 1))),
    # 0-2 acknowledged; the start offset moves to 3 and prunes them.
    StateRecord(update_key("g", 0), update(3, (0, 2, ACKNOWLEDGED, 1))),
    # 3 rejected on its second delivery, 4 released again.
    StateRecord(update_key("g", 0), update(-1, (3, 3, ARCHIVED, 2), (4, 4, AVAILABLE, 2))),
    # 4 acknowledged on its third delivery: everything below 5 is done.
    StateRecord(update_key("g", 0), update(5, (4, 4, ACKNOWLEDGED, 3))),
]
CORRUPT_AT = 3  # the truncated update comes before STORY[3]


def story_rows() -> list[tuple[object, ...]]:
    records = encoded(*STORY)
    key, value = encode_record(STORY[1])
    assert value is not None
    records.insert(CORRUPT_AT, (key, value[:9]))
    first = kafka_rows(records, state_partition=7, first_offset=100)
    second = kafka_rows(
        [
            *encoded(
                StateRecord(snapshot_key("g", 1), snapshot(10, (10, 11, AVAILABLE, 3))),
                StateRecord(snapshot_key("g", 1), None),
            ),
            (b"\x00", b""),  # a key that does not decode: no share-partition to replay it in
        ],
        state_partition=3,
        first_offset=40,
    )
    rows = first + second
    # The DataFrame's order is not the log's: replay must sort by state-topic position.
    random.Random(7).shuffle(rows)
    return rows


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


# --------------------------------------------------------------------------- replay


def test_replay_gives_the_state_after_every_record_in_log_order(spark: SparkSession) -> None:
    decoded = decode_state_records(frame(spark, story_rows()))
    assert replay_states(decoded).schema == REPLAYED_SCHEMA
    replayed = replay_states(decoded, with_batches=True)
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
        decode_state_records(frame(spark, kafka_rows(encoded(*log), state_partition=0))),
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


# --------------------------------------------------------------------------- deliveries


def test_deliveries_give_the_highest_count_and_last_state_per_range(spark: SparkSession) -> None:
    result = deliveries(decode_state_records(frame(spark, story_rows())))
    assert result.schema == DELIVERIES_SCHEMA

    ranges = sorted(
        (
            row["partition"],
            row["first_offset"],
            row["last_offset"],
            row["max_delivery_count"],
            row["final_state"],
            row["final_delivery_count"],
            row["complete"],
        )
        for row in result.collect()
    )

    assert ranges == [
        # 0-2: acknowledged in the write that moved the start offset past them, so the
        # last state that recorded them said Available; complete says they are done.
        (0, 0, 2, 1, "available", 1, True),
        (0, 3, 3, 2, "archived", 2, True),
        (0, 4, 4, 2, "available", 2, True),
        # The second share-partition was deleted (tombstone); its last state stays.
        (1, 10, 11, 3, "available", 3, False),
    ]
    assert {row["group_id"] for row in result.collect()} == {"g"}


def test_deliveries_split_a_range_at_the_start_offset(spark: SparkSession) -> None:
    rows = kafka_rows(
        encoded(
            StateRecord(snapshot_key("g", 0), snapshot(0, (0, 9, AVAILABLE, 2))),
            StateRecord(update_key("g", 0), update(6)),
        ),
        state_partition=0,
    )

    result = deliveries(decode_state_records(frame(spark, rows)))

    assert sorted(
        (row["first_offset"], row["last_offset"], row["complete"]) for row in result.collect()
    ) == [(0, 5, True), (6, 9, False)]


def test_deliveries_of_a_share_partition_without_batches_are_empty(spark: SparkSession) -> None:
    rows = kafka_rows(encoded(StateRecord(snapshot_key("g", 0), snapshot(3))), state_partition=0)
    assert deliveries(decode_state_records(frame(spark, rows))).collect() == []
