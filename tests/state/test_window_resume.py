"""``InFlightWindow.resume_offset``: where a share group resumes, the rule every front end uses.

The stored start offset trails the acknowledgements (Kafka moves it only after the
state write completes), so the group resumes at the first offset at or above it that
is neither acknowledged, archiving nor archived. Reset's plan, the time lag of
describe, health, the exporter and the dashboard, and health's rows all ask this one
method; these are its cases, on windows replayed from hand-made states.
"""

from __future__ import annotations

from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.reset import Scenario, compute_plan
from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.state.records import StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow, resume_offset

AVAILABLE = int(DeliveryState.AVAILABLE)
ACKNOWLEDGED = int(DeliveryState.ACKNOWLEDGED)
ARCHIVING = int(DeliveryState.ARCHIVING)
ARCHIVED = int(DeliveryState.ARCHIVED)


def window(start: int, *batches: tuple[int, int, int]) -> InFlightWindow:
    """A persisted window: (first, last, delivery state) batches, delivery count 1."""
    return InFlightWindow.from_state(
        SharePartitionState(
            0, 1, 0, start, -1, 0, 0, tuple(StateBatch(*batch, 1) for batch in batches)
        )
    )


def test_a_trailing_start_offset_resumes_past_the_acknowledged_records() -> None:
    # Kafka 4.2 after a consumer acknowledged 0-5 in one write: start 0 stored, 0-5 done.
    assert window(0, (0, 5, ACKNOWLEDGED)).resume_offset(0) == 6
    # An unrecorded gap (acquired now, or never delivered) is where it resumes.
    assert window(0, (0, 2, ACKNOWLEDGED), (5, 6, ACKNOWLEDGED)).resume_offset(0) == 3
    # An available record (released, its lock expired) waits too.
    assert window(4, (4, 5, ACKNOWLEDGED), (6, 6, AVAILABLE)).resume_offset(4) == 6


def test_archiving_and_archived_records_are_finished() -> None:
    """Kafka 4.4's ARCHIVING is never delivered again (the DLQ write is the broker's), as the
    reset's counts and health already treat it: the group resumes past it."""
    finished = window(10, (10, 10, ACKNOWLEDGED), (11, 11, ARCHIVING), (12, 13, ARCHIVED))
    assert finished.resume_offset(10) == 14
    assert window(10, (10, 10, ARCHIVING), (11, 11, AVAILABLE)).resume_offset(10) == 11


def test_offsets_retention_deleted_are_passed_over() -> None:
    # 0-4 unrecorded and 5 available, the log now starting at 6: deleted, nothing waits there.
    after = window(0, (5, 5, AVAILABLE), (6, 7, ACKNOWLEDGED), (8, 8, AVAILABLE))
    assert after.after_retention(6).resume_offset(0) == 8


def test_never_behind_the_start_offset_and_the_start_offset_without_a_window() -> None:
    # A window read before the start offset moved to 10 cannot point behind it.
    assert window(4, (4, 6, AVAILABLE)).resume_offset(10) == 10
    # A window read after the start offset moved: the broker's answer is older.
    assert window(8, (8, 9, ACKNOWLEDGED)).resume_offset(5) == 10
    assert InFlightWindow.empty().resume_offset(7) == 7  # uninitialised: knows nothing
    assert InFlightWindow.empty(13).resume_offset(13) == 13  # nothing persisted
    assert resume_offset(None, 9) == 9
    assert resume_offset(window(0, (0, 5, ACKNOWLEDGED)), 0) == 6


P0 = TopicPartition("t", 0)


def test_a_reset_plan_resumes_where_the_window_says_past_records_retention_deleted() -> None:
    """The rollback point of a plan is the window's resume offset. After retention moved the
    log start (5) past the start offset (0), the group resumes past the deleted records and
    the acknowledged 5-7, at 8: a rollback to 0 would be clamped to 5 and deliver the
    acknowledged 5-7 again (the answer reset gave before it used the one rule)."""
    retained = window(0, (2, 2, AVAILABLE), (5, 7, ACKNOWLEDGED), (8, 8, AVAILABLE))
    planned, _ = compute_plan(
        Scenario("latest"),
        [P0],
        current={P0: 0},
        log_start={P0: 5},
        log_end={P0: 12},
        windows={P0: retained.after_retention(5)},
    )
    (offset,) = planned
    assert offset.resume_offset == 8
    assert offset.resume_redelivers == 0  # nothing finished at or above 8 is delivered again
    first_unacknowledged, _ = compute_plan(
        Scenario("first-unacknowledged"),
        [P0],
        current={P0: 0},
        log_start={P0: 5},
        log_end={P0: 12},
        windows={P0: retained.after_retention(5)},
    )
    assert (first_unacknowledged[0].new_offset, first_unacknowledged[0].clamped) == (8, None)
