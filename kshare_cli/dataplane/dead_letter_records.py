"""A DLQ topic's records, and the source records they name, read whole (``kshare dlq``).

``dataplane/dead_letters.py`` counts dead letters; this reads them: every record
of a DLQ topic that a predicate on its headers keeps (one group's, from one
instant on), with its key, value, headers and timestamp, and then the source
records at the offsets they name, which a DLQ record without a copy does not
carry. Source offsets are read per partition in runs (a gap of more than
``_SEEK_GAP`` records is a new ``assign``), so a few scattered dead letters in a
long log cost a few fetches. An offset below the partition's log start offset is
gone (retention or DeleteRecords); one that the log skips (compaction) too.

Plain readers (``assign()``, no group joined, nothing committed): reading changes
nothing on the cluster. Blocking, bounded by a ``time.monotonic()`` deadline: run
them in a thread from async code. A read the deadline ended says how much it left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.dataplane.clients import new_reader
from kshare_cli.dataplane.errors import (
    MISSING_TOPIC,
    ErrorKind,
    classify,
    error_text,
    is_authorization_error,
    is_transient,
)
from kshare_cli.dataplane.offsets import offsets_for_times, topic_metadata, watermark_offsets
from kshare_cli.errors import NotAuthorized, NotFound, TimedOut

if TYPE_CHECKING:
    from confluent_kafka import Consumer

__all__ = ["LogRecord", "SourceRead", "TopicRead", "read_source_offsets", "read_topic"]

_READ_BATCH: Final = 500
#: consume() waits its whole timeout unless a full batch arrives: short slices.
_SLICE_S: Final = 0.2
#: Wanted offsets closer than this are read through; farther, the reader is assigned anew.
_SEEK_GAP: Final = 500

RecordHeaders = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as the log holds it: ``timestamp_ms`` None when it has none."""

    partition: int
    offset: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None
    headers: RecordHeaders = ()


@dataclass(frozen=True, slots=True)
class TopicRead:
    """What a read of a whole topic kept; ``unread`` records were left when the deadline
    ended it (``complete`` False)."""

    topic: str
    records: tuple[LogRecord, ...]
    complete: bool = True
    unread: int = 0


@dataclass(frozen=True, slots=True)
class SourceRead:
    """The records found at the wanted offsets of one partition: ``gone`` the offsets the
    log no longer holds, ``unread`` those the deadline left, ``error`` why the partition
    could not be read (then every offset not found is unread)."""

    records: Mapping[int, LogRecord] = field(default_factory=dict)
    gone: frozenset[int] = frozenset()
    unread: frozenset[int] = frozenset()
    error: str | None = None


def _reader(config: Mapping[str, Any], purpose: str, seen: list[Any] | None = None) -> Consumer:
    """A plain reader; ``seen`` collects what librdkafka reports through ``error_cb`` (a
    Fetch refused by the ACLs comes that way, not as a message)."""
    overrides: dict[str, Any] = {
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }
    if seen is not None:
        overrides["error_cb"] = seen.append
    return new_reader(config, purpose, **overrides)


def _headers(message: Any) -> RecordHeaders:
    found = message.headers() or ()
    return tuple(
        (name, value if value is None or isinstance(value, bytes) else str(value).encode())
        for name, value in found
    )


def _record(message: Any) -> LogRecord:
    kind, stamp = message.timestamp()
    key = message.key()
    value = message.value()
    return LogRecord(
        partition=message.partition() or 0,
        offset=message.offset() or 0,
        timestamp_ms=stamp if kind != 0 and stamp >= 0 else None,
        key=key.encode() if isinstance(key, str) else key,
        value=value.encode() if isinstance(value, str) else value,
        headers=_headers(message),
    )


def read_topic(
    config: Mapping[str, Any],
    topic: str,
    deadline: float,
    *,
    keep: Callable[[RecordHeaders], bool],
    since_ms: int | None = None,
) -> TopicRead:
    """Every record of ``topic`` that ``keep`` keeps, from each partition's log start
    offset (or the first record stamped at or after ``since_ms``) to the high watermark
    found at the start, in partition and offset order.

    Raises NotFound for a topic that does not exist, NotAuthorized for one the
    principal may not describe or read, TimedOut when even its metadata did not come.
    """
    seen: list[Any] = []
    consumer = _reader(config, "dlq-show", seen)
    try:
        partitions = _partitions(consumer, topic, deadline)
        starts, ends = _bounds(consumer, topic, partitions, deadline, since_ms)
        if ends:
            kept, unread, complete = _read_kept(consumer, topic, starts, ends, deadline, seen, keep)
        else:
            kept, unread, complete = [], 0, True
        kept.sort(key=lambda record: (record.partition, record.offset))
        return TopicRead(topic, tuple(kept), complete, unread)
    finally:
        consumer.close()


def _partitions(consumer: Consumer, topic: str, deadline: float) -> list[int]:
    """The DLQ topic's partitions, or the error that says why it cannot be read."""
    from confluent_kafka import KafkaException

    try:
        described = topic_metadata(consumer, topic, deadline)
    except KafkaException as failure:
        _raise_for(failure, topic)
        raise TimedOut(f"no metadata for DLQ topic '{topic}': {error_text(failure)}") from None
    if described is None:
        raise TimedOut(f"no metadata for DLQ topic '{topic}' before the deadline")
    if described.error is not None:
        _raise_for(described.error, topic)
        if classify(described.error) in MISSING_TOPIC:
            raise NotFound(f"DLQ topic '{topic}' does not exist")
        raise TimedOut(f"DLQ topic '{topic}': {error_text(described.error)}")
    return sorted(described.partitions)


def _bounds(
    consumer: Consumer,
    topic: str,
    partitions: Sequence[int],
    deadline: float,
    since_ms: int | None,
) -> tuple[dict[int, int], dict[int, int]]:
    """Where each partition with records is read from and up to: (starts, ends).

    A partition without records, or with none stamped since ``since_ms``, has neither.
    """
    from confluent_kafka import KafkaException, TopicPartition

    ends: dict[int, int] = {}
    starts: dict[int, int] = {}
    try:
        for partition in partitions:
            low, high = watermark_offsets(consumer, topic, partition, deadline)
            if low < high:
                ends[partition], starts[partition] = high, low
        if since_ms is not None and ends:
            answered = offsets_for_times(
                consumer,
                [TopicPartition(topic, partition, since_ms) for partition in ends],
                deadline,
            )
            for answer in answered:
                if answer.error is not None:
                    continue
                if answer.offset < 0:  # nothing stamped since: the end
                    ends.pop(answer.partition, None)
                else:
                    starts[answer.partition] = max(starts[answer.partition], answer.offset)
    except KafkaException as failure:
        _raise_for(failure, topic)
        raise TimedOut(f"DLQ topic '{topic}': {error_text(failure)}") from None
    return starts, ends


def _read_kept(
    consumer: Consumer,
    topic: str,
    starts: Mapping[int, int],
    ends: Mapping[int, int],
    deadline: float,
    seen: list[Any],
    keep: Callable[[RecordHeaders], bool],
) -> tuple[list[LogRecord], int, bool]:
    """The records from ``starts`` to ``ends`` that ``keep`` keeps, until the deadline:
    (kept, records left unread, whether every partition was read to its end)."""
    from confluent_kafka import KafkaException, TopicPartition

    kept: list[LogRecord] = []
    positions = dict(starts)
    consumer.assign([TopicPartition(topic, p, starts[p]) for p in sorted(ends)])
    pending = dict(ends)
    while pending and time.monotonic() < deadline:
        for error in seen:
            _raise_for(error, topic)
        left = deadline - time.monotonic()
        for message in consumer.consume(_READ_BATCH, max(0.0, min(_SLICE_S, left))):
            error = message.error()
            partition = message.partition() or 0
            if error is not None:
                if classify(error) is ErrorKind.PARTITION_EOF:
                    pending.pop(partition, None)
                elif is_authorization_error(error):
                    _raise_for(error, topic)
                elif not is_transient(error):
                    raise KafkaException(error)
                continue
            offset = message.offset() or 0
            positions[partition] = offset + 1
            if partition in pending and offset + 1 >= pending[partition]:
                del pending[partition]
            if partition not in ends or offset >= ends[partition]:
                continue
            if keep(_headers(message)):
                kept.append(_record(message))
    for error in seen:
        _raise_for(error, topic)
    unread = sum(max(0, ends[p] - positions.get(p, 0)) for p in pending)
    return kept, unread, not pending


def _raise_for(error: object, topic: str) -> None:
    if is_authorization_error(error):
        raise NotAuthorized(f"not authorized to read DLQ topic '{topic}': {error_text(error)}")


def read_source_offsets(
    config: Mapping[str, Any],
    topic: str,
    partition: int,
    offsets: Sequence[int],
    deadline: float,
) -> SourceRead:
    """The records of ``topic``:``partition`` at ``offsets``, as far as the log still holds
    them: below the log start offset, or skipped by the log, an offset is gone."""
    from confluent_kafka import KafkaException, TopicPartition

    wanted = sorted(set(offsets))
    if not wanted:
        return SourceRead()
    consumer = _reader(config, "dlq-source")
    found: dict[int, LogRecord] = {}
    gone: set[int] = set()
    try:
        try:
            low, high = watermark_offsets(consumer, topic, partition, deadline)
        except KafkaException as failure:
            return SourceRead(unread=frozenset(wanted), error=error_text(failure))
        gone.update(offset for offset in wanted if offset < low or offset >= high)
        left = [offset for offset in wanted if low <= offset < high]
        runs: list[list[int]] = []
        for offset in left:
            if runs and offset - runs[-1][-1] <= _SEEK_GAP:
                runs[-1].append(offset)
            else:
                runs.append([offset])
        for run in runs:
            if time.monotonic() >= deadline:
                break
            consumer.assign([TopicPartition(topic, partition, run[0])])
            wanted_here = set(run)
            last = run[-1]
            done = False
            while not done and time.monotonic() < deadline:
                slice_s = max(0.0, min(_SLICE_S, deadline - time.monotonic()))
                for message in consumer.consume(_READ_BATCH, slice_s):
                    error = message.error()
                    if error is not None:
                        if classify(error) is ErrorKind.PARTITION_EOF:
                            done = True
                        elif not is_transient(error):
                            return SourceRead(
                                found,
                                frozenset(gone),
                                frozenset(set(wanted) - set(found) - gone),
                                error_text(error),
                            )
                        continue
                    offset = message.offset() or 0
                    if offset in wanted_here:
                        found[offset] = _record(message)
                    if offset >= last:
                        done = True
                        break
            consumer.unassign()
            if done:
                # Read past every offset of the run: those not met were compacted away.
                gone.update(offset for offset in run if offset not in found)
        unread = frozenset(set(wanted) - set(found) - gone)
        return SourceRead(found, frozenset(gone), unread)
    finally:
        consumer.close()
