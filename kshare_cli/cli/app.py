"""The ``kshare`` command: one Typer app, one module per command family.

Tracebacks are off (``pretty_exceptions_enable=False``): Typer's pretty
tracebacks print local variables, which would include SASL passwords.
"""

from __future__ import annotations

import typer

from kshare_cli import __version__
from kshare_cli.cli import (
    audit_cmd,
    config_cmd,
    consume_cmd,
    dashboard_cmd,
    delete_cmd,
    describe_cmd,
    exporter_cmd,
    health_cmd,
    inflight_cmd,
    list_cmd,
    produce_cmd,
    profile_cmd,
    reset_cmd,
    sandbox_cmd,
)
from kshare_cli.errors import ExitCode

app = typer.Typer(
    name="kshare",
    help="Operator toolkit for Apache Kafka share groups (KIP-932).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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


app.command("list")(list_cmd.list_groups)
app.command("describe")(describe_cmd.describe)
app.command("inflight")(inflight_cmd.inflight)
app.command("reset-offsets")(reset_cmd.reset_offsets)
app.add_typer(profile_cmd.app, name="profile")
app.command("sandbox")(sandbox_cmd.sandbox)
app.add_typer(config_cmd.app, name="config")
app.command("delete-offsets")(delete_cmd.delete_offsets)
app.command("delete")(delete_cmd.delete)
app.command("produce")(produce_cmd.produce)
app.command("consume")(consume_cmd.consume)
app.add_typer(audit_cmd.app, name="audit")
app.command("dashboard")(dashboard_cmd.dashboard)
app.command("health")(health_cmd.health)
app.command("exporter")(exporter_cmd.exporter)


def main() -> None:
    """Console-script entry point.

    Typer is run outside its standalone mode so that a usage error (an unknown
    option, a bad choice) is one ``kshare: error:`` line and exit 2, like every
    other failure, instead of click's four-line usage block.
    """
    import sys

    try:
        code = app(standalone_mode=False)
    except typer.TyperException as error:
        context = getattr(error, "ctx", None)
        path = context.command_path if context is not None else "kshare"
        message = error.format_message()
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `kshare`: the help, as click has it
            sys.stderr.write(message.rstrip("\n") + "\n")
            raise SystemExit(int(ExitCode.USAGE)) from None
        sys.stderr.write(f"kshare: error: {message} (see '{path} --help')\n")
        raise SystemExit(getattr(error, "exit_code", 2)) from None
    except typer.Abort:
        sys.stderr.write("kshare: interrupted\n")
        raise SystemExit(130) from None
    raise SystemExit(code if isinstance(code, int) else 0)
