"""A share-partition's delivery outcomes column by column: the deliveries audit's fast path.

`deliveries` reads every batch each state record carried into an offset
history (`deliveries._OffsetHistory`), record by record. What a share
coordinator writes while consumers work through a partition is simpler:
each batch is about offsets beyond every offset mentioned before (it
appends), or it restates what the history already says about offsets it
holds (a snapshot repeating the window: nothing changes). Then the history
is the appending batches, touching neighbours with the same outcome
joined, and the ranges follow from it with numpy, cut at the last start
offset and at the spans the latest snapshot and the records after it named.

Anything else (a batch changing what an earlier one said, a tombstone, a
record that does not decode, `since`, which keeps outcomes offset by offset)
answers None, and the caller runs the record-by-record history: the same
ranges (tests/pipeline/test_delivery_columns.py checks them against it).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from kshare_cli.pipeline.replay_columns import DecodedRecords
from kshare_cli.state.records import DeliveryState

__all__ = ["RANGE_COLUMNS", "delivery_ranges"]

RANGE_COLUMNS: Final = (
    "first_offset",
    "last_offset",
    "max_delivery_count",
    "final_state",
    "final_delivery_count",
    "complete",
    "last_changed",
    "archiving_at",
)
"""The columns `delivery_ranges` gives, DELIVERIES_SCHEMA's after the share-partition:
final_state is the delivery state's number; last_changed and archiving_at are
microseconds, with -1 for null."""

_FINAL_STATES: Final = np.array([state.value for state in DeliveryState if state.is_final])
_ARCHIVING: Final = int(DeliveryState.ARCHIVING)
_UNKNOWN: Final = -1


def delivery_ranges(
    records: DecodedRecords,
    written_us: Any,
    state_offsets: Any,
    gap: int | None,
) -> dict[str, Any] | None:
    """RANGE_COLUMNS (numpy arrays) of a share-partition's decoded records, or None where
    it needs the record-by-record history (see the module docstring). written_us is each
    record's state-topic timestamp, state_offsets its offset, gap the first offset read
    after records that could not be read in its state-topic partition (None: no gap)."""
    dated = _dated(records, written_us, state_offsets, gap)
    history = _history(records, dated)
    if history is None:
        return None
    start_offset = _final_start_offset(records)
    named = _named_spans(records)
    pieces = _pieces(history, start_offset, named)
    return _joined_ranges(pieces)


def _dated(records: DecodedRecords, written_us: Any, state_offsets: Any, gap: int | None) -> Any:
    """Each record's time, -1 where what it says was reached at a time the records read do
    not hold: the earliest record, and the first after a gap, unless it opens the history
    (`replay.opens_history`: a snapshot of epoch 0)."""
    count = len(written_us)
    opening = np.zeros(count, dtype=bool)
    opening[0] = True
    if gap is not None and count > 1:
        opening[1:] |= (state_offsets[1:] >= gap) & (state_offsets[:-1] < gap)
    opens = records.is_snapshot & (records.values["snapshot_epoch"] == 0)
    return np.where(opening & ~opens, _UNKNOWN, written_us)


def _history(records: DecodedRecords, dated: Any) -> dict[str, Any] | None:
    """The offset history as joined segments, when every batch appends or restates."""
    firsts, lasts, states, counts = records.batches
    at = dated[records.record_of_batch]
    if not len(firsts):
        return {"first": firsts, "last": lasts, "state": states, "count": counts, "at": at}
    highest_before = np.concatenate(([-1], np.maximum.accumulate(lasts)[:-1]))
    appends = firsts > highest_before
    appended = np.flatnonzero(appends)
    segment = {
        "first": firsts[appended],
        "last": lasts[appended],
        "state": states[appended],
        "count": counts[appended],
        "at": at[appended],
    }
    # Runs of appended batches that touch with the same outcome: what a restatement
    # must fall inside of, with the same outcome, to change nothing.
    touching_same = (
        (segment["first"][1:] == segment["last"][:-1] + 1)
        & (segment["state"][1:] == segment["state"][:-1])
        & (segment["count"][1:] == segment["count"][:-1])
    )
    run = np.concatenate(([0], np.cumsum(~touching_same)))
    restating = np.flatnonzero(~appends)
    if len(restating):
        first_held = np.searchsorted(segment["last"], firsts[restating], side="left")
        last_held = np.searchsorted(segment["first"], lasts[restating], side="right") - 1
        inside = (first_held <= last_held) & (last_held < len(appended))
        if not inside.all():
            return None
        if (
            (segment["first"][first_held] > firsts[restating]).any()
            or (segment["last"][last_held] < lasts[restating]).any()
            or (run[first_held] != run[last_held]).any()
            or (segment["state"][first_held] != states[restating]).any()
            or (segment["count"][first_held] != counts[restating]).any()
        ):
            return None
    joined = touching_same & ((segment["at"][1:] == _UNKNOWN) == (segment["at"][:-1] == _UNKNOWN))
    return _grouped(segment, joined)


def _grouped(columns: dict[str, Any], joined: Any) -> dict[str, Any]:
    """Neighbours joined where `joined` (one flag per pair) says so: the first offset of
    the first, the last of the last, the latest time."""
    starts = np.flatnonzero(np.concatenate(([True], ~joined)))
    ends = np.concatenate((starts[1:], [len(columns["first"])])) - 1
    grouped = {name: values[starts] for name, values in columns.items()}
    grouped["last"] = columns["last"][ends]
    grouped["at"] = np.maximum.reduceat(columns["at"], starts)
    return grouped


def _final_start_offset(records: DecodedRecords) -> int:
    """The start offset the last record that set one set (-1: none did)."""
    start_offsets = records.values["start_offset"]
    setting = np.flatnonzero(records.is_snapshot | (start_offsets != _UNKNOWN))
    return int(start_offsets[setting[-1]]) if len(setting) else _UNKNOWN


def _named_spans(records: DecodedRecords) -> Any:
    """The offsets the latest snapshot and the records after it name, as sorted disjoint
    spans (rows first, last): a final state elsewhere above the start offset was cleared."""
    snapshots = np.flatnonzero(records.is_snapshot)
    since = snapshots[-1] if len(snapshots) else 0
    named = records.batches[:2, records.record_of_batch >= since]
    if not named.shape[1]:
        return named
    order = np.lexsort((named[1], named[0]))
    firsts, lasts = named[0, order], named[1, order]
    reach = np.maximum.accumulate(lasts)
    separate = np.concatenate(([True], firsts[1:] > reach[:-1] + 1))
    starts = np.flatnonzero(separate)
    ends = np.concatenate((starts[1:], [len(firsts)])) - 1
    return np.stack((firsts[starts], reach[ends]))


def _pieces(history: dict[str, Any], start_offset: int, named: Any) -> dict[str, Any]:
    """The history's segments cut at the start offset and at the named spans' edges,
    each piece with its `complete` (DELIVERIES_SCHEMA)."""
    cuts = np.unique(np.concatenate(([start_offset], named[0], named[1] + 1)))
    firsts, lasts = history["first"], history["last"]
    inner_from = np.searchsorted(cuts, firsts, side="right")
    inner_to = np.searchsorted(cuts, lasts, side="right")
    per_segment = 1 + inner_to - inner_from
    owner = np.repeat(np.arange(len(firsts)), per_segment)
    place = np.arange(len(owner)) - np.repeat(np.cumsum(per_segment) - per_segment, per_segment)
    piece_first = np.where(
        place == 0, firsts[owner], cuts[np.minimum(inner_from[owner] + place - 1, len(cuts) - 1)]
    )
    is_last = place == per_segment[owner] - 1
    next_cut = cuts[np.minimum(inner_from[owner] + place, len(cuts) - 1)]
    piece_last = np.where(is_last, lasts[owner], next_cut - 1)
    pieces = {name: values[owner] for name, values in history.items()}
    pieces["first"], pieces["last"] = piece_first, piece_last
    covering = np.searchsorted(named[0], piece_first, side="right") - 1
    covered = np.zeros(len(owner), dtype=bool)
    if named.shape[1]:
        safe = np.maximum(covering, 0)
        covered = (covering >= 0) & (named[1][safe] >= piece_first)
    final = np.isin(pieces["state"], _FINAL_STATES)
    pieces["complete"] = (piece_first < start_offset) | (final & covered)
    return pieces


def _joined_ranges(pieces: dict[str, Any]) -> dict[str, Any]:
    """RANGE_COLUMNS: touching pieces with the same outcome, and the same knowledge of
    when, joined."""
    firsts = pieces["first"]
    joined = (
        (firsts[1:] == pieces["last"][:-1] + 1)
        & (pieces["state"][1:] == pieces["state"][:-1])
        & (pieces["count"][1:] == pieces["count"][:-1])
        & (pieces["complete"][1:] == pieces["complete"][:-1])
        & ((pieces["at"][1:] == _UNKNOWN) == (pieces["at"][:-1] == _UNKNOWN))
    )
    if not len(firsts):
        joined = np.zeros(0, dtype=bool)
    ranges = _grouped(pieces, joined) if len(firsts) else pieces
    return {
        "first_offset": ranges["first"],
        "last_offset": ranges["last"],
        "max_delivery_count": ranges["count"],
        "final_state": ranges["state"],
        "final_delivery_count": ranges["count"],
        "complete": ranges["complete"],
        "last_changed": ranges["at"],
        "archiving_at": np.where(ranges["state"] == _ARCHIVING, ranges["at"], _UNKNOWN),
    }
