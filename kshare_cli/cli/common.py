"""Options every cluster command shares, and the edge where errors become exit codes.

Options are declared once here (``Annotated`` aliases) so ``list``, ``describe``
and later commands spell them the same way. This module is imported to build
``--help``, so it imports nothing heavy: the connection layer, asyncio and the
renderers load only when a command actually runs.
"""

from __future__ import annotations

import enum
import os
import re
import sys
import traceback
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from kshare_cli.cli.durations import duration_help, timeout_seconds
from kshare_cli.errors import ExitCode, KshareError, UsageError

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings

T = TypeVar("T")


class OutputFormat(enum.StrEnum):
    """``-o``: ``plain`` is Kafka's own text layout, for scripts written against it."""

    table = "table"
    plain = "plain"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    yaml = "yaml"


def _complete_profiles(incomplete: str) -> list[str]:
    try:
        from kshare_cli.connect.profiles import ProfileStore

        names = [profile.name for profile in ProfileStore().list()]
    except (KshareError, OSError, ValueError):
        return []
    return [name for name in names if name.startswith(incomplete)]


def complete_group_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """Group ids from the cluster, for shell completion, when a cluster is configured.

    Completion must never hang or print: a short timeout, and any failure means
    no suggestions.
    """
    params = ctx.params
    # During completion ctx.params holds the raw strings: Typer converts to Path only
    # when it calls the command itself.
    command_config = params.get("command_config")
    try:
        settings = resolve(
            params.get("bootstrap_server"),
            Path(command_config) if command_config else None,
            params.get("profile"),
            quiet=True,
        )
        from kshare_cli.services.groups import list_group_ids

        ids = list_group_ids(settings, timeout_s=2.0)
    except (KshareError, OSError):
        return []
    return [group_id for group_id in ids if group_id.startswith(incomplete)]


def group_argument(help_text: str, *, metavar: str = "GROUP") -> Any:
    """A command's share-group positional: completed from the cluster, no default shown.

    Each command says in ``help_text`` what the group is to it; ``metavar`` is
    ``[GROUP]`` or ``[GROUP]...`` where the group is optional or repeatable.
    """
    return typer.Argument(
        metavar=metavar,
        help=help_text,
        autocompletion=complete_group_ids,
        show_default=False,
    )


BootstrapServer = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-server",
        "-b",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="Brokers to bootstrap from (else $KSHARE_BOOTSTRAP_SERVERS, else the profile).",
        rich_help_panel="Connection",
    ),
]
CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        metavar="FILE",
        help=(
            "Client properties, as kafka-share-groups.sh --command-config takes them "
            "(security.protocol, sasl.*, ssl.*; librdkafka names too). "
            "Else $KSHARE_COMMAND_CONFIG."
        ),
        rich_help_panel="Connection",
    ),
]
Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        "-p",
        metavar="NAME",
        help="Named connection profile (see `kshare profile`); default: the current one.",
        autocompletion=_complete_profiles,
        rich_help_panel="Connection",
    ),
]
Timeout = Annotated[
    str,
    typer.Option(
        "--timeout",
        metavar="DURATION",
        help=duration_help("Give up after this long", bare="ms"),
        rich_help_panel="Connection",
    ),
]
Output = Annotated[
    OutputFormat,
    typer.Option(
        "--output",
        "-o",
        case_sensitive=False,
        help="table for people; plain reproduces kafka-share-groups.sh; json/jsonl/csv/yaml.",
    ),
]
#: The ``-o`` formats of a view Kafka's tools do not have (``plain`` reproduces one): every
#: format but ``plain``.
FORMATS_BUT_PLAIN = tuple(each.value for each in OutputFormat if each is not OutputFormat.plain)


def complete_formats_but_plain(incomplete: str) -> list[str]:
    """Shell completion for an ``-o`` that takes ``FORMATS_BUT_PLAIN``."""
    return [each for each in FORMATS_BUT_PLAIN if each.startswith(incomplete.lower())]


Debug = Annotated[
    bool,
    typer.Option("--debug", help="On error, show the traceback (secrets redacted)."),
]

DEFAULT_TIMEOUT = "30s"


def parse_timeout(text: str) -> float:
    """Seconds from ``--timeout``; a bare number is milliseconds, as in Kafka's tools."""
    return timeout_seconds(text)


def check_group_id(group: str) -> None:
    """A group id the cluster could know: an empty one is a usage error (exit 2, nothing sent)."""
    if not group.strip():
        raise UsageError("a group id cannot be empty")


def check_groups(
    groups: list[str], all_groups: bool, *, all_groups_flags: str = "--all-groups"
) -> None:
    """Group ids or ``--all-groups``, exactly one of the two (``all_groups_flags``: how the
    command spells asking for every group), and no empty id."""
    if groups and all_groups:
        raise UsageError("give group ids or --all-groups, not both")
    if not groups and not all_groups:
        raise UsageError(f"name at least one group, or pass {all_groups_flags}")
    for group in groups:
        check_group_id(group)


def resolve(
    bootstrap_server: str | None,
    command_config: Path | None,
    profile: str | None,
    *,
    quiet: bool = False,
) -> ConnectionSettings:
    """One settings object from flags, environment and profiles (see connect/).

    Its warnings (a misspelt key, a file with no properties) go to stderr here, so a
    typo in ``--command-config`` is named before it surfaces as an unrelated
    connection error. ``quiet`` is for shell completion, which must never print.
    """
    from kshare_cli.connect.resolve import resolve_settings

    settings = resolve_settings(
        bootstrap=bootstrap_server, command_config=command_config, profile=profile
    )
    if not quiet:
        for warning in settings.warnings:
            warn(warning)
    return settings


@dataclass(frozen=True, slots=True)
class Invocation:
    """What a command's edge needs to report errors honestly."""

    debug: bool = False
    secrets: tuple[str, ...] = ()


def connection(
    bootstrap_server: str | None,
    command_config: Path | None,
    profile: str | None,
    timeout: str,
    invocation: Invocation,
) -> tuple[ConnectionSettings, float, Invocation]:
    """The settings and ``--timeout`` in seconds, each refused before any I/O (exit 2),
    and the invocation that knows the settings' secrets, to keep them out of errors."""
    timeout_s = usage_guard(lambda: parse_timeout(timeout), invocation)
    settings = usage_guard(lambda: resolve(bootstrap_server, command_config, profile), invocation)
    return settings, timeout_s, Invocation(debug=invocation.debug, secrets=secrets_of(settings))


def secrets_of(settings: object) -> tuple[str, ...]:
    """Every secret value reachable from a settings object, to scrub from tracebacks."""
    from kshare_cli.connect.secret import Secret

    found: list[str] = []

    def walk(value: object, depth: int) -> None:
        if depth > 4 or value is None:
            return
        if isinstance(value, Secret):
            revealed = value.reveal()
            if revealed:
                found.append(revealed)
            return
        slots: Iterable[str] = getattr(type(value), "__slots__", ())
        for name in slots:
            walk(getattr(value, name, None), depth + 1)

    walk(settings, 0)
    return tuple(found)


#: Secrets shorter than this are replaced only where they stand alone: a one-letter test
#: password replaced everywhere turned "bootstrap" into "***ootstrap" in error lines.
_SHORT_SECRET = 8


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``.

    A long secret is replaced wherever it occurs. A short one only where no letter or
    digit touches it, so ordinary words survive while ``password='b'`` is still hidden.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if not secret:
            continue
        if len(secret) >= _SHORT_SECRET:
            text = text.replace(secret, "***")
        else:
            alone = rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])"
            text = re.sub(alone, "***", text)
    return text


def fail(message: str, code: ExitCode) -> NoReturn:
    """One line on stderr and the documented exit code: the only way a command fails."""
    typer.echo(f"kshare: error: {message}", err=True)
    raise typer.Exit(int(code))


def warn(message: str) -> None:
    typer.echo(f"kshare: warning: {message}", err=True)


def report_failure(message: str) -> None:
    """One stderr line for a group or partition that failed while the rest succeeded."""
    typer.echo(f"kshare: error: {message}", err=True)


def run(
    work: Callable[[], Coroutine[Any, Any, T]],
    invocation: Invocation,
) -> T:
    """Run a command's coroutine at the edge (see ``edge``)."""
    import asyncio

    return edge(lambda: asyncio.run(work()), invocation)


def edge(work: Callable[[], T], invocation: Invocation) -> T:
    """Run a command's work, turning every failure into one stderr line and an exit code.

    KeyboardInterrupt exits 130 without a traceback; an unexpected exception is
    reported as an internal error (its traceback only with ``--debug``, with
    every secret of the settings replaced by ``***``). Synchronous commands
    (consume, produce) call this directly; ``run`` wraps a coroutine in it.
    """
    try:
        return work()
    except KeyboardInterrupt:
        typer.echo("kshare: interrupted", err=True)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except KshareError as error:
        _debug_traceback(error, invocation)
        fail(redact(str(error), invocation.secrets), error.exit_code)
    except Exception as error:  # noqa: BLE001 -- the edge: every failure becomes one line
        _debug_traceback(error, invocation)
        detail = redact(f"{type(error).__name__}: {error}", invocation.secrets)
        hint = "" if invocation.debug else " (run with --debug for the traceback)"
        fail(f"internal error: {detail}{hint}", ExitCode.PARTIAL)


def _debug_traceback(error: BaseException, invocation: Invocation) -> None:
    if not invocation.debug:
        return
    text = "".join(traceback.format_exception(error))
    sys.stderr.write(redact(text, invocation.secrets))


def usage_guard(function: Callable[[], T], invocation: Invocation) -> T:
    """Run validation that happens before any I/O; a KshareError becomes its exit code."""
    try:
        return function()
    except KshareError as error:
        _debug_traceback(error, invocation)
        fail(redact(str(error), invocation.secrets), error.exit_code)


def stdout_write(text: str) -> None:
    """Write data to stdout; a closed pipe (``| head``) ends the command quietly."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again at exit while flushing; point stdout at devnull.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(int(ExitCode.OK)) from None
