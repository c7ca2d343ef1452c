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
With ``-o plain`` the command prints what Kafka 4.4's ``kafka-share-groups.sh
--reset-offsets`` prints, byte for byte: the table or the ``--export`` CSV in Kafka's
order, and on stderr Kafka's WARN line for each offset clamped to the log.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import typer.core

from kshare_cli.cli import common, durations
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from kshare_cli.services.reset import (
        GroupDescription,
        MemberDescription,
        ResetPlan,
        RollbackHistory,
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


def choose_scenario(
    *,
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    by_duration: str | None,
    to_offset: int | None,
    shift_by: int | None,
    to_current: bool,
    from_file: bool,
    to_first_unacknowledged: bool = False,
) -> Scenario:
    """Exactly one scenario (none with ``--from-file``, whose offsets are the scenario)."""
    from kshare_cli.services.reset import Scenario
    from kshare_cli.timespec import parse_datetime, parse_duration, timestamp_before

    given = [
        name
        for name, value in zip(
            _SCENARIOS,
            (
                to_earliest,
                to_latest,
                to_datetime,
                by_duration,
                to_offset,
                shift_by,
                to_current,
                to_first_unacknowledged,
            ),
            strict=True,
        )
        if value not in (None, False)
    ]
    if from_file:
        if given:
            raise UsageError(f"--from-file takes its offsets from the file; drop {given[0]}")
        return Scenario("file", label="--from-file")
    if not given:
        raise UsageError(f"choose where to reset to: one of {', '.join(_SCENARIOS)}")
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} are mutually exclusive; choose one")
    if to_earliest:
        return Scenario("earliest", label="--to-earliest")
    if to_latest:
        return Scenario("latest", label="--to-latest")
    if to_current:
        return Scenario("current", label="--to-current")
    if to_first_unacknowledged:
        return Scenario("first-unacknowledged", label="--to-first-unacknowledged")
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


def read_plan_file(
    path: Path, group_id: str
) -> tuple[dict[tuple[str, int], int], int, dict[tuple[str, int], RollbackHistory]]:
    """The plan file's offsets for ``group_id``, how many entries were for other groups,
    and, for a rollback plan, what it recorded of the records ``group_id`` had finished
    before the reset it undoes (empty for any other plan)."""
    from kshare_cli.services.reset import read_plan, read_rollback_history

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"--from-file {path}: cannot read it: {reason}") from None
    entries = read_plan(text, group=group_id, source=str(path))
    ours = {(e.topic, e.partition): e.offset for e in entries if e.group == group_id}
    others = sum(1 for e in entries if e.group != group_id)
    if not ours:
        raise UsageError(f"--from-file {path}: no entries for share group '{group_id}'")
    history = read_rollback_history(text, group=group_id, source=str(path))
    return ours, others, {key: value for key, value in history.items() if key in ours}


def _rollback_stamp() -> str:
    """The UTC time in a default rollback file's name, to the millisecond (tests pin it)."""
    import pendulum

    return pendulum.now("UTC").format("YYYYMMDD[T]HHmmssSSS[Z]")


def default_rollback_path(group_id: str) -> Path:
    """``$XDG_STATE_HOME/kshare/rollback/<group>-<UTC time>.csv``; XDG's default state
    directory is ``~/.local/state``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", group_id)[:100] or "group"
    return Path(base) / "kshare" / "rollback" / f"{safe}-{_rollback_stamp()}.csv"


def rollback_file_taken(path: Path) -> UsageError:
    """The refusal of a ``--rollback-file`` that exists: it may hold the only record of
    some group's earlier offsets, so kshare never replaces it."""
    return UsageError(
        f"--rollback-file {path}: the file exists, and a rollback plan is never "
        "overwritten; choose another path; nothing changed"
    )


def check_rollback_file(path: Path) -> None:
    """Refuse an existing ``--rollback-file`` before anything is asked of the cluster."""
    if os.path.lexists(path):
        raise rollback_file_taken(path)


def _write_new_file(path: Path, text: str) -> None:
    """Create ``path`` (FileExistsError if it exists: no run can overwrite another's
    plan, however close together) and make its content durable."""
    with open(path, "x", encoding="utf-8") as handle:
        try:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.close()
            path.unlink(missing_ok=True)  # ours, and incomplete
            raise


def _one_line(text: str) -> str:
    """``text`` fit for a ``#`` line: a line break in a group id or a path would end it."""
    return re.sub(r"[\r\n]", " ", text)


def rollback_note(plan: ResetPlan) -> str:
    """What applying the rollback plan does, in one sentence that stays true.

    A reset replaces the stored record states with a bare start offset, so no plan
    can give back per-record acknowledgements: it can only move the start offset
    again, and every record at or above it comes back, acknowledged or not. The
    rollback plan therefore saves each partition's resume point (the first record
    neither acknowledged nor archived), not the stored start offset, which trails
    the acknowledgements; the note counts the records that still come back, from what
    the plan records as finished (``ResetPlan.rollback_redelivers``), the same record
    from which applying the plan counts them.
    """
    redelivers = plan.rollback_redelivers
    if redelivers is None:
        again = (
            "an unknown number of records acknowledged or archived at or above those "
            f"offsets (the in-flight windows could not be read: {plan.window_note})"
        )
    else:
        again = f"{redelivers} record(s) acknowledged or archived before this reset"
    text = (
        "a rollback restores start offsets (each partition's first record not yet "
        "acknowledged or archived), not per-record acknowledgements, and delivers again "
        f"{again}"
    )
    if plan.without_start_offset:
        text += (
            f"; {plan.without_start_offset} share-partition(s) had no start offset, "
            "which it cannot restore"
        )
    return text


def write_rollback(plan: ResetPlan, path: Path, *, numbered: bool = False) -> Path:
    """Save the rollback plan, durably, before anything changes.

    The offsets are each partition's resume point (``ResetPlan.rollback_offsets``),
    preceded by ``#`` lines saying what applying them does (``rollback_note``) and
    recording, per partition, the records the group had finished before this reset
    (``PlannedOffset.rollback_history``): this reset clears their states, and Kafka
    prunes the state-topic records that held them within minutes, so kshare's
    ``--from-file`` reads them here to count what applying the plan delivers again
    and skips, as the note does. The file is created, never replaced. A taken
    ``--rollback-file`` is a usage error; with ``numbered`` (the default path, whose
    name has the time to the millisecond) a name another run took in the same
    millisecond becomes ``NAME-2.csv``, ``NAME-3.csv``... Returns where the plan was
    saved.
    """
    from kshare_cli.services.reset import PlanEntry, write_plan, write_rollback_history

    entries = [
        PlanEntry(plan.group_id, tp.topic, tp.partition, offset)
        for tp, offset in sorted(plan.rollback_offsets().items())
    ]
    histories = [
        history
        for offset in plan.partitions
        if (history := offset.rollback_history(plan.group_id)) is not None
    ]
    note = rollback_note(plan)
    header = (
        f"# kshare rollback plan for share group '{_one_line(plan.group_id)}', saved before "
        f"reset-offsets {_one_line(plan.scenario)}.\n# Applying it (--from-file): {note}.\n"
    )
    if histories:
        header += (
            "# What the group had finished (acknowledged or archived) before this reset: "
            "every offset below finished_below, and the finished ranges (first and last "
            "offset; null: unknown). kshare's --from-file counts from them.\n"
            + write_rollback_history(histories)
        )
    text = header + write_plan(entries, with_group=True)
    candidate, number = path, 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                _write_new_file(candidate, text)
            except FileExistsError:
                if not numbered:
                    raise rollback_file_taken(path) from None
                number += 1
                candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
            else:
                return candidate
    except OSError as error:
        raise UsageError(
            f"cannot save the rollback plan to {candidate}: {error.strerror or error}; "
            "nothing changed"
        ) from None


def write_export(plan: ResetPlan, destination: str, *, kafka: bool = False) -> None:
    """``--export``: the new offsets as a plan file (Kafka 4.4's ``topic,partition,offset``),
    sorted; ``kafka`` (``-o plain``) and stdout: exactly what Kafka's ``--export`` prints."""
    from kshare_cli.services.reset import PlanEntry, write_plan

    if kafka and destination == EXPORT_TO_STDOUT:
        from kshare_cli.render.reset import kafka_export

        common.stdout_write(kafka_export(plan))
        return
    entries = [
        PlanEntry(plan.group_id, offset.topic, offset.partition, offset.new_offset)
        for offset in plan.partitions
    ]
    text = write_plan(entries, with_group=False)
    if destination == EXPORT_TO_STDOUT:
        common.stdout_write(text)
        return
    try:
        Path(destination).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--export {destination}: {error.strerror or error}") from None


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


def reset_offsets(
    group: Annotated[
        str,
        common.group_argument("The share group whose start offsets to reset."),
    ],
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC[:P,P...]",
            help="A topic (every partition) or some of its partitions; repeatable.",
            rich_help_panel="Partitions",
        ),
    ] = None,
    all_topics: Annotated[
        bool,
        typer.Option(
            "--all-topics",
            help="Every share-partition the broker lists for the group, read or not.",
            rich_help_panel="Partitions",
        ),
    ] = False,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from-file",
            metavar="PLAN.csv",
            help="Offsets from a plan file (CSV: [group,]topic,partition,offset).",
            rich_help_panel="Partitions",
        ),
    ] = None,
    to_earliest: Annotated[
        bool,
        typer.Option("--to-earliest", help="The log start offset.", rich_help_panel="Scenario"),
    ] = False,
    to_latest: Annotated[
        bool, typer.Option("--to-latest", help="The log end offset.", rich_help_panel="Scenario")
    ] = False,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            metavar="DT",
            help="The first record at or after DT: ISO-8601 (UTC when no zone), "
            "or relative: 2h, yesterday 09:00.",
            rich_help_panel="Scenario",
        ),
    ] = None,
    by_duration: Annotated[
        str | None,
        typer.Option(
            "--by-duration",
            metavar="DURATION",
            help=durations.duration_help("The first record at or after now minus DURATION"),
            rich_help_panel="Scenario",
        ),
    ] = None,
    to_offset: Annotated[
        int | None,
        typer.Option("--to-offset", metavar="N", help="Offset N.", rich_help_panel="Scenario"),
    ] = None,
    shift_by: Annotated[
        int | None,
        typer.Option(
            "--shift-by",
            metavar="N",
            help="The current start offset plus N (N < 0 moves back).",
            rich_help_panel="Scenario",
        ),
    ] = None,
    to_current: Annotated[
        bool,
        typer.Option(
            "--to-current",
            help="The current start offset (the log end where there is none).",
            rich_help_panel="Scenario",
        ),
    ] = False,
    to_first_unacknowledged: Annotated[
        bool,
        typer.Option(
            "--to-first-unacknowledged",
            help="The first record neither acknowledged nor archived: resume without "
            "delivering acknowledged records again (the log start where there is no "
            "start offset).",
            rich_help_panel="Scenario",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the plan; change nothing (the default).")
    ] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Reset the offsets.")] = False,
    export: Annotated[
        str | None,
        typer.Option(
            "--export",
            metavar="[PLAN.csv]",
            help="The new offsets as a plan file (CSV: topic,partition,offset): alone or "
            "'-', on stdout instead of the table (as Kafka's --export); else written to "
            "PLAN.csv.",
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask for confirmation on a terminal.")
    ] = False,
    rollback_file: Annotated[
        Path | None,
        typer.Option(
            "--rollback-file",
            metavar="FILE",
            help="A new file where --execute saves the previous offsets; an existing "
            "one is refused (default: $XDG_STATE_HOME/kshare/rollback/GROUP-TIME.csv).",
        ),
    ] = None,
    allow_new_group: Annotated[
        bool,
        typer.Option(
            "--allow-new-group",
            help="Allow a group that does not exist yet (--execute creates it, as Kafka does).",
        ),
    ] = False,
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
    invocation = common.Invocation(debug=debug)

    def check() -> tuple[Selection, Scenario, dict[tuple[str, int], int] | None, int]:
        from kshare_cli.services.reset import Scenario, Selection, TopicPartition

        if not group.strip():
            raise UsageError("the group id cannot be empty")
        if dry_run and execute:
            raise UsageError("--dry-run and --execute are mutually exclusive")
        if execute and rollback_file is not None:
            check_rollback_file(rollback_file)
        chosen = [
            name
            for name, on in (
                ("--topic", bool(topic)),
                ("--all-topics", all_topics),
                ("--from-file", from_file is not None),
            )
            if on
        ]
        if not chosen:
            raise UsageError("choose the partitions: --topic, --all-topics or --from-file")
        if len(chosen) > 1:
            raise UsageError(f"{' and '.join(chosen)} are mutually exclusive; choose one")
        scenario = choose_scenario(
            to_earliest=to_earliest,
            to_latest=to_latest,
            to_datetime=to_datetime,
            by_duration=by_duration,
            to_offset=to_offset,
            shift_by=shift_by,
            to_current=to_current,
            from_file=from_file is not None,
            to_first_unacknowledged=to_first_unacknowledged,
        )
        whole, named = parse_topic_specs(topic or [])
        others = 0
        plan_offsets = None
        if from_file is not None:
            plan_offsets, others, history = read_plan_file(from_file, group)
            scenario = Scenario(
                "file",
                offsets={TopicPartition(t, p): o for (t, p), o in plan_offsets.items()},
                label=f"--from-file {from_file}",
                history={TopicPartition(t, p): h for (t, p), h in history.items()},
            )
        selection = Selection(
            topics=whole,
            partitions=tuple(TopicPartition(t, p) for t, p in named),
            all_topics=all_topics,
        )
        return selection, scenario, plan_offsets, others

    selection, scenario, _, others = common.usage_guard(check, invocation)
    settings, timeout_s, invocation = common.connection(
        bootstrap_server, command_config, profile, timeout, invocation
    )
    if others:
        common.warn(
            f"--from-file: ignoring {others} entr{'y' if others == 1 else 'ies'} for other groups"
        )

    from kshare_cli.services import reset as reset_service

    plan = common.run(
        lambda: reset_service.plan_reset(
            settings,
            group,
            selection,
            scenario,
            allow_new_group=allow_new_group,
            timeout_s=timeout_s,
        ),
        invocation,
    )
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
        # -o plain prints Kafka's own lines instead: "Warn: ... Falling back" on stdout,
        # and the WARN log line of each clamped offset on stderr, below.
        if not any(line.startswith(prefix) for prefix in kafkas_lines):
            common.warn(line)
    if plain:
        from datetime import datetime

        from kshare_cli.render.reset import kafka_warnings

        for line in kafka_warnings(plan, datetime.now().astimezone()):
            typer.echo(line, err=True)
    if not plan.exact and output is not common.OutputFormat.plain:
        common.warn(
            "the counts of records skipped and delivered again are lower bounds: "
            f"{plan.window_note}"
        )
    if plan.state is None:
        common.warn(f"share group '{group}' does not exist yet; --execute creates it")

    if not execute or plan.members:
        # A refused reset is a result like any other: on stdout as data, and its
        # reason in one stderr line.
        _show(plan, output, export, invocation)
        if plan.members:
            refuse_members(group, plan.members, executing=execute)
        return

    if not plan.partitions:
        common.fail("nothing to reset", ExitCode.PARTIAL)
    if not yes and sys.stdin.isatty():
        from kshare_cli.render.reset import render_reset

        typer.echo(render_reset(plan, "table", confirming=True), err=True, nl=False)
        if not typer.confirm(
            f"Reset {len(plan.partitions)} share-partition(s) of '{group}'?", err=True
        ):
            common.fail("not confirmed; nothing changed", ExitCode.PARTIAL)
    wanted = rollback_file or default_rollback_path(group)
    path = common.usage_guard(
        lambda: write_rollback(plan, wanted, numbered=rollback_file is None), invocation
    )
    typer.echo(
        f"kshare: rollback plan saved to {path} "
        f"(undo with: kshare reset-offsets {group} --from-file {path} --execute; "
        f"{rollback_note(plan)})",
        err=True,
    )

    done, described = common.run(
        lambda: reset_service.execute_reset(settings, plan, timeout_s=timeout_s), invocation
    )
    from dataclasses import replace

    done = replace(done, rollback_file=str(path))
    if done.group_error is not None:
        if described is not None and described.members:
            done = replace(done, members=described.members)
        _show(done, output, export, invocation)
        _refused(done, described)
    _show(done, output, export, invocation)
    for failure in done.errors():
        common.report_failure(str(failure))
    if done.errors():
        raise typer.Exit(int(ExitCode.PARTIAL))


def _show(
    plan: ResetPlan, output: common.OutputFormat, export: str | None, invocation: common.Invocation
) -> None:
    from kshare_cli.render import render

    if export is not None:
        kafka = output is common.OutputFormat.plain
        common.usage_guard(lambda: write_export(plan, export, kafka=kafka), invocation)
        if export == EXPORT_TO_STDOUT:
            return
    common.stdout_write(render(plan, output.value))


def _refused(plan: ResetPlan, described: GroupDescription | None) -> None:
    error = plan.group_error
    assert error is not None
    if described is not None and described.members:
        refuse_members(plan.group_id, described.members, executing=True)
    common.fail(
        f"share group '{plan.group_id}': the broker refused the reset: {error}; nothing changed",
        ExitCode.PARTIAL,
    )
