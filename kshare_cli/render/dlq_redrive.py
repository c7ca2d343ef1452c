"""``kshare dlq redrive``: the plan, and what was sent, as a table, JSON, JSONL, CSV or YAML.

One row per source partition and reason: where its records go (TARGET), how many
will be sent (SEND), how many a run already redrove there (ALREADY), how many
cannot be (CANNOT: no copy in the DLQ record and gone from the source log), and
once executed how many were sent (SENT: each confirmed by its delivery report).
The table ends with a TOTAL row. JSON and YAML are one document (the counts, the
rows, the dead letters that cannot be sent and why, and with ``--execute`` the
result); JSONL and CSV are the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from kshare_cli.render.output_formats import add_row, dispatch, new_table, table_text

if TYPE_CHECKING:
    from kshare_cli.services.dlq_redrive import PlanRow, RedriveOutcome, RedrivePlan

__all__ = ["CSV_HEADER", "redrive_document", "render_redrive"]

CSV_HEADER: Final = (
    "topic",
    "partition",
    "reason",
    "target",
    "send",
    "already_redriven",
    "cannot",
    "without_headers",
    "sent",
)


def _row_document(row: PlanRow) -> dict[str, Any]:
    return dict(zip(CSV_HEADER, _row_cells(row), strict=True))


def _row_cells(row: PlanRow) -> tuple[Any, ...]:
    return (
        row.topic,
        row.partition,
        row.reason,
        row.target,
        row.send,
        row.already,
        row.cannot,
        row.without_headers,
        row.sent,
    )


def redrive_document(plan: RedrivePlan, outcome: RedriveOutcome | None) -> dict[str, Any]:
    delivered = None if outcome is None else outcome.result.delivered
    rows = plan.rows(delivered)
    document: dict[str, Any] = {
        "group_id": plan.group_id,
        "dlq_topic": plan.dlq_topic,
        "to_topic": plan.to_topic,
        "dry_run": outcome is None,
        "send": len(plan.sends),
        "already_redriven": len(plan.already),
        "cannot": len(plan.cannot),
        "without_headers": plan.without_headers,
        "partitions": [_row_document(row) for row in rows],
        "cannot_send": [
            {
                "topic": cannot.dead_letter.topic,
                "partition": cannot.dead_letter.partition,
                "offset": cannot.dead_letter.offset,
                "reason": cannot.dead_letter.reason,
                "dlq_partition": cannot.dead_letter.dlq_partition,
                "dlq_offset": cannot.dead_letter.dlq_offset,
                "why": cannot.why,
            }
            for cannot in plan.cannot
        ],
        "failures": list(plan.failures),
    }
    if outcome is not None:
        result = outcome.result
        document["result"] = {
            "sent": len(result.delivered),
            "failed": [
                {
                    "topic": failure.record.source_topic,
                    "partition": failure.record.source_partition,
                    "offset": failure.record.source_offset,
                    "dlq_partition": failure.record.dlq.partition,
                    "dlq_offset": failure.record.dlq.offset,
                    "error": failure.error,
                }
                for failure in result.failures
            ],
            "unconfirmed": len(result.unconfirmed),
            "not_sent": result.not_sent,
            "stopped_by": result.stopped_by,
            "elapsed_seconds": round(result.elapsed_s, 3),
        }
    return document


def _table(plan: RedrivePlan, outcome: RedriveOutcome | None, width: int | None) -> str:
    delivered = None if outcome is None else outcome.result.delivered
    rows = plan.rows(delivered)
    columns = ["TOPIC", "PARTITION", "REASON", "TARGET", "SEND", "ALREADY", "CANNOT"]
    numbers = ["PARTITION", "SEND", "ALREADY", "CANNOT", "SENT"]
    if outcome is not None:
        columns.append("SENT")
    table = new_table(*columns, right=numbers)
    for index, row in enumerate(rows):
        # The CSV's cells up to CANNOT; the records without headers are a note below.
        cells: list[object] = list(_row_cells(row)[: CSV_HEADER.index("without_headers")])
        if outcome is not None:
            cells.append(row.sent)
        add_row(table, cells, end_section=index == len(rows) - 1)
    total: list[object] = [
        "TOTAL",
        "",
        "",
        "",
        len(plan.sends),
        len(plan.already),
        len(plan.cannot),
    ]
    if outcome is not None:
        total.append(len(outcome.result.delivered))
    add_row(table, total)
    notes = []
    if plan.without_headers:
        notes.append(
            f"{plan.without_headers} of the records to send carry no headers: Kafka's copy "
            "has none and the source log no longer holds them."
        )
    return table_text(table, width, notes)


def render_redrive(
    plan: RedrivePlan,
    outcome: RedriveOutcome | None,
    fmt: str,
    width: int | None = None,
) -> str:
    """The plan (``outcome`` None: a dry run) or what was sent, in ``fmt``."""
    delivered = None if outcome is None else outcome.result.delivered
    return dispatch(
        fmt,
        plain=lambda: _table(plan, outcome, width),
        table=lambda: _table(plan, outcome, width),
        document=lambda: redrive_document(plan, outcome),
        rows=lambda: [_row_document(row) for row in plan.rows(delivered)],
        csv_header=CSV_HEADER,
        csv_rows=lambda: [_row_cells(row) for row in plan.rows(delivered)],
    )
