"""``kshare audit`` on stdout: a table for people, JSON, JSON lines or CSV for scripts.

One renderer per job's rows (`pipeline.models`). JSON carries every field
under the DataFrame column names, times as ISO-8601 UTC with milliseconds;
a record's key, value and header values are text when they are UTF-8 and
base64 otherwise, with ``<field>_encoding: "base64"`` beside them, as
``kshare consume -o jsonl`` writes records. The table marks a lag dated by
record timestamps with ``≈`` (an estimate when producers' clocks differ from
the broker's) and shows ``-`` for what is not known; a time the state
topic no longer holds (Kafka pruned it) is ``unknown``, never a later
snapshot's time. Kafka 4.4's ARCHIVING (a record on its way to the group's
dead-letter queue) is a count of its own in the timeline, a final state in
the deliveries, and in the archived rows a second time: ``archiving_at``
(when it became ARCHIVING) beside ``archived_at`` (when ARCHIVED), each
null where not known (``-`` in the table where there is no such step: Kafka
4.2 archives directly, an ARCHIVING record is not ARCHIVED yet). ``-o json``
says per share-partition from when its history was read (``history``:
``history_from``, ``history_complete``) and which offsets it no longer knows
(``unknown_first_offset``, ``unknown_last_offset``); `history_lines` words that
for stderr, the table's footer and the HTML report.

``--follow`` prints each micro-batch's rows as they come: JSON lines and CSV
rows append (CSV's header once), a table repeats its header per batch.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any, Final

from kshare_cli.pipeline.models import (
    ARCHIVED_FIELDS,
    DELIVERY_FIELDS,
    HISTORY_GAP,
    TIMELINE_FIELDS,
    ArchivedRecord,
    AuditJob,
    AuditResult,
    DeliveryRange,
    SharePartitionHistory,
    TimelinePoint,
)
from kshare_cli.render.output_formats import (
    add_row,
    bytes_text,
    new_table,
    put_bytes,
    table_text,
    to_csv,
    to_json,
    to_jsonl,
)

__all__ = [
    "STDOUT_FORMATS",
    "audit_document",
    "history_document",
    "history_line",
    "history_lines",
    "iso_time",
    "render_audit",
    "render_rows",
    "row_document",
]

STDOUT_FORMATS: Final = ("table", "json", "jsonl", "csv")
_PREVIEW: Final = 40
_ESTIMATE: Final = "≈"
_UNKNOWN_TIME: Final = "unknown"
_ARCHIVED: Final = "archived"


def iso_time(value: datetime.datetime | None) -> str | None:
    """An instant as ISO-8601 UTC with milliseconds (2026-01-01T00:00:00.000Z)."""
    if value is None:
        return None
    utc = value.astimezone(datetime.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def row_document(row: TimelinePoint | DeliveryRange | ArchivedRecord) -> dict[str, Any]:
    """One row as a JSON object: every field, times as ISO text, bytes as text or base64."""
    document: dict[str, Any] = {}
    if isinstance(row, TimelinePoint):
        for name in TIMELINE_FIELDS:
            document[name] = getattr(row, name)
        document["time"] = iso_time(row.time)
        return document
    if isinstance(row, DeliveryRange):
        for name in DELIVERY_FIELDS:
            document[name] = getattr(row, name)
        document["last_changed"] = iso_time(row.last_changed)
        document["archiving_at"] = iso_time(row.archiving_at)
        return document
    for name in ARCHIVED_FIELDS:
        if name in ("key", "value", "headers"):
            continue
        document[name] = getattr(row, name)
    document["archived_at"] = iso_time(row.archived_at)
    document["archiving_at"] = iso_time(row.archiving_at)
    document["timestamp"] = iso_time(row.timestamp)
    put_bytes(document, "key", row.key)
    put_bytes(document, "value", row.value)
    headers = []
    for key, value in row.headers or ():
        header: dict[str, Any] = {"key": key}
        put_bytes(header, "value", value)
        headers.append(header)
    document["headers"] = headers
    return document


def _rows_of(result: AuditResult) -> Sequence[TimelinePoint | DeliveryRange | ArchivedRecord]:
    if result.job is AuditJob.TIMELINE:
        return result.timeline
    if result.job is AuditJob.DELIVERIES:
        return result.deliveries
    return result.archived


def history_document(history: SharePartitionHistory) -> dict[str, Any]:
    """A share-partition's history as JSON: from when the audit read it, and if all of it."""
    return {
        "topic": history.topic,
        "topic_id": history.topic_id,
        "partition": history.partition,
        "history_from": iso_time(history.history_from),
        "history_complete": history.history_complete,
        "history_missing": history.history_missing,
        "unknown_first_offset": history.unknown_first_offset,
        "unknown_last_offset": history.unknown_last_offset,
    }


def _share_partition(history: SharePartitionHistory) -> str:
    return f"{history.topic if history.topic is not None else history.topic_id}:{history.partition}"


def _offsets(first: int, last: int | None) -> str:
    if last is None:
        return f"offsets {first} and after"
    return f"offset {first}" if first == last else f"offsets {first}–{last}"


def history_line(history: SharePartitionHistory, *, capture: str | None = None) -> str | None:
    """What an audit cannot know of one share-partition, in one line; None if it knows it all.

    capture names the --history directory, when the records came from one.
    """
    if history.history_complete:
        return None
    where = _share_partition(history)
    since = iso_time(history.history_from) or _UNKNOWN_TIME
    if history.history_missing == HISTORY_GAP:
        in_capture = f" in {capture}" if capture else ""
        lost = f"state records pruned by Kafka between the capture{in_capture} and the live log"
        if history.unknown_first_offset is None:
            return (
                f"{where}: {lost}; every offset is still known, the time of what happened "
                "in between is unknown"
            )
        offsets = _offsets(history.unknown_first_offset, history.unknown_last_offset)
        return (
            f"{offsets} of {where}: {lost}; what is shown for them is from before, "
            "and may have changed since"
        )
    keep = "`kshare audit capture` keeps state records before Kafka prunes them"
    if history.unknown_first_offset is None:
        return (
            f"{where}: state records before {since} pruned by Kafka before this audit; "
            f"every offset is still known, outcomes reached before then have time unknown; {keep}"
        )
    offsets = _offsets(history.unknown_first_offset, history.unknown_last_offset)
    return (
        f"{offsets} of {where}: pruned by Kafka before this audit, not in these results "
        f"(state read from {since}); {keep}"
    )


def history_lines(
    history: Sequence[SharePartitionHistory], *, capture: str | None = None
) -> tuple[str, ...]:
    """`history_line` of each share-partition whose history the audit does not hold whole."""
    return tuple(
        line for each in history if (line := history_line(each, capture=capture)) is not None
    )


def audit_document(result: AuditResult) -> dict[str, Any]:
    """The -o json document: the job, the group, its rows under the job's name, and per
    share-partition how much history they come from."""
    return {
        "job": result.job.value,
        "group_id": result.group_id,
        result.job.value: [row_document(row) for row in _rows_of(result)],
        "history": [history_document(each) for each in result.history],
    }


def render_audit(
    result: AuditResult, fmt: str, *, width: int | None = None, capture: str | None = None
) -> str:
    """The result's rows in fmt (table, json, jsonl, csv); a table ends with what the audit
    cannot know (`history_lines`), also when it has no rows."""
    if fmt == "json":
        return to_json(audit_document(result))
    footer = history_lines(result.history, capture=capture) if fmt == "table" else ()
    return render_rows(result.job, _rows_of(result), fmt, width=width, footer=footer)


def render_rows(
    job: AuditJob,
    rows: Sequence[TimelinePoint | DeliveryRange | ArchivedRecord],
    fmt: str,
    *,
    width: int | None = None,
    csv_header: bool = True,
    footer: Sequence[str] = (),
) -> str:
    """Rows alone (a --follow micro-batch, or the whole answer) in table, jsonl or csv;
    footer, lines under a table."""
    if fmt in ("json", "jsonl"):
        return to_jsonl(row_document(row) for row in rows)
    if fmt == "csv":
        fields = _fields(job)
        text = to_csv(
            fields, ([_csv_cell(row_document(row)[name]) for name in fields] for row in rows)
        )
        return text if csv_header else text.split("\n", 1)[1]
    if not rows and not footer:
        return ""
    if job is AuditJob.TIMELINE:
        return _timeline_table(
            [row for row in rows if isinstance(row, TimelinePoint)], width, footer
        )
    if job is AuditJob.DELIVERIES:
        return _deliveries_table(
            [row for row in rows if isinstance(row, DeliveryRange)], width, footer
        )
    return _archived_table([row for row in rows if isinstance(row, ArchivedRecord)], width, footer)


def _fields(job: AuditJob) -> tuple[str, ...]:
    if job is AuditJob.TIMELINE:
        return TIMELINE_FIELDS
    if job is AuditJob.DELIVERIES:
        return DELIVERY_FIELDS
    return ARCHIVED_FIELDS


def _csv_cell(value: Any) -> Any:
    if isinstance(value, list):
        return ";".join(f"{header['key']}={header.get('value') or ''}" for header in value)
    if isinstance(value, bool):
        return str(value).lower()
    return value


def _topic(row: TimelinePoint | DeliveryRange | ArchivedRecord) -> str:
    return row.topic if row.topic is not None else row.topic_id


def _lag_cell(point: TimelinePoint) -> str | None:
    if point.lag is None:
        return None
    return f"{_ESTIMATE}{point.lag}" if point.lag_basis == "record_timestamps" else str(point.lag)


_TIMELINE_COLUMNS: Final = (
    "TOPIC",
    "PARTITION",
    "TIME",
    "RECORD",
    "START-OFFSET",
    "WINDOW-END",
    "ACKNOWLEDGED",
    "AVAILABLE",
    "ARCHIVING",
    "ARCHIVED",
    "UNRECORDED",
    "MAX-DELIVERIES",
    "LOG-END-OFFSET",
    "LAG",
)
#: The timeline's columns of words and times; every other one holds a number.
_TIMELINE_TEXT_COLUMNS: Final = frozenset({"TOPIC", "TIME", "RECORD"})


def _timeline_table(
    points: Sequence[TimelinePoint], width: int | None, footer: Sequence[str]
) -> str:
    table = new_table(
        *_TIMELINE_COLUMNS,
        right=[column for column in _TIMELINE_COLUMNS if column not in _TIMELINE_TEXT_COLUMNS],
    )
    for index, point in enumerate(points):
        following = points[index + 1] if index + 1 < len(points) else None
        add_row(
            table,
            [
                _topic(point),
                point.partition,
                iso_time(point.time),
                point.record,
                point.start_offset,
                point.end_offset,
                point.acknowledged,
                point.available,
                point.archiving,
                point.archived,
                point.unrecorded,
                point.max_delivery_count,
                point.log_end_offset,
                _lag_cell(point),
            ],
            end_section=following is not None
            and (following.topic_id, following.partition) != (point.topic_id, point.partition),
        )
    notes = []
    if any(point.lag_basis == "record_timestamps" for point in points):
        notes.append(
            f"{_ESTIMATE}: lag from the log end offset dated by the source records' timestamps "
            "(exact when they are the broker's)."
        )
    return table_text(table, width, [*notes, *footer])


def _deliveries_table(
    ranges: Sequence[DeliveryRange], width: int | None, footer: Sequence[str]
) -> str:
    table = new_table(
        "TOPIC",
        "PARTITION",
        "OFFSETS",
        "RECORDS",
        "MAX-DELIVERIES",
        "FINAL-STATE",
        "FINAL-DELIVERIES",
        "COMPLETE",
        "LAST-CHANGED",
        right=("PARTITION", "RECORDS", "MAX-DELIVERIES", "FINAL-DELIVERIES"),
    )
    for each in ranges:
        offsets = (
            str(each.first_offset)
            if each.first_offset == each.last_offset
            else f"{each.first_offset}-{each.last_offset}"
        )
        add_row(
            table,
            [
                _topic(each),
                each.partition,
                offsets,
                each.count,
                each.max_delivery_count,
                each.final_state,
                each.final_delivery_count,
                "yes" if each.complete else "no",
                iso_time(each.last_changed) or _UNKNOWN_TIME,
            ],
        )
    return table_text(table, width, footer)


def _preview(value: bytes | None) -> str | None:
    if value is None:
        return None
    text = bytes_text(value).replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def _archiving_time(record: ArchivedRecord) -> str | None:
    """When the record became ARCHIVING; None (``-``) for a record archived directly (Kafka
    4.2, no DLQ), which the ARCHIVED write alone dates, else unknown (pruned)."""
    if record.archiving_at is not None:
        return iso_time(record.archiving_at)
    if record.state == _ARCHIVED and record.archived_at is not None:
        return None
    return _UNKNOWN_TIME


def _archived_time(record: ArchivedRecord) -> str | None:
    """When the record became ARCHIVED; None (``-``) while it is still ARCHIVING."""
    if record.state != _ARCHIVED:
        return None
    return iso_time(record.archived_at) or _UNKNOWN_TIME


def _archived_table(
    records: Sequence[ArchivedRecord], width: int | None, footer: Sequence[str]
) -> str:
    table = new_table(
        "TOPIC",
        "PARTITION",
        "OFFSET",
        "DELIVERIES",
        "REASON",
        "STATE",
        "ARCHIVING-AT",
        "ARCHIVED-AT",
        "KEY",
        "VALUE",
        "HEADERS",
        right=("PARTITION", "OFFSET", "DELIVERIES"),
    )
    notes = []
    for record in records:
        headers = None
        if record.headers:
            headers = ",".join(f"{key}={_preview(value) or ''}" for key, value in record.headers)
        add_row(
            table,
            [
                _topic(record),
                record.partition,
                record.offset,
                record.delivery_count,
                (record.reason or "unknown").replace("_", " "),
                record.state,
                _archiving_time(record),
                _archived_time(record),
                _preview(record.key) if record.record_found else "(gone)",
                _preview(record.value) if record.record_found else "(gone)",
                headers,
            ],
        )
    if any(not record.record_found for record in records):
        notes.append("(gone): the source topic no longer holds the record (retention).")
    if any(record.state != "archived" for record in records):
        notes.append(
            "archiving: Kafka 4.4 persisted the record on its way to the group's DLQ and has "
            "not yet written it there (it resumes when it loads the share-partition)."
        )
    return table_text(table, width, [*notes, *footer])
