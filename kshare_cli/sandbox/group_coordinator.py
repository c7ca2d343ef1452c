"""Share-group coordinator of the sandbox broker: membership, epochs and assignment.

This is the part of Kafka's ``GroupMetadataManager`` that serves
ShareGroupHeartbeat (api 76), ShareGroupDescribe (77), ListGroups and
DeleteGroups for share groups, reduced to pure state transitions: no I/O, no
timers, the clock passed in as ``now_ms``. The broker around it owns sockets,
topic ids and the share-partitions; this module tells it who is a member, which
partitions each member is assigned, which share-partitions must be initialised,
and which members went away (so their acquired records can be released).

The rules follow Apache Kafka 4.2.0:

* The client generates the member id (a UUID string) and sends it from its first
  heartbeat; an empty id is INVALID_REQUEST. Epoch 0 joins (and rejoins), -1
  leaves, anything else is a heartbeat checked against the member's epoch:
  greater, or smaller and not the previous epoch, is FENCED_MEMBER_EPOCH (110).
* The group epoch is bumped when a member joins, leaves, is fenced or changes
  its subscription, when the subscribed topics' metadata (partition counts)
  changes, and when newly initialised share-partitions are waiting to be
  assigned. A bump makes the next heartbeat recompute the target assignment
  with the ``simple`` assignor; its epoch becomes the assignment epoch.
* Share groups have no revocation step: a member's epoch jumps to the target
  assignment epoch on its own next heartbeat, taking the new target at once.
* A share-partition is only assignable once initialised in the share-group
  state. On the join the coordinator asks for the initialisation (state epoch =
  group epoch, start offset -1) and answers with an empty assignment; the
  heartbeat after the initialisation completed bumps the epoch and assigns.
  Exactly what the golden recording shows (epoch 1 with ``[]``, then epoch 2
  with the partitions).
* The simple assignor spreads partitions evenly and lets a partition be shared
  by several members when members outnumber partitions (``desiredSharing =
  ceil(members / partitions)``); balance first, then stickiness.
* Kafka 4.3 (KAFKA-20268, KAFKA-20291, both in 4.3.1) starts a group at epoch 1
  with an empty target assignment of epoch 1, so the first computed assignment is
  epoch 2 and a new group's share-partitions are initialised with state epoch 2
  (the 4.4 recording's); and it batches assignments: a group epoch moves at once,
  but the target assignment is computed in a heartbeat only when
  ``share.assignment.interval.ms`` (1 s) has passed since the last one was
  (``GroupMetadataManager.canComputeNextTargetAssignment``; never computed counts
  as long ago, 0 turns it off). Meanwhile members reconcile to the last target,
  a new member to its empty one, and newly initialised share-partitions bump
  the epoch only when no assignment is pending. No timer: the first heartbeat
  after the interval computes it (librdkafka's comes a heartbeat interval later,
  Java's too once its first acknowledgement went early).
* A member that does not heartbeat within ``share.session.timeout.ms`` is fenced
  by :meth:`ShareGroupCoordinator.expire_members`. States are ``Empty`` and
  ``Stable`` (``Dead`` only while being deleted, never observable here).

Where Kafka iterates Java hash maps (member order inside the assignor, member
order in describe, list order), this module uses sorted or insertion order, so
which of two equivalent members gets which partition may differ from a real
broker; the counts and sharing do not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kio.schema.errors import ErrorCode

from kshare_cli.sandbox.group_configs import GroupConfigStore

LEAVE_GROUP_MEMBER_EPOCH = -1
ASSIGNOR_NAME = "simple"

#: ``group.share.initialize.retry.interval.ms``: an initialisation not confirmed
#: within this long is asked for again.
DEFAULT_INITIALIZE_RETRY_INTERVAL_MS = 30000

GroupState = Literal["Empty", "Stable"]
RemovalReason = Literal["left", "session expired"]

_Assignment = dict[str, set[int]]


@dataclass(frozen=True, slots=True)
class ShareInitialization:
    """Share-partitions the broker must initialise (InitializeShareGroupState).

    Every partition starts with ``start_offset`` -1 (meaning: apply
    ``share.auto.offset.reset``) and state epoch ``state_epoch``, the group epoch
    at the time, as Kafka writes it.
    """

    group_id: str
    state_epoch: int
    partitions: dict[str, list[int]]
    start_offset: int = -1


@dataclass(frozen=True, slots=True)
class RemovedMember:
    """A member that left or was fenced; the broker releases what it had acquired."""

    group_id: str
    member_id: str
    member_epoch: int
    assignment: dict[str, list[int]]
    reason: RemovalReason


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """A ShareGroupHeartbeat response, plus what the broker has to do next.

    ``assignment`` is None when Kafka omits it (an unchanged assignment on a
    partial heartbeat); an empty dict is an explicit empty assignment.
    ``initialization`` and ``removed_member`` are side effects for the broker,
    not response fields.
    """

    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: dict[str, list[int]] | None
    initialization: ShareInitialization | None = None
    removed_member: RemovedMember | None = None


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member as ShareGroupDescribe reports it."""

    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: dict[str, list[int]]


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """One ShareGroupDescribe result; an unknown group carries error 69 and empty fields."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[MemberDescription, ...]
    error_code: int = ErrorCode.none
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """One ListGroups entry for a share group."""

    group_id: str
    state: str
    protocol_type: str = "share"
    group_type: str = "share"


@dataclass(slots=True)
class _Member:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: frozenset[str] = frozenset()
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: _Assignment = field(default_factory=dict)
    session_deadline_ms: int = 0


@dataclass(slots=True)
class _Group:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    #: When the target assignment was last computed (ms; 0: never), for 4.3's interval.
    assignment_timestamp_ms: int = 0
    metadata_hash: tuple[tuple[str, int], ...] = ()
    members: dict[str, _Member] = field(default_factory=dict)
    target: dict[str, _Assignment] = field(default_factory=dict)
    initialized: dict[str, set[int]] = field(default_factory=dict)
    initializing: dict[str, tuple[set[int], int]] = field(default_factory=dict)

    @property
    def state(self) -> GroupState:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        topics: set[str] = set()
        for member in self.members.values():
            topics |= member.subscribed
        return topics


def _freeze(assignment: Mapping[str, Iterable[int]]) -> dict[str, list[int]]:
    return {topic: sorted(parts) for topic, parts in sorted(assignment.items()) if parts}


def _copy(assignment: Mapping[str, Iterable[int]]) -> _Assignment:
    return {topic: set(parts) for topic, parts in assignment.items()}


class ShareGroupCoordinator:
    """Share groups of one sandbox broker (the broker is the coordinator of all of them).

    ``configs`` supplies the per-group session timeout and heartbeat interval and
    the broker's ``group.share.max.size``. With ``auto_initialize`` the
    share-partitions a heartbeat asks to initialise count as initialised as soon
    as the heartbeat returns (the broker writes their state synchronously);
    without it the broker must call :meth:`mark_initialized` when done, and
    until then they stay unassigned, as in Kafka.
    """

    def __init__(
        self,
        configs: GroupConfigStore | None = None,
        *,
        auto_initialize: bool = True,
        initialize_retry_interval_ms: int = DEFAULT_INITIALIZE_RETRY_INTERVAL_MS,
        on_member_removed: Callable[[RemovedMember], None] | None = None,
        initial_group_epoch: int = 0,
        assignment_batching: bool = False,
    ) -> None:
        self.configs = configs if configs is not None else GroupConfigStore()
        self.auto_initialize = auto_initialize
        #: A new group's epoch and target assignment epoch: 0 on 4.2, 1 from 4.3
        #: (``KafkaProfile.initial_group_epoch``).
        self.initial_group_epoch = initial_group_epoch
        #: 4.3's assignment batching (``KafkaProfile.assignment_batching``): the target is
        #: computed at most once per ``share.assignment.interval.ms``.
        self.assignment_batching = assignment_batching
        self.initialize_retry_interval_ms = initialize_retry_interval_ms
        self.on_member_removed = on_member_removed
        self._groups: dict[str, _Group] = {}
        self._topic_partitions: dict[str, int] = {}
        #: Classic groups by id, with their committed offsets: made by OffsetCommit (a
        #: consumer committing without joining, generation -1), the one way the sandbox
        #: hosts a group of another type. Kafka keeps every type in one id space.
        self.classic_offsets: dict[str, dict[tuple[str, int], int]] = {}

    # -- ShareGroupHeartbeat

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        client_id: str,
        client_host: str,
        subscribed_topic_names: Sequence[str] | None,
        now_ms: int,
        topic_partitions: Mapping[str, int],
    ) -> HeartbeatResult:
        """Handle one ShareGroupHeartbeat request.

        ``topic_partitions`` is the broker's current metadata (topic name to
        partition count); a change in a subscribed topic's count bumps the group
        epoch. ``client_host`` is reported verbatim by describe (Kafka shows
        ``/127.0.0.1``).
        """
        self._topic_partitions = dict(topic_partitions)
        invalid = self._request_error(
            group_id, member_id, member_epoch, rack_id, subscribed_topic_names
        )
        if invalid is not None:
            return _error(ErrorCode.invalid_request, invalid)
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(group_id, member_id)

        joining = member_epoch == 0
        admitted = self._admit(group_id, member_id, member_epoch)
        if isinstance(admitted, HeartbeatResult):
            return admitted
        group, member = admitted
        self._groups.setdefault(group_id, group)
        # Kafka adds a joining member (with no subscription yet) before deciding.
        group.members[member_id] = member
        old_assigned = _copy(member.assigned)
        bump = self._update_member(
            group, member, rack_id, client_id, client_host, subscribed_topic_names
        )
        subscribed_topics = group.subscribed_topics()
        self._reconcile(group, member, subscribed_topics, bump, now_ms)
        member.session_deadline_ms = now_ms + self.configs.session_timeout_ms(group_id)

        send_assignment = (
            joining or subscribed_topic_names is not None or member.assigned != old_assigned
        )
        initialization = self._initialization_needed(group, subscribed_topics, now_ms)
        if initialization is not None and self.auto_initialize:
            self.mark_initialized(group_id, initialization.partitions)
        return HeartbeatResult(
            error_code=ErrorCode.none,
            error_message=None,
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.configs.heartbeat_interval_ms(group_id),
            assignment=_freeze(member.assigned) if send_assignment else None,
            initialization=initialization,
        )

    def _admit(
        self, group_id: str, member_id: str, member_epoch: int
    ) -> tuple[_Group, _Member] | HeartbeatResult:
        """The group and member a heartbeat is for (new ones when joining), or the error
        Kafka answers: an unknown group or member that is not joining, a full group, a
        fenced epoch. Nothing is recorded yet."""
        joining = member_epoch == 0
        group = self._groups.get(group_id)
        if group is None:
            if not joining:
                return _error(ErrorCode.group_id_not_found, f"Share group {group_id} not found.")
            group = self._new_group(group_id)
        max_size = self.configs.broker.share_max_size
        if len(group.members) >= max_size and member_id not in group.members:
            return _error(
                ErrorCode.group_max_size_reached,
                f"The share group has reached its maximum capacity of {max_size} members.",
            )
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                return _error(
                    ErrorCode.unknown_member_id,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            return group, _Member(member_id)
        fenced = _epoch_error(member, member_epoch)
        if fenced is not None:
            return _error(ErrorCode.fenced_member_epoch, fenced)
        return group, member

    def _update_member(
        self,
        group: _Group,
        member: _Member,
        rack_id: str | None,
        client_id: str,
        client_host: str,
        subscribed_topic_names: Sequence[str] | None,
    ) -> bool:
        """Record what the heartbeat says of its member; whether the group epoch must move
        (a new subscription, or an initialized assignment still pending)."""
        new_subscribed = (
            frozenset(subscribed_topic_names)
            if subscribed_topic_names is not None
            else member.subscribed
        )
        subscription_changed = new_subscribed != member.subscribed
        # 4.3 asks for newly initialised share-partitions only when no assignment is
        # pending: the pending one will include them.
        settled = not self.assignment_batching or group.assignment_epoch >= group.group_epoch
        bump = subscription_changed or (settled and self._initialized_assignment_pending(group))
        member.rack_id = rack_id if rack_id is not None else member.rack_id
        member.client_id = client_id
        member.client_host = client_host
        member.subscribed = new_subscribed
        return bump

    def _reconcile(
        self,
        group: _Group,
        member: _Member,
        subscribed_topics: Iterable[str],
        bump: bool,
        now_ms: int,
    ) -> None:
        """Move the group epoch when the subscription or the topics' metadata changed, the
        target assignment with it (once the assignment interval allows), and bring the
        member to the target's epoch."""
        metadata_hash = self._metadata_hash(subscribed_topics)
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash

        if group.group_epoch > group.assignment_epoch and self._may_assign(group, now_ms):
            group.target = self._compute_target(group)
            group.assignment_epoch = group.group_epoch
            group.assignment_timestamp_ms = now_ms
        target = group.target.get(member.member_id, {})

        if member.member_epoch != group.assignment_epoch:
            member.assigned = self._filter_subscribed(target, member.subscribed)
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        elif bump:
            member.assigned = self._filter_subscribed(target, member.subscribed)

    def _may_assign(self, group: _Group, now_ms: int) -> bool:
        """``canComputeNextTargetAssignment``: never computed, no interval, or the interval
        since the last computation has passed."""
        if not self.assignment_batching or group.assignment_timestamp_ms == 0:
            return True
        interval_ms = self.configs.assignment_interval_ms(group.group_id)
        return interval_ms == 0 or now_ms >= group.assignment_timestamp_ms + interval_ms

    def _new_group(self, group_id: str) -> _Group:
        epoch = self.initial_group_epoch
        return _Group(group_id, group_epoch=epoch, assignment_epoch=epoch)

    # -- sessions

    def expire_members(self, now_ms: int) -> list[RemovedMember]:
        """Fence every member whose session deadline has passed; what the timer does."""
        # Runs every timer tick (20 a second) over every group: the expired members are
        # found without copying each group's members (10,000 groups, nearly all empty,
        # cost the sandbox a tenth of its CPU), then fenced.
        expired = [
            (group, member)
            for group in self._groups.values()
            if group.members
            for member in group.members.values()
            if member.session_deadline_ms <= now_ms
        ]
        return [self._fence(group, member, "session expired") for group, member in expired]

    def next_session_deadline_ms(self) -> int | None:
        """The earliest session deadline, so the broker knows when to call expire_members."""
        deadlines = [
            member.session_deadline_ms
            for group in self._groups.values()
            for member in group.members.values()
        ]
        return min(deadlines) if deadlines else None

    # -- share-partition initialisation

    def mark_initialized(self, group_id: str, partitions: Mapping[str, Iterable[int]]) -> bool:
        """Record that share-partitions of the group now have state (initialisation done).

        Also used by AlterShareGroupOffsets, which initialises partitions with a
        chosen start offset. Returns False when the group does not exist.
        """
        group = self._groups.get(group_id)
        if group is None:
            return False
        for topic, parts in partitions.items():
            done = set(parts)
            group.initialized.setdefault(topic, set()).update(done)
            pending = group.initializing.get(topic)
            if pending is not None:
                remaining = pending[0] - done
                if remaining:
                    group.initializing[topic] = (remaining, pending[1])
                else:
                    del group.initializing[topic]
        return True

    def mark_uninitialized(self, group_id: str, topics: Iterable[str]) -> bool:
        """Forget the state of whole topics (DeleteShareGroupOffsets on an empty group)."""
        group = self._groups.get(group_id)
        if group is None:
            return False
        for topic in topics:
            group.initialized.pop(topic, None)
            group.initializing.pop(topic, None)
        return True

    def initialized_partitions(self, group_id: str) -> dict[str, list[int]]:
        """Share-partitions with state: what DeleteGroups deletes and describe-offsets lists."""
        group = self._groups.get(group_id)
        if group is None:
            return {}
        return _freeze(group.initialized)

    def ensure_group(self, group_id: str) -> None:
        """Create an empty share group if absent, as AlterShareGroupOffsets does in Kafka."""
        if group_id not in self._groups:
            self._groups[group_id] = self._new_group(group_id)

    # -- admin views

    def commit_classic(self, group_id: str, offsets: Mapping[tuple[str, int], int]) -> int:
        """A simple consumer's OffsetCommit (generation -1): 0, or GROUP_ID_NOT_FOUND when
        ``group_id`` is a share group (Kafka: "Group X is not a consumer group")."""
        if group_id in self._groups:
            return ErrorCode.group_id_not_found
        self.classic_offsets.setdefault(group_id, {}).update(offsets)
        return ErrorCode.none

    def describe(self, group_id: str) -> GroupDescription:
        """ShareGroupDescribe for one group.

        A group of another type answers as Kafka 4.2's ``GroupMetadataManager.shareGroup``
        does: GROUP_ID_NOT_FOUND with "Group X is not a share group.".
        """
        group = self._groups.get(group_id)
        if group is None:
            other_type = group_id in self.classic_offsets
            return GroupDescription(
                group_id=group_id,
                state="",
                group_epoch=0,
                assignment_epoch=0,
                assignor_name="",
                members=(),
                error_code=ErrorCode.group_id_not_found,
                error_message=(
                    f"Group {group_id} is not a share group."
                    if other_type
                    else f"Group {group_id} not found."
                ),
            )
        members = tuple(
            MemberDescription(
                member_id=member.member_id,
                rack_id=member.rack_id,
                member_epoch=member.member_epoch,
                client_id=member.client_id,
                client_host=member.client_host,
                subscribed_topic_names=tuple(sorted(member.subscribed)),
                assignment=_freeze(member.assigned),
            )
            for member in group.members.values()
        )
        return GroupDescription(
            group_id=group_id,
            state=group.state,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=ASSIGNOR_NAME,
            members=members,
        )

    def list_groups(self, states_filter: Iterable[str] = ()) -> list[ListedGroup]:
        """ListGroups for share groups; the state filter is case-insensitive as in Kafka."""
        wanted = {state.lower() for state in states_filter}
        return [
            ListedGroup(group.group_id, group.state)
            for group in self._groups.values()
            if not wanted or group.state.lower() in wanted
        ]

    def list_classic_groups(self, states_filter: Iterable[str] = ()) -> list[ListedGroup]:
        """ListGroups for the classic groups: Empty (nobody joins them here), protocol
        type "" as Kafka lists a group that only committed offsets."""
        wanted = {state.lower() for state in states_filter}
        if wanted and "empty" not in wanted:
            return []
        return [
            ListedGroup(group_id, "Empty", protocol_type="", group_type="classic")
            for group_id in self.classic_offsets
        ]

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups for one group: 0, GROUP_ID_NOT_FOUND (69) or NON_EMPTY_GROUP (68)."""
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found
        if group.members:
            return ErrorCode.non_empty_group
        del self._groups[group_id]
        return ErrorCode.none

    # -- internals

    @staticmethod
    def _request_error(
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: Sequence[str] | None,
    ) -> str | None:
        """``throwIfShareGroupHeartbeatRequestIsInvalid``, message for message."""
        if member_id == "":
            return "MemberId can't be empty."
        if group_id == "":
            return "GroupId can't be empty."
        if rack_id == "":
            return "RackId can't be empty."
        if member_epoch == 0:
            if not subscribed_topic_names:
                return "SubscribedTopicNames must be set in first request."
        elif member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            return "MemberEpoch is invalid."
        return None

    def _leave(self, group_id: str, member_id: str) -> HeartbeatResult:
        group = self._groups.get(group_id)
        if group is None:
            return _error(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        member = group.members.get(member_id)
        if member is None:
            return _error(
                ErrorCode.unknown_member_id,
                f"Member {member_id} is not a member of group {group_id}.",
            )
        removed = self._fence(group, member, "left")
        return HeartbeatResult(
            error_code=ErrorCode.none,
            error_message=None,
            member_id=member_id,
            member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
            heartbeat_interval_ms=0,
            assignment=None,
            removed_member=removed,
        )

    def _fence(self, group: _Group, member: _Member, reason: RemovalReason) -> RemovedMember:
        """Remove a member and bump the epoch; the others get the new target later."""
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        group.metadata_hash = self._metadata_hash(group.subscribed_topics())
        group.group_epoch += 1
        removed = RemovedMember(
            group_id=group.group_id,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            assignment=_freeze(member.assigned),
            reason=reason,
        )
        if self.on_member_removed is not None:
            self.on_member_removed(removed)
        return removed

    def _metadata_hash(self, topics: Iterable[str]) -> tuple[tuple[str, int], ...]:
        return tuple(
            (topic, self._topic_partitions[topic])
            for topic in sorted(topics)
            if topic in self._topic_partitions
        )

    def _assignable(self, group: _Group, topic: str) -> list[int]:
        count = self._topic_partitions.get(topic, 0)
        return sorted(p for p in group.initialized.get(topic, ()) if p < count)

    def _filter_subscribed(self, target: _Assignment, subscribed: frozenset[str]) -> _Assignment:
        return {
            topic: set(parts)
            for topic, parts in target.items()
            if topic in subscribed and topic in self._topic_partitions
        }

    def _initialized_assignment_pending(self, group: _Group) -> bool:
        """Newly initialised share-partitions not yet in the target: time to reassign."""
        if not group.members or not group.initialized:
            return False
        subscribed = group.subscribed_topics()
        if not subscribed:
            return False
        assigned: dict[str, set[int]] = {}
        for assignment in group.target.values():
            for topic, parts in assignment.items():
                assigned.setdefault(topic, set()).update(parts)
        return any(
            topic in subscribed and assigned.get(topic) != parts
            for topic, parts in group.initialized.items()
        )

    def _initialization_needed(
        self, group: _Group, subscribed_topics: set[str], now_ms: int
    ) -> ShareInitialization | None:
        """Subscribed share-partitions neither initialised nor recently asked for."""
        wanted: dict[str, list[int]] = {}
        for topic in sorted(subscribed_topics):
            count = self._topic_partitions.get(topic)
            if count is None:
                continue
            already = set(group.initialized.get(topic, ()))
            pending = group.initializing.get(topic)
            if pending is not None and now_ms - pending[1] < self.initialize_retry_interval_ms:
                already |= pending[0]
            if not already or len(already) < count:
                missing = sorted(set(range(count)) - already)
                if missing:
                    wanted[topic] = missing
        if not wanted:
            return None
        for topic, parts in wanted.items():
            pending = group.initializing.get(topic)
            earlier = pending[0] if pending is not None else set()
            group.initializing[topic] = (earlier | set(parts), now_ms)
        return ShareInitialization(group.group_id, group.group_epoch, wanted)

    def _compute_target(self, group: _Group) -> dict[str, _Assignment]:
        member_ids = sorted(group.members)
        subscriptions = [
            frozenset(t for t in group.members[m].subscribed if t in self._topic_partitions)
            for m in member_ids
        ]
        topics = sorted(set().union(*subscriptions)) if subscriptions else []
        assignable = {topic: self._assignable(group, topic) for topic in topics}
        old = []
        for member_id in member_ids:
            previous = group.target.get(member_id, {})
            old.append(
                {
                    topic: {p for p in parts if p in assignable.get(topic, ())}
                    for topic, parts in previous.items()
                }
            )
        homogeneous = len({group.members[m].subscribed for m in member_ids}) <= 1
        result = simple_assign(subscriptions, old, assignable, homogeneous=homogeneous)
        return dict(zip(member_ids, result, strict=True))


def _error(code: int, message: str) -> HeartbeatResult:
    return HeartbeatResult(
        error_code=code,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def _epoch_error(member: _Member, received: int) -> str | None:
    """``throwIfShareGroupMemberEpochIsInvalid``: a lost response may be retried once."""
    if received == 0:
        return None
    if received > member.member_epoch:
        return (
            f"The share group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        return (
            f"The share group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}), and it does not match the "
            f"previous member epoch ({member.previous_member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )
    return None


# --- the simple assignor ----------------------------------------------------------------------


def _desired_counts(sharing: int, num_partitions: int, num_members: int) -> list[int]:
    """Per-member quotas that add up to ``sharing * partitions``, spread as evenly as can be."""
    precise = sharing * num_partitions / num_members
    return [
        math.ceil(precise * (index + 1)) - math.ceil(precise * index)
        for index in range(num_members)
    ]


def _fill(
    partitions: Sequence[tuple[str, int]],
    by_partition: dict[tuple[str, int], set[int]],
    by_member: dict[int, set[tuple[str, int]]],
    unfilled: list[int],
    desired: Sequence[int],
    sharing: int,
    take: Callable[[int, tuple[str, int]], None],
) -> None:
    """``assignRemainingPartitions``: hand under-shared partitions to unfilled members.

    One pass over the partitions with a member cursor that wraps around; a
    partition no unfilled member can take (they all have it) is left short.
    """
    position = 0
    assigned_this_pass = False
    for partition in partitions:
        holders = by_partition[partition]
        to_make = sharing - len(holders)
        while to_make > 0 and unfilled:
            if position >= len(unfilled):
                if not assigned_this_pass:
                    break
                position = 0
                assigned_this_pass = False
            member = unfilled[position]
            position += 1
            if member in holders:
                continue
            holders.add(member)
            by_member.setdefault(member, set()).add(partition)
            take(member, partition)
            to_make -= 1
            assigned_this_pass = True
            if len(by_member[member]) >= desired[member]:
                position -= 1
                unfilled.pop(position)
        if not unfilled:
            break


def simple_assign(
    subscriptions: Sequence[frozenset[str]],
    old: Sequence[Mapping[str, set[int]]],
    assignable: Mapping[str, Sequence[int]],
    *,
    homogeneous: bool,
) -> list[_Assignment]:
    """Kafka's ``SimpleAssignor`` over members numbered 0..n-1.

    ``subscriptions[i]`` are member i's subscribed topics that exist, ``old[i]``
    its previous target assignment, ``assignable`` the initialised partitions
    of each topic. Homogeneous groups (everyone subscribed to the same topics)
    balance over all partitions together; heterogeneous ones topic by topic.
    """
    if not subscriptions:
        return []
    if homogeneous:
        return _assign_homogeneous(subscriptions[0], old, assignable)
    return _assign_heterogeneous(subscriptions, old, assignable)


def _assign_homogeneous(
    topics: frozenset[str],
    old: Sequence[Mapping[str, set[int]]],
    assignable: Mapping[str, Sequence[int]],
) -> list[_Assignment]:
    num_members = len(old)
    if not topics:
        return [{} for _ in range(num_members)]
    targets = [(topic, p) for topic in sorted(topics) for p in assignable.get(topic, ())]
    sharing = 0 if not targets else (num_members + len(targets) - 1) // len(targets)
    desired = _desired_counts(sharing, len(targets), num_members)
    new: dict[int, _Assignment] = {}
    by_partition: dict[tuple[str, int], set[int]] = {}
    by_member: dict[int, set[tuple[str, int]]] = {}
    unfilled: set[int] = set()
    overfilled: set[int] = set()

    def editable(member: int) -> _Assignment:
        if member not in new:
            new[member] = _copy(old[member])
        return new[member]

    # Keep what members already have (stickiness), dropping unsubscribed topics.
    for member in range(num_members):
        count = 0
        for topic in sorted(old[member]):
            if topic in topics:
                for partition in sorted(old[member][topic]):
                    count += 1
                    by_partition.setdefault((topic, partition), set()).add(member)
                    by_member.setdefault(member, set()).add((topic, partition))
                    if count >= desired[member]:
                        editable(member)
            else:
                editable(member).pop(topic, None)
        if count < desired[member]:
            unfilled.add(member)
        elif count > desired[member]:
            overfilled.add(member)

    # Balance: trim members above their quota.
    for member in sorted(overfilled):
        held = by_member[member]
        for topic, partition in sorted(held):
            if len(held) <= desired[member]:
                break
            editable(member)[topic].discard(partition)
            by_partition[(topic, partition)].discard(member)
            held.discard((topic, partition))

    # No partition shared by more members than needed.
    for key in sorted(by_partition):
        holders = by_partition[key]
        if len(holders) <= sharing:
            continue
        for member in sorted(holders):
            parts = editable(member).get(key[0])
            if parts is not None and key[1] in parts:
                parts.discard(key[1])
                holders.discard(member)
                by_member[member].discard(key)
                unfilled.add(member)
            if len(holders) <= sharing:
                break

    for key in targets:
        by_partition.setdefault(key, set())

    def take(member: int, key: tuple[str, int]) -> None:
        editable(member).setdefault(key[0], set()).add(key[1])

    _fill(sorted(by_partition), by_partition, by_member, sorted(unfilled), desired, sharing, take)
    return [_strip(new.get(member, old[member])) for member in range(num_members)]


def _assign_heterogeneous(
    subscriptions: Sequence[frozenset[str]],
    old: Sequence[Mapping[str, set[int]]],
    assignable: Mapping[str, Sequence[int]],
) -> list[_Assignment]:
    num_members = len(old)
    all_topics = sorted(set().union(*subscriptions))
    new: dict[int, _Assignment] = {}

    def editable(member: int) -> _Assignment:
        if member not in new:
            new[member] = _copy(old[member])
        return new[member]

    for topic in all_topics:
        subscribers = [m for m in range(num_members) if topic in subscriptions[m]]
        partitions = list(assignable.get(topic, ()))
        sharing = (
            0 if not partitions else (len(subscribers) + len(partitions) - 1) // len(partitions)
        )
        desired = [0] * num_members
        quotas = _desired_counts(sharing, len(partitions), len(subscribers))
        for index, member in enumerate(subscribers):
            desired[member] = quotas[index]
        by_partition: dict[tuple[str, int], set[int]] = {}
        by_member: dict[int, set[tuple[str, int]]] = {}
        for member in range(num_members):
            for partition in sorted(old[member].get(topic, ())):
                by_partition.setdefault((topic, partition), set()).add(member)
                by_member.setdefault(member, set()).add((topic, partition))
        for member in sorted(by_member):
            held = by_member[member]
            for key in sorted(held):
                if len(held) <= desired[member]:
                    break
                by_partition[key].discard(member)
                held.discard(key)
                editable(member)[topic].discard(key[1])
        for key in sorted(by_partition):
            holders = by_partition[key]
            if len(holders) <= sharing:
                continue
            for member in sorted(holders):
                parts = editable(member).get(topic)
                if parts is not None and key[1] in parts:
                    parts.discard(key[1])
                    holders.discard(member)
                    by_member[member].discard(key)
                if len(holders) <= sharing:
                    break
        for partition in partitions:
            by_partition.setdefault((topic, partition), set())
        unfilled = [m for m in subscribers if len(by_member.get(m, ())) < desired[m]]

        def take(member: int, key: tuple[str, int]) -> None:
            editable(member).setdefault(key[0], set()).add(key[1])

        _fill(sorted(by_partition), by_partition, by_member, unfilled, desired, sharing, take)
    return [_strip(new.get(member, _copy(old[member]))) for member in range(num_members)]


def _strip(assignment: Mapping[str, set[int]]) -> _Assignment:
    return {topic: set(parts) for topic, parts in assignment.items() if parts}
