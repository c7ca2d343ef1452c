"""What ``kshare health`` asks: one sample of every group, or two ``--stall-after`` apart.

Each sample is bounded by ``--timeout`` on its own: the wait between them is the
operator's choice, not the cluster's slowness. The evaluation of the samples is
``services.health``'s; this module only reads them through a ``Session``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.health import (
    GroupHealth,
    HealthReport,
    Sample,
    Thresholds,
    evaluate_samples,
)
from kshare_cli.services.sampling import sample_groups
from kshare_cli.services.session import Session

__all__ = ["health"]


async def health(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_groups: bool,
    thresholds: Thresholds,
    two_samples: bool,
    timeout_s: float,
) -> HealthReport:
    with Session(settings, timeout_s) as session:
        source = session.tailing_state(None if all_groups else group_ids)

        async def read() -> tuple[Sample | GroupHealth, ...]:
            async with session.admin() as admin:
                service = session.inflight(admin, source)
                ids = await admin.all_group_ids() if all_groups else tuple(group_ids)
                return await sample_groups(service, ids)

        first = await session.bounded(read(), "reading the groups' health")
        if not two_samples:
            return evaluate_samples(first, (), thresholds)
        await asyncio.sleep(thresholds.stall_after_s)
        second = await session.bounded(read(), "reading the groups' health again")
        return evaluate_samples(second, first, thresholds)
