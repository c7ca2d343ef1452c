"""The deliveries audit: per offset range, the highest delivery count and the final state.

Read from the batches every state record carried, in state-topic order (see
DELIVERIES_SCHEMA for why not the replayed window); the `archived` audit
starts from these ranges.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np
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

from kshare_cli.pipeline.delivery_columns import delivery_ranges
from kshare_cli.pipeline.replay_columns import decoded_records
from kshare_cli.pipeline.state_records import (
    ARROW_TYPES,
    SHARE_PARTITION_FIELDS,
    arrow_schema,
    decoded_in_order,
    in_log_order,
    per_share_partition,
    share_partition_records,
)
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import DeliveryState, ShareSnapshotValue, ShareStateKey, decode_key
from kshare_cli.state.replay import opens_history

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import DataFrame

__all__ = [
    "DELIVERIES_SCHEMA",
    "deliveries",
]


DELIVERIES_SCHEMA: Final = StructType(
    [
        *SHARE_PARTITION_FIELDS,
        StructField("first_offset", LongType(), False),
        StructField("last_offset", LongType(), False),
        StructField("max_delivery_count", IntegerType(), False),
        StructField("final_state", StringType(), False),
        StructField("final_delivery_count", IntegerType(), False),
        StructField("complete", BooleanType(), False),
        StructField("last_changed", TimestampType(), True),
        StructField("archiving_at", TimestampType(), True),
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
complete says the group is done with the range: the share-partition will
not deliver its offsets again, as the last records read say. That is, the
range lies below the share-partition's last known start offset, or its
final_state is one Kafka never delivers again (acknowledged, archived, or
Kafka 4.4's archiving) and the latest snapshot read, or a record after it,
still says so. Kafka's snapshots restate every offset at or above their
start offset that has a state, so an offset a later snapshot no longer
names had its state cleared (an offset reset): Kafka delivers it again, and
its range reads complete false while final_state still gives what the last
record mentioning it said. Adjacent offsets with the same outcome form one
range; last_changed is the state-topic timestamp of the record that first
said an offset's final state and count (a later snapshot restating them
changes nothing), the latest of them over the range. Offsets no record
mentioned are not listed: the topic does not say how often they were
delivered (acquired records are not persisted), nor, for a history Kafka
pruned, the offsets below what the records read speak of: `history_coverage` names
them (HISTORY_SCHEMA's unknown offsets).

Kafka 4.4 persists a record bound for the group's dead-letter queue twice,
ARCHIVING (3) then ARCHIVED (4). A range whose last record said ARCHIVING
(the broker stopped between the two writes) has final_state "archiving":
final, never delivered again, yet not delivery-complete in Kafka's count,
and never reported as delivered. archiving_at is when the range's offsets
became ARCHIVING, for final states archiving and archived (ARCHIVED after
ARCHIVING keeps it; the latest over the range); null for every other state,
for a record archived directly (Kafka 4.2, a 4.4 group without a DLQ) and
where the records read no longer hold that write (pruned, a gap).
"""


# --------------------------------------------------------------------------- deliveries


def deliveries(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
    since_ms: int | None = None,
    corrupt: Accumulator[int] | None = None,
    gaps: Mapping[int, int] | None = None,
    whole_state_partitions: bool = False,
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
    first record after a gap the same way. whole_state_partitions is as
    `timeline.replay_states` takes it.
    """
    since_us = None if since_ms is None else since_ms * 1000
    gap_after = dict(gaps or {})

    def ranges(table: Any) -> Any:
        result, skipped = _share_partition_deliveries(table, since_us, gap_after)
        if corrupt is not None and skipped:
            corrupt.add(skipped)
        return result

    rows = share_partition_records(records, group_ids=group_ids, topic_ids=topic_ids)
    return per_share_partition(
        rows, ranges, DELIVERIES_SCHEMA, whole_state_partitions=whole_state_partitions
    )


class _OffsetHistory:
    """Disjoint, sorted offset segments with what the records said about them so far.

    Each segment is [first, last, max_delivery_count, final_state, final_delivery_count,
    changed_at, archiving_at] (changed_at None: unknown; archiving_at: when the offsets
    became ARCHIVING, kept while they stay ARCHIVING or go on to ARCHIVED, else None).
    Neighbours that end up with the same outcome are joined, so a share-partition that
    acknowledged a million offsets in order holds one segment, not
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
        fresh_archiving = at if state == _ARCHIVING else None
        if segments and first > segments[-1][1]:
            # The common case: offsets beyond everything seen so far.
            self._append([first, last, count, state, count, at, fresh_archiving])
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
                replacement.append(
                    [cursor, segment[0] - 1, count, state, count, at, fresh_archiving]
                )
            unchanged = segment[3] == state and segment[4] == count
            archiving_at = fresh_archiving
            if (segment[3] == _ARCHIVING and state == _ARCHIVED) or (
                segment[3] == state and (unchanged or state == _ARCHIVED)
            ):
                archiving_at = segment[6]
            replacement.append(
                [
                    segment[0],
                    segment[1],
                    max(segment[2], count),
                    state,
                    count,
                    segment[5] if unchanged else at,
                    archiving_at,
                ]
            )
            cursor = segment[1] + 1
            stop += 1
        if cursor <= last:
            replacement.append([cursor, last, count, state, count, at, fresh_archiving])
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
            and (left[6] is None) == (right[6] is None)
            and (width == 5 or left[6] == right[6])
        )


def _join(left: list[Any], right: list[Any]) -> None:
    left[1] = right[1]
    if right[5] is not None and (left[5] is None or right[5] > left[5]):
        left[5] = right[5]
    if right[6] is not None and (left[6] is None or right[6] > left[6]):
        left[6] = right[6]


_STATE_NAMES: Final = {state.value: state.name.lower() for state in DeliveryState}


def _state_name(delivery_state: int) -> str:
    """A dict lookup, not DeliveryState(n): this runs once per range, millions of times."""
    name = _STATE_NAMES.get(delivery_state)
    return name if name is not None else f"state {delivery_state}"


_FINAL_STATES: Final = frozenset(state.value for state in DeliveryState if state.is_final)
_ARCHIVING: Final = int(DeliveryState.ARCHIVING)
_ARCHIVED: Final = int(DeliveryState.ARCHIVED)


def _joined(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted and joined where they overlap or touch."""
    joined: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if joined and first <= joined[-1][1] + 1:
            if last > joined[-1][1]:
                joined[-1] = (joined[-1][0], last)
        else:
            joined.append((first, last))
    return joined


def _completeness(
    first: int, last: int, start_offset: int, named: list[tuple[int, int]] | tuple[()]
) -> list[tuple[int, int, bool]]:
    """first..last cut into pieces with their `complete`: below start_offset, or in the
    (sorted, disjoint) spans named since the latest snapshot (given for a final state only)."""
    pieces: list[tuple[int, int, bool]] = []
    if first < start_offset:
        below = min(last, start_offset - 1)
        pieces.append((first, below, True))
        first = below + 1
    if first > last:
        return pieces
    cursor = first
    index = bisect.bisect_right(named, (first, last)) - 1 if named else 0
    for span_first, span_last in named[max(index, 0) :]:
        if span_first > last:
            break
        if span_last < cursor:
            continue
        if span_first > cursor:
            pieces.append((cursor, span_first - 1, False))
        covered_last = min(span_last, last)
        pieces.append((max(span_first, cursor), covered_last, True))
        cursor = covered_last + 1
        if cursor > last:
            return pieces
    pieces.append((cursor, last, False))
    return pieces


_UNCHANGED_START_OFFSET: Final = -1
"""An update's start offset -1 leaves the start offset as it was (the record's own rule)."""


def _share_partition_deliveries(
    table: Any, since_us: int | None, gaps: Mapping[int, int]
) -> tuple[Any, int]:
    """The share-partition's ranges, and how many of its records did not decode: column by
    column when its records allow (`delivery_columns`), else record by record."""
    if since_us is None and table.num_rows:
        table = in_log_order(table)
        decoded = decoded_records(
            table.column("key").combine_chunks(), table.column("value").combine_chunks()
        )
        if decoded is not None:
            state_partition = table.column("state_partition")[0].as_py()
            ranges = delivery_ranges(
                decoded,
                table.column("state_timestamp").cast(pa.int64()).to_numpy(),
                table.column("state_offset").to_numpy(),
                gaps.get(state_partition),
            )
            if ranges is not None:
                return _ranges_table(table, decode_key(table.column("key")[0].as_py()), ranges), 0
    return _record_by_record(table, since_us, gaps)


def _ranges_table(table: Any, key: ShareStateKey, ranges: dict[str, Any]) -> Any:
    """DELIVERIES_SCHEMA rows from `delivery_columns.delivery_ranges` columns."""
    timestamp_type = table.schema.field("state_timestamp").type
    rows = len(ranges["first_offset"])
    arrays = [
        pa.array([key.group_id] * rows, pa.string()),
        pa.array([kafka_uuid(key.topic_id)] * rows, pa.string()),
        pa.array(np.full(rows, key.partition, dtype=np.int32)),
    ]
    states = ranges["final_state"]
    names = {int(state): _state_name(int(state)) for state in np.unique(states)}
    for field in DELIVERIES_SCHEMA.fields[3:]:
        values = ranges[field.name]
        if field.name == "final_state":
            arrays.append(pa.array([names[state] for state in states.tolist()], pa.string()))
        elif field.name in ("last_changed", "archiving_at"):
            arrays.append(pa.array(values, pa.int64(), mask=values < 0).cast(timestamp_type))
        else:
            arrays.append(pa.array(values).cast(ARROW_TYPES[field.name]))
    return pa.Table.from_arrays(arrays, names=DELIVERIES_SCHEMA.fieldNames())


def _record_by_record(table: Any, since_us: int | None, gaps: Mapping[int, int]) -> tuple[Any, int]:
    """`_share_partition_deliveries` from the records decoded one by one."""
    timestamp_type = table.schema.field("state_timestamp").type
    share_partition, table, records, errors, _ = decoded_in_order(table)
    skipped = sum(1 for error in errors if error is not None)
    if share_partition is None:
        return pa.Table.from_batches([], schema=arrow_schema(DELIVERIES_SCHEMA, table)), skipped
    history, final_start_offset, named = _history_of(table, records, since_us, gaps)
    ranges = _ranges_of(history, final_start_offset, named, since_us)
    if not ranges:
        return pa.Table.from_batches([], schema=arrow_schema(DELIVERIES_SCHEMA, table)), skipped
    rows = len(ranges)
    arrays = [
        pa.array([share_partition.group_id] * rows, pa.string()),
        pa.array([kafka_uuid(share_partition.topic_id)] * rows, pa.string()),
        pa.array([share_partition.partition] * rows, pa.int32()),
    ]
    for position, field in enumerate(DELIVERIES_SCHEMA.fields[3:]):
        values = [row[position] for row in ranges]
        if field.name in ("last_changed", "archiving_at"):
            arrays.append(pa.array(values, pa.int64()).cast(timestamp_type))
        else:
            arrays.append(pa.array(values, ARROW_TYPES[field.name]))
    return pa.Table.from_arrays(arrays, names=DELIVERIES_SCHEMA.fieldNames()), skipped


def _history_of(
    table: Any, records: list[Any], since_us: int | None, gaps: Mapping[int, int]
) -> tuple[_OffsetHistory, int, list[tuple[int, int]]]:
    """The offset history of a share-partition's records (None where corrupt), its last
    start offset, and the spans the latest snapshot and the records after it named."""
    written: list[int | None] = table.column("state_timestamp").cast(pa.int64()).to_pylist()
    state_partitions = table.column("state_partition").to_pylist()
    state_offsets = table.column("state_offset").to_pylist()
    history = _OffsetHistory(precise=since_us is not None)
    record_batch = history.record
    final_start_offset = _UNCHANGED_START_OFFSET
    # What the latest snapshot and the records after it name: a final state elsewhere at
    # or above the start offset was cleared since (see DELIVERIES_SCHEMA's complete).
    restated: list[tuple[int, int]] = []
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
        is_snapshot = type(value) is ShareSnapshotValue
        if is_snapshot or start_offset != _UNCHANGED_START_OFFSET:
            final_start_offset = start_offset
        if is_snapshot:
            restated.clear()
        for batch in value.state_batches:
            if batch.last_offset >= batch.first_offset:
                record_batch(
                    batch.first_offset,
                    batch.last_offset,
                    batch.delivery_state,
                    batch.delivery_count,
                    at,
                )
                restated.append((batch.first_offset, batch.last_offset))
    return history, final_start_offset, _joined(restated)


def _ranges_of(
    history: _OffsetHistory,
    final_start_offset: int,
    named: list[tuple[int, int]],
    since_us: int | None,
) -> list[list[Any]]:
    """The history's segments as DELIVERIES_SCHEMA's values after the share-partition."""
    ranges: list[list[Any]] = []
    for first, last, max_count, delivery_state, count, at, archiving_at in history.segments:
        if since_us is not None and (at is None or at < since_us):
            continue
        final = delivery_state in _FINAL_STATES
        for piece_first, piece_last, complete in _completeness(
            first, last, final_start_offset, named if final else ()
        ):
            outcome = [max_count, _state_name(delivery_state), count, complete]
            previous = ranges[-1] if ranges else None
            if (
                previous is not None
                and previous[1] + 1 == piece_first
                and previous[2:6] == outcome
                and (previous[6] is None) == (at is None)
                and (previous[7] is None) == (archiving_at is None)
            ):
                previous[1] = piece_last
                if at is not None and (previous[6] is None or at > previous[6]):
                    previous[6] = at
                if archiving_at is not None and (previous[7] is None or archiving_at > previous[7]):
                    previous[7] = archiving_at
            else:
                ranges.append([piece_first, piece_last, *outcome, at, archiving_at])
    return ranges
