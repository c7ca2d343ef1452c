"""The calls a command makes: open a client on the settings, ask the admin layer, close.

Commands import this module only once they run (never to build ``--help``),
because it pulls in asyncio, kio and the client. Each call is bounded as a whole
by ``--timeout``: an operator's command ends by then, whatever a broker does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from kshare_cli.admin.models import GroupDescriptions, GroupListing, ShareGroupOffsets
from kshare_cli.admin.share_groups import SHARE_GROUP_DESCRIBE, ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import TimedOut
from kshare_cli.wire.client import KafkaClient

T = TypeVar("T")


@asynccontextmanager
async def open_admin(
    settings: ConnectionSettings, timeout_s: float
) -> AsyncIterator[ShareGroupAdmin]:
    client = await KafkaClient.connect(settings, timeout_s=timeout_s)
    try:
        # A broker without share groups still answers ListGroups (an empty list), so
        # `list` and `describe --all-groups` would report "no share groups" and exit 0;
        # name the missing API instead (IncompatibleBroker, exit 3).
        client.api_version(SHARE_GROUP_DESCRIBE)
        yield ShareGroupAdmin(client)
    finally:
        await client.close()


async def _bounded(work: Coroutine[Any, Any, T], timeout_s: float, what: str) -> T:
    try:
        return await asyncio.wait_for(work, timeout_s)
    except TimeoutError:
        raise TimedOut(f"{what} did not finish within {timeout_s:g} s (--timeout)") from None


async def list_groups(
    settings: ConnectionSettings, states: Sequence[str], timeout_s: float
) -> GroupListing:
    async def work() -> GroupListing:
        async with open_admin(settings, timeout_s) as admin:
            return await admin.list_groups(states)

    return await _bounded(work(), timeout_s, "listing share groups")


async def describe(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_groups: bool,
    view: str,
    timeout_s: float,
) -> GroupDescriptions | ShareGroupOffsets:
    async def work() -> GroupDescriptions | ShareGroupOffsets:
        async with open_admin(settings, timeout_s) as admin:
            ids: Sequence[str] = await admin.all_group_ids() if all_groups else group_ids
            if view == "offsets":
                return await admin.list_share_partition_offsets(ids)
            return await admin.describe_groups(ids)

    return await _bounded(work(), timeout_s, "describing share groups")


def list_group_ids(settings: ConnectionSettings, timeout_s: float) -> list[str]:
    """Group ids for shell completion (synchronous: completion is not a command)."""

    async def work() -> list[str]:
        async with open_admin(settings, timeout_s) as admin:
            return list(await admin.all_group_ids())

    return asyncio.run(_bounded(work(), timeout_s, "listing share groups"))
