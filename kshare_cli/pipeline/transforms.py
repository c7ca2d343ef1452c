"""Pure DataFrame transforms over `__share_group_state`: decode, replay, deliveries.

Every step that needs Kafka's knowledge calls the code in `state/` that the
sandbox's share coordinator and the dashboard run: `records.decode_record`
decodes, `replay.ShareStateReplayer` replays, `window.InFlightWindow` counts.
There is one replay, not two; what Spark adds is only where it runs.

* `decode_state_records`: the records of the state topic (the Kafka source's
  columns) -> one flat row per record, batches as an array of structs. A
  record that does not decode is a row with `error` set, never a failed job.
* `replay_states`: per share-partition, in state-topic order, the state after
  every record (the base of the `timeline` job). Share-partitions are
  independent, so each is one group of a grouped Arrow map and the work
  spreads over every core.
* `deliveries`: per share-partition and offset range, the highest delivery
  count any replayed state recorded and the last state recorded.

The Python work happens in Arrow UDFs (`mapInArrow`, `applyInArrow`), which
hand over whole column batches: pandas would turn the many nullable integer
columns into floats and cost a conversion per batch for nothing.
"""

from __future__ import annotations

import base64
import bisect
import uuid
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
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
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordError,
    StateRecordKind,
    decode_key,
    decode_record,
)
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState, ShareStateReplayer
from kshare_cli.state.window import InFlightWindow, WindowState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "DECODED_SCHEMA",
    "DELIVERIES_SCHEMA",
    "REPLAYED_SCHEMA",
    "REPLAYED_WITH_BATCHES_SCHEMA",
    "SHARE_PARTITION_COLUMNS",
    "STATE_BATCH_TYPE",
    "decode_state_records",
    "deliveries",
    "replay_states",
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
    ]
)
"""One row per state-topic record of a share-partition: its state after that record.

has_state is false before the first record and after a tombstone; the state
columns are null then. The counts are InFlightWindow's, from start_offset to
end_offset (one past the last persisted batch); acquired records are not
persisted, so they are among `unrecorded`. A corrupt record leaves the state
as it was, carries its error and adds one to corrupt_records (a running count
per share-partition).
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
    ]
)
"""Offset ranges of a share-partition that some replayed state recorded.

max_delivery_count is the highest delivery count any state gave the offsets;
final_state and final_delivery_count are what the last state recording them
said ("available", "acknowledged", "archived"). complete says the range lies
below the share-partition's last start offset: the group is done with it,
even when the last recorded state was Available -- replay prunes batches
below a new start offset, so an acknowledgement written in the same record
that moves the start offset past it is never part of any state. Offsets no
state ever recorded are not listed: the topic does not say how often they
were delivered.
"""

_SNAPSHOT: Final = StateRecordKind.SNAPSHOT.name.lower()
_UPDATE: Final = StateRecordKind.UPDATE.name.lower()
_KIND_BY_NAME: Final = {_SNAPSHOT: StateRecordKind.SNAPSHOT, _UPDATE: StateRecordKind.UPDATE}

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


def _read_batches(column: Any) -> list[list[_BatchTuple] | None]:
    """A list<struct> column back to Python lists, through its flat children."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(array) == 0:
        return []
    offsets = array.offsets.to_pylist()
    values = array.values
    firsts = values.field("first_offset").to_pylist()
    lasts = values.field("last_offset").to_pylist()
    states = values.field("delivery_state").to_pylist()
    counts = values.field("delivery_count").to_pylist()
    valid = array.is_valid().to_pylist()
    rows: list[list[_BatchTuple] | None] = []
    for index, is_valid in enumerate(valid):
        if not is_valid:
            rows.append(None)
            continue
        start, end = offsets[index], offsets[index + 1]
        rows.append(
            list(
                zip(
                    firsts[start:end],
                    lasts[start:end],
                    states[start:end],
                    counts[start:end],
                    strict=True,
                )
            )
        )
    return rows


# --------------------------------------------------------------------------- replay


def replay_states(decoded: DataFrame, *, with_batches: bool = False) -> DataFrame:
    """Per share-partition, the state after every record (REPLAYED_SCHEMA), in log order.

    All records of a share-partition live in one state-topic partition, so
    (state_partition, state_offset) is the order the share coordinator
    replays them in. Records whose key could not be decoded belong to no
    share-partition and are left out here; `decoded` still counts them.
    with_batches adds the replayed batches (REPLAYED_WITH_BATCHES_SCHEMA).
    """
    schema = REPLAYED_WITH_BATCHES_SCHEMA if with_batches else REPLAYED_SCHEMA

    def replay(key: tuple[Any, ...], table: Any) -> Any:
        return _replayed_table(key, table, schema, with_batches=with_batches)

    return decoded.groupBy(*SHARE_PARTITION_COLUMNS).applyInArrow(replay, schema)


def _topic_uuid(topic_id: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def _in_log_order(table: Any) -> Any:
    return table.sort_by([("state_partition", "ascending"), ("state_offset", "ascending")])


def _replay(
    share_partition: SharePartitionKey, table: Any
) -> Iterator[tuple[SharePartitionState | None, int]]:
    """The state after each row of a share-partition's decoded table (already in log order),
    with the running count of corrupt records; the replay is `ShareStateReplayer`'s."""
    record_keys = {name: share_partition.record_key(kind) for name, kind in _KIND_BY_NAME.items()}
    column = {name: table.column(name).to_pylist() for name in _REPLAY_INPUTS}
    batch_lists = _read_batches(table.column("batches"))
    errors = column["error"]
    kinds = column["kind"]
    replayer = ShareStateReplayer()
    corrupt = 0
    state: SharePartitionState | None = None
    for index in range(table.num_rows):
        if errors[index] is not None:
            corrupt += 1
        else:
            replayer.apply(_record(record_keys[kinds[index]], column, batch_lists, index))
            state = replayer.state(share_partition)
        yield state, corrupt


def _group_key(key: tuple[Any, ...]) -> tuple[str, str, int] | None:
    group_id, topic_id, partition = (scalar.as_py() for scalar in key)
    if group_id is None or topic_id is None or partition is None:
        return None
    return group_id, topic_id, partition


def _replayed_table(
    key: tuple[Any, ...], table: Any, schema: StructType, *, with_batches: bool
) -> Any:
    group_key = _group_key(key)
    if group_key is None:
        return pa.Table.from_batches([], schema=_arrow_schema(schema, table))
    group_id, topic_id, partition = group_key
    table = _in_log_order(table)
    share_partition = SharePartitionKey(group_id, _topic_uuid(topic_id), partition)

    out: dict[str, list[Any]] = {field.name: [] for field in schema.fields[6:]}
    for name in ("kind", "tombstone", "error"):
        out[name] = table.column(name).to_pylist()
    corrupt_records = out["corrupt_records"]
    has_state = out["has_state"]
    state_outputs = [out[name] for name in _STATE_OUTPUTS]
    state_batches: list[list[_BatchTuple] | None] = []
    no_state = (None,) * len(_STATE_OUTPUTS)
    for state, corrupt in _replay(share_partition, table):
        corrupt_records.append(corrupt)
        has_state.append(state is not None)
        values = no_state if state is None else _state_summary(state)
        for column, value in zip(state_outputs, values, strict=True):
            column.append(value)
        if with_batches:
            state_batches.append(None if state is None else _batch_tuples(state.state_batches))

    rows = table.num_rows
    arrays = [table.column(name) for name in ("state_partition", "state_offset", "state_timestamp")]
    arrays.append(pa.array([group_id] * rows, pa.string()))
    arrays.append(pa.array([topic_id] * rows, pa.string()))
    arrays.append(pa.array([partition] * rows, pa.int32()))
    for field in schema.fields[6:]:
        if field.name == "state_batches":
            arrays.append(_batches_array(state_batches))
        else:
            arrays.append(pa.array(out[field.name], _ARROW_SCALARS[field.name]))
    return pa.Table.from_arrays(arrays, names=schema.fieldNames())


_REPLAY_INPUTS: Final = (
    "kind",
    "tombstone",
    "error",
    "snapshot_epoch",
    "state_epoch",
    "leader_epoch",
    "start_offset",
    "delivery_complete_count",
    "create_timestamp_ms",
    "write_timestamp_ms",
)


def _record(
    key: ShareStateKey,
    column: dict[str, list[Any]],
    batch_lists: list[list[_BatchTuple] | None],
    index: int,
) -> StateRecord:
    """A decoded row back to the StateRecord the replayer takes (the codec's own types)."""
    if column["tombstone"][index]:
        return StateRecord(key, None)
    batches = tuple(
        StateBatch(first, last, state, count)
        for first, last, state, count in batch_lists[index] or ()
    )
    if key.kind is StateRecordKind.SNAPSHOT:
        return StateRecord(
            key,
            ShareSnapshotValue(
                column["snapshot_epoch"][index],
                column["state_epoch"][index],
                column["leader_epoch"][index],
                column["start_offset"][index],
                column["delivery_complete_count"][index],
                column["create_timestamp_ms"][index],
                column["write_timestamp_ms"][index],
                batches,
            ),
        )
    return StateRecord(
        key,
        ShareUpdateValue(
            column["snapshot_epoch"][index],
            column["leader_epoch"][index],
            column["start_offset"][index],
            column["delivery_complete_count"][index],
            batches,
        ),
    )


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
    """The _STATE_OUTPUTS of a state; the window's runs are walked once, not once per count."""
    window = InFlightWindow.from_state(state)
    counts = dict.fromkeys(WindowState, 0)
    max_delivery_count = 0
    for run in window.runs:
        counts[run.state] += run.last_offset - run.first_offset + 1
        if run.delivery_count > max_delivery_count:
            max_delivery_count = run.delivery_count
    return (
        state.snapshot_epoch,
        state.state_epoch,
        state.leader_epoch,
        state.start_offset,
        state.delivery_complete_count,
        window.end_offset,
        counts[WindowState.AVAILABLE],
        counts[WindowState.ACKNOWLEDGED],
        counts[WindowState.ARCHIVED],
        counts[WindowState.UNRECORDED],
        max_delivery_count,
    )


def _arrow_schema(schema: StructType, like: Any) -> Any:
    """An empty result's Arrow schema: the input's timestamp type, the rest from the output."""
    fields = []
    for field in schema.fields:
        if field.name == "state_timestamp":
            fields.append(like.schema.field("state_timestamp"))
        elif field.name in ("batches", "state_batches"):
            fields.append(pa.field(field.name, _ARROW_BATCHES))
        else:
            fields.append(pa.field(field.name, _ARROW_SCALARS[field.name]))
    return pa.schema(fields)


# --------------------------------------------------------------------------- deliveries


def deliveries(decoded: DataFrame) -> DataFrame:
    """Per share-partition and offset range: highest delivery count and last recorded state.

    Takes the decoded records (DECODED_SCHEMA) and replays them with the
    same replay as `replay_states`, so what counts as a share-partition's
    state is exactly what replay says, batch merging included; only each
    state's batches that differ from the state before are looked at.
    Adjacent offsets with the same outcome form one range.
    """
    return decoded.groupBy(*SHARE_PARTITION_COLUMNS).applyInArrow(
        _share_partition_deliveries, DELIVERIES_SCHEMA
    )


class _OffsetHistory:
    """Disjoint, sorted offset segments with what the states said about them so far.

    Each segment is [first, last, max_delivery_count, final_state, final_delivery_count].
    """

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.segments: list[list[int]] = []

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

    def record(self, first: int, last: int, state: int, count: int) -> None:
        """A state said offsets first..last are in state with delivery count count."""
        self._split_at(first)
        self._split_at(last + 1)
        start = bisect.bisect_left(self.firsts, first)
        stop = start
        replacement: list[list[int]] = []
        cursor = first
        while stop < len(self.segments) and self.segments[stop][0] <= last:
            segment = self.segments[stop]
            if segment[0] > cursor:
                replacement.append([cursor, segment[0] - 1, count, state, count])
            replacement.append([segment[0], segment[1], max(segment[2], count), state, count])
            cursor = segment[1] + 1
            stop += 1
        if cursor <= last:
            replacement.append([cursor, last, count, state, count])
        self.segments[start:stop] = replacement
        self.firsts[start:stop] = [segment[0] for segment in replacement]


def _state_name(delivery_state: int) -> str:
    try:
        return DeliveryState(delivery_state).name.lower()
    except ValueError:
        return f"state {delivery_state}"


def _share_partition_deliveries(key: tuple[Any, ...], table: Any) -> Any:
    empty = pa.Table.from_batches([], schema=_arrow_schema(DELIVERIES_SCHEMA, table))
    group_key = _group_key(key)
    if group_key is None:
        return empty
    group_id, topic_id, partition = group_key
    share_partition = SharePartitionKey(group_id, _topic_uuid(topic_id), partition)

    history = _OffsetHistory()
    previous: tuple[StateBatch, ...] = ()
    final_start_offset = -1
    for state, _ in _replay(share_partition, _in_log_order(table)):
        if state is None:
            previous = ()
            continue
        final_start_offset = state.start_offset
        batches = state.state_batches
        if batches is previous:
            continue
        # A state repeats most batches of the one before; only what changed is news,
        # and recording a batch again would not change the outcome.
        seen = set(previous)
        for batch in batches:
            if batch not in seen:
                history.record(
                    batch.first_offset,
                    batch.last_offset,
                    batch.delivery_state,
                    batch.delivery_count,
                )
        previous = batches

    ranges: list[list[Any]] = []
    for first, last, max_count, delivery_state, count in history.segments:
        pieces = [(first, last)]
        if first < final_start_offset <= last:
            pieces = [(first, final_start_offset - 1), (final_start_offset, last)]
        for piece_first, piece_last in pieces:
            complete = piece_last < final_start_offset
            outcome = [max_count, _state_name(delivery_state), count, complete]
            if ranges and ranges[-1][4:] == outcome and ranges[-1][3] == piece_first - 1:
                ranges[-1][3] = piece_last
            else:
                ranges.append([None, None, piece_first, piece_last, *outcome])
    if not ranges:
        return empty
    rows = len(ranges)
    arrays = [
        pa.array([group_id] * rows, pa.string()),
        pa.array([topic_id] * rows, pa.string()),
        pa.array([partition] * rows, pa.int32()),
    ]
    for position, field in enumerate(DELIVERIES_SCHEMA.fields[3:], start=2):
        arrays.append(pa.array([row[position] for row in ranges], _ARROW_SCALARS[field.name]))
    return pa.Table.from_arrays(arrays, names=DELIVERIES_SCHEMA.fieldNames())
