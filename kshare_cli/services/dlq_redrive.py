"""What ``kshare dlq redrive`` asks: a plan for a group's dead letters, then sending it.

The dead letters are ``dlq show``'s reading (``services/dlq.py``: the group's DLQ
topic or ``--dlq-topic``, each record's key and value from the DLQ record's copy
or the source log, its original headers from ``audit --keep-headers``' copy or the
source log, ``gone`` when neither has it), narrowed by ``--offsets``. Each one is
then planned:

* *send*: to its source topic (its original partition while the topic still has
  it, else the producer's partitioner), or to ``--to-topic`` (the partitioner);
* *already redriven*: the target topic holds a record naming this dead letter
  (``consumer/redrive.py``'s headers) -- a second run, or a rerun after an
  interruption, sends nothing twice;
* *cannot*: no copy in the DLQ record and gone from the source log (or its
  headers do not name a source): nothing is left to send.

A copy whose original headers are gone from the source log (Kafka's copy never
has them) is sent with the key and value alone, and the plan counts those.

The plan is what a dry run prints and what ``--execute`` sends, unchanged. The
types the command names are re-exported here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.consumer.redrive import (
    DlqRecordId,
    RedriveFailure,
    RedriveRecord,
    SendResult,
    TargetScan,
    scan_target,
    send_records,
    stop_on_signals,
)
from kshare_cli.errors import NotFound, TimedOut
from kshare_cli.services.dlq import DeadLetterRow, ShowRequest, show

__all__ = [
    "PlanRow",
    "RedriveFailure",
    "RedriveOutcome",
    "RedrivePlan",
    "RedriveRequest",
    "SendResult",
    "ShowRequest",
    "execute",
    "plan",
]

#: Why a dead letter cannot be sent, in the plan's words.
GONE: Final = "no copy in the DLQ record and gone from the source log"
NO_SOURCE: Final = "its headers do not name its source record"
UNREAD: Final = "its source record could not be read"

SourceOffset = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    """What to redrive: ``dlq show``'s selection, ``--offsets`` (source topic, partition,
    offset; empty: all), and ``--to-topic`` (None: each record's source topic)."""

    show: ShowRequest
    offsets: tuple[SourceOffset, ...] = ()
    to_topic: str | None = None


@dataclass(frozen=True, slots=True)
class Cannot:
    """A dead letter that cannot be sent, and why."""

    dead_letter: DeadLetterRow
    why: str


@dataclass(frozen=True, slots=True)
class PlanRow:
    """One source partition and reason: how many records go where, or not.

    ``sent`` is None in a plan, the count of delivered records once executed."""

    topic: str | None
    partition: int | None
    reason: str
    target: str | None
    send: int = 0
    already: int = 0
    cannot: int = 0
    without_headers: int = 0
    sent: int | None = None


@dataclass(frozen=True, slots=True)
class RedrivePlan:
    """What a run will do: ``sends`` in order (record, target topic, partition; -1 is the
    partitioner's choice), what is ``already`` redriven, what ``cannot`` be sent."""

    group_id: str
    dlq_topic: str
    to_topic: str | None
    sends: tuple[tuple[RedriveRecord, str, int], ...]
    already: tuple[RedriveRecord, ...] = ()
    cannot: tuple[Cannot, ...] = ()
    failures: tuple[str, ...] = ()
    scans: tuple[TargetScan, ...] = ()
    #: Dead letters sent with their copy's key and value but no headers: Kafka's copy has
    #: none and the source log no longer holds them.
    headerless: frozenset[DlqRecordId] = frozenset()

    @property
    def without_headers(self) -> int:
        return sum(1 for record, _, _ in self.sends if record.dlq in self.headerless)

    def rows(self, delivered: Sequence[RedriveRecord] | None = None) -> list[PlanRow]:
        """The plan per source partition and reason (with ``delivered``: what was sent)."""
        counts: dict[tuple[str | None, int | None, str], dict[str, int]] = {}

        def bump(topic: str | None, partition: int | None, reason: str, what: str) -> None:
            counted = counts.setdefault((topic, partition, reason), {})
            counted[what] = counted.get(what, 0) + 1

        for record, _, _ in self.sends:
            place = (record.source_topic, record.source_partition, record.reason)
            bump(*place, "send")
            if record.dlq in self.headerless:
                bump(*place, "without_headers")
        for record in self.already:
            bump(record.source_topic, record.source_partition, record.reason, "already")
        for cannot in self.cannot:
            letter = cannot.dead_letter
            bump(letter.topic, letter.partition, letter.reason, "cannot")
        for record in delivered or ():
            bump(record.source_topic, record.source_partition, record.reason, "sent")
        return [
            PlanRow(
                topic,
                partition,
                reason,
                self.to_topic or topic,
                send=counted.get("send", 0),
                already=counted.get("already", 0),
                cannot=counted.get("cannot", 0),
                without_headers=counted.get("without_headers", 0),
                sent=None if delivered is None else counted.get("sent", 0),
            )
            for (topic, partition, reason), counted in sorted(counts.items(), key=_row_order)
        ]


def _row_order(item: tuple[tuple[str | None, int | None, str], object]) -> tuple[str, int, str]:
    (topic, partition, reason), _ = item
    return (topic or "", -1 if partition is None else partition, reason)


@dataclass(frozen=True, slots=True)
class RedriveOutcome:
    """A plan and what sending it did."""

    plan: RedrivePlan
    result: SendResult


@dataclass(slots=True)
class _Sorted:
    sendable: list[tuple[RedriveRecord, str]] = field(default_factory=list)
    cannot: list[Cannot] = field(default_factory=list)
    headerless: set[DlqRecordId] = field(default_factory=set)


async def plan(
    settings: ConnectionSettings, request: RedriveRequest, timeout_s: float
) -> RedrivePlan:
    """Read the group's dead letters and the target topics; decide each one.

    Raises NotFound for a group without a DLQ topic, a DLQ or ``--to-topic`` that does
    not exist, or an ``--offsets`` entry that is no dead letter of the group;
    NotAuthorized without READ on them; TimedOut when the DLQ topic or a target topic
    cannot be read to its end within ``timeout_s`` (each read has it): nothing is sent
    on a partial reading.
    """
    listing = await show(settings, request.show, timeout_s)
    if listing.stopped_early is not None:
        raise TimedOut(f"{listing.stopped_early}; nothing was sent (raise --timeout)")
    letters = _chosen(listing.dead_letters, request.offsets)
    sorted_out = _sort(letters, listing.dlq_topic, request.to_topic)
    config = settings.confluent_config()
    # Each target is read from its oldest candidate's dead-lettering on (from its log start
    # when one has no timestamp); --to-topic is read even with nothing to send: it must exist.
    stamps: dict[str, list[int | None]] = {}
    if request.to_topic is not None:
        stamps[request.to_topic] = []
    for record, target in sorted_out.sendable:
        stamps.setdefault(target, []).append(record.dead_lettered_ms)
    targets = {
        topic: None if None in found else min((s for s in found if s is not None), default=None)
        for topic, found in stamps.items()
    }
    scans = await asyncio.gather(
        *(
            asyncio.to_thread(scan_target, config, topic, oldest, timeout_s)
            for topic, oldest in sorted(targets.items())
        )
    )
    by_topic = {scan.topic: scan for scan in scans}
    sends: list[tuple[RedriveRecord, str, int]] = []
    already: list[RedriveRecord] = []
    for record, target in sorted_out.sendable:
        scan = by_topic[target]
        if record.dlq in scan.redriven:
            already.append(record)
            continue
        keeps_partition = request.to_topic is None and record.source_partition < scan.partitions
        sends.append((record, target, record.source_partition if keeps_partition else -1))
    return RedrivePlan(
        listing.group_id,
        listing.dlq_topic,
        request.to_topic,
        tuple(sends),
        tuple(already),
        tuple(sorted_out.cannot),
        listing.failures,
        tuple(scans),
        frozenset(sorted_out.headerless),
    )


def _chosen(
    letters: Sequence[DeadLetterRow], offsets: Sequence[SourceOffset]
) -> list[DeadLetterRow]:
    if not offsets:
        return list(letters)
    wanted = set(offsets)
    chosen = [
        letter
        for letter in letters
        if letter.topic is not None
        and letter.partition is not None
        and letter.offset is not None
        and (letter.topic, letter.partition, letter.offset) in wanted
    ]
    found = {(letter.topic, letter.partition, letter.offset) for letter in chosen}
    missing = [f"{t}:{p}:{o}" for t, p, o in offsets if (t, p, o) not in found]
    if missing:
        raise NotFound(
            f"--offsets {', '.join(missing)}: no such dead letter of the group "
            "(matching --topic, --reason and --since); nothing was sent"
        )
    return chosen


def _sort(letters: Sequence[DeadLetterRow], dlq_topic: str, to_topic: str | None) -> _Sorted:
    """Each dead letter as a record to send, or why it cannot be."""
    out = _Sorted()
    for letter in letters:
        if letter.topic is None or letter.partition is None or letter.offset is None:
            out.cannot.append(Cannot(letter, NO_SOURCE))
            continue
        if letter.record_origin == "gone":
            out.cannot.append(Cannot(letter, GONE))
            continue
        if letter.record_origin == "unread":
            out.cannot.append(Cannot(letter, UNREAD))
            continue
        record = RedriveRecord(
            dlq=DlqRecordId(dlq_topic, letter.dlq_partition, letter.dlq_offset),
            source_topic=letter.topic,
            source_partition=letter.partition,
            source_offset=letter.offset,
            reason=letter.reason,
            key=letter.key,
            value=letter.value,
            headers=tuple(letter.headers or ()),
            dead_lettered_ms=letter.dead_lettered_at_ms,
        )
        if letter.headers_origin == "gone":
            out.headerless.add(record.dlq)
        out.sendable.append((record, to_topic or letter.topic))
    return out


def execute(
    settings: ConnectionSettings,
    plan_to_send: RedrivePlan,
    *,
    rate: float | None,
    timeout_s: float,
    on_delivered: Callable[[int], None] | None = None,
) -> RedriveOutcome:
    """Send the plan's records (blocking, on the main thread: Ctrl-C and SIGTERM stop it
    between two records, then what is in flight is confirmed)."""
    if not plan_to_send.sends:
        return RedriveOutcome(plan_to_send, SendResult(planned=0))
    with stop_on_signals() as stop:
        result = send_records(
            settings.confluent_config(),
            plan_to_send.sends,
            rate=rate,
            stop=stop,
            timeout_s=timeout_s,
            on_delivered=on_delivered,
        )
    return RedriveOutcome(plan_to_send, result)
