"""The calls ``kshare config`` makes: open a client, ask ``GroupConfigAdmin``, close.

Imported only when a config command runs (it pulls in asyncio, kio and the
client); each call is bounded as a whole by ``--timeout``. ``open_admin`` refuses
a broker without share-group APIs (exit 3): share-group configs mean nothing
there.
"""

from __future__ import annotations

from collections.abc import Sequence

from kshare_cli.admin.group_configs import ConfigUpdate, GroupConfigAdmin, GroupConfigs
from kshare_cli.cli.service import _bounded, open_admin
from kshare_cli.connect.settings import ConnectionSettings


async def get_configs(
    settings: ConnectionSettings, group_id: str, show_all: bool, timeout_s: float
) -> GroupConfigs:
    """The group's configs; without ``show_all``, whether it exists when it has none of its own."""

    async def work() -> GroupConfigs:
        async with open_admin(settings, timeout_s) as admin:
            configs = GroupConfigAdmin(admin.client)
            return await configs.describe(group_id, check_exists=not show_all)

    return await _bounded(work(), timeout_s, f"describing the configs of group {group_id!r}")


async def set_configs(
    settings: ConnectionSettings,
    group_id: str,
    assignments: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> ConfigUpdate:
    async def work() -> ConfigUpdate:
        async with open_admin(settings, timeout_s) as admin:
            configs = GroupConfigAdmin(admin.client)
            return await configs.set_configs(group_id, assignments, validate_only=dry_run)

    return await _bounded(work(), timeout_s, f"updating the configs of group {group_id!r}")


async def unset_configs(
    settings: ConnectionSettings,
    group_id: str,
    names: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> ConfigUpdate:
    async def work() -> ConfigUpdate:
        async with open_admin(settings, timeout_s) as admin:
            configs = GroupConfigAdmin(admin.client)
            return await configs.unset_configs(group_id, names, validate_only=dry_run)

    return await _bounded(work(), timeout_s, f"updating the configs of group {group_id!r}")
