"""The calls a command makes: open a client on the settings, ask the admin layer, close.

Commands import this module only once they run (never to build ``--help``),
because it pulls in asyncio, kio and the client. Each call is bounded as a whole
by ``--timeout``: an operator's command ends by then, whatever a broker does.

The deadline is handed down, not wrapped around: ``_bounded`` fixes it once and
``open_admin`` gives it to the client, whose fan-outs end a silent broker's part
as a failure before it, so the healthy brokers' answers and the last error are
shown (exit 1) instead of being thrown away by an outer timeout (exit 4). The
outer ``wait_for`` stays only as a backstop, a moment after the deadline.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

from kshare_cli.admin.models import (
    BrokerFailure,
    GroupDescriptions,
    GroupListing,
    ShareGroupOffsets,
)
from kshare_cli.admin.share_groups import SHARE_GROUP_DESCRIBE, ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import TimedOut
from kshare_cli.wire.client import KafkaClient

T = TypeVar("T")

#: How long after the deadline the backstop fires: the client's own deadline, which
#: keeps partial answers and names the last error, must always come first.
BACKSTOP_S: Final = 1.0

#: The running command's deadline (the event loop's clock) and what it is doing.
_COMMAND: contextvars.ContextVar[tuple[float, str] | None] = contextvars.ContextVar(
    "kshare-command", default=None
)


@asynccontextmanager
async def open_admin(
    settings: ConnectionSettings, timeout_s: float
) -> AsyncIterator[ShareGroupAdmin]:
    command = _COMMAND.get()
    deadline = None if command is None else command[0]
    client = await KafkaClient.connect(settings, timeout_s=timeout_s, deadline=deadline)
    try:
        # A broker without share groups still answers ListGroups (an empty list), so
        # `list` and `describe --all-groups` would report "no share groups" and exit 0;
        # name the missing API instead (IncompatibleBroker, exit 3).
        client.api_version(SHARE_GROUP_DESCRIBE)
        if command is None:
            yield ShareGroupAdmin(client)
        else:
            async with client.bounded(command[1]):
                yield ShareGroupAdmin(client)
    finally:
        await client.close()


async def _bounded(work: Coroutine[Any, Any, T], timeout_s: float, what: str) -> T:
    loop = asyncio.get_running_loop()
    token = _COMMAND.set((loop.time() + timeout_s, what))
    try:
        # The task wait_for makes copies this context: open_admin finds the deadline.
        return await asyncio.wait_for(work, timeout_s + BACKSTOP_S)
    except TimedOut as error:
        # The client's own deadline: say which option set it, as the backstop does.
        raise TimedOut(f"{error} (--timeout)") from None
    except TimeoutError:
        raise TimedOut(f"{what} did not finish within {timeout_s:g} s (--timeout)") from None
    finally:
        _COMMAND.reset(token)


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
            ids: Sequence[str] = group_ids
            unlisted: tuple[BrokerFailure, ...] = ()
            if all_groups:
                # A broker that did not list is news: the groups it coordinates are missing.
                listing = await admin.list_groups()
                ids, unlisted = listing.group_ids(), listing.failures
            result: GroupDescriptions | ShareGroupOffsets
            if view == "offsets":
                result = await admin.list_share_partition_offsets(ids)
            else:
                result = await admin.describe_groups(ids)
            return dataclasses.replace(result, broker_failures=unlisted)

    return await _bounded(work(), timeout_s, "describing share groups")


def list_group_ids(settings: ConnectionSettings, timeout_s: float) -> list[str]:
    """Group ids for shell completion (synchronous: completion is not a command)."""

    async def work() -> list[str]:
        async with open_admin(settings, timeout_s) as admin:
            return list(await admin.all_group_ids())

    return asyncio.run(_bounded(work(), timeout_s, "listing share groups"))
