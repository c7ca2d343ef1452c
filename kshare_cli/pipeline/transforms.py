"""Pure DataFrame transforms over `__share_group_state` and the source topics.

Every step that needs Kafka's knowledge calls the code in `state/` that the
sandbox's share coordinator and the dashboard run: `records.decode_record`
decodes, `replay.ShareStateReplayer` replays, `window.window_counts` counts (the
figures of `window.InFlightWindow`), `lag.share_partition_lag` gives the lag.
There is one replay, not two; what Spark adds is only where it runs.

* `decode_state_records`: the records of the state topic (the Kafka source's
  columns) -> one flat row per record, batches as an array of structs. A
  record that does not decode is a row with `error` set, never a failed job.
* `state_records_of` / `share_partition_records`: a group's (and topic's)
  records, chosen by comparing key bytes in Spark, grouped by share-partition.
* `replay_states`: per share-partition, in state-topic order, the state after
  every record (the base of the `timeline` job). Share-partitions are
  independent, so each is one group of a grouped Arrow map that decodes and
  replays its undecoded records in one pass, and the work spreads over every
  core; the shuffle carries the records' bytes, not a wide decoded row.
* `deliveries`: per share-partition and offset range, the highest delivery
  count and the final state, from the batches every record carried.
* `timeline`: the replayed states with topic names, log end offsets and lag.
* `archived_offsets` / `archived_records`: the archived offsets, joined with
  the source topic's records.

The Python work happens in Arrow UDFs (`mapInArrow`, `applyInArrow`), which
hand over whole column batches: pandas would turn the many nullable integer
columns into floats and cost a conversion per batch for nothing.
"""

from __future__ import annotations

import base64
import bisect
import struct
import uuid
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kshare_cli.pipeline.kafka_source import KAFKA_SCHEMA
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import (
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    StateBatch,
    StateRecord,
    StateRecordError,
    StateRecordKind,
    decode_key,
    decode_record,
)
from kshare_cli.state.replay import (
    SharePartitionKey,
    SharePartitionState,
    ShareStateReplayer,
    opens_history,
    same_state,
)
from kshare_cli.state.window import window_counts

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import DataFrame

__all__ = [
    "ARCHIVED_OFFSETS_SCHEMA",
    "ARCHIVED_SCHEMA",
    "DECODED_SCHEMA",
    "DELIVERIES_SCHEMA",
    "HISTORY_GAP",
    "HISTORY_PRUNED",
    "HISTORY_SCHEMA",
    "KAFKA_HEADERS_TYPE",
    "LAG_FROM_END_OFFSETS",
    "LAG_FROM_RECORD_TIMESTAMPS",
    "REPLAYED_SCHEMA",
    "REPLAYED_WITH_BATCHES_SCHEMA",
    "SHARE_PARTITION_COLUMNS",
    "SOURCE_OFFSETS_SCHEMA",
    "STATE_BATCH_TYPE",
    "TIMELINE_SCHEMA",
    "TOPIC_NAMES_SCHEMA",
    "archived_offsets",
    "archived_records",
    "decode_state_records",
    "deliveries",
    "replay_states",
    "share_partition_records",
    "state_history",
    "state_records_of",
    "timeline",
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

_STATE_TOPIC_POSITION: Final = [
    StructField("state_partition", IntegerType(), True),
    StructField("state_offset", LongType(), True),
    StructField("state_timestamp", TimestampType(), True),
]
_SHARE_PARTITION: Final = [
    StructField("group_id", StringType(), True),
    StructField("topic_id", StringType(), True),
    StructField("partition", IntegerType(), True),
]

DECODED_SCHEMA: Final = StructType(
    [
        *_STATE_TOPIC_POSITION,
        *_SHARE_PARTITION,
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

REPLAYED_SCHEMA: Final = StructType(
    [
        *_STATE_TOPIC_POSITION,
        *_SHARE_PARTITION,
        StructField("kind", StringType(), True),
        StructField("tombstone", BooleanType(), True),
        StructField("error", StringType(), True),
        StructField("has_state", BooleanType(), False),
        StructField("snapshot_epoch", IntegerType(), True),
        StructField("state_epoch", IntegerType(), True),
        StructField("leader_epoch", IntegerType(), True),
        StructField("start_offset", LongType(), True),
        StructField("delivery_complete_count", IntegerType(), True),
        StructField("end_offset", LongType(), True),
        StructField("available", LongType(), True),
        StructField("acknowledged", LongType(), True),
        StructField("archived", LongType(), True),
        StructField("unrecorded", LongType(), True),
        StructField("max_delivery_count", IntegerType(), True),
        StructField("corrupt_records", LongType(), False),
        StructField("restated", BooleanType(), False),
    ]
)
"""One row per state-topic record of a share-partition: its state after that record.

has_state is false before the first record and after a tombstone; the state
columns are null then. The counts are InFlightWindow's, from start_offset to
end_offset (one past the last persisted batch); acquired records are not
persisted, so they are among `unrecorded`. A corrupt record leaves the state
as it was, carries its error and adds one to corrupt_records (a running count
per share-partition). restated marks a snapshot whose state equals the state
before it (`replay.same_state`): Kafka force-snapshots a cold share-partition
every few minutes, and such a row says nothing new.
"""

REPLAYED_WITH_BATCHES_SCHEMA: Final = StructType(
    [
        *REPLAYED_SCHEMA.fields,
        StructField("state_batches", ArrayType(STATE_BATCH_TYPE, False), True),
    ]
)
"""REPLAYED_SCHEMA plus the replayed state's batches (null when there is no state).

Optional because it multiplies the output: every row repeats the whole
window, which is most of the cost of a replay that only needs the counts.
"""

DELIVERIES_SCHEMA: Final = StructType(
    [
        *_SHARE_PARTITION,
        StructField("first_offset", LongType(), False),
        StructField("last_offset", LongType(), False),
        StructField("max_delivery_count", IntegerType(), False),
        StructField("final_state", StringType(), False),
        StructField("final_delivery_count", IntegerType(), False),
        StructField("complete", BooleanType(), False),
        StructField("last_changed", TimestampType(), True),
    ]
)
"""Offset ranges of a share-partition that some state record mentioned, with their outcome.

Read from the batches each record *carried* (snapshots and updates, in
state-topic order), not from the replayed window: a write's own batches say
what happened to their offsets even when the same write moves the start
offset past them, and replay prunes those at once. So, per offset:
final_state and final_delivery_count are what the last record mentioning it
said ("available", "acknowledged", "archived"; an unknown state number as
"state N"); max_delivery_count is the highest count any record gave it.
complete says the range lies below the share-partition's last known start
offset: the group is done with it. Adjacent offsets with the same outcome
form one range; last_changed is the state-topic timestamp of the record that
first said an offset's final state and count (a later snapshot restating
them changes nothing), the latest of them over the range. Offsets no record
mentioned are not listed: the topic does not say how often they were
delivered (acquired records are not persisted).
"""

KAFKA_HEADERS_TYPE: Final = KAFKA_SCHEMA["headers"].dataType
"""The Kafka source's headers column type: a list of (key string, value binary)."""

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

_BatchTuple = tuple[int, int, int, int]


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
    keys = batch.column(0).to_pylist()
    values = batch.column(1).to_pylist()
    kept: list[int] = []
    columns: dict[str, list[Any]] = {field.name: [] for field in DECODED_SCHEMA.fields[3:]}
    group_ids, topic_ids, partitions = (
        columns["group_id"],
        columns["topic_id"],
        columns["partition"],
    )
    kinds, tombstones, errors = columns["kind"], columns["tombstone"], columns["error"]
    snapshot_epochs, state_epochs = columns["snapshot_epoch"], columns["state_epoch"]
    leader_epochs, start_offsets = columns["leader_epoch"], columns["start_offset"]
    complete_counts = columns["delivery_complete_count"]
    create_timestamps, write_timestamps = (
        columns["create_timestamp_ms"],
        columns["write_timestamp_ms"],
    )
    batch_lists: list[list[_BatchTuple] | None] = columns["batches"]

    for index, (key_bytes, value_bytes) in enumerate(zip(keys, values, strict=True)):
        error: str | None = None
        key: ShareStateKey | None = None
        record: StateRecord | None = None
        if key_bytes is None:
            error = "record has no key"
        else:
            try:
                key = decode_key(key_bytes)
            except StateRecordError as failure:
                error = f"key: {failure}"
            if key is not None:
                if wanted is not None and key.group_id not in wanted:
                    continue
                try:
                    record = decode_record(key_bytes, value_bytes)
                except StateRecordError as failure:
                    error = f"value: {failure}"
        kept.append(index)
        errors.append(error)
        if key is None:
            for name in (
                "group_id",
                "topic_id",
                "partition",
                "kind",
                "tombstone",
                "snapshot_epoch",
                "state_epoch",
                "leader_epoch",
                "start_offset",
                "delivery_complete_count",
                "create_timestamp_ms",
                "write_timestamp_ms",
                "batches",
            ):
                columns[name].append(None)
            continue
        group_ids.append(key.group_id)
        topic_ids.append(kafka_uuid(key.topic_id))
        partitions.append(key.partition)
        kinds.append(key.kind.name.lower())
        value = None if record is None else record.value
        tombstones.append(None if record is None else value is None)
        if value is None:
            for column in (
                snapshot_epochs,
                state_epochs,
                leader_epochs,
                start_offsets,
                complete_counts,
                create_timestamps,
                write_timestamps,
                batch_lists,
            ):
                column.append(None)
            continue
        snapshot_epochs.append(value.snapshot_epoch)
        leader_epochs.append(value.leader_epoch)
        start_offsets.append(value.start_offset)
        complete_counts.append(value.delivery_complete_count)
        if type(value) is ShareSnapshotValue:
            state_epochs.append(value.state_epoch)
            create_timestamps.append(value.create_timestamp)
            write_timestamps.append(value.write_timestamp)
        else:
            state_epochs.append(None)
            create_timestamps.append(None)
            write_timestamps.append(None)
        batch_lists.append(_batch_tuples(value.state_batches))

    positions = pa.array(kept, pa.int64())
    arrays = [batch.column(2).take(positions), batch.column(3).take(positions)]
    arrays.append(batch.column(4).take(positions))
    for field in DECODED_SCHEMA.fields[3:]:
        if field.name == "batches":
            arrays.append(_batches_array(batch_lists))
        else:
            arrays.append(pa.array(columns[field.name], _ARROW_SCALARS[field.name]))
    return pa.RecordBatch.from_arrays(arrays, names=DECODED_SCHEMA.fieldNames())


_ARROW_SCALARS: Final = {
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


def _batch_tuples(batches: tuple[StateBatch, ...]) -> list[_BatchTuple]:
    return [
        (batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        for batch in batches
    ]


def _batches_array(rows: list[list[_BatchTuple] | None]) -> Any:
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

_RAW_COLUMNS: Final = ("state_partition", "state_offset", "state_timestamp", "key", "value")


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
                head + _topic_uuid(topic_id).bytes for topic_id in sorted(set(topic_ids))
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


def _decoded_in_order(
    table: Any,
) -> tuple[SharePartitionKey | None, Any, list[StateRecord | None], list[str | None], list[str]]:
    """A share-partition's records in log order, decoded: (share-partition, the table in
    order, records (None where corrupt), errors, kinds)."""
    table = _in_log_order(table)
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


# --------------------------------------------------------------------------- replay


def replay_states(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
    with_batches: bool = False,
) -> DataFrame:
    """Per share-partition, the state after every record (REPLAYED_SCHEMA), in log order.

    Takes the state topic's records as the Kafka source yields them (see
    `share_partition_records` for the filters). All records of a
    share-partition live in one state-topic partition, so (state_partition,
    state_offset) is the order the share coordinator replays them in; each
    share-partition is one group of a grouped Arrow map, decoded with
    `records.decode_record` and replayed with `ShareStateReplayer` in one
    pass. A record that does not decode is a row with its error and the state
    unchanged. with_batches adds the replayed batches
    (REPLAYED_WITH_BATCHES_SCHEMA).
    """
    schema = REPLAYED_WITH_BATCHES_SCHEMA if with_batches else REPLAYED_SCHEMA

    def replay(key: tuple[Any, ...], table: Any) -> Any:
        return _replayed_table(table, schema, with_batches=with_batches)

    rows = share_partition_records(records, group_ids=group_ids, topic_ids=topic_ids)
    return rows.groupBy("share_partition").applyInArrow(replay, schema)


def _topic_uuid(topic_id: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def _in_log_order(table: Any) -> Any:
    return table.sort_by([("state_partition", "ascending"), ("state_offset", "ascending")])


def _replayed_table(table: Any, schema: StructType, *, with_batches: bool) -> Any:
    share_partition, table, records, errors, kinds = _decoded_in_order(table)
    if share_partition is None:
        return pa.Table.from_batches([], schema=_arrow_schema(schema, table))
    replayer = ShareStateReplayer()
    apply = replayer.apply
    current = replayer.state

    out: dict[str, list[Any]] = {field.name: [] for field in schema.fields[6:]}
    out["kind"] = kinds
    out["error"] = errors
    tombstones = out["tombstone"]
    corrupt_records = out["corrupt_records"]
    restated = out["restated"]
    has_state = out["has_state"]
    state_outputs = [out[name] for name in _STATE_OUTPUTS]
    state_batches: list[list[_BatchTuple] | None] = []
    no_state = (None,) * len(_STATE_OUTPUTS)
    corrupt = 0
    state: SharePartitionState | None = None
    for record in records:
        if record is None:
            corrupt += 1
            tombstones.append(None)
            restated.append(False)
        else:
            tombstones.append(record.value is None)
            before = state
            apply(record)
            state = current(share_partition)
            restated.append(
                before is not None
                and record.key.kind is StateRecordKind.SNAPSHOT
                and same_state(before, state)
            )
        corrupt_records.append(corrupt)
        has_state.append(state is not None)
        values = no_state if state is None else _state_summary(state)
        for column, value in zip(state_outputs, values, strict=True):
            column.append(value)
        if with_batches:
            state_batches.append(None if state is None else _batch_tuples(state.state_batches))

    rows = table.num_rows
    arrays = [table.column(name) for name in ("state_partition", "state_offset", "state_timestamp")]
    arrays.append(pa.array([share_partition.group_id] * rows, pa.string()))
    arrays.append(pa.array([kafka_uuid(share_partition.topic_id)] * rows, pa.string()))
    arrays.append(pa.array([share_partition.partition] * rows, pa.int32()))
    for field in schema.fields[6:]:
        if field.name == "state_batches":
            arrays.append(_batches_array(state_batches))
        else:
            arrays.append(pa.array(out[field.name], _ARROW_SCALARS[field.name]))
    return pa.Table.from_arrays(arrays, names=schema.fieldNames())


_STATE_OUTPUTS: Final = (
    "snapshot_epoch",
    "state_epoch",
    "leader_epoch",
    "start_offset",
    "delivery_complete_count",
    "end_offset",
    "available",
    "acknowledged",
    "archived",
    "unrecorded",
    "max_delivery_count",
)


def _state_summary(state: SharePartitionState) -> tuple[int, ...]:
    """The _STATE_OUTPUTS of a state; `window_counts` gives InFlightWindow's figures
    without building the window's runs (that was half the cost of a replay)."""
    counts = window_counts(state)
    return (
        state.snapshot_epoch,
        state.state_epoch,
        state.leader_epoch,
        state.start_offset,
        state.delivery_complete_count,
        counts.end_offset,
        counts.available,
        counts.acknowledged,
        counts.archived,
        counts.unrecorded,
        counts.max_delivery_count,
    )


def _arrow_schema(schema: StructType, like: Any) -> Any:
    """An empty result's Arrow schema: the input's timestamp type, the rest from the output."""
    fields = []
    for field in schema.fields:
        if field.name == "state_timestamp":
            fields.append(like.schema.field("state_timestamp"))
        elif field.name == "last_changed":
            fields.append(pa.field(field.name, like.schema.field("state_timestamp").type))
        elif field.name in ("batches", "state_batches"):
            fields.append(pa.field(field.name, _ARROW_BATCHES))
        else:
            fields.append(pa.field(field.name, _ARROW_SCALARS[field.name]))
    return pa.schema(fields)


# --------------------------------------------------------------------------- deliveries


def deliveries(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
    since_ms: int | None = None,
    corrupt: Accumulator[int] | None = None,
    gaps: Mapping[int, int] | None = None,
) -> DataFrame:
    """Per share-partition and offset range: highest delivery count and final state.

    Takes the state topic's records as `replay_states` does and reads the
    batches every record carried, in state-topic order (see DELIVERIES_SCHEMA
    for why not the replayed window). Records that do not decode are skipped;
    `replay_states` shows them. since_ms keeps only the offsets whose outcome
    was reached at or after that instant (epoch milliseconds), offset by
    offset, before neighbours are joined. corrupt, when given, is added the
    number of records skipped that way: a record of a schema version this
    code does not know yet must not silently shorten an audit. (An
    accumulator counts once per successful task; the caller persists the
    result so that its tasks run once.)

    What a share-partition's earliest record read says is dated only when
    that record opens its history (`replay.opens_history`); otherwise the
    outcomes it restates were reached before it, at a time the topic no
    longer holds, and last_changed is null. gaps (state-topic partition ->
    the first offset read after records that could not be read) treats the
    first record after a gap the same way.
    """
    since_us = None if since_ms is None else since_ms * 1000
    gap_after = dict(gaps or {})

    def ranges(key: tuple[Any, ...], table: Any) -> Any:
        result, skipped = _share_partition_deliveries(table, since_us, gap_after)
        if corrupt is not None and skipped:
            corrupt.add(skipped)
        return result

    rows = share_partition_records(records, group_ids=group_ids, topic_ids=topic_ids)
    return rows.groupBy("share_partition").applyInArrow(ranges, DELIVERIES_SCHEMA)


class _OffsetHistory:
    """Disjoint, sorted offset segments with what the records said about them so far.

    Each segment is [first, last, max_delivery_count, final_state, final_delivery_count,
    changed_at] (changed_at None: unknown). Neighbours that end up with the same outcome
    are joined, so a share-partition that acknowledged a million offsets in order holds
    one segment, not
    a million; unless `precise`, when neighbours must also have changed at the same time
    (so that what changed since a given time can be told apart), a joined segment keeps
    the latest change.
    """

    def __init__(self, *, precise: bool = False) -> None:
        self.firsts: list[int] = []
        self.segments: list[list[Any]] = []
        self._width = 6 if precise else 5

    def _split_at(self, offset: int) -> None:
        """Make offset the first offset of a segment if some segment covers it."""
        index = bisect.bisect_right(self.firsts, offset) - 1
        if index < 0:
            return
        segment = self.segments[index]
        if segment[0] < offset <= segment[1]:
            tail = [offset, segment[1], *segment[2:]]
            segment[1] = offset - 1
            self.segments.insert(index + 1, tail)
            self.firsts.insert(index + 1, offset)

    def record(self, first: int, last: int, state: int, count: int, at: int | None) -> None:
        """A record written at `at` said offsets first..last are in state with count."""
        segments = self.segments
        if segments and first > segments[-1][1]:
            # The common case: offsets beyond everything seen so far.
            self._append([first, last, count, state, count, at])
            return
        self._split_at(first)
        self._split_at(last + 1)
        start = bisect.bisect_left(self.firsts, first)
        stop = start
        replacement: list[list[Any]] = []
        cursor = first
        while stop < len(segments) and segments[stop][0] <= last:
            segment = segments[stop]
            if segment[0] > cursor:
                replacement.append([cursor, segment[0] - 1, count, state, count, at])
            unchanged = segment[3] == state and segment[4] == count
            replacement.append(
                [
                    segment[0],
                    segment[1],
                    max(segment[2], count),
                    state,
                    count,
                    segment[5] if unchanged else at,
                ]
            )
            cursor = segment[1] + 1
            stop += 1
        if cursor <= last:
            replacement.append([cursor, last, count, state, count, at])
        # Join equal neighbours, the ones just beside the replaced slice included.
        if start > 0:
            replacement.insert(0, segments[start - 1])
            start -= 1
        if stop < len(segments):
            replacement.append(segments[stop])
            stop += 1
        joined: list[list[Any]] = []
        for segment in replacement:
            if joined and self._joinable(joined[-1], segment):
                _join(joined[-1], segment)
            else:
                joined.append(segment)
        segments[start:stop] = joined
        self.firsts[start:stop] = [segment[0] for segment in joined]

    def _append(self, segment: list[Any]) -> None:
        segments = self.segments
        if segments and self._joinable(segments[-1], segment):
            _join(segments[-1], segment)
            return
        segments.append(segment)
        self.firsts.append(segment[0])

    def _joinable(self, left: list[Any], right: list[Any]) -> bool:
        width = self._width
        return (
            left[1] + 1 == right[0]
            and left[2:width] == right[2:width]
            # An outcome of unknown time never borrows its neighbour's time.
            and (left[5] is None) == (right[5] is None)
        )


def _join(left: list[Any], right: list[Any]) -> None:
    left[1] = right[1]
    if right[5] is not None and (left[5] is None or right[5] > left[5]):
        left[5] = right[5]


_STATE_NAMES: Final = {state.value: state.name.lower() for state in DeliveryState}


def _state_name(delivery_state: int) -> str:
    """A dict lookup, not DeliveryState(n): this runs once per range, millions of times."""
    name = _STATE_NAMES.get(delivery_state)
    return name if name is not None else f"state {delivery_state}"


_UNCHANGED_START_OFFSET: Final = -1
"""An update's start offset -1 leaves the start offset as it was (the record's own rule)."""


def _share_partition_deliveries(
    table: Any, since_us: int | None, gaps: Mapping[int, int]
) -> tuple[Any, int]:
    """The share-partition's ranges, and how many of its records did not decode."""
    timestamp_type = table.schema.field("state_timestamp").type
    share_partition, table, records, errors, _ = _decoded_in_order(table)
    skipped = sum(1 for error in errors if error is not None)
    if share_partition is None:
        return pa.Table.from_batches([], schema=_arrow_schema(DELIVERIES_SCHEMA, table)), skipped
    written: list[int | None] = table.column("state_timestamp").cast(pa.int64()).to_pylist()
    state_partitions = table.column("state_partition").to_pylist()
    state_offsets = table.column("state_offset").to_pylist()

    history = _OffsetHistory(precise=since_us is not None)
    record_batch = history.record
    final_start_offset = _UNCHANGED_START_OFFSET
    opening = True
    previous_offset: int | None = None
    for record, at, state_partition, state_offset in zip(
        records, written, state_partitions, state_offsets, strict=True
    ):
        gap = gaps.get(state_partition)
        if (
            gap is not None
            and state_offset >= gap
            and (previous_offset is None or previous_offset < gap)
        ):
            opening = True
        previous_offset = state_offset
        if record is None:
            continue
        if opening:
            opening = False
            if not opens_history(record):
                at = None
        value = record.value
        if value is None:
            continue
        start_offset = value.start_offset
        if type(value) is ShareSnapshotValue or start_offset != _UNCHANGED_START_OFFSET:
            final_start_offset = start_offset
        for batch in value.state_batches:
            if batch.last_offset >= batch.first_offset:
                record_batch(
                    batch.first_offset,
                    batch.last_offset,
                    batch.delivery_state,
                    batch.delivery_count,
                    at,
                )

    ranges: list[list[Any]] = []
    for first, last, max_count, delivery_state, count, at in history.segments:
        if since_us is not None and (at is None or at < since_us):
            continue
        pieces = [(first, last)]
        if first < final_start_offset <= last:
            pieces = [(first, final_start_offset - 1), (final_start_offset, last)]
        for piece_first, piece_last in pieces:
            complete = piece_last < final_start_offset
            outcome = [max_count, _state_name(delivery_state), count, complete]
            previous = ranges[-1] if ranges else None
            if (
                previous is not None
                and previous[1] + 1 == piece_first
                and previous[2:6] == outcome
                and (previous[6] is None) == (at is None)
            ):
                previous[1] = piece_last
                if at is not None and (previous[6] is None or at > previous[6]):
                    previous[6] = at
            else:
                ranges.append([piece_first, piece_last, *outcome, at])
    if not ranges:
        return pa.Table.from_batches([], schema=_arrow_schema(DELIVERIES_SCHEMA, table)), skipped
    rows = len(ranges)
    arrays = [
        pa.array([share_partition.group_id] * rows, pa.string()),
        pa.array([kafka_uuid(share_partition.topic_id)] * rows, pa.string()),
        pa.array([share_partition.partition] * rows, pa.int32()),
    ]
    for position, field in enumerate(DELIVERIES_SCHEMA.fields[3:]):
        values = [row[position] for row in ranges]
        if field.name == "last_changed":
            arrays.append(pa.array(values, pa.int64()).cast(timestamp_type))
        else:
            arrays.append(pa.array(values, _ARROW_SCALARS[field.name]))
    return pa.Table.from_arrays(arrays, names=DELIVERIES_SCHEMA.fieldNames()), skipped


# --------------------------------------------------------------------------- history

HISTORY_PRUNED: Final = "pruned"
HISTORY_GAP: Final = "gap"

HISTORY_SCHEMA: Final = StructType(
    [
        *_SHARE_PARTITION,
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
        .agg(F.min(F.struct(*_RAW_COLUMNS)).alias("_first"))
        .select("_first.*")
    )

    def judge(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield _history_batch(batch, gap_after)

    return first.mapInArrow(judge, HISTORY_SCHEMA)


def _history_batch(batch: Any, gaps: Mapping[int, int]) -> Any:
    columns = {name: batch.column(name) for name in _RAW_COLUMNS}
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


# --------------------------------------------------------------------------- timeline

SOURCE_OFFSETS_SCHEMA: Final = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("log_end_offset", LongType(), True),
        StructField("first_offset_read", LongType(), True),
    ]
)
"""Per source-topic partition: its log end offset when the audit ran, and the first
offset from which `timeline`'s source positions were read (null: not read)."""

TIMELINE_SCHEMA: Final = StructType(
    [
        *_SHARE_PARTITION[:2],
        StructField("topic", StringType(), True),
        _SHARE_PARTITION[2],
        StructField("time", TimestampType(), True),
        StructField("state_partition", IntegerType(), True),
        StructField("state_offset", LongType(), True),
        StructField("record", StringType(), True),
        StructField("start_offset", LongType(), True),
        StructField("delivery_complete_count", IntegerType(), True),
        StructField("end_offset", LongType(), True),
        StructField("available", LongType(), True),
        StructField("acknowledged", LongType(), True),
        StructField("archived", LongType(), True),
        StructField("unrecorded", LongType(), True),
        StructField("max_delivery_count", IntegerType(), True),
        StructField("log_end_offset", LongType(), True),
        StructField("lag", LongType(), True),
        StructField("lag_basis", StringType(), True),
    ]
)
"""A share-partition over time: one row per state record, its state after it, except
snapshots that restate the state before them (REPLAYED_SCHEMA's restated).

time is the state record's timestamp (when the share coordinator wrote it);
record is "snapshot", "update", "tombstone" or "corrupt" (a record that did
not decode, after which the state is unchanged). The state columns are
REPLAYED_SCHEMA's (null without a state: before the first record, after a
tombstone). log_end_offset is the source partition's log end offset at that
time, lag Kafka's (KIP-1226) from it; lag_basis says where the log end offset
came from:

* "end_offsets": the share-partition's last row, whose state is still the
  state now: the log end offset read when the audit ran, so the lag is the
  one `kshare describe` shows;
* "record_timestamps": an earlier row: one past the highest source offset
  whose record timestamp is at or before the row's time (never below the
  window's end or the start offset, which prove records existed). Exact for
  LogAppendTime topics and for producers whose clocks agree with the
  broker's; an estimate otherwise;
* null: not known (the source topic was not read, or the records before
  that time are gone to retention); log_end_offset and lag are null.

lag is also null where Kafka's is (start offset or delivery-complete count
unknown, e.g. after an offset reset).
"""

LAG_FROM_END_OFFSETS: Final = "end_offsets"
LAG_FROM_RECORD_TIMESTAMPS: Final = "record_timestamps"


def timeline(
    replayed: DataFrame,
    topic_names: DataFrame,
    *,
    source_offsets: DataFrame | None = None,
    source_positions: DataFrame | None = None,
) -> DataFrame:
    """TIMELINE_SCHEMA rows from `replay_states` rows.

    source_offsets (SOURCE_OFFSETS_SCHEMA) gives the log end offsets when the
    audit ran; source_positions (topic, partition, offset, timestamp of the
    source topic's records, as `read_kafka` returns them, from
    first_offset_read on) lets earlier rows have a log end offset too. Either
    may be None: the rows it would have dated get a null lag.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    # A restated snapshot is no point: an idle share-partition would gain one every
    # cold-snapshot interval, and the previous row already is its state since then.
    rows = with_topic_names(replayed.filter(~F.col("restated")), topic_names)
    newest_first = Window.partitionBy(*SHARE_PARTITION_COLUMNS).orderBy(
        F.col("state_partition").desc(), F.col("state_offset").desc()
    )
    rows = rows.withColumn("_last", F.row_number().over(newest_first) == 1).withColumn(
        "_max_source_offset", F.lit(None).cast(LongType())
    )
    if source_positions is not None:
        # Source records and state rows in one time order per source partition: the
        # running highest source offset at a state row is the log end offset then, less one.
        positions = source_positions.select(
            "topic",
            "partition",
            F.col("timestamp").alias("state_timestamp"),
            F.col("offset").alias("_source_offset"),
            F.lit(0).alias("_order"),
        )
        events = rows.withColumn("_order", F.lit(1)).withColumn(
            "_source_offset", F.lit(None).cast(LongType())
        )
        in_time = (
            Window.partitionBy("topic", "partition")
            .orderBy("state_timestamp", "_order", "_source_offset")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        rows = (
            events.unionByName(positions, allowMissingColumns=True)
            .withColumn("_max_source_offset", F.max("_source_offset").over(in_time))
            .filter(F.col("_order") == 1)
            .drop("_order", "_source_offset")
        )
    if source_offsets is not None:
        rows = rows.join(F.broadcast(source_offsets), ["topic", "partition"], "left")
    else:
        rows = rows.withColumn("log_end_offset", F.lit(None).cast(LongType())).withColumn(
            "first_offset_read", F.lit(None).cast(LongType())
        )
    rows = rows.select(*_TIMELINE_INPUTS)

    def lag(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield _timeline_batch(batch)

    return rows.mapInArrow(lag, TIMELINE_SCHEMA)


_TIMELINE_INPUTS: Final = (
    "group_id",
    "topic_id",
    "topic",
    "partition",
    "state_timestamp",
    "state_partition",
    "state_offset",
    "kind",
    "tombstone",
    "error",
    "has_state",
    "start_offset",
    "delivery_complete_count",
    "end_offset",
    "available",
    "acknowledged",
    "archived",
    "unrecorded",
    "max_delivery_count",
    "_last",
    "_max_source_offset",
    "log_end_offset",
    "first_offset_read",
)


def _timeline_batch(batch: Any) -> Any:
    column = {name: batch.column(index) for index, name in enumerate(_TIMELINE_INPUTS)}
    values = {
        name: column[name].to_pylist()
        for name in (
            "kind",
            "tombstone",
            "error",
            "has_state",
            "start_offset",
            "delivery_complete_count",
            "end_offset",
            "_last",
            "_max_source_offset",
            "log_end_offset",
            "first_offset_read",
        )
    }
    records: list[str | None] = []
    log_end_offsets: list[int | None] = []
    lags: list[int | None] = []
    bases: list[str | None] = []
    for index in range(batch.num_rows):
        if values["error"][index] is not None:
            records.append("corrupt")
        elif values["tombstone"][index]:
            records.append("tombstone")
        else:
            records.append(values["kind"][index])
        log_end_offset, basis = _log_end_offset_then(values, index)
        start_offset = values["start_offset"][index]
        complete = values["delivery_complete_count"][index]
        lag = None
        if log_end_offset is not None and start_offset is not None and complete is not None:
            lag = share_partition_lag(log_end_offset, start_offset, complete)
        log_end_offsets.append(log_end_offset)
        lags.append(lag)
        bases.append(basis)
    arrays = [column[name] for name in _TIMELINE_INPUTS[:4]]
    arrays += [column["state_timestamp"], column["state_partition"], column["state_offset"]]
    arrays.append(pa.array(records, pa.string()))
    arrays += [
        column[name]
        for name in (
            "start_offset",
            "delivery_complete_count",
            "end_offset",
            "available",
            "acknowledged",
            "archived",
            "unrecorded",
            "max_delivery_count",
        )
    ]
    arrays.append(pa.array(log_end_offsets, pa.int64()))
    arrays.append(pa.array(lags, pa.int64()))
    arrays.append(pa.array(bases, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=TIMELINE_SCHEMA.fieldNames())


def _log_end_offset_then(values: dict[str, list[Any]], index: int) -> tuple[int | None, str | None]:
    """The source partition's log end offset at a row's time, and where it came from."""
    if not values["has_state"][index]:
        return None, None
    if values["_last"][index] and values["log_end_offset"][index] is not None:
        return values["log_end_offset"][index], LAG_FROM_END_OFFSETS
    first_read = values["first_offset_read"][index]
    if first_read is None:
        return None, None
    # Offsets the window holds, and the start offset, existed at that time.
    floor = max(values["start_offset"][index], values["end_offset"][index] or 0, 0)
    highest = values["_max_source_offset"][index]
    if highest is not None:
        return max(highest + 1, floor), LAG_FROM_RECORD_TIMESTAMPS
    if floor >= first_read:
        # Every record from first_read on was read and none is this old: the log ended
        # at first_read or before, and the floor is at least that.
        return floor, LAG_FROM_RECORD_TIMESTAMPS
    return None, None


# --------------------------------------------------------------------------- archived

ARCHIVED_OFFSETS_SCHEMA: Final = StructType(
    [
        *_SHARE_PARTITION,
        StructField("offset", LongType(), False),
        StructField("delivery_count", IntegerType(), False),
        StructField("archived_at", TimestampType(), True),
    ]
)
"""One row per offset whose final state is Archived (DELIVERIES_SCHEMA's final_state).

delivery_count is the highest count the offset reached; archived_at the
state-topic timestamp of the record that archived it (DELIVERIES' last_changed).
"""

ARCHIVED_SCHEMA: Final = StructType(
    [
        *_SHARE_PARTITION[:2],
        StructField("topic", StringType(), True),
        _SHARE_PARTITION[2],
        StructField("offset", LongType(), False),
        StructField("delivery_count", IntegerType(), False),
        StructField("archived_at", TimestampType(), True),
        StructField("record_found", BooleanType(), False),
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
        StructField("headers", KAFKA_HEADERS_TYPE, True),
    ]
)
"""An archived offset with its source record (key, value, timestamp, headers as the
Kafka source has them). record_found is false when the source topic no longer holds
the record (retention, a deleted topic): the offset is still reported."""


def archived_offsets(ranges: DataFrame) -> DataFrame:
    """The offsets of `deliveries` ranges whose final state is archived, one row each."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    return ranges.filter(F.col("final_state") == DeliveryState.ARCHIVED.name.lower()).select(
        *SHARE_PARTITION_COLUMNS,
        F.explode(F.sequence("first_offset", "last_offset")).alias("offset"),
        F.col("max_delivery_count").alias("delivery_count"),
        F.col("last_changed").alias("archived_at"),
    )


def archived_records(
    offsets: DataFrame, topic_names: DataFrame, source_records: DataFrame | None
) -> DataFrame:
    """Archived offsets joined with the source topic's records (ARCHIVED_SCHEMA).

    source_records is the source topic as `read_kafka` returns it (any offset
    range covering the archived offsets); None when it could not be read.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    named = with_topic_names(offsets, topic_names)
    record_columns = ("key", "value", "timestamp", "timestampType", "headers")
    if source_records is None:
        joined = named.withColumn("_found", F.lit(False))
        for name, field in zip(
            record_columns, ARCHIVED_SCHEMA.fields[-len(record_columns) :], strict=True
        ):
            joined = joined.withColumn(name, F.lit(None).cast(field.dataType))
    else:
        records = source_records.select(
            "topic", "partition", "offset", *record_columns, F.lit(True).alias("_found")
        )
        joined = named.join(records, ["topic", "partition", "offset"], "left")
    return joined.select(
        "group_id",
        "topic_id",
        "topic",
        "partition",
        "offset",
        "delivery_count",
        "archived_at",
        F.coalesce(F.col("_found"), F.lit(False)).alias("record_found"),
        *record_columns,
    )
