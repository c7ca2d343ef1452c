"""The timeline audit: each share-partition's state after every record, with its lag.

* `replay_states`: per share-partition, in state-topic order, the state after
  every record. Share-partitions are independent, so each is decoded and
  replayed in one pass by one Python function
  (`state_records.per_share_partition`: Spark groups the undecoded records,
  or, where each input partition holds whole state-topic partitions, each
  Python worker splits its own), and the work spreads over every core.
  `window.window_counts` counts (the figures of `window.InFlightWindow`).
  There is one replay, not two; what Spark adds is only where it runs.
* `timeline`: the replayed states with topic names, log end offsets and lag
  (`lag.share_partition_lag`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any, Final

import numpy as np
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

from kshare_cli.pipeline.replay_columns import WINDOW_FIGURES, replayed_columns
from kshare_cli.pipeline.state_records import (
    ARROW_TYPES,
    NAMED_SHARE_PARTITION_FIELDS,
    SHARE_PARTITION_COLUMNS,
    SHARE_PARTITION_FIELDS,
    STATE_BATCH_TYPE,
    STATE_TOPIC_POSITION_FIELDS,
    BatchTuple,
    arrow_schema,
    batch_tuples,
    batches_array,
    decoded_in_order,
    in_log_order,
    per_share_partition,
    share_partition_records,
    with_topic_names,
)
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import StateRecordKind, decode_key
from kshare_cli.state.replay import SharePartitionState, ShareStateReplayer, same_state
from kshare_cli.state.window import window_counts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "LAG_FROM_END_OFFSETS",
    "LAG_FROM_RECORD_TIMESTAMPS",
    "REPLAYED_SCHEMA",
    "REPLAYED_WITH_BATCHES_SCHEMA",
    "SOURCE_OFFSETS_SCHEMA",
    "TIMELINE_SCHEMA",
    "replay_states",
    "timeline",
]


_WINDOW_FIELDS: Final = [
    StructField("start_offset", LongType(), True),
    StructField("delivery_complete_count", IntegerType(), True),
    StructField("end_offset", LongType(), True),
    StructField("available", LongType(), True),
    StructField("acknowledged", LongType(), True),
    StructField("archived", LongType(), True),
    StructField("archiving", LongType(), True),
    StructField("unrecorded", LongType(), True),
    StructField("max_delivery_count", IntegerType(), True),
]
"""A state as its in-flight window's figures (`window.window_counts`): the columns
REPLAYED_SCHEMA and TIMELINE_SCHEMA share. archiving counts Kafka 4.4's ARCHIVING
records (on their way to the group's dead-letter queue: never delivered again, not yet
delivery-complete), apart from archived; always 0 before 4.4."""

REPLAYED_SCHEMA: Final = StructType(
    [
        *STATE_TOPIC_POSITION_FIELDS,
        *SHARE_PARTITION_FIELDS,
        StructField("kind", StringType(), True),
        StructField("tombstone", BooleanType(), True),
        StructField("error", StringType(), True),
        StructField("has_state", BooleanType(), False),
        StructField("snapshot_epoch", IntegerType(), True),
        StructField("state_epoch", IntegerType(), True),
        StructField("leader_epoch", IntegerType(), True),
        *_WINDOW_FIELDS,
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


# --------------------------------------------------------------------------- replay


def replay_states(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
    with_batches: bool = False,
    whole_state_partitions: bool = False,
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
    (REPLAYED_WITH_BATCHES_SCHEMA). whole_state_partitions: each input
    partition of records holds whole state-topic partitions, so no exchange
    is needed (`state_records.per_share_partition`).
    """
    schema = REPLAYED_WITH_BATCHES_SCHEMA if with_batches else REPLAYED_SCHEMA

    def replay(table: Any) -> Any:
        return _replayed_table(table, schema, with_batches=with_batches)

    rows = share_partition_records(records, group_ids=group_ids, topic_ids=topic_ids)
    return per_share_partition(rows, replay, schema, whole_state_partitions=whole_state_partitions)


def _replayed_table(table: Any, schema: StructType, *, with_batches: bool) -> Any:
    """The share-partition's REPLAYED_SCHEMA rows: column-wise when its records allow
    (`replay_columns`), else record by record."""
    if not with_batches and table.num_rows:
        table = in_log_order(table)
        figures = replayed_columns(
            table.column("key").combine_chunks(), table.column("value").combine_chunks()
        )
        if figures is not None:
            return _figures_table(table, figures, schema)
    return _replayed_records(table, schema, with_batches=with_batches)


def _figures_table(table: Any, figures: dict[str, Any], schema: StructType) -> Any:
    """REPLAYED_SCHEMA columns from `replay_columns.replayed_columns` figures: every record
    decoded (no error, no tombstone), each with a state."""
    rows = table.num_rows
    share_partition = decode_key(table.column("key")[0].as_py())
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(~figures["is_snapshot"]).cast(pa.int8()), pa.array(["snapshot", "update"])
    ).cast(pa.string())
    no = np.zeros(rows, dtype=bool)
    columns: dict[str, Any] = {
        "group_id": pa.array([share_partition.group_id] * rows, pa.string()),
        "topic_id": pa.array([kafka_uuid(share_partition.topic_id)] * rows, pa.string()),
        "partition": pa.array(np.full(rows, share_partition.partition, dtype=np.int32)),
        "kind": kinds,
        "tombstone": pa.array(no),
        "error": pa.nulls(rows, pa.string()),
        "has_state": pa.array(~no),
        "corrupt_records": pa.array(np.zeros(rows, dtype=np.int64)),
        "restated": pa.array(figures["restated"]),
    }
    arrays = [table.column(name) for name in ("state_partition", "state_offset", "state_timestamp")]
    for field in schema.fields[3:]:
        column = columns.get(field.name)
        if column is None:
            column = pa.array(figures[field.name]).cast(ARROW_TYPES[field.name])
        arrays.append(column)
    return pa.Table.from_arrays(arrays, names=schema.fieldNames())


def _replayed_records(table: Any, schema: StructType, *, with_batches: bool) -> Any:
    share_partition, table, records, errors, kinds = decoded_in_order(table)
    if share_partition is None:
        return pa.Table.from_batches([], schema=arrow_schema(schema, table))
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
    state_batches: list[list[BatchTuple] | None] = []
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
            state_batches.append(None if state is None else batch_tuples(state.state_batches))

    rows = table.num_rows
    arrays = [table.column(name) for name in ("state_partition", "state_offset", "state_timestamp")]
    arrays.append(pa.array([share_partition.group_id] * rows, pa.string()))
    arrays.append(pa.array([kafka_uuid(share_partition.topic_id)] * rows, pa.string()))
    arrays.append(pa.array([share_partition.partition] * rows, pa.int32()))
    for field in schema.fields[6:]:
        if field.name == "state_batches":
            arrays.append(batches_array(state_batches))
        else:
            arrays.append(pa.array(out[field.name], ARROW_TYPES[field.name]))
    return pa.Table.from_arrays(arrays, names=schema.fieldNames())


#: The state figures a replayed record carries, in REPLAYED_SCHEMA's order: the same
#: names whichever replay (column by column or record by record) computed them.
_STATE_OUTPUTS: Final = WINDOW_FIGURES


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
        counts.archiving,
        counts.unrecorded,
        counts.max_delivery_count,
    )


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
        *NAMED_SHARE_PARTITION_FIELDS,
        StructField("time", TimestampType(), True),
        StructField("state_partition", IntegerType(), True),
        StructField("state_offset", LongType(), True),
        StructField("record", StringType(), True),
        *_WINDOW_FIELDS,
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
    "archiving",
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
            "archiving",
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
