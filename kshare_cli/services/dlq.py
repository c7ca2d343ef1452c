"""What ``kshare dlq show`` asks: a group's dead letters, each with the record it stands for.

The DLQ topic is the group's ``errors.deadletterqueue.topic.name`` (one
DescribeConfigs, ``admin/dead_letter_queues.py``) unless the operator names one
(``--dlq-topic``: a topic ``audit --dlq-topic`` wrote, or any with Kafka's
headers). Its records are read whole (``dataplane/dead_letter_records.py``),
keeping the group's by ``__dlq.errors.group`` (a DLQ topic may serve several
groups), and decoded by ``kafka/dead_letters.py``, so Kafka's and kshare's
records read alike.

A record's key, value and headers: a DLQ record with a key or a value carries a
copy (``errors.deadletterqueue.copy.record.enable``, ``audit --copy-record``);
Kafka never copies the original headers, ``audit --keep-headers`` does (every
header not named ``__dlq.*``). What the copy lacks is read from the source log
at the dead letter's offset while retention (or DeleteRecords) has left it
there, else it is ``gone``. The whole read is bounded by ``--timeout``: what
the deadline left unread is ``unread`` and ``stopped_early`` says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from kshare_cli.admin.dead_letter_queues import dead_letter_topics
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.dataplane.dead_letter_records import (
    LogRecord,
    RecordHeaders,
    SourceRead,
    read_source_offsets,
    read_topic,
)
from kshare_cli.errors import NotAuthorized, NotFound
from kshare_cli.kafka.dead_letters import DeadLetterReason, decode_dead_letter
from kshare_cli.kafka.group_configs import DLQ_TOPIC_NAME
from kshare_cli.services.session import Session
from kshare_cli.wire.errors import KafkaError

__all__ = ["DeadLetterListing", "DeadLetterRow", "Origin", "ShowRequest", "show"]

#: Where a record's key, value or headers came from: the DLQ record's copy, the source
#: log, nowhere any more (``gone``), or not read before the deadline (``unread``).
Origin = Literal["copy", "log", "gone", "unread"]

#: ``--reason``'s words for Kafka's reasons (``DeadLetterReason``'s values are the
#: metrics' labels; the command says ``limit``).
REASON_WORDS: Final = {
    DeadLetterReason.REJECTED: "rejected",
    DeadLetterReason.DELIVERY_LIMIT: "limit",
    DeadLetterReason.OTHER: "other",
}
#: What the deadline leaves for reading the source records, once the DLQ topic is read.
_DLQ_SHARE: Final = 0.6
_MARGIN_S: Final = 0.3
_PARALLEL: Final = 4


@dataclass(frozen=True, slots=True)
class ShowRequest:
    group_id: str
    topics: tuple[str, ...] = ()
    reason: str | None = None  # "rejected" or "limit"
    since_ms: int | None = None
    dlq_topic: str | None = None


@dataclass(frozen=True, slots=True)
class DeadLetterRow:
    """One dead letter: where it sits in the DLQ topic, what it says of its source record,
    and that record's key, value and headers with where each came from."""

    dlq_partition: int
    dlq_offset: int
    dead_lettered_at_ms: int | None
    topic: str | None
    partition: int | None
    offset: int | None
    delivery_count: int | None
    reason: str
    message: str | None
    record_origin: Origin
    key: bytes | None
    value: bytes | None
    headers_origin: Origin
    headers: RecordHeaders | None


@dataclass(frozen=True, slots=True)
class DeadLetterListing:
    group_id: str
    dlq_topic: str
    from_group_config: bool
    dead_letters: tuple[DeadLetterRow, ...]
    stopped_early: str | None = None
    failures: tuple[str, ...] = ()

    def summary(self) -> list[tuple[str | None, int | None, str, int]]:
        """Dead letters per source partition and reason, in that order."""
        counts: dict[tuple[str | None, int | None, str], int] = {}
        for row in self.dead_letters:
            key = (row.topic, row.partition, row.reason)
            counts[key] = counts.get(key, 0) + 1
        return [
            (*key, count)
            for key, count in sorted(
                counts.items(), key=lambda item: (item[0][0] or "", item[0][1] or -1, item[0][2])
            )
        ]


async def show(
    settings: ConnectionSettings, request: ShowRequest, timeout_s: float
) -> DeadLetterListing:
    """The group's dead letters, read within ``timeout_s``.

    Raises NotFound for a group without a DLQ topic (and no ``--dlq-topic``) or a DLQ
    topic that does not exist, NotAuthorized for one the principal may not read.
    """
    started = time.monotonic()
    deadline = started + timeout_s
    dlq_topic = request.dlq_topic
    from_config = dlq_topic is None
    if dlq_topic is None:
        with Session(settings, timeout_s) as session:
            answers = await session.ask(
                "reading the group's DLQ config",
                lambda admin: dead_letter_topics(admin.client, [request.group_id]),
            )
        answer = answers.get(request.group_id)
        if isinstance(answer, KafkaError):
            if answer.code in (29, 30, 31):
                raise NotAuthorized(
                    f"share group '{request.group_id}': its {DLQ_TOPIC_NAME} could not be "
                    f"read: {answer}"
                )
            raise NotFound(
                f"share group '{request.group_id}': its {DLQ_TOPIC_NAME} could not be read: "
                f"{answer}"
            )
        if answer is None:
            raise NotFound(
                f"share group '{request.group_id}' has no DLQ topic ({DLQ_TOPIC_NAME} is "
                "not set); name one with --dlq-topic"
            )
        dlq_topic = answer
    config = settings.confluent_config()
    group_id = request.group_id

    def keep(headers: RecordHeaders) -> bool:
        letter = decode_dead_letter(headers)
        return letter is not None and letter.group_id == group_id

    dlq_deadline = time.monotonic() + max(0.1, (deadline - time.monotonic()) * _DLQ_SHARE)
    read = await asyncio.to_thread(
        read_topic, config, dlq_topic, dlq_deadline, keep=keep, since_ms=request.since_ms
    )
    letters = [row for row in (_row(record) for record in read.records) if _wanted(row, request)]
    stopped = None
    if not read.complete:
        stopped = (
            f"--timeout ended the read of '{dlq_topic}' with about {read.unread} records "
            "unread: the list is incomplete"
        )
    rows, failures, unread_sources = await _fill_from_source(config, letters, deadline - _MARGIN_S)
    if unread_sources and stopped is None:
        stopped = (
            f"--timeout ended the source reads with {unread_sources} records unread "
            "(shown as unread)"
        )
    return DeadLetterListing(
        group_id, dlq_topic, from_config, tuple(rows), stopped, tuple(failures)
    )


def _wanted(row: DeadLetterRow, request: ShowRequest) -> bool:
    if request.topics and row.topic not in request.topics:
        return False
    if request.reason is not None and row.reason != request.reason:
        return False
    return not (
        request.since_ms is not None
        and row.dead_lettered_at_ms is not None
        and row.dead_lettered_at_ms < request.since_ms
    )


def _row(record: LogRecord) -> DeadLetterRow:
    letter = decode_dead_letter(record.headers)
    assert letter is not None  # read_topic kept only the group's dead letters
    copied = record.key is not None or record.value is not None
    own_headers = tuple(
        (name, value) for name, value in record.headers if not name.startswith("__dlq.")
    )
    return DeadLetterRow(
        dlq_partition=record.partition,
        dlq_offset=record.offset,
        dead_lettered_at_ms=record.timestamp_ms,
        topic=letter.topic,
        partition=letter.partition,
        offset=letter.offset,
        delivery_count=letter.delivery_count,
        reason=REASON_WORDS[letter.reason],
        message=letter.message,
        record_origin="copy" if copied else "unread",
        key=record.key,
        value=record.value,
        headers_origin="copy" if own_headers else "unread",
        headers=own_headers if own_headers else None,
    )


async def _fill_from_source(
    config: dict[str, object], rows: Sequence[DeadLetterRow], deadline: float
) -> tuple[list[DeadLetterRow], list[str], int]:
    """``rows`` with what their copies lack read from the source log."""
    wanted: dict[tuple[str, int], set[int]] = {}
    for row in rows:
        needs = row.record_origin == "unread" or row.headers_origin == "unread"
        if needs and row.topic is not None and row.partition is not None and row.offset is not None:
            wanted.setdefault((row.topic, row.partition), set()).add(row.offset)
    reads: dict[tuple[str, int], SourceRead] = {}
    if wanted:
        semaphore = asyncio.Semaphore(_PARALLEL)

        async def one(place: tuple[str, int]) -> None:
            async with semaphore:
                reads[place] = await asyncio.to_thread(
                    read_source_offsets, config, place[0], place[1], sorted(wanted[place]), deadline
                )

        await asyncio.gather(*(one(place) for place in sorted(wanted)))
    failures = [
        f"source partition {topic}:{partition} could not be read: {read.error}"
        for (topic, partition), read in sorted(reads.items())
        if read.error is not None
    ]
    filled: list[DeadLetterRow] = []
    unread = 0
    for row in rows:
        read = reads.get((row.topic or "", row.partition if row.partition is not None else -1))
        origin: Origin = "unread"
        source: LogRecord | None = None
        if read is not None and row.offset is not None:
            source = read.records.get(row.offset)
            if source is not None:
                origin = "log"
            elif row.offset in read.gone:
                origin = "gone"
        elif row.offset is None or row.topic is None or row.partition is None:
            origin = "gone"  # the headers do not say where it came from
        if row.record_origin == "unread" or row.headers_origin == "unread":
            if origin == "unread":
                unread += 1
            row = _filled(row, origin, source)
        filled.append(row)
    return filled, failures, unread


def _filled(row: DeadLetterRow, origin: Origin, source: LogRecord | None) -> DeadLetterRow:
    from dataclasses import replace

    if row.record_origin == "unread":
        row = replace(
            row,
            record_origin=origin,
            key=None if source is None else source.key,
            value=None if source is None else source.value,
        )
    if row.headers_origin == "unread":
        row = replace(
            row, headers_origin=origin, headers=None if source is None else source.headers
        )
    return row
