"""The call ``kshare inflight`` makes: the admin RPCs and the state topic, bounded by ``--timeout``.

Imported only once the command runs (it pulls in asyncio, kio, the client and
confluent-kafka).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kshare_cli.admin.inflight import GroupInflight, InflightService, PlacedStateSource
from kshare_cli.cli.service import _bounded, open_admin
from kshare_cli.connect.settings import ConnectionSettings

#: The share of ``--timeout`` the state topic may take. Its reader runs in a thread,
#: which a deadline cannot cancel, so it must give up on its own before the deadline:
#: then the offsets still arrive, with a note instead of windows.
STATE_SHARE_OF_TIMEOUT: Final = 0.75


async def inflight(
    settings: ConnectionSettings, group_id: str, topics: Sequence[str], timeout_s: float
) -> GroupInflight:
    source = PlacedStateSource(settings.confluent_config(), group_ids=[group_id])
    try:

        async def work() -> GroupInflight:
            async with open_admin(settings, timeout_s) as admin:
                service = InflightService(
                    admin, source, state_timeout_s=timeout_s * STATE_SHARE_OF_TIMEOUT
                )
                return await service.group(group_id, topics)

        return await _bounded(work(), timeout_s, "reading the in-flight windows")
    finally:
        source.close()
