"""``kshare profile``: name a cluster once, then run every command without connection flags.

A profile is a bootstrap list plus the client properties to reach it (a
``--command-config`` file and/or inline ``--property`` values). They live in
``$KSHARE_CONFIG`` (default ``~/.config/kshare/config.toml``), written 0600 because
inline properties may hold a password. ``show`` prints every secret as ``***``.

Confirmations go to stderr; stdout carries only what ``list`` and ``show`` report,
so ``kshare profile list -o json | jq`` works.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import ExitCode, KshareError, UsageError

if TYPE_CHECKING:
    from kshare_cli.connect.profiles import Profile, ProfileStore

app = typer.Typer(
    name="profile",
    help="Named connection profiles: add, use, list, show, remove.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


class ProfileOutput(enum.StrEnum):
    table = "table"
    json = "json"


def _store() -> ProfileStore:
    from kshare_cli.connect.profiles import ProfileStore

    return ProfileStore()


def _complete_names(incomplete: str) -> list[str]:
    try:
        names = [profile.name for profile in _store().list()]
    except KshareError:
        return []
    return [name for name in names if name.startswith(incomplete)]


Name = Annotated[
    str, typer.Argument(metavar="NAME", help="Profile name.", autocompletion=_complete_names)
]
Output = Annotated[
    ProfileOutput,
    typer.Option("--output", "-o", case_sensitive=False, help="table (default) or json."),
]


def _parse_properties(items: list[str]) -> tuple[tuple[str, str], ...]:
    pairs: dict[str, str] = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key.strip():
            # Never echo the item: it may be a password typed without its key.
            raise UsageError("--property expects KEY=VALUE")
        pairs[key.strip()] = value
    return tuple(pairs.items())


@app.command("add")
@common.command_edge
def add(
    name: Name,
    bootstrap_server: Annotated[
        str,
        typer.Option(
            "--bootstrap-server",
            "-b",
            metavar="HOST:PORT[,HOST:PORT...]",
            help="Brokers to bootstrap from.",
        ),
    ],
    command_config: Annotated[
        Path | None,
        typer.Option(
            "--command-config",
            metavar="FILE",
            help="Client properties file (Java or librdkafka names); stored as an absolute path.",
        ),
    ] = None,
    properties: Annotated[
        list[str] | None,
        typer.Option(
            "--property",
            metavar="KEY=VALUE",
            help="A client property stored in the profile (repeatable; wins over the file). "
            "Prefer the file for passwords: the command line ends up in shell history.",
        ),
    ] = None,
    use: Annotated[bool, typer.Option("--use", help="Make it the current profile.")] = False,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a profile of the same name.")
    ] = False,
) -> None:
    """Add a profile. The first profile becomes the current one.

    The bootstrap list and the properties are checked now (a typo in a JAAS line
    fails here, not at 3 a.m.); certificate and token files are read when a
    command connects.
    """
    from kshare_cli.connect.bootstrap import parse_bootstrap
    from kshare_cli.connect.profiles import Profile, check_profile_name
    from kshare_cli.connect.property_mapping import PropertySources, settings_from_properties
    from kshare_cli.connect.secret import is_secret_name, secrets_of

    check_profile_name(name)
    servers = parse_bootstrap(bootstrap_server)
    inline = _parse_properties(properties or [])
    diagnostics.remember_secrets(value for key, value in inline if is_secret_name(key))
    # Merged exactly as a command using the profile merges them (connect/), so what is
    # checked and warned about here is what later commands will run with.
    sources = PropertySources()
    if command_config is not None:
        command_config = command_config.expanduser().resolve()
        sources.add_file(command_config)
    sources.add(dict(inline), "--property")
    settings = settings_from_properties(
        sources.properties,
        bootstrap_servers=servers,
        origins=sources.origins,
        notes=sources.notes,
    )
    diagnostics.remember_secrets(secrets_of(settings))
    profile = Profile(name, servers, command_config, inline)
    store = _store()
    current = store.add(profile, use=use, replace=replace)
    for warning in settings.warnings:
        common.warn(warning)
    suffix = " and made it current" if current else ""
    diagnostics.progress(f"kshare: added profile '{name}'{suffix} ({store.path})\n")


@app.command("use")
@common.command_edge
def use(name: Name) -> None:
    """Make NAME the current profile (used when no connection flag or variable is given)."""
    _store().use(name)
    diagnostics.progress(f"kshare: current profile is now '{name}'\n")


@app.command("remove")
@common.command_edge
def remove(name: Name) -> None:
    """Remove a profile (its command-config file is left alone)."""
    was_current = _store().remove(name)
    note = "; no profile is current now" if was_current else ""
    diagnostics.progress(f"kshare: removed profile '{name}'{note}\n")


@app.command("list")
@common.command_edge
def list_profiles(output: Output = ProfileOutput.table) -> None:
    """List profiles; the current one is marked with *."""
    store = _store()
    profiles = store.list()
    current = store.current()
    if output is ProfileOutput.json:
        rows = [
            {
                "name": profile.name,
                "current": profile.name == current,
                "bootstrap_servers": list(profile.bootstrap_servers),
                "command_config": _path(profile.command_config),
            }
            for profile in profiles
        ]
        common.stdout_write(json.dumps(rows, indent=2) + "\n")
        return
    if not profiles:
        diagnostics.progress("kshare: no profiles yet; add one with `kshare profile add`\n")
        return
    table = [("CURRENT", "NAME", "BOOTSTRAP SERVERS", "COMMAND CONFIG")] + [
        (
            "*" if profile.name == current else "",
            profile.name,
            ",".join(profile.bootstrap_servers),
            _path(profile.command_config) or "-",
        )
        for profile in profiles
    ]
    widths = [max(len(row[column]) for row in table) for column in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]
    common.stdout_write("\n".join(lines) + "\n")


@app.command("show")
@common.command_edge
def show(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME]",
            help="Profile name (default: the current one).",
            autocompletion=_complete_names,
        ),
    ] = None,
    output: Output = ProfileOutput.table,
) -> None:
    """Show a profile and the connection settings it resolves to, secrets as ***."""
    from kshare_cli.connect.resolve import resolve_settings
    from kshare_cli.connect.secret import redact_property, secrets_of

    store = _store()
    if name is None:
        name = store.current()
        if name is None:
            raise UsageError("no current profile: name one, or `kshare profile use NAME`")
    profile = store.get(name)
    is_current = store.current() == name
    problem: KshareError | None = None
    resolved: dict[str, str] = {}
    warnings: tuple[str, ...] = ()
    try:
        settings = resolve_settings(
            bootstrap=None,
            command_config=None,
            profile=name,
            profiles_path=store.path,
            profile_warnings=True,
        )
        diagnostics.remember_secrets(secrets_of(settings))
        resolved, warnings = settings.redacted(), settings.warnings
    except KshareError as error:
        problem = error
    properties = {key: redact_property(key, value) for key, value in profile.properties}
    if output is ProfileOutput.json:
        document = {
            "name": profile.name,
            "current": is_current,
            "bootstrap_servers": list(profile.bootstrap_servers),
            "command_config": _path(profile.command_config),
            "properties": properties,
            "settings": resolved,
        }
        common.stdout_write(json.dumps(document, indent=2) + "\n")
    else:
        common.stdout_write(_show_text(profile, is_current, properties, resolved))
    for warning in warnings:
        common.warn(warning)
    if problem is not None:
        common.fail(f"profile '{name}' does not resolve: {problem}", ExitCode.USAGE)


def _show_text(
    profile: Profile, is_current: bool, properties: dict[str, str], resolved: dict[str, str]
) -> str:
    lines = [
        f"name: {profile.name}{' (current)' if is_current else ''}",
        f"bootstrap_servers: {','.join(profile.bootstrap_servers)}",
        f"command_config: {_path(profile.command_config) or '-'}",
    ]
    if properties:
        lines.append("properties:")
        lines.extend(f"  {key}: {value}" for key, value in properties.items())
    if resolved:
        lines.append("settings:")
        lines.extend(f"  {key}: {value}" for key, value in resolved.items())
    return "\n".join(lines) + "\n"


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)
