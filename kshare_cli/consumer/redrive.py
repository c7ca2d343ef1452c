"""Putting dead letters back on a topic, each once: the engine of ``kshare dlq redrive``.

A redriven record is the dead letter's source record again -- its key, value and
original headers -- plus three headers naming the DLQ record it came from
(``REDRIVE_HEADERS``: the DLQ topic, partition and offset). Those headers are the
whole memory of a redrive: before anything is sent, the target topic is read and
every DLQ record some earlier run already redrove there is skipped, so a second
run sends nothing and a run killed halfway (SIGKILL included) and run again sends
each record exactly once in all. Nothing is kept on the machine.

The read starts where a redriven record can first be: a record is redriven after
its dead letter was written, so at the offset ``offsets_for_times`` gives for the
oldest candidate's DLQ timestamp (less ``_CLOCK_SKEW_MS``: the producer stamps
CreateTime with this machine's clock, the broker stamped the dead letter with its
own), not at the log start of what may be a busy topic.

Sending is one idempotent producer with ``acks=all``, paced by ``rate``
(``TokenBucket``), stopped between two records when ``stop`` is set (Ctrl-C,
SIGTERM: ``stop_on_signals``). A record counts as sent only once its delivery
report came back without an error; what is still in flight when the run stops is
flushed first, and what never got a report is counted apart (``unconfirmed``), so
the result says exactly what was sent. Blocking: run it on the main thread.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from kshare_cli.consumer.produce import DEFAULT_PRODUCER_CONFIG, TokenBucket
from kshare_cli.dataplane.clients import new_producer, new_reader
from kshare_cli.dataplane.errors import (
    MISSING_TOPIC,
    ErrorKind,
    classify,
    error_text,
    is_authorization_error,
    is_transient,
    not_authorized,
)
from kshare_cli.dataplane.offsets import offsets_for_times, topic_metadata, watermark_offsets
from kshare_cli.errors import KshareError, NotFound, TimedOut

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

__all__ = [
    "REDRIVE_HEADERS",
    "DlqRecordId",
    "RedriveFailure",
    "RedriveRecord",
    "SendResult",
    "TargetScan",
    "redrive_headers",
    "redriven_from",
    "scan_target",
    "send_records",
    "stop_on_signals",
]

#: The headers a redriven record carries, naming the DLQ record it came from.
HEADER_DLQ_TOPIC: Final = "__kshare.redrive.dlq.topic"
HEADER_DLQ_PARTITION: Final = "__kshare.redrive.dlq.partition"
HEADER_DLQ_OFFSET: Final = "__kshare.redrive.dlq.offset"
REDRIVE_HEADERS: Final = (HEADER_DLQ_TOPIC, HEADER_DLQ_PARTITION, HEADER_DLQ_OFFSET)
_REDRIVE_PREFIX: Final = "__kshare.redrive."

#: How far this machine's clock may lag the broker's for the scan of the target topic.
_CLOCK_SKEW_MS: Final = 15 * 60 * 1000
_READ_BATCH: Final = 1000
_SLICE_S: Final = 0.2
_FLUSH_SLICE_S: Final = 0.2
_QUEUE_FULL_WAIT_S: Final = 0.005

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True, order=True)
class DlqRecordId:
    """Where a dead letter is in its DLQ topic: what a redriven record names."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}@{self.offset}"


@dataclass(frozen=True, slots=True)
class RedriveRecord:
    """A dead letter to put back: where it is, where it came from, and what it held.

    ``headers`` are the source record's own (never Kafka's ``__dlq.*``);
    ``dead_lettered_ms`` is the DLQ record's timestamp (None: unknown).
    """

    dlq: DlqRecordId
    source_topic: str
    source_partition: int
    source_offset: int
    reason: str
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    dead_lettered_ms: int | None = None

    @property
    def source(self) -> str:
        return f"{self.source_topic}:{self.source_partition}@{self.source_offset}"


@dataclass(frozen=True, slots=True)
class RedriveFailure:
    """A record the cluster did not take, and librdkafka's words why."""

    record: RedriveRecord
    error: str

    def __str__(self) -> str:
        return f"{self.record.source} (dead letter {self.record.dlq}): not sent: {self.error}"


def redrive_headers(record: RedriveRecord) -> list[tuple[str, bytes | None]]:
    """The record's own headers (less an earlier redrive's), then the three naming its
    dead letter: a record redriven, dead-lettered again and redriven again names only
    its latest dead letter."""
    own = [(name, value) for name, value in record.headers if not name.startswith(_REDRIVE_PREFIX)]
    return [
        *own,
        (HEADER_DLQ_TOPIC, record.dlq.topic.encode()),
        (HEADER_DLQ_PARTITION, str(record.dlq.partition).encode()),
        (HEADER_DLQ_OFFSET, str(record.dlq.offset).encode()),
    ]


def redriven_from(headers: object) -> DlqRecordId | None:
    """The dead letter a record was redriven from, by its headers; None for any other."""
    if not isinstance(headers, list | tuple) or not headers:
        return None
    found: dict[str, str] = {}
    for name, value in headers:
        if name in REDRIVE_HEADERS and value is not None:
            found[name] = bytes(value).decode("utf-8", "replace")
    try:
        return DlqRecordId(
            found[HEADER_DLQ_TOPIC],
            int(found[HEADER_DLQ_PARTITION]),
            int(found[HEADER_DLQ_OFFSET]),
        )
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class TargetScan:
    """A target topic as a redrive needs it: its partition count, and the dead letters
    already redriven to it (read from ``read_from_ms`` on; None: from its log start)."""

    topic: str
    partitions: int
    redriven: frozenset[DlqRecordId]
    records_read: int = 0
    read_from_ms: int | None = None


def scan_target(
    config: Mapping[str, Any],
    topic: str,
    oldest_dead_letter_ms: int | None,
    timeout_s: float,
) -> TargetScan:
    """Read ``topic`` to its end for records redriven from a dead letter.

    Raises NotFound when the topic does not exist, NotAuthorized without READ on it
    (or DESCRIBE), TimedOut when it cannot be read to its end within ``timeout_s``.
    """
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
    bootstrap = str(config.get("bootstrap.servers", ""))
    reader = new_reader(
        config, "redrive", **{"enable.partition.eof": True, "auto.offset.reset": "earliest"}
    )
    try:
        try:
            found = topic_metadata(reader, topic, deadline)
        except KafkaException as failure:
            raise _read_error(failure, topic, bootstrap) from None
        if found is None or (found.error is not None and classify(found.error) in MISSING_TOPIC):
            raise NotFound(f"topic {topic!r} does not exist")
        if found.error is not None:
            raise _read_error(found.error, topic, bootstrap)
        partitions = sorted(found.partitions)
        read_from = None
        if oldest_dead_letter_ms is not None:
            read_from = max(0, oldest_dead_letter_ms - _CLOCK_SKEW_MS)
        try:
            starts, ends = _read_range(reader, topic, partitions, read_from, deadline)
        except KafkaException as failure:
            raise _read_error(failure, topic, bootstrap) from None
        redriven: set[DlqRecordId] = set()
        read = 0
        if ends:
            reader.assign([TopicPartition(topic, p, starts[p]) for p in ends])
            while ends:
                left = deadline - time.monotonic()
                if left <= 0:
                    unread = sum(ends.values())
                    raise TimedOut(
                        f"cannot read {topic!r} to its end in time (what was already "
                        f"redriven there must be known first): nothing was sent"
                        f"{f'; about {unread} offsets unread' if unread else ''}"
                    )
                for message in reader.consume(_READ_BATCH, min(_SLICE_S, left)):
                    error = message.error()
                    partition = message.partition() or 0
                    if error is not None:
                        if classify(error) is ErrorKind.PARTITION_EOF:
                            ends.pop(partition, None)
                        elif not is_transient(error):
                            raise _read_error(error, topic, bootstrap)
                        continue
                    read += 1
                    source = redriven_from(message.headers())
                    if source is not None:
                        redriven.add(source)
                    offset = message.offset()
                    if partition in ends and offset is not None and offset + 1 >= ends[partition]:
                        del ends[partition]
        return TargetScan(topic, len(partitions), frozenset(redriven), read, read_from)
    finally:
        reader.close()


def _read_range(
    reader: Any,
    topic: str,
    partitions: Sequence[int],
    read_from_ms: int | None,
    deadline: float,
) -> tuple[dict[int, int], dict[int, int]]:
    """Each partition's first offset to read and its high watermark (only those with
    something to read)."""
    from confluent_kafka import TopicPartition

    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for partition in partitions:
        low, high = watermark_offsets(reader, topic, partition, deadline)
        if high > low:
            starts[partition], ends[partition] = low, high
    if read_from_ms is not None and ends:
        asked = [TopicPartition(topic, p, read_from_ms) for p in ends]
        for answer in offsets_for_times(reader, asked, deadline):
            # -1: no record that new; then nothing there was redriven after that time.
            if answer.error is None and answer.offset is not None:
                at = answer.offset if answer.offset >= 0 else ends[answer.partition]
                starts[answer.partition] = max(starts[answer.partition], at)
        for partition in [p for p in ends if starts[p] >= ends[p]]:
            del ends[partition]
    return starts, ends


def _read_error(error: object, topic: str, bootstrap: str) -> KshareError:
    if is_authorization_error(error):
        return not_authorized(error, bootstrap)
    return KshareError(f"cannot read {topic!r}: {error_text(error)}")


# ------------------------------------------------------------------------------ sending

StopReason = Literal["done", "interrupted", "failed"]


@dataclass(frozen=True, slots=True)
class SendResult:
    """What a run sent, exactly.

    ``delivered``: the records whose delivery report came back without an error, in
    that order. ``failures``: those the cluster refused. ``unconfirmed``: handed to
    the producer but with no report when waiting was given up (a second Ctrl-C):
    they may or may not be there, and a rerun finds out. ``not_sent``: never handed
    to the producer. ``fatal``: the error that ended the producer, if one did.
    """

    planned: int
    delivered: tuple[RedriveRecord, ...] = ()
    failures: tuple[RedriveFailure, ...] = ()
    unconfirmed: tuple[RedriveRecord, ...] = ()
    not_sent: int = 0
    stopped_by: StopReason = "done"
    fatal: str | None = None
    elapsed_s: float = 0.0


@dataclass(slots=True)
class _Reports:
    delivered: list[RedriveRecord] = field(default_factory=list)
    failures: list[RedriveFailure] = field(default_factory=list)
    waiting: dict[int, RedriveRecord] = field(default_factory=dict)
    fatal: list[str] = field(default_factory=list)

    def report(self, ticket: int) -> Callable[[KafkaError | None, Message], None]:
        def delivered(error: KafkaError | None, _message: Message) -> None:
            record = self.waiting.pop(ticket)
            if error is None:
                self.delivered.append(record)
            else:
                self.failures.append(RedriveFailure(record, error_text(error)))

        return delivered

    def client_error(self, error: KafkaError) -> None:
        # librdkafka retries everything else by itself; a fatal error ends the producer
        # (an idempotent producer's sequence broken).
        if error.fatal():
            self.fatal.append(error_text(error))


def send_records(
    config: Mapping[str, Any],
    records: Sequence[tuple[RedriveRecord, str, int]],
    *,
    rate: float | None = None,
    stop: threading.Event | None = None,
    timeout_s: float = 30.0,
    on_delivered: Callable[[int], None] | None = None,
) -> SendResult:
    """Produce each ``(record, topic, partition)`` (partition -1: the partitioner's choice).

    An idempotent producer with ``acks=all``; ``timeout_s`` bounds each record's
    delivery (``message.timeout.ms``). ``stop`` ends the run between two records;
    a fatal producer error ends it too. A record the cluster refuses is a failure
    and the run goes on. ``on_delivered`` is told the count of delivered records as
    reports come back (progress). Everything handed to the producer is flushed
    before this returns; a KeyboardInterrupt during that wait gives up waiting.
    """
    started = time.monotonic()
    reports = _Reports()
    producer = new_producer(
        {
            **DEFAULT_PRODUCER_CONFIG,
            **config,
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": max(1, round(timeout_s * 1000)),
            "error_cb": reports.client_error,
        }
    )
    bucket = TokenBucket(rate) if rate is not None else None
    stop = stop or threading.Event()
    stopped_by: StopReason = "done"
    counted = 0
    try:
        stopped_by, counted = _send_all(producer, records, reports, bucket, stop, on_delivered)
    except KeyboardInterrupt:  # a second Ctrl-C while a record was being handed over
        stopped_by = "interrupted"
    try:
        while producer.flush(_FLUSH_SLICE_S) > 0:
            if on_delivered is not None and len(reports.delivered) != counted:
                counted = len(reports.delivered)
                on_delivered(counted)
    except KeyboardInterrupt:
        pass
    unconfirmed = tuple(reports.waiting[ticket] for ticket in sorted(reports.waiting))
    settled = len(reports.delivered) + len(reports.failures) + len(unconfirmed)
    return SendResult(
        planned=len(records),
        delivered=tuple(reports.delivered),
        failures=tuple(reports.failures),
        unconfirmed=unconfirmed,
        not_sent=len(records) - settled,
        stopped_by=stopped_by,
        fatal=reports.fatal[0] if reports.fatal else None,
        elapsed_s=time.monotonic() - started,
    )


def _send_all(
    producer: Any,
    records: Sequence[tuple[RedriveRecord, str, int]],
    reports: _Reports,
    bucket: TokenBucket | None,
    stop: threading.Event,
    on_delivered: Callable[[int], None] | None,
) -> tuple[StopReason, int]:
    from confluent_kafka import KafkaException

    counted = 0
    for ticket, (record, topic, partition) in enumerate(records):
        if stop.is_set() or reports.fatal:
            break
        if bucket is not None:
            while (wait := bucket.take()) > 0:
                if stop.wait(wait):
                    break
            if stop.is_set():
                break
        reports.waiting[ticket] = record
        callback = reports.report(ticket)
        while True:
            try:
                producer.produce(
                    topic,
                    value=record.value,
                    key=record.key,
                    partition=partition,
                    headers=redrive_headers(record),
                    on_delivery=callback,
                )
                break
            except BufferError:
                producer.poll(_QUEUE_FULL_WAIT_S)
            except KafkaException as refused:
                # Refused before it was queued (larger than message.max.bytes, ...).
                reports.waiting.pop(ticket, None)
                reports.failures.append(RedriveFailure(record, error_text(refused)))
                break
        producer.poll(0)
        if on_delivered is not None and len(reports.delivered) != counted:
            counted = len(reports.delivered)
            on_delivered(counted)
    else:
        return "done", counted
    return ("failed" if reports.fatal and not stop.is_set() else "interrupted"), counted


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event that Ctrl-C (SIGINT) or SIGTERM sets instead of raising, for the time of
    the block, so a run stops between two records; the previous handlers come back after.
    A second Ctrl-C raises KeyboardInterrupt as usual (it gives up waiting for reports)."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def on_signal(signum: int, _frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
