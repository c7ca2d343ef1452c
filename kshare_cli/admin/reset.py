"""Resetting a share group's start offsets: plan first, check, then apply.

A reset discards a share-partition's in-flight state and delivery counts for
good, so kshare separates the three steps Kafka's tool runs as one:

1. ``ShareGroupResetter.plan`` asks the cluster what it needs (the group's
   members and current start offsets, the partitions' log start and end
   offsets, and for a timestamp the first offset at or after it) and computes
   the new offsets with ``compute_plan``, a pure function. Nothing changes.
2. The command shows the plan, refuses a group with members, asks for
   confirmation and saves a rollback plan.
3. ``ShareGroupResetter.execute`` sends one AlterShareGroupOffsets and records
   each partition's result in the plan.

Kafka semantics followed (Kafka 4.4's ``GroupOffsetsResetter``, which the share
group command uses since 4.3, and 4.2's ``ShareGroupCommand``):

- ``--to-earliest``/``--to-latest`` are the log start and end offsets;
  ``--to-datetime``/``--by-duration`` the first offset whose timestamp is at or
  after the time, or the log end offset when no record is that recent (with a
  warning, as Kafka prints one).
- ``--to-offset``, ``--shift-by`` and ``--from-file`` offsets are clamped to
  [log start, log end], with one warning per clamped partition.
- ``--to-current`` keeps the current start offset, or takes the log end offset
  where the group has none.
- ``--all-topics`` means every share-partition the broker lists for the group,
  read or not: Kafka 4.2's ``ShareGroupCommand.getPartitionsToReset`` takes the
  key set of ``Admin.listShareGroupOffsets`` with no partitions named, that is a
  DescribeShareGroupOffsets with all topics, which the group coordinator answers
  with every initialised share-partition
  (``GroupCoordinatorService.describeShareGroupAllOffsets`` ->
  ``initializedShareGroupPartitions``: all partitions of the subscribed topics,
  initialised at the join with start offset -1), and ``ListShareGroupOffsetsHandler``
  keeps those with no start offset (as null). A partition with no start offset
  is planned (current ``-``) and reset.
- A group is reset only when it has no members (Empty or Dead).

What a reset does to records (measured on Kafka 4.2.0): the stored start offset
trails the acknowledgements (the delivery-complete count covers the rest), and an
AlterShareGroupOffsets replaces the stored state with a bare start offset
(``GroupMetadataManager.alterShareGroupOffsets`` -> ``InitializeShareGroupState``),
so every record at or above the new start is delivered again, acknowledged or
archived ones included, and every record below it that was not yet acknowledged
is never delivered. The plan therefore counts from the in-flight window that
``kshare inflight`` reads from ``__share_group_state`` (``InflightService``,
``InFlightWindow``); without READ on that topic the counts are lower bounds
(``PlannedOffset.exact``), and say so. The state topic cannot say what a group had
finished before a reset (the reset cleared it, and Kafka prunes the older records),
so a rollback plan records it, and applying one counts from that record too: one
rule (``Finished``) gives the plan's counts and the rollback note's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from kio.schema.errors import ErrorCode

from kshare_cli.admin.inflight import (
    GroupNotAuthorized,
    GroupNotFound,
    GroupReader,
    GroupUnavailable,
)
from kshare_cli.admin.models import (
    GroupDescription,
    GroupFailure,
    MemberDescription,
    PartitionFailure,
    TopicPartition,
    in_partition_order,
)
from kshare_cli.admin.plans import RollbackHistory
from kshare_cli.admin.share_groups import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
)
from kshare_cli.errors import KshareError, NotAuthorized, NotFound, Refused, UsageError
from kshare_cli.kafka.api_keys import ALTER_SHARE_GROUP_OFFSETS
from kshare_cli.state.window import FINISHED_STATES, InFlightWindow, resume_offset
from kshare_cli.wire.errors import KafkaError

if TYPE_CHECKING:
    from kshare_cli.admin.share_groups import ShareGroupAdmin

__all__ = [
    "Clamp",
    "Finished",
    "PlannedOffset",
    "RefusalReason",
    "ResetPlan",
    "Scenario",
    "Selection",
    "ShareGroupResetter",
    "alter_results_from",
    "compute_plan",
]

ScenarioKind = Literal[
    "earliest",
    "latest",
    "timestamp",
    "offset",
    "shift",
    "current",
    "first-unacknowledged",
    "file",
]
Clamp = Literal["log-start", "log-end"]
#: Why a reset is refused: ``not_empty``, the group has members (Kafka resets only an
#: Empty or Dead group, and so does the broker).
RefusalReason = Literal["not_empty"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """Where to move the start offsets.

    ``value`` is the epoch-millisecond timestamp (``timestamp``), the offset
    (``offset``) or the shift (``shift``); ``offsets`` the plan file's offsets
    (``file``), and ``history`` what a rollback plan file recorded of the records
    finished before the reset it undoes (see ``Finished``). ``label`` is how the
    operator asked, for the output.
    """

    kind: ScenarioKind
    value: int | None = None
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    label: str = ""
    history: Mapping[TopicPartition, RollbackHistory] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which partitions: whole ``topics``, named ``partitions``, or ``all_topics``
    (every share-partition the broker lists for the group, with a start offset or
    not, as Kafka's tool). A ``file`` scenario selects its own partitions."""

    topics: tuple[str, ...] = ()
    partitions: tuple[TopicPartition, ...] = ()
    all_topics: bool = False


@dataclass(frozen=True, slots=True)
class Finished:
    """The offsets of one share-partition that the group finished (acknowledged or
    archived), as far as kshare knows: the one thing every count of a plan comes from.

    A reset clears every record's state, so a record at or above the new start offset
    that was finished is delivered again, and one below it that was not is skipped:
    ``delivered_again`` and ``skipped`` say how many. ``ranges`` are half-open
    ``[first, end)`` ranges, sorted and apart. ``exact`` is False when only part is
    known (the in-flight window could not be read): then the ranges hold what is
    certainly finished, ``delivered_again`` is a lower bound and ``skipped`` is 0.

    What is known: from the state topic, everything below the stored start offset
    (which trails the acknowledgements) and the Acknowledged and Archived batches of
    the window (``of_window``); from a rollback plan, what was finished before the
    reset it undoes (``before_reset``), which that reset cleared from the state topic
    and which the plan alone still records.
    """

    ranges: tuple[tuple[int, int], ...] = ()
    exact: bool = True

    @classmethod
    def of(cls, ranges: Iterable[tuple[int, int]], *, exact: bool = True) -> Finished:
        """From any ``[first, end)`` ranges: empty ones dropped, overlapping ones merged."""
        merged: list[tuple[int, int]] = []
        for first, end in sorted(r for r in ranges if r[1] > r[0]):
            if merged and first <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((first, end))
        return cls(tuple(merged), exact)

    @classmethod
    def of_window(cls, start_offset: int, window: InFlightWindow | None) -> Finished:
        """What the state topic says: below the start offset, and the window's
        Acknowledged, Archiving and Archived records (not exact without the window)."""
        if window is None:
            return cls.of([(0, start_offset)], exact=False)
        return cls.of(
            [(0, start_offset)]
            + [
                (run.first_offset, run.last_offset + 1)
                for run in window.runs
                if run.state in FINISHED_STATES
            ]
        )

    @classmethod
    def before_reset(cls, history: RollbackHistory) -> Finished:
        """What a rollback plan recorded (its ranges are inclusive, as the file lists them)."""
        ranges = [(0, history.finished_below)]
        if history.finished is not None:
            ranges += [(first, last + 1) for first, last in history.finished]
        return cls.of(ranges, exact=history.finished is not None)

    def count(self, first: int, end: int) -> int:
        """Finished offsets in ``[first, end)``."""
        return sum(max(0, min(end, high) - max(first, low)) for low, high in self.ranges)

    def delivered_again(self, new_offset: int, log_start: int, log_end: int) -> int:
        """Finished records at or above ``new_offset`` in the log: a reset there clears
        their states and delivers them again."""
        return self.count(max(new_offset, log_start), log_end)

    def skipped(self, new_offset: int, log_start: int) -> int:
        """Unfinished records below ``new_offset`` in the log: the group never gets them
        (0 when not exact: none of them is known to be unfinished)."""
        if not self.exact:
            return 0
        return max(0, new_offset - log_start) - self.count(log_start, new_offset)

    def since(self, offset: int) -> Finished:
        """Only the finished offsets at or above ``offset``."""
        return Finished.of(
            ((max(low, offset), high) for low, high in self.ranges), exact=self.exact
        )

    def union(self, other: Finished) -> Finished:
        return Finished.of((*self.ranges, *other.ranges), exact=self.exact and other.exact)

    def inclusive_ranges(self, first: int, end: int) -> tuple[tuple[int, int], ...]:
        """The finished ranges within ``[first, end)`` as a plan file lists them,
        ``(first, last)`` inclusive."""
        return tuple(
            (max(low, first), min(high, end) - 1)
            for low, high in self.ranges
            if min(high, end) > max(low, first)
        )


_NOTHING_FINISHED: Final = Finished()


@dataclass(frozen=True, slots=True)
class PlannedOffset:
    """One share-partition's move: from ``current_offset`` (None: the group has no
    start offset there) to ``new_offset``, which is ``requested_offset`` clamped to
    [``log_start_offset``, ``log_end_offset``]. After ``execute``, ``applied`` or
    ``error`` says what the broker did.

    ``redelivered`` counts the records the reset makes the group receive again:
    acknowledged or archived ones at or above the new start (the reset clears
    their states). ``skipped`` counts the records below the new start that the
    group had not finished (available, acquired, or never delivered): it will
    never receive them. Both come from the in-flight window; ``exact`` is False
    when the window was not read, and then both are lower bounds.

    ``resume_offset`` is where the group would have resumed without the reset:
    the first offset at or after the stored start that is neither acknowledged nor
    archived (None: the group has no start offset, which no reset can restore).
    A rollback plan moves the start offset there; ``resume_redelivers`` is how many
    records, acknowledged or archived before this reset, such a rollback delivers
    again (None: unknown, the window was not read). ``fell_back``: a timestamp
    scenario found no record at or after the time and took the log end offset.

    ``finished`` is what every count comes from (see ``Finished``); ``with_history``
    says it includes what a rollback plan recorded of the time before the reset it
    undoes.
    """

    topic: str
    partition: int
    current_offset: int | None
    requested_offset: int
    new_offset: int
    log_start_offset: int
    log_end_offset: int
    clamped: Clamp | None = None
    applied: bool = False
    error: KafkaError | None = None
    skipped: int = 0
    redelivered: int = 0
    exact: bool = True
    resume_offset: int | None = None
    resume_redelivers: int | None = None
    fell_back: bool = False
    finished: Finished = _NOTHING_FINISHED
    with_history: bool = False

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def rollback_history(self, group_id: str) -> RollbackHistory | None:
        """What a rollback plan records of this share-partition, so that applying it counts
        as its note does; None where the group has no start offset (nothing to restore)."""
        if self.resume_offset is None:
            return None
        return RollbackHistory(
            group_id,
            self.topic,
            self.partition,
            self.new_offset,
            self.resume_offset,
            self.finished.inclusive_ranges(self.resume_offset, self.log_end_offset)
            if self.finished.exact
            else None,
        )


@dataclass(frozen=True, slots=True)
class ResetPlan:
    """A reset of one share group, planned and, once executed, with its results.

    ``state`` is the group's state when planned (None: the group does not exist
    yet and the reset would create it); ``members`` its members then (or, when the
    broker refused the reset, when it refused), which make ``--execute`` refuse.
    ``warnings`` are the clamps and fallbacks, one line each.
    """

    group_id: str
    scenario: str
    partitions: tuple[PlannedOffset, ...]
    state: str | None
    members: tuple[MemberDescription, ...] = ()
    warnings: tuple[str, ...] = ()
    executed: bool = False
    rollback_file: str | None = None
    group_error: KafkaError | None = None
    window_note: str | None = None
    """Why the in-flight windows could not be read (then the counts are lower bounds)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", in_partition_order(self.partitions))

    @property
    def skipped(self) -> int:
        return sum(offset.skipped for offset in self.partitions)

    @property
    def redelivered(self) -> int:
        return sum(offset.redelivered for offset in self.partitions)

    @property
    def exact(self) -> bool:
        """False when any count is a lower bound (a window could not be read)."""
        return all(offset.exact for offset in self.partitions)

    def rollback_offsets(self) -> dict[TopicPartition, int]:
        """What a rollback plan moves the start offsets back to: each partition's
        resume point (the first offset not yet acknowledged or archived), not the
        stored start offset, which trails the acknowledgements and would deliver
        acknowledged records again. Partitions without a start offset are absent:
        no AlterShareGroupOffsets can give that back."""
        return {
            offset.topic_partition: offset.resume_offset
            for offset in self.partitions
            if offset.resume_offset is not None
        }

    @property
    def rollback_redelivers(self) -> int | None:
        """Records acknowledged or archived before this reset that applying the rollback
        plan delivers again (a reset clears per-record states); None when unknown."""
        counts = [
            offset.resume_redelivers
            for offset in self.partitions
            if offset.resume_offset is not None
        ]
        if any(count is None for count in counts):
            return None
        return sum(count for count in counts if count is not None)

    @property
    def with_history(self) -> bool:
        """Whether the counts include a rollback plan's record of the time before the reset
        it undoes."""
        return any(offset.with_history for offset in self.partitions)

    @property
    def without_start_offset(self) -> int:
        """Share-partitions the group had no start offset on (a rollback leaves them)."""
        return sum(1 for offset in self.partitions if offset.current_offset is None)

    def new_offsets(self) -> dict[TopicPartition, int]:
        return {offset.topic_partition: offset.new_offset for offset in self.partitions}

    def errors(self) -> tuple[PartitionFailure, ...]:
        return tuple(
            PartitionFailure(self.group_id, offset.topic_partition, offset.error)
            for offset in self.partitions
            if offset.error is not None
        )

    def ok(self) -> bool:
        return self.group_error is None and not self.errors()

    @property
    def refusal(self) -> RefusalReason | None:
        """Why the reset is (dry run) or was refused, else None: members when planned,
        or the broker's NON_EMPTY_GROUP (a consumer joined after the plan). A refused
        reset changes nothing, so every partition's result is the refusal."""
        if self.members:
            return "not_empty"
        if self.group_error is not None and self.group_error.code == ErrorCode.non_empty_group:
            return "not_empty"
        return None


# --------------------------------------------------------------------------- pure planning


def compute_plan(
    scenario: Scenario,
    partitions: Iterable[TopicPartition],
    *,
    current: Mapping[TopicPartition, int],
    log_start: Mapping[TopicPartition, int],
    log_end: Mapping[TopicPartition, int],
    at_timestamp: Mapping[TopicPartition, int] | None = None,
    windows: Mapping[TopicPartition, InFlightWindow] | None = None,
) -> tuple[tuple[PlannedOffset, ...], tuple[str, ...]]:
    """The new start offset of every partition, what the move delivers again and skips,
    and the warnings, from known offsets and windows.

    ``current`` holds the group's start offsets (partitions without one are absent);
    ``at_timestamp`` the ListOffsets answers for a ``timestamp`` scenario (-1: no
    record at or after it). ``windows`` holds the persisted in-flight windows read
    from the state topic (a partition absent: nothing persisted); None when the
    state topic was not read, and then the counts of partitions with a start offset
    are lower bounds. A ``file`` scenario's ``history`` (a rollback plan's record of
    the records finished before the reset it undoes) adds to what the state topic
    says (``_with_history``). Raises UsageError for a shift where the group has no start
    offset, as Kafka's tool refuses it.
    """
    planned: list[PlannedOffset] = []
    warnings: list[str] = []
    for tp in sorted(set(partitions)):
        start, end = log_start[tp], log_end[tp]
        now = current.get(tp)
        window = _window_of(tp, now, windows)
        history = scenario.history.get(tp) if scenario.kind == "file" else None
        in_state = _NOTHING_FINISHED if now is None else Finished.of_window(now, window)
        finished = in_state if history is None else _with_history(in_state, history)
        # Where the group resumes without this reset is the state topic's to say; what the
        # rollback then delivers again counts everything the group is known to have finished.
        resume = _resume_offset(now, window, start)
        requested, clampable, fell_back = _requested(
            scenario, tp, now, resume, (start, end), at_timestamp
        )
        if fell_back:
            warnings.append(
                f"{tp}: no record at or after {scenario.label or 'the time'}; "
                f"using the log end offset {end}"
            )
        new, clamped = (
            _clamp(tp, requested, start, end, warnings) if clampable else (requested, None)
        )
        resume_redelivers = None
        if now is not None and finished.exact:
            resume_redelivers = finished.delivered_again(resume, start, end)
        planned.append(
            PlannedOffset(
                tp.topic,
                tp.partition,
                now,
                requested,
                new,
                start,
                end,
                clamped,
                skipped=finished.skipped(new, start),
                redelivered=finished.delivered_again(new, start, end),
                exact=finished.exact,
                resume_offset=None if now is None else resume,
                resume_redelivers=resume_redelivers,
                fell_back=fell_back,
                finished=finished,
                with_history=history is not None,
            )
        )
    return tuple(planned), tuple(warnings)


def _requested(
    scenario: Scenario,
    tp: TopicPartition,
    now: int | None,
    resume: int,
    log_bounds: tuple[int, int],
    at_timestamp: Mapping[TopicPartition, int] | None,
) -> tuple[int, bool, bool]:
    """The offset the scenario asks for on ``tp`` before any clamp, whether it may be
    clamped, and whether a timestamp found no record (then it is the log end offset)."""
    kind = scenario.kind
    start, end = log_bounds
    if kind == "timestamp":
        found = -1 if at_timestamp is None else at_timestamp.get(tp, -1)
        return (end, True, True) if found < 0 else (found, True, False)
    if kind == "shift":
        if now is None:
            raise UsageError(
                f"cannot shift {tp}: the group has no start offset there "
                "(use --to-earliest, --to-latest or --to-offset)"
            )
        return now + _value(scenario), True, False
    if kind == "current":
        return (end if now is None else now), now is None, False
    if kind == "first-unacknowledged":
        return resume, True, False
    if kind == "offset":
        return _value(scenario), True, False
    if kind == "file":
        return scenario.offsets[tp], True, False
    return (start if kind == "earliest" else end), True, False


def _clamp(
    tp: TopicPartition, requested: int, start: int, end: int, warnings: list[str]
) -> tuple[int, Clamp | None]:
    """``requested`` within [log start, log end], and which bound it was moved to (with a
    warning, as Kafka prints one)."""
    if requested > end:
        warnings.append(f"{tp}: new offset {requested} is above the log end offset; using {end}")
        return end, "log-end"
    if requested < start:
        warnings.append(
            f"{tp}: new offset {requested} is below the log start offset; using {start}"
        )
        return start, "log-start"
    return requested, None


def _window_of(
    tp: TopicPartition,
    now: int | None,
    windows: Mapping[TopicPartition, InFlightWindow] | None,
) -> InFlightWindow | None:
    """The partition's window when it says something about its records: persisted,
    initialised (start offset >= 0), and the state of the start offset the broker
    named (a window from before a later reset would count the wrong records)."""
    if windows is None or now is None:
        return None
    window = windows.get(tp)
    if window is None or window.start_offset < 0 or window.start_offset != now:
        return None
    return window


def _with_history(in_state: Finished, history: RollbackHistory) -> Finished:
    """What the group finished on a share-partition, given a rollback plan's ``history``.

    The state topic knows what is below the stored start offset and the window's
    Acknowledged and Archived records (``in_state``). The reset the rollback plan undoes
    cleared the states of the records finished before it (to the latest offset, it
    even put them below the start offset beside the records it skipped, so the state
    topic cannot tell them apart): the plan's record of them is added, and of the
    state topic's view only what lies at or above where that reset moved the start
    offset, which is the group's own work since.
    """
    return Finished.before_reset(history).union(in_state.since(history.reset_to))


def _resume_offset(now: int | None, window: InFlightWindow | None, log_start: int) -> int:
    """Where the group resumes (``InFlightWindow.resume_offset``; the start offset when no
    window says more); the log start when the group has no start offset."""
    if now is None:
        return log_start
    return resume_offset(window, now)


def _value(scenario: Scenario) -> int:
    if scenario.value is None:
        raise UsageError(f"the {scenario.kind} scenario needs a value")
    return scenario.value


def alter_results_from(
    response: Any,
) -> tuple[KafkaError | None, dict[TopicPartition, KafkaError | None]]:
    """An AlterShareGroupOffsets answer: the group-level error, and each partition's."""
    code = int(response.error_code)
    group_error = KafkaError.of(code, response.error_message) if code != 0 else None
    results: dict[TopicPartition, KafkaError | None] = {}
    for topic in response.responses:
        for partition in topic.partitions:
            tp = TopicPartition(topic.topic_name, int(partition.partition_index))
            partition_code = int(partition.error_code)
            results[tp] = (
                KafkaError.of(partition_code, partition.error_message) if partition_code else None
            )
    return group_error, results


# --------------------------------------------------------------------------- cluster


class ShareGroupResetter:
    """Plans and applies start-offset resets over a ``ShareGroupAdmin``.

    ``inflight`` reads the group's share-partitions and their in-flight windows from
    ``__share_group_state`` (``kshare inflight``'s service, holding offsets it reads
    from the state topic when the coordinator holds them); a plan needs it, applying
    one does not. A reader without a state source, or a state topic that cannot be
    read, leaves the plan's counts as lower bounds, with ``ResetPlan.window_note``
    saying why.
    """

    def __init__(self, admin: ShareGroupAdmin, inflight: GroupReader | None = None) -> None:
        self._admin = admin
        self._inflight = inflight

    async def plan(
        self,
        group_id: str,
        selection: Selection,
        scenario: Scenario,
        *,
        allow_new_group: bool = False,
    ) -> ResetPlan:
        """The plan for ``group_id``; raises NotFound for an unknown group (unless
        ``allow_new_group``), topic or partition, and Refused for a group the
        cluster will not describe. A group with members is planned (for a dry
        run) with its ``members`` set; the command refuses to execute it."""
        description = await self._describe(group_id, allow_new_group=allow_new_group)
        listed: dict[TopicPartition, int | None] = {}
        windows: dict[TopicPartition, InFlightWindow] | None = None
        note: str | None = None
        if description is not None:
            listed, windows, note = await self._share_partitions(group_id)
        elif self._inflight is not None and self._inflight.reads_state:
            windows = {}  # a group that does not exist has no state, hence exact counts
        current = {tp: offset for tp, offset in listed.items() if offset is not None}
        if scenario.kind == "file":
            wanted: list[TopicPartition] = sorted(scenario.offsets)
        elif selection.all_topics:
            wanted = sorted(listed)
            if not wanted:
                raise NotFound(
                    f"share group '{group_id}' has no share-partitions to reset; "
                    "name the partitions with --topic"
                )
        else:
            wanted = sorted(set(selection.partitions))
        wanted = await self._check_partitions(wanted, selection.topics)
        log_start, log_end, at_timestamp = await self._log_offsets(wanted, scenario)
        partitions, warnings = compute_plan(
            scenario,
            wanted,
            current=current,
            log_start=log_start,
            log_end=log_end,
            at_timestamp=at_timestamp,
            windows=windows,
        )
        if all(offset.exact for offset in partitions):
            note = None
        elif note is None:
            note = "the state topic was not read"
        return ResetPlan(
            group_id,
            scenario.label or scenario.kind,
            partitions,
            None if description is None else description.state,
            () if description is None else description.members,
            warnings,
            window_note=note,
        )

    async def execute(self, plan: ResetPlan) -> ResetPlan:
        """One AlterShareGroupOffsets with the plan's new offsets; the plan with results.

        The broker itself refuses a group that gained members since the plan
        (NON_EMPTY_GROUP): that is the plan's ``group_error``, and no partition
        is changed.
        """
        topics: dict[str, list[dict[str, int]]] = {}
        for offset in plan.partitions:
            topics.setdefault(offset.topic, []).append(
                {"partition_index": offset.partition, "start_offset": offset.new_offset}
            )
        body = {
            "group_id": plan.group_id,
            "topics": [
                {"topic_name": name, "partitions": partitions}
                for name, partitions in topics.items()
            ],
        }
        answers = await self._admin.client.fan_out_to_coordinators(
            ALTER_SHARE_GROUP_OFFSETS,
            [plan.group_id],
            lambda version, groups: body,
            lambda response: {plan.group_id: (int(response.error_code), response)},
        )
        answer = answers[plan.group_id]
        if isinstance(answer, KafkaError):
            return replace(plan, executed=True, group_error=answer)
        group_error, results = alter_results_from(answer)
        if group_error is not None:
            return replace(plan, executed=True, group_error=group_error)
        partitions = tuple(
            replace(
                offset,
                applied=results.get(offset.topic_partition, _NO_ANSWER) is None,
                error=results.get(offset.topic_partition, _NO_ANSWER),
            )
            for offset in plan.partitions
        )
        return replace(plan, executed=True, partitions=partitions)

    # -- the questions a plan asks ----------------------------------------------

    async def _describe(self, group_id: str, *, allow_new_group: bool) -> GroupDescription | None:
        described = (await self._admin.describe_groups([group_id])).get(group_id)
        if isinstance(described, GroupFailure):
            if described.not_share_group:
                # A consumer group of that id: there is nothing to create, and the
                # broker would refuse the new share group's offsets after the rollback
                # file was written.
                raise Refused(str(described))
            if described.not_found and allow_new_group:
                return None
            if described.not_found:
                raise NotFound(
                    f"share group '{group_id}' not found "
                    "(--allow-new-group creates it with these start offsets)"
                )
            if described.not_authorized:
                raise NotAuthorized(str(described))
            raise Refused(str(described))
        if described is None:
            raise KshareError(f"share group '{group_id}': the coordinator did not answer")
        return described

    async def _share_partitions(
        self, group_id: str
    ) -> tuple[
        dict[TopicPartition, int | None], dict[TopicPartition, InFlightWindow] | None, str | None
    ]:
        """Every share-partition the broker lists for the group (DescribeShareGroupOffsets
        with all topics, as Kafka's tool), its start offset (None: not initialised), and
        the windows from the state topic (None when not read, with the reason)."""
        # A coordinator holding DescribeShareGroupOffsets (a share coordinator it reads from
        # is silent) still describes the group; the state topic then names the silent broker.
        # A plan needs every share-partition, so the state topic's answer is not enough.
        service = self._inflight
        if service is None:
            raise TypeError("ShareGroupResetter: a plan needs an in-flight reader")
        try:
            inflight = await service.group(group_id)
        except GroupNotFound:
            raise NotFound(f"share group '{group_id}' not found") from None
        except GroupNotAuthorized as refused:
            raise NotAuthorized(str(refused)) from None
        except GroupUnavailable as unavailable:
            raise Refused(f"share group '{group_id}': start offsets: {unavailable}") from None
        if inflight.offsets_note is not None:
            raise Refused(
                f"share group '{group_id}': no plan without every start offset: "
                f"{inflight.offsets_note}"
            )
        for partition in inflight.partitions:
            if partition.error is not None:
                raise Refused(
                    f"share group '{group_id}': {partition.topic}:{partition.partition}: "
                    f"{partition.error}"
                )
        listed = {
            TopicPartition(partition.topic, partition.partition): partition.start_offset
            for partition in inflight.partitions
        }
        if not service.reads_state or inflight.window_note is not None:
            return listed, None, inflight.window_note
        # A window missing because its state partition's leader was silent is not "nothing
        # persisted": the counts become lower bounds, and the note names the broker.
        unread = dict.fromkeys(
            partition.window_error
            for partition in inflight.partitions
            if partition.window_error is not None
        )
        if unread:
            return listed, None, "window unknown: " + "; ".join(unread)
        windows = {
            TopicPartition(partition.topic, partition.partition): partition.window
            for partition in inflight.partitions
            if partition.window is not None
        }
        return listed, windows, None

    async def _check_partitions(
        self, partitions: Sequence[TopicPartition], whole_topics: Sequence[str]
    ) -> list[TopicPartition]:
        """The named partitions and every partition of ``whole_topics``, all checked to
        exist (NotFound otherwise, naming each missing one)."""
        names = sorted({tp.topic for tp in partitions} | set(whole_topics))
        if not names:
            return []
        metadata = await self._admin.client.metadata(names, refresh=True)
        missing: list[str] = []
        found: set[TopicPartition] = set()
        for name in names:
            topic = metadata.topics.get(name)
            if topic is None or topic.error_code != 0 or not topic.partitions:
                missing.append(f"topic '{name}' does not exist")
        if missing:
            raise NotFound("; ".join(missing))
        for name in whole_topics:
            found.update(TopicPartition(name, index) for index in metadata.topics[name].partitions)
        for tp in partitions:
            count = len(metadata.topics[tp.topic].partitions)
            if tp.partition not in metadata.topics[tp.topic].partitions:
                missing.append(
                    f"partition {tp} does not exist (topic '{tp.topic}' has partitions "
                    f"0-{count - 1})"
                )
            found.add(tp)
        if missing:
            raise NotFound("; ".join(missing))
        return sorted(found)

    async def _log_offsets(
        self, partitions: Sequence[TopicPartition], scenario: Scenario
    ) -> tuple[
        dict[TopicPartition, int], dict[TopicPartition, int], dict[TopicPartition, int] | None
    ]:
        if not partitions:
            return {}, {}, None
        queries = [
            self._admin.log_offsets(partitions, EARLIEST_TIMESTAMP),
            self._admin.log_offsets(partitions, LATEST_TIMESTAMP),
        ]
        if scenario.kind == "timestamp":
            queries.append(self._admin.log_offsets(partitions, _value(scenario)))
        answers = await asyncio.gather(*queries)
        for answer in answers:
            if answer.failures:
                tp, error = sorted(answer.failures.items())[0]
                raise KshareError(f"log offsets of {tp}: {error}")
        start, end = dict(answers[0].offsets), dict(answers[1].offsets)
        at_timestamp = dict(answers[2].offsets) if len(answers) > 2 else None
        return start, end, at_timestamp


_NO_ANSWER: Final = KafkaError.of(-1, "the coordinator did not answer for this partition")
