"""The state topic's records in Spark: chosen, grouped by share-partition, decoded.

The ground every audit transform stands on (`timeline`, `deliveries`,
`archived`, `history_coverage` take what this module gives), and the one place that
knows how a state record's bytes become Spark columns:

* `state_records_of` / `share_partition_records`: a group's (and topic's)
  records, chosen by comparing key bytes in Spark;
* `per_share_partition`: a function over each share-partition's records,
  grouped by Spark, or split by the Python workers where each input
  partition holds whole state-topic partitions;
* `decode_state_records`: the records of the state topic (the Kafka source's
  columns) -> one flat row per record, batches as an array of structs. A
  record that does not decode is a row with `error` set, never a failed job;
* `decoded_in_order`: a share-partition's records decoded in log order, for
  the grouped transforms;
* `with_topic_names`: the state topic names topics by id only; this adds names;
* the Arrow column building (`ARROW_TYPES`, `batches_array`, `arrow_schema`)
  the grouped transforms share.

Decoding calls `records.decode_record` in `state/`, the code the sandbox's
share coordinator and the dashboard run. The Python work happens in Arrow
UDFs (`mapInArrow`, `applyInArrow`), which hand over whole column batches:
pandas would turn the many nullable integer columns into floats and cost a
conversion per batch for nothing.
"""

from __future__ import annotations

import base64
import itertools
import struct
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import (
    ShareSnapshotValue,
    ShareStateKey,
    StateBatch,
    StateRecord,
    StateRecordError,
    StateRecordKind,
    decode_key,
    decode_record,
)
from kshare_cli.state.replay import SharePartitionKey

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ARROW_TYPES",
    "BatchTuple",
    "DECODED_SCHEMA",
    "NAMED_SHARE_PARTITION_FIELDS",
    "RAW_COLUMNS",
    "SHARE_PARTITION_COLUMNS",
    "SHARE_PARTITION_FIELDS",
    "STATE_BATCH_TYPE",
    "STATE_TOPIC_POSITION_FIELDS",
    "TOPIC_NAMES_SCHEMA",
    "arrow_schema",
    "batch_tuples",
    "batches_array",
    "decode_state_records",
    "decoded_in_order",
    "in_log_order",
    "per_share_partition",
    "share_partition_records",
    "share_partition_tables",
    "state_records_of",
    "topic_uuid",
    "with_topic_names",
]


SHARE_PARTITION_COLUMNS: Final = ("group_id", "topic_id", "partition")
"""What identifies a share-partition in every table here; topic_id is Kafka's base64 form."""


STATE_BATCH_TYPE: Final = StructType(
    [
        StructField("first_offset", LongType(), False),
        StructField("last_offset", LongType(), False),
        StructField("delivery_state", IntegerType(), False),
        StructField("delivery_count", IntegerType(), False),
    ]
)
"""A persisted state batch; delivery_state is Kafka's number (0 Available, 2 Acknowledged,
4 Archived), kept as a number so that a state a newer broker adds passes through."""


STATE_TOPIC_POSITION_FIELDS: Final = [
    StructField("state_partition", IntegerType(), True),
    StructField("state_offset", LongType(), True),
    StructField("state_timestamp", TimestampType(), True),
]
SHARE_PARTITION_FIELDS: Final = [
    StructField("group_id", StringType(), True),
    StructField("topic_id", StringType(), True),
    StructField("partition", IntegerType(), True),
]
NAMED_SHARE_PARTITION_FIELDS: Final = [
    *SHARE_PARTITION_FIELDS[:2],
    StructField("topic", StringType(), True),
    SHARE_PARTITION_FIELDS[2],
]
"""SHARE_PARTITION_FIELDS with the topic's name after its id, where `with_topic_names` puts it."""


DECODED_SCHEMA: Final = StructType(
    [
        *STATE_TOPIC_POSITION_FIELDS,
        *SHARE_PARTITION_FIELDS,
        StructField("kind", StringType(), True),
        StructField("tombstone", BooleanType(), True),
        StructField("snapshot_epoch", IntegerType(), True),
        StructField("state_epoch", IntegerType(), True),
        StructField("leader_epoch", IntegerType(), True),
        StructField("start_offset", LongType(), True),
        StructField("delivery_complete_count", IntegerType(), True),
        StructField("create_timestamp_ms", LongType(), True),
        StructField("write_timestamp_ms", LongType(), True),
        StructField("batches", ArrayType(STATE_BATCH_TYPE, False), True),
        StructField("error", StringType(), True),
    ]
)
"""One row per state-topic record, as the share coordinator wrote it.

kind is "snapshot" or "update". Values are null for a tombstone, and
state_epoch, create_timestamp_ms and write_timestamp_ms are null for an update
(the record has none). A record that does not decode has error set and
whatever could be decoded (the share-partition, when its key was readable).
"""


_SNAPSHOT: Final = StateRecordKind.SNAPSHOT.name.lower()
_UPDATE: Final = StateRecordKind.UPDATE.name.lower()


_ARROW_BATCH: Final = pa.struct(
    [
        pa.field("first_offset", pa.int64(), nullable=False),
        pa.field("last_offset", pa.int64(), nullable=False),
        pa.field("delivery_state", pa.int32(), nullable=False),
        pa.field("delivery_count", pa.int32(), nullable=False),
    ]
)

# Spark checks a grouped map's result types strictly, names of list elements included.
_ARROW_BATCHES: Final = pa.list_(pa.field("element", _ARROW_BATCH, nullable=False))

BatchTuple = tuple[int, int, int, int]


# --------------------------------------------------------------------------- decode


def decode_state_records(
    records: DataFrame, *, group_ids: Collection[str] | None = None
) -> DataFrame:
    """The state topic's records (Kafka source columns) as DECODED_SCHEMA rows.

    With group_ids, records of other groups are dropped before their values
    are decoded (the key says the group), which is most of the work on a busy
    cluster. Records whose key cannot be decoded are kept whatever the filter:
    nobody can tell which group they belonged to, and they must be counted.
    """
    wanted = None if group_ids is None else frozenset(group_ids)

    def decode(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield _decode_batch(batch, wanted)

    source = records.select("key", "value", "partition", "offset", "timestamp")
    return source.mapInArrow(decode, DECODED_SCHEMA)


def _decode_batch(batch: Any, wanted: frozenset[str] | None) -> Any:
    """DECODED_SCHEMA columns of one Arrow batch of the Kafka source's records."""
    keys = batch.column(0).to_pylist()
    values = batch.column(1).to_pylist()
    kept: list[int] = []
    columns: dict[str, list[Any]] = {field.name: [] for field in DECODED_SCHEMA.fields[3:]}
    for index, (key_bytes, value_bytes) in enumerate(zip(keys, values, strict=True)):
        decoded = _decoded_row(key_bytes, value_bytes, wanted)
        if decoded is not None:
            kept.append(index)
            _append_row(columns, *decoded)
    positions = pa.array(kept, pa.int64())
    arrays = [batch.column(2).take(positions), batch.column(3).take(positions)]
    arrays.append(batch.column(4).take(positions))
    for field in DECODED_SCHEMA.fields[3:]:
        if field.name == "batches":
            arrays.append(batches_array(columns["batches"]))
        else:
            arrays.append(pa.array(columns[field.name], ARROW_TYPES[field.name]))
    return pa.RecordBatch.from_arrays(arrays, names=DECODED_SCHEMA.fieldNames())


def _decoded_row(
    key_bytes: bytes | None, value_bytes: bytes | None, wanted: frozenset[str] | None
) -> tuple[str | None, ShareStateKey | None, StateRecord | None] | None:
    """(error, key, record) of one record; None for a record of a group not wanted."""
    if key_bytes is None:
        return "record has no key", None, None
    try:
        key = decode_key(key_bytes)
    except StateRecordError as failure:
        return f"key: {failure}", None, None
    if wanted is not None and key.group_id not in wanted:
        return None
    try:
        return None, key, decode_record(key_bytes, value_bytes)
    except StateRecordError as failure:
        return f"value: {failure}", key, None


_VALUE_COLUMNS: Final = (
    "snapshot_epoch",
    "state_epoch",
    "leader_epoch",
    "start_offset",
    "delivery_complete_count",
    "create_timestamp_ms",
    "write_timestamp_ms",
    "batches",
)


def _append_row(
    columns: dict[str, list[Any]],
    error: str | None,
    key: ShareStateKey | None,
    record: StateRecord | None,
) -> None:
    """One record's DECODED_SCHEMA values (from the group id on) added to columns."""
    columns["error"].append(error)
    if key is None:
        for name, column in columns.items():
            if name != "error":
                column.append(None)
        return
    columns["group_id"].append(key.group_id)
    columns["topic_id"].append(kafka_uuid(key.topic_id))
    columns["partition"].append(key.partition)
    columns["kind"].append(key.kind.name.lower())
    value = None if record is None else record.value
    columns["tombstone"].append(None if record is None else value is None)
    if value is None:
        for name in _VALUE_COLUMNS:
            columns[name].append(None)
        return
    snapshot_only: tuple[int | None, ...] = (None, None, None)
    if type(value) is ShareSnapshotValue:
        snapshot_only = (value.state_epoch, value.create_timestamp, value.write_timestamp)
    columns["snapshot_epoch"].append(value.snapshot_epoch)
    columns["leader_epoch"].append(value.leader_epoch)
    columns["start_offset"].append(value.start_offset)
    columns["delivery_complete_count"].append(value.delivery_complete_count)
    for name, column_value in zip(
        ("state_epoch", "create_timestamp_ms", "write_timestamp_ms"), snapshot_only, strict=True
    ):
        columns[name].append(column_value)
    columns["batches"].append(batch_tuples(value.state_batches))


#: The Arrow type of each scalar column the grouped transforms build, by column name.
ARROW_TYPES: Final = {
    "state_partition": pa.int32(),
    "state_offset": pa.int64(),
    "group_id": pa.string(),
    "topic_id": pa.string(),
    "partition": pa.int32(),
    "kind": pa.string(),
    "tombstone": pa.bool_(),
    "error": pa.string(),
    "has_state": pa.bool_(),
    "snapshot_epoch": pa.int32(),
    "state_epoch": pa.int32(),
    "leader_epoch": pa.int32(),
    "start_offset": pa.int64(),
    "delivery_complete_count": pa.int32(),
    "create_timestamp_ms": pa.int64(),
    "write_timestamp_ms": pa.int64(),
    "end_offset": pa.int64(),
    "available": pa.int64(),
    "acknowledged": pa.int64(),
    "archived": pa.int64(),
    "archiving": pa.int64(),
    "unrecorded": pa.int64(),
    "max_delivery_count": pa.int32(),
    "corrupt_records": pa.int64(),
    "restated": pa.bool_(),
    "first_offset": pa.int64(),
    "last_offset": pa.int64(),
    "final_state": pa.string(),
    "final_delivery_count": pa.int32(),
    "complete": pa.bool_(),
}


def batch_tuples(batches: tuple[StateBatch, ...]) -> list[BatchTuple]:
    return [
        (batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        for batch in batches
    ]


def batches_array(rows: list[list[BatchTuple] | None]) -> Any:
    """A list<struct> column built from flat child columns (pa.array over dicts is 5x slower)."""
    offsets: list[int | None] = [0]
    firsts: list[int] = []
    lasts: list[int] = []
    states: list[int] = []
    counts: list[int] = []
    total = 0
    has_nulls = False
    for batches in rows:
        if batches is None:
            has_nulls = True
            offsets.append(total)
            continue
        for first, last, state, count in batches:
            firsts.append(first)
            lasts.append(last)
            states.append(state)
            counts.append(count)
        total += len(batches)
        offsets.append(total)
    children = pa.StructArray.from_arrays(
        [
            pa.array(firsts, pa.int64()),
            pa.array(lasts, pa.int64()),
            pa.array(states, pa.int32()),
            pa.array(counts, pa.int32()),
        ],
        fields=list(_ARROW_BATCH),
    )
    mask = pa.array([batches is None for batches in rows]) if has_nulls else None
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), children, type=_ARROW_BATCHES, mask=mask
    )


# --------------------------------------------------------------------------- by share-partition

RAW_COLUMNS: Final = ("state_partition", "state_offset", "state_timestamp", "key", "value")


def state_records_of(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
) -> DataFrame:
    """The state topic's records (Kafka source columns) of the given groups and topics.

    A record key is its type (2 bytes) and then the share-partition: the group
    id (int16 length and UTF-8), the topic id (16 bytes), the partition. The
    filters are byte comparisons on the key done by Spark itself, so records
    of other groups never reach Python. topic_ids are Kafka's base64 ids; they
    need group_ids (the topic id sits after the group id in the key). Records
    without a key are dropped: no share-partition can be named for them.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    rows = records.filter(F.col("key").isNotNull() & (F.length("key") > 2))
    if group_ids is None:
        if topic_ids is not None:
            raise ValueError("a topic filter needs the group ids")
        return rows
    prefixes = []
    for group_id in sorted(set(group_ids)):
        encoded = group_id.encode("utf-8")
        head = struct.pack(">h", len(encoded)) + encoded
        if topic_ids is None:
            prefixes.append(head)
        else:
            prefixes.extend(
                head + topic_uuid(topic_id).bytes for topic_id in sorted(set(topic_ids))
            )
    if not prefixes:
        return rows.limit(0)
    matches = [
        F.substring("key", 3, len(prefix)) == F.lit(bytearray(prefix)) for prefix in prefixes
    ]
    wanted = matches[0]
    for each in matches[1:]:
        wanted = wanted | each
    return rows.filter(wanted)


def share_partition_records(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
) -> DataFrame:
    """`state_records_of` with the columns the grouped transforms take: the state-topic
    position, key and value, and the share-partition as the key without its type (the
    same bytes for a snapshot and an update), to group by."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    return state_records_of(records, group_ids=group_ids, topic_ids=topic_ids).select(
        F.col("partition").alias("state_partition"),
        F.col("offset").alias("state_offset"),
        F.col("timestamp").alias("state_timestamp"),
        "key",
        "value",
        F.expr("substring(key, 3, length(key) - 2)").alias("share_partition"),
    )


def per_share_partition(
    rows: DataFrame,
    function: Callable[[Any], Any],
    schema: StructType,
    *,
    whole_state_partitions: bool = False,
) -> DataFrame:
    """schema's rows of function's Arrow table for each share-partition's records (an Arrow
    table of `share_partition_records`' columns).

    By default Spark groups the records by share-partition: an exchange of
    every record's bytes and a sort, in the JVM, that cost it more CPU than
    the Python workers spend replaying. whole_state_partitions says each
    input partition holds every record of each state-topic partition it
    reads (as the audit's own read of the state topic does): Kafka keys the
    state topic by share-partition, so every share-partition's records are
    then all in one input partition, and each Python worker splits its own
    partition's records (`share_partition_tables`): no exchange, no sort in
    the JVM, and the share-partition column is never built. A worker holds
    the chosen records of its whole input partition at once, where a group
    held one share-partition's. On any other input (a capture's files and
    the topic after them, micro-batches) it would cut share-partitions in
    pieces, so the default groups.
    """
    if not whole_state_partitions:

        def grouped(key: tuple[Any, ...], table: Any) -> Any:
            return function(table)

        return rows.groupBy("share_partition").applyInArrow(grouped, schema)

    def mapped(batches: Iterator[Any]) -> Iterator[Any]:
        for table in share_partition_tables(batches):
            yield from function(table).to_batches()

    return rows.drop("share_partition").mapInArrow(mapped, schema)


def share_partition_tables(batches: Iterable[Any]) -> Iterator[Any]:
    """The records of Arrow batches (`share_partition_records`' columns but the
    share-partition), one table per share-partition, each in log order."""
    tables = [pa.Table.from_batches([batch]) for batch in batches if batch.num_rows]
    if not tables:
        return
    # One chunk per column: sorting many chunks costs pyarrow tens of times more.
    table = pa.concat_tables(tables).combine_chunks()
    # The key without its record type names the share-partition for a snapshot and an
    # update alike; its dictionary index is a number to sort by. (binary_slice needs a
    # stop: without one pyarrow 26 fails to size its buffer.)
    share_partitions = pc.dictionary_encode(
        pc.binary_slice(table.column("key"), 2, _KEY_LENGTH_LIMIT)
    ).combine_chunks()
    order = pc.sort_indices(
        pa.table(
            {
                "share_partition": share_partitions.indices,
                "state_partition": table.column("state_partition"),
                "state_offset": table.column("state_offset"),
            }
        ),
        sort_keys=[
            ("share_partition", "ascending"),
            ("state_partition", "ascending"),
            ("state_offset", "ascending"),
        ],
    )
    table = table.take(order)
    numbers = share_partitions.indices.take(order).to_numpy()
    starts = [0, *(np.flatnonzero(np.diff(numbers)) + 1).tolist(), len(numbers)]
    for first, end in itertools.pairwise(starts):
        yield table.slice(first, end - first)


_KEY_LENGTH_LIMIT: Final = 2**31 - 1


def decoded_in_order(
    table: Any,
) -> tuple[SharePartitionKey | None, Any, list[StateRecord | None], list[str | None], list[str]]:
    """A share-partition's records in log order, decoded: (share-partition, the table in
    order, records (None where corrupt), errors, kinds)."""
    table = in_log_order(table)
    records: list[StateRecord | None] = []
    errors: list[str | None] = []
    kinds: list[str] = []
    share_partition: SharePartitionKey | None = None
    for key_bytes, value_bytes in zip(
        table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True
    ):
        try:
            record = decode_record(key_bytes, value_bytes)
        except StateRecordError as failure:
            records.append(None)
            try:
                key = decode_key(key_bytes)
            except StateRecordError as key_failure:
                errors.append(f"key: {key_failure}")
                kinds.append(_UPDATE if key_bytes[:2] == b"\x00\x01" else _SNAPSHOT)
                continue
            errors.append(f"value: {failure}")
        else:
            records.append(record)
            errors.append(None)
            key = record.key
        kinds.append(_SNAPSHOT if key.kind is StateRecordKind.SNAPSHOT else _UPDATE)
        if share_partition is None:
            share_partition = SharePartitionKey.of(key)
    return share_partition, table, records, errors, kinds


def topic_uuid(topic_id: str) -> uuid.UUID:
    """Kafka's base64 topic id back to a UUID (the inverse of `partitioning.kafka_uuid`)."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def in_log_order(table: Any) -> Any:
    """A share-partition's records (Arrow) in the order the share coordinator wrote them;
    the table itself when they already are (as `share_partition_tables` gives them, and
    often Spark's groups): sorting copies every key and value."""
    partitions = table.column("state_partition").to_numpy()
    offsets = table.column("state_offset").to_numpy()
    partition_steps = np.diff(partitions)
    ordered = (partition_steps > 0) | ((partition_steps == 0) & (np.diff(offsets) >= 0))
    if ordered.all():
        return table
    return table.sort_by([("state_partition", "ascending"), ("state_offset", "ascending")])


def arrow_schema(schema: StructType, like: Any) -> Any:
    """An empty result's Arrow schema: the input's timestamp type, the rest from the output."""
    fields = []
    for field in schema.fields:
        if field.name == "state_timestamp":
            fields.append(like.schema.field("state_timestamp"))
        elif field.name in ("last_changed", "archiving_at"):
            fields.append(pa.field(field.name, like.schema.field("state_timestamp").type))
        elif field.name in ("batches", "state_batches"):
            fields.append(pa.field(field.name, _ARROW_BATCHES))
        else:
            fields.append(pa.field(field.name, ARROW_TYPES[field.name]))
    return pa.schema(fields)


# --------------------------------------------------------------------------- topic names

TOPIC_NAMES_SCHEMA: Final = StructType(
    [
        StructField("topic_id", StringType(), False),
        StructField("topic", StringType(), False),
    ]
)
"""Topic id (Kafka's base64 form) -> name: the state topic names topics by id only.

Built from the cluster's metadata by the caller; a topic deleted since has
no name, and its rows keep a null topic.
"""


def with_topic_names(frame: DataFrame, topic_names: DataFrame) -> DataFrame:
    """frame with a `topic` column after `topic_id` (null where the id has no name)."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    names = topic_names.select(
        F.col("topic_id").alias("_named_topic_id"), F.col("topic").alias("_named_topic")
    )
    joined = frame.join(F.broadcast(names), frame["topic_id"] == names["_named_topic_id"], "left")
    columns = []
    for name in frame.columns:
        columns.append(frame[name])
        if name == "topic_id":
            columns.append(F.col("_named_topic").alias("topic"))
    return joined.select(*columns)
