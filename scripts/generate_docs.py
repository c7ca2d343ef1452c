"""Generate the shell completions in completions/ and the man pages in man/ from the Typer app.

Both are derived from the one command tree, so they cannot drift from ``--help``:
tests/cli/test_generated_docs.py regenerates them into a temporary directory and
fails when the checked-in copies differ. Run ``python scripts/generate_docs.py``
after changing a command.

The completion scripts are Typer's: they call ``kshare`` back at each <Tab>, so
subcommands and options come from the installed app and group ids from the
cluster (when a profile or $KSHARE_BOOTSTRAP_SERVERS names one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROG = "kshare"
COMPLETE_VAR = "_KSHARE_COMPLETE"
SHELLS = {"bash": "kshare.bash", "zsh": "_kshare", "fish": "kshare.fish"}

EXIT_STATUS = [
    ("0", "Success."),
    ("1", "Partial failure: some groups or partitions failed, or a change was refused."),
    ("2", "Usage error: bad option, value or file; nothing was changed."),
    (
        "3",
        "Connection, TLS or SASL failure, a broker without share-group support, or a port "
        "that does not answer as a Kafka broker (including no answer to ApiVersions within 5 s).",
    ),
    ("4", "Timed out (--timeout)."),
    ("5", "Not found: an unknown group, topic or partition."),
    (
        "6",
        "Not authorized: the cluster's ACLs refused a topic, group or cluster right "
        "(TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED); every group that failed was refused.",
    ),
    ("130", "Interrupted."),
]


def _roff(text: str) -> str:
    """Escape text for roff: backslashes, and lines that would start a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(
        ("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines()
    )


def _param_rows(command: Any) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            continue
        names = ", ".join(param.opts + param.secondary_opts)
        metavar = "" if param.is_flag else f" {param.metavar or param.name.upper()}"
        rows.append((names + metavar, (param.help or "").strip()))
    return rows


def _usage(command: Any, path: str) -> str:
    from typer._click.core import Context  # Typer's vendored click

    ctx = Context(command, info_name=path)
    return " ".join(command.collect_usage_pieces(ctx))


def man_page(command: Any, path: str, subcommands: list[tuple[str, Any]], version: str) -> str:
    title = path.replace(" ", "-")
    lines = [
        f'.TH {title.upper()} 1 "" "kshare {version}" "kshare manual"',
        ".SH NAME",
        _roff(f"{title} - {(command.short_help or command.help or '').splitlines()[0]}"),
        ".SH SYNOPSIS",
        f".B {_roff(path)}",
        _roff(_usage(command, path)),
    ]
    if command.help:
        paragraphs = [_roff(" ".join(p.split())) for p in command.help.strip().split("\n\n")]
        lines += [".SH DESCRIPTION", "\n.PP\n".join(paragraphs)]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    if arguments:
        lines.append(".SH ARGUMENTS")
        for argument in arguments:
            lines += [".TP", f".B {_roff(argument.human_readable_name)}"]
            lines.append(_roff(getattr(argument, "help", None) or ""))
    options = _param_rows(command)
    if options:
        lines.append(".SH OPTIONS")
        for names, help_text in options:
            lines += [".TP", f".B {_roff(names)}", _roff(help_text) if help_text else ""]
    if subcommands:
        lines.append(".SH COMMANDS")
        for name, sub in subcommands:
            summary = (sub.short_help or sub.help or "").strip().splitlines()
            lines += [".TP", f".B {_roff(name)}", _roff(summary[0] if summary else "")]
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f".B {code}", _roff(meaning)]
    lines += [".SH ENVIRONMENT"]
    for name, meaning in [
        (
            "KSHARE_BOOTSTRAP_SERVERS",
            "Brokers to bootstrap from when --bootstrap-server is not given.",
        ),
        ("KSHARE_COMMAND_CONFIG", "Client properties file when --command-config is not given."),
        ("KSHARE_CONFIG", "The profiles file (default: $XDG_CONFIG_HOME/kshare/config.toml)."),
    ]:
        lines += [".TP", f".B {name}", _roff(meaning)]
    if path != PROG:
        lines += [".SH SEE ALSO", ".BR kshare (1)"]
    return "\n".join(line for line in lines) + "\n"


def _walk(command: Any, path: str, out: dict[str, str], version: str) -> None:
    from typer._click.core import Context

    subcommands: list[tuple[str, Any]] = []
    if hasattr(command, "list_commands"):
        ctx = Context(command, info_name=path)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                subcommands.append((name, sub))
    out[f"man/{path.replace(' ', '-')}.1"] = man_page(command, path, subcommands, version)
    for name, sub in subcommands:
        _walk(sub, f"{path} {name}", out, version)


def generate() -> dict[str, str]:
    """Every generated file, by path relative to the repository root."""
    import typer
    from typer._completion_shared import get_completion_script

    from kshare_cli import __version__
    from kshare_cli.cli.app import app

    files: dict[str, str] = {}
    for shell, name in SHELLS.items():
        script = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell)
        files[f"completions/{name}"] = script.rstrip("\n") + "\n"
    _walk(typer.main.get_command(app), PROG, files, __version__)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=ROOT, help="Write under this directory.")
    parser.add_argument("--check", action="store_true", help="Exit 1 if any file is stale.")
    args = parser.parse_args(argv)
    stale = []
    for relative, text in generate().items():
        target = args.root / relative
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(relative)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    for relative in stale:
        print(("stale: " if args.check else "wrote: ") + relative, file=sys.stderr)
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
