"""Where the dashboard's data comes from: one protocol, and its live implementation.

The screens only ever await a ``DashboardSource``, from Textual workers, so a
test (or a recorded scenario) can stand in for the cluster and the screens
never know. ``LiveSource`` is the real one, a thin adapter over the services
layer (``services.dashboard``, over one ``Session``): it knows nothing of how
to connect, only what the screens ask.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kshare_cli.services.dashboard import (
    ClusterFacts,
    ConsumedRecord,
    DeadLetterEnds,
    GroupDeadLetterQueue,
    GroupInflight,
    GroupsOverview,
)

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings
    from kshare_cli.services.dashboard import StateSource

__all__ = [
    "ClosableSource",
    "ClusterFactsSource",
    "DashboardSource",
    "DeadLetterEndsSource",
    "DeadLetterSource",
    "LiveSource",
    "TimeLagSource",
]


class DashboardSource(Protocol):
    """What the dashboard asks; every call may take long or fail, never on the UI thread."""

    async def overview(self) -> GroupsOverview: ...

    async def group(self, group_id: str) -> GroupInflight: ...

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]: ...


@runtime_checkable
class TimeLagSource(Protocol):
    """A source that reads the timestamps of the oldest unacknowledged records (the time
    lag's; the screen ages them with its clock): keyed (group, topic, partition), None
    where nothing waits or the record was not read in time. A source without it leaves
    the time lag unknown."""

    async def oldest_unacknowledged(
        self, group: GroupInflight
    ) -> Mapping[tuple[str, str, int], int | None]: ...


@runtime_checkable
class DeadLetterSource(Protocol):
    """A source that reads a group's dead-letter queue (Kafka 4.4): its topic and the dead
    letters the broker wrote there, by reason. A source without it shows no DLQ line."""

    async def dead_letter_queue(self, group_id: str) -> GroupDeadLetterQueue: ...


@runtime_checkable
class DeadLetterEndsSource(Protocol):
    """A source that reads the log end offsets of the listed groups' DLQ topics in one go
    (Kafka 4.4), so the groups screen can mark a group whose DLQ grew. A source without
    it marks none."""

    async def dead_letter_ends(self, group_ids: Sequence[str]) -> DeadLetterEnds: ...


@runtime_checkable
class ClusterFactsSource(Protocol):
    """A source that knows its cluster's facts (the Kafka line, ``share.version``), for the
    groups screen's header. A source without it shows none."""

    async def cluster_facts(self) -> ClusterFacts: ...


@runtime_checkable
class ClosableSource(Protocol):
    """A source holding connections; the app closes it when it exits."""

    async def aclose(self) -> None: ...


class LiveSource:
    """The cluster, through ``services.dashboard.DashboardReads`` over one ``Session``.

    The session's client is connected lazily on the first call, inside Textual's
    loop (a failed connection is tried again on the next call). ``timeout_s``
    bounds every call, the state-topic read inside it too. ``state`` replaces the
    state-topic tailer (a test's stand-in, or None with ``read_state`` False to
    leave the windows out); the source closes only a tailer it made.
    """

    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        timeout_s: float = 30.0,
        read_state: bool = True,
        state: StateSource | None = None,
        peek_timeout_s: float = 5.0,
    ) -> None:
        from kshare_cli.services.dashboard import DashboardReads
        from kshare_cli.services.session import Session

        self._reads = DashboardReads(
            Session(settings, timeout_s),
            read_state=read_state,
            state=state,
            peek_timeout_s=peek_timeout_s,
        )

    async def overview(self) -> GroupsOverview:
        return await self._reads.overview()

    async def group(self, group_id: str) -> GroupInflight:
        return await self._reads.group(group_id)

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        return await self._reads.peek(topic, partition, offset, limit)

    async def oldest_unacknowledged(
        self, group: GroupInflight
    ) -> Mapping[tuple[str, str, int], int | None]:
        return await self._reads.oldest_unacknowledged(group)

    async def dead_letter_queue(self, group_id: str) -> GroupDeadLetterQueue:
        return await self._reads.dead_letter_queue(group_id)

    async def dead_letter_ends(self, group_ids: Sequence[str]) -> DeadLetterEnds:
        return await self._reads.dead_letter_ends(group_ids)

    async def cluster_facts(self) -> ClusterFacts:
        return await self._reads.cluster_facts()

    async def aclose(self) -> None:
        await self._reads.aclose()
