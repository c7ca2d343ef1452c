"""``kshare inflight``: every share-partition's in-flight window as a one-line strip.

The window comes from ``__share_group_state`` (see ``render/inflight.py`` for the
strip's characters), the offsets and lag from the same RPCs as ``kshare describe``.
Reading the state topic needs READ on it; without that the command still prints
every share-partition with its offsets and lag, leaves the strips blank, says why
in one stderr warning and exits 0. Exit 5 for a missing group (as ``describe``) or
a ``--topic`` the group has no share-partition of (stderr says whether the topic
exists at all), 2 for bad usage. stdout is data only: a group without
share-partitions prints no table, and stderr says so. When the group coordinator
holds DescribeShareGroupOffsets (a share coordinator it reads from is stopped or
hung), the offsets come from the state topic, stderr names the silent broker and
the command exits 1.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Final

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from kshare_cli.services.inflight import GroupInflight

MIN_WIDTH: Final = 1
MAX_WIDTH: Final = 1000
DEFAULT_WIDTH: Final = 40  # render.inflight.DEFAULT_STRIP_WIDTH, without importing render/

#: The ``-o`` formats inflight has: every one but ``plain``, which reproduces Kafka's tool.
FORMATS: Final = common.FORMATS_BUT_PLAIN


def _output_format(text: str) -> common.OutputFormat:
    """``-o`` as inflight reads it: one of ``FORMATS``, and ``plain``, which ``check_args``
    then refuses with its reason (Kafka's tool has no in-flight view) rather than with a
    bare "not one of" line."""
    try:
        return common.OutputFormat(text.lower())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not one of {', '.join(repr(each) for each in FORMATS)}"
        ) from None


#: ``common.Output`` without ``plain`` in the help or the completions.
Output = Annotated[
    common.OutputFormat,
    typer.Option(
        "--output",
        "-o",
        parser=_output_format,
        metavar=f"<{'|'.join(FORMATS)}>",
        autocompletion=common.complete_formats_but_plain,
        help="table for people; json/jsonl/csv/yaml for programs.",
    ),
]


def check_args(group: str, topics: list[str], width: int, output: common.OutputFormat) -> None:
    """Everything that can be refused before connecting (exit 2, one stderr line)."""
    common.check_group_id(group)
    for topic in topics:
        check_topic_name(topic)
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        raise UsageError(
            f"--width must be between {MIN_WIDTH} and {MAX_WIDTH} characters, not {width}"
        )
    if output is common.OutputFormat.plain:
        raise UsageError(
            "-o plain: kafka-share-groups.sh has no in-flight view to reproduce; "
            f"use {', '.join(FORMATS[:-1])} or {FORMATS[-1]}"
        )


def _color() -> bool:
    """Styled strips on a terminal, unless NO_COLOR or a dumb terminal says otherwise."""
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def finish(
    result: GroupInflight,
    topics: list[str],
    output: common.OutputFormat,
    width: int,
    *,
    color: bool = False,
) -> None:
    """Print the result, the warnings and failures on stderr, and exit with the documented code."""
    from kshare_cli.render.inflight import render_inflight

    common.stdout_write(render_inflight(result, output.value, strip_width=width, color=color))
    if result.window_note is not None:
        common.warn(f"no in-flight windows: {result.window_note}")
    present = {partition.topic for partition in result.partitions}
    missing = [topic for topic in dict.fromkeys(topics) if topic not in present]
    for topic in missing:
        if topic in result.unknown_topics:
            common.report_failure(f"topic '{topic}' does not exist")
        else:
            common.report_failure(
                f"share group '{result.group_id}' has no share-partition of topic '{topic}' "
                "(the topic exists; the group has not consumed from it, or its offsets "
                "were deleted)"
            )
    if not topics and not result.partitions and result.offsets_note is None:
        diagnostics.progress(
            f"kshare: share group '{result.group_id}' has no share-partitions: none of its "
            "consumers has fetched from a topic yet, or its offsets were deleted\n"
        )
    if result.offsets_note is not None:
        # The coordinator held DescribeShareGroupOffsets: the offsets shown are the state
        # topic's, and what lives on the silent broker is missing. A partial answer.
        common.report_failure(f"share group '{result.group_id}': {result.offsets_note}")
    errors = [partition for partition in result.partitions if partition.error is not None]
    for partition in errors:
        common.report_failure(
            f"share group '{result.group_id}', partition "
            f"{partition.topic}:{partition.partition}: {partition.error}"
        )
    unread = [partition for partition in result.partitions if partition.window_error is not None]
    for partition in unread:
        common.report_failure(
            f"share group '{result.group_id}', partition "
            f"{partition.topic}:{partition.partition}: window unknown: {partition.window_error}"
        )
    no_end = [partition for partition in result.partitions if partition.end_offset_error]
    for partition in no_end:
        common.report_failure(
            f"share group '{result.group_id}', partition "
            f"{partition.topic}:{partition.partition}: end offset unknown: "
            f"{partition.end_offset_error}"
        )
    if errors or unread or no_end or result.offsets_note is not None:
        raise typer.Exit(int(ExitCode.PARTIAL))
    if missing:
        raise typer.Exit(int(ExitCode.NOT_FOUND))


@common.command_edge
def inflight(
    group: Annotated[
        str,
        common.group_argument("The share group."),
    ],
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC",
            help="Only this topic's share-partitions (repeatable).",
            show_default=False,
        ),
    ] = None,
    width: Annotated[
        int,
        typer.Option(
            "--width",
            "-w",
            metavar="CELLS",
            help=f"Characters per strip, {MIN_WIDTH}-{MAX_WIDTH}; each stands for an equal "
            "share of the offsets from the start offset to the log end offset.",
        ),
    ] = DEFAULT_WIDTH,
    output: Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Show a share group's in-flight windows: acknowledged, available, archived records.

    One line per share-partition: a strip of its window from the start offset to
    the log end offset, the records per state, the highest delivery count and the
    lag. Read from __share_group_state (needs READ on it; without it the strips
    stay blank and a warning says why). Acquired records are not persisted, so
    they show as unrecorded.
    """
    topics = topic or []
    check_args(group, topics, width, output)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import inflight as inflight_service

    result = common.run(lambda: inflight_service.inflight(settings, group, topics, timeout_s))
    finish(result, topics, output, width, color=output is common.OutputFormat.table and _color())
