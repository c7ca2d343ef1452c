"""What ``kshare health`` asks: one sample of every group, or two ``--stall-after`` apart.

Each sample is bounded by ``--timeout`` on its own: the wait between them is the
operator's choice, not the cluster's slowness. The evaluation of the samples is
``services.health``'s; this module only reads them through a ``Session``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from kshare_cli.admin.inflight import StateTopicUnavailable, TailingStateSource
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.health import (
    GroupHealth,
    HealthReport,
    Sample,
    Thresholds,
    UnlistedBroker,
    evaluate_samples,
)
from kshare_cli.services.sampling import sample_groups, unlisted_groups
from kshare_cli.services.session import Session

__all__ = ["UnlistedBroker", "health"]


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

        async def read() -> tuple[tuple[Sample | GroupHealth, ...], tuple[UnlistedBroker, ...]]:
            async with session.admin() as admin:
                service = session.inflight(admin, source)
                if not all_groups:
                    return await sample_groups(service, group_ids), ()
                # The listing's failed brokers stay in the report (ERR, exit 2): their
                # groups are unknown, and the state topic may name some of them.
                listing, _ = await asyncio.gather(
                    admin.list_groups(), _read_state(source, session.state_timeout_s)
                )
                samples = await sample_groups(service, listing.group_ids())
                known = {key.group_id for key in source.states()}
                unknown, brokers = await unlisted_groups(admin, listing, known)
                return (*samples, *unknown), brokers

        first, failed = await session.bounded(read(), "reading the groups' health")
        if not two_samples:
            return evaluate_samples(first, (), thresholds, failed)
        await asyncio.sleep(thresholds.stall_after_s)
        second, failed = await session.bounded(read(), "reading the groups' health again")
        return evaluate_samples(second, first, thresholds, failed)


async def _read_state(source: TailingStateSource, timeout_s: float) -> None:
    """Read the whole state topic while the groups are listed, not after: a silent state
    partition's leader and a silent ListGroups then cost one wait, not two. The groups'
    own refreshes apply only what came since; a failure here is theirs to report."""
    with contextlib.suppress(StateTopicUnavailable):
        await asyncio.to_thread(source.refresh, (), timeout_s)
