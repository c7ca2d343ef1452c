"""``InFlightWindow.after_retention``: offsets below the log start offset that the group had
not finished are DELETED; finished ones keep their state (issue 25)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.state.records import DeliveryState, StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState


def _window(start: int, *batches: tuple[int, int, int, int]) -> InFlightWindow:
    state = SharePartitionState(
        0, 2, 0, start, 0, 0, 0, tuple(StateBatch(*batch) for batch in batches)
    )
    return InFlightWindow.from_state(state)


WINDOW = _window(
    10,
    (10, 11, DeliveryState.ACKNOWLEDGED, 1),
    (12, 13, DeliveryState.AVAILABLE, 3),
    (15, 15, DeliveryState.ARCHIVING, 1),
    (16, 17, DeliveryState.AVAILABLE, 1),
)


def test_unfinished_offsets_below_the_log_start_offset_are_deleted() -> None:
    window = WINDOW.after_retention(17)
    assert window.runs == (
        WindowRun(10, 11, WindowState.ACKNOWLEDGED, 1),
        WindowRun(12, 14, WindowState.DELETED, 0),
        WindowRun(15, 15, WindowState.ARCHIVING, 1),
        WindowRun(16, 16, WindowState.DELETED, 0),
        WindowRun(17, 17, WindowState.AVAILABLE, 1),
    )
    assert (window.deleted, window.available, window.unrecorded) == (4, 1, 0)
    assert window.queued(20) == 2
    # Nothing waits at 12-14 or 16 any more: the group resumes at 17.
    assert window.first_not_done() == 17
    assert window.delivery_histogram() == {1: 4}
    assert window.max_delivery_count == 1


def test_past_the_window_the_never_delivered_offsets_are_deleted_too() -> None:
    window = WINDOW.after_retention(25)
    assert window.runs[-1] == WindowRun(16, 24, WindowState.DELETED, 0)
    assert (window.end_offset, window.queued(30), window.deleted) == (25, 5, 12)
    assert window.first_not_done() == 25


def test_a_log_start_offset_at_or_below_the_start_changes_nothing() -> None:
    assert WINDOW.after_retention(10) is WINDOW
    assert WINDOW.after_retention(None) is WINDOW
    uninitialised = InFlightWindow.empty()
    assert uninitialised.after_retention(5) is uninitialised


@given(st.integers(0, 40), st.integers(1, 40))
def test_every_offset_is_counted_once(log_start: int, width: int) -> None:
    window = WINDOW.after_retention(log_start)
    end = max(window.end_offset, 30)
    counted = sum(window.count(state) for state in WindowState) + window.queued(end)
    assert counted == end - window.start_offset
    assert window.after_retention(log_start) == window  # applying it twice changes nothing
    cells = window.cells(width, end)
    assert cells[0].first_offset == 10 and cells[-1].last_offset == end - 1
    if log_start > 12:
        assert any(cell.state is WindowState.DELETED for cell in window.cells(40, end))
