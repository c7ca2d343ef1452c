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
from kshare_cli.admin.share_groups import ShareGroupAdmin
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

    async def question(admin: ShareGroupAdmin) -> Deletions:
        if all_empty_groups:
            return await delete_empty_groups(admin, dry_run=dry_run)
        return await delete_groups(admin, group_ids, dry_run=dry_run)

    what = "checking share groups" if dry_run else "deleting share groups"
    return await Session(settings, timeout_s).ask(what, question)


async def delete_offsets(
    settings: ConnectionSettings,
    group_id: str,
    topics: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> Deletions:
    what = "checking share-group offsets" if dry_run else "deleting share-group offsets"
    return await Session(settings, timeout_s).ask(
        what,
        lambda admin: delete_share_group_offsets(admin, group_id, topics, dry_run=dry_run),
    )
