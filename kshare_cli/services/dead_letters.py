"""What ``describe --state``, ``health``, the exporter and the dashboard ask of the broker's DLQ.

One place decides how a caller reads its groups' dead-letter queues
(``admin/dead_letter_queues.py``): the cluster's facts from the ``Session``
(looked up once), the groups' DLQ topics in one DescribeConfigs, and the counts
from the caller's ``DeadLetterQueues`` (kept across reads by a long-lived
caller, so each read reads only what is new). A one-shot command's read gets
what is left of ``--timeout`` (less a moment, so its answer still arrives), and
its note says when it stopped early. The model is re-exported for the layers
above.

``read_dead_letter_ends`` is the cheap reading a screen of every group can
afford on each refresh (the dashboard's groups screen): no record is read, only
the DLQ topics' log end offsets, in one DescribeConfigs of the groups, one
Metadata of their topics (mostly the client's cache) and one ListOffsets per
partition leader; how much each topic grew is the caller's arithmetic over its
readings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from kio.schema.errors import ErrorCode

from kshare_cli.admin.dead_letter_queues import (
    DeadLetterQueues,
    GroupDeadLetterQueue,
    dead_letter_topics,
    group_dead_letter_queues,
)
from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.services.session import Session
from kshare_cli.wire.errors import KafkaError

__all__ = [
    "DeadLetterEnds",
    "DeadLetterQueues",
    "GroupDeadLetterQueue",
    "KeptDeadLetterQueues",
    "read_dead_letter_ends",
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


@dataclass(frozen=True, slots=True)
class DeadLetterEnds:
    """One reading of the log end offsets of some groups' DLQ topics.

    ``active`` False: the cluster writes no dead letters (``share.version`` below 2, or
    Kafka 4.3 and older), so nothing was asked. ``topics`` maps each group with a DLQ
    to its topic (a topic may serve several groups); ``ends`` holds each topic's end
    offset by partition, for the partitions that answered; ``missing`` the topics that
    do not exist (a broker that creates DLQ topics creates one with its first dead
    letter). ``topic_failures`` says why a topic, or some of its partitions, could not
    be read, ``group_failures`` why a group's DLQ config could not be.
    """

    active: bool
    topics: Mapping[str, str] = field(default_factory=dict)
    ends: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    missing: frozenset[str] = frozenset()
    topic_failures: Mapping[str, str] = field(default_factory=dict)
    group_failures: Mapping[str, str] = field(default_factory=dict)


async def read_dead_letter_ends(
    session: Session, admin: ShareGroupAdmin, group_ids: Sequence[str]
) -> DeadLetterEnds:
    """The groups' DLQ topics and their log end offsets, read together (no records read).

    The caller's deadline (``client.bounded``) bounds it; a partition whose leader does
    not answer within it is a failure of its topic, never of the reading.
    """
    facts = await session.cluster_facts(admin, configs=False)
    if not facts.dead_letter_queue or not group_ids:
        return DeadLetterEnds(facts.dead_letter_queue)
    answers = await dead_letter_topics(admin.client, group_ids)
    topics = {group: topic for group, topic in answers.items() if isinstance(topic, str)}
    group_failures = {
        group: f"its errors.deadletterqueue.topic.name could not be read: {answer}"
        for group, answer in answers.items()
        if isinstance(answer, KafkaError)
    }
    names = sorted(set(topics.values()))
    if not names:
        return DeadLetterEnds(True, topics, group_failures=group_failures)
    metadata = await admin.client.metadata(names)
    partitions: list[TopicPartition] = []
    missing: set[str] = set()
    failures: dict[str, str] = {}
    for name in names:
        described = metadata.topics.get(name)
        code = ErrorCode.unknown_topic_or_partition if described is None else described.error_code
        if code == ErrorCode.unknown_topic_or_partition:
            missing.add(name)
        elif code:
            failures[name] = str(KafkaError.of(code))
        elif described is not None:
            partitions.extend(TopicPartition(name, index) for index in described.partitions)
    read = await admin.log_end_offsets(partitions)
    ends: dict[str, dict[int, int]] = {}
    for tp, offset in read.offsets.items():
        ends.setdefault(tp.topic, {})[tp.partition] = offset
    unread: dict[str, list[tuple[int, KafkaError]]] = {}
    for tp, error in sorted(read.failures.items()):
        unread.setdefault(tp.topic, []).append((tp.partition, error))
    for topic, parts in unread.items():
        noun = "partition" if len(parts) == 1 else "partitions"
        indexes = ", ".join(str(partition) for partition, _ in parts)
        failures[topic] = f"{noun} {indexes}: {parts[0][1]}"
    return DeadLetterEnds(True, topics, ends, frozenset(missing), failures, group_failures)
