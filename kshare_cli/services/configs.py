"""What ``kshare config`` asks: a group's share configs, read or changed in one ``Session``.

Each call is bounded as a whole by ``--timeout``. The session refuses a broker
without share-group APIs (exit 3): share-group configs mean nothing there. A
``set`` asks the session for the cluster's facts (``Session.cluster_facts``:
``share.version``, the ``group.share.min/max.*`` bounds, the DLQ cluster
configs), so it can say what Kafka will accept but not act on. The
key table and the checks made before anything is sent (``check_assignments``,
``check_names``) and the result types are re-exported, so the command reaches
the admin layer only through this service.
"""

from __future__ import annotations

from collections.abc import Sequence

from kshare_cli.admin.config_checks import check_assignments, check_names
from kshare_cli.admin.group_configs import ConfigUpdate, GroupConfigAdmin, GroupConfigs
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.group_configs import SHARE_CONFIG_KEYS
from kshare_cli.services.session import Session

__all__ = [
    "SHARE_CONFIG_KEYS",
    "ConfigUpdate",
    "GroupConfigs",
    "check_assignments",
    "check_names",
    "get_configs",
    "set_configs",
    "unset_configs",
]


async def get_configs(
    settings: ConnectionSettings, group_id: str, show_all: bool, timeout_s: float
) -> GroupConfigs:
    """The group's configs; without ``show_all``, whether it exists when it has none of its own."""
    return await Session(settings, timeout_s).ask(
        f"describing the configs of group {group_id!r}",
        lambda admin: GroupConfigAdmin(admin.client).describe(group_id, check_exists=not show_all),
    )


async def set_configs(
    settings: ConnectionSettings,
    group_id: str,
    assignments: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> ConfigUpdate:
    session = Session(settings, timeout_s)

    async def change(admin: ShareGroupAdmin) -> ConfigUpdate:
        facts = await session.cluster_facts(admin)
        return await GroupConfigAdmin(admin.client).set_configs(
            group_id, assignments, validate_only=dry_run, facts=facts
        )

    return await session.ask(f"updating the configs of group {group_id!r}", change)


async def unset_configs(
    settings: ConnectionSettings,
    group_id: str,
    names: Sequence[str],
    dry_run: bool,
    timeout_s: float,
) -> ConfigUpdate:
    return await Session(settings, timeout_s).ask(
        f"updating the configs of group {group_id!r}",
        lambda admin: GroupConfigAdmin(admin.client).unset_configs(
            group_id, names, validate_only=dry_run
        ),
    )
