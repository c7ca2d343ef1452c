"""What ``describe --state``, ``health``, the exporter and the dashboard ask of the broker's DLQ.

One place decides how a caller reads its groups' dead-letter queues
(``admin/dead_letter_queues.py``): the cluster's facts from the ``Session``
(looked up once), the groups' DLQ topics in one DescribeConfigs, and the counts
from the caller's ``DeadLetterQueues`` (kept across reads by a long-lived
caller, so each read reads only what is new). A one-shot command's read gets
what is left of ``--timeout`` (less a moment, so its answer still arrives), and
its note says when it stopped early. The model is re-exported for the layers
above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kshare_cli.admin.dead_letter_queues import (
    DeadLetterQueues,
    GroupDeadLetterQueue,
    group_dead_letter_queues,
)
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.services.session import Session

__all__ = [
    "DeadLetterQueues",
    "GroupDeadLetterQueue",
    "KeptDeadLetterQueues",
    "read_dead_letter_queues",
]

#: What a one-shot read leaves of the command's deadline, for the answer to be shown.
_MARGIN_S: Final = 0.5
#: The shortest read worth starting (a read given no time only says it stopped early).
_SHORTEST_S: Final = 0.1


async def read_dead_letter_queues(
    session: Session,
    admin: ShareGroupAdmin,
    group_ids: Sequence[str],
    queues: DeadLetterQueues,
    *,
    timeout_s: float | None = None,
    stopped_early: str = "--timeout ended the read",
) -> dict[str, GroupDeadLetterQueue]:
    """Each group's DLQ, its counts read within ``timeout_s`` (default: what is left of the
    running command's ``--timeout``, less a margin)."""
    facts = await session.cluster_facts(admin, configs=False)
    budget = session.time_left() - _MARGIN_S if timeout_s is None else timeout_s
    return await group_dead_letter_queues(
        admin.client,
        facts,
        group_ids,
        queues,
        max(_SHORTEST_S, budget),
        stopped_early=stopped_early,
    )


class KeptDeadLetterQueues:
    """A long-lived caller's DLQ reads (the exporter's refreshes, the dashboard's group
    screen): one ``DeadLetterQueues`` kept for its life, so each read reads only what
    the DLQ topics got since the last; ``close`` releases its readers."""

    def __init__(self, session: Session, *, stopped_early: str) -> None:
        self._session = session
        self._queues = DeadLetterQueues(session.settings.confluent_config())
        self._stopped_early = stopped_early

    async def read(
        self, admin: ShareGroupAdmin, group_ids: Sequence[str], timeout_s: float | None = None
    ) -> dict[str, GroupDeadLetterQueue]:
        return await read_dead_letter_queues(
            self._session,
            admin,
            group_ids,
            self._queues,
            timeout_s=timeout_s,
            stopped_early=self._stopped_early,
        )

    def close(self) -> None:
        self._queues.close()
