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

from kshare_cli.pipeline.archived import (
    ARCHIVED_OFFSETS_SCHEMA,
    ARCHIVED_SCHEMA,
    archived_offsets,
    archived_records,
)
from kshare_cli.pipeline.deliveries import DELIVERIES_SCHEMA, deliveries
from kshare_cli.pipeline.history import state_history
from kshare_cli.pipeline.kafka_source import KAFKA_SCHEMA
from kshare_cli.pipeline.state_records import (
    DECODED_SCHEMA,
    TOPIC_NAMES_SCHEMA,
    decode_state_records,
    share_partition_records,
    state_records_of,
)
from kshare_cli.pipeline.timeline import (
    REPLAYED_SCHEMA,
    REPLAYED_WITH_BATCHES_SCHEMA,
    SOURCE_OFFSETS_SCHEMA,
    TIMELINE_SCHEMA,
    replay_states,
    timeline,
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


# --------------------------------------------------------------------------- deliveries


def _at(index: int) -> datetime.datetime:
    """How collect() shows the timestamp kafka_rows gave the record at position index."""
    return datetime.datetime.fromtimestamp((EPOCH_MS + index * 1000) / 1000)


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
        (0, 0, 2, 1, "acknowledged", 1, True, _at(2)),
        (0, 3, 3, 2, "archived", 2, True, _at(4)),
        # 4: released twice, then acknowledged on its third delivery, again in the write
        # that moved the start offset to 5.
        (0, 4, 4, 3, "acknowledged", 3, True, _at(5)),
        # The second share-partition was deleted (tombstone); what its records said stays.
        (1, 10, 11, 3, "available", 3, False, _at(0)),
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

    assert _ranges(result) == [(0, 0, 9, 2, "acknowledged", 2, True, _at(2))]


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
        (0, 0, 1, 5, "archived", 5, False, _at(1)),
        (0, 2, 2, 1, "available", 1, False, _at(1)),
        (0, 3, 3, 2, "available", 2, False, _at(2)),
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
        (0, 0, 0, 4, "available", 4, False, _at(1)),
        (0, 1, 2, 4, "acknowledged", 1, False, _at(3)),
        (0, 3, 3, 4, "available", 4, False, _at(1)),
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
        (0, 0, 9, 1, "acknowledged", 1, False, _at(2)),
        (0, 10, 10, 5, "archived", 5, False, _at(3)),
    ]
    assert _ranges(since) == [
        (0, 5, 9, 1, "acknowledged", 1, False, _at(2)),
        (0, 10, 10, 5, "archived", 5, False, _at(3)),
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
        assert row["last_changed"] == _at(max(expected[offset][3] for offset in offsets))


# --------------------------------------------------------------------------- timeline


def _topic_names(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(kafka_uuid(TOPIC), "orders")], TOPIC_NAMES_SCHEMA)


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
        _topic_names(spark),
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
    assert rows[104]["time"] == _at(4)
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
        _topic_names(spark),
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

    result = timeline(replay_states(records), _topic_names(spark), source_offsets=offsets)

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

    result = timeline(replayed, _topic_names(spark), source_offsets=offsets)

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
        (0, 1, 10, _at(0), True, None),
        (1, 2, 30, _at(0), False, "pruned"),
        (2, 3, 0, _at(0), False, "pruned"),
        (3, 5, 40, _at(0), False, "gap"),
        (4, 5, 50, _at(0), True, None),
    ]
    assert {row["topic_id"] for row in result.collect()} == {kafka_uuid(TOPIC)}


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
        (0, 0, 1, 5, "archived", 5, False, None),
        (0, 2, 2, 5, "archived", 5, False, _at(1)),
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
        (0, 0, 0, 5, "archived", 5, False, _at(1)),
        (0, 1, 1, 5, "archived", 5, False, None),
        (0, 2, 2, 5, "archived", 5, False, _at(1)),
    ]


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
                _at(offset),
                0,
                [["h", f"x{offset}".encode()]] if offset % 2 else None,
            )
            # Offset 4 is gone (retention): still reported, without its record.
            for offset in (0, 1, 2, 3, 5)
        ],
    )
    ranges = deliveries(frame(spark, rows))

    offsets = archived_offsets(ranges)
    result = archived_records(offsets, _topic_names(spark), source)

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
        ("orders", 0, 2, 5, _at(2), True, b"k2", b"v2", None),
        ("orders", 0, 3, 5, _at(2), True, b"k3", b"v3", [("h", b"x3")]),
        ("orders", 0, 4, 1, _at(2), False, None, None, None),
        ("orders", 0, 5, 2, _at(3), True, b"k5", b"v5", [("h", b"x5")]),
    ]
    assert {row["group_id"] for row in archived} == {"g"}
    assert archived_records(offsets, _topic_names(spark), None).filter("record_found").count() == 0
