"""What the dashboard asks of the cluster: the groups, one group, a peek at records.

The dashboard lives for hours inside Textual's event loop, unlike a command: it
keeps one ``Session`` client, connected on its first call inside that loop (a
failed connection is tried again on the next call), and bounds each call on its
own, so a broker that stops answering becomes an error beside the last data,
never a worker that waits forever. A refresh of the groups is one operation of
the client under one deadline, ``REFRESH_BOUND_S`` (or ``--timeout`` when
shorter): listing, describing and reading offsets share it, so a silent broker
is given up after half of it (its fan-out branch's share) while the healthy
brokers' answers are kept, instead of each step waiting out a share of
``--timeout`` of its own and the sum being thrown away by the call's bound.

``KnownGroups`` remembers what earlier refreshes read: a group that a refresh
could not read (its coordinator did not list its groups, or it could not be
described) keeps its last figures, marked stale since when they were read and
why, instead of vanishing from the screen. Groups, offsets and lag come from the admin
RPCs, windows from a state-topic tailer kept across refreshes (both through
``InflightService``, as ``kshare inflight`` reads them), and the peek from a
plain consumer that acquires nothing. The cluster's facts (the Kafka line and
``share.version`` the groups screen's header shows) are looked up once per
dashboard session, from the features the client's ApiVersions carried.

The models the screens draw are re-exported here: ``tui/`` reaches the admin
and consumer layers only through this service.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from kshare_cli.admin.cluster_facts import ClusterFacts
from kshare_cli.admin.dead_letter_queues import GroupDeadLetterQueue
from kshare_cli.admin.inflight import GroupInflight, GroupsOverview, GroupSummary, PartitionInflight
from kshare_cli.admin.models import BrokerFailure, GroupFailure
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.errors import TimedOut
from kshare_cli.services.dead_letters import DeadLetterEnds
from kshare_cli.services.inflight import InflightService
from kshare_cli.services.session import BACKSTOP_S, Session
from kshare_cli.state.sources import StateSource, TailingStateSource

if TYPE_CHECKING:
    from kshare_cli.services.dead_letters import KeptDeadLetterQueues

__all__ = [
    "REFRESH_BOUND_S",
    "BrokerFailure",
    "BrokersUnlisted",
    "ClusterFacts",
    "ConsumedRecord",
    "DashboardReads",
    "DeadLetterEnds",
    "GroupDeadLetterQueue",
    "GroupFailure",
    "GroupInflight",
    "GroupSummary",
    "GroupsOverview",
    "GroupsView",
    "KnownGroups",
    "PartitionInflight",
    "StaleGroup",
    "StateSource",
    "TailingStateSource",
]

#: The most one refresh of the groups may take (``--timeout`` when shorter). A silent
#: broker's branch of a fan-out gets half of what is left, so it is given up after
#: about 5 s and the healthy groups are shown; a dashboard refreshing every 2 s must
#: not wait out a 30 s ``--timeout`` for one broker.
REFRESH_BOUND_S: Final = 10.0
#: The most one reading of the groups' DLQ end offsets may take (``--timeout`` when
#: shorter): a DLQ partition whose leader is silent is given up, not waited for.
DLQ_ENDS_BOUND_S: Final = 5.0

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BrokersUnlisted:
    """Brokers that did not list their groups in one refresh, and the known groups it hid.

    ``groups`` are the groups read earlier that this listing lacks: with one broker
    failing they are its own (a group is listed by its coordinator); with several,
    they are theirs together, as nothing says which coordinated which.
    """

    brokers: tuple[BrokerFailure, ...]
    groups: tuple[str, ...] = ()

    @property
    def who(self) -> str:
        """``broker 2 (HOST:PORT)``, or ``brokers 1 (HOST:PORT), 2 (HOST:PORT)``."""
        addresses = [f"{each.node_id} ({each.host}:{each.port})" for each in self.brokers]
        noun = "broker" if len(addresses) == 1 else "brokers"
        return f"{noun} {', '.join(addresses)}"

    def __str__(self) -> str:
        one = len(self.brokers) == 1
        head = f"{self.who} did not list {'its' if one else 'their'} groups"
        count = len(self.groups)
        if not count:
            return f"{head}: any {'it coordinates' if one else 'they coordinate'} missing"
        return f"{head}: {count} group{'' if count == 1 else 's'} unknown"


@dataclass(frozen=True, slots=True)
class StaleGroup:
    """A group this refresh could not read: its last figures, when they were read, and why."""

    summary: GroupSummary
    read_at: float
    reason: str


@dataclass(frozen=True, slots=True)
class GroupsView:
    """What the groups screen shows: this refresh's answer, and the groups it left unread.

    ``stale`` keeps the last figures of every known group the refresh could not read;
    ``unlisted`` names the brokers that did not list their groups (None when all did).
    """

    overview: GroupsOverview
    stale: tuple[StaleGroup, ...] = ()
    unlisted: BrokersUnlisted | None = None

    @property
    def groups(self) -> tuple[GroupSummary, ...]:
        """The groups read by this refresh (fresh)."""
        return self.overview.groups

    @property
    def failures(self) -> tuple[BrokerFailure | GroupFailure, ...]:
        return self.overview.failures

    @property
    def count(self) -> int:
        return len(self.overview.groups) + len(self.stale)


class KnownGroups:
    """Every group read so far, with when: so an unreadable group stays on screen, stale.

    A group absent from a listing that every broker answered was deleted (or moved
    and listed by its new coordinator): it is forgotten. One absent while a broker
    did not answer may be that broker's, so it is kept, stale, naming the broker;
    one listed but not described keeps its figures with the describe's error.
    Recovery needs nothing: the next refresh that reads a group makes it fresh.
    """

    def __init__(self) -> None:
        #: Each group's last summary and when it was read.
        self._read: dict[str, tuple[GroupSummary, float]] = {}

    def merge(self, overview: GroupsOverview, at: float) -> GroupsView:
        """This refresh's answer at ``at`` (the dashboard clock), with the known groups it lacks."""
        fresh = {group.group_id for group in overview.groups}
        brokers = tuple(
            failure for failure in overview.failures if isinstance(failure, BrokerFailure)
        )
        undescribed = {
            failure.group_id: str(failure)
            for failure in overview.failures
            if isinstance(failure, GroupFailure)
        }
        unlisted = BrokersUnlisted(brokers) if brokers else None
        stale: list[StaleGroup] = []
        hidden: list[str] = []
        for group_id, (summary, read_at) in sorted(self._read.items()):
            if group_id in fresh:
                continue
            if group_id in undescribed:
                stale.append(StaleGroup(summary, read_at, undescribed[group_id]))
            elif unlisted is not None:
                stale.append(StaleGroup(summary, read_at, f"{unlisted.who} did not list it"))
                hidden.append(group_id)
            else:
                del self._read[group_id]
        for group in overview.groups:
            self._read[group.group_id] = (group, at)
        if unlisted is not None:
            unlisted = BrokersUnlisted(brokers, tuple(hidden))
        return GroupsView(overview, tuple(stale), unlisted)


class DashboardReads:
    """The dashboard's calls over one long-lived ``Session``.

    ``state`` replaces the state-topic tailer (a test's stand-in); with
    ``read_state`` False and no ``state`` the windows are left out. The session
    closes only a tailer it made. ``peek_timeout_s`` bounds a peek (never more
    than the session's timeout).
    """

    def __init__(
        self,
        session: Session,
        *,
        read_state: bool = True,
        state: StateSource | None = None,
        peek_timeout_s: float = 5.0,
    ) -> None:
        self._session = session
        self._read_state = read_state
        self._given_state = state
        self._tailer: TailingStateSource | None = None
        self._peek_timeout_s = min(peek_timeout_s, session.timeout_s)
        self._service: InflightService | None = None
        self._connecting: asyncio.Lock | None = None
        self._dead_letters: KeptDeadLetterQueues | None = None

    async def _connected(self) -> InflightService:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._service is None:
                admin = await self._session.kept_admin()
                state = self._given_state
                if state is None and self._read_state:
                    if self._tailer is None:
                        self._tailer = self._session.tailing_state()
                    state = self._tailer
                self._service = self._session.inflight(admin, state)
            return self._service

    @property
    def refresh_bound_s(self) -> float:
        """The most one refresh of the groups may take."""
        return min(REFRESH_BOUND_S, self._session.timeout_s)

    async def overview(self) -> GroupsOverview:
        """Every group, under one deadline of ``refresh_bound_s`` shared by its steps.

        The client's deadline ends a silent broker's part as a failure before it (the
        healthy groups' answers stand); the session's bound stays only as a backstop.
        """
        service = await self._connected()
        what = "listing share groups"
        client = service.admin.client

        async def bounded() -> GroupsOverview:
            async with client.bounded(what, self.refresh_bound_s):
                return await service.overview()

        return await _backstopped(bounded(), what, self.refresh_bound_s)

    async def group(self, group_id: str) -> GroupInflight:
        """One group, its steps under one deadline of the session's timeout (as a command's)."""
        service = await self._connected()
        what = f"share group {group_id!r}"
        client = service.admin.client

        async def bounded() -> GroupInflight:
            async with client.bounded(what):
                return await service.group(group_id)

        return await _backstopped(bounded(), what, self._session.timeout_s)

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        """The next records from ``offset``, read with a plain consumer (no group, no
        acquisition); confluent-kafka loads only on the first peek."""
        from kshare_cli.consumer.peek import peek_records

        config = self._session.settings.confluent_config()
        return await asyncio.to_thread(
            peek_records, config, topic, partition, offset, limit, self._peek_timeout_s
        )

    async def oldest_unacknowledged(
        self, group: GroupInflight
    ) -> Mapping[tuple[str, str, int], int | None]:
        """One peek per share-partition with lag (``services.time_lag``), within the
        peek timeout, in a thread."""
        from kshare_cli.services.time_lag import oldest_unacknowledged_timestamps

        config = self._session.settings.confluent_config()
        return await self._session.within(
            asyncio.to_thread(
                oldest_unacknowledged_timestamps, group, config, self._peek_timeout_s
            ),
            f"the time lag of share group {group.group_id!r}",
        )

    async def cluster_facts(self) -> ClusterFacts:
        """The cluster's Kafka line and ``share.version``, looked up once per dashboard
        session (the session keeps them): the features of the client's ApiVersions,
        no request of their own."""
        service = await self._connected()
        known = self._session.known_cluster_facts
        if known is not None:
            return known
        return await self._session.cluster_facts(service.admin, configs=False)

    async def dead_letter_queue(self, group_id: str) -> GroupDeadLetterQueue:
        """The group's DLQ (Kafka 4.4): its topic and the dead letters the broker wrote
        there for it, by reason. The DLQ topics' readers are kept for the dashboard's life,
        so each lookup reads only what was written since the last one; a lookup is bounded
        by the peek timeout (a big topic's first read goes on at the next lookup)."""
        from kshare_cli.services.dead_letters import KeptDeadLetterQueues

        service = await self._connected()
        if self._dead_letters is None:
            self._dead_letters = KeptDeadLetterQueues(
                self._session, stopped_early="the lookup's time ran out (the next goes on)"
            )
        kept = self._dead_letters
        queues = await self._session.within(
            kept.read(service.admin, [group_id], self._peek_timeout_s),
            f"the dead-letter queue of share group {group_id!r}",
        )
        return queues[group_id]

    async def dead_letter_ends(self, group_ids: Sequence[str]) -> DeadLetterEnds:
        """The log end offsets of the groups' DLQ topics (Kafka 4.4), for the groups screen
        to tell which DLQ grew: one DescribeConfigs, one ListOffsets per partition leader,
        under one deadline of ``DLQ_ENDS_BOUND_S``; nothing asked of a cluster without
        the DLQ."""
        from kshare_cli.services.dead_letters import read_dead_letter_ends

        service = await self._connected()
        what = "the dead-letter queues' end offsets"
        client = service.admin.client
        bound_s = min(DLQ_ENDS_BOUND_S, self._session.timeout_s)

        async def bounded() -> DeadLetterEnds:
            async with client.bounded(what, bound_s):
                return await read_dead_letter_ends(self._session, service.admin, group_ids)

        return await _backstopped(bounded(), what, bound_s)

    async def aclose(self) -> None:
        self._service = None
        self._tailer = None
        kept, self._dead_letters = self._dead_letters, None
        if kept is not None:
            await asyncio.to_thread(kept.close)
        await self._session.aclose()


async def _backstopped(work: Coroutine[Any, Any, T], what: str, bound_s: float) -> T:
    """``work`` runs under the client's own deadline of ``bound_s``, which keeps partial
    answers; this outer bound fires only a moment after it, should that deadline fail."""
    try:
        return await asyncio.wait_for(work, bound_s + BACKSTOP_S)
    except TimeoutError:
        raise TimedOut(f"{what} did not answer within {bound_s:g} s") from None
