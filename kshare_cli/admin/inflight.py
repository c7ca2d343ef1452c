"""The in-flight view of share groups: admin RPCs for offsets and lag, the state topic for windows.

One service answers both ``kshare inflight`` and the dashboard, so a window is
read, joined to its share-partition and labelled the same way everywhere. Two
sources are joined, and they fail independently:

- the admin RPCs (ShareGroupDescribe, DescribeShareGroupOffsets, ListOffsets,
  Metadata) give the share-partitions, their start offsets, end offsets and lag.
  They need only DESCRIBE on the group and the topics;
- ``__share_group_state`` gives each share-partition's persisted in-flight window.
  Reading it needs READ on an internal topic, which many operators do not have.
  When it cannot be read the answer still stands, without windows, and
  ``GroupInflight.window_note`` says why (``StateTopicUnavailable.reason``).

The state topic names topics by id and the admin RPCs by name; the join goes
through the cluster metadata (Metadata carries both).

Reading the state topic is blocking (confluent-kafka), so it runs in a worker
thread (``asyncio.to_thread``) beside the admin RPCs rather than after them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import (
    BrokerFailure,
    EndOffsets,
    GroupDescription,
    GroupFailure,
    GroupOffsets,
    KafkaError,
    LagSource,
    LagTotals,
    SharePartitionOffset,
    TopicPartition,
    in_partition_order,
)
from kshare_cli.admin.share_groups import EARLIEST_TIMESTAMP, lag_and_source
from kshare_cli.errors import (
    ConnectionFailed,
    ExitCode,
    IncompatibleBroker,
    KshareError,
    NotAuthorized,
    NotFound,
    TimedOut,
)
from kshare_cli.kafka.api_keys import DESCRIBE_CONFIGS
from kshare_cli.kafka.group_configs import BROKER_RESOURCE, GROUP_RESOURCE, ConfigSource
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.state.tailer import StateTopicUnavailable
from kshare_cli.state.window import InFlightWindow
from kshare_cli.wire.client import GIVE_UP_FOR_S

if TYPE_CHECKING:
    from kshare_cli.admin.share_groups import ShareGroupAdmin
    from kshare_cli.state.tailer import StateTailer
    from kshare_cli.wire.client import KafkaClient

__all__ = [
    "DEFAULT_DELIVERY_COUNT_LIMIT",
    "GroupInflight",
    "GroupNotAuthorized",
    "GroupNotFound",
    "GroupSummary",
    "GroupUnavailable",
    "GroupsOverview",
    "InflightService",
    "NamesUnread",
    "PartitionInflight",
    "PlacedStateSource",
    "StateSource",
    "StateTopicUnavailable",
    "StatedDeliveryCountLimit",
    "TailingStateSource",
    "delivery_count_limit",
    "stated_delivery_count_limit",
    "stated_delivery_count_limits",
]

#: Kafka's ``group.share.delivery.count.limit`` default: what a group without its own
#: ``share.delivery.count.limit`` gets, and what a strip assumes when the config is unreadable.
DEFAULT_DELIVERY_COUNT_LIMIT: Final = 5

_GROUP_LIMIT: Final = "share.delivery.count.limit"  # a group config since Kafka 4.3
_BROKER_LIMIT: Final = "group.share.delivery.count.limit"
_ZERO_UUID: Final = uuid.UUID(int=0)


# --------------------------------------------------------------------------- models


@dataclass(frozen=True, slots=True)
class PartitionInflight:
    """One share-partition: where the group stands on it, and its persisted in-flight window.

    ``start_offset``, ``lag`` and ``lag_source`` are DescribeShareGroupOffsets' (the
    same figures as ``kshare describe``); ``end_offset`` is the log end offset.
    ``window`` is None when the state topic was not read, could not be read, or
    holds nothing for this share-partition; ``topic_id`` is None when the
    metadata did not name the topic (then no window can be matched to it).
    ``end_offset_error`` is why ``end_offset`` is None (ListOffsets failed: the
    leader down or silent, named). ``window_error`` says why the window is unknown
    when the state partition that holds it could not be read (its leader did not
    answer) while others were. ``log_start_offset`` is the partition's (ListOffsets
    earliest), None when not asked or not answered; when it is past the start offset,
    ``window`` marks the offsets below it DELETED (``InFlightWindow.after_retention``):
    retention deleted them, they are not queued.
    """

    topic: str
    partition: int
    topic_id: uuid.UUID | None
    start_offset: int | None
    end_offset: int | None
    lag: int | None
    lag_source: LagSource | None
    window: InFlightWindow | None
    error: KafkaError | None = None
    window_error: str | None = None
    end_offset_error: KafkaError | None = None
    log_start_offset: int | None = None

    @property
    def queued(self) -> int | None:
        """Records past the window, below the log end offset: produced, never delivered."""
        if self.window is None or self.end_offset is None:
            return None
        return self.window.queued(self.end_offset)

    @property
    def deleted(self) -> int | None:
        """Records at or above the start offset that retention deleted before the group was
        done with them; None when the log start offset is unknown.

        The window's DELETED offsets; without a window, every offset from the start offset
        to the log start offset (none of them is known to be done).
        """
        log_start = self.log_start_offset
        if log_start is None:
            return None
        if self.window is not None and self.window.start_offset >= 0:
            return self.window.deleted
        start = self.start_offset
        if start is None or start < 0:
            return 0
        return max(0, log_start - start)

    def with_log_start_offset(self, log_start_offset: int | None) -> PartitionInflight:
        """This share-partition given its log start offset, the window marked after it."""
        if log_start_offset is None:
            return self
        window = None if self.window is None else self.window.after_retention(log_start_offset)
        return dataclasses.replace(self, window=window, log_start_offset=log_start_offset)


@dataclass(frozen=True, slots=True)
class GroupInflight(LagTotals):
    """A share group's share-partitions with their windows, sorted by (topic, partition).

    ``window_note`` is one line saying why the windows are missing (the state
    topic could not be read), else None. ``delivery_count_limit`` is the group's
    effective ``share.delivery.count.limit``, None when its configs could not be
    read: a strip then assumes Kafka's default. ``unknown_topics`` are the topics
    asked for that the cluster does not have, which the command reports apart from
    a topic that exists but that the group has no share-partition of.

    ``offsets_note`` is None when the start offsets and lag are the broker's
    (DescribeShareGroupOffsets). Else it is one line saying why they come from
    ``__share_group_state`` instead (the group coordinator held the request while a
    broker did not answer, named) and that share-partitions whose state lives on
    that broker are missing or marked (``window_error``): a partial answer.
    """

    group_id: str
    description: GroupDescription | None
    partitions: tuple[PartitionInflight, ...]
    window_note: str | None
    delivery_count_limit: int | None = None
    unknown_topics: tuple[str, ...] = ()
    offsets_note: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", in_partition_order(self.partitions))

    def with_log_start_offsets(self, log_starts: Mapping[TopicPartition, int]) -> GroupInflight:
        """The group with each share-partition's log start offset (those ``log_starts``
        holds), its window marked after it: one rule for ``inflight``, the dashboard,
        ``health`` and the exporter, which read the log start offsets each their own way."""
        partitions = tuple(
            each.with_log_start_offset(log_starts.get(TopicPartition(each.topic, each.partition)))
            for each in self.partitions
        )
        return dataclasses.replace(self, partitions=partitions)


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of the groups screen; the total lag as ``GroupOffsets`` gives it."""

    group_id: str
    state: str
    members: int
    share_partitions: int
    total_lag: int | None
    total_lag_source: LagSource | None = None
    total_lag_complete: bool | None = None


@dataclass(frozen=True, slots=True)
class GroupsOverview:
    """Every share group of the cluster, sorted by id, and what could not be asked.

    A broker that did not answer ListGroups, or a group that could not be
    described, is in ``failures``; the other groups stand. A group that was
    listed and then not found had been deleted in between: it is simply absent.
    """

    groups: tuple[GroupSummary, ...]
    failures: tuple[BrokerFailure | GroupFailure, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "groups", tuple(sorted(self.groups, key=lambda each: each.group_id))
        )


class GroupUnavailable(KshareError):
    """The group could not be described (not authorised, coordinator unreachable, ...).

    ``failure`` carries Kafka's error; the message is the one ``kshare describe``
    prints for the same failure.
    """

    def __init__(self, failure: GroupFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


class GroupNotFound(GroupUnavailable, NotFound):
    """No such share group: exit code 5, as ``kshare describe`` gives for a missing group."""

    exit_code = ExitCode.NOT_FOUND


class GroupNotAuthorized(GroupUnavailable, NotAuthorized):
    """The cluster's ACLs refused us the group: exit code 6, as everywhere."""

    exit_code = ExitCode.NOT_AUTHORIZED


def _group_error(failure: GroupFailure) -> GroupUnavailable:
    missing = failure.not_found and not failure.not_share_group
    if failure.not_authorized:
        return GroupNotAuthorized(failure)
    return GroupNotFound(failure) if missing else GroupUnavailable(failure)


# --------------------------------------------------------------------------- state sources


class StateSource(Protocol):
    """Where the persisted share-partition states come from (the state topic, in practice).

    ``refresh`` blocks (it runs in a worker thread) and returns the current state of
    every share-partition of the given groups; it raises ``StateTopicUnavailable``
    when the state topic cannot be read.
    """

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]: ...


@runtime_checkable
class NamesUnread(Protocol):
    """A ``StateSource`` that gives up on a silent state partition alone, and says which
    share-partitions that left out and why (their windows are then unknown, not empty)."""

    def unread_reason(self, key: SharePartitionKey) -> str | None: ...


class TailingStateSource:
    """A ``StateSource`` over one long-lived ``StateTailer``.

    Until a refresh has read every state partition to its end, each refresh tries
    that again, going on from what earlier attempts read; after that, a refresh
    applies only what is new (``poll``), so a dashboard refresh costs the records
    written since the last one. ``group_ids`` restricts the tailer to those groups
    (records of others are skipped while reading); None keeps every group, for a
    caller that moves between groups.

    Refreshes from several threads share one read rather than taking turns: a
    refresh that waited while another read finishes takes that read's answer (or
    its failure) instead of reading again with a full timeout of its own. On a
    real cluster with one broker down, five groups' health refreshes each waited
    out their own catch-up in turn (160 s for a 30 s --timeout); now the waiting
    costs at most one read, and a refresh never waits past its own timeout.

    A state partition whose leader is silent is given up on alone (``catch_up_each``):
    the share-partitions it holds are left out of every answer (their partial states
    would be wrong windows) and ``unread_reason`` says why, while every other
    share-partition's window is shown.
    """

    def __init__(
        self, config: Mapping[str, object], *, group_ids: Collection[str] | None = None
    ) -> None:
        self._config = dict(config)
        self._group_ids = None if group_ids is None else frozenset(group_ids)
        self._tailer: StateTailer | None = None
        self._caught_up = False
        self._lock = threading.Lock()
        self._closed = False
        #: When the last read ended (monotonic), and how it failed, for refreshes that
        #: waited for it.
        self._read_at: float | None = None
        self._failure: StateTopicUnavailable | None = None
        #: State partitions not read to their end by the last read, each with why, and
        #: when they were given up on.
        self._unread: dict[int, str] = {}
        self._gave_up_at: float | None = None

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        asked = time.monotonic()
        with self._turn(timeout_s):
            if self._read_at is None or self._read_at < asked:
                self._read(max(0.0, asked + timeout_s - time.monotonic()))
            elif self._failure is not None:
                # A read ended while this refresh waited for it: its failure is ours too.
                raise self._failure
            wanted = frozenset(group_ids)
            return {
                key: state for key, state in self._read_states().items() if key.group_id in wanted
            }

    def states(self) -> dict[SharePartitionKey, SharePartitionState]:
        """Every kept share-partition's state as last read, without reading again: for a
        caller that reads once (``refresh``) and answers many groups from that read."""
        with self._lock:
            return self._read_states()

    def unread_reason(self, key: SharePartitionKey) -> str | None:
        """Why the last read left ``key``'s state out (its state partition's leader was
        silent), else None."""
        with self._lock:
            count = None if self._tailer is None else self._tailer.partition_count
            if count is None or not self._unread:
                return None
            return self._unread.get(state_partition_for(key, count))

    def read_everywhere(self, group_ids: Collection[str], timeout_s: float) -> StateTopicRead:
        """Every state partition, keeping ``group_ids``' share-partitions, each partition
        given up on alone: for a caller that cannot know where they live (the group
        coordinator held DescribeShareGroupOffsets, ``InflightService.group``). A
        reader of its own, so the tailer ``refresh`` follows is left as it is."""
        from kshare_cli.state.tailer import StateTailer

        asked = time.monotonic()
        with (
            self._turn(timeout_s),
            StateTailer(self._config, group_ids=frozenset(group_ids)) as tailer,
        ):
            silent = tailer.catch_up_each(max(0.0, asked + timeout_s - time.monotonic()))
            count = tailer.partition_count
            states = tailer.states()
            leaders = [tailer.leader(partition) for partition in sorted(silent)]
        if count is not None and silent:
            states = {
                key: state
                for key, state in states.items()
                if state_partition_for(key, count) not in silent
            }
        named = tuple(dict.fromkeys(leader for leader in leaders if leader is not None))
        return StateTopicRead(states, silent, named, count)

    def close(self) -> None:
        """Close the tailer; waits for a refresh in progress (at most its timeout)."""
        with self._lock:
            self._closed = True
            if self._tailer is not None:
                self._tailer.close()
                self._tailer = None

    @contextmanager
    def _turn(self, timeout_s: float) -> Iterator[None]:
        """The reader, once the refresh before has ended: within ``timeout_s`` or not at all."""
        if not self._lock.acquire(timeout=max(0.0, timeout_s)):
            raise StateTopicUnavailable(
                f"the state topic was still being read after {timeout_s:g} s "
                "(a broker is slow or silent); in-flight windows cannot be shown"
            )
        try:
            if self._closed:
                raise StateTopicUnavailable("the state topic reader was closed")
            yield
        finally:
            self._lock.release()

    def _read(self, budget_s: float) -> None:
        from kshare_cli.state.tailer import StateTailer

        if self._tailer is None:
            self._tailer = StateTailer(self._config, group_ids=self._group_ids)
        tailer = self._tailer
        self._failure = None
        try:
            # A state partition given up on a moment ago is not waited for again (the
            # client does the same for a broker, GIVE_UP_FOR_S): each group of one
            # command would pay its leader's silence anew.
            recent = self._gave_up_at is not None and (
                time.monotonic() - self._gave_up_at < GIVE_UP_FOR_S
            )
            if self._caught_up or recent:
                tailer.poll(budget_s)
            else:
                self._unread = tailer.catch_up_each(budget_s)
                self._caught_up = not self._unread
                self._gave_up_at = time.monotonic() if self._unread else None
        except StateTopicUnavailable as failure:
            self._failure = failure
            raise
        finally:
            self._read_at = time.monotonic()

    def _read_states(self) -> dict[SharePartitionKey, SharePartitionState]:
        if self._tailer is None:
            return {}
        states = self._tailer.states()
        count = self._tailer.partition_count
        if not self._unread or count is None:
            return states
        return {
            key: state
            for key, state in states.items()
            if state_partition_for(key, count) not in self._unread
        }

    def __enter__(self) -> TailingStateSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class StateTopicRead:
    """One read of every state partition for some groups (``read_everywhere``).

    ``states`` are the share-partitions read to the end; ``silent`` the state
    partitions given up on, each with why, whose share-partitions are left out;
    ``silent_leaders`` their leaders, named (``broker N (HOST:PORT)``), once each.
    """

    states: Mapping[SharePartitionKey, SharePartitionState]
    silent: Mapping[int, str] = dataclasses.field(default_factory=dict)
    silent_leaders: tuple[str, ...] = ()
    partition_count: int | None = None

    def unread_reason(self, key: SharePartitionKey) -> str | None:
        """Why ``key``'s state is unknown (its state partition was silent), else None."""
        if self.partition_count is None or not self.silent:
            return None
        return self.silent.get(state_partition_for(key, self.partition_count))


class PlacedStateSource(TailingStateSource):
    """A ``TailingStateSource`` that can also read only where given share-partitions live.

    A command about one group (``kshare inflight``, a reset's plan) needs a few
    of the state topic's fifty partitions; reading all of them waited for every
    leader, so one down broker leading any state partition cost the whole
    state share of --timeout. ``read_placed`` reads the state partitions holding
    the share-partitions (Kafka's placement) and gives up on each alone.
    """

    def read_placed(
        self, share_partitions: Collection[SharePartitionKey], timeout_s: float
    ) -> tuple[dict[SharePartitionKey, SharePartitionState], dict[SharePartitionKey, str]]:
        """The states read, and for each share-partition whose state partition was not
        read to its end, why (its leader, named); their partial states are dropped."""
        from kshare_cli.state.tailer import StateTailer

        keys = frozenset(share_partitions)
        if not keys:
            return {}, {}
        asked = time.monotonic()
        with self._turn(timeout_s):
            groups = {key.group_id for key in keys}
            with StateTailer(self._config, group_ids=groups, share_partitions=keys) as tailer:
                silent = tailer.catch_up_each(max(0.0, asked + timeout_s - time.monotonic()))
                count = tailer.partition_count
                states = tailer.states()
        unread = {}
        if count is not None:
            for key in keys:
                reason = silent.get(state_partition_for(key, count))
                if reason is not None:
                    unread[key] = reason
        read = {key: state for key, state in states.items() if key in keys and key not in unread}
        return read, unread


# --------------------------------------------------------------------------- service


class InflightService:
    """Joins the admin RPCs and the state topic into ``GroupInflight`` and ``GroupsOverview``.

    ``state`` None means the state topic is not read at all (windows None, no note).
    ``state_timeout_s`` bounds each state refresh; it defaults to the client's
    timeout and should stay below any deadline around the call, because a worker
    thread cannot be cancelled.

    ``offsets_when_held``: when the group coordinator holds DescribeShareGroupOffsets
    (Kafka waits for every share coordinator it reads from: about 180 s for a hung
    one, until fencing for a stopped one) while it still describes the group,
    ``group`` answers from ``__share_group_state`` instead of failing, with
    ``GroupInflight.offsets_note`` saying so. Off by default: a caller that turns it
    on must treat that note as a partial answer.
    """

    def __init__(
        self,
        admin: ShareGroupAdmin,
        state: StateSource | None,
        *,
        state_timeout_s: float | None = None,
        offsets_when_held: bool = False,
    ) -> None:
        self._admin = admin
        self._state = state
        self._state_timeout_s = state_timeout_s
        self._offsets_when_held = offsets_when_held
        #: Limits looked up for many groups at once, each taken by its group's next read.
        self._limits: dict[str, int | None] = {}

    @property
    def admin(self) -> ShareGroupAdmin:
        return self._admin

    async def overview(self) -> GroupsOverview:
        """Every share group: state, members, share-partitions and total lag."""
        admin = self._admin
        listing = await admin.list_groups()
        ids = listing.group_ids()
        failures: list[BrokerFailure | GroupFailure] = list(listing.failures)
        if not ids:
            return GroupsOverview((), tuple(failures))
        descriptions, offsets = await asyncio.gather(
            admin.describe_groups(ids), admin.list_share_partition_offsets(ids)
        )
        failed: set[str] = set()
        for failure in (*descriptions.errors(), *offsets.errors()):
            if failure.group_id in failed:
                continue
            failed.add(failure.group_id)
            if not failure.not_found:
                failures.append(failure)
        summaries = []
        for description in descriptions.succeeded():
            if description.group_id in failed:
                continue
            group_offsets = offsets.get(description.group_id)
            if not isinstance(group_offsets, GroupOffsets):
                group_offsets = GroupOffsets(description.group_id)
            summaries.append(
                GroupSummary(
                    description.group_id,
                    description.state,
                    description.member_count,
                    len(group_offsets.partitions),
                    group_offsets.total_lag,
                    group_offsets.total_lag_source,
                    group_offsets.total_lag_complete,
                )
            )
        return GroupsOverview(tuple(summaries), tuple(failures))

    async def group(
        self, group_id: str, topics: Sequence[str] = (), *, log_start_offsets: bool = True
    ) -> GroupInflight:
        """One group's share-partitions (only those of ``topics`` when given), with windows.

        ``log_start_offsets`` asks ListOffsets earliest too (beside the topics' Metadata),
        so that offsets retention deleted show as such; a caller that asks them for many
        groups at once (``services.sampling``) turns it off and applies its own
        (``GroupInflight.with_log_start_offsets``).

        Raises ``GroupNotFound`` (exit 5) for a group that does not exist and
        ``GroupUnavailable`` for one that could not be described, with the message
        ``kshare describe`` prints for it. A state topic that cannot be read is no
        failure: the windows are None and ``window_note`` says why. Offsets the
        coordinator held are read from the state topic (``offsets_when_held``).
        """
        admin = self._admin
        wanted_topics = frozenset(topics)
        # The state topic first, the offsets after: on a live group everything moves
        # forward, so a window read before the log end offsets never reaches past them
        # (read concurrently, a slow state read showed windows beyond the end offset).
        try:
            placed = await self._placement(group_id, wanted_topics)
        except GroupUnavailable as unavailable:
            if not self._may_be_held(unavailable.failure):
                raise
            return await self._from_state_topic(
                group_id, wanted_topics, unavailable.failure, log_start_offsets
            )
        states, note, unread = await self._states(group_id, placed)
        descriptions, offsets, limit = await asyncio.gather(
            admin.describe_groups([group_id]),
            admin.list_share_partition_offsets([group_id]),
            self._delivery_count_limit(group_id),
        )
        listed = offsets.get(group_id)
        if (
            isinstance(listed, GroupFailure)
            and isinstance(descriptions.get(group_id), GroupDescription)
            and self._may_be_held(listed)
        ):
            return await self._from_state_topic(group_id, wanted_topics, listed, log_start_offsets)
        for result in (descriptions.get(group_id), offsets.get(group_id)):
            if isinstance(result, GroupFailure):
                raise _group_error(result)
        description = descriptions.get(group_id)
        group_offsets = offsets.get(group_id)
        assert isinstance(description, GroupDescription)
        assert isinstance(group_offsets, GroupOffsets)
        rows = [
            offset
            for offset in group_offsets.partitions
            if not wanted_topics or offset.topic in wanted_topics
        ]
        present = {offset.topic for offset in rows}
        (topic_ids, unknown), log_starts = await asyncio.gather(
            self._topics(sorted(present | wanted_topics)),
            self._log_start_offsets(rows if log_start_offsets else ()),
        )
        partitions = tuple(
            _partition(offset, topic_ids.get(offset.topic), group_id, states, unread)
            for offset in rows
        )
        unknown_topics = tuple(sorted(unknown - present))
        group = GroupInflight(group_id, description, partitions, note, limit, unknown_topics)
        return group.with_log_start_offsets(log_starts) if log_starts else group

    async def _log_start_offsets(
        self, rows: Sequence[SharePartitionOffset]
    ) -> Mapping[TopicPartition, int]:
        """The log start offsets of the share-partitions that have a start offset; a
        partition that did not answer is left out (nothing is then marked deleted)."""
        partitions = [
            TopicPartition(row.topic, row.partition)
            for row in rows
            if row.error is None and row.start_offset is not None and row.start_offset >= 0
        ]
        if not partitions:
            return {}
        return (await self._admin.log_offsets(partitions, EARLIEST_TIMESTAMP)).offsets

    def _may_be_held(self, failure: GroupFailure) -> bool:
        """Whether a failed DescribeShareGroupOffsets may have been held by a live
        coordinator (the client ends a held request with REQUEST_TIMED_OUT); whether it
        was is told by the coordinator still describing the group."""
        return (
            self._offsets_when_held
            and self._state is not None
            and failure.error.code == ErrorCode.request_timed_out
        )

    async def _from_state_topic(
        self,
        group_id: str,
        wanted_topics: Collection[str],
        held: GroupFailure,
        log_start_offsets: bool,
    ) -> GroupInflight:
        """The group as far as it can be known while its coordinator holds
        DescribeShareGroupOffsets: its description (ShareGroupDescribe is not held), and
        its share-partitions from ``__share_group_state``, every state partition read
        and each silent one given up on alone, topic ids named through Metadata, the
        log end offsets from ListOffsets (after the state read, as in ``group``) and
        the lag by KIP-1226's rule from them (``lag_source`` ``state``).

        A coordinator that does not describe the group either is not holding: the
        offsets' failure is raised, as before.
        """
        admin = self._admin
        described = (await admin.describe_groups([group_id])).get(group_id)
        if not isinstance(described, GroupDescription):
            raise _group_error(held)
        read, window_note, limit = await self._read_everywhere(group_id)
        metadata = await admin.client.metadata()
        names = {
            topic.topic_id: name
            for name, topic in metadata.topics.items()
            if topic.error_code == 0 and topic.topic_id != _ZERO_UUID
        }
        ids = {name: topic_id for topic_id, name in names.items()}
        found: dict[TopicPartition, tuple[SharePartitionKey, SharePartitionState]] = {}
        for key, state in ({} if read is None else read.states).items():
            name = names.get(key.topic_id)
            if key.group_id != group_id or name is None:
                continue  # a deleted topic's state: Kafka lists no share-partition of it
            if not wanted_topics or name in wanted_topics:
                found[TopicPartition(name, key.partition)] = (key, state)
        # Share-partitions whose state may sit on a silent state partition: those of
        # the topics the group is known to use (its states elsewhere, its members'
        # subscriptions and assignments, the topics asked for) are marked, not dropped.
        marked: dict[TopicPartition, str] = {}
        if read is not None and read.silent:
            used = {tp.topic for tp in found} | set(wanted_topics)
            for member in described.members:
                used.update(member.subscribed_topics)
                used.update(member.assignment)
            if wanted_topics:
                used &= set(wanted_topics)
            for name in sorted(used):
                topic = metadata.topics.get(name)
                if topic is None or name not in ids:
                    continue
                for index in sorted(topic.partitions):
                    tp = TopicPartition(name, index)
                    reason = read.unread_reason(SharePartitionKey(group_id, ids[name], index))
                    if tp not in found and reason is not None:
                        marked[tp] = reason
        started = [
            SharePartitionOffset(tp.topic, tp.partition, state.start_offset)
            for tp, (_, state) in found.items()
        ]
        ends, log_starts = await asyncio.gather(
            admin.log_end_offsets([*found, *marked]) if found or marked else _no_end_offsets(),
            self._log_start_offsets(started if log_start_offsets else ()),
        )
        offsets = [_offset_from_state(tp, state, ends) for tp, (_, state) in found.items()] + [
            SharePartitionOffset(
                tp.topic,
                tp.partition,
                None,
                end_offset=ends.get(tp),
                end_offset_error=ends.failures.get(tp),
            )
            for tp in marked
        ]
        states = {key: state for key, state in found.values()}
        unread = _nothing_unread if read is None else read.unread_reason
        partitions = tuple(
            _partition(offset, ids.get(offset.topic), group_id, states, unread)
            for offset in offsets
        )
        unknown_topics = tuple(
            sorted(
                name
                for name in wanted_topics
                if (topic := metadata.topics.get(name)) is None
                or topic.error_code == ErrorCode.unknown_topic_or_partition
            )
        )
        note = _held_note(described, held, read, window_note)
        group = GroupInflight(
            group_id, described, partitions, window_note, limit, unknown_topics, note
        )
        return group.with_log_start_offsets(log_starts) if log_starts else group

    async def _read_everywhere(
        self, group_id: str
    ) -> tuple[StateTopicRead | None, str | None, int | None]:
        """Every state partition for the group (``read_everywhere``), within the state's
        share of what is left of the deadline, beside the delivery limit's lookup; the
        read is None when the state topic could not be read, with why."""
        source = self._state
        client = self._admin.client
        timeout_s = client.timeout_s
        # The same share of what is left as the state read has of the whole timeout
        # (the session's STATE_SHARE_OF_TIMEOUT): the end offsets still come after it.
        share = (self._state_timeout_s or timeout_s * _HELD_STATE_SHARE) / timeout_s
        budget_s = min(self._state_timeout_s or timeout_s, client.remaining_s() * min(1.0, share))

        async def read() -> StateTopicRead:
            if isinstance(source, TailingStateSource):
                return await asyncio.to_thread(source.read_everywhere, [group_id], budget_s)
            assert source is not None
            return StateTopicRead(await asyncio.to_thread(source.refresh, [group_id], budget_s))

        limit_lookup = asyncio.ensure_future(self._delivery_count_limit(group_id))
        try:
            state_read = await read()
        except StateTopicUnavailable as unavailable:
            return None, unavailable.reason, await limit_lookup
        except BaseException:
            limit_lookup.cancel()
            raise
        return state_read, None, await limit_lookup

    async def _placement(
        self, group_id: str, wanted_topics: Collection[str]
    ) -> frozenset[SharePartitionKey] | None:
        """The group's share-partitions by topic id, for a source that reads only theirs.

        None for any other source (it reads the whole state topic). Asked before the
        state read, which must come before the end offsets (see ``group``): a
        DescribeShareGroupOffsets without ListOffsets and a Metadata, both cheap.
        """
        if not isinstance(self._state, PlacedStateSource):
            return None
        listed = (
            await self._admin.list_share_partition_offsets([group_id], end_offsets=False)
        ).get(group_id)
        if isinstance(listed, GroupFailure):
            raise _group_error(listed)
        if listed is None:
            return frozenset()
        rows = [
            offset
            for offset in listed.partitions
            if not wanted_topics or offset.topic in wanted_topics
        ]
        topic_ids, _ = await self._topics(sorted({offset.topic for offset in rows}))
        return frozenset(
            SharePartitionKey(group_id, topic_ids[offset.topic], offset.partition)
            for offset in rows
            if offset.topic in topic_ids
        )

    async def _states(
        self, group_id: str, placed: frozenset[SharePartitionKey] | None
    ) -> tuple[
        Mapping[SharePartitionKey, SharePartitionState] | None,
        str | None,
        Callable[[SharePartitionKey], str | None],
    ]:
        source = self._state
        if source is None:
            return None, None, _nothing_unread
        timeout_s = self._state_timeout_s or self._admin.client.timeout_s
        try:
            if placed is not None and isinstance(source, PlacedStateSource):
                read, unread = await asyncio.to_thread(source.read_placed, placed, timeout_s)
                return read, None, unread.get
            states = await asyncio.to_thread(source.refresh, [group_id], timeout_s)
        except StateTopicUnavailable as unavailable:
            return None, unavailable.reason, _nothing_unread
        if isinstance(source, NamesUnread):
            return states, None, source.unread_reason
        return states, None, _nothing_unread

    async def _topics(self, topics: Sequence[str]) -> tuple[dict[str, uuid.UUID], frozenset[str]]:
        """The topics' ids (to find their windows), and which of them do not exist."""
        if not topics:
            return {}, frozenset()
        metadata = await self._admin.client.metadata(topics)
        ids = {
            name: topic.topic_id
            for name, topic in metadata.topics.items()
            if topic.error_code == 0 and topic.topic_id != _ZERO_UUID
        }
        unknown = frozenset(
            name
            for name in topics
            if (topic := metadata.topics.get(name)) is None
            or topic.error_code == ErrorCode.unknown_topic_or_partition
        )
        return ids, unknown

    async def look_up_delivery_count_limits(self, group_ids: Sequence[str]) -> None:
        """The delivery count limits of the groups about to be read, in a few batched
        DescribeConfigs instead of one per group (a fifth of an exporter refresh's
        requests); each group's next :meth:`group` takes its own."""
        stated = await stated_delivery_count_limits(self._admin, group_ids)
        self._limits.update(
            (group_id, None if limit is None else limit.limit) for group_id, limit in stated.items()
        )

    async def _delivery_count_limit(self, group_id: str) -> int | None:
        if group_id in self._limits:
            return self._limits.pop(group_id)
        return await delivery_count_limit(self._admin, group_id)


@dataclass(frozen=True, slots=True)
class StatedDeliveryCountLimit:
    """A group's delivery count limit as the cluster stated it, and which config stated it.

    ``source`` is ``group config share.delivery.count.limit`` or ``broker config
    group.share.delivery.count.limit``: what ``kshare consume --interactive`` shows.
    """

    limit: int
    source: str


async def delivery_count_limit(admin: ShareGroupAdmin, group_id: str) -> int | None:
    """The group's delivery count limit; None when the cluster would not say.

    Kafka 4.3 lets a group set ``share.delivery.count.limit``; otherwise (and on
    4.2) the broker's ``group.share.delivery.count.limit`` applies. Both are asked
    in one DescribeConfigs. Only DESCRIBE on the group is required of an operator,
    so a refusal (no DESCRIBE_CONFIGS) costs the strip its exact scale, not the answer
    (and a dead letter its ``__dlq.errors.message``).
    """
    stated = await stated_delivery_count_limit(admin, group_id)
    return None if stated is None else stated.limit


async def stated_delivery_count_limit(
    admin: ShareGroupAdmin, group_id: str
) -> StatedDeliveryCountLimit | None:
    """:func:`delivery_count_limit` with the config that stated it; the one lookup of the limit."""
    client = admin.client
    metadata = await client.metadata([])
    # Lowest id first, as before; a broker that is down or silent is passed over for the
    # next: the limit only scales the strips, so it never holds a refresh for long.
    for node in sorted(metadata.brokers):
        try:
            async with asyncio.timeout(LIMIT_LOOKUP_S):
                return await _delivery_count_limit_from(client, group_id, node)
        except IncompatibleBroker:
            return None
        except (ConnectionFailed, TimedOut, TimeoutError):
            continue
    return None


#: How long one broker may take to answer the delivery-limit lookup before the next is asked.
LIMIT_LOOKUP_S: Final = 2.0
#: Groups per DescribeConfigs when the limits of many are looked up at once.
LIMITS_PER_REQUEST: Final = 250


async def stated_delivery_count_limits(
    admin: ShareGroupAdmin, group_ids: Sequence[str]
) -> dict[str, StatedDeliveryCountLimit | None]:
    """:func:`stated_delivery_count_limit` of many groups: ``LIMITS_PER_REQUEST`` groups
    per DescribeConfigs, side by side, each batch passed over to the next broker as one
    group's lookup is."""
    wanted = list(dict.fromkeys(group_ids))
    if not wanted:
        return {}
    client = admin.client
    metadata = await client.metadata([])
    nodes = sorted(metadata.brokers)

    async def batch(groups: list[str]) -> dict[str, StatedDeliveryCountLimit | None]:
        for node in nodes:
            try:
                async with asyncio.timeout(LIMIT_LOOKUP_S):
                    return await _delivery_count_limits_from(client, groups, node)
            except IncompatibleBroker:
                break
            except (ConnectionFailed, TimedOut, TimeoutError):
                continue
        return dict.fromkeys(groups)

    answers = await asyncio.gather(
        *(
            batch(wanted[start : start + LIMITS_PER_REQUEST])
            for start in range(0, len(wanted), LIMITS_PER_REQUEST)
        )
    )
    return {group_id: limit for answer in answers for group_id, limit in answer.items()}


async def _delivery_count_limit_from(
    client: KafkaClient, group_id: str, node: int
) -> StatedDeliveryCountLimit | None:
    """The limit as broker ``node`` states it (DescribeConfigs of the group and the broker)."""
    return (await _delivery_count_limits_from(client, [group_id], node))[group_id]


async def _delivery_count_limits_from(
    client: KafkaClient, group_ids: Sequence[str], node: int
) -> dict[str, StatedDeliveryCountLimit | None]:
    """Each group's limit as broker ``node`` states it: one DescribeConfigs of the groups
    and the broker; a group's own setting, else the broker's."""
    _, response = await client.request(
        DESCRIBE_CONFIGS,
        {
            "resources": [
                *(
                    {
                        "resource_type": GROUP_RESOURCE,
                        "resource_name": group_id,
                        "configuration_keys": [_GROUP_LIMIT],
                    }
                    for group_id in group_ids
                ),
                {
                    "resource_type": BROKER_RESOURCE,
                    "resource_name": str(node),
                    "configuration_keys": [_BROKER_LIMIT],
                },
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
        node=node,
    )
    # Each resource's result by (type, name), the first of each as
    # group_configs.describe_result_for finds it: looked up one by one
    # there, a batch of groups cost its square.
    results: dict[tuple[int, str], Any] = {}
    for result in response.results:
        results.setdefault((int(result.resource_type), result.resource_name), result)
    broker = _stated_limit(
        results.get((BROKER_RESOURCE, str(node))), BROKER_RESOURCE, _BROKER_LIMIT
    )
    return {
        group_id: _stated_limit(
            results.get((GROUP_RESOURCE, group_id)), GROUP_RESOURCE, _GROUP_LIMIT
        )
        or broker
        for group_id in group_ids
    }


def _stated_limit(
    result: Any | None, resource_type: int, key: str
) -> StatedDeliveryCountLimit | None:
    """The limit a resource's result states (None for a missing or failed result)."""
    if result is None or int(result.error_code) != 0:
        return None
    for config in result.configs:
        text = config.value
        # From 4.3 a group's DescribeConfigs lists the key even when the group never set
        # it, carrying the broker's value: only the group's own setting is the group's.
        if resource_type == GROUP_RESOURCE and config.config_source != ConfigSource.GROUP_CONFIG:
            continue
        if config.name == key and text is not None and text.strip().isdigit():
            kind = "group" if resource_type == GROUP_RESOURCE else "broker"
            return StatedDeliveryCountLimit(int(text.strip()), f"{kind} config {key}")
    return None


async def _no_end_offsets() -> EndOffsets:
    return EndOffsets()


#: The state read's share of what is left, when the service was given no state timeout.
_HELD_STATE_SHARE: Final = 0.75


def _offset_from_state(
    tp: TopicPartition, state: SharePartitionState, ends: EndOffsets
) -> SharePartitionOffset:
    """A share-partition's offsets from its persisted state and its log end offset: the
    lag by the broker's own rule (``share_partition_lag``), marked as kshare's; where that
    rule knows none (a 4.2 reset's count -1), kshare's bound, as describe gives it."""
    end = ends.get(tp)
    start = state.start_offset if state.start_offset >= 0 else None
    by_rule = (
        None
        if end is None
        else share_partition_lag(end, state.start_offset, state.delivery_complete_count)
    )
    lag, source = (by_rule, "state") if by_rule is not None else lag_and_source(start, None, end)
    return SharePartitionOffset(
        tp.topic,
        tp.partition,
        start,
        leader_epoch=state.leader_epoch if state.leader_epoch >= 0 else None,
        lag=lag,
        lag_source=source,
        end_offset=end,
        end_offset_error=ends.failures.get(tp),
    )


def _held_note(
    description: GroupDescription,
    held: GroupFailure,
    read: StateTopicRead | None,
    window_note: str | None,
) -> str:
    """Why the offsets are the state topic's, naming the silent broker: one line."""
    coordinator = description.coordinator
    holder = (
        "the group coordinator"
        if coordinator is None
        else f"the group coordinator broker {coordinator.node_id} "
        f"({coordinator.host}:{coordinator.port})"
    )
    if read is None:
        return (
            f"{holder} held DescribeShareGroupOffsets ({held.error}) and "
            f"{SHARE_STATE_TOPIC} could not be read either ({window_note}): "
            "no share-partition can be shown"
        )
    instead = (
        f"start offsets and lag read from {SHARE_STATE_TOPIC} instead (lag computed by kshare)"
    )
    if not read.silent:
        return f"{holder} held DescribeShareGroupOffsets ({held.error}): {instead}"
    count = len(read.silent)
    if count == 1:
        where = f"state partition {next(iter(read.silent))}"
    else:
        where = f"{count} state partitions"
    if read.silent_leaders:
        silent = " and ".join(read.silent_leaders)
        why = f"while {silent} did not answer"
        where = f"{where} led by {silent}"
    else:
        why = f"while {where} had no leader"
    return (
        f"{holder} held DescribeShareGroupOffsets {why}: {instead}; "
        f"share-partitions whose state lives on {where} are missing or unknown"
    )


def _nothing_unread(key: SharePartitionKey) -> str | None:
    """A source that reads every share-partition or fails as a whole leaves none unread."""
    return None


def _partition(
    offset: SharePartitionOffset,
    topic_id: uuid.UUID | None,
    group_id: str,
    states: Mapping[SharePartitionKey, SharePartitionState] | None,
    unread: Callable[[SharePartitionKey], str | None],
) -> PartitionInflight:
    window = None
    window_error = None
    if states is not None and topic_id is not None:
        key = SharePartitionKey(group_id, topic_id, offset.partition)
        window_error = unread(key)
        state = states.get(key)
        if state is not None:
            window = InFlightWindow.from_state(state)
    return PartitionInflight(
        topic=offset.topic,
        partition=offset.partition,
        topic_id=topic_id,
        start_offset=offset.start_offset,
        end_offset=offset.end_offset,
        lag=offset.lag,
        lag_source=offset.lag_source,
        window=window,
        error=offset.error,
        window_error=window_error,
        end_offset_error=offset.end_offset_error,
    )
