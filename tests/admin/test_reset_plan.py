"""``compute_plan`` and the reset renderers on hand-made offsets (no broker)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.admin.models import MemberDescription, TopicPartition
from kshare_cli.admin.reset import (
    PlannedOffset,
    ResetPlan,
    Scenario,
    alter_results_from,
    compute_plan,
)
from kshare_cli.errors import UsageError
from kshare_cli.render.reset import kafka_export, kafka_order, kafka_warnings, render_reset
from kshare_cli.state.records import StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)
START = {P0: 3, P1: 0}
END = {P0: 20, P1: 8}
MEMBER = MemberDescription("m-1", "c-1", "/10.0.0.1", None, 3)


ACKNOWLEDGED, ARCHIVED, AVAILABLE = 2, 4, 0


def window(start: int, *batches: tuple[int, int, int]) -> InFlightWindow:
    """A persisted window: (first, last, delivery state) batches, delivery count 1."""
    return InFlightWindow.from_state(
        SharePartitionState(
            0, 1, 0, start, -1, 0, 0, tuple(StateBatch(*batch, 1) for batch in batches)
        )
    )


def plan(
    scenario: Scenario,
    current: dict[TopicPartition, int],
    at: dict[TopicPartition, int] | None = None,
    windows: dict[TopicPartition, InFlightWindow] | None = None,
) -> tuple[dict[TopicPartition, PlannedOffset], tuple[str, ...]]:
    planned, warnings = compute_plan(
        scenario,
        [P1, P0],
        current=current,
        log_start=START,
        log_end=END,
        at_timestamp=at,
        windows={} if windows is None else windows,
    )
    assert [offset.topic_partition for offset in planned] == [P0, P1]  # sorted
    return {offset.topic_partition: offset for offset in planned}, warnings


# The stored start offset 10 trails the acknowledgements (Kafka 4.2 measured 13, 5, 5 on
# fully acknowledged partitions): 10-12 acknowledged, 13 available, 14 archived, 15
# acknowledged, 16-19 never delivered.
TRAILING = {
    P0: window(
        10, (10, 12, ACKNOWLEDGED), (13, 13, AVAILABLE), (14, 14, ARCHIVED), (15, 15, ACKNOWLEDGED)
    )
}


def test_earliest_and_latest_are_the_log_bounds() -> None:
    earliest, warnings = plan(Scenario("earliest"), {P0: 10}, windows=TRAILING)
    assert (earliest[P0].new_offset, earliest[P1].new_offset) == (3, 0)
    assert warnings == ()
    # 3-9 below the start, and 10-12, 14, 15 done in the window: all come back.
    assert (earliest[P0].redelivered, earliest[P0].skipped) == (7 + 5, 0)
    # No start offset: nothing was ever acknowledged there, nothing is skipped by 0.
    assert (earliest[P1].redelivered, earliest[P1].skipped) == (0, 0)
    latest, _ = plan(Scenario("latest"), {P0: 10}, windows=TRAILING)
    assert (latest[P0].new_offset, latest[P1].new_offset) == (20, 8)
    # Not 10 (20 - 10): 13 and 16-19 were unfinished; 10-12, 14, 15 were done already.
    assert (latest[P0].skipped, latest[P0].redelivered) == (5, 0)
    # Never delivered below the new start: the whole log of a partition with no start.
    assert latest[P1].skipped == 8


def test_current_delivers_again_what_the_trailing_start_offset_hides() -> None:
    planned, _ = plan(Scenario("current"), {P0: 10}, windows=TRAILING)
    assert planned[P0].new_offset == 10
    assert (planned[P0].redelivered, planned[P0].skipped) == (5, 0)


def test_first_unacknowledged_is_where_the_group_resumes() -> None:
    planned, warnings = plan(Scenario("first-unacknowledged"), {P0: 10}, windows=TRAILING)
    assert (planned[P0].new_offset, planned[P1].new_offset) == (13, 0)  # P1: the log start
    assert warnings == ()
    # 14 and 15 (archived, acknowledged) lie above 13: a reset cannot keep their states.
    assert (planned[P0].redelivered, planned[P0].skipped) == (2, 0)
    done = {P0: window(10, (10, 19, ACKNOWLEDGED))}
    all_done, _ = plan(Scenario("first-unacknowledged"), {P0: 10}, windows=done)
    assert (all_done[P0].new_offset, all_done[P0].redelivered) == (20, 0)
    bare, _ = plan(Scenario("first-unacknowledged"), {P0: 10})
    assert bare[P0].new_offset == 10  # no window: the start offset


def test_to_offset_counts_from_the_window_on_both_sides() -> None:
    planned, _ = plan(Scenario("offset", 14), {P0: 10}, windows=TRAILING)
    # Below 14: 13 unfinished (skipped). At or above: 14, 15 done (come back).
    assert (planned[P0].skipped, planned[P0].redelivered) == (1, 2)


def test_the_rollback_saves_the_resume_point_and_counts_what_it_delivers_again() -> None:
    planned, _ = plan(Scenario("latest"), {P0: 10}, windows=TRAILING)
    reset = ResetPlan("g", "--to-latest", tuple(planned.values()), "Empty")
    assert reset.rollback_offsets() == {P0: 13}  # not the trailing 10
    assert (planned[P0].resume_redelivers, reset.rollback_redelivers) == (2, 2)
    assert reset.without_start_offset == 1


def test_without_the_window_the_counts_are_lower_bounds() -> None:
    planned, warnings = compute_plan(
        Scenario("earliest"), [P0], current={P0: 10}, log_start=START, log_end=END, windows=None
    )
    (offset,) = planned
    assert (offset.redelivered, offset.skipped, offset.exact) == (7, 0, False)
    assert offset.resume_offset == 10 and offset.resume_redelivers is None
    reset = ResetPlan("g", "--to-earliest", planned, "Empty", window_note="not authorised")
    assert not reset.exact and reset.rollback_redelivers is None
    table = render_reset(reset, "table", width=200)
    assert "re-delivers ≥7" in table
    assert "at least 7" in table and "not authorised" in table


def test_to_offset_is_clamped_both_ways_with_one_warning_each() -> None:
    planned, warnings = plan(Scenario("offset", 2), {})
    assert (planned[P0].new_offset, planned[P0].clamped, planned[P0].requested_offset) == (
        3,
        "log-start",
        2,
    )
    assert (planned[P1].new_offset, planned[P1].clamped) == (2, None)
    assert warnings == ("t:0: new offset 2 is below the log start offset; using 3",)
    high, warnings = plan(Scenario("offset", 9), {})
    assert (high[P0].new_offset, high[P1].new_offset, high[P1].clamped) == (9, 8, "log-end")
    assert warnings == ("t:1: new offset 9 is above the log end offset; using 8",)


def test_shift_needs_a_current_offset() -> None:
    planned, _ = plan(Scenario("shift", -4), {P0: 10, P1: 2})
    assert (planned[P0].new_offset, planned[P1].new_offset, planned[P1].clamped) == (
        6,
        0,
        "log-start",
    )
    with pytest.raises(UsageError, match=r"cannot shift t:1: the group has no start offset"):
        plan(Scenario("shift", 1), {P0: 10})


def test_current_keeps_the_offset_or_takes_the_log_end() -> None:
    planned, warnings = plan(Scenario("current"), {P0: 25})
    # The current offset is kept as is, even beyond the log (it is not a new choice).
    assert (planned[P0].new_offset, planned[P1].new_offset) == (25, 8)
    assert warnings == ()


def test_timestamp_falls_back_to_the_log_end_when_no_record_is_that_recent() -> None:
    label = "--to-datetime 2026-01-01T00:00:00Z"
    planned, warnings = plan(Scenario("timestamp", 1, label=label), {}, at={P0: 5, P1: -1})
    assert (planned[P0].new_offset, planned[P1].new_offset) == (5, 8)
    assert warnings == (f"t:1: no record at or after {label}; using the log end offset 8",)


def test_file_offsets_are_clamped() -> None:
    planned, warnings = plan(Scenario("file", offsets={P0: 0, P1: 4}), {})
    assert (planned[P0].new_offset, planned[P1].new_offset) == (3, 4)
    assert len(warnings) == 1


@given(
    start=st.integers(0, 100),
    length=st.integers(0, 100),
    current=st.one_of(st.none(), st.integers(0, 300)),
    target=st.integers(-1000, 1000),
    states=st.lists(st.sampled_from([ACKNOWLEDGED, ARCHIVED, AVAILABLE, 1]), max_size=60),
)
def test_new_offsets_always_lie_in_the_log_and_the_counts_match_record_by_record(
    start: int, length: int, current: int | None, target: int, states: list[int]
) -> None:
    tp = TopicPartition("x", 0)
    end = start + length
    windows = {}
    if current is not None:
        windows[tp] = window(
            current, *((current + i, current + i, s) for i, s in enumerate(states))
        )
    planned, warnings = compute_plan(
        Scenario("offset", target),
        [tp],
        current={} if current is None else {tp: current},
        log_start={tp: start},
        log_end={tp: end},
        windows=windows,
    )
    (offset,) = planned
    assert start <= offset.new_offset <= end
    assert (offset.clamped is None) == (offset.new_offset == target) == (not warnings)

    def done(o: int) -> bool:
        if current is None:
            return False
        if o < current:
            return True
        i = o - current
        return i < len(states) and states[i] in (ACKNOWLEDGED, ARCHIVED)

    new = offset.new_offset
    assert offset.redelivered == sum(done(o) for o in range(new, end))
    assert offset.skipped == sum(not done(o) for o in range(start, new))
    assert offset.exact


def _rolled_back(
    reset: ResetPlan, current: int, since: InFlightWindow | None = None
) -> PlannedOffset:
    """The plan that applies ``reset``'s rollback plan once the reset left P0 at
    ``current`` (with ``since``, the window of what the group did after it)."""
    (offset,) = reset.partitions
    history = offset.rollback_history("g")
    assert history is not None
    planned, _ = compute_plan(
        Scenario("file", offsets=reset.rollback_offsets(), history={P0: history}),
        [P0],
        current={P0: current},
        log_start=START,
        log_end=END,
        windows={P0: since or window(current)},
    )
    (rollback,) = planned
    return rollback


def _reset_p0(scenario: Scenario, windows: dict[TopicPartition, InFlightWindow]) -> ResetPlan:
    planned, _ = compute_plan(
        scenario, [P0], current={P0: 10}, log_start=START, log_end=END, windows=windows
    )
    return ResetPlan("g", scenario.kind, planned, "Empty")


def test_a_rollback_plan_counts_what_was_finished_before_the_reset_it_undoes() -> None:
    # Issue 24: after --to-latest every record is below the start offset, and after
    # --to-earliest none is finished; the state topic alone cannot tell what the group
    # had finished before. The rollback plan says it, and its note counts from it.
    latest = _reset_p0(Scenario("latest"), TRAILING)
    assert latest.rollback_offsets() == {P0: 13} and latest.rollback_redelivers == 2
    rollback = _rolled_back(latest, 20)
    assert (rollback.new_offset, rollback.redelivered, rollback.skipped) == (13, 2, 0)
    assert rollback.exact and rollback.with_history
    earliest = _reset_p0(Scenario("earliest"), TRAILING)
    rollback = _rolled_back(earliest, 3)
    assert (rollback.redelivered, rollback.skipped) == (2, 0) == (earliest.rollback_redelivers, 0)
    # What the group finished since the reset comes back too: 16 after --to-earliest.
    rollback = _rolled_back(earliest, 3, window(3, (16, 16, ACKNOWLEDGED)))
    assert (rollback.redelivered, rollback.skipped) == (3, 0)
    # The same file without its history lines counts from the state topic alone.
    (bare,), _ = compute_plan(
        Scenario("file", offsets={P0: 13}),
        [P0],
        current={P0: 20},
        log_start=START,
        log_end=END,
        windows={P0: window(20)},
    )
    assert (bare.redelivered, bare.skipped, bare.with_history) == (7, 0, False)


def test_a_rollback_plan_saved_without_the_window_counts_lower_bounds() -> None:
    latest = _reset_p0(Scenario("latest"), {})
    assert latest.rollback_redelivers is None
    (offset,) = latest.partitions
    history = offset.rollback_history("g")
    assert history is not None and history.finished is None
    rollback = _rolled_back(latest, 20)
    assert (rollback.redelivered, rollback.skipped, rollback.exact) == (0, 0, False)


@given(
    states=st.lists(st.sampled_from([ACKNOWLEDGED, ARCHIVED, AVAILABLE, 1]), max_size=17),
    target=st.integers(3, 20),
    acked_since=st.sets(st.integers(3, 19), max_size=5),
)
def test_a_rollback_counts_record_by_record_what_was_finished_before_or_since(
    states: list[int], target: int, acked_since: set[int]
) -> None:
    before = window(10, *((10 + i, 10 + i, s) for i, s in enumerate(states[:10])))
    reset = _reset_p0(Scenario("offset", target), {P0: before})
    (offset,) = reset.partitions

    def finished_before(o: int) -> bool:
        return o < 10 or (o - 10 < len(states[:10]) and states[o - 10] in (ACKNOWLEDGED, ARCHIVED))

    since = sorted(o for o in acked_since if o >= target)
    after = window(target, *((o, o, ACKNOWLEDGED) for o in since))
    rollback = _rolled_back(reset, target, after)
    resume = offset.resume_offset
    assert resume is not None and rollback.new_offset == resume
    assert all(finished_before(o) for o in range(3, resume))
    assert rollback.skipped == 0 and rollback.exact
    assert rollback.redelivered == sum(
        finished_before(o) or o in since for o in range(resume, END[P0])
    )
    if not since:
        assert rollback.redelivered == reset.rollback_redelivers


class _Answer:
    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


def test_alter_results_carry_group_and_partition_errors() -> None:
    refused = _Answer(error_code=68, error_message="The group is not empty.", responses=[])
    group_error, results = alter_results_from(refused)
    assert group_error is not None and group_error.name == "NON_EMPTY_GROUP"
    assert results == {}
    partial = _Answer(
        error_code=0,
        error_message=None,
        responses=[
            _Answer(
                topic_name="t",
                partitions=[
                    _Answer(partition_index=0, error_code=0, error_message=None),
                    _Answer(partition_index=9, error_code=3, error_message="no such partition"),
                ],
            )
        ],
    )
    group_error, results = alter_results_from(partial)
    assert group_error is None
    assert results[P0] is None
    error = results[TopicPartition("t", 9)]
    assert error is not None and error.name == "UNKNOWN_TOPIC_OR_PARTITION"


def test_plain_prints_kafkas_fallback_line_before_the_table() -> None:
    label = "--to-datetime 2030-01-01T00:00:00"
    planned, _ = plan(Scenario("timestamp", 1, label=label), {}, at={P0: 5, P1: -1})
    reset = ResetPlan("golden-g", label, tuple(planned.values()), "Empty")
    # OffsetsUtils.getLogTimestampOffsets: System.out.println("\nWarn: Partition " ...).
    assert render_reset(reset, "plain") == (
        "\nWarn: Partition 1 from topic t is empty. Falling back to latest known offset.\n"
        "\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        "\ngolden-g        t               1          8"
        "\ngolden-g        t               0          5\n"
    )


def test_plain_is_kafkas_layout_in_kafkas_order() -> None:
    planned, _ = plan(Scenario("earliest"), {})
    reset = ResetPlan("golden-g", "--to-earliest", tuple(planned.values()), "Empty")
    # A HashMap<TopicPartition, ...> of t-0 and t-1 iterates t-1 first (buckets 4 and 5).
    assert render_reset(reset, "plain") == (
        "\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        "\ngolden-g        t               1          0"
        "\ngolden-g        t               0          3\n"
    )
    long_group = ResetPlan("a-much-longer-group-id", "x", tuple(planned.values()), "Empty")
    assert render_reset(long_group, "plain").splitlines()[1] == (
        "GROUP                  TOPIC           PARTITION  NEW-OFFSET"
    )
    assert render_reset(ResetPlan("g", "x", (), "Empty"), "plain") == "\n"


def _names(offsets: list[PlannedOffset]) -> list[str]:
    return [f"{offset.topic}-{offset.partition}" for offset in offsets]


def test_kafka_order_is_a_java_hashmaps() -> None:
    # Printed by Java 21: Collectors.toMap over TopicPartitions (Kafka's hashCode), keySet().
    # 24 entries: the map grew to 32 buckets; orders-1, payments-eu-11 and orders-2 show
    # the buckets' order, not the names'.
    offsets = [
        PlannedOffset(topic, partition, None, 0, 0, 0, 0)
        for topic in ("payments-eu", "orders")
        for partition in reversed(range(12))
    ]
    assert _names(kafka_order(offsets)) == [
        *("orders-7", "orders-8", "orders-9", "orders-10", "orders-11"),
        *("payments-eu-1", "payments-eu-0", "payments-eu-5", "payments-eu-4"),
        *("payments-eu-3", "payments-eu-2", "payments-eu-9", "payments-eu-8"),
        *("payments-eu-7", "payments-eu-6", "orders-0", "orders-1", "payments-eu-11"),
        *("orders-2", "payments-eu-10", "orders-3", "orders-4", "orders-5", "orders-6"),
    ]
    golden_d = [PlannedOffset("golden-d", partition, None, 0, 0, 0, 0) for partition in range(3)]
    assert _names(kafka_order(golden_d)) == ["golden-d-2", "golden-d-1", "golden-d-0"]


def test_kafka_export_is_kafkas_csv_with_println_blank_line() -> None:
    planned, _ = plan(Scenario("offset", 7), {})
    reset = ResetPlan("golden-g", "--to-offset 7", tuple(planned.values()), "Empty")
    assert kafka_export(reset) == "t,1,7\nt,0,7\n\n"
    refused = ResetPlan("golden-g", "x", tuple(planned.values()), "Stable", members=(MEMBER,))
    assert kafka_export(refused) == ""


def test_kafka_warnings_are_its_log_lines_for_each_clamped_offset() -> None:
    from datetime import datetime

    low, _ = plan(Scenario("offset", 1), {})  # t-0 starts at 3
    high, _ = plan(Scenario("offset", 100), {})  # above both ends, 20 and 8
    at = datetime(2026, 11, 28, 15, 31, 35, 793_412)
    both = ResetPlan("g", "x", (high[P1], low[P0]), "Empty")
    suffix = "(org.apache.kafka.tools.GroupOffsetsResetter)"
    assert kafka_warnings(both, at) == [
        "[2026-11-28 15:31:35,793] WARN New offset (100) is higher than latest offset for "
        f"topic partition t-1. Value will be set to 8. {suffix}",
        "[2026-11-28 15:31:35,793] WARN New offset (1) is lower than earliest offset for "
        f"topic partition t-0. Value will be set to 3. {suffix}",
    ]
    unclamped = ResetPlan("g", "x", (low[P1],), "Empty")
    assert kafka_warnings(unclamped, at) == []
