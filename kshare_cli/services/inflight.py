"""The in-flight view of share groups: admin RPCs for offsets and lag, the state topic for windows.

One service (``InflightService``) answers ``kshare inflight``, the dashboard, the
exporter, ``health`` and a reset's plan, so a window is read, joined to its
share-partition and labelled the same way everywhere. Two sources are joined, and
they fail independently:

- the admin RPCs (ShareGroupDescribe, DescribeShareGroupOffsets, ListOffsets,
  Metadata) give the share-partitions, their start offsets, end offsets and lag.
  They need only DESCRIBE on the group and the topics;
- ``__share_group_state`` gives each share-partition's persisted in-flight window
  (``state.sources``). Reading it needs READ on an internal topic, which many
  operators do not have. When it cannot be read the answer still stands, without
  windows, and ``GroupInflight.window_note`` says why (``StateTopicUnavailable.reason``).

The state topic names topics by id and the admin RPCs by name; the join goes
through the cluster metadata (Metadata carries both). Reading the state topic is
blocking (confluent-kafka), so it runs in a worker thread (``asyncio.to_thread``)
beside the admin RPCs rather than after them.

``kshare inflight`` (``inflight``) reads only the state partitions its group's
share-partitions live in (``Session.placed_state``), given the session's share of
the timeout. When the group coordinator holds DescribeShareGroupOffsets (Kafka
does while a share coordinator it reads from is stopped or hung, for minutes) but
still describes the group, the command shows what can be known, which Kafka's
tool does not: the group's state and members, and its share-partitions from
``__share_group_state`` (every state partition read, each silent one given up on
alone) with their log end offsets and kshare's lag, ``offsets_note`` naming the
silent broker (``InflightService(offsets_when_held=True)``). ``GroupInflight`` and
its parts are re-exported for the command and the dashboard, which reach the admin
layer only through services.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kio.schema.errors import ErrorCode

from kshare_cli.admin.inflight import (
    GroupInflight,
    GroupNotFound,
    GroupsOverview,
    GroupSummary,
    GroupUnavailable,
    PartitionInflight,
    group_error,
)
from kshare_cli.admin.models import (
    BrokerFailure,
    EndOffsets,
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupOffsets,
    ShareGroupOffsets,
    SharePartitionOffset,
    TopicPartition,
)
from kshare_cli.admin.share_groups import EARLIEST_TIMESTAMP, lag_and_source
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.delivery_limits import (
    delivery_count_limit,
    stated_delivery_count_limits,
)
from kshare_cli.services.session import Session
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.state.sources import (
    NamesUnread,
    PlacedStateSource,
    StateSource,
    StateTopicRead,
    TailingStateSource,
)
from kshare_cli.state.tailer import StateTopicUnavailable
from kshare_cli.state.window import InFlightWindow

if TYPE_CHECKING:
    from kshare_cli.admin.share_groups import ShareGroupAdmin
    from kshare_cli.wire.cluster import ClusterMetadata

__all__ = [
    "GroupInflight",
    "GroupNotFound",
    "GroupSummary",
    "GroupUnavailable",
    "GroupsOverview",
    "InflightService",
    "PartitionInflight",
    "StateSource",
    "TailingStateSource",
    "inflight",
]

#: Up to this many groups, ``InflightService.groups`` reads each on its own, side by side,
#: as ``group`` does. Read together, the groups wait for each other phase by phase (the
#: state read, then the offsets), and a coordinator that holds one group's offsets while
#: a broker is down had its connection replaced under the others' requests: with a broker
#: stopped or hung, ``kshare health G1 G2 G3`` went past its 10 s --timeout and
#: ``health --all-groups`` named a closed connection instead of the silent broker. Reading
#: together is for the exporter's thousands, where one request per group costs most of a
#: refresh; its fault handling is not yet the per-group reads' (a gap, named in the notes).
READ_ALONE_UP_TO: Final = 1000

_ZERO_UUID: Final = uuid.UUID(int=0)


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

    @property
    def admin(self) -> ShareGroupAdmin:
        return self._admin

    @property
    def reads_state(self) -> bool:
        """Whether windows are read at all (a state source was given)."""
        return self._state is not None

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
                raise group_error(result)
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

    async def groups(
        self, group_ids: Sequence[str], *, log_start_offsets: bool = False
    ) -> dict[str, GroupInflight | GroupUnavailable]:
        """Many groups' share-partitions with windows, each group's answer or failure.

        What :meth:`group` gives each of them, read together: one state read for all,
        the descriptions in one ShareGroupDescribe per coordinator, the end offsets
        (and with ``log_start_offsets``, the log start offsets of every share-partition
        read) in one ListOffsets per leader, the topic ids in one Metadata and the
        delivery limits in a few DescribeConfigs (read one by one, 10,000 groups cost
        some 50,000 requests and most of an exporter refresh's CPU).
        DescribeShareGroupOffsets stays one request per group (Kafka serves a batch of
        groups one after the other). A group whose offsets its coordinator held, and
        every group of a source that reads by placement, is read on its own with
        :meth:`group`; so is every group of a set of at most ``READ_ALONE_UP_TO``.
        """
        wanted = list(dict.fromkeys(group_ids))
        if len(wanted) <= READ_ALONE_UP_TO or isinstance(self._state, PlacedStateSource):
            read = dict(zip(wanted, await asyncio.gather(*map(self._one, wanted)), strict=True))
            return await self._with_log_starts(read) if log_start_offsets else read
        admin = self._admin
        # The state topic first, the offsets after, as in ``group``.
        states, note, unread = await self._states_of(wanted)
        descriptions, offsets, limits = await asyncio.gather(
            admin.describe_groups(wanted),
            admin.list_share_partition_offsets(wanted),
            stated_delivery_count_limits(admin, wanted),
        )
        found, read, held = self._sorted_out(wanted, descriptions, offsets)
        # A held group is read from the state topic with the failure in hand: asking its
        # coordinator again (``group``) waited out a second hold, and with it --timeout.
        rereads = (self._held(group_id, failure) for group_id, failure in held.items())
        read.update(zip(held, await asyncio.gather(*rereads), strict=True))
        rows = [row for _, listed in found.values() for row in listed.partitions]
        (topic_ids, _), log_starts = await asyncio.gather(
            self._topics(sorted({row.topic for row in rows})),
            self._log_starts_of(rows, [read[group_id] for group_id in held], log_start_offsets),
        )
        for group_id, (description, listed) in found.items():
            partitions = tuple(
                _partition(
                    row,
                    topic_ids.get(row.topic),
                    group_id,
                    states,
                    unread,
                    log_starts.get(TopicPartition(row.topic, row.partition)),
                )
                for row in listed.partitions
            )
            stated = limits.get(group_id)
            limit = None if stated is None else stated.limit
            read[group_id] = GroupInflight(group_id, description, partitions, note, limit, ())
        for group_id in held:
            answer = read[group_id]
            if log_start_offsets and isinstance(answer, GroupInflight):
                read[group_id] = answer.with_log_start_offsets(log_starts)
        return {group_id: read[group_id] for group_id in wanted}

    def _sorted_out(
        self, wanted: Sequence[str], descriptions: GroupDescriptions, offsets: ShareGroupOffsets
    ) -> tuple[
        dict[str, tuple[GroupDescription, GroupOffsets]],
        dict[str, GroupInflight | GroupUnavailable],
        dict[str, GroupFailure],
    ]:
        """The groups read whole, the groups failed (each with its error), and the groups
        whose offsets their coordinator may have held (to read from the state topic)."""
        found: dict[str, tuple[GroupDescription, GroupOffsets]] = {}
        failed: dict[str, GroupInflight | GroupUnavailable] = {}
        held: dict[str, GroupFailure] = {}
        # Indexed once: the results' own ``get`` scans them (10,000 groups: 10^8 steps).
        described_by_id = {each.group_id: each for each in descriptions}
        listed_by_id = {each.group_id: each for each in offsets}
        for group_id in wanted:
            described, listed = described_by_id.get(group_id), listed_by_id.get(group_id)
            if (
                isinstance(listed, GroupFailure)
                and isinstance(described, GroupDescription)
                and self._may_be_held(listed)
            ):
                held[group_id] = listed
            elif isinstance(described, GroupFailure):
                failed[group_id] = group_error(described)
            elif isinstance(listed, GroupFailure):
                failed[group_id] = group_error(listed)
            else:
                assert isinstance(described, GroupDescription)
                assert isinstance(listed, GroupOffsets)
                found[group_id] = (described, listed)
        return found, failed, held

    async def _log_starts_of(
        self,
        rows: Sequence[SharePartitionOffset],
        others: Sequence[GroupInflight | GroupUnavailable],
        wanted: bool,
    ) -> Mapping[TopicPartition, int]:
        """The log start offsets of every share-partition of ``rows`` and of the groups
        ``others``, in one ListOffsets per leader (none unless ``wanted``)."""
        partitions = {TopicPartition(row.topic, row.partition) for row in rows}
        for other in others:
            if isinstance(other, GroupInflight):
                partitions.update(TopicPartition(p.topic, p.partition) for p in other.partitions)
        if not wanted or not partitions:
            return {}
        return (await self._admin.log_offsets(partitions, EARLIEST_TIMESTAMP)).offsets

    async def _with_log_starts(
        self, read: dict[str, GroupInflight | GroupUnavailable]
    ) -> dict[str, GroupInflight | GroupUnavailable]:
        log_starts = await self._log_starts_of((), list(read.values()), True)
        return {
            group_id: answer.with_log_start_offsets(log_starts)
            if isinstance(answer, GroupInflight)
            else answer
            for group_id, answer in read.items()
        }

    async def _held(self, group_id: str, failure: GroupFailure) -> GroupInflight | GroupUnavailable:
        """A group whose offsets its coordinator held, from the state topic; its failure
        as an answer."""
        try:
            return await self._from_state_topic(group_id, (), failure, False)
        except GroupUnavailable as unavailable:
            return unavailable

    async def _one(self, group_id: str) -> GroupInflight | GroupUnavailable:
        """:meth:`group` without the log start offsets, its failure as an answer."""
        try:
            return await self.group(group_id, log_start_offsets=False)
        except GroupUnavailable as unavailable:
            return unavailable

    async def _states_of(
        self, group_ids: Collection[str]
    ) -> tuple[
        Mapping[SharePartitionKey, SharePartitionState] | None,
        str | None,
        Callable[[SharePartitionKey], str | None],
    ]:
        """The groups' states in one read of the whole-topic source (see ``_states``)."""
        source = self._state
        if source is None:
            return None, None, _nothing_unread
        timeout_s = self._state_timeout_s or self._admin.client.timeout_s
        try:
            states = await asyncio.to_thread(source.refresh, group_ids, timeout_s)
        except StateTopicUnavailable as unavailable:
            return None, unavailable.reason, _nothing_unread
        if isinstance(source, NamesUnread):
            return states, None, source.unread_reason
        return states, None, _nothing_unread

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
        offsets' failure is raised.
        """
        admin = self._admin
        described = (await admin.describe_groups([group_id])).get(group_id)
        if not isinstance(described, GroupDescription):
            raise group_error(held)
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
        marked = _marked_unread(described, found, wanted_topics, read, metadata, ids)
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
            raise group_error(listed)
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
        if placed is None or not isinstance(source, PlacedStateSource):
            return await self._states_of([group_id])
        timeout_s = self._state_timeout_s or self._admin.client.timeout_s
        try:
            read, unread = await asyncio.to_thread(source.read_placed, placed, timeout_s)
        except StateTopicUnavailable as unavailable:
            return None, unavailable.reason, _nothing_unread
        return read, None, unread.get

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

    async def _delivery_count_limit(self, group_id: str) -> int | None:
        return await delivery_count_limit(self._admin, group_id)


async def inflight(
    settings: ConnectionSettings, group_id: str, topics: Sequence[str], timeout_s: float
) -> GroupInflight:
    with Session(settings, timeout_s) as session:
        source = session.placed_state([group_id])

        async def work() -> GroupInflight:
            async with session.admin() as admin:
                service = InflightService(
                    admin,
                    source,
                    state_timeout_s=session.state_timeout_s,
                    offsets_when_held=True,
                )
                return await service.group(group_id, topics)

        return await session.bounded(work(), "reading the in-flight windows")


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


def _marked_unread(
    described: GroupDescription,
    found: Mapping[TopicPartition, object],
    wanted_topics: Collection[str],
    read: StateTopicRead | None,
    metadata: ClusterMetadata,
    ids: Mapping[str, uuid.UUID],
) -> dict[TopicPartition, str]:
    """Share-partitions whose state may sit on a silent state partition, each with why:
    those of the topics the group is known to use (its states elsewhere, its members'
    subscriptions and assignments, the topics asked for) are marked, not dropped."""
    marked: dict[TopicPartition, str] = {}
    if read is None or not read.silent:
        return marked
    group_id = described.group_id
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
    return marked


def _nothing_unread(key: SharePartitionKey) -> str | None:
    """A source that reads every share-partition or fails as a whole leaves none unread."""
    return None


def _partition(
    offset: SharePartitionOffset,
    topic_id: uuid.UUID | None,
    group_id: str,
    states: Mapping[SharePartitionKey, SharePartitionState] | None,
    unread: Callable[[SharePartitionKey], str | None],
    log_start_offset: int | None = None,
) -> PartitionInflight:
    """The share-partition joined to its window; given its log start offset, as
    ``PartitionInflight.with_log_start_offset`` makes it, built once."""
    window = None
    window_error = None
    if states is not None and topic_id is not None:
        key = SharePartitionKey(group_id, topic_id, offset.partition)
        window_error = unread(key)
        state = states.get(key)
        if state is not None:
            window = InFlightWindow.from_state(state)
            if log_start_offset is not None:
                window = window.after_retention(log_start_offset)
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
        log_start_offset=log_start_offset,
    )
