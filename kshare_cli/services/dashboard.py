"""What the dashboard asks of the cluster: the groups, one group, a peek at records.

The dashboard lives for hours inside Textual's event loop, unlike a command: it
keeps one ``Session`` client, connected on its first call inside that loop (a
failed connection is tried again on the next call), and bounds each call on its
own, so a broker that stops answering becomes an error beside the last data,
never a worker that waits forever. Groups, offsets and lag come from the admin
RPCs, windows from a state-topic tailer kept across refreshes (both through
``InflightService``, as ``kshare inflight`` reads them), and the peek from a
plain consumer that acquires nothing.

The models the screens draw are re-exported here: ``tui/`` reaches the admin
and consumer layers only through this service.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from kshare_cli.admin.inflight import (
    GroupInflight,
    GroupsOverview,
    GroupSummary,
    InflightService,
    PartitionInflight,
    StateSource,
    TailingStateSource,
)
from kshare_cli.admin.models import BrokerFailure
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.services.session import Session

__all__ = [
    "BrokerFailure",
    "ConsumedRecord",
    "DashboardReads",
    "GroupInflight",
    "GroupSummary",
    "GroupsOverview",
    "PartitionInflight",
    "StateSource",
    "TailingStateSource",
]


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

    async def overview(self) -> GroupsOverview:
        service = await self._connected()
        return await self._session.within(service.overview(), "listing share groups")

    async def group(self, group_id: str) -> GroupInflight:
        service = await self._connected()
        return await self._session.within(service.group(group_id), f"share group {group_id!r}")

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

    async def aclose(self) -> None:
        self._service = None
        self._tailer = None
        await self._session.aclose()
