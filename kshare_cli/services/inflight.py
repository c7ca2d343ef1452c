"""What ``kshare inflight`` asks: one group's admin RPCs and state partitions, bounded.

A command about one group reads only the state partitions its share-partitions
live in (``Session.placed_state``); the state read gets the session's share of
the timeout. ``GroupInflight`` and its parts are re-exported for the command and
the dashboard, which reach the admin layer only through services.

When the group coordinator holds DescribeShareGroupOffsets (Kafka does while a
share coordinator it reads from is stopped or hung, for minutes) but still
describes the group, the command shows what can be known, which Kafka's tool
does not: the group's state and members, and its share-partitions from
``__share_group_state`` (every state partition read, each silent one given up
on alone) with their log end offsets and kshare's lag, ``offsets_note`` naming
the silent broker (``InflightService(offsets_when_held=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from kshare_cli.admin.inflight import (
    GroupInflight,
    GroupNotFound,
    GroupsOverview,
    GroupSummary,
    GroupUnavailable,
    InflightService,
    PartitionInflight,
    StateSource,
    TailingStateSource,
)
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.session import Session

__all__ = [
    "GroupInflight",
    "GroupNotFound",
    "GroupSummary",
    "GroupUnavailable",
    "GroupsOverview",
    "PartitionInflight",
    "StateSource",
    "TailingStateSource",
    "inflight",
]


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
