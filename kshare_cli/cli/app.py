"""The ``kshare`` command: one Typer app, one module per command family.

Tracebacks are off (``pretty_exceptions_enable=False``): Typer's pretty
tracebacks print local variables, which would include SASL passwords.
"""

from __future__ import annotations

import importlib
from typing import Final

import typer
import typer.core

from kshare_cli import __version__
from kshare_cli.errors import ExitCode

#: Every command, in the order ``kshare --help`` lists them: its name, the module under
#: ``kshare_cli.cli`` that declares it, and the function (``None``: the module's Typer
#: ``app``, a command family). A command's module is imported only when that command
#: runs or help lists it: ``kshare list`` does not pay for the audit's or the
#: consumer's option declarations (the startup budget `benchmarks/cli_startup.py` measures).
COMMANDS: Final = (
    ("list", "list_cmd", "list_groups"),
    ("describe", "describe_cmd", "describe"),
    ("inflight", "inflight_cmd", "inflight"),
    ("reset-offsets", "reset_cmd", "reset_offsets"),
    ("sandbox", "sandbox_cmd", "sandbox"),
    ("delete-offsets", "delete_cmd", "delete_offsets"),
    ("delete", "delete_cmd", "delete"),
    ("produce", "produce_cmd", "produce"),
    ("consume", "consume_cmd", "consume"),
    ("dashboard", "dashboard_cmd", "dashboard"),
    ("health", "health_cmd", "health"),
    ("exporter", "exporter_cmd", "exporter"),
    ("profile", "profile_cmd", None),
    ("config", "config_cmd", None),
    ("audit", "audit_cmd", None),
    ("dlq", "dlq_cmd", None),
)
_BY_NAME: Final = {name: (module, function) for name, module, function in COMMANDS}


def _typer(**settings: object) -> typer.Typer:
    # No Rich markup (plain help, and no Rich import) and no pretty tracebacks: Typer's
    # print local variables, which would include SASL passwords.
    return typer.Typer(
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        **settings,  # type: ignore[arg-type]  # Typer's keyword parameters, passed through
    )


def _load(name: str) -> typer.core.TyperCommand | typer.core.TyperGroup:
    """The click command for ``name``, built by Typer exactly as an eager registration would."""
    module_name, function = _BY_NAME[name]
    module = importlib.import_module(f"kshare_cli.cli.{module_name}")
    holder = _typer(add_completion=False)
    # A callback makes Typer build a group even around one command, so the command is
    # taken from it the same way for single commands and command families.
    holder.callback()(lambda: None)
    if function is None:
        holder.add_typer(module.app, name=name)
    else:
        # A module may build a command with its own class (COMMAND_CLASSES: function name
        # -> TyperCommand subclass), e.g. to parse an option Typer cannot declare.
        command_class = getattr(module, "COMMAND_CLASSES", {}).get(function)
        holder.command(name, cls=command_class)(getattr(module, function))
    built = typer.main.get_command(holder)
    assert isinstance(built, typer.core.TyperGroup)
    command = built.commands[name]
    assert isinstance(command, typer.core.TyperCommand | typer.core.TyperGroup)
    return command


class LazyCommands(typer.core.TyperGroup):
    """The root group: lists every command, builds one only when it is asked for."""

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        return [name for name, _, _ in COMMANDS]

    def get_command(  # type: ignore[override]
        self, ctx: typer.Context, cmd_name: str
    ) -> typer.core.TyperCommand | typer.core.TyperGroup | None:
        if cmd_name not in _BY_NAME:
            return None
        command = self.commands.get(cmd_name)
        if command is None:
            command = _load(cmd_name)
            self.commands[cmd_name] = command
        return command  # type: ignore[return-value]


app = _typer(
    cls=LazyCommands,
    name="kshare",
    help="Operator toolkit for Apache Kafka share groups (KIP-932).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kshare {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Operator toolkit for Apache Kafka share groups (KIP-932)."""


def main() -> None:
    """Console-script entry point.

    Typer is run outside its standalone mode so that a usage error (an unknown
    option, a bad choice) is one ``kshare: error:`` line and exit 2, like every
    other failure, instead of click's four-line usage block.
    """
    from kshare_cli import diagnostics

    try:
        code = app(standalone_mode=False)
    except typer.TyperException as error:
        context = getattr(error, "ctx", None)
        path = context.command_path if context is not None else "kshare"
        message = error.format_message()
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `kshare`: the help, as click has it
            diagnostics.progress(message.rstrip("\n") + "\n")
            raise SystemExit(int(ExitCode.USAGE)) from None
        diagnostics.error(f"{message} (see '{path} --help')")
        raise SystemExit(getattr(error, "exit_code", 2)) from None
    except typer.Abort:
        diagnostics.progress("kshare: interrupted\n")
        raise SystemExit(130) from None
    raise SystemExit(code if isinstance(code, int) else 0)
