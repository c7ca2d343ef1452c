"""``compute_plan`` and the reset renderers on hand-made offsets (no broker)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.reset import (
    PlannedOffset,
    ResetPlan,
    Scenario,
    alter_results_from,
    compute_plan,
)
from kshare_cli.errors import UsageError
from kshare_cli.render.reset import render_reset

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)
START = {P0: 3, P1: 0}
END = {P0: 20, P1: 8}


def plan(
    scenario: Scenario,
    current: dict[TopicPartition, int],
    at: dict[TopicPartition, int] | None = None,
) -> tuple[dict[TopicPartition, PlannedOffset], tuple[str, ...]]:
    planned, warnings = compute_plan(
        scenario, [P1, P0], current=current, log_start=START, log_end=END, at_timestamp=at
    )
    assert [offset.topic_partition for offset in planned] == [P0, P1]  # sorted
    return {offset.topic_partition: offset for offset in planned}, warnings


def test_earliest_and_latest_are_the_log_bounds() -> None:
    earliest, warnings = plan(Scenario("earliest"), {P0: 10})
    assert (earliest[P0].new_offset, earliest[P1].new_offset) == (3, 0)
    assert warnings == ()
    assert (earliest[P0].redelivered, earliest[P0].skipped) == (7, 0)
    assert earliest[P1].redelivered is None  # no start offset: nothing to compare with
    latest, _ = plan(Scenario("latest"), {P0: 10})
    assert (latest[P0].new_offset, latest[P1].new_offset) == (20, 8)
    assert latest[P0].skipped == 10


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
    start=st.integers(0, 1000),
    length=st.integers(0, 1000),
    current=st.one_of(st.none(), st.integers(0, 3000)),
    target=st.integers(-(10**6), 10**6),
)
def test_new_offsets_always_lie_in_the_log_and_the_counts_add_up(
    start: int, length: int, current: int | None, target: int
) -> None:
    tp = TopicPartition("x", 0)
    planned, warnings = compute_plan(
        Scenario("offset", target),
        [tp],
        current={} if current is None else {tp: current},
        log_start={tp: start},
        log_end={tp: start + length},
    )
    (offset,) = planned
    assert start <= offset.new_offset <= start + length
    assert (offset.clamped is None) == (offset.new_offset == target) == (not warnings)
    if current is not None:
        assert offset.new_offset - current == (offset.skipped or 0) - (offset.redelivered or 0)


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


def test_plain_is_kafkas_layout_sorted() -> None:
    planned, _ = plan(Scenario("earliest"), {})
    reset = ResetPlan("golden-g", "--to-earliest", tuple(planned.values()), "Empty")
    assert render_reset(reset, "plain") == (
        "\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        "\ngolden-g        t               0          3"
        "\ngolden-g        t               1          0\n"
    )
    long_group = ResetPlan("a-much-longer-group-id", "x", tuple(planned.values()), "Empty")
    assert render_reset(long_group, "plain").splitlines()[1] == (
        "GROUP                  TOPIC           PARTITION  NEW-OFFSET"
    )
    assert render_reset(ResetPlan("g", "x", (), "Empty"), "plain") == "\n"
