"""Dead letters in Kafka's own format: what ``kshare audit archived --dlq-topic`` produces.

Kafka 4.4's share groups write their own dead-letter queue (KIP-1191:
``ShareGroupDLQRecordHelper``, called from ``SharePartition`` when a record
turns ARCHIVING). kshare writes the same records for what the state topic
says was archived -- for a 4.2 or 4.3 cluster, or what a 4.4 broker archived
before its group had a DLQ -- so one consumer reads both, field for field as
the recorded ``tests/golden/kafka-4.4/scenario-d*-dlq.jsonl`` (the header
names, Kafka's texts and their decoding are ``kafka/dead_letters.py``'s, which
the readers of a DLQ topic share):

* the headers of ``DLQ_HEADERS``, in Kafka's order, each UTF-8 text, numbers
  in decimal; the topic by name, by its id when the name is unknown;
  ``__dlq.errors.message`` is the text of the cause;
* null key and value, unless the group's
  ``errors.deadletterqueue.copy.record.enable`` is true or the operator asks
  (``copy_record``); then the original ones, none when the source no longer
  holds the record;
* no original headers, as Kafka; with ``keep_headers`` they come ahead of
  Kafka's (trace ids, content types), except any named like Kafka's (the
  source may itself be a DLQ), so each ``__dlq.*`` header appears once and
  says where this record came from;
* the time of writing as timestamp (Kafka: wall-clock time, CreateTime);
* DLQ partition = source partition modulo the DLQ topic's partitions, as Kafka's
  ``dlqDestinationPartition``, not the key's hash.

The state topic does not keep why a record was archived, and neither does
Kafka: resuming an interrupted DLQ write, ``SharePartition`` infers it from
the delivery count (at or above the group's delivery count limit: the count
was exceeded; below it: the client rejected it). ``with_reasons`` gives each
record its reason by that rule, and the reason gives the message; without the
limit (the cluster would not say) the message header is left out, as Kafka
leaves it out of a record with no cause.

A run never produces a dead letter twice, nor one the broker wrote: first the
DLQ topic is read to its end -- and the group's own broker DLQ topic, when it
is another -- and every record of the group already there (by its
``__dlq.errors.group``, ``.topic``, ``.partition`` and ``.offset`` headers,
whoever wrote it) is skipped. When the group's broker DLQ is on, a record
still ARCHIVING is the broker's to write (it resumes the write when it loads
the share-partition): left to it, never produced.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kshare_cli.dataplane.clients import new_producer, new_reader
from kshare_cli.dataplane.errors import ErrorKind, classify, error_text, is_transient
from kshare_cli.dataplane.offsets import topic_metadata, watermark_offsets
from kshare_cli.kafka.dead_letters import (
    DeadLetterReason,
    DlqCause,
    DlqHeader,
    decode_dead_letter,
)
from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.pipeline.models import ArchivedRecord, DeadLetterCount

__all__ = [
    "DLQ_HEADERS",
    "DeadLetterError",
    "DlqCause",
    "DlqHeader",
    "archive_reason",
    "dead_letter_headers",
    "dlq_partition",
    "produce_dead_letters",
    "with_reasons",
]

_PRODUCE_POLL_EVERY: Final = 1000
_READ_BATCH: Final = 500
_ARCHIVING: Final = DeliveryState.ARCHIVING.name.lower()

Headers = list[tuple[str, str | bytes | None]]

#: A dead letter's source, as its headers name it: group, topic (a name, or an id as
#: text when Kafka could not resolve the name), partition and offset.
_Source = tuple[str, str, int, int]

_CAUSES: Final = {
    DeadLetterReason.REJECTED: DlqCause.CLIENT_REJECT,
    DeadLetterReason.DELIVERY_LIMIT: DlqCause.DELIVERY_COUNT_EXCEEDED,
}


def archive_reason(delivery_count: int, delivery_limit: int | None) -> DeadLetterReason | None:
    """Why a record with this delivery count was archived, by Kafka's rule; None unknown."""
    if delivery_limit is None:
        return None
    if delivery_count >= delivery_limit:
        return DeadLetterReason.DELIVERY_LIMIT
    return DeadLetterReason.REJECTED


def dlq_partition(source_partition: int, dlq_partitions: int) -> int:
    """The DLQ partition of a source partition's dead letters (Kafka's dlqDestinationPartition)."""
    return source_partition % dlq_partitions


def with_reasons(
    records: Iterable[ArchivedRecord], delivery_limit: int | None
) -> tuple[ArchivedRecord, ...]:
    """The records with their reason, by Kafka's rule (``archive_reason``), where they have
    none yet; unchanged without the limit (the cluster would not say)."""
    return tuple(
        record
        if record.reason is not None
        else dataclasses.replace(
            record, reason=_value(archive_reason(record.delivery_count, delivery_limit))
        )
        for record in records
    )


def _value(reason: DeadLetterReason | None) -> str | None:
    return None if reason is None else reason.value


def _cause(record: ArchivedRecord, limit: int | None) -> str | None:
    reason = archive_reason(record.delivery_count, limit)
    if record.reason is not None:
        reason = DeadLetterReason(record.reason)
    cause = None if reason is None else _CAUSES.get(reason)
    return None if cause is None else cause.value


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


class DeadLetterError(Exception):
    """Dead letters were not produced, or not all; the message says how many and why."""


def _kafka_headers(record: ArchivedRecord, delivery_limit: int | None) -> Headers:
    return [
        (name.value, text.encode())
        for name, value_of in DLQ_HEADERS.items()
        if (text := value_of(record, delivery_limit)) is not None
    ]


def dead_letter_headers(
    record: ArchivedRecord, delivery_limit: int | None, *, keep_headers: bool = False
) -> Headers:
    """Kafka's DLQ headers; with keep_headers the record's own first (see the module's
    docstring)."""
    own: Headers = []
    if keep_headers:
        own = [(name, value) for name, value in record.headers or () if name not in DLQ_HEADERS]
    return own + _kafka_headers(record, delivery_limit)


def _sources(record: ArchivedRecord) -> tuple[_Source, ...]:
    """The sources a dead letter of the record may name: its topic by name, or by id (Kafka
    writes the id when it cannot resolve the name)."""
    names = dict.fromkeys(filter(None, (record.topic, record.topic_id)))
    return tuple((record.group_id, name, record.partition, record.offset) for name in names)


def _source_of(headers: Any, group_id: str) -> _Source | None:
    """The source a DLQ record is the dead letter of, if it is one of the group's."""
    letter = decode_dead_letter(headers)
    if (
        letter is None
        or letter.group_id != group_id
        or letter.topic is None
        or letter.partition is None
        or letter.offset is None
    ):
        return None
    return (letter.group_id, letter.topic, letter.partition, letter.offset)


def _reader(config: Mapping[str, Any]) -> Consumer:
    """The data plane's reader: assign(), a throwaway group id, nothing ever committed."""
    return new_reader(config, "dlq", **{"enable.partition.eof": True})


def _already_there(
    config: Mapping[str, Any],
    topic: str,
    group_id: str,
    deadline: float,
    *,
    must_exist: bool = True,
) -> tuple[set[_Source], int]:
    """The source records the DLQ topic already holds dead letters of for the group, read
    to the topic's end; and how many partitions the topic has (0: it does not exist, and
    need not)."""

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadLetterError(
                f"cannot read what {topic} already holds in time: nothing was produced"
            )
        return left

    present: set[_Source] = set()
    consumer = _reader(config)
    try:
        remaining()
        # A topic just created is listed with LEADER_NOT_AVAILABLE until its leader is
        # elected; one the audit saw exist may be unknown for a moment to this broker.
        found = topic_metadata(consumer, topic, deadline, missing_passes=must_exist)
        if found is None or found.error is not None or not found.partitions:
            if not must_exist:
                return present, 0
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
                source = _source_of(message.headers(), group_id)
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


def _idempotent_producer(config: Mapping[str, Any], fatal: list[str]) -> Any:
    """An idempotent producer (acks=all) that notes each fatal error in fatal."""

    def on_error(error: KafkaError) -> None:
        # librdkafka retries everything else by itself; a fatal error ends the producer.
        if error.fatal():
            fatal.append(error.str())

    return new_producer(
        {
            **config,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "error_cb": on_error,
        }
    )


def _produce(producer: Any, topic: str, message: dict[str, Any], fatal: list[str]) -> None:
    """Produce one message, waiting while the producer's queue is full; a fatal producer
    error or a refused message is a DeadLetterError."""
    while True:
        try:
            producer.produce(topic, **message)
        except BufferError:
            producer.poll(0.1)
            if fatal:
                raise DeadLetterError(f"cannot produce to {topic}: {fatal[0]}") from None
        except KafkaException as error:
            raise DeadLetterError(f"cannot produce to {topic}: {error_text(error)}") from None
        else:
            return


def produce_dead_letters(
    records: Iterable[ArchivedRecord],
    config: Mapping[str, Any],
    topic: str,
    group_id: str,
    *,
    delivery_limit: int | None,
    copy_record: bool = False,
    keep_headers: bool = False,
    broker_topic: str | None = None,
    timeout_s: float = 60.0,
) -> DeadLetterCount:
    """Produce the dead letter of each archived record no DLQ topic holds yet, as Kafka would.

    copy_record puts the original key and value in (Kafka's
    ``errors.deadletterqueue.copy.record.enable``), keep_headers the original
    headers ahead of Kafka's. broker_topic is the group's own DLQ topic when
    the broker writes one (Kafka 4.4, share.version 2, the group config set):
    what it holds for the group counts as already there too, and a record
    still ARCHIVING is left to the broker. What the topics already hold is
    read first (to their end, within ``timeout_s``; a failure produces
    nothing), so a second run, or a follow restarted, adds nothing twice. The
    producer is idempotent with acks=all, every delivery report is checked,
    and a record that was not delivered raises DeadLetterError after the
    others were flushed: nothing is lost silently.
    """
    deadline = time.monotonic() + timeout_s
    present, partitions = _already_there(config, topic, group_id, deadline)
    if broker_topic is not None and broker_topic != topic:
        # The broker creates its topic at its first write (with auto-create): none, nothing yet.
        written, _ = _already_there(config, broker_topic, group_id, deadline, must_exist=False)
        present |= written
    fatal: list[str] = []
    producer = _idempotent_producer(config, fatal)
    delivered = 0
    failures: list[str] = []
    sent = 0
    skipped = 0
    left_to_broker = 0

    def report(error: KafkaError | None, message: Message) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1
        else:
            failures.append(error.str())

    for record in records:
        sources = _sources(record)
        if any(source in present for source in sources):
            skipped += 1
            continue
        if broker_topic is not None and record.state == _ARCHIVING:
            left_to_broker += 1
            continue
        present.update(sources)  # an archived record comes once; this keeps it so
        _produce(
            producer,
            topic,
            {
                "key": record.key if copy_record else None,
                "value": record.value if copy_record else None,
                "headers": dead_letter_headers(record, delivery_limit, keep_headers=keep_headers),
                "partition": dlq_partition(record.partition, partitions),
                "on_delivery": report,
            },
            fatal,
        )
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
    return DeadLetterCount(produced=delivered, already_there=skipped, left_to_broker=left_to_broker)
