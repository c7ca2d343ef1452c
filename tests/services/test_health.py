"""The health rules on hand-built domain models: each rule fires on its own evidence only.

These are kshare's own models (what ``InflightService`` returns), not a fake
client: the evaluation is pure, so its rules are tested where they are decided.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import (
    GroupDescription,
    KafkaError,
    MemberDescription,
    TopicPartition,
)
from kshare_cli.services.health import (
    GroupHealth,
    Sample,
    Status,
    Thresholds,
    evaluate,
    is_stalled,
    monitoring_exit_code,
    unreadable,
    worst,
)
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState

MEMBER = MemberDescription("m1", "client-1", "/127.0.0.1", None, 3)


def _group(
    *partitions: PartitionInflight, members: int = 1, limit: int | None = 5, note: str | None = None
) -> GroupInflight:
    description = GroupDescription(
        "g", "Stable" if members else "Empty", None, 3, 3, "simple", (MEMBER,) * members
    )
    return GroupInflight("g", description, partitions, note, limit)


def _partition(
    start: int = 10,
    end: int = 15,
    *runs: WindowRun,
    partition: int = 0,
    error: KafkaError | None = None,
) -> PartitionInflight:
    window = InFlightWindow(start, 0, runs, 1, 1, 0, 0)
    return PartitionInflight(
        "t", partition, None, start, end, None if error else end - start, None, window, error
    )


def _run(first: int, last: int, state: WindowState, count: int = 1) -> WindowRun:
    return WindowRun(first, last, state, count)


def _one(health: GroupHealth) -> tuple[Status, tuple[str, ...]]:
    (partition,) = health.partitions
    return partition.status, partition.reasons


def test_a_consuming_group_is_ok_and_says_one_sample_cannot_tell_a_stall() -> None:
    health = evaluate(Sample(_group(_partition()), 0.0))
    assert health.status is Status.OK
    assert _one(health) == (Status.OK, ())
    assert health.reasons == ()
    assert any("one sample" in note for note in health.notes)


def test_no_members_with_lag_is_stop_and_without_lag_ok() -> None:
    stopped = evaluate(Sample(_group(_partition(10, 15), members=0), 0.0))
    assert stopped.status is Status.STOP
    assert stopped.reasons == ("no members while the lag is 5: nothing is being delivered",)
    idle = evaluate(Sample(_group(_partition(15, 15), members=0), 0.0))
    assert idle.status is Status.OK


def test_an_unmoved_start_offset_with_lag_stalls_only_after_stall_after() -> None:
    first = Sample(_group(_partition(10, 15)), 100.0)
    later = Sample(_group(_partition(10, 20)), 170.0)
    stalled = evaluate(later, first, Thresholds(stall_after_s=60))
    assert stalled.status is Status.STALL
    status, (reason,) = _one(stalled)
    assert status is Status.STALL
    assert reason == "start offset 10 has not moved for 70 s while the lag is 10 (growing from 5)"
    assert stalled.reasons == ("1 share-partition STALL",)
    too_soon = evaluate(later, first, Thresholds(stall_after_s=120))
    assert too_soon.status is Status.OK
    assert any("below --stall-after 120 s" in note for note in too_soon.notes)


def test_a_moving_start_offset_or_no_lag_is_no_stall() -> None:
    first = Sample(_group(_partition(10, 15)), 0.0)
    moved = Sample(_group(_partition(11, 20)), 100.0)
    assert evaluate(moved, first, Thresholds(stall_after_s=60)).status is Status.OK
    drained = Sample(_group(_partition(10, 10)), 100.0)
    assert evaluate(drained, Sample(_group(_partition(10, 10)), 0.0)).status is Status.OK


def test_records_one_delivery_short_of_the_limit_warn() -> None:
    runs = (
        _run(10, 11, WindowState.AVAILABLE, 4),
        _run(12, 12, WindowState.AVAILABLE, 3),
        _run(13, 14, WindowState.ACKNOWLEDGED, 4),
    )
    health = evaluate(Sample(_group(_partition(10, 15, *runs), limit=5), 0.0))
    status, (reason,) = _one(health)
    assert status is Status.WARN
    assert reason.startswith("2 available records were delivered 4+ times (limit 5)")
    assert health.partitions[0].near_limit == 2
    relaxed = evaluate(Sample(_group(_partition(10, 15, *runs), limit=10), 0.0))
    assert relaxed.status is Status.OK


def test_archived_records_warn_only_above_the_threshold_and_say_when_they_rose() -> None:
    before = _partition(10, 15, _run(10, 10, WindowState.ARCHIVED))
    after = _partition(10, 15, _run(10, 12, WindowState.ARCHIVED))
    assert evaluate(Sample(_group(after), 0.0)).status is Status.OK  # rule off by default
    warned = evaluate(Sample(_group(after), 0.0), thresholds=Thresholds(archived_above=0))
    assert _one(warned)[0] is Status.WARN
    assert _one(warned)[1][0].startswith("3 archived records")
    assert evaluate(Sample(_group(after), 0.0), thresholds=Thresholds(archived_above=3)).status is (
        Status.OK
    )
    rising = evaluate(
        Sample(_group(after), 10.0), Sample(_group(before), 0.0), Thresholds(archived_above=0)
    )
    assert _one(rising)[1][0].endswith("is above 0, +2 since the first sample")


def test_a_start_offset_below_the_log_start_offset_warns_with_the_records_lost() -> None:
    group = _group(_partition(10, 15))
    lost = evaluate(Sample(group, 0.0, {TopicPartition("t", 0): 13}))
    status, (reason,) = _one(lost)
    assert status is Status.WARN
    assert "3 records were deleted by retention" in reason
    assert evaluate(Sample(group, 0.0, {TopicPartition("t", 0): 10})).status is Status.OK


def test_lag_above_the_threshold_warns() -> None:
    group = _group(_partition(10, 15))
    assert evaluate(Sample(group, 0.0), thresholds=Thresholds(lag_above=4)).status is Status.WARN
    assert evaluate(Sample(group, 0.0), thresholds=Thresholds(lag_above=5)).status is Status.OK


def test_an_unreadable_share_partition_is_err_and_the_group_is_the_worst() -> None:
    failed = _partition(10, 15, partition=1, error=KafkaError(5, "LEADER_NOT_AVAILABLE"))
    health = evaluate(Sample(_group(_partition(10, 15), failed, members=0), 0.0))
    assert [each.status for each in health.partitions] == [Status.OK, Status.ERR]
    assert health.partitions[1].reasons == ("could not be read: LEADER_NOT_AVAILABLE",)
    assert health.status is Status.ERR  # above the group's own STOP
    assert "1 share-partition ERR" in health.reasons
    group = unreadable("gone", "group 'gone' does not exist", not_found=True)
    assert (group.status, group.not_found) == (Status.ERR, True)


def test_without_windows_the_window_rules_are_named_as_not_evaluated() -> None:
    bare = replace(_partition(10, 15), window=None)
    health = evaluate(Sample(_group(bare, note="no READ on __share_group_state"), 0.0))
    assert health.status is Status.OK
    assert any("no READ on __share_group_state" in note for note in health.notes)


@pytest.mark.parametrize(
    ("status", "code"),
    [(Status.OK, 0), (Status.WARN, 1), (Status.STALL, 2), (Status.STOP, 2), (Status.ERR, 2)],
)
def test_exit_codes_follow_nagios(status: Status, code: int) -> None:
    assert monitoring_exit_code(status) == code


def test_worst_and_the_shared_stall_rule() -> None:
    assert worst([Status.WARN, Status.ERR, Status.STALL]) is Status.ERR
    assert worst([]) is Status.OK
    assert is_stalled(1, 60.0, 60.0)
    assert not is_stalled(0, 600.0, 60.0)
    assert not is_stalled(1, None, 60.0)
    assert not is_stalled(None, 600.0, 60.0)
