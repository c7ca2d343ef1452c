"""``kshare delete`` and ``kshare delete-offsets``: checked, dry-run-first deletions.

Deleting a share group or its offsets discards start offsets, in-flight state and
delivery counts for good, so both commands are dry runs unless ``--execute`` is
given (``--dry-run`` says so explicitly), and both check first: the group must be
a share group (not a consumer group of that name) and empty (a group with members
is refused, naming them). With ``--execute`` on a terminal kshare asks before
deleting unless ``--yes``; with no terminal on stdin (cron, CI, a pipe)
``--execute`` alone acts, since it is already the explicit request.

One result per group (delete) or topic (delete-offsets); exit 0 when every one
succeeded, 5 when every failure is a missing group, topic or offsets, 1 for a
refusal or any other failure, 2 for bad usage (nothing sent).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from kshare_cli.services.delete import Deletions

DRY_RUN_NOTICE = "kshare: dry run: nothing was deleted; run again with --execute to delete"

DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run", help="Check and show what would be deleted; change nothing (default)."
    ),
]
Execute = Annotated[
    bool,
    typer.Option("--execute", help="Delete for real (after the same checks)."),
]
Yes = Annotated[
    bool,
    typer.Option("--yes", "-y", help="With --execute on a terminal: do not ask for confirmation."),
]


def _stdin_is_terminal() -> bool:
    """Whether someone can answer a prompt (tests replace this)."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def choose_mode(dry_run: bool, execute: bool) -> bool:
    """True for a dry run: the default, unless --execute."""
    if dry_run and execute:
        raise UsageError("--dry-run and --execute are mutually exclusive")
    return not execute


def check_delete_args(groups: list[str], all_groups: bool, empty_only: bool) -> None:
    common.check_groups(groups, all_groups, all_groups_flags="--all-groups --empty-only")
    if all_groups and not empty_only:
        raise UsageError(
            "--all-groups deletes only empty share groups: add --empty-only to say so "
            "(kshare never deletes a group with members)"
        )


def check_delete_offsets_args(group: str, topics: list[str]) -> None:
    common.check_group_id(group)
    if not topics:
        raise UsageError("name at least one topic with --topic")
    for topic in topics:
        if ":" in topic:
            raise UsageError(
                f"--topic {topic!r}: delete-offsets deletes a topic's offsets on every "
                "partition; give the topic name alone"
            )
        check_topic_name(topic)


def _confirm(question: str) -> None:
    if not typer.confirm(question, default=False, err=True):
        common.fail("not confirmed: nothing was deleted", ExitCode.PARTIAL)


def _confirmed(
    deleting: Callable[[bool], Coroutine[Any, Any, Deletions]],
    ready_of: Callable[[Deletions], list[str]],
    question: Callable[[list[str]], str],
    *,
    is_dry_run: bool,
    yes: bool,
) -> Deletions:
    """The deletion ``deleting(dry_run)`` runs, asked about first when someone can answer.

    With --execute on a terminal and no --yes, a dry run finds what would go
    (``ready_of`` the plan: group ids or topics) and ``question`` asks about it
    (nothing to ask when nothing would go); a "no" ends the command with nothing
    deleted.
    """
    if not is_dry_run and not yes and _stdin_is_terminal():
        plan = common.run(lambda: deleting(True))
        ready = ready_of(plan)
        if ready:
            _confirm(question(ready))
    return common.run(lambda: deleting(is_dry_run))


def _finish(deletions: Deletions, output: common.OutputFormat) -> None:
    """Print the result, name every failure on stderr, and exit with the documented code."""
    from kshare_cli.render.deletion import render_deletions

    common.stdout_write(render_deletions(deletions, output.value))
    for failure in deletions.broker_failures:
        common.report_failure(f"{failure}: the empty share groups it coordinates were not checked")
    errors = deletions.errors()
    for error in errors:
        common.report_failure(str(error))
    if not deletions.results and deletions.operation == "delete" and not deletions.broker_failures:
        diagnostics.progress("kshare: no empty share group to delete\n")
    if deletions.dry_run:
        diagnostics.progress(f"{DRY_RUN_NOTICE}\n")
    if deletions.all_not_found():
        raise typer.Exit(int(ExitCode.NOT_FOUND))
    if deletions.all_not_authorized():
        raise typer.Exit(int(ExitCode.NOT_AUTHORIZED))
    if not deletions.ok():
        raise typer.Exit(int(ExitCode.PARTIAL))


def _quoted(names: list[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


@common.command_edge
def delete(
    groups: Annotated[
        list[str] | None,
        common.group_argument(
            "Share groups to delete; each must exist, be a share group and be empty.",
            metavar="[GROUP]...",
        ),
    ] = None,
    all_groups: Annotated[
        bool,
        typer.Option("--all-groups", help="Every share group that is empty (needs --empty-only)."),
    ] = False,
    empty_only: Annotated[
        bool,
        typer.Option(
            "--empty-only",
            help="With --all-groups: only Empty groups (a named group must always be empty).",
        ),
    ] = False,
    dry_run: DryRun = False,
    execute: Execute = False,
    yes: Yes = False,
    output: common.Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Delete empty share groups: their offsets, in-flight state and delivery counts.

    A dry run unless --execute. Refuses a group with members (naming them), a
    group that is not a share group, and names a missing one; -o plain reproduces
    kafka-share-groups.sh --delete.
    """
    group_ids = list(dict.fromkeys(groups or []))
    check_delete_args(group_ids, all_groups, empty_only)
    is_dry_run = choose_mode(dry_run, execute)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import delete as delete_service

    def question(ready: list[str]) -> str:
        noun = "share group" if len(ready) == 1 else "share groups"
        return (
            f"Delete {noun} {_quoted(ready)} for good (offsets, in-flight state and "
            "delivery counts)?"
        )

    deletions = _confirmed(
        lambda dry: delete_service.delete(settings, group_ids, all_groups, dry, timeout_s),
        lambda plan: [result.group_id for result in plan.succeeded()],
        question,
        is_dry_run=is_dry_run,
        yes=yes,
    )
    _finish(deletions, output)


@common.command_edge
def delete_offsets(
    group: Annotated[
        str,
        common.group_argument("The share group; it must be empty."),
    ],
    topics: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC",
            help="A topic whose offsets to delete, on every partition (repeat for more).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRun = False,
    execute: Execute = False,
    yes: Yes = False,
    output: common.Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Delete an empty share group's offsets on topics: their start offsets and in-flight state.

    A dry run unless --execute. One result per topic; a topic the group has no
    offsets on, or that does not exist, is an error for that topic. -o plain
    reproduces kafka-share-groups.sh --delete-offsets.
    """
    topic_names = list(dict.fromkeys(topics or []))
    check_delete_offsets_args(group, topic_names)
    is_dry_run = choose_mode(dry_run, execute)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import delete as delete_service

    def question(ready: list[str]) -> str:
        noun = "topic" if len(ready) == 1 else "topics"
        return (
            f"Delete the offsets of share group '{group}' on {noun} {_quoted(ready)} "
            "for good (start offsets, in-flight state and delivery counts)?"
        )

    deletions = _confirmed(
        lambda dry: delete_service.delete_offsets(settings, group, topic_names, dry, timeout_s),
        lambda plan: [result.topic for result in plan.succeeded() if result.topic is not None],
        question,
        is_dry_run=is_dry_run,
        yes=yes,
    )
    _finish(deletions, output)
