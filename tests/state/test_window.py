"""The in-flight window model, against the golden state and an offset-by-offset reference."""

from __future__ import annotations

import base64
import dataclasses
import time
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kshare_cli.state.batches import combine_state_batches
from kshare_cli.state.records import ShareSnapshotValue, StateBatch, StateRecord, decode_record
from kshare_cli.state.replay import (
    SharePartitionKey,
    SharePartitionState,
    ShareStateReplayer,
    StartOffsetMove,
)
from kshare_cli.state.window import (
    ACQUIRED_NOT_PERSISTED,
    InFlightWindow,
    WindowCell,
    WindowRun,
    WindowState,
    window_counts,
)
from tests.support.golden import read_jsonl
from tests.support.waiting import PROMPTLY_S

AVAILABLE, ACQUIRED, ACKED, ARCHIVING, ARCHIVED = 0, 1, 2, 3, 4
A, K, H, X, U = (
    WindowState.AVAILABLE,
    WindowState.ACKNOWLEDGED,
    WindowState.ARCHIVING,
    WindowState.ARCHIVED,
    WindowState.UNRECORDED,
)
GOLDEN_TOPIC_ID = uuid.UUID("d1384e70-b203-4446-8f5e-1417096b3c51")  # golden-a
P0 = SharePartitionKey("golden-g", GOLDEN_TOPIC_ID, 0)
P1 = SharePartitionKey("golden-g", GOLDEN_TOPIC_ID, 1)


def _state(
    start_offset: int, *batches: tuple[int, int, int, int], delivery_complete_count: int = -1
) -> SharePartitionState:
    return SharePartitionState(
        snapshot_epoch=3,
        state_epoch=2,
        leader_epoch=1,
        start_offset=start_offset,
        delivery_complete_count=delivery_complete_count,
        create_timestamp=1000,
        write_timestamp=2000,
        state_batches=tuple(StateBatch(*batch) for batch in batches),
    )


def _window(start_offset: int, *batches: tuple[int, int, int, int]) -> InFlightWindow:
    return InFlightWindow.from_state(_state(start_offset, *batches))


def _golden_g_log() -> list[StateRecord]:
    rows = sorted(
        read_jsonl("state/share-group-state.jsonl"),
        key=lambda row: (row["partition"], row["offset"]),
    )
    records = [
        decode_record(
            base64.b64decode(row["key_b64"]),
            None if row["value_b64"] is None else base64.b64decode(row["value_b64"]),
        )
        for row in rows
    ]
    return [record for record in records if record.key.group_id == "golden-g"]


def _golden_windows_after_consumption() -> dict[SharePartitionKey, InFlightWindow]:
    """golden-g's windows once all 30 records were final (before the offset resets)."""
    replayer = ShareStateReplayer()
    for record in _golden_g_log():
        value = record.value
        if value is None or (isinstance(value, ShareSnapshotValue) and value.state_epoch == 3):
            continue
        replayer.apply(record)
    return {key: InFlightWindow.from_state(state) for key, state in replayer.states().items()}


# --------------------------------------------------------------------------- golden


def test_golden_window_p0_after_consumption() -> None:
    window = _golden_windows_after_consumption()[P0]

    assert window.runs == (
        WindowRun(2, 2, K, 2),  # p0 o2: released once, accepted on delivery 2
        WindowRun(3, 3, K, 1),
        WindowRun(4, 4, X, 1),  # p0 o4: rejected
        WindowRun(5, 14, K, 1),
    )
    assert (window.start_offset, window.end_offset) == (2, 15)
    assert (window.available, window.acknowledged, window.archived, window.unrecorded) == (
        0,
        12,
        1,
        0,
    )
    # KIP-1226's delivery-complete count is exactly the terminal records of the window.
    assert window.delivery_complete_count == window.acknowledged + window.archived == 13
    assert window.max_delivery_count == 2
    assert window.delivery_histogram() == {1: 12, 2: 1}
    assert window.queued(15) == 0
    assert (window.snapshot_epoch, window.state_epoch, window.leader_epoch) == (0, 1, 0)
    assert window.write_timestamp == 1795263252201  # the initial snapshot's


def test_golden_window_p1_after_consumption() -> None:
    window = _golden_windows_after_consumption()[P1]

    assert window.runs == (
        WindowRun(5, 5, X, 5),  # p1 o5: released 5 times, archived at the delivery limit
        WindowRun(6, 14, K, 1),
    )
    assert (window.available, window.acknowledged, window.archived, window.unrecorded) == (
        0,
        9,
        1,
        0,
    )
    assert window.delivery_complete_count == 10
    assert window.most_delivered(1) == (WindowRun(5, 5, X, 5),)
    assert window.max_delivery_count == 5
    assert window.delivery_histogram() == {1: 9, 5: 1}


def test_golden_window_p1_while_o5_is_being_redelivered() -> None:
    # After the third release of p1 o5 (the update at partition 23, offset 4 of the topic).
    replayer = ShareStateReplayer()
    for record in _golden_g_log():
        replayer.apply(record)
        state = replayer.state(P1)
        if state is not None and state.state_batches[:1] == (StateBatch(5, 5, AVAILABLE, 4),):
            break
    state = replayer.state(P1)
    assert state is not None

    window = InFlightWindow.from_state(state)

    assert window.runs == (WindowRun(5, 5, A, 4), WindowRun(6, 14, K, 1))
    assert (window.available, window.acknowledged, window.delivery_complete_count) == (1, 9, 9)
    assert window.cells(10) == tuple(
        WindowCell(offset, offset, A if offset == 5 else K, 4 if offset == 5 else 1)
        for offset in range(5, 15)
    )


def test_golden_window_after_a_reset_is_empty_with_an_unknown_count() -> None:
    replayer = ShareStateReplayer()
    for record in _golden_g_log():
        if record.value is None:
            break
        replayer.apply(record)
    state = replayer.state(P0)
    assert state is not None

    window = InFlightWindow.from_state(state)

    assert (window.start_offset, window.delivery_complete_count, window.runs) == (0, -1, ())
    assert window.end_offset == 0
    assert window.state_epoch == 3
    assert window.cells(20) == ()
    assert window.queued(15) == 15
    assert [cell.state for cell in window.cells(5, log_end_offset=15)] == [U] * 5


# --------------------------------------------------------------------------- shape of the runs


def test_batches_below_the_start_offset_are_dropped_and_a_straddling_batch_is_clipped() -> None:
    window = _window(10, (3, 5, ACKED, 1), (8, 12, AVAILABLE, 2), (15, 15, ARCHIVED, 1))

    assert window.runs == (
        WindowRun(10, 12, A, 2),
        WindowRun(13, 14, U, 0),
        WindowRun(15, 15, X, 1),
    )
    assert (window.available, window.unrecorded, window.archived) == (3, 2, 1)


def test_gaps_become_unrecorded_runs_from_the_start_offset_on() -> None:
    window = _window(0, (3, 4, ACKED, 1), (7, 7, AVAILABLE, 1), (8, 9, ARCHIVED, 3))

    assert window.runs == (
        WindowRun(0, 2, U, 0),
        WindowRun(3, 4, K, 1),
        WindowRun(5, 6, U, 0),
        WindowRun(7, 7, A, 1),
        WindowRun(8, 9, X, 3),
    )
    assert window.end_offset == 10
    assert window.unrecorded == 5
    assert window.delivery_histogram() == {1: 3, 3: 2}


def test_touching_batches_with_the_same_state_and_count_are_one_run() -> None:
    # Kafka's combiner can leave such pairs unmerged; the window shows what they mean.
    window = _window(0, (0, 1, ACKED, 1), (2, 3, ACKED, 1), (4, 4, ACKED, 2))

    assert window.runs == (WindowRun(0, 3, K, 1), WindowRun(4, 4, K, 2))


def test_states_kafka_does_not_persist_are_unrecorded_not_guessed() -> None:
    window = _window(0, (0, 1, ACQUIRED, 2), (2, 2, 9, 1), (3, 3, ACKED, 1))

    assert window.runs == (WindowRun(0, 2, U, 0), WindowRun(3, 3, K, 1))
    assert window.delivery_histogram() == {1: 1}


def test_overlapping_batches_of_a_damaged_log_are_resolved_as_the_coordinator_would() -> None:
    batches = ((0, 5, ACKED, 1), (3, 8, AVAILABLE, 2), (7, 7, ARCHIVED, 2))
    expected = combine_state_batches([StateBatch(*batch) for batch in batches], (), 0)

    window = _window(0, *batches)

    assert window.runs == InFlightWindow.from_state(_state(0, *map(_tuple, expected))).runs
    assert window.runs == (
        WindowRun(0, 2, K, 1),
        WindowRun(3, 6, A, 2),
        WindowRun(7, 7, X, 2),
        WindowRun(8, 8, A, 2),
    )


def _tuple(batch: StateBatch) -> tuple[int, int, int, int]:
    return (batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)


def test_an_uninitialised_state_keeps_its_batches_from_the_first_one() -> None:
    window = _window(-1, (4, 5, AVAILABLE, 1), (8, 8, ACKED, 1))

    assert window.runs == (WindowRun(4, 5, A, 1), WindowRun(6, 7, U, 0), WindowRun(8, 8, K, 1))
    assert window.cells(10) == ()  # no start offset to draw from


def test_empty_window() -> None:
    window = InFlightWindow.empty()

    assert (window.start_offset, window.end_offset, window.delivery_complete_count) == (-1, -1, -1)
    assert (window.runs, window.max_delivery_count, window.delivery_histogram()) == ((), 0, {})
    assert window.most_delivered() == ()
    assert window.queued(100) == 0
    assert window.cells(10, log_end_offset=100) == ()
    assert InFlightWindow.empty(7).end_offset == 7
    assert InFlightWindow.empty(7).queued(10) == 3


def test_most_delivered_orders_by_delivery_count_then_offset() -> None:
    window = _window(
        0, (0, 0, ACKED, 3), (1, 1, AVAILABLE, 5), (2, 4, ACKED, 1), (6, 6, ARCHIVED, 3)
    )

    assert window.most_delivered(3) == (
        WindowRun(1, 1, A, 5),
        WindowRun(0, 0, K, 3),
        WindowRun(6, 6, X, 3),
    )
    assert window.most_delivered(0) == ()
    assert len(window.most_delivered()) == 4  # the UNRECORDED offset 5 is not a run of these


def test_queued_counts_from_the_end_of_the_window_to_the_log_end_offset() -> None:
    window = _window(2, (5, 5, ACKED, 1), (6, 6, ARCHIVED, 1))

    assert window.queued(11) == 4
    assert window.queued(7) == 0
    assert window.queued(3) == 0  # a stale log end offset never makes it negative


def test_the_screens_sentence_about_acquired_records() -> None:
    assert ACQUIRED_NOT_PERSISTED.startswith("acquired records are not persisted: ")
    assert "\n" not in ACQUIRED_NOT_PERSISTED


# --------------------------------------------------------------------------- cells


def test_cells_wider_than_the_window_give_one_cell_per_offset() -> None:
    window = _window(2, (3, 3, AVAILABLE, 2), (5, 5, ACKED, 1))

    assert window.cells(80) == (
        WindowCell(2, 2, U, 0),
        WindowCell(3, 3, A, 2),
        WindowCell(4, 4, U, 0),
        WindowCell(5, 5, K, 1),
    )


def test_cells_share_the_offsets_equally_and_the_last_may_be_shorter() -> None:
    window = _window(0, (0, 9, ACKED, 1))

    assert [(cell.first_offset, cell.last_offset) for cell in window.cells(4)] == [
        (0, 2),
        (3, 5),
        (6, 8),
        (9, 9),
    ]
    assert [(cell.first_offset, cell.last_offset) for cell in window.cells(3)] == [
        (0, 3),
        (4, 7),
        (8, 9),
    ]
    assert len(window.cells(5)) == 5
    assert window.cells(0) == ()


def test_a_cell_shows_its_most_important_state_and_its_highest_delivery_count() -> None:
    window = _window(
        0, (0, 0, ARCHIVED, 1), (1, 3, ACKED, 1), (4, 4, AVAILABLE, 4), (5, 7, ACKED, 1)
    )

    assert window.cells(2) == (WindowCell(0, 3, X, 1), WindowCell(4, 7, A, 4))


@pytest.mark.parametrize(
    ("batches", "expected"),
    [
        (((0, 0, ARCHIVED, 1), (1, 1, AVAILABLE, 1)), X),
        (((0, 0, AVAILABLE, 1), (1, 1, ARCHIVED, 1)), X),
        (((0, 0, ACKED, 1), (1, 1, AVAILABLE, 1)), A),
        (((0, 0, ACKED, 1), (2, 2, ACKED, 1)), K),  # the UNRECORDED offset 1 is hidden
        (((0, 0, ACKED, 1), (3, 3, AVAILABLE, 1)), A),  # two UNRECORDED offsets do not count
        (((0, 1, ACKED, 1), (2, 2, ARCHIVED, 1)), X),  # one archived record beats two acked
        (((1, 1, ACKED, 1),), K),  # one UNRECORDED, one Acknowledged
        (((2, 2, ACKED, 1), (3, 3, AVAILABLE, 1)), A),  # unrecorded 0-1 before them
        (((0, 2, AVAILABLE, 1), (3, 3, ARCHIVING, 1)), H),  # on its way to the DLQ first
    ],
)
def test_a_cell_shows_archiving_then_archived_then_available_then_acknowledged_present(
    batches: tuple[tuple[int, int, int, int], ...], expected: WindowState
) -> None:
    (cell,) = _window(0, *batches).cells(1)

    assert cell.state is expected


def test_cells_run_on_past_the_window_to_the_log_end_offset() -> None:
    window = _window(0, (0, 1, ACKED, 1), (2, 3, AVAILABLE, 3))

    assert window.cells(8, log_end_offset=8) == (
        WindowCell(0, 0, K, 1),
        WindowCell(1, 1, K, 1),
        WindowCell(2, 2, A, 3),
        WindowCell(3, 3, A, 3),
        *(WindowCell(offset, offset, U, 0) for offset in range(4, 8)),
    )
    # Compressed, a cell straddling the end of the window shows the window's state: its queued
    # offsets are UNRECORDED, the least important.
    assert window.cells(2, log_end_offset=6) == (WindowCell(0, 2, A, 3), WindowCell(3, 5, A, 3))
    assert window.cells(2, log_end_offset=12) == (WindowCell(0, 5, A, 3), WindowCell(6, 11, U, 0))
    # A log end offset inside the window (a stale read) never cuts the window short.
    assert window.cells(8, log_end_offset=2) == window.cells(8)


def test_cells_are_cheap_for_a_huge_window() -> None:
    window = _window(0, (0, 10**12, ACKED, 1), (10**12 + 5, 2 * 10**12, AVAILABLE, 2))

    began = time.perf_counter()
    cells = window.cells(200, log_end_offset=3 * 10**12)
    elapsed = time.perf_counter() - began

    assert len(cells) == 200
    assert cells[0].state is K and cells[-1].state is U
    # Per offset, 3 * 10**12 of them would take hours: the bound only has to tell that apart.
    assert elapsed < PROMPTLY_S


# --------------------------------------------------------------------------- reference model

Reference = dict[int, tuple[WindowState, int]]

_REFERENCE_STATES: dict[int, WindowState] = {AVAILABLE: A, ACKED: K, ARCHIVING: H, ARCHIVED: X}
_RANK = {H: 4, X: 3, A: 2, K: 1, U: 0}


def _reference(state: SharePartitionState) -> tuple[int, Reference]:
    """Offset by offset: which state and delivery count each offset of the window has."""
    start = state.start_offset
    offsets: Reference = {}
    for batch in state.state_batches:
        for offset in range(batch.first_offset, batch.last_offset + 1):
            if start >= 0 and offset < start:
                continue
            mapped = _REFERENCE_STATES.get(batch.delivery_state, U)
            offsets[offset] = (mapped, 0 if mapped is U else batch.delivery_count)
    if not offsets:
        return start, {}
    first = start if start >= 0 else min(offsets)
    for offset in range(first, max(offsets) + 1):
        offsets.setdefault(offset, (U, 0))
    return first, dict(sorted(offsets.items()))


def _reference_runs(offsets: Reference) -> list[WindowRun]:
    runs: list[WindowRun] = []
    for offset, (state, count) in offsets.items():
        if runs and (runs[-1].state, runs[-1].delivery_count) == (state, count):
            runs[-1] = WindowRun(runs[-1].first_offset, offset, state, count)
        else:
            runs.append(WindowRun(offset, offset, state, count))
    return runs


def _reference_cells(
    start: int, offsets: Reference, width: int, log_end_offset: int | None
) -> list[WindowCell]:
    if start < 0:
        return []
    end = max(max(offsets, default=start - 1) + 1, log_end_offset or 0)
    total = end - start
    if total <= 0:
        return []
    size = -(-total // width)
    cells = []
    for first in range(start, end, size):
        last = min(first + size, end) - 1
        tally: dict[WindowState, int] = {}
        highest = 0
        for offset in range(first, last + 1):
            state, count = offsets.get(offset, (U, 0))
            tally[state] = tally.get(state, 0) + 1
            highest = max(highest, count)
        winner = max(tally, key=_RANK.__getitem__)
        cells.append(WindowCell(first, last, winner, highest))
    return cells


@st.composite
def _states(draw: Callable[..., object]) -> SharePartitionState:
    """Sorted, non-overlapping batches (as the coordinator writes them), maybe touching."""
    start_offset = draw(st.one_of(st.just(-1), st.integers(0, 30)))
    assert isinstance(start_offset, int)
    offset = draw(st.integers(0, 20))
    assert isinstance(offset, int)
    batches = []
    shapes = draw(
        st.lists(
            st.tuples(
                st.integers(0, 4),
                st.integers(1, 6),
                st.sampled_from([AVAILABLE, ACKED, ARCHIVED, AVAILABLE, ACQUIRED, ARCHIVING]),
                st.integers(0, 6),
            ),
            max_size=8,
        )
    )
    assert isinstance(shapes, list)
    for gap, length, delivery_state, delivery_count in shapes:
        first = offset + gap
        batches.append((first, first + length - 1, delivery_state, delivery_count))
        offset = first + length
    return _state(start_offset, *batches)


@settings(max_examples=500, deadline=None)
@given(
    state=_states(),
    width=st.integers(1, 40),
    log_end_offset=st.one_of(st.none(), st.integers(0, 90)),
)
def test_window_agrees_with_an_offset_by_offset_reference(
    state: SharePartitionState, width: int, log_end_offset: int | None
) -> None:
    first, offsets = _reference(state)
    window = InFlightWindow.from_state(state)

    assert list(window.runs) == _reference_runs(offsets)
    if offsets:
        assert window.runs[0].first_offset == first
    for each in WindowState:
        assert window.count(each) == sum(1 for state_, _ in offsets.values() if state_ is each)
    histogram: dict[int, int] = {}
    for state_, count in offsets.values():
        if state_ is not U:
            histogram[count] = histogram.get(count, 0) + 1
    assert window.delivery_histogram() == dict(sorted(histogram.items()))
    assert list(window.delivery_histogram()) == sorted(histogram)
    assert window.max_delivery_count == max((count for _, count in offsets.values()), default=0)
    assert window.end_offset == (max(offsets) + 1 if offsets else state.start_offset)
    assert list(window.cells(width, log_end_offset)) == _reference_cells(
        state.start_offset, offsets, width, log_end_offset
    )
    assert len(window.cells(width, log_end_offset)) <= width
    if state.start_offset >= 0 and log_end_offset is not None:
        end = max(offsets, default=state.start_offset - 1) + 1
        assert window.queued(log_end_offset) == max(log_end_offset - end, 0)
    persisted = [run for run in window.runs if run.state is not U]
    assert list(window.most_delivered(100)) == sorted(
        persisted, key=lambda run: (-run.delivery_count, run.first_offset)
    )


@st.composite
def _any_states(draw: Callable[..., object]) -> SharePartitionState:
    """Any batches at all, overlapping and out of order included (a damaged log)."""
    start_offset = draw(st.one_of(st.just(-1), st.integers(0, 30)))
    assert isinstance(start_offset, int)
    shapes = draw(
        st.lists(
            st.tuples(
                st.integers(0, 40),
                st.integers(-1, 6),
                st.sampled_from([AVAILABLE, ACKED, ARCHIVED, ACQUIRED, 7]),
                st.integers(0, 6),
            ),
            max_size=8,
        )
    )
    assert isinstance(shapes, list)
    return _state(
        start_offset,
        *((first, first + length, state, count) for first, length, state, count in shapes),
    )


@settings(max_examples=500, deadline=None)
@given(state=st.one_of(_states(), _any_states()))
def test_window_counts_are_the_windows_figures(state: SharePartitionState) -> None:
    window = InFlightWindow.from_state(state)

    counts = window_counts(state)

    assert (
        counts.end_offset,
        counts.available,
        counts.acknowledged,
        counts.archived,
        counts.unrecorded,
        counts.max_delivery_count,
    ) == (
        window.end_offset,
        window.available,
        window.acknowledged,
        window.archived,
        window.unrecorded,
        window.max_delivery_count,
    )


def test_done_between_counts_below_the_start_and_terminal_runs_only() -> None:
    # start 4; 4-5 acknowledged, 6 available, 7 archived, 8 a gap (unrecorded), 9 acknowledged.
    window = _window(4, (4, 5, 2, 1), (6, 6, 0, 1), (7, 7, 4, 1), (9, 9, 2, 1))
    assert window.done_between(0, 20) == 4 + 2 + 1 + 1
    assert window.done_between(2, 6) == 2 + 2
    assert window.done_between(6, 9) == 1
    assert window.done_between(10, 20) == 0
    assert window.done_between(5, 5) == 0
    assert InFlightWindow.empty().done_between(0, 10) == 0


def test_first_not_done_is_where_the_group_resumes() -> None:
    assert _window(4, (4, 5, 2, 1), (6, 6, 0, 1), (7, 7, 4, 1)).first_not_done() == 6
    # A gap (acquired or never delivered) is not done either.
    assert _window(4, (4, 5, 2, 1), (7, 7, 4, 1)).first_not_done() == 6
    assert _window(4, (4, 5, 2, 1), (6, 8, 4, 1)).first_not_done() == 9
    assert _window(13).first_not_done() == 13
    assert InFlightWindow.empty().first_not_done() == -1


def test_the_start_offsets_last_move_is_kept_by_the_window_and_its_retention_marking() -> None:
    moved = StartOffsetMove(5_000, exact=True)
    state = dataclasses.replace(_state(0, (0, 0, AVAILABLE, 1)), start_offset_moved=moved)
    window = InFlightWindow.from_state(state)
    assert window.start_offset_moved == moved
    assert window.after_retention(3).start_offset_moved == moved
