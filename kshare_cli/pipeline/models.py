"""What the audit jobs answer, as plain values: the renderers' input, free of Spark.

The jobs compute DataFrames; what an operator sees on stdout or in the HTML
report is collected into these frozen dataclasses first, so `render/` never
imports PySpark and its tests build results by hand. Field names are the
DataFrames' column names (`timeline.TIMELINE_SCHEMA` and the others), so a
collected row becomes a model without a mapping table to keep in step.
Timestamps are aware UTC datetimes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "ARCHIVED_FIELDS",
    "DELIVERY_FIELDS",
    "HISTORY_GAP",
    "HISTORY_PRUNED",
    "TIMELINE_FIELDS",
    "ArchivedRecord",
    "AuditJob",
    "AuditResult",
    "DeadLetterCount",
    "DeliveryRange",
    "SharePartitionHistory",
    "TimelinePoint",
]


class AuditJob(StrEnum):
    """The three audits `kshare audit` runs."""

    TIMELINE = "timeline"
    DELIVERIES = "deliveries"
    ARCHIVED = "archived"


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """A share-partition's state right after one state record (see TIMELINE_SCHEMA).

    record is "snapshot", "update", "tombstone" or "corrupt"; the state fields
    are None without a state. lag_basis says where log_end_offset comes from:
    "end_offsets" (read when the audit ran: the share-partition's last point),
    "record_timestamps" (dated by the source records' timestamps), None (unknown).
    archiving counts Kafka 4.4's ARCHIVING records (on their way to the DLQ), apart
    from archived.
    """

    group_id: str
    topic_id: str
    topic: str | None
    partition: int
    time: datetime.datetime | None
    state_partition: int
    state_offset: int
    record: str
    start_offset: int | None
    delivery_complete_count: int | None
    end_offset: int | None
    available: int | None
    acknowledged: int | None
    archived: int | None
    archiving: int | None
    unrecorded: int | None
    max_delivery_count: int | None
    log_end_offset: int | None
    lag: int | None
    lag_basis: str | None


@dataclass(frozen=True, slots=True)
class DeliveryRange:
    """Offsets of a share-partition with one outcome (see DELIVERIES_SCHEMA).

    final_state "archiving" is Kafka 4.4's ARCHIVING left behind: final, never
    delivered. archiving_at: when the offsets became ARCHIVING (None: never, or
    unknown).
    """

    group_id: str
    topic_id: str
    topic: str | None
    partition: int
    first_offset: int
    last_offset: int
    max_delivery_count: int
    final_state: str
    final_delivery_count: int
    complete: bool
    last_changed: datetime.datetime | None
    archiving_at: datetime.datetime | None = None

    @property
    def count(self) -> int:
        return self.last_offset - self.first_offset + 1


@dataclass(frozen=True, slots=True)
class ArchivedRecord:
    """An archived offset and, when the source still holds it, its record.

    state is "archived", or "archiving" for Kafka 4.4's ARCHIVING left behind
    (the broker stopped between persisting it and writing its DLQ record; it
    resumes when it loads the share-partition): never delivered again, not yet
    delivery-complete. reason is "rejected" or "delivery_limit"
    (``kafka.dead_letters.DeadLetterReason``, inferred as Kafka does from the
    delivery count and the group's limit); None when the limit is unknown.
    archiving_at is when the record became ARCHIVING (Kafka 4.4, before the
    DLQ write), archived_at when it became ARCHIVED; each None where unknown
    (archiving_at for Kafka 4.2 or a pruned write, archived_at while ARCHIVING).
    """

    group_id: str
    topic_id: str
    topic: str | None
    partition: int
    offset: int
    delivery_count: int
    archived_at: datetime.datetime | None
    record_found: bool
    key: bytes | None
    value: bytes | None
    timestamp: datetime.datetime | None
    headers: tuple[tuple[str, bytes | None], ...] | None
    state: str = "archived"
    reason: str | None = None
    archiving_at: datetime.datetime | None = None


HISTORY_PRUNED: Final = "pruned"
"""SharePartitionHistory.history_missing: the share coordinator deleted the records before."""
HISTORY_GAP: Final = "gap"
"""SharePartitionHistory.history_missing: records between a capture and the live log were
deleted before anyone read them."""


@dataclass(frozen=True, slots=True)
class SharePartitionHistory:
    """How much of a share-partition's history the audit read (see HISTORY_SCHEMA).

    Kafka prunes its state topic every few minutes: an audit that read only
    from a later snapshot must say so, and date nothing before history_from.
    history_missing is "pruned" (the earliest record read is a later
    snapshot or an update) or "gap" (records between a capture and the live
    log were deleted unread); None when history_complete.

    unknown_first_offset..unknown_last_offset are the offsets of the
    share-partition the records read no longer say anything reliable about
    (see HISTORY_SCHEMA): left out of the deliveries and the archived records
    ("pruned"), or shown as they stood before a gap ("gap"). Both None when
    no offset is unknown (only the times before history_from are);
    unknown_last_offset alone None when no record read bounds them (every
    offset from unknown_first_offset on).
    """

    group_id: str
    topic_id: str
    topic: str | None
    partition: int
    history_from: datetime.datetime | None
    history_complete: bool
    history_missing: str | None
    unknown_first_offset: int | None = None
    unknown_last_offset: int | None = None

    @property
    def offsets_unknown(self) -> bool:
        """Whether some offsets (not only times) of the share-partition are unknown."""
        return self.unknown_first_offset is not None


TIMELINE_FIELDS: Final = tuple(TimelinePoint.__dataclass_fields__)
DELIVERY_FIELDS: Final = tuple(DeliveryRange.__dataclass_fields__)
ARCHIVED_FIELDS: Final = tuple(ArchivedRecord.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class DeadLetterCount:
    """What a --dlq-topic run did: dead letters produced, those skipped because a DLQ
    topic already held them (an earlier run, or Kafka's own DLQ), and those still
    ARCHIVING that the group's broker DLQ is writing."""

    produced: int
    already_there: int
    left_to_broker: int = 0


@dataclass(frozen=True, slots=True)
class AuditResult:
    """One audit's answer for one group, sorted by topic, partition and offset or time.

    Only the parts the job computed are filled (the HTML report asks for all
    three). notes are lines for stderr: what could not be computed and why.
    history says per share-partition from when the records read hold its state.
    written says where files went (--output) and dead_letters what went to the
    dead-letter topic; either is None when not asked for.
    """

    job: AuditJob
    group_id: str
    timeline: tuple[TimelinePoint, ...] = ()
    deliveries: tuple[DeliveryRange, ...] = ()
    archived: tuple[ArchivedRecord, ...] = ()
    notes: tuple[str, ...] = ()
    written: str | None = None
    dead_letters: DeadLetterCount | None = None
    state_records: int = 0
    history: tuple[SharePartitionHistory, ...] = ()
