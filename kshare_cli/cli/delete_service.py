"""The calls ``kshare delete`` and ``kshare delete-offsets`` make, bounded by ``--timeout``.

Imported only once a command runs (it pulls in asyncio, kio and the client).
"""

from __future__ import annotations

from collections.abc import Sequence

from kshare_cli.admin.deletion import (
    Deletions,
    delete_empty_groups,
    delete_groups,
    delete_share_group_offsets,
)
from kshare_cli.cli.service import _bounded, open_admin
from kshare_cli.connect.settings import ConnectionSettings


async def delete(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_empty_groups: bool,
    dry_run: bool,
    timeout_s: float,
) -> Deletions:
    async def work() -> Deletions:
        async with open_admin(settings, timeout_s) as admin:
            if all_empty_groups:
                return await delete_empty_groups(admin, dry_run=dry_run)
            return await delete_groups(admin, group_ids, dry_run=dry_run)

    what = "checking share groups" if dry_run else "deleting share groups"
    return await _bounded(work(), timeout_s, what)


async def delete_offsets(
    settings: ConnectionSettings,
    group_id: str,
    topics: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> Deletions:
    async def work() -> Deletions:
        async with open_admin(settings, timeout_s) as admin:
            return await delete_share_group_offsets(admin, group_id, topics, dry_run=dry_run)

    what = "checking share-group offsets" if dry_run else "deleting share-group offsets"
    return await _bounded(work(), timeout_s, what)
