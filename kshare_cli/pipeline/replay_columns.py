"""A share-partition's replay column by column: the timeline's fast path.

The timeline needs the state after every record: millions of states, of which
only figures are kept (`window.window_counts`'s). Building each state as
objects (`replay.ShareStateReplayer`, a `SharePartitionState`, a tuple of
`StateBatch`) made a Spark core do a fifth of what the single-process replay
does. Here the records of one share-partition are decoded column-wise
(`records.decode_update_columns`) and the figures of every state are computed
with numpy, when the records are what a share coordinator writes while
consumers work through a partition: a snapshot, then updates whose start
offset never moves back and whose batches, once pruned at it, come after
everything the state still holds. Merging such an update is pruning and
appending (`replay._fold` relies on the same fact), so the state after record
i is the batches since the last snapshot that end at or after its start
offset: a window [first_kept, end) over one array of batches, and counting
it is a difference of running sums.

Anything else (a tombstone, a record that does not decode, an update with no
snapshot before it, overlapping or out-of-order batches, a start offset
moving back, a window of thousands of batches) answers None, and the caller
replays that share-partition record by record with `ShareStateReplayer`:
the same results (tests/pipeline/test_replay_columns.py checks them against
it), slower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from kshare_cli.state.records import (
    DeliveryState,
    ShareSnapshotValue,
    StateRecordError,
    decode_key,
    decode_record,
    decode_update_columns,
)

__all__ = ["WINDOW_FIGURES", "DecodedRecords", "decoded_records", "replayed_columns"]

WINDOW_FIGURES: Final = (
    "snapshot_epoch",
    "state_epoch",
    "leader_epoch",
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
"""The state figures `replayed_columns` gives per record, REPLAYED_SCHEMA's names."""

_COUNTED: Final = {
    "available": int(DeliveryState.AVAILABLE),
    "acknowledged": int(DeliveryState.ACKNOWLEDGED),
    "archived": int(DeliveryState.ARCHIVED),
    "archiving": int(DeliveryState.ARCHIVING),
}
# Beyond this many batches per record in the windows, the running maxima cost more
# than replaying record by record.
_WINDOW_BATCHES_LIMIT: Final = 64


@dataclass(frozen=True, slots=True)
class DecodedRecords:
    """One share-partition's records in log order, decoded column-wise: per record
    (is_snapshot, and the values in `values`: snapshot_epoch, state_epoch,
    leader_epoch, start_offset, delivery_complete_count, batch_count; an update's
    state_epoch 0), and every batch each carried, in record order (`batches`: rows
    first offset, last offset, delivery state, delivery count; record_of_batch)."""

    is_snapshot: Any
    values: dict[str, Any]
    batches: Any
    record_of_batch: Any
    snapshots: dict[int, ShareSnapshotValue]


@dataclass(frozen=True, slots=True)
class _Records:
    """One share-partition's records in log order: per record, and the batches each
    carried (snapshots' as they are, updates' pruned at their own start offset)."""

    is_snapshot: Any
    snapshot_epoch: Any
    state_epoch: Any
    leader_epoch: Any
    start_offset: Any
    delivery_complete_count: Any
    batch_firsts: Any
    batch_lasts: Any
    batch_states: Any
    batch_counts: Any
    record_of_batch: Any
    snapshots: dict[int, ShareSnapshotValue]


def replayed_columns(keys: Any, values: Any) -> dict[str, Any] | None:
    """Per record of a share-partition's keys and values (Arrow binary arrays in log
    order): WINDOW_FIGURES, "restated" and "is_snapshot" as numpy arrays; None where
    this share-partition needs the record-by-record replay (see the module docstring)."""
    decoded = decoded_records(keys, values)
    if decoded is None or not decoded.is_snapshot[0]:
        return None
    records = _pruned(decoded)
    if records is None:
        return None
    return _figures(records)


def decoded_records(keys: Any, values: Any) -> DecodedRecords | None:
    """A share-partition's keys and values (Arrow binary arrays, log order) decoded
    column-wise; None when one is a tombstone, does not decode, is not in the shape
    `records.decode_update_columns` reads, or carries a batch ending before it starts
    or at a negative offset, or a snapshot's batches overlap (decode those one by one)."""
    if values.null_count or keys.null_count or len(values) == 0:
        return None
    for key in keys.unique().to_pylist():
        try:
            decode_key(key)
        except StateRecordError:
            return None
    is_snapshot = _first_bytes(keys, 1) == 0
    data, starts, ends = _buffers(values)
    update_at = np.flatnonzero(~is_snapshot)
    updates = decode_update_columns(data, starts[update_at], ends[update_at])
    if updates is None:
        return None
    count = len(values)
    columns = {
        name: np.zeros(count, dtype=np.int64)
        for name in (
            "snapshot_epoch",
            "state_epoch",
            "leader_epoch",
            "start_offset",
            "delivery_complete_count",
            "batch_count",
        )
    }
    columns["leader_epoch"][update_at] = updates.leader_epochs
    columns["start_offset"][update_at] = updates.start_offsets
    columns["delivery_complete_count"][update_at] = updates.delivery_complete_counts
    columns["batch_count"][update_at] = updates.batch_counts
    snapshots: dict[int, ShareSnapshotValue] = {}
    snapshot_batches: list[int] = []
    for index in np.flatnonzero(is_snapshot).tolist():
        snapshot = _snapshot(keys[index].as_py(), values[index].as_py())
        if snapshot is None:
            return None
        snapshots[index] = snapshot
        for name in ("snapshot_epoch", "state_epoch", "leader_epoch", "start_offset"):
            columns[name][index] = getattr(snapshot, name)
        columns["delivery_complete_count"][index] = snapshot.delivery_complete_count
        columns["batch_count"][index] = len(snapshot.state_batches)
        for batch in snapshot.state_batches:
            snapshot_batches += (
                batch.first_offset,
                batch.last_offset,
                batch.delivery_state,
                batch.delivery_count,
            )
    return _with_batches(is_snapshot, columns, updates, snapshots, snapshot_batches)


def _with_batches(
    is_snapshot: Any,
    columns: dict[str, Any],
    updates: Any,
    snapshots: dict[int, ShareSnapshotValue],
    snapshot_batches: list[int],
) -> DecodedRecords | None:
    """The records with every batch they carried, in record order."""
    count = len(is_snapshot)
    per_record = columns["batch_count"]
    record_of_batch = np.repeat(np.arange(count), per_record)
    first_of_record = np.cumsum(per_record) - per_record
    batches = np.zeros((4, len(record_of_batch)), dtype=np.int64)
    update_at = np.flatnonzero(~is_snapshot)
    update_batch = np.repeat(update_at, updates.batch_counts)
    placed = first_of_record[update_batch] + (
        np.arange(len(update_batch))
        - np.repeat(np.cumsum(updates.batch_counts) - updates.batch_counts, updates.batch_counts)
    )
    for row, field in enumerate(
        (
            updates.first_offsets,
            updates.last_offsets,
            updates.delivery_states,
            updates.delivery_counts,
        )
    ):
        batches[row, placed] = field
    snapshot_at = np.flatnonzero(is_snapshot)
    snapshot_places = np.concatenate(
        [np.arange(first_of_record[i], first_of_record[i] + per_record[i]) for i in snapshot_at]
        or [np.zeros(0, dtype=np.int64)]
    ).astype(np.int64)
    batches[:, snapshot_places] = np.asarray(snapshot_batches, dtype=np.int64).reshape(-1, 4).T
    if (batches[0] < 0).any() or (batches[1] < batches[0]).any():
        return None
    return DecodedRecords(is_snapshot, columns, batches, record_of_batch, snapshots)


def _pruned(decoded: DecodedRecords) -> _Records:
    """The records with the values their states carry forward (an update's start offset
    or leader epoch -1 keeps the last; snapshot and state epochs are the snapshot's),
    and each record's batches pruned at the start offset after it."""
    is_snapshot, columns = decoded.is_snapshot, decoded.values
    batches, record_of_batch = decoded.batches, decoded.record_of_batch
    start_offset = _carried(columns["start_offset"], is_snapshot | (columns["start_offset"] != -1))
    leader_epoch = _carried(columns["leader_epoch"], is_snapshot | (columns["leader_epoch"] != -1))
    kept = batches[1] >= start_offset[record_of_batch]
    return _Records(
        is_snapshot=is_snapshot,
        snapshot_epoch=_carried(columns["snapshot_epoch"], is_snapshot),
        state_epoch=_carried(columns["state_epoch"], is_snapshot),
        leader_epoch=leader_epoch,
        start_offset=start_offset,
        delivery_complete_count=columns["delivery_complete_count"],
        batch_firsts=batches[0, kept],
        batch_lasts=batches[1, kept],
        batch_states=batches[2, kept],
        batch_counts=batches[3, kept],
        record_of_batch=record_of_batch[kept],
        snapshots=decoded.snapshots,
    )


def _carried(values: Any, taken: Any) -> Any:
    """values where taken, else the last taken value before (the first record is taken)."""
    return values[np.maximum.accumulate(np.where(taken, np.arange(len(values)), 0))]


def _snapshot(key: bytes, value: bytes) -> ShareSnapshotValue | None:
    """A snapshot whose batches are in offset order and disjoint, else None."""
    try:
        decoded = decode_record(key, value).value
    except StateRecordError:
        return None
    if type(decoded) is not ShareSnapshotValue:
        return None
    previous_last = -1
    for batch in decoded.state_batches:
        if batch.first_offset <= previous_last or batch.last_offset < batch.first_offset:
            return None
        previous_last = batch.last_offset
    return decoded


def _first_bytes(binary: Any, position: int) -> Any:
    data, starts, _ = _buffers(binary)
    return data[starts + position]


def _buffers(binary: Any) -> tuple[Any, Any, Any]:
    """A binary array's bytes (uint8) and each value's start and end in them."""
    if isinstance(binary, pa.ChunkedArray):
        binary = binary.combine_chunks()
    if binary.type != pa.binary():
        binary = binary.cast(pa.binary())
    _, offsets_buffer, data_buffer = binary.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[
        binary.offset : binary.offset + len(binary) + 1
    ].astype(np.int64)
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return data, offsets[:-1], offsets[1:]


# --------------------------------------------------------------------------- figures


def _figures(records: _Records) -> dict[str, Any] | None:
    """WINDOW_FIGURES and restated per record, or None (see replayed_columns)."""
    windows = _windows(records)
    if windows is None:
        return None
    first_kept, end = windows
    firsts, lasts = records.batch_firsts, records.batch_lasts
    start = records.start_offset
    empty = first_kept >= end
    safe_first = np.minimum(first_kept, max(len(firsts) - 1, 0))
    clipped = np.zeros(len(start), dtype=np.int64)
    if len(firsts):
        clipped = np.where(
            ~empty & (start >= 0) & (firsts[safe_first] < start), start - firsts[safe_first], 0
        )
    figures: dict[str, Any] = {
        "snapshot_epoch": records.snapshot_epoch,
        "state_epoch": records.state_epoch,
        "leader_epoch": records.leader_epoch,
        "start_offset": start,
        "delivery_complete_count": records.delivery_complete_count,
    }
    sizes = lasts - firsts + 1
    known = np.zeros(len(start), dtype=np.int64)
    for name, state in _COUNTED.items():
        running = np.concatenate(
            ([0], np.cumsum(np.where(records.batch_states == state, sizes, 0)))
        )
        counted = running[end] - running[first_kept]
        if len(firsts):
            counted = counted - np.where(records.batch_states[safe_first] == state, clipped, 0)
        figures[name] = np.where(empty, 0, counted)
        known += figures[name]
    safe_last = np.maximum(end - 1, 0)
    end_offset = start.copy()
    if len(lasts):
        end_offset = np.where(empty, start, lasts[safe_last] + 1)
    window_start = np.where(start >= 0, start, firsts[safe_first] if len(firsts) else start)
    figures["end_offset"] = end_offset
    figures["unrecorded"] = np.where(empty, 0, end_offset - window_start - known)
    figures["max_delivery_count"] = _window_maxima(records, first_kept, end)
    figures["restated"] = _restated(records, first_kept, end)
    figures["is_snapshot"] = records.is_snapshot
    return figures


def _windows(records: _Records) -> tuple[Any, Any] | None:
    """Per record, its state's batches as [first_kept, end) in the batch arrays; None
    when the batches are not in the shape the module docstring describes."""
    is_snapshot = records.is_snapshot
    start = records.start_offset
    count = len(start)
    segment = np.maximum.accumulate(np.where(is_snapshot, np.arange(count), 0))
    moved_back = ~is_snapshot[1:] & (start[1:] < start[:-1])
    if moved_back.any():
        return None
    firsts, lasts, owner = records.batch_firsts, records.batch_lasts, records.record_of_batch
    end = np.cumsum(np.bincount(owner, minlength=count))
    if len(firsts) > 1:
        same_segment = segment[owner[1:]] == segment[owner[:-1]]
        ordered = (firsts[1:] > lasts[:-1]) | (lasts[:-1] < start[owner[1:]])
        if (same_segment & ~ordered).any():
            return None
    # Within a segment the kept batches' last offsets ascend; shifting each segment above
    # the one before makes them ascend overall, so one search finds every window's start.
    segment_of_batch = segment[owner]
    lowest = np.zeros(count, dtype=np.int64)
    highest = np.full(count, -1, dtype=np.int64)
    if len(owner):
        change = np.flatnonzero(np.diff(segment_of_batch)) + 1
        segment_firsts = np.concatenate(([0], change))
        segment_lasts = np.concatenate((change, [len(owner)])) - 1
        lowest[segment_of_batch[segment_firsts]] = lasts[segment_firsts]
        highest[segment_of_batch[segment_lasts]] = lasts[segment_lasts]
    spans = np.where(highest >= lowest, highest - lowest + 1, 0)
    if spans.sum() > 2**62:
        return None
    base = np.cumsum(spans) - spans
    shifted = lasts - lowest[segment_of_batch] + base[segment_of_batch]
    queries = base[segment] + np.clip(start - lowest[segment], 0, spans[segment])
    first_kept = np.minimum(np.searchsorted(shifted, queries, side="left"), end)
    if (end - first_kept).sum() > _WINDOW_BATCHES_LIMIT * (count + len(firsts)):
        return None
    return first_kept, end


def _window_maxima(records: _Records, first_kept: Any, end: Any) -> Any:
    """The highest delivery count of a persisted state in each window (0 when none)."""
    persisted = np.isin(records.batch_states, list(_COUNTED.values()))
    counts = np.concatenate((np.where(persisted, np.maximum(records.batch_counts, 0), 0), [0]))
    bounds = np.empty(2 * len(end), dtype=np.int64)
    bounds[0::2] = first_kept
    bounds[1::2] = end
    bounds = np.minimum(bounds, len(counts) - 1)
    maxima = np.maximum.reduceat(counts, bounds)[0::2]
    return np.where(first_kept < end, maxima, 0)


def _restated(records: _Records, first_kept: Any, end: Any) -> Any:
    """Whether each record is a snapshot whose state equals the state before it
    (`replay.same_state`): compared only at snapshots, which are few."""
    restated = np.zeros(len(end), dtype=bool)
    for index, snapshot in records.snapshots.items():
        if index == 0:
            continue
        before = index - 1
        if (
            records.state_epoch[before] != snapshot.state_epoch
            or records.leader_epoch[before] != snapshot.leader_epoch
            or records.start_offset[before] != snapshot.start_offset
            or records.delivery_complete_count[before] != snapshot.delivery_complete_count
        ):
            continue
        previous = records.snapshots.get(before)
        if previous is not None:
            held = [_fields(batch) for batch in previous.state_batches]
        else:
            held = _joined_window(records, int(first_kept[before]), int(end[before]), before)
        restated[index] = held == [_fields(batch) for batch in snapshot.state_batches]
    return restated


def _fields(batch: Any) -> tuple[int, int, int, int]:
    return (batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)


def _joined_window(
    records: _Records, first_kept: int, end: int, index: int
) -> list[tuple[int, int, int, int]]:
    """The batches of the state after record index, as `combine_state_batches` leaves
    them: the window's, cut at the start offset, touching equal neighbours joined."""
    start = int(records.start_offset[index])
    joined: list[tuple[int, int, int, int]] = []
    for first, last, state, count in zip(
        records.batch_firsts[first_kept:end].tolist(),
        records.batch_lasts[first_kept:end].tolist(),
        records.batch_states[first_kept:end].tolist(),
        records.batch_counts[first_kept:end].tolist(),
        strict=True,
    ):
        if start >= 0 and first < start:
            first = start
        if joined:
            previous = joined[-1]
            if previous[1] + 1 == first and previous[2] == state and previous[3] == count:
                joined[-1] = (previous[0], last, state, count)
                continue
        joined.append((first, last, state, count))
    return joined
