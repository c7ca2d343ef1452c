"""The calls ``kshare health`` makes: one sample of every group, or two ``--stall-after`` apart.

Imported only once the command runs (asyncio, kio, the client, confluent-kafka).
Each sample is bounded by ``--timeout`` on its own: the wait between them is the
operator's choice, not the cluster's slowness.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kshare_cli.admin.inflight import InflightService, TailingStateSource
from kshare_cli.cli.inflight_service import STATE_SHARE_OF_TIMEOUT
from kshare_cli.cli.service import _bounded, open_admin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.health import (
    GroupHealth,
    HealthReport,
    Sample,
    Thresholds,
    evaluate_samples,
)
from kshare_cli.services.sampling import sample_groups


async def health(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_groups: bool,
    thresholds: Thresholds,
    two_samples: bool,
    timeout_s: float,
) -> HealthReport:
    source = TailingStateSource(
        settings.confluent_config(), group_ids=None if all_groups else group_ids
    )
    try:

        async def read() -> tuple[Sample | GroupHealth, ...]:
            async with open_admin(settings, timeout_s) as admin:
                service = InflightService(
                    admin, source, state_timeout_s=timeout_s * STATE_SHARE_OF_TIMEOUT
                )
                ids = await admin.all_group_ids() if all_groups else tuple(group_ids)
                return await sample_groups(service, ids)

        first = await _bounded(read(), timeout_s, "reading the groups' health")
        if not two_samples:
            return evaluate_samples(first, (), thresholds)
        await asyncio.sleep(thresholds.stall_after_s)
        second = await _bounded(read(), timeout_s, "reading the groups' health again")
        return evaluate_samples(second, first, thresholds)
    finally:
        source.close()
