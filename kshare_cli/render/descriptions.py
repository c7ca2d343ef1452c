"""Rendering ``GroupDescriptions``: ``kshare describe --members`` and ``--state``.

``plain`` is ``kafka-share-groups.sh --describe --members|--state [--verbose]``
byte for byte (printMembers and printStates in Kafka 4.2's ShareGroupCommand):
Kafka's column widths, its "does not exist" line for a Dead group, and nothing
for a group without members in the members view. What Kafka prints on stderr
("has no active members") is returned by ``description_notices``: for ``plain``
with Kafka's leading blank line (``maybePrintEmptyGroupState`` prints
``"\nShare group ..."``), so stderr too is Kafka's byte for byte; the other
formats keep kshare's one line per diagnostic. The table adds rack,
subscriptions and the assignor.

JSON and YAML give the whole description whichever view is asked for; JSONL and
CSV give one row per member (members view) or per group (state view).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from kshare_cli.admin.models import (
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    MemberDescription,
)
from kshare_cli.render.ages import format_age
from kshare_cli.render.listing import broker_errors_document
from kshare_cli.render.output_formats import (
    OutputFormat,
    add_row,
    dispatch,
    error_document,
    java_row,
    new_table,
    per_group_csv_rows,
    table_text,
)

if TYPE_CHECKING:
    from kshare_cli.admin.dead_letter_queues import GroupDeadLetterQueue

__all__ = [
    "DescribeView",
    "dead_letter_queue_document",
    "dead_letter_queue_notes",
    "description_notices",
    "descriptions_document",
    "member_rows",
    "render_members",
    "render_states",
    "state_rows",
]

DescribeView = Literal["members", "state"]

_MIN_WIDTH = 15
_MIN_COORDINATOR_WIDTH = 25

MEMBERS_CSV_HEADER = (
    "group_id",
    "member_id",
    "client_id",
    "host",
    "rack",
    "member_epoch",
    "partition_count",
    "assignment",
    "subscribed_topics",
    "error",
)
STATE_CSV_HEADER = (
    "group_id",
    "state",
    "coordinator_id",
    "coordinator_host",
    "coordinator_port",
    "group_epoch",
    "assignment_epoch",
    "assignor",
    "member_count",
    "error",
)


def render_members(
    descriptions: GroupDescriptions,
    fmt: OutputFormat | str,
    *,
    verbose: bool = False,
    width: int | None = None,
) -> str:
    """Members view in ``fmt``; ``verbose`` adds Kafka's MEMBER-EPOCH column (plain, table)."""
    return _render_view(_MEMBERS_VIEW, descriptions, fmt, verbose, width)


def render_states(
    descriptions: GroupDescriptions,
    fmt: OutputFormat | str,
    *,
    verbose: bool = False,
    width: int | None = None,
) -> str:
    """State view in ``fmt``; ``verbose`` adds GROUP-EPOCH and ASSIGNMENT-EPOCH (plain, table)."""
    return _render_view(_STATE_VIEW, descriptions, fmt, verbose, width)


@dataclass(frozen=True, slots=True)
class _View:
    """What differs between the members and the state view; the rest is one dispatch."""

    plain_group: Callable[[GroupDescription, bool], str]
    table: Callable[[GroupDescriptions, bool, int | None], str]
    rows: Callable[[GroupDescriptions], list[dict[str, Any]]]
    csv_header: tuple[str, ...]
    csv_rows: Callable[[GroupDescriptions], list[tuple[Any, ...]]]


def _render_view(
    view: _View,
    descriptions: GroupDescriptions,
    fmt: OutputFormat | str,
    verbose: bool,
    width: int | None,
) -> str:
    return dispatch(
        fmt,
        plain=lambda: "".join(
            view.plain_group(group, verbose) for group in descriptions.succeeded()
        ),
        table=lambda: view.table(descriptions, verbose, width),
        document=lambda: descriptions_document(descriptions),
        rows=lambda: view.rows(descriptions),
        csv_header=view.csv_header,
        csv_rows=lambda: view.csv_rows(descriptions),
    )


def description_notices(descriptions: GroupDescriptions, *, plain: bool = False) -> tuple[str, ...]:
    """What Kafka's tool says on stderr for these groups (one notice each, no errors).

    ``plain`` starts each notice with Kafka's blank line, so that writing each one
    with a newline gives Kafka's stderr bytes; without it, each is one line.
    """
    blank = "\n" if plain else ""
    kafka = tuple(
        f"{blank}Share group '{group.group_id}' has no active members."
        for group in descriptions.succeeded()
        if group.state == "Empty"
    )
    if plain:
        return kafka  # Kafka's stderr, byte for byte
    return kafka + tuple(f"kshare: note: {line}" for line in dead_letter_queue_notes(descriptions))


# --------------------------------------------------------------------------- plain


def _coordinator_text(group: GroupDescription) -> str:
    coordinator = group.coordinator
    if coordinator is None:
        return "-"
    return f"{coordinator.host}:{coordinator.port}  ({coordinator.node_id})"


def _dead(group: GroupDescription) -> str:
    # printError: "\nError: " + message, on stdout.
    return f"\nError: Share group '{group.group_id}' does not exist.\n"


def _plain_state(group: GroupDescription, verbose: bool) -> str:
    text = _dead(group) if group.state == "Dead" else ""
    coordinator = _coordinator_text(group)
    group_width = max(_MIN_WIDTH, len(group.group_id))
    coordinator_width = max(_MIN_COORDINATOR_WIDTH, len(coordinator))
    if verbose:
        widths: tuple[int, ...] = (group_width, coordinator_width, 15, 12, 17)
        header: tuple[object, ...] = (
            "GROUP",
            "COORDINATOR (ID)",
            "STATE",
            "GROUP-EPOCH",
            "ASSIGNMENT-EPOCH",
            "#MEMBERS",
        )
        row: tuple[object, ...] = (
            group.group_id,
            coordinator,
            group.state,
            group.group_epoch,
            group.assignment_epoch,
            group.member_count,
        )
    else:
        widths = (group_width, coordinator_width, 15)
        header = ("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS")
        row = (group.group_id, coordinator, group.state, group.member_count)
    return text + "\n" + java_row(widths, header) + "\n" + java_row(widths, row) + "\n"


def _plain_members(group: GroupDescription, verbose: bool) -> str:
    if group.state == "Dead":
        return _dead(group)
    if not group.members:
        return ""
    members = group.members
    widths: tuple[int, ...] = (
        max(_MIN_WIDTH, len(group.group_id)),
        max([_MIN_WIDTH, *(len(m.member_id) for m in members)]),
        max([_MIN_WIDTH, *(len(m.host) for m in members)]),
        max([_MIN_WIDTH, *(len(m.client_id) for m in members)]),
        12,
    )
    header: tuple[object, ...] = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    if verbose:
        widths += (13,)
        header += ("MEMBER-EPOCH",)
    text = "\n" + java_row(widths, (*header, "ASSIGNMENT"))
    for member in members:
        row: tuple[object, ...] = (
            group.group_id,
            member.member_id,
            member.host,
            member.client_id,
            member.partition_count,
        )
        if verbose:
            row += (member.member_epoch,)
        text += "\n" + java_row(widths, (*row, member.assignment_text))
    return text + "\n"


# --------------------------------------------------------------------------- table


def _members_table(descriptions: GroupDescriptions, verbose: bool, width: int | None) -> str:
    groups = descriptions.succeeded()
    if not groups:
        return ""
    columns = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "RACK", "#PARTITIONS"]
    if verbose:
        columns.append("MEMBER-EPOCH")
    columns += ["ASSIGNMENT", "SUBSCRIBED"]
    table = new_table(*columns, right=("#PARTITIONS", "MEMBER-EPOCH"))
    for group in groups:
        if not group.members:
            add_row(table, (group.group_id, f"({_no_members(group)})"))
            continue
        # A blank line after a group of several members; one-line groups run together.
        last = len(group.members) - 1 if len(group.members) > 1 else -1
        for index, member in enumerate(group.members):
            row: list[object] = [
                group.group_id,
                member.member_id,
                member.host,
                member.client_id,
                member.rack,
                member.partition_count,
            ]
            if verbose:
                row.append(member.member_epoch)
            row += [member.assignment_text, ",".join(member.subscribed_topics)]
            add_row(table, row, end_section=index == last)
    return table_text(table, width)


def _no_members(group: GroupDescription) -> str:
    return "group does not exist" if group.state == "Dead" else "no active members"


def _state_table(descriptions: GroupDescriptions, verbose: bool, width: int | None) -> str:
    groups = descriptions.succeeded()
    if not groups:
        return ""
    columns = ["GROUP", "COORDINATOR (ID)", "STATE", "ASSIGNOR"]
    if verbose:
        columns += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
    columns.append("#MEMBERS")
    dlq = _shows_dead_letter_queues(descriptions)
    if dlq:
        columns += list(_DLQ_COLUMNS)
    table = new_table(
        *columns, right=("GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS", *_DLQ_COLUMNS[1:])
    )
    for group in groups:
        coordinator = group.coordinator
        where = f"{coordinator.address} ({coordinator.node_id})" if coordinator else None
        row: list[object] = [group.group_id, where, group.state, group.assignor]
        if verbose:
            row += [group.group_epoch, group.assignment_epoch]
        row.append(group.member_count)
        if dlq:
            row += _dlq_cells(descriptions.dead_letter_queue(group.group_id))
        add_row(table, row)
    return table_text(table, width)


#: describe --state's DLQ columns: the group's DLQ topic, the dead letters the broker
#: wrote there for it (``+``: the read stopped early, at least that many), by reason,
#: and the newest one's age.
_DLQ_COLUMNS: Final = ("DLQ", "DLQ-RECORDS", "REJECTED", "OVER-LIMIT", "NEWEST-DLQ")


def _shows_dead_letter_queues(descriptions: GroupDescriptions) -> bool:
    """The DLQ columns, where a DLQ can be: the cluster acts on it, or a group names one."""
    cluster = descriptions.cluster
    queues = descriptions.dead_letter_queues or ()
    if cluster is None and not queues:
        return False
    acts = cluster is not None and cluster.dead_letter_queue
    return acts or any(queue.topic is not None for queue in queues)


def _dlq_cells(queue: GroupDeadLetterQueue | None) -> list[object]:
    if queue is None:
        return ["-", "-", "-", "-", "-"]
    if queue.topic is None:
        return ["none", "-", "-", "-", "-"]
    topic = queue.topic if queue.active else f"{queue.topic} (ignored)"
    if queue.records is None:
        return [topic, "-", "-", "-", "-"]
    floor = "" if queue.complete else "+"
    return [
        topic,
        f"{queue.records}{floor}",
        queue.rejected,
        queue.delivery_limit,
        format_age(queue.newest_age_s) if queue.newest_timestamp_ms is not None else "-",
    ]


def dead_letter_queue_notes(descriptions: GroupDescriptions) -> tuple[str, ...]:
    """What the DLQ figures of ``describe --state`` leave out, one line per group that
    names a DLQ (the cluster ignores it, the topic is missing, the read stopped early)."""
    return tuple(
        f"share group '{queue.group_id}': dead-letter queue: {queue.note}"
        for queue in descriptions.dead_letter_queues or ()
        if queue.topic is not None and queue.note is not None
    )


def dead_letter_queue_document(queue: GroupDeadLetterQueue) -> dict[str, Any]:
    """A group's DLQ in JSON (``describe.schema.json``'s ``dead_letter_queue``)."""
    return {
        "topic": queue.topic,
        "active": queue.active,
        "records": queue.records,
        "rejected": queue.rejected,
        "delivery_limit": queue.delivery_limit,
        "other": queue.other,
        "newest_timestamp_ms": queue.newest_timestamp_ms,
        "newest_age_seconds": queue.newest_age_s,
        "complete": queue.complete,
        "note": queue.note,
    }


# --------------------------------------------------------------------------- structured


def _member_document(member: MemberDescription) -> dict[str, Any]:
    return {
        "member_id": member.member_id,
        "client_id": member.client_id,
        "host": member.host,
        "rack": member.rack,
        "member_epoch": member.member_epoch,
        "partition_count": member.partition_count,
        "assignment": {topic: list(parts) for topic, parts in member.assignment.items()},
        "subscribed_topics": list(member.subscribed_topics),
    }


def _group_state_document(group: GroupDescription) -> dict[str, Any]:
    coordinator = group.coordinator
    return {
        "group_id": group.group_id,
        "error": None,
        "state": group.state,
        "coordinator": None
        if coordinator is None
        else {"node_id": coordinator.node_id, "host": coordinator.host, "port": coordinator.port},
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor,
        "member_count": group.member_count,
        "authorized_operations": None
        if group.authorized_operations is None
        else list(group.authorized_operations),
    }


def _failure_document(failure: GroupFailure) -> dict[str, Any]:
    return {"group_id": failure.group_id, "error": error_document(failure.error)}


def descriptions_document(descriptions: GroupDescriptions) -> dict[str, Any]:
    """Every group, described or failed (``docs/schemas/describe.schema.json``)."""
    groups: list[dict[str, Any]] = []
    for result in descriptions.sorted():
        if isinstance(result, GroupFailure):
            groups.append(_failure_document(result))
        else:
            document = _group_state_document(result)
            document["members"] = [_member_document(member) for member in result.members]
            queue = descriptions.dead_letter_queue(result.group_id)
            if queue is not None:
                document["dead_letter_queue"] = dead_letter_queue_document(queue)
            groups.append(document)
    answer: dict[str, Any] = {
        "groups": groups,
        "broker_errors": broker_errors_document(descriptions.broker_failures),
    }
    if descriptions.cluster is not None:
        # describe --state: the Kafka line and share.version the cluster's features say.
        answer["cluster"] = descriptions.cluster.document()
    return answer


def member_rows(descriptions: GroupDescriptions) -> list[dict[str, Any]]:
    """One object per member, or per failed group (``members-row.schema.json``)."""
    rows: list[dict[str, Any]] = []
    for result in descriptions.sorted():
        if isinstance(result, GroupFailure):
            rows.append(_failure_document(result))
            continue
        for member in result.members:
            rows.append({"group_id": result.group_id, "error": None, **_member_document(member)})
    return rows


def state_rows(descriptions: GroupDescriptions) -> list[dict[str, Any]]:
    """One object per group (``state-row.schema.json``)."""
    return [
        _failure_document(result)
        if isinstance(result, GroupFailure)
        else _group_state_document(result)
        for result in descriptions.sorted()
    ]


def _member_csv_rows(descriptions: GroupDescriptions) -> list[tuple[Any, ...]]:
    return per_group_csv_rows(descriptions.sorted(), MEMBERS_CSV_HEADER, _member_cells)


def _member_cells(group: GroupDescription) -> list[tuple[Any, ...]]:
    return [
        (
            group.group_id,
            member.member_id,
            member.client_id,
            member.host,
            member.rack,
            member.member_epoch,
            member.partition_count,
            member.assignment_text,
            ";".join(member.subscribed_topics),
            None,
        )
        for member in group.members
    ]


def _state_csv_rows(descriptions: GroupDescriptions) -> list[tuple[Any, ...]]:
    return per_group_csv_rows(descriptions.sorted(), STATE_CSV_HEADER, _state_cells)


def _state_cells(group: GroupDescription) -> list[tuple[Any, ...]]:
    coordinator = group.coordinator
    return [
        (
            group.group_id,
            group.state,
            coordinator.node_id if coordinator else None,
            coordinator.host if coordinator else None,
            coordinator.port if coordinator else None,
            group.group_epoch,
            group.assignment_epoch,
            group.assignor,
            group.member_count,
            None,
        )
    ]


_MEMBERS_VIEW: Final = _View(
    _plain_members, _members_table, member_rows, MEMBERS_CSV_HEADER, _member_csv_rows
)
_STATE_VIEW: Final = _View(
    _plain_state, _state_table, state_rows, STATE_CSV_HEADER, _state_csv_rows
)
