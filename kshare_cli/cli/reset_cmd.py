"""``kshare reset-offsets``: move a share group's start offsets, safely.

A dry run unless ``--execute``. With ``--execute`` the command refuses a group
with members (naming them on stderr; the plan is still printed, each partition
``refused``, exit 1), asks on a terminal unless ``--yes``, saves a rollback plan
(each partition's resume point, applied with ``--from-file``, with ``#`` lines
saying what it can and cannot restore) before changing anything, and reports
each partition's result. A rollback plan is never
overwritten: an existing ``--rollback-file`` is refused before anything is
asked of the cluster, and the default file's name is made unique.

Plan files are CSV as Kafka 4.4's tool reads and writes them:
``topic,partition,offset`` or ``group,topic,partition,offset``, no header. A bare
``--export`` is Kafka's: the new offsets as that CSV on stdout instead of the table
(``ResetOffsetsCommand`` gives it its value, ``-``); ``--export PLAN.csv`` writes a file.
``services.plan_files`` reads and writes every one of these files.
With ``-o plain`` the command prints what Kafka 4.4's ``kafka-share-groups.sh
--reset-offsets`` prints, byte for byte: the table or the ``--export`` CSV in Kafka's
order, and on stderr Kafka's WARN line for each offset clamped to the log.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import typer.core

from kshare_cli import diagnostics
from kshare_cli.cli import common, durations
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings
    from kshare_cli.services.reset import (
        GroupDescription,
        MemberDescription,
        ResetPlan,
        Scenario,
        Selection,
    )

EXPORT_TO_STDOUT = "-"


class ResetOffsetsCommand(typer.core.TyperCommand):
    """``reset-offsets``, whose ``--export`` may stand alone, as Kafka's flag does.

    Typer's parser has no option with an optional value, so a bare ``--export`` (last, or
    followed by another option) is given ``-`` (stdout) before parsing: Kafka's command
    line ``... --dry-run --export`` works as it is. ``--export=-x.csv`` names a file
    whose name starts with a dash.
    """

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        given: list[str] = []
        for index, arg in enumerate(args):
            given.append(arg)
            if arg == "--":
                given.extend(args[index + 1 :])
                break
            if arg == "--export":
                following = args[index + 1] if index + 1 < len(args) else None
                if following is None or (following.startswith("-") and following != "-"):
                    given.append(EXPORT_TO_STDOUT)
        return super().parse_args(ctx, given)


#: The command classes ``kshare_cli.cli.app`` builds this module's commands with.
COMMAND_CLASSES = {"reset_offsets": ResetOffsetsCommand}

_SCENARIOS = (
    "--to-earliest",
    "--to-latest",
    "--to-datetime",
    "--by-duration",
    "--to-offset",
    "--shift-by",
    "--to-current",
    "--to-first-unacknowledged",
)


def parse_topic_specs(specs: list[str]) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """``--topic T`` (every partition) and ``--topic T:P,P`` (those partitions)."""
    whole: list[str] = []
    named: list[tuple[str, int]] = []
    for spec in specs:
        topic, sep, rest = spec.partition(":")
        if not topic.strip():
            raise UsageError(f"--topic {spec!r}: the topic name is empty")
        check_topic_name(topic)
        if not sep:
            whole.append(topic)
            continue
        if not rest or ":" in rest:
            raise UsageError(f"--topic {spec!r}: expected TOPIC or TOPIC:PARTITION[,PARTITION...]")
        for part in rest.split(","):
            if not re.fullmatch(r"\d+", part.strip()):
                raise UsageError(
                    f"--topic {spec!r}: partition {part!r} is not a non-negative integer"
                )
            named.append((topic, int(part)))
    return tuple(dict.fromkeys(whole)), tuple(dict.fromkeys(named))


@dataclass(frozen=True, slots=True)
class ScenarioFlags:
    """The scenario options as given, before ``choose_scenario`` checks them."""

    to_earliest: bool = False
    to_latest: bool = False
    to_datetime: str | None = None
    by_duration: str | None = None
    to_offset: int | None = None
    shift_by: int | None = None
    to_current: bool = False
    to_first_unacknowledged: bool = False

    def given(self) -> list[str]:
        """The scenario options given, as spelt on the command line, in ``_SCENARIOS``'s order."""
        values = (
            self.to_earliest,
            self.to_latest,
            self.to_datetime,
            self.by_duration,
            self.to_offset,
            self.shift_by,
            self.to_current,
            self.to_first_unacknowledged,
        )
        return [
            name
            for name, value in zip(_SCENARIOS, values, strict=True)
            if value not in (None, False)
        ]


def choose_scenario(flags: ScenarioFlags, *, from_file: bool) -> Scenario:
    """Exactly one scenario (none with ``--from-file``, whose offsets are the scenario)."""
    from kshare_cli.services.reset import Scenario

    given = flags.given()
    if from_file:
        if given:
            raise UsageError(f"--from-file takes its offsets from the file; drop {given[0]}")
        return Scenario("file", label="--from-file")
    if not given:
        raise UsageError(f"choose where to reset to: one of {', '.join(_SCENARIOS)}")
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} are mutually exclusive; choose one")
    if flags.to_earliest:
        return Scenario("earliest", label="--to-earliest")
    if flags.to_latest:
        return Scenario("latest", label="--to-latest")
    if flags.to_current:
        return Scenario("current", label="--to-current")
    if flags.to_first_unacknowledged:
        return Scenario("first-unacknowledged", label="--to-first-unacknowledged")
    return _scenario_with_value(flags)


def _scenario_with_value(flags: ScenarioFlags) -> Scenario:
    """The one scenario given that carries a value: a time, an offset or a shift."""
    from kshare_cli.services.reset import Scenario
    from kshare_cli.timespec import parse_datetime, parse_duration, timestamp_before

    to_datetime, by_duration = flags.to_datetime, flags.by_duration
    to_offset, shift_by = flags.to_offset, flags.shift_by
    if to_datetime is not None:
        try:
            millis = parse_datetime(to_datetime)
        except UsageError as error:
            raise UsageError(f"--to-datetime: {error}") from None
        return Scenario("timestamp", millis, label=f"--to-datetime {to_datetime}")
    if by_duration is not None:
        try:
            millis = timestamp_before(parse_duration(by_duration), what=by_duration)
        except UsageError as error:
            raise UsageError(f"--by-duration: {error}") from None
        return Scenario("timestamp", millis, label=f"--by-duration {by_duration}")
    if to_offset is not None:
        if to_offset < 0:
            raise UsageError(f"--to-offset {to_offset}: an offset cannot be negative")
        return Scenario("offset", to_offset, label=f"--to-offset {to_offset}")
    assert shift_by is not None
    return Scenario("shift", shift_by, label=f"--shift-by {shift_by}")


def write_export(plan: ResetPlan, destination: str, *, kafka: bool = False) -> None:
    """``--export``: the new offsets as a plan file (Kafka 4.4's ``topic,partition,offset``),
    sorted; ``kafka`` (``-o plain``) and stdout: exactly what Kafka's ``--export`` prints."""
    from kshare_cli.services import plan_files

    if destination != EXPORT_TO_STDOUT:
        plan_files.write_export_file(plan, Path(destination))
    elif kafka:
        from kshare_cli.render.reset import kafka_export

        common.stdout_write(kafka_export(plan))
    else:
        common.stdout_write(plan_files.export_text(plan))


def members_text(members: tuple[MemberDescription, ...]) -> str:
    shown = [
        f"{member.member_id} (client {member.client_id}, host {member.host})"
        for member in members[:5]
    ]
    more = f" and {len(members) - 5} more" if len(members) > 5 else ""
    return ", ".join(shown) + more


def refuse_members(group_id: str, members: tuple[MemberDescription, ...], executing: bool) -> None:
    action = "nothing changed" if executing else "--execute would be refused"
    common.fail(
        f"share group '{group_id}' is not empty ({len(members)} member(s): "
        f"{members_text(members)}); stop its consumers first; {action}",
        ExitCode.PARTIAL,
    )


# --------------------------------------------------------------------------- options

Group = Annotated[str, common.group_argument("The share group whose start offsets to reset.")]
Topics = Annotated[
    list[str] | None,
    typer.Option(
        "--topic",
        "-t",
        metavar="TOPIC[:P,P...]",
        help="A topic (every partition) or some of its partitions; repeatable.",
        rich_help_panel="Partitions",
    ),
]
AllTopics = Annotated[
    bool,
    typer.Option(
        "--all-topics",
        help="Every share-partition the broker lists for the group, read or not.",
        rich_help_panel="Partitions",
    ),
]
FromFile = Annotated[
    Path | None,
    typer.Option(
        "--from-file",
        metavar="PLAN.csv",
        help="Offsets from a plan file (CSV: [group,]topic,partition,offset).",
        rich_help_panel="Partitions",
    ),
]
ToEarliest = Annotated[
    bool,
    typer.Option("--to-earliest", help="The log start offset.", rich_help_panel="Scenario"),
]
ToLatest = Annotated[
    bool, typer.Option("--to-latest", help="The log end offset.", rich_help_panel="Scenario")
]
ToDatetime = Annotated[
    str | None,
    typer.Option(
        "--to-datetime",
        metavar="DT",
        help="The first record at or after DT: ISO-8601 (UTC when no zone), "
        "or relative: 2h, yesterday 09:00.",
        rich_help_panel="Scenario",
    ),
]
ByDuration = Annotated[
    str | None,
    typer.Option(
        "--by-duration",
        metavar="DURATION",
        help=durations.duration_help("The first record at or after now minus DURATION"),
        rich_help_panel="Scenario",
    ),
]
ToOffset = Annotated[
    int | None,
    typer.Option("--to-offset", metavar="N", help="Offset N.", rich_help_panel="Scenario"),
]
ShiftBy = Annotated[
    int | None,
    typer.Option(
        "--shift-by",
        metavar="N",
        help="The current start offset plus N (N < 0 moves back).",
        rich_help_panel="Scenario",
    ),
]
ToCurrent = Annotated[
    bool,
    typer.Option(
        "--to-current",
        help="The current start offset (the log end where there is none).",
        rich_help_panel="Scenario",
    ),
]
ToFirstUnacknowledged = Annotated[
    bool,
    typer.Option(
        "--to-first-unacknowledged",
        help="The first record neither acknowledged nor archived: resume without "
        "delivering acknowledged records again (the log start where there is no "
        "start offset).",
        rich_help_panel="Scenario",
    ),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Show the plan; change nothing (the default).")
]
Execute = Annotated[bool, typer.Option("--execute", help="Reset the offsets.")]
Export = Annotated[
    str | None,
    typer.Option(
        "--export",
        metavar="[PLAN.csv]",
        help="The new offsets as a plan file (CSV: topic,partition,offset): alone or "
        "'-', on stdout instead of the table (as Kafka's --export); else written to "
        "PLAN.csv.",
    ),
]
Yes = Annotated[
    bool, typer.Option("--yes", "-y", help="Do not ask for confirmation on a terminal.")
]
RollbackFile = Annotated[
    Path | None,
    typer.Option(
        "--rollback-file",
        metavar="FILE",
        help="A new file where --execute saves the previous offsets; an existing "
        "one is refused (default: $XDG_STATE_HOME/kshare/rollback/GROUP-TIME.csv).",
    ),
]
AllowNewGroup = Annotated[
    bool,
    typer.Option(
        "--allow-new-group",
        help="Allow a group that does not exist yet (--execute creates it, as Kafka does).",
    ),
]


# --------------------------------------------------------------------------- the request


@dataclass(frozen=True, slots=True)
class ResetRequest:
    """What the operator asked for, checked before anything connects.

    ``ignored`` counts the ``--from-file`` entries for other groups, which the
    command names once it knows the settings are good.
    """

    group: str
    selection: Selection
    scenario: Scenario
    ignored: int
    execute: bool
    export: str | None
    yes: bool
    rollback_file: Path | None
    allow_new_group: bool
    output: common.OutputFormat


def _chosen_partitions(topics: list[str], all_topics: bool, from_file: Path | None) -> None:
    """Exactly one of ``--topic``, ``--all-topics`` and ``--from-file``."""
    chosen = [
        name
        for name, on in (
            ("--topic", bool(topics)),
            ("--all-topics", all_topics),
            ("--from-file", from_file is not None),
        )
        if on
    ]
    if not chosen:
        raise UsageError("choose the partitions: --topic, --all-topics or --from-file")
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} are mutually exclusive; choose one")


def parse_request(
    group: str,
    *,
    topics: list[str],
    all_topics: bool,
    from_file: Path | None,
    flags: ScenarioFlags,
    dry_run: bool,
    execute: bool,
    export: str | None,
    yes: bool,
    rollback_file: Path | None,
    allow_new_group: bool,
    output: common.OutputFormat,
) -> ResetRequest:
    """The request, or the UsageError of its first mistake (in the order the options are
    checked: group, mode, rollback file, partitions, scenario, topics, plan file)."""
    from kshare_cli.services import plan_files
    from kshare_cli.services.reset import Scenario, Selection, TopicPartition

    if not group.strip():
        raise UsageError("the group id cannot be empty")
    if dry_run and execute:
        raise UsageError("--dry-run and --execute are mutually exclusive")
    if execute and rollback_file is not None:
        plan_files.check_rollback_file(rollback_file)
    _chosen_partitions(topics, all_topics, from_file)
    scenario = choose_scenario(flags, from_file=from_file is not None)
    whole, named = parse_topic_specs(topics)
    ignored = 0
    if from_file is not None:
        plan = plan_files.read_plan_file(from_file, group)
        scenario = Scenario(
            "file", offsets=plan.offsets, label=f"--from-file {from_file}", history=plan.history
        )
        ignored = plan.others
    selection = Selection(
        topics=whole,
        partitions=tuple(TopicPartition(t, p) for t, p in named),
        all_topics=all_topics,
    )
    return ResetRequest(
        group,
        selection,
        scenario,
        ignored,
        execute,
        export,
        yes,
        rollback_file,
        allow_new_group,
        output,
    )


# --------------------------------------------------------------------------- the command


@common.command_edge
def reset_offsets(
    group: Group,
    topic: Topics = None,
    all_topics: AllTopics = False,
    from_file: FromFile = None,
    to_earliest: ToEarliest = False,
    to_latest: ToLatest = False,
    to_datetime: ToDatetime = None,
    by_duration: ByDuration = None,
    to_offset: ToOffset = None,
    shift_by: ShiftBy = None,
    to_current: ToCurrent = False,
    to_first_unacknowledged: ToFirstUnacknowledged = False,
    dry_run: DryRun = False,
    execute: Execute = False,
    export: Export = None,
    yes: Yes = False,
    rollback_file: RollbackFile = None,
    allow_new_group: AllowNewGroup = False,
    output: common.Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Reset a share group's start offsets (a dry run unless --execute).

    The plan (sorted) shows each partition's current and new start offset and
    how many records the move skips or delivers again, counted from the
    in-flight window (a reset clears record states: acknowledged records at or
    above the new start come back); offsets are clamped to the log start and
    end. --execute refuses a group with members, saves a rollback plan first
    and reports each partition's result. -o plain is Kafka 4.4's
    kafka-share-groups.sh --reset-offsets, byte for byte (its row order, --export's
    CSV, its WARN line on stderr for each clamped offset).
    """
    flags = ScenarioFlags(
        to_earliest,
        to_latest,
        to_datetime,
        by_duration,
        to_offset,
        shift_by,
        to_current,
        to_first_unacknowledged,
    )
    request = parse_request(
        group,
        topics=topic or [],
        all_topics=all_topics,
        from_file=from_file,
        flags=flags,
        dry_run=dry_run,
        execute=execute,
        export=export,
        yes=yes,
        rollback_file=rollback_file,
        allow_new_group=allow_new_group,
        output=output,
    )
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)
    plan = _plan(settings, timeout_s, request)
    _warn_about(plan, request.output)
    if not request.execute or plan.members:
        # A refused reset is a result like any other: on stdout as data, and its
        # reason in one stderr line.
        _show(plan, request)
        if plan.members:
            refuse_members(request.group, plan.members, executing=request.execute)
        return
    _execute(settings, timeout_s, plan, request)


def _plan(settings: ConnectionSettings, timeout_s: float, request: ResetRequest) -> ResetPlan:
    """The plan, read from the cluster once the settings are good."""
    if request.ignored:
        many = "y" if request.ignored == 1 else "ies"
        common.warn(f"--from-file: ignoring {request.ignored} entr{many} for other groups")
    from kshare_cli.services import reset as reset_service

    return common.run(
        lambda: reset_service.plan_reset(
            settings,
            request.group,
            request.selection,
            request.scenario,
            allow_new_group=request.allow_new_group,
            timeout_s=timeout_s,
        )
    )


def _warn_about(plan: ResetPlan, output: common.OutputFormat) -> None:
    """The plan's warnings on stderr; with ``-o plain`` Kafka's own lines instead of
    those Kafka words itself: "Warn: ... Falling back" on stdout (in the plain table),
    and the WARN log line of each clamped offset on stderr."""
    plain = output is common.OutputFormat.plain
    kafkas_lines = (
        {
            f"{offset.topic_partition}: {what}"
            for offset in plan.partitions
            for what in ("no record at or after", "new offset ")
        }
        if plain
        else set()
    )
    for line in plan.warnings:
        if not any(line.startswith(prefix) for prefix in kafkas_lines):
            common.warn(line)
    if plain:
        from datetime import datetime

        from kshare_cli.render.reset import kafka_warnings

        for line in kafka_warnings(plan, datetime.now().astimezone()):
            diagnostics.progress(f"{line}\n")
    if not plan.exact and not plain:
        common.warn(
            "the counts of records skipped and delivered again are lower bounds: "
            f"{plan.window_note}"
        )
    if plan.state is None:
        common.warn(f"share group '{plan.group_id}' does not exist yet; --execute creates it")


def _execute(
    settings: ConnectionSettings, timeout_s: float, plan: ResetPlan, request: ResetRequest
) -> None:
    """Confirm, save the rollback plan, reset, and report each partition's result."""
    if not plan.partitions:
        common.fail("nothing to reset", ExitCode.PARTIAL)
    if not request.yes and sys.stdin.isatty():
        _confirm(plan)
    path = _save_rollback(plan, request.rollback_file)
    from kshare_cli.services import reset as reset_service

    done, described = common.run(
        lambda: reset_service.execute_reset(settings, plan, timeout_s=timeout_s)
    )
    done = replace(done, rollback_file=str(path))
    if done.group_error is not None:
        if described is not None and described.members:
            done = replace(done, members=described.members)
        _show(done, request)
        _refused(done, described)
    _show(done, request)
    for failure in done.errors():
        common.report_failure(str(failure))
    if done.errors():
        raise typer.Exit(int(ExitCode.PARTIAL))


def _confirm(plan: ResetPlan) -> None:
    """On a terminal: the plan on stderr, and a yes/no question; no is exit 1."""
    from kshare_cli.render.reset import render_reset

    diagnostics.progress(render_reset(plan, "table", confirming=True))
    question = f"Reset {len(plan.partitions)} share-partition(s) of '{plan.group_id}'?"
    if not typer.confirm(question, err=True):
        common.fail("not confirmed; nothing changed", ExitCode.PARTIAL)


def _save_rollback(plan: ResetPlan, rollback_file: Path | None) -> Path:
    """The rollback plan, saved before anything changes; says where and how to apply it."""
    from kshare_cli.services import plan_files

    wanted = rollback_file or plan_files.default_rollback_path(plan.group_id)
    path = plan_files.write_rollback(plan, wanted, numbered=rollback_file is None)
    diagnostics.progress(f"kshare: {plan_files.rollback_saved(plan, path)}\n")
    return path


def _show(plan: ResetPlan, request: ResetRequest) -> None:
    """The plan or its result on stdout: ``--export``'s CSV, or the table."""
    from kshare_cli.render import render

    if request.export is not None:
        kafka = request.output is common.OutputFormat.plain
        write_export(plan, request.export, kafka=kafka)
        if request.export == EXPORT_TO_STDOUT:
            return
    common.stdout_write(render(plan, request.output.value))


def _refused(plan: ResetPlan, described: GroupDescription | None) -> None:
    error = plan.group_error
    assert error is not None
    if described is not None and described.members:
        refuse_members(plan.group_id, described.members, executing=True)
    common.fail(
        f"share group '{plan.group_id}': the broker refused the reset: {error}; nothing changed",
        ExitCode.PARTIAL,
    )
