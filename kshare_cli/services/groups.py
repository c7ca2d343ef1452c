"""What ``list``, ``describe``, shell completion and the dashboard's start ask about share groups.

Each call is one ``Session``: a client on the settings, the admin layer's
answer, bounded as a whole by ``--timeout``. The domain types the calls return
are re-exported here, so a command reaches the admin layer only through its
service.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kshare_cli.admin.models import (
    BrokerFailure,
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupListing,
    ShareGroupOffsets,
    parse_state_filter,
)
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.session import Session

if TYPE_CHECKING:
    from kshare_cli.admin.dead_letter_queues import GroupDeadLetterQueue

__all__ = [
    "BrokerFailure",
    "GroupDescription",
    "GroupDescriptions",
    "GroupFailure",
    "GroupListing",
    "ShareGroupOffsets",
    "check_group",
    "describe",
    "list_group_ids",
    "list_groups",
    "parse_state_filter",
]


async def list_groups(
    settings: ConnectionSettings, states: Sequence[str], timeout_s: float
) -> GroupListing:
    return await Session(settings, timeout_s).ask(
        "listing share groups", lambda admin: admin.list_groups(states)
    )


async def describe(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_groups: bool,
    view: str,
    timeout_s: float,
) -> GroupDescriptions | ShareGroupOffsets:

    async def question(admin: ShareGroupAdmin) -> GroupDescriptions | ShareGroupOffsets:
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
            if view == "state":
                # The Kafka line and share.version: from ApiVersions, no request.
                facts = await session.cluster_facts(admin, configs=False)
                result = dataclasses.replace(
                    result, cluster=facts, dead_letter_queues=await _dlqs(admin, result)
                )
        return dataclasses.replace(result, broker_failures=unlisted)

    async def _dlqs(
        admin: ShareGroupAdmin, result: GroupDescriptions
    ) -> tuple[GroupDeadLetterQueue, ...]:
        # Each group's DLQ topic and what the broker wrote there, read to the topic's
        # end within what is left of --timeout (the note says when it stopped early).
        from kshare_cli.services.dead_letters import DeadLetterQueues, read_dead_letter_queues

        ids = [group.group_id for group in result.succeeded() if group.state != "Dead"]
        queues = DeadLetterQueues(settings.confluent_config())
        try:
            found = await read_dead_letter_queues(session, admin, ids, queues)
        finally:
            queues.close()
        return tuple(found[group_id] for group_id in ids)

    session = Session(settings, timeout_s)
    return await session.ask("describing share groups", question)


def list_group_ids(settings: ConnectionSettings, timeout_s: float) -> list[str]:
    """Group ids for shell completion (synchronous: completion is not a command)."""

    async def question(admin: ShareGroupAdmin) -> list[str]:
        return list(await admin.all_group_ids())

    return asyncio.run(Session(settings, timeout_s).ask("listing share groups", question))


async def check_group(settings: ConnectionSettings, group: str | None, timeout_s: float) -> None:
    """Connect once (and find ``group``, when given), so that the usual exit codes
    come before a screen takes the terminal: 3 unreachable, 4 no answer, 5 no group."""

    # The in-flight layer's errors, loaded only here: a listing does not need them.
    from kshare_cli.admin.inflight import GroupNotFound, GroupUnavailable

    async def question(admin: ShareGroupAdmin) -> None:
        if group is None:
            return
        result = (await admin.describe_groups([group])).get(group)
        if isinstance(result, GroupFailure):
            raise GroupNotFound(result) if result.not_found else GroupUnavailable(result)

    await Session(settings, timeout_s).ask("connecting to the cluster", question)
