"""Reading the samples the health evaluation takes: one per group, through ``InflightService``.

``kshare health`` and ``kshare exporter`` read groups the same way, so a status
means the same in a terminal and in Prometheus: describe, offsets and lag, the
in-flight window (the state topic) and the log start offsets (ListOffsets
earliest, for the retention rule; the windows mark the offsets below them
deleted, as ``kshare inflight`` does). A group that cannot be read becomes an ERR
result rather than an exception, so one bad group never hides the others.

The log start offsets of many groups are asked in one ListOffsets per partition
leader for all of them: the groups of one cluster share their topics, and a
thousand groups asked one by one cost a thousand round trips per refresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence

from kshare_cli.admin.inflight import GroupInflight, GroupNotFound, GroupUnavailable
from kshare_cli.admin.models import GroupListing, KafkaError, TopicPartition
from kshare_cli.admin.share_groups import EARLIEST_TIMESTAMP, ShareGroupAdmin
from kshare_cli.services.health import GroupHealth, Sample, UnlistedBroker, unreadable
from kshare_cli.services.inflight import InflightService

__all__ = ["sample_group", "sample_groups", "unlisted_groups"]


async def sample_group(
    service: InflightService, group_id: str, clock: Callable[[], float] = time.monotonic
) -> Sample | GroupHealth:
    """One group's sample, or its ERR result when it could not be described."""
    read = await _read(service, group_id, clock)
    if isinstance(read, GroupHealth):
        return read
    group, taken_at = read
    partitions = [TopicPartition(each.topic, each.partition) for each in group.partitions]
    log_starts = (
        (await service.admin.log_offsets(partitions, EARLIEST_TIMESTAMP)).offsets
        if partitions
        else {}
    )
    return Sample(group.with_log_start_offsets(log_starts), taken_at, dict(log_starts))


async def sample_groups(
    service: InflightService,
    group_ids: Sequence[str],
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Sample | GroupHealth, ...]:
    """Every group's sample, read together (``InflightService.groups``), in the order asked."""
    # Every coordinator in one batched FindCoordinator first: the descriptions and the
    # offsets, asked at the same moment, would each miss the client's cache and ask.
    # A group whose coordinator is not found gets the error from its own reads.
    await service.admin.client.find_coordinators(group_ids)
    answers = await service.groups(group_ids, log_start_offsets=True)
    taken_at = clock()
    samples: list[Sample | GroupHealth] = []
    for group_id in group_ids:
        read = _sampled(group_id, answers[group_id], taken_at)
        if isinstance(read, GroupHealth):
            samples.append(read)
            continue
        group = read[0]
        own = {
            TopicPartition(each.topic, each.partition): each.log_start_offset
            for each in group.partitions
            if each.log_start_offset is not None
        }
        samples.append(Sample(group, taken_at, own))
    return tuple(samples)


async def _read(
    service: InflightService, group_id: str, clock: Callable[[], float]
) -> tuple[GroupInflight, float] | GroupHealth:
    try:
        # The log start offsets are asked for every group at once, by the caller.
        group = await service.group(group_id, log_start_offsets=False)
    except GroupUnavailable as failed:
        return _sampled(group_id, failed, clock())
    return group, clock()


def _sampled(
    group_id: str, answer: GroupInflight | GroupUnavailable, taken_at: float
) -> tuple[GroupInflight, float] | GroupHealth:
    """A group's read as the sampler keeps it: the group and when, or its ERR result."""
    if isinstance(answer, GroupNotFound):
        return unreadable(group_id, str(answer), not_found=True)
    if isinstance(answer, GroupUnavailable):
        return unreadable(group_id, str(answer))
    return answer, taken_at


async def unlisted_groups(
    admin: ShareGroupAdmin, listing: GroupListing, known: Collection[str]
) -> tuple[tuple[GroupHealth, ...], tuple[UnlistedBroker, ...]]:
    """The brokers that did not list their groups, and an ERR result for each group
    ``known`` elsewhere (the state topic) that no broker listed because its coordinator
    is one of them.

    A listing only names the groups of the brokers that answered: without this, the
    dead broker's groups simply vanished from ``health --all-groups`` and a check said
    OK with them unmonitored. Groups whose coordinator is another broker were created
    or deleted since the listing and are left out.
    """
    failed = {failure.node_id: failure for failure in listing.failures}
    candidates = sorted(set(known) - set(listing.group_ids()))
    theirs: dict[int, list[str]] = {node_id: [] for node_id in failed}
    if failed and candidates:
        coordinators = await admin.client.find_coordinators(candidates)
        for group_id, coordinator in coordinators.items():
            if not isinstance(coordinator, KafkaError) and coordinator.node_id in failed:
                theirs[coordinator.node_id].append(group_id)
    brokers = tuple(UnlistedBroker(failed[node_id], tuple(theirs[node_id])) for node_id in failed)
    unknown = tuple(
        unreadable(
            group_id,
            f"share group '{group_id}' not listed: its coordinator {broker.broker} "
            f"did not list its groups ({broker.failure.error})",
        )
        for broker in brokers
        for group_id in broker.groups
    )
    return unknown, brokers
