"""Where the dashboard's data comes from: one protocol, and its live implementation.

The screens only ever await a ``DashboardSource``, from Textual workers, so a
test (or a recorded scenario) can stand in for the cluster and the screens
never know. ``LiveSource`` is the real one: the asyncio admin client for
groups, offsets and lag, the state-topic tailer for windows (both through
``InflightService``, the one service ``kshare inflight`` uses too), and a
plain consumer for the peek. Each call is bounded, so a broker that stops
answering turns into an error the screen shows beside its last data, never
into a worker that waits forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from kshare_cli.admin.inflight import GroupInflight, GroupsOverview
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.errors import TimedOut

if TYPE_CHECKING:
    from kshare_cli.admin.inflight import InflightService, StateSource, TailingStateSource
    from kshare_cli.connect.settings import ConnectionSettings
    from kshare_cli.wire.client import KafkaClient

__all__ = ["ClosableSource", "DashboardSource", "LiveSource", "TimeLagSource"]

T = TypeVar("T")


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
class ClosableSource(Protocol):
    """A source holding connections; the app closes it when it exits."""

    async def aclose(self) -> None: ...


class LiveSource:
    """The cluster, through ``InflightService`` and ``peek_records``.

    The admin client is asyncio and belongs to the event loop that opened it,
    so it is connected lazily on the first call, inside Textual's loop (a
    failed connection is tried again on the next call). ``timeout_s`` bounds
    every call, the state-topic read inside it too. ``state`` replaces the
    state-topic tailer (a test's stand-in, or None with ``read_state`` False
    to leave the windows out); the source closes only a tailer it made.
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
        self._settings = settings
        self._timeout_s = timeout_s
        self._read_state = read_state
        self._peek_timeout_s = min(peek_timeout_s, timeout_s)
        self._client: KafkaClient | None = None
        self._service: InflightService | None = None
        self._given_state = state
        self._state: TailingStateSource | None = None
        self._connecting: asyncio.Lock | None = None

    async def _connected(self) -> InflightService:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._service is not None:
                return self._service
            from kshare_cli.admin.inflight import InflightService, TailingStateSource
            from kshare_cli.admin.share_groups import SHARE_GROUP_DESCRIBE, ShareGroupAdmin
            from kshare_cli.wire.client import KafkaClient

            client = await KafkaClient.connect(self._settings, timeout_s=self._timeout_s)
            try:
                client.api_version(SHARE_GROUP_DESCRIBE)
            except BaseException:
                await client.close()
                raise
            state: StateSource | None = self._given_state
            if state is None and self._read_state:
                if self._state is None:
                    self._state = TailingStateSource(self._settings.confluent_config())
                state = self._state
            self._client = client
            # The state read runs in a thread that cannot be cancelled: it gets less time
            # than the call around it, so a slow state topic never outlives the refresh.
            self._service = InflightService(
                ShareGroupAdmin(client), state, state_timeout_s=self._timeout_s * 0.8
            )
            return self._service

    async def _within(self, work: Coroutine[Any, Any, T], what: str) -> T:
        try:
            return await asyncio.wait_for(work, self._timeout_s)
        except TimeoutError:
            raise TimedOut(f"{what} did not answer within {self._timeout_s:g} s") from None

    async def overview(self) -> GroupsOverview:
        service = await self._connected()
        return await self._within(service.overview(), "listing share groups")

    async def group(self, group_id: str) -> GroupInflight:
        service = await self._connected()
        return await self._within(service.group(group_id), f"share group {group_id!r}")

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        from kshare_cli.consumer.peek import peek_records

        config: Mapping[str, object] = self._settings.confluent_config()
        return await asyncio.to_thread(
            peek_records, config, topic, partition, offset, limit, self._peek_timeout_s
        )

    async def oldest_unacknowledged(
        self, group: GroupInflight
    ) -> Mapping[tuple[str, str, int], int | None]:
        """One peek per share-partition with lag (``services.time_lag``), within the
        peek timeout, in a thread."""
        from kshare_cli.services.time_lag import oldest_unacknowledged_timestamps

        config: Mapping[str, object] = self._settings.confluent_config()
        return await self._within(
            asyncio.to_thread(
                oldest_unacknowledged_timestamps, group, config, self._peek_timeout_s
            ),
            f"the time lag of share group {group.group_id!r}",
        )

    async def aclose(self) -> None:
        client, state = self._client, self._state
        self._client = None
        self._service = None
        self._state = None
        if client is not None:
            await client.close()
        if state is not None:
            await asyncio.to_thread(state.close)
