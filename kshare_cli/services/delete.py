"""What ``kshare delete`` and ``kshare delete-offsets`` ask: one ``Session`` each, bounded.

``Deletions`` (the per-group, per-topic outcome) is re-exported for the commands,
which reach the admin layer only through services.
"""

from __future__ import annotations

import dataclasses
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

    session = Session(settings, timeout_s)

    async def question(admin: ShareGroupAdmin) -> Deletions:
        if all_empty_groups:
            deletions = await delete_empty_groups(admin, dry_run=dry_run)
        else:
            deletions = await delete_groups(admin, group_ids, dry_run=dry_run)
        # The features came with the client's ApiVersions: no request is sent.
        facts = await session.cluster_facts(admin, configs=False)
        return dataclasses.replace(deletions, kafka_line=facts.kafka_line)

    what = "checking share groups" if dry_run else "deleting share groups"
    return await session.ask(what, question)


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
