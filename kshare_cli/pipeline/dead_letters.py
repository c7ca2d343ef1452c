"""Dead letters in Kafka's own format: what ``kshare audit archived --dlq-topic`` produces.

Kafka 4.4's share groups write their own dead-letter queue (KIP-1191:
``ShareGroupDLQRecordHelper``, called from ``SharePartition`` when a record
turns ARCHIVING). kshare writes the same records for what the state topic
says was archived, so one consumer reads both, and a group moving from kshare's
audit to Kafka's DLQ (or the other way) finds the same shape:

* the headers of ``DLQ_HEADERS``, in Kafka's order, each UTF-8 text, numbers
  in decimal (``Integer/Long/Short.toString``); the topic by name, by its id
  when the name is unknown; ``__dlq.errors.message`` is the text of the cause;
* the original key and value (Kafka copies them only with the group config
  ``errors.deadletterqueue.copy.record.enable``, default false; re-publishing
  the records is what the operator asked kshare for), none when the source no
  longer holds the record, as Kafka writes a headers-only record then;
* the original headers ahead of Kafka's -- Kafka 4.4 drops them, kshare keeps
  what the operator's consumers may need (trace ids, content types) -- except
  any named like Kafka's (the source may itself be a DLQ), so each ``__dlq.*``
  header appears once and says where this record came from;
* the time of writing as timestamp (Kafka: wall-clock time, CreateTime);
* DLQ partition = source partition modulo the DLQ topic's partitions, as Kafka's
  ``dlqDestinationPartition``, not the key's hash.

The state topic does not keep why a record was archived, and neither does
Kafka: resuming an interrupted DLQ write, ``SharePartition`` infers it from the
delivery count (at or above the group's delivery count limit: the count was
exceeded; below it: the client rejected it). kshare uses that rule; without
the limit (the cluster would not say) the message header is left out, as
Kafka leaves it out of a record with no cause.

A run never produces a dead letter twice: first the DLQ topic is read to its
end, and every record of the group already there (by its ``__dlq.errors.group``,
``.topic``, ``.partition`` and ``.offset`` headers, whoever wrote it) is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kshare_cli.dataplane.clients import new_producer, new_reader
from kshare_cli.dataplane.errors import ErrorKind, classify, error_text, is_transient
from kshare_cli.dataplane.offsets import watermark_offsets
from kshare_cli.pipeline.models import ArchivedRecord, DeadLetterCount

__all__ = [
    "DLQ_HEADERS",
    "DeadLetterError",
    "DlqCause",
    "DlqHeader",
    "dead_letter_headers",
    "dlq_partition",
    "produce_dead_letters",
]

_PRODUCE_POLL_EVERY: Final = 1000
_READ_BATCH: Final = 500

Headers = list[tuple[str, str | bytes | None]]


class DlqHeader(StrEnum):
    """The names of Kafka's DLQ headers (``ShareGroupDLQRecordHelper.HEADER_DLQ_ERRORS_*``)."""

    TOPIC = "__dlq.errors.topic"
    PARTITION = "__dlq.errors.partition"
    OFFSET = "__dlq.errors.offset"
    GROUP = "__dlq.errors.group"
    DELIVERY_COUNT = "__dlq.errors.delivery.count"
    MESSAGE = "__dlq.errors.message"


class DlqCause(StrEnum):
    """Kafka's texts for ``__dlq.errors.message``: the messages of
    ``ShareGroupDLQManager.CLIENT_REJECT`` and ``DELIVERY_COUNT_EXCEEDED``."""

    CLIENT_REJECT = "Offset rejected by client."
    DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."


def _cause(record: ArchivedRecord, limit: int | None) -> str | None:
    if limit is None:
        return None
    if record.delivery_count >= limit:
        return DlqCause.DELIVERY_COUNT_EXCEEDED.value
    return DlqCause.CLIENT_REJECT.value


#: Each DLQ header, in the order Kafka adds them, and its text for an archived
#: record given the group's delivery count limit (None: Kafka adds no such header).
DLQ_HEADERS: Final[Mapping[DlqHeader, Callable[[ArchivedRecord, int | None], str | None]]] = {
    DlqHeader.TOPIC: lambda record, _: record.topic or record.topic_id,
    DlqHeader.PARTITION: lambda record, _: str(record.partition),
    DlqHeader.OFFSET: lambda record, _: str(record.offset),
    DlqHeader.GROUP: lambda record, _: record.group_id,
    DlqHeader.DELIVERY_COUNT: lambda record, _: str(record.delivery_count),
    DlqHeader.MESSAGE: _cause,
}

#: The headers that name a dead letter's source record: a record of the DLQ topic
#: with the same values is that record's dead letter, whoever wrote it.
_SOURCE: Final = (DlqHeader.TOPIC, DlqHeader.PARTITION, DlqHeader.OFFSET)

_Source = tuple[str | bytes | None, ...]


class DeadLetterError(Exception):
    """Dead letters were not produced, or not all; the message says how many and why."""


def _kafka_headers(record: ArchivedRecord, delivery_limit: int | None) -> dict[str, bytes]:
    return {
        name.value: text.encode()
        for name, value_of in DLQ_HEADERS.items()
        if (text := value_of(record, delivery_limit)) is not None
    }


def dead_letter_headers(record: ArchivedRecord, delivery_limit: int | None) -> Headers:
    """A record's own headers, then Kafka's DLQ headers (see the module's docstring)."""
    own: Headers = [
        (name, value) for name, value in record.headers or () if name not in DLQ_HEADERS
    ]
    kafka: Headers = list(_kafka_headers(record, delivery_limit).items())
    return own + kafka


def dlq_partition(source_partition: int, dlq_partitions: int) -> int:
    """The DLQ partition of a source partition's dead letters (Kafka's dlqDestinationPartition)."""
    return source_partition % dlq_partitions


def _source_of(
    headers: Mapping[str, str | bytes | None] | Sequence[tuple[str, str | bytes | None]] | None,
    group: bytes,
) -> _Source | None:
    """Which source record a DLQ record is the dead letter of, if it is one of the group's.

    The last header of each name counts, as Kafka's ``Headers.lastHeader``.
    """
    last: dict[str, str | bytes | None] = dict(headers or ())
    if last.get(DlqHeader.GROUP) != group:
        return None
    return tuple(last.get(name) for name in _SOURCE)


def _reader(config: Mapping[str, Any]) -> Consumer:
    """The data plane's reader: assign(), a throwaway group id, nothing ever committed."""
    return new_reader(config, "dlq", **{"enable.partition.eof": True})


def _already_there(
    config: Mapping[str, Any], topic: str, group_id: str, deadline: float
) -> tuple[set[_Source], int]:
    """The source records the DLQ topic already holds dead letters of for the group, read
    to the topic's end; and how many partitions the topic has."""

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadLetterError(
                f"cannot read what {topic} already holds in time: nothing was produced"
            )
        return left

    group = group_id.encode()
    present: set[_Source] = set()
    consumer = _reader(config)
    try:
        found = consumer.list_topics(topic, timeout=remaining()).topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            problem = found.error.str() if found is not None and found.error else "no partitions"
            raise DeadLetterError(f"cannot read {topic}: {problem}")
        ends: dict[int, int] = {}
        starts: list[TopicPartition] = []
        for partition in sorted(found.partitions):
            # A topic just created: its leader may answer NOT_LEADER_OR_FOLLOWER for a moment.
            low, high = watermark_offsets(consumer, topic, partition, deadline)
            if high > low:
                ends[partition] = high
                starts.append(TopicPartition(topic, partition, low))
        consumer.assign(starts)
        while ends:
            # consume() waits its whole timeout unless a full batch arrives: short slices.
            for message in consumer.consume(_READ_BATCH, min(0.2, remaining())):
                partition = message.partition()
                error = message.error()
                if error is not None:
                    if classify(error) is ErrorKind.PARTITION_EOF:
                        ends.pop(partition or 0, None)
                    elif not is_transient(error):
                        raise DeadLetterError(f"cannot read {topic}: {error.str()}")
                    continue
                source = _source_of(message.headers(), group)
                if source is not None:
                    present.add(source)
                offset = message.offset()
                if partition in ends and offset is not None and offset + 1 >= ends[partition]:
                    del ends[partition]
        return present, len(found.partitions)
    except KafkaException as error:
        raise DeadLetterError(f"cannot read {topic}: {error_text(error)}") from None
    finally:
        consumer.close()


def produce_dead_letters(
    records: Iterable[ArchivedRecord],
    config: Mapping[str, Any],
    topic: str,
    group_id: str,
    *,
    delivery_limit: int | None,
    timeout_s: float = 60.0,
) -> DeadLetterCount:
    """Produce the dead letter of each archived record the DLQ topic does not hold yet.

    What the topic already holds for ``group_id`` is read first (to its end,
    within ``timeout_s``; a failure produces nothing), so a second run, or a
    follow restarted, adds nothing twice. The producer is idempotent with
    acks=all, every delivery report is checked, and a record that was not
    delivered raises DeadLetterError after the others were flushed: nothing is
    lost silently.
    """
    present, partitions = _already_there(config, topic, group_id, time.monotonic() + timeout_s)
    fatal: list[str] = []

    def on_error(error: KafkaError) -> None:
        # librdkafka retries everything else by itself; a fatal error ends the producer.
        if error.fatal():
            fatal.append(error.str())

    producer = new_producer(
        {
            **config,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "error_cb": on_error,
        }
    )
    delivered = 0
    failures: list[str] = []
    sent = 0
    skipped = 0

    def report(error: KafkaError | None, message: Message) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1
        else:
            failures.append(error.str())

    for record in records:
        kafka = _kafka_headers(record, delivery_limit)
        source = tuple(kafka.get(name) for name in _SOURCE)
        if source in present:
            skipped += 1
            continue
        present.add(source)  # an archived record comes once; this keeps it so
        while True:
            try:
                producer.produce(
                    topic,
                    key=record.key,
                    value=record.value,
                    headers=dead_letter_headers(record, delivery_limit),
                    partition=dlq_partition(record.partition, partitions),
                    on_delivery=report,
                )
                break
            except BufferError:
                producer.poll(0.1)
                if fatal:
                    raise DeadLetterError(f"cannot produce to {topic}: {fatal[0]}") from None
            except KafkaException as error:
                raise DeadLetterError(f"cannot produce to {topic}: {error_text(error)}") from None
        sent += 1
        if sent % _PRODUCE_POLL_EVERY == 0:
            producer.poll(0)
    remaining = producer.flush(timeout_s)
    if remaining or failures or delivered != sent:
        lost = max(sent - delivered, remaining)
        reasons = failures or fatal
        reason = f": {reasons[0]}" if reasons else f" within {timeout_s:g} s"
        raise DeadLetterError(
            f"{lost} of {sent} archived records were not delivered to {topic}{reason}"
        )
    return DeadLetterCount(produced=delivered, already_there=skipped)
