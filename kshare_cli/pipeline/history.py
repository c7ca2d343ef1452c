"""How much of each share-partition's history the state records read still hold.

Kafka's share coordinator prunes the state topic; an audit says which
share-partitions' history starts later than the share-partition did
(`replay.opens_history`), and where a capture and the live log leave a gap.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kshare_cli.pipeline.models import HISTORY_GAP, HISTORY_PRUNED
from kshare_cli.pipeline.state_records import (
    RAW_COLUMNS,
    SHARE_PARTITION_FIELDS,
    share_partition_records,
)
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import (
    ShareStateKey,
    StateRecord,
    StateRecordError,
    decode_key,
    decode_record,
)
from kshare_cli.state.replay import opens_history

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "HISTORY_SCHEMA",
    "state_history",
]


# --------------------------------------------------------------------------- history


HISTORY_SCHEMA: Final = StructType(
    [
        *SHARE_PARTITION_FIELDS,
        StructField("state_partition", IntegerType(), True),
        StructField("first_state_offset", LongType(), True),
        StructField("history_from", TimestampType(), True),
        StructField("history_complete", BooleanType(), False),
        StructField("history_missing", StringType(), True),
    ]
)
"""Per share-partition: how much of its history the records read hold.

history_from is the state-topic timestamp of the earliest record read
(first_state_offset in state_partition). history_complete says nothing
before or among the records read is missing; otherwise history_missing says
why: "pruned" (the earliest record does not open the history,
`replay.opens_history`: the share coordinator deleted what came before) or
"gap" (a state-topic partition's records between the captured ones and the
live log were deleted before anyone read them).
"""


def state_history(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
    gaps: Mapping[int, int] | None = None,
) -> DataFrame:
    """HISTORY_SCHEMA rows, one per share-partition the records name.

    Only each share-partition's earliest record is decoded: Spark finds it
    by its state-topic position. gaps is as `deliveries` takes it: a
    share-partition whose first record lies before a gap lost what the gap
    held; one that starts after it is judged by its first record alone.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    gap_after = dict(gaps or {})
    first = (
        share_partition_records(records, group_ids=group_ids, topic_ids=topic_ids)
        .groupBy("share_partition")
        .agg(F.min(F.struct(*RAW_COLUMNS)).alias("_first"))
        .select("_first.*")
    )

    def judge(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield _history_batch(batch, gap_after)

    return first.mapInArrow(judge, HISTORY_SCHEMA)


def _history_batch(batch: Any, gaps: Mapping[int, int]) -> Any:
    columns = {name: batch.column(name) for name in RAW_COLUMNS}
    state_partitions = columns["state_partition"].to_pylist()
    state_offsets = columns["state_offset"].to_pylist()
    group_ids: list[str | None] = []
    topic_ids: list[str | None] = []
    partitions: list[int | None] = []
    complete: list[bool] = []
    missing: list[str | None] = []
    for index, (key_bytes, value_bytes) in enumerate(
        zip(columns["key"].to_pylist(), columns["value"].to_pylist(), strict=True)
    ):
        record: StateRecord | None = None
        key: ShareStateKey | None = None
        try:
            key = decode_key(key_bytes)
            record = decode_record(key_bytes, value_bytes)
        except StateRecordError:
            pass  # an undecodable first record cannot open the history: "pruned" below
        group_ids.append(None if key is None else key.group_id)
        topic_ids.append(None if key is None else kafka_uuid(key.topic_id))
        partitions.append(None if key is None else key.partition)
        gap = gaps.get(state_partitions[index])
        if gap is not None and state_offsets[index] < gap:
            complete.append(False)
            missing.append(HISTORY_GAP)
        elif record is None or not opens_history(record):
            complete.append(False)
            missing.append(HISTORY_PRUNED)
        else:
            complete.append(True)
            missing.append(None)
    arrays = [
        pa.array(group_ids, pa.string()),
        pa.array(topic_ids, pa.string()),
        pa.array(partitions, pa.int32()),
        columns["state_partition"],
        columns["state_offset"],
        columns["state_timestamp"],
        pa.array(complete, pa.bool_()),
        pa.array(missing, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(arrays, names=HISTORY_SCHEMA.fieldNames())
