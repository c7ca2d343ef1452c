"""The share-group domain models: what the admin operations return and the renderers show.

They are plain frozen dataclasses, independent of kio's wire types, so a kio
upgrade does not ripple into the renderers, the dashboard or the tests. Results
are named collections in the franz-go ``kadm`` style (``sorted()``, ``errors()``,
``ok()``): a cluster answers per group and per partition, so one missing group or
one unreachable broker is a fact in the result, never an exception that throws
away what the other groups said.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Generic, Literal, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from kshare_cli.errors import AUTHORIZATION_ERROR_CODES, UsageError
from kshare_cli.wire.errors import KafkaError

if TYPE_CHECKING:
    from kshare_cli.admin.cluster_facts import ClusterFacts
    from kshare_cli.admin.dead_letter_queues import GroupDeadLetterQueue

__all__ = [
    "GROUP_STATES",
    "SHARE_GROUP_STATES",
    "BrokerFailure",
    "Coordinator",
    "EndOffsets",
    "GroupDescription",
    "GroupDescriptions",
    "GroupFailure",
    "GroupListing",
    "GroupOffsets",
    "GroupResults",
    "KafkaError",
    "LagSource",
    "LagTotals",
    "ListedGroup",
    "MemberDescription",
    "PartitionFailure",
    "ShareGroupOffsets",
    "SharePartitionOffset",
    "TopicPartition",
    "assignment_text",
    "in_partition_order",
    "parse_group_state",
    "parse_state_filter",
]

#: Every name of Kafka's ``GroupState`` (its ``toString()``), in Kafka's declaration order.
GROUP_STATES: Final = (
    "Unknown",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
    "NotReady",
)

#: The states a share group can be listed by: ``GroupState.groupStatesForType(SHARE)``.
#: "Unknown" is what an unparseable state becomes, not a state to filter on.
SHARE_GROUP_STATES: Final = ("Stable", "Dead", "Empty")

_STATE_BY_UPPER: Final = {state.upper(): state for state in GROUP_STATES}

#: Where a share-partition's lag came from. ``broker``: DescribeShareGroupOffsets v1's Lag,
#: exact. ``bound``: log end offset minus start offset, computed by kshare because the
#: broker gave none (a v0-only broker, or lag unknown after an offset reset); an upper
#: bound, since records already acknowledged inside the in-flight window are not subtracted.
#: ``state``: computed by kshare with KIP-1226's rule (``state.lag``) from the start offset and
#: delivery-complete count persisted in ``__share_group_state``, because the group coordinator
#: held DescribeShareGroupOffsets (a share coordinator it reads from did not answer): the
#: broker's figure as of the persisted state, not the broker's answer.
LagSource = Literal["broker", "bound", "state"]


def parse_group_state(text: str) -> str:
    """Kafka's ``GroupState.parse``: case-insensitive, anything unrecognised is "Unknown"."""
    return _STATE_BY_UPPER.get(text.strip().upper(), "Unknown")


def parse_state_filter(values: Iterable[str]) -> tuple[str, ...]:
    """States to list, as ``kafka-share-groups.sh --list --state A,B`` accepts them.

    Case-insensitive, comma-separated (several values are merged), blanks ignored;
    anything that is not a share-group state is refused with Kafka's message.
    Canonical spellings are returned, in first-seen order, without repeats.
    """
    given = [part for value in values for part in value.split(",")]
    parsed: list[str] = []
    for part in given:
        if not part.strip():
            continue
        state = parse_group_state(part)
        if state not in SHARE_GROUP_STATES:
            listed = ",".join(value for value in values)
            raise UsageError(
                f"Invalid state list '{listed}'. Valid states are: {', '.join(SHARE_GROUP_STATES)}"
            )
        if state not in parsed:
            parsed.append(state)
    return tuple(parsed)


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """A partition of a topic; orders by topic name, then partition number."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}"


# --------------------------------------------------------------------------- failures


@dataclass(frozen=True, slots=True)
class GroupFailure:
    """A group the cluster could not describe; the other groups' answers still stand."""

    group_id: str
    error: KafkaError

    @property
    def not_found(self) -> bool:
        """GROUP_ID_NOT_FOUND: no share group of that id (see also ``not_share_group``)."""
        return self.error.code == ErrorCode.group_id_not_found

    @property
    def not_authorized(self) -> bool:
        """The cluster's ACLs refused us the group (GROUP_AUTHORIZATION_FAILED, ...)."""
        return int(self.error.code) in AUTHORIZATION_ERROR_CODES

    @property
    def not_share_group(self) -> bool:
        """The id is a group of another type (a consumer group, say), not a missing one.

        Kafka answers both with GROUP_ID_NOT_FOUND; only the coordinator's message
        (``GroupMetadataManager.shareGroup``: "Group X is not a share group.") tells
        them apart. An operator who described the wrong kind of group must not read
        "not found" and go looking for a group that is there.
        """
        return self.not_found and "is not a share group" in (self.error.message or "")

    def __str__(self) -> str:
        if self.not_share_group:
            return f"group '{self.group_id}' is not a share group"
        if self.not_found:
            return f"share group '{self.group_id}': not found"
        return f"share group '{self.group_id}': {self.error}"


@dataclass(frozen=True, slots=True)
class BrokerFailure:
    """A broker that did not answer; anything only it knows is missing from the result."""

    node_id: int
    host: str
    port: int
    error: KafkaError

    def __str__(self) -> str:
        return f"broker {self.node_id} ({self.host}:{self.port}): {self.error}"


@dataclass(frozen=True, slots=True)
class PartitionFailure:
    """A share-partition whose offsets the cluster reported an error for."""

    group_id: str
    topic_partition: TopicPartition
    error: KafkaError
    #: What the error cost when it is not the offsets themselves ("end offset unknown").
    what: str | None = None

    def __str__(self) -> str:
        head = f"share group '{self.group_id}', partition {self.topic_partition}"
        return f"{head}: {self.what}: {self.error}" if self.what else f"{head}: {self.error}"


# --------------------------------------------------------------------------- list


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """One share group as ListGroups names it; ``state`` is a GroupState name."""

    group_id: str
    state: str


@dataclass(frozen=True, slots=True)
class GroupListing:
    """The share groups of a cluster (ListGroups v5, types ``share``), sorted by group id.

    ``failures`` names the brokers that did not answer: groups they coordinate are
    missing, so a listing with failures is incomplete, not empty.
    """

    groups: tuple[ListedGroup, ...]
    states_filter: tuple[str, ...] = ()
    failures: tuple[BrokerFailure, ...] = ()

    def __post_init__(self) -> None:
        unique = {group.group_id: group for group in self.groups}
        object.__setattr__(self, "groups", tuple(unique[key] for key in sorted(unique)))
        object.__setattr__(
            self, "failures", tuple(sorted(self.failures, key=lambda failure: failure.node_id))
        )

    def sorted(self) -> tuple[ListedGroup, ...]:
        return self.groups

    def group_ids(self) -> tuple[str, ...]:
        return tuple(group.group_id for group in self.groups)

    def errors(self) -> tuple[BrokerFailure, ...]:
        return self.failures

    def ok(self) -> bool:
        return not self.failures

    def __iter__(self) -> Iterator[ListedGroup]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)


# --------------------------------------------------------------------------- describe


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The broker that coordinates a group."""

    node_id: int
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def assignment_text(assignment: Mapping[str, tuple[int, ...]]) -> str:
    """Kafka's ASSIGNMENT column: ``topic:0,1;other:2``, topics and partitions sorted."""
    return ";".join(
        f"{topic}:{','.join(str(p) for p in sorted(partitions))}"
        for topic, partitions in sorted(assignment.items())
    )


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member of a share group: who it is and which share-partitions it was assigned.

    ``assignment`` maps each topic to its assigned partitions (sorted); ``host`` is as
    the broker reports it (Kafka prints ``/127.0.0.1``).
    """

    member_id: str
    client_id: str
    host: str
    rack: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...] = ()
    assignment: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Kafka builds the assignment from a set of topic-partitions: a topic with no
        # partitions is not in it.
        normalised = {
            topic: tuple(sorted(set(partitions)))
            for topic, partitions in sorted(self.assignment.items())
            if partitions
        }
        object.__setattr__(self, "assignment", normalised)
        object.__setattr__(self, "subscribed_topics", tuple(sorted(set(self.subscribed_topics))))

    @property
    def partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(
            TopicPartition(topic, partition)
            for topic, partitions in self.assignment.items()
            for partition in partitions
        )

    @property
    def partition_count(self) -> int:
        return sum(len(partitions) for partitions in self.assignment.values())

    @property
    def assignment_text(self) -> str:
        return assignment_text(self.assignment)


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A share group as ShareGroupDescribe reports it, members sorted by member id.

    ``authorized_operations`` is None unless they were asked for (and the broker
    answered them): Kafka's ACL operation names, e.g. ``DESCRIBE``.
    """

    group_id: str
    state: str
    coordinator: Coordinator | None
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[MemberDescription, ...] = ()
    authorized_operations: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "members", tuple(sorted(self.members, key=lambda member: member.member_id))
        )

    @property
    def member_count(self) -> int:
        return len(self.members)


# --------------------------------------------------------------------------- offsets


@dataclass(frozen=True, slots=True)
class SharePartitionOffset:
    """Where a share group stands on one partition.

    ``start_offset`` is the share-partition start offset the share coordinator
    persisted (None when the share-partition is not initialised: Kafka's ``-``).
    ``lag`` is None when unknown; ``lag_source`` says whether it is the broker's exact
    figure or kshare's upper bound (see ``LagSource``). ``end_offset`` is the log end
    offset (ListOffsets latest), None when not asked for or not answered;
    ``end_offset_error`` is why it was not answered (the leader down or silent,
    named by id and address), which a command reports as a partial answer.
    """

    topic: str
    partition: int
    start_offset: int | None
    leader_epoch: int | None = None
    lag: int | None = None
    lag_source: LagSource | None = None
    end_offset: int | None = None
    error: KafkaError | None = None
    end_offset_error: KafkaError | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def broker_lag(self) -> int | None:
        """The lag as the broker reported it, the one Kafka's tool prints."""
        return self.lag if self.lag_source == "broker" else None


class Lagged(Protocol):
    """A share-partition row with a lag: describe's offsets and inflight's rows alike."""

    @property
    def lag(self) -> int | None: ...

    @property
    def lag_source(self) -> LagSource | None: ...


def summed_lag(partitions: Sequence[Lagged]) -> int | None:
    """The sum of the known lags; None only when no lag is known (or there is no share-partition).

    A share-partition whose lag is unknown (no start offset, an error, no log end
    offset to bound it) leaves the others' backlog standing: an operator still needs
    to see it, marked incomplete (``summed_lag_complete``), rather than nothing.
    """
    known = [each.lag for each in partitions if each.lag is not None]
    return sum(known) if known else None


def summed_lag_source(partitions: Sequence[Lagged]) -> LagSource | None:
    """``bound`` as soon as one summed part is kshare's upper bound: then so is the sum;
    else ``state`` as soon as one is kshare's figure from the state topic."""
    if summed_lag(partitions) is None:
        return None
    sources = {each.lag_source for each in partitions if each.lag is not None}
    if "bound" in sources:
        return "bound"
    return "state" if "state" in sources else "broker"


def summed_lag_complete(partitions: Sequence[Lagged]) -> bool | None:
    """Whether every share-partition's lag is in the sum; None when there is no sum.

    False means the sum leaves out share-partitions whose lag is unknown: with exact
    parts it is a lower bound of the group's lag.
    """
    if summed_lag(partitions) is None:
        return None
    return all(each.lag is not None for each in partitions)


class LagTotals:
    """A group's total lag over its ``partitions``, as describe, inflight and the dashboard show it.

    A base for the frozen models that hold a group's share-partition rows, so the
    total, its source and whether it is complete are worked out in one place.
    """

    __slots__ = ()

    partitions: tuple[Lagged, ...]

    @property
    def total_lag(self) -> int | None:
        """The sum of the known lags; None when none is known (see ``summed_lag``)."""
        return summed_lag(self.partitions)

    @property
    def total_lag_source(self) -> LagSource | None:
        """``bound`` as soon as one share-partition's lag is a bound: then so is the sum."""
        return summed_lag_source(self.partitions)

    @property
    def total_lag_complete(self) -> bool | None:
        """False when some share-partition's lag is unknown and left out of ``total_lag``."""
        return summed_lag_complete(self.partitions)


class Placed(Protocol):
    """A row of one partition of one topic."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


PlacedRow = TypeVar("PlacedRow", bound=Placed)


def in_partition_order(rows: Iterable[PlacedRow]) -> tuple[PlacedRow, ...]:
    """``rows`` by topic, then partition: the order every model keeps its share-partitions in."""
    return tuple(sorted(rows, key=lambda row: (row.topic, row.partition)))


@dataclass(frozen=True, slots=True)
class GroupOffsets(LagTotals):
    """A share group's share-partitions, sorted by topic and partition.

    An empty ``partitions`` is Kafka's "has no offset information": the group has
    no initialised share-partition (never consumed, or its offsets were deleted).
    """

    group_id: str
    partitions: tuple[SharePartitionOffset, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", in_partition_order(self.partitions))

    def errors(self) -> tuple[PartitionFailure, ...]:
        return tuple(
            PartitionFailure(self.group_id, offset.topic_partition, offset.error)
            for offset in self.partitions
            if offset.error is not None
        )

    def end_offset_errors(self) -> tuple[PartitionFailure, ...]:
        """Share-partitions whose log end offset (hence END-OFFSET, and a bound lag) is unknown.

        Apart from ``errors()``: the group's offsets stand, only the leader's figure is missing.
        """
        return tuple(
            PartitionFailure(
                self.group_id, offset.topic_partition, offset.end_offset_error, "end offset unknown"
            )
            for offset in self.partitions
            if offset.end_offset_error is not None
        )


class _PerGroup(Protocol):
    @property
    def group_id(self) -> str: ...


R = TypeVar("R", bound=_PerGroup)


@dataclass(frozen=True, slots=True)
class GroupResults(Generic[R]):
    """Per-group results, each a value or a ``GroupFailure``, sorted by group id.

    ``broker_failures`` names the brokers that did not answer the listing of an
    ``--all-groups`` run: the groups they coordinate are missing from ``results``,
    so the answer is incomplete even when every group in it succeeded.
    """

    results: tuple[R | GroupFailure, ...]
    broker_failures: tuple[BrokerFailure, ...] = ()

    def __post_init__(self) -> None:
        unique = {result.group_id: result for result in self.results}
        object.__setattr__(self, "results", tuple(unique[key] for key in sorted(unique)))
        object.__setattr__(
            self,
            "broker_failures",
            tuple(sorted(self.broker_failures, key=lambda failure: failure.node_id)),
        )

    def sorted(self) -> tuple[R | GroupFailure, ...]:
        return self.results

    def group_ids(self) -> tuple[str, ...]:
        return tuple(result.group_id for result in self.results)

    def succeeded(self) -> tuple[R, ...]:
        return tuple(result for result in self.results if not isinstance(result, GroupFailure))

    def errors(self) -> tuple[GroupFailure, ...]:
        return tuple(result for result in self.results if isinstance(result, GroupFailure))

    def ok(self) -> bool:
        return not self.errors()

    def get(self, group_id: str) -> R | GroupFailure | None:
        for result in self.results:
            if result.group_id == group_id:
                return result
        return None

    def __iter__(self) -> Iterator[R | GroupFailure]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


@dataclass(frozen=True, slots=True)
class GroupDescriptions(GroupResults[GroupDescription]):
    """The result of describing share groups: a description or a failure per group.

    ``cluster`` is what the cluster's features say (the Kafka line,
    ``share.version``), when the describe looked them up (``--state``), and
    ``dead_letter_queues`` each described group's dead-letter queue (``--state``).
    """

    cluster: ClusterFacts | None = None
    dead_letter_queues: tuple[GroupDeadLetterQueue, ...] | None = None

    def dead_letter_queue(self, group_id: str) -> GroupDeadLetterQueue | None:
        for queue in self.dead_letter_queues or ():
            if queue.group_id == group_id:
                return queue
        return None


@dataclass(frozen=True, slots=True)
class ShareGroupOffsets(GroupResults[GroupOffsets]):
    """The result of listing share-partition offsets: offsets or a failure per group."""

    def partition_errors(self) -> tuple[PartitionFailure, ...]:
        return tuple(failure for group in self.succeeded() for failure in group.errors())

    def end_offset_errors(self) -> tuple[PartitionFailure, ...]:
        return tuple(failure for group in self.succeeded() for failure in group.end_offset_errors())


@dataclass(frozen=True, slots=True)
class EndOffsets:
    """Log end offsets (ListOffsets latest) by partition, and the partitions that failed."""

    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    failures: Mapping[TopicPartition, KafkaError] = field(default_factory=dict)

    def get(self, topic_partition: TopicPartition) -> int | None:
        return self.offsets.get(topic_partition)

    def errors(self) -> Mapping[TopicPartition, KafkaError]:
        return self.failures

    def ok(self) -> bool:
        return not self.failures
