"""What ``kshare delete`` and ``kshare delete-offsets`` ask: one ``Session`` each, bounded.

``Deletions`` (the per-group, per-topic outcome) is re-exported for the commands,
which reach the admin layer only through services.
"""

from __future__ import annotations

from collections.abc import Sequence

from kshare_cli.admin.deletion import (
    Deletions,
    delete_empty_groups,
    delete_groups,
    delete_share_group_offsets,
)
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.session import Session

__all__ = ["Deletions", "delete", "delete_offsets"]


async def delete(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_empty_groups: bool,
    dry_run: bool,
    timeout_s: float,
) -> Deletions:
    session = Session(settings, timeout_s)

    async def work() -> Deletions:
        async with session.admin() as admin:
            if all_empty_groups:
                return await delete_empty_groups(admin, dry_run=dry_run)
            return await delete_groups(admin, group_ids, dry_run=dry_run)

    what = "checking share groups" if dry_run else "deleting share groups"
    return await session.bounded(work(), what)


async def delete_offsets(
    settings: ConnectionSettings,
    group_id: str,
    topics: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> Deletions:
    session = Session(settings, timeout_s)

    async def work() -> Deletions:
        async with session.admin() as admin:
            return await delete_share_group_offsets(admin, group_id, topics, dry_run=dry_run)

    what = "checking share-group offsets" if dry_run else "deleting share-group offsets"
    return await session.bounded(work(), what)
