"""Rendering ``HealthReport``: ``kshare health``.

One row per group, then one per share-partition under it, each with its status
and the reasons in words (``; ``-joined in a table or CSV cell). json and yaml
are one document with the run's status; jsonl and csv one row per group and per
share-partition (a group's row has no topic and partition), so ``jq 'select(.status
!= "OK")'`` lists what needs attention. Kafka's tool has no such view: no ``plain``.
A broker that did not list its groups (``--all-groups``) is an ERR row of its own,
with no group (``broker_errors`` in json and yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kshare_cli.errors import UsageError
from kshare_cli.render.ages import format_age
from kshare_cli.render.listing import broker_errors_document
from kshare_cli.render.output_formats import OutputFormat, add_row, dispatch, new_table, table_text
from kshare_cli.services.health import GroupHealth, HealthReport, PartitionHealth

__all__ = ["CSV_HEADER", "health_document", "health_rows", "render_health"]

CSV_HEADER: Final = (
    "group",
    "topic",
    "partition",
    "status",
    "reason",
    "state",
    "members",
    "start_offset",
    "end_offset",
    "lag",
)


#: (group id, topic, partition) → seconds: ``health --time-lag`` (services/time_lag.py).
LagAges = Mapping[tuple[str, str, int], float | None]


def render_health(
    report: HealthReport, fmt: OutputFormat | str, lag_ages: LagAges | None = None
) -> str:
    """The report in ``fmt``; ``lag_ages`` (``--time-lag``) adds LAG-AGE / ``lag_seconds``.

    CSV keeps its columns whatever was asked, so a spreadsheet's layout never shifts.
    """
    return dispatch(
        fmt,
        plain=_no_plain,
        table=lambda: _table(report, lag_ages),
        document=lambda: health_document(report, lag_ages),
        rows=lambda: health_rows(report, lag_ages),
        csv_header=CSV_HEADER,
        csv_rows=lambda: [tuple(row[key] for key in CSV_HEADER) for row in health_rows(report)],
    )


def _no_plain() -> str:
    raise UsageError("-o plain: kafka-share-groups.sh has no health view to reproduce")


def _table(report: HealthReport, lag_ages: LagAges | None) -> str:
    ages = ("LAG-AGE",) if lag_ages is not None else ()
    table = new_table(
        "GROUP",
        "TOPIC",
        "PARTITION",
        "STATUS",
        "LAG",
        *ages,
        "REASON",
        right=("PARTITION", "LAG", "LAG-AGE"),
    )

    def age(seconds: float | None) -> list[object]:
        return [format_age(seconds)] if lag_ages is not None else []

    for index, group in enumerate(report.groups):
        # A rule between the last group and the brokers that did not list theirs.
        last = index == len(report.groups) - 1 and not report.broker_failures
        add_row(
            table,
            [
                group.group_id,
                None,
                None,
                group.status.value,
                group.lag,
                *age(_group_age(group, lag_ages)),
                _reason(group.reasons),
            ],
            end_section=not group.partitions and not last,
        )
        for position, partition in enumerate(group.partitions):
            add_row(
                table,
                [
                    group.group_id,
                    partition.topic,
                    partition.partition,
                    partition.status.value,
                    partition.lag,
                    *age(_partition_age(group, partition, lag_ages)),
                    _reason(partition.reasons),
                ],
                end_section=position == len(group.partitions) - 1 and not last,
            )
    for broker in report.broker_failures:
        add_row(table, [None, None, None, "ERR", None, *age(None), str(broker)])
    return table_text(table, None)


def _partition_age(
    group: GroupHealth, partition: PartitionHealth, lag_ages: LagAges | None
) -> float | None:
    return (lag_ages or {}).get((group.group_id, partition.topic, partition.partition))


def _group_age(group: GroupHealth, lag_ages: LagAges | None) -> float | None:
    """The group's oldest waiting record: the largest age among its share-partitions."""
    known = [
        age
        for partition in group.partitions
        if (age := _partition_age(group, partition, lag_ages)) is not None
    ]
    return max(known) if known else None


def _reason(reasons: tuple[str, ...]) -> str | None:
    return "; ".join(reasons) or None


def _partition_document(partition: PartitionHealth) -> dict[str, Any]:
    return {
        "topic": partition.topic,
        "partition": partition.partition,
        "status": partition.status.value,
        "reasons": list(partition.reasons),
        "start_offset": partition.start_offset,
        "end_offset": partition.end_offset,
        "lag": partition.lag,
        "log_start_offset": partition.log_start_offset,
        "archived": partition.archived,
        "near_delivery_limit": partition.near_limit,
        "archiving": partition.archiving,
        "deleted": partition.deleted,
    }


def _group_document(group: GroupHealth) -> dict[str, Any]:
    return {
        "group_id": group.group_id,
        "status": group.status.value,
        "reasons": list(group.reasons),
        "state": group.state,
        "members": group.members,
        "lag": group.lag,
        "not_found": group.not_found,
        "notes": list(group.notes),
        "partitions": [_partition_document(each) for each in group.partitions],
    }


def health_document(report: HealthReport, lag_ages: LagAges | None = None) -> dict[str, Any]:
    """The whole run: its status (the worst group's) and every group.

    With ``lag_ages`` every group and share-partition carries ``lag_seconds``.
    """
    groups = []
    for group in report.groups:
        document = _group_document(group)
        if lag_ages is not None:
            document["lag_seconds"] = _group_age(group, lag_ages)
            for partition, partition_document in zip(
                group.partitions, document["partitions"], strict=True
            ):
                partition_document["lag_seconds"] = _partition_age(group, partition, lag_ages)
        groups.append(document)
    return {
        "status": report.status.value,
        "groups": groups,
        "broker_errors": [
            {**document, "unknown_groups": list(broker.groups)}
            for broker, document in zip(
                report.broker_failures,
                broker_errors_document(broker.failure for broker in report.broker_failures),
                strict=True,
            )
        ],
    }


def health_rows(report: HealthReport, lag_ages: LagAges | None = None) -> list[dict[str, Any]]:
    """One flat row per group and per share-partition, in the table's order.

    With ``lag_ages`` each row of a JSONL run carries ``lag_seconds`` too.
    """
    rows: list[dict[str, Any]] = []
    aged = lag_ages is not None
    for group in report.groups:
        rows.append(
            {
                "group": group.group_id,
                "topic": None,
                "partition": None,
                "status": group.status.value,
                "reason": _reason(group.reasons),
                "state": group.state,
                "members": group.members,
                "start_offset": None,
                "end_offset": None,
                "lag": group.lag,
                **({"lag_seconds": _group_age(group, lag_ages)} if aged else {}),
            }
        )
        for partition in group.partitions:
            rows.append(
                {
                    "group": group.group_id,
                    "topic": partition.topic,
                    "partition": partition.partition,
                    "status": partition.status.value,
                    "reason": _reason(partition.reasons),
                    "state": None,
                    "members": None,
                    "start_offset": partition.start_offset,
                    "end_offset": partition.end_offset,
                    "lag": partition.lag,
                    **({"lag_seconds": _partition_age(group, partition, lag_ages)} if aged else {}),
                }
            )
    for broker in report.broker_failures:
        rows.append(
            {
                **dict.fromkeys(CSV_HEADER),
                "status": "ERR",
                "reason": str(broker),
                **({"lag_seconds": None} if aged else {}),
            }
        )
    return rows
