"""One evaluation of share-group health, for ``kshare health``, the exporter and the dashboard.

Burrow's statuses, applied to share groups: a monitoring script, a Prometheus
alert and the dashboard must call the same share-partition stalled, so the rules
live here once and every front end hands in its samples.

Rules (per share-partition, then the group):

- ERR: the share-partition or the group could not be read;
- STOP: the group has no members while its lag is above 0: nobody will deliver it;
- STALL: the lag is above 0 while the start offset has not moved for
  ``stall_after_s`` (needs two samples at least that far apart; the dashboard's rule);
- WARN: lag above ``lag_above``; available records one delivery short of the
  delivery limit (the next failed delivery archives them); archived records above
  ``archived_above``; a start offset below the log start offset (retention deleted
  records before they were delivered: they are lost, yet the group can go on, so a
  warning rather than an error); records persisted ARCHIVING (Kafka 4.4: on their way
  to the dead-letter queue) in one sample, or still in a second: a broker that
  stopped between the ARCHIVING write and the DLQ write leaves them so until it
  loads the share-partition again, neither delivered nor archived.

A group's status is the worst of its share-partitions' and its own rules'.
What one sample cannot tell (a stall) is said in ``GroupHealth.notes``, never guessed.

A group's own WARN (``dlq_rate_above``): its dead-letter queue (Kafka 4.4) grew faster
than that many records a second between two samples, the DLQ flood of every record
failing at once; the reason says what was measured (records, seconds, by reason).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kshare_cli.admin.inflight import (
    DEFAULT_DELIVERY_COUNT_LIMIT,
    GroupInflight,
    PartitionInflight,
)
from kshare_cli.admin.models import BrokerFailure, TopicPartition
from kshare_cli.state.window import InFlightWindow, WindowState, resume_offset

if TYPE_CHECKING:
    from kshare_cli.admin.dead_letter_queues import GroupDeadLetterQueue

__all__ = [
    "DEFAULT_STALL_AFTER_S",
    "GroupHealth",
    "HealthReport",
    "PartitionHealth",
    "Sample",
    "Status",
    "Thresholds",
    "UnlistedBroker",
    "evaluate",
    "evaluate_samples",
    "is_stalled",
    "monitoring_exit_code",
    "overall",
    "unreadable",
    "worst",
]

#: The dashboard's ``--stall-after`` default, the same for every front end.
DEFAULT_STALL_AFTER_S: Final = 60.0


class Status(enum.StrEnum):
    """Burrow's words, in rising severity: the order is what ``worst`` compares."""

    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    ERR = "ERR"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def critical(self) -> bool:
        """STALL, STOP and ERR need someone now; WARN can wait for office hours."""
        return self.severity >= _SEVERITY[Status.STALL]


_SEVERITY: Final = {status: rank for rank, status in enumerate(Status)}


def worst(statuses: Iterable[Status]) -> Status:
    """The most severe status; OK for none (nothing found wrong)."""
    return max(statuses, key=lambda status: status.severity, default=Status.OK)


def monitoring_exit_code(status: Status) -> int:
    """Nagios' convention, which monitoring scripts expect: 0 OK, 1 WARN, 2 critical."""
    if status is Status.OK:
        return 0
    return 2 if status.critical else 1


def is_stalled(lag: int | None, unmoved_s: float | None, stall_after_s: float) -> bool:
    """Lag above zero while the start offset stood still for at least ``stall_after_s``.

    The one stall rule: the dashboard (``tui/lag_history.py`` and the group screen call it with
    the seconds since the start offset moved), ``kshare health`` and the exporter.
    """
    return lag is not None and lag > 0 and unmoved_s is not None and unmoved_s >= stall_after_s


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The operator's limits. ``None`` turns a rule off (its default where a healthy
    group commonly crosses it: any lag, any archived record)."""

    lag_above: int | None = None
    archived_above: int | None = None
    stall_after_s: float = DEFAULT_STALL_AFTER_S
    dlq_rate_above: float | None = None
    """WARN when the group's dead-letter queue grew faster than this many records a
    second between two samples (``--dlq-rate-above``)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One reading of a group, when it was taken (a monotonic clock, seconds) and the
    log start offsets of its share-partitions (ListOffsets earliest; absent when unread)."""

    group: GroupInflight
    taken_at: float
    log_start_offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    dead_letters: GroupDeadLetterQueue | None = None
    """The group's dead-letter queue as read with this sample (only when a rule or a
    front end asks for it: ``--dlq-rate-above``, the exporter)."""


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """One share-partition's status, why, and the figures the reasons quote."""

    topic: str
    partition: int
    status: Status
    reasons: tuple[str, ...]
    start_offset: int | None
    end_offset: int | None
    lag: int | None
    log_start_offset: int | None = None
    archived: int | None = None
    near_limit: int | None = None
    resume_offset: int | None = None
    """Where the group resumes (``InFlightWindow.resume_offset``: the first offset at or
    above the start offset neither acknowledged nor archived; the start offset without a
    window; None without a start offset): where the oldest waiting record is, since the
    start offset trails the acknowledgements."""
    archiving: int | None = None
    """Records persisted ARCHIVING (Kafka 4.4), neither delivered nor archived yet."""
    deleted: int | None = None
    """Records from the start offset to the log start offset that the group had not
    finished: deleted by retention (None when the log start offset is unknown)."""


@dataclass(frozen=True, slots=True)
class GroupHealth:
    """A group's status (the worst of its share-partitions and its own rules), why, and
    ``notes``: what could not be evaluated, so an OK is never claimed beyond the evidence."""

    group_id: str
    status: Status
    reasons: tuple[str, ...]
    state: str | None
    members: int | None
    lag: int | None
    partitions: tuple[PartitionHealth, ...] = ()
    notes: tuple[str, ...] = ()
    not_found: bool = False


def unreadable(group_id: str, reason: str, *, not_found: bool = False) -> GroupHealth:
    """A group that could not be described: ERR, with the reason the read failed."""
    return GroupHealth(group_id, Status.ERR, (reason,), None, None, None, not_found=not_found)


def evaluate(
    current: Sample, earlier: Sample | None = None, thresholds: Thresholds | None = None
) -> GroupHealth:
    """The group's health from one sample, or two (``earlier`` first) for stalls."""
    limits = thresholds or Thresholds()
    group = current.group
    elapsed = None if earlier is None else current.taken_at - earlier.taken_at
    before: Mapping[tuple[str, int], PartitionInflight] = (
        {}
        if earlier is None
        else {(each.topic, each.partition): each for each in earlier.group.partitions}
    )
    delivery_limit = group.delivery_count_limit or DEFAULT_DELIVERY_COUNT_LIMIT
    partitions = tuple(
        _partition(
            each,
            before.get((each.topic, each.partition)),
            elapsed,
            current.log_start_offsets.get(TopicPartition(each.topic, each.partition)),
            delivery_limit,
            limits,
        )
        for each in group.partitions
    )
    reasons: list[str] = []
    statuses = [each.status for each in partitions]
    description = group.description
    members = None if description is None else description.member_count
    lag = group.total_lag
    if members == 0 and lag is not None and lag > 0:
        statuses.append(Status.STOP)
        reasons.append(f"no members while the lag is {lag}: nothing is being delivered")
    for status in (Status.ERR, Status.STALL, Status.WARN):
        count = sum(1 for each in partitions if each.status is status)
        if count:
            noun = "share-partition" if count == 1 else "share-partitions"
            reasons.append(f"{count} {noun} {status.value}")
    notes: list[str] = []
    if limits.dlq_rate_above is not None:
        finding = _dead_letter_rate(current, earlier, limits.dlq_rate_above)
        if finding.warn:
            statuses.append(Status.WARN)
            reasons.append(finding.text)
        elif finding.text:
            notes.append(finding.text)
    if earlier is None:
        notes.append("stalls not evaluated: one sample (ask for two with --stall-after)")
    elif elapsed is not None and elapsed < limits.stall_after_s:
        notes.append(
            f"stalls not evaluated: the samples are {elapsed:.1f} s apart, "
            f"below --stall-after {limits.stall_after_s:g} s"
        )
    if group.window_note is not None:
        notes.append(
            "delivery-limit and archived rules not evaluated: no in-flight windows "
            f"({group.window_note})"
        )
    for each in group.partitions:
        if each.window_error is not None:
            notes.append(
                f"delivery-limit and archived rules not evaluated for {each.topic}:"
                f"{each.partition}: {each.window_error}"
            )
    return GroupHealth(
        group.group_id,
        worst(statuses),
        tuple(reasons),
        None if description is None else description.state,
        members,
        lag,
        partitions,
        tuple(notes),
    )


_Findings = list[tuple[Status, str]]


def _partition(
    current: PartitionInflight,
    earlier: PartitionInflight | None,
    elapsed: float | None,
    log_start_offset: int | None,
    delivery_limit: int,
    limits: Thresholds,
) -> PartitionHealth:
    start = current.start_offset
    findings = _read_and_moving(current, earlier, elapsed, limits)
    window = current.window
    near_limit = archived = archiving = None
    if window is not None:
        near_limit, archiving, archived = _window_findings(
            window, earlier, elapsed, delivery_limit, limits, findings
        )
    if log_start_offset is None:
        log_start_offset = current.log_start_offset
    deleted = _retention_finding(current, log_start_offset, findings)
    return PartitionHealth(
        current.topic,
        current.partition,
        worst(status for status, _ in findings) if findings else Status.OK,
        tuple(reason for _, reason in findings),
        start,
        current.end_offset,
        current.lag,
        log_start_offset,
        archived,
        near_limit,
        None if start is None else resume_offset(window, start),
        archiving,
        deleted,
    )


def _read_and_moving(
    current: PartitionInflight,
    earlier: PartitionInflight | None,
    elapsed: float | None,
    limits: Thresholds,
) -> _Findings:
    """What the offsets say: unreadable (ERR), stalled between two samples, lag too high."""
    findings: _Findings = []
    lag = current.lag
    start = current.start_offset
    if current.error is not None:
        findings.append((Status.ERR, f"could not be read: {current.error}"))
    elif current.end_offset_error is not None:
        # The lag is unknown, not zero: an OK here would hide the share-partitions a
        # dead or hung leader holds.
        findings.append((Status.ERR, f"end offset unknown: {current.end_offset_error}"))
    if earlier is not None and elapsed is not None:
        unmoved = elapsed if start is not None and start == earlier.start_offset else 0.0
        if is_stalled(lag, unmoved, limits.stall_after_s):
            trend = _trend(earlier.lag, lag)
            findings.append(
                (
                    Status.STALL,
                    f"start offset {start} has not moved for {elapsed:.0f} s "
                    f"while the lag is {lag}{trend}",
                )
            )
    if limits.lag_above is not None and lag is not None and lag > limits.lag_above:
        findings.append((Status.WARN, f"lag {lag} is above {limits.lag_above}"))
    return findings


def _window_findings(
    window: InFlightWindow,
    earlier: PartitionInflight | None,
    elapsed: float | None,
    delivery_limit: int,
    limits: Thresholds,
    findings: _Findings,
) -> tuple[int, int, int]:
    """What the window says (records one delivery short of the limit, archiving, archived),
    added to ``findings``; the three counts the row quotes."""
    last_chance = max(1, delivery_limit - 1)
    near_limit = (
        sum(
            run.count
            for run in window.runs
            if run.state is WindowState.AVAILABLE and run.delivery_count >= last_chance
        )
        if window.runs
        else 0
    )
    if near_limit:
        findings.append(
            (
                Status.WARN,
                f"{near_limit} available records were delivered {last_chance}+ times "
                f"(limit {delivery_limit}): one more failed delivery archives them",
            )
        )
    archiving = window.archiving
    if archiving:
        reason = _archiving_reason(window, earlier, elapsed)
        if reason is not None:
            findings.append((Status.WARN, reason))
    archived = window.archived
    if limits.archived_above is not None and archived > limits.archived_above:
        rising = ""
        if earlier is not None and earlier.window is not None:
            grown = archived - earlier.window.archived
            rising = f", +{grown} since the first sample" if grown > 0 else ""
        findings.append(
            (
                Status.WARN,
                f"{archived} archived records (rejected or over the delivery limit) "
                f"is above {limits.archived_above}{rising}",
            )
        )
    return near_limit, archiving, archived


def _retention_finding(
    current: PartitionInflight, log_start_offset: int | None, findings: _Findings
) -> int | None:
    """A start offset below the log start offset (WARN, added to ``findings``); the records
    retention deleted before the group finished them (None: the log start is unknown)."""
    start = current.start_offset
    if log_start_offset is None:
        return None
    if start is None or not 0 <= start < log_start_offset:
        return 0
    # The window says which of those offsets were done (the start offset trails the
    # acknowledgements); without it, none is known to be.
    deleted = current.with_log_start_offset(log_start_offset).deleted
    if deleted is None:
        deleted = log_start_offset - start
    lost = (
        f"{deleted} records were deleted by retention before they were delivered"
        if deleted
        else "the records below it were all finished before retention deleted them"
    )
    findings.append(
        (
            Status.WARN,
            f"start offset {start} is below the log start offset {log_start_offset}: {lost}",
        )
    )
    return deleted


def _archiving_reason(
    window: InFlightWindow, earlier: PartitionInflight | None, elapsed: float | None
) -> str | None:
    """Why ARCHIVING records warn, or None when a second sample shows them all new.

    Kafka persists ARCHIVING, writes the DLQ record, then persists ARCHIVED, within
    milliseconds: one sample cannot tell a record in transit from one left behind, so it
    warns and says what staying would mean; two samples warn only for the offsets
    archiving in both.
    """
    ranges = _archiving(window)
    what = "persisted on their way to the dead-letter queue, neither delivered nor archived"
    if earlier is None or earlier.window is None or elapsed is None:
        return (
            f"{_count(ranges)} records are archiving ({_offsets_text(ranges)}): {what}; "
            "the broker archives them right after their DLQ write, so if they stay, it "
            "stopped between the two writes and finishes them only when it loads the "
            "share-partition again"
        )
    still = _overlap(ranges, _archiving(earlier.window))
    if not still:
        return None
    return (
        f"{_count(still)} records have been archiving for {elapsed:.0f} s or more "
        f"({_offsets_text(still)}): {what}; the broker stopped between the ARCHIVING "
        "write and the DLQ write, and finishes them only when it loads the "
        "share-partition again"
    )


def _archiving(window: InFlightWindow) -> list[tuple[int, int]]:
    """The window's ARCHIVING ranges, ``(first, last)`` inclusive, in offset order."""
    return [
        (run.first_offset, run.last_offset)
        for run in window.runs
        if run.state is WindowState.ARCHIVING
    ]


def _overlap(ranges: list[tuple[int, int]], others: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The offsets both sorted range lists hold, as ranges."""
    both = []
    for first, last in ranges:
        for other_first, other_last in others:
            low, high = max(first, other_first), min(last, other_last)
            if low <= high:
                both.append((low, high))
    return sorted(both)


def _count(ranges: list[tuple[int, int]]) -> int:
    return sum(last - first + 1 for first, last in ranges)


def _offsets_text(ranges: list[tuple[int, int]], most: int = 3) -> str:
    """``offset 5`` / ``offsets 3-4, 9`` (the first ``most`` ranges, then ``...``)."""
    shown = ", ".join(
        str(first) if first == last else f"{first}-{last}" for first, last in ranges[:most]
    )
    more = ", ..." if len(ranges) > most else ""
    single = len(ranges) == 1 and ranges[0][0] == ranges[0][1]
    return f"{'offset' if single else 'offsets'} {shown}{more}"


@dataclass(frozen=True, slots=True)
class _Finding:
    warn: bool
    text: str


def _dead_letter_rate(current: Sample, earlier: Sample | None, rate_above: float) -> _Finding:
    """The DLQ's growth between two samples against ``--dlq-rate-above``: a WARN with what
    was measured, or a note saying why it could not be (one sample, no DLQ, unread)."""
    queue = current.dead_letters
    if queue is None or queue.topic is None:
        why = "the group has no dead-letter queue"
        if queue is not None and queue.note is not None:
            why = queue.note
        return _Finding(False, f"dead-letter rate not evaluated: {why}")
    if not queue.active or queue.records is None:
        return _Finding(False, f"dead-letter rate not evaluated: {queue.note or 'not read'}")
    before = None if earlier is None else earlier.dead_letters
    if earlier is None or before is None or before.records is None:
        return _Finding(
            False,
            f"dead-letter rate not evaluated: one sample of {queue.topic} "
            f"({queue.records} records; ask for two with --stall-after)",
        )
    # Between the two reads of the DLQ, not the samples' other reads.
    if queue.read_at_ms is None or before.read_at_ms is None:
        elapsed = current.taken_at - earlier.taken_at
    else:
        elapsed = (queue.read_at_ms - before.read_at_ms) / 1000.0
    if elapsed <= 0:
        return _Finding(False, "dead-letter rate not evaluated: the samples are not apart")
    grown = queue.records - before.records
    rate = grown / elapsed
    if rate <= rate_above:
        return _Finding(False, "")
    reasons = ", ".join(
        f"{count} {label}"
        for count, label in (
            ((queue.rejected or 0) - (before.rejected or 0), "rejected"),
            ((queue.delivery_limit or 0) - (before.delivery_limit or 0), "over the delivery limit"),
            ((queue.other or 0) - (before.other or 0), "other"),
        )
        if count
    )
    return _Finding(
        True,
        f"the dead-letter queue {queue.topic} grew by {grown} records in {elapsed:.1f} s "
        f"({rate:.1f}/s: {reasons}), above --dlq-rate-above {rate_above:g}/s",
    )


def _trend(earlier: int | None, now: int | None) -> str:
    if earlier is None or now is None or earlier == now:
        return ""
    return f" (growing from {earlier})" if now > earlier else f" (was {earlier})"


def overall(groups: Sequence[GroupHealth]) -> Status:
    """The run's status: the worst group's."""
    return worst(each.status for each in groups)


@dataclass(frozen=True, slots=True)
class UnlistedBroker:
    """A broker that did not list its groups (ListGroups failed on it), and the groups
    found to be its elsewhere (the state topic names them, FindCoordinator points at
    it), which are therefore unknown. Others of its groups may be unknown too: a group
    that never stored state is named nowhere else."""

    failure: BrokerFailure
    groups: tuple[str, ...] = ()

    @property
    def broker(self) -> str:
        """``broker 2 (HOST:PORT)``, as every kshare message names a broker."""
        return f"broker {self.failure.node_id} ({self.failure.host}:{self.failure.port})"

    def __str__(self) -> str:
        count = len(self.groups)
        if count:
            noun = "group" if count == 1 else "groups"
            unknown = f"{count} {noun} unknown ({', '.join(self.groups)}), maybe more"
        else:
            unknown = "the groups it coordinates are unknown"
        return f"{self.broker} did not list its groups ({self.failure.error}): {unknown}"


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Every group's health, sorted by group id, as one run (or one refresh) found it.

    ``broker_failures`` are the brokers that did not list their groups (``--all-groups``):
    the groups they coordinate are unknown, so the run is ERR however healthy the
    listed groups are. A monitoring check that said OK with a broker's groups unread
    would hide exactly the outage it exists for.
    """

    groups: tuple[GroupHealth, ...]
    broker_failures: tuple[UnlistedBroker, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "groups", tuple(sorted(self.groups, key=lambda each: each.group_id))
        )

    @property
    def status(self) -> Status:
        if self.broker_failures:
            return Status.ERR
        return overall(self.groups)

    @property
    def not_found(self) -> tuple[str, ...]:
        return tuple(each.group_id for each in self.groups if each.not_found)


def evaluate_samples(
    latest: Sequence[Sample | GroupHealth],
    earlier: Sequence[Sample | GroupHealth] = (),
    thresholds: Thresholds | None = None,
    broker_failures: Sequence[UnlistedBroker] = (),
) -> HealthReport:
    """Each group's latest sample against its earlier one, when both were read."""
    before = {each.group.group_id: each for each in earlier if isinstance(each, Sample)}
    return HealthReport(
        tuple(
            evaluate(each, before.get(each.group.group_id), thresholds)
            if isinstance(each, Sample)
            else each
            for each in latest
        ),
        tuple(broker_failures),
    )
