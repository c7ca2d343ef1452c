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
- ``--all-topics`` means the partitions the group has start offsets for.
- A group is reset only when it has no members (Empty or Dead).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from kshare_cli.admin.models import (
    GroupDescription,
    GroupFailure,
    MemberDescription,
    PartitionFailure,
    TopicPartition,
)
from kshare_cli.admin.share_groups import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    group_offsets_from,
)
from kshare_cli.errors import KshareError, NotFound, Refused, UsageError
from kshare_cli.wire.errors import KafkaError

if TYPE_CHECKING:
    from kshare_cli.admin.share_groups import ShareGroupAdmin

__all__ = [
    "ALTER_SHARE_GROUP_OFFSETS",
    "Clamp",
    "PlannedOffset",
    "RefusalReason",
    "ResetPlan",
    "Scenario",
    "Selection",
    "ShareGroupResetter",
    "alter_results_from",
    "compute_plan",
]

ALTER_SHARE_GROUP_OFFSETS: Final = 91
NON_EMPTY_GROUP: Final = 68
GROUP_ID_NOT_FOUND: Final = 69

ScenarioKind = Literal["earliest", "latest", "timestamp", "offset", "shift", "current", "file"]
Clamp = Literal["log-start", "log-end"]
#: Why a reset is refused: ``not_empty``, the group has members (Kafka resets only an
#: Empty or Dead group, and so does the broker).
RefusalReason = Literal["not_empty"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """Where to move the start offsets.

    ``value`` is the epoch-millisecond timestamp (``timestamp``), the offset
    (``offset``) or the shift (``shift``); ``offsets`` the plan file's offsets
    (``file``). ``label`` is how the operator asked, for the output.
    """

    kind: ScenarioKind
    value: int | None = None
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which partitions: whole ``topics``, named ``partitions``, or ``all_topics``
    (the partitions the group has start offsets for). A ``file`` scenario selects
    its own partitions."""

    topics: tuple[str, ...] = ()
    partitions: tuple[TopicPartition, ...] = ()
    all_topics: bool = False


@dataclass(frozen=True, slots=True)
class PlannedOffset:
    """One share-partition's move: from ``current_offset`` (None: the group has no
    start offset there) to ``new_offset``, which is ``requested_offset`` clamped to
    [``log_start_offset``, ``log_end_offset``]. After ``execute``, ``applied`` or
    ``error`` says what the broker did."""

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

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def skipped(self) -> int | None:
        """Records between the current and the new start offset that will never be
        delivered (moving forward); None when the group had no start offset."""
        if self.current_offset is None:
            return None
        return max(0, self.new_offset - self.current_offset)

    @property
    def redelivered(self) -> int | None:
        """Records before the current start offset that will be delivered again
        (moving back); None when the group had no start offset."""
        if self.current_offset is None:
            return None
        return max(0, self.current_offset - self.new_offset)


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

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "partitions",
            tuple(sorted(self.partitions, key=lambda offset: (offset.topic, offset.partition))),
        )

    @property
    def skipped(self) -> int:
        return sum(offset.skipped or 0 for offset in self.partitions)

    @property
    def redelivered(self) -> int:
        return sum(offset.redelivered or 0 for offset in self.partitions)

    def previous_offsets(self) -> dict[TopicPartition, int]:
        """The start offsets before the reset: what a rollback plan restores."""
        return {
            offset.topic_partition: offset.current_offset
            for offset in self.partitions
            if offset.current_offset is not None
        }

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
        if self.group_error is not None and self.group_error.code == NON_EMPTY_GROUP:
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
) -> tuple[tuple[PlannedOffset, ...], tuple[str, ...]]:
    """The new start offset of every partition, and the warnings, from known offsets.

    ``current`` holds the group's start offsets (partitions without one are absent);
    ``at_timestamp`` the ListOffsets answers for a ``timestamp`` scenario (-1: no
    record at or after it). Raises UsageError for a shift where the group has no
    start offset, as Kafka's tool refuses it.
    """
    planned: list[PlannedOffset] = []
    warnings: list[str] = []
    for tp in sorted(set(partitions)):
        start, end = log_start[tp], log_end[tp]
        now = current.get(tp)
        clampable = True
        if scenario.kind == "earliest":
            requested = start
        elif scenario.kind == "latest":
            requested = end
        elif scenario.kind == "timestamp":
            found = -1 if at_timestamp is None else at_timestamp.get(tp, -1)
            if found < 0:
                warnings.append(
                    f"{tp}: no record at or after {scenario.label or 'the time'}; "
                    f"using the log end offset {end}"
                )
                requested = end
            else:
                requested = found
        elif scenario.kind == "offset":
            requested = _value(scenario)
        elif scenario.kind == "shift":
            if now is None:
                raise UsageError(
                    f"cannot shift {tp}: the group has no start offset there "
                    "(use --to-earliest, --to-latest or --to-offset)"
                )
            requested = now + _value(scenario)
        elif scenario.kind == "current":
            requested = end if now is None else now
            clampable = now is None
        else:  # file
            requested = scenario.offsets[tp]
        new = requested
        clamped: Clamp | None = None
        if clampable and requested > end:
            new, clamped = end, "log-end"
            warnings.append(
                f"{tp}: new offset {requested} is above the log end offset; using {end}"
            )
        elif clampable and requested < start:
            new, clamped = start, "log-start"
            warnings.append(
                f"{tp}: new offset {requested} is below the log start offset; using {start}"
            )
        planned.append(
            PlannedOffset(tp.topic, tp.partition, now, requested, new, start, end, clamped)
        )
    return tuple(planned), tuple(warnings)


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
    """Plans and applies start-offset resets over a ``ShareGroupAdmin``."""

    def __init__(self, admin: ShareGroupAdmin) -> None:
        self._admin = admin

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
        current = await self._start_offsets(group_id) if description is not None else {}
        if scenario.kind == "file":
            wanted: list[TopicPartition] = sorted(scenario.offsets)
        elif selection.all_topics:
            wanted = sorted(current)
            if not wanted:
                raise NotFound(
                    f"share group '{group_id}' has no start offsets to reset; "
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
        )
        return ResetPlan(
            group_id,
            scenario.label or scenario.kind,
            partitions,
            None if description is None else description.state,
            () if description is None else description.members,
            warnings,
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
            if described.not_found and allow_new_group:
                return None
            if described.not_found:
                raise NotFound(
                    f"share group '{group_id}' not found "
                    "(--allow-new-group creates it with these start offsets)"
                )
            raise Refused(str(described))
        if described is None:
            raise KshareError(f"share group '{group_id}': the coordinator did not answer")
        return described

    async def _start_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        answers = await self._admin.client.fan_out_to_coordinators(
            DESCRIBE_SHARE_GROUP_OFFSETS,
            [group_id],
            lambda version, groups: {
                "groups": [{"group_id": group, "topics": None} for group in groups]
            },
            lambda response: {
                group.group_id: (int(group.error_code), group) for group in response.groups
            },
        )
        answer = answers[group_id]
        if isinstance(answer, KafkaError):
            raise Refused(f"share group '{group_id}': start offsets: {answer}")
        offsets = group_offsets_from(answer)
        failures = offsets.errors()
        if failures:
            raise Refused(str(failures[0]))
        return {
            offset.topic_partition: offset.start_offset
            for offset in offsets.partitions
            if offset.start_offset is not None
        }

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
