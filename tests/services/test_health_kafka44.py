"""``health``'s rules for Kafka 4.4's ARCHIVING records and for records retention deleted
(issue 25).

ARCHIVING is neither delivered nor archived yet: it is never counted as archived, and a
record left so (a broker stopped between the ARCHIVING write and the DLQ write) warns with
words; two samples warn only of the offsets archiving in both. Below the log start offset,
only the records the group had not finished are counted lost, as ``inflight`` counts them.
"""

from __future__ import annotations

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import GroupDescription, TopicPartition
from kshare_cli.services.health import GroupHealth, Sample, Status, Thresholds, evaluate
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState


def _group(*runs: WindowRun, start: int = 10, end: int = 20) -> GroupInflight:
    window = InFlightWindow(start, 0, runs, 1, 2, 0, 0)
    partition = PartitionInflight("t", 0, None, start, end, end - start, "broker", window)
    description = GroupDescription("g", "Empty", None, 3, 3, "simple")
    return GroupInflight("g", description, (partition,), None, 5)


def _partition(health: GroupHealth) -> tuple[Status, tuple[str, ...]]:
    (partition,) = health.partitions
    return partition.status, partition.reasons


ACK = WindowRun(10, 11, WindowState.ACKNOWLEDGED, 1)


def test_archiving_records_warn_and_are_not_archived() -> None:
    group = _group(
        ACK,
        WindowRun(12, 13, WindowState.ARCHIVING, 1),
        WindowRun(14, 14, WindowState.ARCHIVED, 5),
    )
    health = evaluate(Sample(group, 0.0), thresholds=Thresholds(archived_above=1))
    status, reasons = _partition(health)
    assert status is Status.WARN
    assert reasons == (
        "2 records are archiving (offsets 12-13): persisted on their way to the dead-letter "
        "queue, neither delivered nor archived; the broker archives them right after their "
        "DLQ write, so if they stay, it stopped between the two writes and finishes them "
        "only when it loads the share-partition again",
    )  # and 1 archived is not above 1
    (partition,) = health.partitions
    assert (partition.archiving, partition.archived) == (2, 1)


def test_two_samples_warn_only_of_the_records_archiving_in_both() -> None:
    # Lag 0 (end = start), so that the unmoved start offset is no stall.
    earlier = _group(ACK, WindowRun(12, 12, WindowState.ARCHIVING, 1), end=10)
    later = _group(
        ACK,
        WindowRun(12, 12, WindowState.ARCHIVING, 1),
        WindowRun(13, 13, WindowState.AVAILABLE, 1),
        WindowRun(14, 14, WindowState.ARCHIVING, 5),
        end=10,
    )
    status, reasons = _partition(evaluate(Sample(later, 90.0), Sample(earlier, 0.0)))
    assert status is Status.WARN
    assert reasons[0].startswith(
        "1 records have been archiving for 90 s or more (offset 12): persisted on their way "
        "to the dead-letter queue"
    )
    assert "the broker stopped between the ARCHIVING write and the DLQ write" in reasons[0]
    # Archiving only since the earlier sample: in transit to the DLQ, no warning.
    moved_on = _group(ACK, WindowRun(12, 12, WindowState.ARCHIVED, 1), end=10)
    fresh = _group(
        ACK,
        WindowRun(12, 12, WindowState.ARCHIVED, 1),
        WindowRun(13, 13, WindowState.ARCHIVING, 1),
        end=10,
    )
    assert evaluate(Sample(fresh, 90.0), Sample(moved_on, 0.0)).status is Status.OK


def test_retention_counts_only_the_records_the_group_had_not_finished() -> None:
    # 10-11 acknowledged (the start offset trails them), 12 available, 13.. never delivered.
    group = _group(ACK, WindowRun(12, 12, WindowState.AVAILABLE, 2))
    health = evaluate(Sample(group, 0.0, {TopicPartition("t", 0): 15}))
    status, reasons = _partition(health)
    assert status is Status.WARN
    assert reasons == (
        "start offset 10 is below the log start offset 15: 3 records were deleted by "
        "retention before they were delivered",
    )
    assert health.partitions[0].deleted == 3
    finished = evaluate(Sample(_group(ACK), 0.0, {TopicPartition("t", 0): 12}))
    assert _partition(finished)[1] == (
        "start offset 10 is below the log start offset 12: the records below it were all "
        "finished before retention deleted them",
    )
    # The log start offset the share-partition already carries (kshare inflight's read).
    carried = group.with_log_start_offsets({TopicPartition("t", 0): 15})
    assert _partition(evaluate(Sample(carried, 0.0)))[1] == reasons
    assert evaluate(Sample(group, 0.0)).partitions[0].deleted is None
