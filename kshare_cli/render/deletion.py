"""Rendering ``Deletions``: ``kshare delete`` and ``kshare delete-offsets``.

``plain`` is ``kafka-share-groups.sh --delete`` / ``--delete-offsets`` byte for byte
(deleteShareGroups and deleteOffsets in Kafka 4.2's ShareGroupCommand), sorted:

- delete: ``Deletion of requested share groups ('a', 'b') was successful.``, or
  Kafka's failure block (``Error: Deletion of some share groups failed:``, one
  ``* Group 'x' could not be deleted due to: <Java exception>`` line each, then the
  groups deleted). The exception texts are Kafka's: a missing group reads
  ``java.lang.IllegalArgumentException: Group 'x' is not a share group.`` there, as
  Kafka's tool prints it (kshare's stderr line and exit code 5 say "not found").
- delete-offsets: the ``TOPIC STATUS`` table, ``Successful`` or ``Error: <message>``
  per topic. A group-level failure (missing, not empty) has no table: it is the
  stderr line. A dry run, which Kafka's tool does not have, says so in the same
  layouts (``would be successful``, ``Would be deleted (dry run)``).

The table has a row per group (delete) or topic (delete-offsets) with its result
and error; json, jsonl, csv and yaml follow ``docs/schemas/deletions*.schema.json``.
"""

from __future__ import annotations

from typing import Any, Final

from kshare_cli.admin.deletion import Deletion, Deletions, GroupMember
from kshare_cli.admin.models import KafkaError
from kshare_cli.render.output_formats import (
    OutputFormat,
    add_row,
    dispatch,
    error_cell,
    error_document,
    java_row,
    new_table,
    table_text,
)

__all__ = ["deletions_document", "deletions_rows", "render_deletions"]

#: deleteOffsets: ``"%n%" + (-maxTopicLen) + "s %s"`` with maxTopicLen at least 15.
_MIN_TOPIC_WIDTH = 15

CSV_HEADER = (
    "operation",
    "dry_run",
    "group_id",
    "topic",
    "result",
    "reason",
    "message",
    "partitions",
    "members",
    "error",
)

_RESULT_TEXT: Final = {
    "deleted": "deleted",
    "would_delete": "would delete",
    "refused": "refused",
    "not_found": "not found",
    "failed": "failed",
}

#: Kafka's exception class and default message (``Errors``) for the errors a deletion meets.
_KAFKA_EXCEPTIONS: Final = {
    -1: (
        "UnknownServerException",
        "The server experienced an unexpected error when processing the request.",
    ),
    3: ("UnknownTopicOrPartitionException", "This server does not host this topic-partition."),
    7: ("TimeoutException", "The request timed out."),
    13: ("NetworkException", "The server disconnected before a response was received."),
    15: ("CoordinatorNotAvailableException", "The coordinator is not available."),
    24: ("InvalidGroupIdException", "The configured groupId is invalid."),
    29: ("TopicAuthorizationException", "Topic authorization failed."),
    30: ("GroupAuthorizationException", "Group authorization failed."),
    68: ("GroupNotEmptyException", "The group is not empty."),
    69: ("GroupIdNotFoundException", "The group id does not exist."),
}

DRY_RUN_STATUS = "Would be deleted (dry run)"


def render_deletions(
    deletions: Deletions, fmt: OutputFormat | str, *, width: int | None = None
) -> str:
    """The deletions in ``fmt``."""
    return dispatch(
        fmt,
        plain=lambda: _plain(deletions),
        table=lambda: _table(deletions, width),
        document=lambda: deletions_document(deletions),
        rows=lambda: deletions_rows(deletions),
        csv_header=CSV_HEADER,
        csv_rows=lambda: _csv_rows(deletions),
    )


# --------------------------------------------------------------------------- plain


def _kafka_message(error: KafkaError) -> str:
    """``ApiException.getMessage()``: the broker's message, else Kafka's default one."""
    if error.message:
        return error.message
    known = _KAFKA_EXCEPTIONS.get(error.code)
    return known[1] if known else error.name


def _java_exception(error: KafkaError) -> str:
    """``Throwable.toString()`` of the exception Kafka's Admin client raises for ``error``."""
    known = _KAFKA_EXCEPTIONS.get(error.code)
    name = (
        known[0]
        if known
        else "".join(part.capitalize() for part in error.name.split("_")) + "Exception"
    )
    return f"org.apache.kafka.common.errors.{name}: {_kafka_message(error)}"


#: The first release whose ``kafka-share-groups.sh --delete`` calls a group that is not
#: a share group a GroupIdNotFoundException (KAFKA-20524); 4.2 and 4.3 raise an
#: IllegalArgumentException with the same message.
GROUP_ID_NOT_FOUND_FROM: Final = (4, 4)


def _not_a_share_group(group_id: str, kafka_line: str | None) -> str:
    message = f"Group '{group_id}' is not a share group."
    line = None if kafka_line is None else tuple(int(part) for part in kafka_line.split("."))
    if line is not None and line >= GROUP_ID_NOT_FOUND_FROM:
        return f"org.apache.kafka.common.errors.GroupIdNotFoundException: {message}"
    return f"java.lang.IllegalArgumentException: {message}"


def _group_failure_text(result: Deletion, kafka_line: str | None) -> str:
    """What Kafka's tool prints after ``could not be deleted due to:`` (on the cluster's
    release line: the words for a group that is not a share group changed in 4.4)."""
    group_id = result.group_id
    if result.reason == "not_empty" and result.error is None:
        return (
            "org.apache.kafka.common.errors.GroupNotEmptyException: "
            f"Share group '{group_id}' is not EMPTY."
        )
    if result.reason == "dead":
        return f"java.lang.IllegalStateException: Share group '{group_id}' group state is DEAD."
    if result.reason == "not_share_group" or result.not_found:
        # Kafka's tool checks ListGroups (share groups only) first, so a missing group and
        # a consumer group both read "not a share group" there.
        return _not_a_share_group(group_id, kafka_line)
    if result.error is not None:
        return _java_exception(result.error)
    return f"java.lang.IllegalStateException: {result.message or result.result}"


def _quoted(group_ids: list[str]) -> str:
    return ", ".join(f"'{group_id}'" for group_id in group_ids)


def _plain_delete(deletions: Deletions) -> str:
    if not deletions.results:
        return ""
    done = [result.group_id for result in deletions.succeeded()]
    failed = deletions.errors()
    dry = deletions.dry_run
    if not failed:
        outcome = "would be successful (dry run)" if dry else "was successful"
        return f"Deletion of requested share groups ({_quoted(done)}) {outcome}.\n"
    verb = "would fail" if dry else "failed"
    text = f"\nError: Deletion of some share groups {verb}:\n"
    for result in failed:
        text += f"* Group '{result.group_id}' could not be deleted due to: "
        text += _group_failure_text(result, deletions.kafka_line) + "\n"
    if done:
        if dry:
            text += f"\nThese share groups would be deleted: {_quoted(done)}\n"
        else:
            text += f"\nThese share groups were deleted successfully: {_quoted(done)}\n"
    return text


def _topic_status(result: Deletion) -> str:
    if result.result == "deleted":
        return "Successful"
    if result.result == "would_delete":
        return DRY_RUN_STATUS
    if result.error is not None:
        return f"Error: {_kafka_message(result.error)}"
    return f"Error: {result.message or result.result}"


def _plain_delete_offsets(deletions: Deletions) -> str:
    topics = [result for result in deletions.results if result.topic is not None]
    if not topics:
        return ""
    width = max([_MIN_TOPIC_WIDTH, *(len(result.topic or "") for result in topics)])
    text = "\n" + java_row((width,), ("TOPIC", "STATUS"))
    for result in sorted(topics, key=lambda r: r.topic or ""):
        text += "\n" + java_row((width,), (result.topic, _topic_status(result)))
    return text + "\n"


def _plain(deletions: Deletions) -> str:
    if deletions.operation == "delete":
        return _plain_delete(deletions)
    return _plain_delete_offsets(deletions)


# --------------------------------------------------------------------------- table


def _partitions_text(partitions: tuple[int, ...] | None) -> str | None:
    if partitions is None:
        return None
    return ",".join(str(partition) for partition in partitions)


def _error_text(result: Deletion) -> str:
    if result.succeeded:
        return ""
    if result.message:
        return result.message
    if result.error is not None:
        return str(result.error)
    return ""


def _table(deletions: Deletions, width: int | None) -> str:
    if not deletions.results:
        return ""
    offsets = deletions.operation == "delete-offsets"
    columns = (
        ["GROUP", "TOPIC", "PARTITIONS", "RESULT", "ERROR"]
        if offsets
        else [
            "GROUP",
            "RESULT",
            "ERROR",
        ]
    )
    table = new_table(*columns)
    notes = []
    for result in deletions.results:
        cells: list[object] = [result.group_id]
        if offsets:
            cells += [result.topic, _partitions_text(result.partitions)]
        cells += [_RESULT_TEXT[result.result], _error_text(result)]
        add_row(table, cells)
        if result.succeeded and result.message:
            notes.append(f"{result.group_id}: {result.message}.")
    return table_text(table, width, notes)


# --------------------------------------------------------------------------- structured


def _member_document(member: GroupMember) -> dict[str, Any]:
    return {"member_id": member.member_id, "client_id": member.client_id, "host": member.host}


def _result_document(result: Deletion) -> dict[str, Any]:
    return {
        "group_id": result.group_id,
        "topic": result.topic,
        "result": result.result,
        "reason": result.reason,
        "message": result.message,
        "partitions": None if result.partitions is None else list(result.partitions),
        "members": [_member_document(member) for member in result.members],
        "error": error_document(result.error),
    }


def deletions_document(deletions: Deletions) -> dict[str, Any]:
    """The whole run (``docs/schemas/deletions.schema.json``)."""
    return {
        "operation": deletions.operation,
        "dry_run": deletions.dry_run,
        "results": [_result_document(result) for result in deletions.results],
        "broker_errors": [
            {
                "node_id": failure.node_id,
                "host": failure.host,
                "port": failure.port,
                "error": error_document(failure.error),
            }
            for failure in deletions.broker_failures
        ],
    }


def deletions_rows(deletions: Deletions) -> list[dict[str, Any]]:
    """One object per group or topic (``docs/schemas/deletions-row.schema.json``)."""
    return [
        {"operation": deletions.operation, "dry_run": deletions.dry_run, **_result_document(r)}
        for r in deletions.results
    ]


def _csv_rows(deletions: Deletions) -> list[tuple[Any, ...]]:
    return [
        (
            deletions.operation,
            "true" if deletions.dry_run else "false",
            result.group_id,
            result.topic,
            result.result,
            result.reason,
            result.message,
            _partitions_text(result.partitions),
            "; ".join(str(member) for member in result.members) or None,
            error_cell(result.error),
        )
        for result in deletions.results
    ]
