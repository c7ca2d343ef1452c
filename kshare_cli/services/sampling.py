"""Reading the samples the health evaluation takes: one per group, through ``InflightService``.

``kshare health`` and ``kshare exporter`` read groups the same way, so a status
means the same in a terminal and in Prometheus: describe, offsets and lag, the
in-flight window (the state topic) and the log start offsets (ListOffsets
earliest, for the retention rule). A group that cannot be read becomes an ERR
result rather than an exception, so one bad group never hides the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from kshare_cli.admin.inflight import GroupNotFound, GroupUnavailable, InflightService
from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.share_groups import EARLIEST_TIMESTAMP
from kshare_cli.services.health import GroupHealth, Sample, unreadable

__all__ = ["sample_group", "sample_groups"]


async def sample_group(
    service: InflightService, group_id: str, clock: Callable[[], float] = time.monotonic
) -> Sample | GroupHealth:
    """One group's sample, or its ERR result when it could not be described."""
    try:
        group = await service.group(group_id)
    except GroupNotFound as missing:
        return unreadable(group_id, str(missing), not_found=True)
    except GroupUnavailable as failed:
        return unreadable(group_id, str(failed))
    taken_at = clock()
    partitions = [TopicPartition(each.topic, each.partition) for each in group.partitions]
    log_starts = (
        (await service.admin.log_offsets(partitions, EARLIEST_TIMESTAMP)).offsets
        if partitions
        else {}
    )
    return Sample(group, taken_at, dict(log_starts))


async def sample_groups(
    service: InflightService,
    group_ids: Sequence[str],
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Sample | GroupHealth, ...]:
    """Every group's sample, read side by side, in the order asked."""
    return tuple(await asyncio.gather(*(sample_group(service, each, clock) for each in group_ids)))
