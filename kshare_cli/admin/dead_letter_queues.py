"""A share group's dead-letter queue as the broker keeps it: its topic and what was written there.

Kafka 4.4 dead-letters a group's rejected and over-limit records to the topic
its group config ``errors.deadletterqueue.topic.name`` names, when the
cluster's ``share.version`` is 2 (below it the config is accepted and
ignored). ``GroupDeadLetterQueue`` is what kshare shows of it (``describe
--state``, the dashboard's group screen, ``health --dlq-rate-above``, the
exporter): the topic, how many records the broker wrote there for the group
(by ``__dlq.errors.group``), by reason, and the newest one's time, or why any
of that is unknown.

The topics come from one DescribeConfigs of every group asked (only that key);
the counts from one ``DeadLetterCounter`` per DLQ topic (``dataplane``), kept by
a ``DeadLetterQueues`` for as long as its caller lives, so a long-lived caller
reads only what was written since its last read. A cluster whose software has
no DLQ (``share.version`` cannot reach 2: Kafka 4.3 and older) is not asked.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.admin.group_configs import DESCRIBE_CONFIGS_WITH_SOURCE, describe_results_for
from kshare_cli.dataplane.dead_letters import DeadLetterCounter, DeadLetterTally
from kshare_cli.kafka.api_keys import DESCRIBE_CONFIGS
from kshare_cli.kafka.dead_letters import DeadLetterReason
from kshare_cli.kafka.features import SHARE_VERSION
from kshare_cli.kafka.group_configs import DLQ_SHARE_VERSION, DLQ_TOPIC_NAME, GROUP_RESOURCE
from kshare_cli.wire.errors import KafkaError

if TYPE_CHECKING:
    from kshare_cli.admin.cluster_facts import ClusterFacts
    from kshare_cli.wire.client import KafkaClient

__all__ = [
    "DeadLetterQueues",
    "GroupDeadLetterQueue",
    "dead_letter_topics",
    "group_dead_letter_queues",
]

#: A group's DLQ topic, None for none, or why its config could not be read.
DlqTopicAnswer = str | None | KafkaError


@dataclass(frozen=True, slots=True)
class GroupDeadLetterQueue:
    """A group's dead-letter queue: ``topic`` None when the group has none.

    ``active``: the cluster writes to it (``share.version`` 2). ``records`` and the
    reason counts are None when they were not read (no DLQ, the cluster ignores it,
    the topic could not be read); ``complete`` False when the read ran out of time
    before the topic's end (the counts are a floor). ``newest_timestamp_ms`` is the
    newest dead letter's CreateTime, which Kafka sets to its write time. ``note`` says
    in an operator's words what is missing or partial, None when nothing is.
    ``read_at_ms`` is when the counts were read (the newest's age is taken then).
    """

    group_id: str
    topic: str | None
    active: bool
    records: int | None = None
    rejected: int | None = None
    delivery_limit: int | None = None
    other: int | None = None
    newest_timestamp_ms: int | None = None
    complete: bool = True
    note: str | None = None
    read_at_ms: int | None = None

    @property
    def newest_age_s(self) -> float | None:
        """The newest dead letter's age when the counts were read."""
        return None if self.read_at_ms is None else self.age_s(self.read_at_ms)

    def reason_counts(self) -> dict[str, int]:
        """The counts by ``DeadLetterReason`` value (``rejected``, ``delivery_limit``,
        ``other``); empty when they were not read."""
        if self.records is None:
            return {}
        return {
            DeadLetterReason.REJECTED.value: self.rejected or 0,
            DeadLetterReason.DELIVERY_LIMIT.value: self.delivery_limit or 0,
            DeadLetterReason.OTHER.value: self.other or 0,
        }

    def age_s(self, now_ms: int) -> float | None:
        """The newest dead letter's age in seconds at ``now_ms`` (0 if ahead)."""
        if self.newest_timestamp_ms is None:
            return None
        return max(0, now_ms - self.newest_timestamp_ms) / 1000.0


def dlq_software(facts: ClusterFacts) -> bool:
    """Whether the cluster's software has the DLQ (``share.version`` can reach 2):
    a 4.4 cluster at ``share.version`` 1 has the config, stored and ignored."""
    highest = facts.supported_max(SHARE_VERSION)
    return max(highest or 0, facts.share_version or 0) >= DLQ_SHARE_VERSION


async def dead_letter_topics(
    client: KafkaClient, group_ids: Sequence[str]
) -> dict[str, DlqTopicAnswer]:
    """Each group's ``errors.deadletterqueue.topic.name``, in one DescribeConfigs.

    Blank (Kafka's default) is None, as is a broker that does not know the key (4.3
    and older list nothing for it); a group the broker would not describe keeps the
    error.
    """
    if not group_ids:
        return {}
    _, response = await client.request(
        DESCRIBE_CONFIGS,
        {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": group_id,
                    "configuration_keys": [DLQ_TOPIC_NAME],
                }
                for group_id in group_ids
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
        min_version=DESCRIBE_CONFIGS_WITH_SOURCE,
    )
    answers: dict[str, DlqTopicAnswer] = {}
    results = describe_results_for(response, GROUP_RESOURCE, group_ids)
    for group_id in group_ids:
        result = results[group_id]
        if isinstance(result, KafkaError):
            answers[group_id] = result
            continue
        value = next(
            (config.value for config in result.configs if config.name == DLQ_TOPIC_NAME), None
        )
        answers[group_id] = None if value is None else (value.strip() or None)
    return answers


class DeadLetterQueues:
    """The DLQ topics' counters of one caller, kept across its reads.

    A one-shot command makes one, reads once (or twice: ``health``'s two samples),
    and closes it; the dashboard and the exporter keep theirs, so each read only
    reads what was written since. A topic no longer asked for is forgotten.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._config = dict(config)
        self._counters: dict[str, DeadLetterCounter] = {}
        self._lock = threading.Lock()

    def count(self, topics: Collection[str], timeout_s: float) -> dict[str, DeadLetterTally]:
        """Each topic's tally, read side by side within ``timeout_s`` (blocking)."""
        with self._lock:
            for gone in set(self._counters) - set(topics):
                self._counters.pop(gone).close()
            counters = [
                self._counters.setdefault(topic, DeadLetterCounter(self._config, topic))
                for topic in sorted(topics)
            ]
        if len(counters) == 1:
            return {counters[0].topic: counters[0].read(timeout_s)}
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(_PARALLEL, max(1, len(counters)))) as pool:
            tallies = list(pool.map(lambda counter: counter.read(timeout_s), counters))
        return {tally.topic: tally for tally in tallies}

    def close(self) -> None:
        with self._lock:
            counters, self._counters = list(self._counters.values()), {}
        for counter in counters:
            counter.close()


#: DLQ topics read side by side, at most this many at once (each one blocking reader).
_PARALLEL: Final = 4


async def group_dead_letter_queues(
    client: KafkaClient,
    facts: ClusterFacts,
    group_ids: Sequence[str],
    queues: DeadLetterQueues,
    timeout_s: float,
    *,
    stopped_early: str = "the read ran out of time",
) -> dict[str, GroupDeadLetterQueue]:
    """Each group's dead-letter queue: its topic from the group configs, its counts from
    ``queues`` (read in a thread within ``timeout_s``). ``stopped_early`` says what ended
    a read before the topic's end (``--timeout`` for a command).

    A cluster whose software has no DLQ is not asked: every group gets ``topic`` None
    and the cluster's lack as its note. A cluster at ``share.version`` 1 is asked (the
    config may be set): a group with a topic is shown with the lack, and not read.
    """
    lacking = facts.dead_letter_queue_lacking()
    if not dlq_software(facts):
        return {
            group_id: GroupDeadLetterQueue(group_id, None, False, note=lacking)
            for group_id in group_ids
        }
    answers = await dead_letter_topics(client, group_ids)
    topics = {topic for topic in answers.values() if isinstance(topic, str)}
    tallies: dict[str, DeadLetterTally] = {}
    if lacking is None and topics:
        tallies = await asyncio.to_thread(queues.count, topics, timeout_s)
    return {
        group_id: _queue(group_id, answers.get(group_id), lacking, tallies, stopped_early)
        for group_id in group_ids
    }


def _queue(
    group_id: str,
    answer: DlqTopicAnswer,
    lacking: str | None,
    tallies: Mapping[str, DeadLetterTally],
    stopped_early: str,
) -> GroupDeadLetterQueue:
    if isinstance(answer, KafkaError):
        return GroupDeadLetterQueue(
            group_id,
            None,
            lacking is None,
            note=f"its {DLQ_TOPIC_NAME} could not be read: {answer}",
        )
    if answer is None:
        return GroupDeadLetterQueue(group_id, None, lacking is None, note=lacking)
    if lacking is not None:
        return GroupDeadLetterQueue(
            group_id,
            answer,
            False,
            note=f"{lacking}; nothing is written to {answer}",
        )
    tally = tallies.get(answer)
    if tally is None or (tally.error is not None and not tally.groups):
        why = "not read" if tally is None else tally.error
        if tally is not None and tally.missing:
            why = "it does not exist: the broker archives the group's records without a copy"
        return GroupDeadLetterQueue(group_id, answer, True, complete=False, note=f"{answer}: {why}")
    letters = tally.group(group_id)
    note = None
    if tally.error is not None:
        note = f"{answer} could not be read to its end: {tally.error}; the counts are a floor"
    elif not tally.complete:
        note = (
            f"{answer}: {stopped_early} with about {tally.unread} records unread; "
            "the counts are a floor"
        )
    return GroupDeadLetterQueue(
        group_id,
        answer,
        True,
        records=letters.records,
        rejected=letters.count(DeadLetterReason.REJECTED),
        delivery_limit=letters.count(DeadLetterReason.DELIVERY_LIMIT),
        other=letters.count(DeadLetterReason.OTHER),
        newest_timestamp_ms=letters.newest_timestamp_ms,
        complete=tally.complete and tally.error is None,
        note=note,
        read_at_ms=time.time_ns() // 1_000_000,
    )
