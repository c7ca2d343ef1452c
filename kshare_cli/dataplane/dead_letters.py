"""Counting a DLQ topic's dead letters by share group and reason, reading only what is new.

Kafka 4.4 writes a share group's dead letters to the topic its
``errors.deadletterqueue.topic.name`` names, each with ``__dlq.errors.*``
headers (``kafka/dead_letters.py`` decodes them). Several groups may share a
topic, and a topic may hold millions of records, so a ``DeadLetterCounter``
reads one topic for every group at once, and remembers where it stopped in
each partition: a long-lived caller (the dashboard, the exporter, ``health``'s
second sample) reads only the records written since its last read. A first
read starts at each partition's log start offset; it is bounded by the
caller's timeout, and a read that ran out of time says so (``complete`` False,
``unread`` records left) and goes on from there next time.

Counts only grow: a record that retention deletes after it was counted stays
counted (the count is of the records the broker wrote while kshare watched, as
a Prometheus counter must be); a first read counts what the topic still holds.

A plain reader (``assign()``, no group joined, nothing committed), so reading
changes nothing on the cluster. Blocking: run it in a thread from async code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.dataplane.clients import new_reader
from kshare_cli.dataplane.errors import (
    MISSING_TOPIC,
    ErrorKind,
    classify,
    error_text,
    is_transient,
)
from kshare_cli.dataplane.offsets import watermark_offsets
from kshare_cli.kafka.dead_letters import DeadLetterReason, decode_dead_letter

if TYPE_CHECKING:
    from confluent_kafka import Consumer

__all__ = ["DeadLetterCounter", "DeadLetterTally", "GroupDeadLetters"]

_READ_BATCH: Final = 1000
#: consume() waits its whole timeout unless a full batch arrives: short slices.
_SLICE_S: Final = 0.2


@dataclass(frozen=True, slots=True)
class GroupDeadLetters:
    """One group's dead letters in a DLQ topic: how many, by reason, and the newest's
    CreateTime (epoch milliseconds; Kafka stamps a dead letter with its write time)."""

    records: int = 0
    by_reason: Mapping[DeadLetterReason, int] = field(default_factory=dict)
    newest_timestamp_ms: int | None = None

    def count(self, reason: DeadLetterReason) -> int:
        return self.by_reason.get(reason, 0)


@dataclass(frozen=True, slots=True)
class DeadLetterTally:
    """What a DLQ topic held (or was written since the counter began), by group.

    ``complete``: every partition was read to the high watermark found at the start
    of the read; otherwise ``unread`` records were left for the next read. ``error``
    says why the topic could not be read at all (``missing``: it does not exist).
    ``records_read`` is how many records this counter has read in all.
    """

    topic: str
    groups: Mapping[str, GroupDeadLetters] = field(default_factory=dict)
    complete: bool = True
    unread: int = 0
    records_read: int = 0
    error: str | None = None
    missing: bool = False

    def group(self, group_id: str) -> GroupDeadLetters:
        return self.groups.get(group_id) or GroupDeadLetters()


class DeadLetterCounter:
    """Counts one DLQ topic's dead letters by group and reason, incrementally.

    ``read`` goes from where the last read stopped in each partition (the log start
    offset at first, or if retention passed it) to the high watermark it finds, within
    its timeout. One read at a time (a lock); ``close`` releases the reader.
    """

    def __init__(self, config: Mapping[str, Any], topic: str) -> None:
        self._config = dict(config)
        self._topic = topic
        self._lock = threading.Lock()
        self._consumer: Consumer | None = None
        self._positions: dict[int, int] = {}
        self._counts: dict[str, dict[DeadLetterReason, int]] = {}
        self._newest: dict[str, int] = {}
        self._records_read = 0

    @property
    def topic(self) -> str:
        return self._topic

    def read(self, timeout_s: float) -> DeadLetterTally:
        """Read what was written since the last read (everything, the first time)."""
        from confluent_kafka import KafkaException

        with self._lock:
            deadline = time.monotonic() + max(0.0, timeout_s)
            try:
                return self._read(deadline)
            except KafkaException as failure:
                return self._tally(complete=False, error=error_text(failure))

    def close(self) -> None:
        with self._lock:
            consumer, self._consumer = self._consumer, None
            if consumer is not None:
                consumer.close()

    # ------------------------------------------------------------------ reading

    def _reader(self) -> Consumer:
        if self._consumer is None:
            self._consumer = new_reader(
                self._config,
                "dlq-count",
                **{
                    "enable.partition.eof": True,
                    # Retention may have deleted where the last read stopped: go on from
                    # the first record still there.
                    "auto.offset.reset": "earliest",
                    "fetch.wait.max.ms": 100,
                },
            )
        return self._consumer

    def _read(self, deadline: float) -> DeadLetterTally:
        from confluent_kafka import TopicPartition

        consumer = self._reader()
        topic = self._topic
        left = deadline - time.monotonic()
        if left <= 0:
            return self._tally(complete=False, error="no time left to read it")
        described = consumer.list_topics(topic, timeout=left).topics.get(topic)
        if described is None or described.error is not None:
            if described is not None and classify(described.error) in MISSING_TOPIC:
                return self._tally(complete=False, error="the topic does not exist", missing=True)
            problem = "no metadata" if described is None else described.error.str()
            return self._tally(complete=False, error=problem)
        ends: dict[int, int] = {}
        starts: list[TopicPartition] = []
        for partition in sorted(described.partitions):
            low, high = watermark_offsets(consumer, topic, partition, deadline)
            start = max(self._positions.get(partition, low), low)
            if start < high:
                ends[partition] = high
                starts.append(TopicPartition(topic, partition, start))
            else:
                self._positions[partition] = max(start, high)
        if not ends:
            return self._tally(complete=True)
        consumer.assign(starts)
        try:
            while ends:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                for message in consumer.consume(_READ_BATCH, min(_SLICE_S, left)):
                    self._take(message, ends)
        finally:
            consumer.unassign()
        unread = sum(max(0, high - self._positions.get(p, 0)) for p, high in ends.items())
        return self._tally(complete=not ends, unread=unread)

    def _take(self, message: Any, ends: dict[int, int]) -> None:
        partition = message.partition() or 0
        error = message.error()
        if error is not None:
            if classify(error) is ErrorKind.PARTITION_EOF:
                if partition in ends:
                    self._positions[partition] = max(
                        self._positions.get(partition, 0), message.offset() or 0
                    )
                    ends.pop(partition, None)
            elif not is_transient(error):
                from confluent_kafka import KafkaException

                raise KafkaException(error)
            return
        offset = message.offset()
        if offset is None:
            return
        self._positions[partition] = offset + 1
        self._records_read += 1
        if partition in ends and offset + 1 >= ends[partition]:
            del ends[partition]
        letter = decode_dead_letter(message.headers())
        if letter is None:
            return
        counts = self._counts.setdefault(letter.group_id, {})
        counts[letter.reason] = counts.get(letter.reason, 0) + 1
        kind, stamp = message.timestamp()
        if kind != 0 and stamp >= 0:  # TIMESTAMP_NOT_AVAILABLE is 0
            self._newest[letter.group_id] = max(self._newest.get(letter.group_id, stamp), stamp)

    def _tally(
        self,
        *,
        complete: bool,
        unread: int = 0,
        error: str | None = None,
        missing: bool = False,
    ) -> DeadLetterTally:
        groups = {
            group_id: GroupDeadLetters(
                sum(counts.values()), dict(counts), self._newest.get(group_id)
            )
            for group_id, counts in self._counts.items()
        }
        return DeadLetterTally(
            self._topic, groups, complete, unread, self._records_read, error, missing
        )
