"""What ``kshare health`` asks: one sample of every group, or two ``--stall-after`` apart.

Each sample is bounded by ``--timeout`` on its own: the wait between them is the
operator's choice, not the cluster's slowness. The evaluation of the samples is
``services.health``'s; this module only reads them through a ``Session``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kshare_cli.admin.share_groups import ShareGroupAdmin
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
from kshare_cli.state.sources import TailingStateSource
from kshare_cli.state.tailer import StateTopicUnavailable

if TYPE_CHECKING:
    from kshare_cli.services.dead_letters import DeadLetterQueues

__all__ = ["UnlistedBroker", "health"]


async def health(
    settings: ConnectionSettings,
    group_ids: Sequence[str],
    all_groups: bool,
    thresholds: Thresholds,
    two_samples: bool,
    timeout_s: float,
) -> HealthReport:
    dead_letters = None
    if thresholds.dlq_rate_above is not None:
        # Kept across the two samples: the second reads only what the DLQ got since.
        from kshare_cli.services.dead_letters import DeadLetterQueues

        dead_letters = DeadLetterQueues(settings.confluent_config())
    with Session(settings, timeout_s) as session, _closing(dead_letters):
        source = session.tailing_state(None if all_groups else group_ids)

        async def read() -> tuple[tuple[Sample | GroupHealth, ...], tuple[UnlistedBroker, ...]]:
            async with session.admin() as admin:
                service = session.inflight(admin, source)
                if not all_groups:
                    return await with_dlqs(admin, await sample_groups(service, group_ids)), ()
                # The listing's failed brokers stay in the report (ERR, exit 2): their
                # groups are unknown, and the state topic may name some of them.
                listing, _ = await asyncio.gather(
                    admin.list_groups(), _read_state(source, session.state_timeout_s)
                )
                samples = await sample_groups(service, listing.group_ids())
                known = {key.group_id for key in source.states()}
                unknown, brokers = await unlisted_groups(admin, listing, known)
                return (*await with_dlqs(admin, samples), *unknown), brokers

        async def with_dlqs(
            admin: ShareGroupAdmin, samples: Sequence[Sample | GroupHealth]
        ) -> tuple[Sample | GroupHealth, ...]:
            """Each sample with its group's DLQ (``--dlq-rate-above``): the rate is the
            growth between the two reads' moments (``read_at_ms``)."""
            if dead_letters is None:
                return tuple(samples)
            from kshare_cli.services.dead_letters import read_dead_letter_queues

            ids = [each.group.group_id for each in samples if isinstance(each, Sample)]
            queues = await read_dead_letter_queues(session, admin, ids, dead_letters)
            return tuple(
                dataclasses.replace(each, dead_letters=queues.get(each.group.group_id))
                if isinstance(each, Sample)
                else each
                for each in samples
            )

        first, failed = await session.bounded(read(), "reading the groups' health")
        if not two_samples:
            return evaluate_samples(first, (), thresholds, failed)
        await asyncio.sleep(thresholds.stall_after_s)
        second, failed = await session.bounded(read(), "reading the groups' health again")
        return evaluate_samples(second, first, thresholds, failed)


@contextlib.contextmanager
def _closing(dead_letters: DeadLetterQueues | None) -> Iterator[None]:
    try:
        yield
    finally:
        if dead_letters is not None:
            dead_letters.close()


async def _read_state(source: TailingStateSource, timeout_s: float) -> None:
    """Read the whole state topic while the groups are listed, not after: a silent state
    partition's leader and a silent ListGroups then cost one wait, not two. The groups'
    own refreshes apply only what came since; a failure here is theirs to report."""
    with contextlib.suppress(StateTopicUnavailable):
        await asyncio.to_thread(source.refresh, (), timeout_s)
