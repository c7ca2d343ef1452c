"""The options every ``kshare dlq`` subcommand shares, declared once.

Kept apart from ``dlq_cmd`` so a subcommand in a sibling module can import them
without an import cycle (``dlq_cmd`` imports the subcommand modules to register
them). Only the standard library, Typer and ``cli.common``: ``kshare dlq --help``
must stay cheap (tests/cli/test_startup.py).
"""

from __future__ import annotations

import enum
import time
from typing import TYPE_CHECKING, Annotated, Final

import typer

from kshare_cli.cli import common
from kshare_cli.errors import UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from kshare_cli.services.dlq import ShowRequest

#: The ``-o`` formats of ``kshare dlq``: every one but ``plain`` (Kafka has no such tool).
FORMATS: Final = common.FORMATS_BUT_PLAIN


def parse_output_format(text: str) -> common.OutputFormat:
    """``-o``: one of ``FORMATS`` (``plain`` is refused as an unknown format)."""
    try:
        found = common.OutputFormat(text.lower())
    except ValueError:
        found = None
    if found is None or found is common.OutputFormat.plain:
        raise typer.BadParameter(
            f"{text!r} is not one of {', '.join(repr(each) for each in FORMATS)}"
        )
    return found


class Reason(enum.StrEnum):
    """``--reason``: why the broker (or ``audit --dlq-topic``) dead-lettered a record."""

    rejected = "rejected"
    limit = "limit"


Group = Annotated[
    str,
    common.group_argument("The share group whose dead letters to read."),
]
Topics = Annotated[
    list[str] | None,
    typer.Option(
        "--topic",
        "-t",
        metavar="TOPIC",
        help="Only the dead letters of this source topic (repeatable).",
        show_default=False,
    ),
]
Reasons = Annotated[
    Reason | None,
    typer.Option(
        "--reason",
        case_sensitive=False,
        help="Only records rejected by a consumer, or over the delivery limit.",
        show_default=False,
    ),
]
Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="DATETIME",
        help="Only records dead-lettered from then on: ISO-8601 (UTC unless it says), 2h, "
        "yesterday 09:00 (as reset-offsets --to-datetime).",
        show_default=False,
    ),
]
Output = Annotated[
    common.OutputFormat,
    typer.Option(
        "--output",
        "-o",
        parser=parse_output_format,
        metavar=f"<{'|'.join(FORMATS)}>",
        autocompletion=common.complete_formats_but_plain,
        help="table for people; json/jsonl/csv/yaml for programs.",
    ),
]
DlqTopic = Annotated[
    str | None,
    typer.Option(
        "--dlq-topic",
        metavar="TOPIC",
        help="Read this DLQ topic instead of the group's errors.deadletterqueue.topic.name "
        "(e.g. one written by audit --dlq-topic).",
        show_default=False,
    ),
]


def check_common(
    group: str, topics: list[str], since: str | None, dlq_topic: str | None
) -> int | None:
    """What every dlq subcommand refuses before connecting (exit 2); ``--since`` in epoch ms.

    A ``--since`` in the future is refused: no record can have been dead-lettered
    then, and an empty answer would hide the typo.
    """
    common.check_group_id(group)
    for topic in topics:
        check_topic_name(topic)
    if dlq_topic is not None:
        check_topic_name(dlq_topic, "--dlq-topic")
    if since is None:
        return None
    from kshare_cli.timespec import parse_datetime

    try:
        since_ms = parse_datetime(since)
    except UsageError as error:
        raise UsageError(f"--since: {error}") from None
    if since_ms > time.time() * 1000:
        raise UsageError(f"--since {since!r} is in the future: no record was dead-lettered then")
    return since_ms


def show_request(
    group: str,
    topics: list[str],
    reason: Reason | None,
    since_ms: int | None,
    dlq_topic: str | None,
) -> ShowRequest:
    """The dead letters a dlq subcommand reads, from the options above (each topic once)."""
    from kshare_cli.services.dlq import ShowRequest

    return ShowRequest(
        group_id=group,
        topics=tuple(dict.fromkeys(topics)),
        reason=None if reason is None else reason.value,
        since_ms=since_ms,
        dlq_topic=dlq_topic,
    )
