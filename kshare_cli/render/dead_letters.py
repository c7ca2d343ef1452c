"""``kshare dlq show``: a group's dead letters as a table, JSON, JSONL, CSV or YAML.

Keys, values and header values are text when they are UTF-8, base64 otherwise,
with ``<field>_encoding: "base64"`` beside them (as the audit's rows); where they
came from is ``record_origin`` / ``headers_origin``: ``copy`` (the DLQ record),
``log`` (the source log), ``gone`` (no longer in either), ``unread`` (the deadline
came first). Schema: ``docs/schemas/dlq-show.schema.json`` (the document) and
``dlq-show-row.schema.json`` (a JSONL line).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.render.output_formats import (
    add_row,
    bytes_text,
    dispatch,
    new_table,
    put_bytes,
    table_text,
)

if TYPE_CHECKING:
    from kshare_cli.services.dlq import DeadLetterListing, DeadLetterRow

__all__ = ["CSV_HEADER", "dead_letter_document", "listing_document", "render_dead_letters"]

CSV_HEADER: Final = (
    "topic",
    "partition",
    "offset",
    "delivery_count",
    "reason",
    "dead_lettered_at",
    "record_origin",
    "key",
    "value",
    "headers_origin",
    "headers",
    "dlq_partition",
    "dlq_offset",
)
_PREVIEW: Final = 40


def _iso(millis: int | None) -> str | None:
    if millis is None:
        return None
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: bytes | None) -> str | None:
    return None if value is None else bytes_text(value)


def dead_letter_document(row: DeadLetterRow, group_id: str, dlq_topic: str) -> dict[str, Any]:
    """One dead letter as a JSON object (a JSONL line)."""
    document: dict[str, Any] = {
        "group_id": group_id,
        "dlq_topic": dlq_topic,
        "dlq_partition": row.dlq_partition,
        "dlq_offset": row.dlq_offset,
        "dead_lettered_at": _iso(row.dead_lettered_at_ms),
        "dead_lettered_at_ms": row.dead_lettered_at_ms,
        "topic": row.topic,
        "partition": row.partition,
        "offset": row.offset,
        "delivery_count": row.delivery_count,
        "reason": row.reason,
        "message": row.message,
        "record_origin": row.record_origin,
    }
    put_bytes(document, "key", row.key)
    put_bytes(document, "value", row.value)
    document["headers_origin"] = row.headers_origin
    if row.headers is None:
        document["headers"] = None
    else:
        headers = []
        for name, value in row.headers:
            header: dict[str, Any] = {"name": name}
            put_bytes(header, "value", value)
            headers.append(header)
        document["headers"] = headers
    return document


def listing_document(listing: DeadLetterListing) -> dict[str, Any]:
    """The whole answer: the dead letters, the summary, and whether it is complete."""
    return {
        "group_id": listing.group_id,
        "dlq_topic": listing.dlq_topic,
        "dlq_topic_from": "group-config" if listing.from_group_config else "--dlq-topic",
        "complete": listing.stopped_early is None and not listing.failures,
        "stopped_early": listing.stopped_early,
        "dead_letters": [
            dead_letter_document(row, listing.group_id, listing.dlq_topic)
            for row in listing.dead_letters
        ],
        "summary": [
            {"topic": topic, "partition": partition, "reason": reason, "records": records}
            for topic, partition, reason, records in listing.summary()
        ],
    }


def _headers_cell(row: DeadLetterRow) -> str:
    if row.headers is None:
        return row.headers_origin
    if not row.headers:
        return ""
    return ",".join(f"{name}={_text(value) or ''}" for name, value in row.headers)


def _preview(row: DeadLetterRow, value: bytes | None) -> str:
    if row.record_origin in ("gone", "unread"):
        return row.record_origin
    text = _text(value)
    if text is None:
        return "null"
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def _table(listing: DeadLetterListing, width: int | None) -> str:
    table = new_table(
        "TOPIC",
        "PARTITION",
        "OFFSET",
        "DELIVERIES",
        "REASON",
        "DEAD-LETTERED AT",
        "FROM",
        "KEY",
        "VALUE",
        "HEADERS",
        right=("PARTITION", "OFFSET", "DELIVERIES"),
    )
    for row in listing.dead_letters:
        add_row(
            table,
            (
                row.topic,
                row.partition,
                row.offset,
                row.delivery_count,
                row.reason,
                _iso(row.dead_lettered_at_ms),
                row.record_origin,
                _preview(row, row.key),
                _preview(row, row.value),
                _headers_cell(row),
            ),
        )
    text = table_text(table, width) if listing.dead_letters else ""
    summary = new_table("TOPIC", "PARTITION", "REASON", "RECORDS", right=("PARTITION", "RECORDS"))
    for topic, partition, reason, records in listing.summary():
        add_row(summary, (topic, partition, reason, records))
    if listing.dead_letters:
        text += "\n" + table_text(summary, width)
    return text


def _csv_rows(listing: DeadLetterListing) -> list[tuple[Any, ...]]:
    rows = []
    for row in listing.dead_letters:
        document = dead_letter_document(row, listing.group_id, listing.dlq_topic)
        rows.append(
            (
                row.topic,
                row.partition,
                row.offset,
                row.delivery_count,
                row.reason,
                document["dead_lettered_at"],
                row.record_origin,
                _text(row.key),
                _text(row.value),
                row.headers_origin,
                None if row.headers is None else _headers_cell(row),
                row.dlq_partition,
                row.dlq_offset,
            )
        )
    return rows


def render_dead_letters(listing: DeadLetterListing, fmt: str, *, width: int | None = None) -> str:
    """``listing`` in ``fmt`` (table, json, jsonl, csv, yaml)."""
    return dispatch(
        fmt,
        plain=lambda: _table(listing, width),
        table=lambda: _table(listing, width),
        document=lambda: listing_document(listing),
        rows=lambda: (
            dead_letter_document(row, listing.group_id, listing.dlq_topic)
            for row in listing.dead_letters
        ),
        csv_header=CSV_HEADER,
        csv_rows=lambda: _csv_rows(listing),
    )
