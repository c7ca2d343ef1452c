"""How much of each share-partition's history the state records read still hold.

Kafka's share coordinator prunes the state topic; an audit says which
share-partitions' history starts later than the share-partition did
(`replay.opens_history`), where a capture and the live log leave a gap, and
which of their offsets the records read no longer know: the one home of
that fact, which every output words (`render.audit.history_lines`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
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
    ARROW_TYPES,
    SHARE_PARTITION_FIELDS,
    per_share_partition,
    share_partition_records,
)
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.records import (
    ShareSnapshotValue,
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
    "unknown_offsets",
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
        StructField("unknown_first_offset", LongType(), True),
        StructField("unknown_last_offset", LongType(), True),
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

unknown_first_offset..unknown_last_offset are the offsets the records read
no longer know (`unknown_offsets`). "pruned": from 0 to just below the
first offset the records read speak of -- the start offset of the first
record that states one (Kafka's snapshot restates every offset from its
start offset on that still has a state), or an offset an update before it
names, if lower; the deliveries and archived audits leave these offsets
out. "gap": from the last start offset stated before the gap to just below
the first offset the records after it speak of; what the records before the
gap said of them (which the deliveries show) may have changed in the gap.
Both null when no offset is unknown (a pruned history whose earliest
snapshot still starts at 0: only times are unknown); unknown_last_offset
alone null when no record read states a start offset or names an offset.
"""

_UNCHANGED_START_OFFSET: Final = -1
"""An update's start offset -1 leaves the start offset as it was (the record's own rule)."""

_ARROW_TYPES: Final = {
    **ARROW_TYPES,
    "first_state_offset": pa.int64(),
    "history_complete": pa.bool_(),
    "history_missing": pa.string(),
    "unknown_first_offset": pa.int64(),
    "unknown_last_offset": pa.int64(),
}

Position = tuple[int, int]
"""A record's place in the state topic: (state-topic partition, offset)."""


def state_history(
    records: DataFrame,
    *,
    group_ids: Collection[str] | None = None,
    topic_ids: Collection[str] | None = None,
    gaps: Mapping[int, int] | None = None,
    whole_state_partitions: bool = False,
) -> DataFrame:
    """HISTORY_SCHEMA rows, one per share-partition the records name.

    Each share-partition's records are read in state-topic order and decoded
    only as far as needed: its earliest record says whether the history is
    complete, and an incomplete one is read on to the first record that
    bounds the unknown offsets (normally the very next snapshot). gaps is as
    `deliveries` takes it: a share-partition whose first record lies before a
    gap lost what the gap held; one that starts after it is judged by its
    first record alone. whole_state_partitions is as `timeline.replay_states`
    takes it.
    """
    gap_after = dict(gaps or {})

    def judge(table: Any) -> Any:
        return _share_partition_history(table, gap_after)

    rows = share_partition_records(records, group_ids=group_ids, topic_ids=topic_ids)
    return per_share_partition(
        rows, judge, HISTORY_SCHEMA, whole_state_partitions=whole_state_partitions
    )


def _share_partition_history(table: Any, gaps: Mapping[int, int]) -> Any:
    """The share-partition's HISTORY_SCHEMA row (its group holds at least one record)."""
    table = table.sort_by([("state_partition", "ascending"), ("state_offset", "ascending")])
    state_partitions = table.column("state_partition").to_pylist()
    state_offsets = table.column("state_offset").to_pylist()
    keys = table.column("key").to_pylist()
    values = table.column("value").to_pylist()

    seen: dict[int, StateRecord | None] = {}

    def decoded(index: int) -> StateRecord | None:
        if index not in seen:
            try:
                seen[index] = decode_record(keys[index], values[index])
            except StateRecordError:
                seen[index] = None  # an undecodable record says nothing: read on
        return seen[index]

    key: ShareStateKey | None = None
    for key_bytes in keys:
        try:
            key = decode_key(key_bytes)
            break
        except StateRecordError:
            continue
    first = decoded(0)
    state_partition, first_offset = state_partitions[0], state_offsets[0]
    gap = gaps.get(state_partition)
    missing: str | None = None
    if gap is not None and first_offset < gap:
        missing = HISTORY_GAP
    elif first is None or not opens_history(first):
        missing = HISTORY_PRUNED
    unknown: tuple[int | None, int | None] = (None, None)
    if missing is not None:
        positions = list(zip(state_partitions, state_offsets, strict=True))
        unknown = unknown_offsets(positions, decoded, gap=gap if missing == HISTORY_GAP else None)
    row: dict[str, list[Any]] = {
        "group_id": [None if key is None else key.group_id],
        "topic_id": [None if key is None else kafka_uuid(key.topic_id)],
        "partition": [None if key is None else key.partition],
        "state_partition": [state_partition],
        "first_state_offset": [first_offset],
        "history_complete": [missing is None],
        "history_missing": [missing],
        "unknown_first_offset": [unknown[0]],
        "unknown_last_offset": [unknown[1]],
    }
    arrays = []
    for field in HISTORY_SCHEMA.fields:
        if field.name == "history_from":
            arrays.append(table.column("state_timestamp").slice(0, 1).combine_chunks())
        else:
            arrays.append(pa.array(row[field.name], _ARROW_TYPES[field.name]))
    return pa.Table.from_arrays(arrays, names=HISTORY_SCHEMA.fieldNames())


def unknown_offsets(
    positions: list[Position],
    decoded: Callable[[int], StateRecord | None],
    *,
    gap: int | None = None,
) -> tuple[int | None, int | None]:
    """The offsets a share-partition's records, in state-topic order, no longer know.

    positions are the records' places; decoded(i) the i-th record (None if it
    does not decode), called only as far as the answer needs. gap None: the
    history was pruned before the first record; else the state-topic offset
    (in the records' partition) where reading resumed after records lost
    between a capture and the live log. See HISTORY_SCHEMA for the rule;
    (None, None) when no offset is unknown.
    """
    lower = 0
    index = 0
    if gap is not None:
        # Offsets below the last start offset stated before the gap were done with then.
        while index < len(positions) and positions[index][1] < gap:
            stated = _stated_start_offset(decoded(index))
            if stated is not None:
                lower = stated
            index += 1
    known_from: int | None = None
    while index < len(positions):
        record = decoded(index)
        index += 1
        stated = _stated_start_offset(record)
        if record is not None and record.value is not None:
            for batch in record.value.state_batches:
                if batch.last_offset >= batch.first_offset and (
                    known_from is None or batch.first_offset < known_from
                ):
                    known_from = batch.first_offset
        if stated is not None:
            known_from = stated if known_from is None else min(known_from, stated)
            break
    if known_from is None:
        return lower, None
    if known_from <= lower:
        return None, None
    return lower, known_from - 1


def _stated_start_offset(record: StateRecord | None) -> int | None:
    """The start offset a record states: a snapshot's, or an update's unless it is -1."""
    if record is None or record.value is None:
        return None
    value = record.value
    if type(value) is ShareSnapshotValue or value.start_offset != _UNCHANGED_START_OFFSET:
        return max(value.start_offset, 0)
    return None
