"""A share-partition's story in state-topic records, for the pipeline's transform tests.

Records are encoded with `state.records.encode_record`, exactly the bytes a
share coordinator writes, and put in a DataFrame with the Kafka source's
columns; each test module compares the rows a transform gives field by field
with what the story of each share-partition says they must be.
"""

from __future__ import annotations

import base64
import datetime
import json
import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession

from kshare_cli.pipeline.kafka_source import KAFKA_SCHEMA
from kshare_cli.pipeline.state_records import TOPIC_NAMES_SCHEMA
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


def time_at(index: int) -> datetime.datetime:
    """How collect() shows the timestamp kafka_rows gave the record at position index."""
    return datetime.datetime.fromtimestamp((EPOCH_MS + index * 1000) / 1000)


def topic_names(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(kafka_uuid(TOPIC), "orders")], TOPIC_NAMES_SCHEMA)


# A real Kafka 4.4 broker's __share_group_state after scenario D (tests/golden/kafka-4.4):
# golden-dg's golden-d:1 in state partition 5, golden-d:0 at offsets 0-3 of partition 6.
GOLDEN_44 = Path(__file__).resolve().parents[1] / "golden" / "kafka-4.4"
GOLDEN_TOPIC_ID = "tXs4w6sZTYyPfT9kGSFB7g"  # golden-d


def _golden_state(name: str) -> list[dict[str, Any]]:
    text = (GOLDEN_44 / "state" / name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def golden_44_rows(
    name: str = "share-group-state.jsonl",
    *,
    keep: Callable[[int, int], bool] = lambda partition, offset: True,
) -> list[tuple[object, ...]]:
    """The recorded state records (those keep(state partition, offset) keeps) as the Kafka
    source returns them, with the broker's timestamps."""
    return [
        (
            base64.b64decode(row["key_b64"]),
            None if row["value_b64"] is None else base64.b64decode(row["value_b64"]),
            "__share_group_state",
            row["partition"],
            row["offset"],
            datetime.datetime.fromtimestamp(row["timestamp"] / 1000),
            0,
            None,
        )
        for row in _golden_state(name)
        if keep(row["partition"], row["offset"])
    ]


def golden_44_time(
    state_partition: int, offset: int, name: str = "share-group-state.jsonl"
) -> datetime.datetime:
    """How collect() shows the broker's timestamp of a recorded state record."""
    (row,) = (
        row
        for row in _golden_state(name)
        if (row["partition"], row["offset"]) == (state_partition, offset)
    )
    return datetime.datetime.fromtimestamp(row["timestamp"] / 1000)


def golden_44_topic_names(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(GOLDEN_TOPIC_ID, "golden-d")], TOPIC_NAMES_SCHEMA)
