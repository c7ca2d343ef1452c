"""Rendering ``ResetPlan``: ``kshare reset-offsets``, dry run and executed.

``plain`` is ``kafka-share-groups.sh --reset-offsets`` byte for byte (Kafka 4.4's
``GroupOffsetsResetter.printOffsetsToReset``: GROUP, TOPIC, PARTITION, NEW-OFFSET), in
the order Kafka prints them, a ``java.util.HashMap``'s (``kafka_order``), preceded, for a
timestamp that no record reaches, by the line Kafka's ``getLogTimestampOffsets`` prints
on stdout (``Warn: Partition P from topic T is empty. Falling back to latest known
offset.``). ``kafka_export`` is its ``--export`` (CSV ``topic,partition,offset``, no
header, and ``println``'s blank line), and ``kafka_warnings`` the log lines it writes to
stderr for an offset clamped to the log (``[TIME] WARN New offset (100) is higher than
latest offset for topic partition T-P. Value will be set to 15. (...)``). The table
adds what an operator needs to judge a reset before running it: the current start
offset, the log start and end offsets, how many records the move skips or delivers
again (counted from the in-flight window, and for a rollback plan from its record of
the time before the reset it undoes; ``≥`` marks a lower bound, when the window could
not be read), and after ``--execute`` each partition's result.

A reset refused because the group has members (by kshare's check, or by the
broker when a consumer joined after the plan) is data like any result: every
partition reads ``refused`` and the document's ``reason`` says why. Only
``plain`` is then empty, as Kafka's tool says it on stderr alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from kshare_cli.admin.plans import PlanEntry, write_plan
from kshare_cli.admin.reset import PlannedOffset, ResetPlan
from kshare_cli.render.output_formats import (
    OutputFormat,
    add_row,
    dispatch,
    error_cell,
    error_document,
    java_row,
    new_table,
    or_dash,
    table_text,
)
from kshare_cli.state.partitioning import java_string_hash

__all__ = [
    "kafka_export",
    "kafka_order",
    "kafka_warnings",
    "render_reset",
    "reset_document",
    "reset_rows",
]

_MIN_ID_WIDTH = 15
_PARTITION_WIDTH = 10

CSV_HEADER = (
    "group_id",
    "topic",
    "partition",
    "current_offset",
    "new_offset",
    "requested_offset",
    "log_start_offset",
    "log_end_offset",
    "skipped",
    "redelivered",
    "clamped",
    "result",
    "error",
    "counts_exact",
    "resume_offset",
    "rollback_redelivers",
)

LOWER_BOUND = "≥"
"""Marks a count that is a lower bound (the in-flight window could not be read)."""


def render_reset(
    plan: ResetPlan, fmt: OutputFormat | str, *, width: int | None = None, confirming: bool = False
) -> str:
    """``plan`` in ``fmt``. ``confirming``: the table shown above ``--execute``'s question,
    which is about to change things, so it has no dry-run footer."""
    return dispatch(
        fmt,
        plain=lambda: _plain(plan),
        table=lambda: _table(plan, width, confirming=confirming),
        document=lambda: reset_document(plan),
        rows=lambda: reset_rows(plan),
        csv_header=CSV_HEADER,
        csv_rows=lambda: _csv_rows(plan),
    )


def result_text(plan: ResetPlan, offset: PlannedOffset) -> str:
    """``planned`` (dry run), ``reset``, ``refused`` (the group has members), or the error
    that kept it from being reset."""
    if plan.refusal is not None:
        return "refused"
    if not plan.executed:
        return "planned"
    if plan.group_error is not None:
        return plan.group_error.name
    if offset.error is not None:
        return offset.error.name
    return "reset" if offset.applied else "unknown"


def _change(offset: PlannedOffset) -> str:
    bound = "" if offset.exact else LOWER_BOUND
    parts = []
    if offset.skipped or not offset.exact:
        parts.append(f"skips {bound}{offset.skipped}")
    if offset.redelivered or not offset.exact:
        parts.append(f"re-delivers {bound}{offset.redelivered}")
    text = ", ".join(parts)
    if offset.current_offset is None:
        return f"{text} (no start offset)" if text else "(no start offset)"
    return text or "unchanged"


def _totals(plan: ResetPlan) -> str:
    bound = "" if plan.exact else "at least "
    return (
        f"skips {bound}{plan.skipped} record(s), re-delivers {bound}{plan.redelivered} "
        "(acknowledged or archived at or above the new start)"
    )


# --------------------------------------------------------------------------- plain


def _topic_partition_hash(offset: PlannedOffset) -> int:
    """Java's ``TopicPartition.hashCode`` (31 * (31 + partition) + topic's hash, in int)."""
    value = (31 * (31 + offset.partition) + java_string_hash(offset.topic)) & 0xFFFFFFFF
    return value ^ (value >> 16)  # HashMap.hash: the high bits spread into the low ones


def kafka_order(partitions: Iterable[PlannedOffset]) -> list[PlannedOffset]:
    """``partitions`` in the order Kafka's tool prints them: the iteration order of the
    ``java.util.HashMap<TopicPartition, ...>`` its ``Collectors.toMap`` builds (capacity 16,
    doubled past three quarters full), bucket by bucket. Within a bucket Java keeps the
    insertion order, which follows the order Kafka asked the broker in; kshare inserts in
    topic and partition order, so two partitions sharing a bucket (and a bucket Java turned
    into a tree, past 8 entries in a map of 64 or more) may come out in another order."""
    ordered = sorted(partitions, key=lambda offset: (offset.topic, offset.partition))
    capacity = 16
    while len(ordered) > capacity * 3 // 4:
        capacity *= 2
    return sorted(ordered, key=lambda offset: _topic_partition_hash(offset) & (capacity - 1))


def _plain(plan: ResetPlan) -> str:
    if plan.refusal is not None:
        return ""  # Kafka's tool refuses a group with members on stderr alone
    # getLogTimestampOffsets prints these while planning, before the table, from a map of
    # the partitions it found no record for.
    text = "".join(
        f"\nWarn: Partition {offset.partition} from topic {offset.topic} is empty. "
        "Falling back to latest known offset.\n"
        for offset in kafka_order(offset for offset in plan.partitions if offset.fell_back)
    )
    if not plan.partitions:
        return "\n"
    group_width = max(_MIN_ID_WIDTH, len(plan.group_id))
    topic_width = max([_MIN_ID_WIDTH, *(len(offset.topic) for offset in plan.partitions)])
    widths = (group_width, topic_width, _PARTITION_WIDTH)
    text += "\n" + java_row(widths, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
    for offset in kafka_order(plan.partitions):
        text += "\n" + java_row(
            widths, (plan.group_id, offset.topic, offset.partition, offset.new_offset)
        )
    return text + "\n"


def kafka_export(plan: ResetPlan) -> str:
    """Kafka 4.4's ``--export`` on stdout: ``ShareGroupCommand.exportOffsetsToCsv`` (one
    ``topic,partition,offset`` line per share-partition, Jackson's quoting, Kafka's order)
    printed with ``println``, hence the blank line at the end; nothing for a refused reset
    (Kafka's tool stops at its error)."""
    if plan.refusal is not None:
        return ""
    return (
        "".join(
            write_plan(
                [PlanEntry(plan.group_id, offset.topic, offset.partition, offset.new_offset)],
                with_group=False,
            )
            for offset in kafka_order(plan.partitions)
        )
        + "\n"
    )


def kafka_warnings(plan: ResetPlan, now: datetime) -> list[str]:
    """The lines Kafka's ``GroupOffsetsResetter.checkOffsetsRange`` logs on stderr for each
    offset it clamps to the log (``--to-offset``, ``--from-file``), in its order and in its
    tools' log4j layout (``[%d] %p %m (%c)``, the time ``now`` in the local zone, as the
    JVM's). Empty for a refused reset, which Kafka's tool stops before planning."""
    if plan.refusal is not None:
        return []
    stamp = f"{now:%Y-%m-%d %H:%M:%S},{now.microsecond // 1000:03d}"
    lines = []
    for offset in kafka_order(plan.partitions):
        if offset.clamped == "log-end":
            what, limit = "higher than latest", offset.log_end_offset
        elif offset.clamped == "log-start":
            what, limit = "lower than earliest", offset.log_start_offset
        else:
            continue
        lines.append(
            f"[{stamp}] WARN New offset ({offset.requested_offset}) is {what} offset for topic "
            f"partition {offset.topic}-{offset.partition}. Value will be set to {limit}. "
            "(org.apache.kafka.tools.GroupOffsetsResetter)"
        )
    return lines


# --------------------------------------------------------------------------- table


def _table(plan: ResetPlan, width: int | None, *, confirming: bool) -> str:
    columns = [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "NEW-OFFSET",
        "LOG-START",
        "LOG-END",
        "CHANGE",
        "RESULT",
    ]
    table = new_table(
        *columns, right=("PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-START", "LOG-END")
    )
    for offset in plan.partitions:
        new = f"{offset.new_offset}*" if offset.clamped else str(offset.new_offset)
        add_row(
            table,
            [
                plan.group_id,
                offset.topic,
                offset.partition,
                or_dash(offset.current_offset),
                new,
                offset.log_start_offset,
                offset.log_end_offset,
                _change(offset),
                result_text(plan, offset),
            ],
        )
    notes = []
    if any(offset.clamped for offset in plan.partitions):
        notes.append("*: clamped to the log start or end offset.")
    if plan.partitions:
        notes.append(f"{'Reset' if plan.executed else 'Plan'} ({plan.scenario}): {_totals(plan)}.")
    if plan.with_history:
        notes.append(
            "Counted with the rollback plan's record of what was acknowledged or archived "
            "before the reset it undoes (that reset cleared those states)."
        )
    if not plan.exact:
        notes.append(
            f"{LOWER_BOUND}: a lower bound: the in-flight windows could not be read "
            f"({plan.window_note or 'unknown reason'})."
        )
    if plan.refusal is not None:
        notes.append("Refused: the group is not empty (stop its consumers first); nothing changed.")
    elif not plan.executed and not confirming:
        notes.append("Dry run: nothing changed. Add --execute to reset.")
    return table_text(table, width, notes)


# --------------------------------------------------------------------------- structured


def _partition_document(plan: ResetPlan, offset: PlannedOffset) -> dict[str, Any]:
    error = offset.error if plan.group_error is None else plan.group_error
    return {
        "topic": offset.topic,
        "partition": offset.partition,
        "current_offset": offset.current_offset,
        "new_offset": offset.new_offset,
        "requested_offset": offset.requested_offset,
        "log_start_offset": offset.log_start_offset,
        "log_end_offset": offset.log_end_offset,
        "skipped": offset.skipped,
        "redelivered": offset.redelivered,
        "clamped": offset.clamped,
        "result": (
            result_text(plan, offset) if error is None or plan.refusal is not None else "error"
        ),
        "error": error_document(error) if plan.executed else None,
        "counts_exact": offset.exact,
        "resume_offset": offset.resume_offset,
        "rollback_redelivers": offset.resume_redelivers,
    }


def reset_document(plan: ResetPlan) -> dict[str, Any]:
    """The plan and its results (``docs/schemas/reset.schema.json``)."""
    return {
        "group_id": plan.group_id,
        "scenario": plan.scenario,
        "executed": plan.executed,
        "state": plan.state,
        "members": [member.member_id for member in plan.members],
        "rollback_file": plan.rollback_file,
        "error": error_document(plan.group_error),
        "reason": plan.refusal,
        "warnings": list(plan.warnings),
        "skipped": plan.skipped,
        "redelivered": plan.redelivered,
        "counts_exact": plan.exact,
        "counts_note": None if plan.exact else plan.window_note,
        "rollback_redelivers": plan.rollback_redelivers,
        "partitions": [_partition_document(plan, offset) for offset in plan.partitions],
    }


def reset_rows(plan: ResetPlan) -> list[dict[str, Any]]:
    """One object per share-partition (``docs/schemas/reset-row.schema.json``)."""
    return [
        {"group_id": plan.group_id, "executed": plan.executed, **_partition_document(plan, offset)}
        for offset in plan.partitions
    ]


def _csv_rows(plan: ResetPlan) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for offset in plan.partitions:
        document = _partition_document(plan, offset)
        error = offset.error if plan.group_error is None else plan.group_error
        rows.append(
            (
                plan.group_id,
                offset.topic,
                offset.partition,
                offset.current_offset,
                offset.new_offset,
                offset.requested_offset,
                offset.log_start_offset,
                offset.log_end_offset,
                offset.skipped,
                offset.redelivered,
                offset.clamped,
                document["result"],
                error_cell(error) if plan.executed else None,
                offset.exact,
                offset.resume_offset,
                offset.resume_redelivers,
            )
        )
    return rows
