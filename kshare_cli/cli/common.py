"""Options every cluster command shares, and the edge where errors become exit codes.

A command is a function under :func:`command_edge`: it parses its options, calls
one service and renders the answer; every failure it raises becomes one stderr
line (through :mod:`kshare_cli.diagnostics`, which hides secrets) and the
documented exit code, in one place.

Options are declared once here (``Annotated`` aliases) so ``list``, ``describe``
and later commands spell them the same way. This module is imported to build
``--help``, so it imports nothing heavy: the connection layer, asyncio and the
renderers load only when a command actually runs.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import click
import typer

from kshare_cli import diagnostics
from kshare_cli.cli.durations import duration_help, timeout_seconds
from kshare_cli.errors import ExitCode, KshareError, UsageError
from kshare_cli.output_format import OutputFormat as OutputFormat

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings

T = TypeVar("T")
P = ParamSpec("P")


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
    diagnostics.remember_secrets(secrets_of(settings))
    if not quiet:
        for warning in settings.warnings:
            warn(warning)
    return settings


def connection(
    bootstrap_server: str | None,
    command_config: Path | None,
    profile: str | None,
    timeout: str,
) -> tuple[ConnectionSettings, float]:
    """The settings and ``--timeout`` in seconds, each refused before any I/O (exit 2).

    ``--timeout`` is checked first, so a bad one is named even when the settings could
    not be read. Resolving the settings hands their secrets to the stderr writer.
    """
    timeout_s = parse_timeout(timeout)
    return resolve(bootstrap_server, command_config, profile), timeout_s


def secrets_of(settings: object) -> tuple[str, ...]:
    """Every secret value reachable from a settings object (see ``connect/secret.py``)."""
    from kshare_cli.connect.secret import secrets_of as found_in

    return found_in(settings)


def fail(message: str, code: ExitCode) -> NoReturn:
    """One line on stderr and the documented exit code: the only way a command fails."""
    diagnostics.error(message)
    raise typer.Exit(int(code))


def warn(message: str) -> None:
    """One ``kshare: warning:`` line on stderr; the command goes on."""
    diagnostics.warning(message)


def report_failure(message: str) -> None:
    """One stderr line for a group or partition that failed while the rest succeeded."""
    diagnostics.error(message)


def command_edge(command: Callable[P, None]) -> Callable[P, None]:
    """A Typer command whose every failure becomes one stderr line and its exit code.

    The command's body runs once, with nothing of its own to catch: a ``KshareError``
    (a usage error from a parser, a connection refused, a group not found) is its
    message and its documented exit code; a Ctrl-C is "kshare: interrupted", exit 130;
    any other exception is an internal error, exit 1, with its traceback only under
    ``--debug``. Click's own exits and aborts pass through untouched. Every line goes
    through :mod:`kshare_cli.diagnostics`, which hides the settings' secrets. The
    command's ``debug`` parameter, if it has one, turns tracebacks on.
    ``functools.wraps`` keeps the signature, so Typer builds the same options.
    """
    signature = inspect.signature(command)

    @functools.wraps(command)
    def edged(*args: P.args, **kwargs: P.kwargs) -> None:
        arguments = signature.bind_partial(*args, **kwargs).arguments
        diagnostics.forget_secrets()
        diagnostics.set_debug(bool(arguments.get("debug", False)))
        try:
            command(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            diagnostics.progress("kshare: interrupted\n")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except KshareError as error:
            diagnostics.debug_traceback(error)
            fail(str(error), error.exit_code)
        except Exception as error:  # noqa: BLE001 -- the edge: every failure becomes one line
            diagnostics.debug_traceback(error)
            hint = "" if diagnostics.is_debug() else " (run with --debug for the traceback)"
            fail(f"internal error: {type(error).__name__}: {error}{hint}", ExitCode.PARTIAL)

    return edged


def run(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a command's coroutine to its end; its failures are the edge's (:func:`command_edge`)."""
    import asyncio

    return asyncio.run(work())


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
