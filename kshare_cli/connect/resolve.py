"""Where a command's settings come from: flags, then environment, then profiles, then files.

The precedence is written once (:func:`resolve_settings`) for every command and
for ``kshare profile``: an explicit flag outranks the environment, which outranks
the current profile, so ``--bootstrap-server`` never sends the current profile's
credentials to another cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kshare_cli.connect.bootstrap import parse_bootstrap
from kshare_cli.connect.profiles import Profile, ProfileStore, default_profiles_path
from kshare_cli.connect.property_mapping import PropertySources, settings_from_properties
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import UsageError

__all__ = ["BOOTSTRAP_ENV", "COMMAND_CONFIG_ENV", "NO_BOOTSTRAP", "resolve_settings"]

BOOTSTRAP_ENV = "KSHARE_BOOTSTRAP_SERVERS"
COMMAND_CONFIG_ENV = "KSHARE_COMMAND_CONFIG"
NO_BOOTSTRAP = (
    "no bootstrap server: pass --bootstrap-server, set KSHARE_BOOTSTRAP_SERVERS, "
    "or add a profile with `kshare profile add`"
)


def resolve_settings(
    *,
    bootstrap: str | None,
    command_config: Path | None,
    profile: str | None,
    environ: Mapping[str, str] = os.environ,
    profiles_path: Path | None = None,
    overrides: Mapping[str, str] | None = None,
    profile_warnings: bool = False,
) -> ConnectionSettings:
    """The settings a command runs with: flags, then environment, then the profile.

    - Bootstrap servers: ``--bootstrap-server``; ``--profile NAME``; ``KSHARE_BOOTSTRAP_SERVERS``;
      the current profile; ``bootstrap.servers`` inside the client properties. An empty
      ``--bootstrap-server`` is a UsageError; an empty variable counts as unset.
    - Client properties: ``--command-config``; the named profile's; ``KSHARE_COMMAND_CONFIG``;
      the current profile's. A profile's properties are its ``command_config`` file
      plus its inline ``properties`` (which win).
    - ``overrides`` (``--property``-style) win over every file.
    - Warnings about a profile's own properties (unused, unknown) were given when it
      was saved (``kshare profile add``); a command using it does not repeat them on
      every run. ``profile_warnings`` asks for them (``kshare profile show``).

    An explicit ``--profile`` is a flag, so it outranks the environment. The
    *current* profile is only consulted when neither a flag nor the environment
    names a bootstrap server: ``--bootstrap-server localhost:9092`` must never
    send the current profile's credentials to another cluster.
    """
    if bootstrap is not None and not bootstrap.strip():
        # An empty flag is a mistake (an unset shell variable: -b "$BROKERS"); falling back
        # to the environment or a profile would silently reach some other cluster.
        raise UsageError("--bootstrap-server is empty: expected host:port[,host:port...]")
    # An empty variable counts as unset, as shells treat KSHARE_BOOTSTRAP_SERVERS= .
    env_bootstrap = (environ.get(BOOTSTRAP_ENV) or "").strip() or None
    env_config_text = (environ.get(COMMAND_CONFIG_ENV) or "").strip()
    env_config = Path(env_config_text).expanduser() if env_config_text else None
    chosen = _chosen_profile(
        profile,
        consult_current=bootstrap is None and env_bootstrap is None,
        store=lambda: ProfileStore(profiles_path or default_profiles_path(environ)),
    )
    sources, quiet = _property_sources(command_config, profile, env_config, chosen, overrides)
    properties, origins = sources.properties, sources.origins
    if bootstrap is not None:
        servers = parse_bootstrap(bootstrap)
    elif profile is not None and chosen is not None:
        servers = _parse_bootstrap_from(",".join(chosen.profile.bootstrap_servers), chosen.label)
    elif env_bootstrap is not None:
        servers = _parse_bootstrap_from(env_bootstrap, BOOTSTRAP_ENV)
    elif chosen is not None:
        servers = _parse_bootstrap_from(",".join(chosen.profile.bootstrap_servers), chosen.label)
    elif properties.get("bootstrap.servers", "").strip():
        servers = _parse_bootstrap_from(
            properties["bootstrap.servers"], origins.get("bootstrap.servers", "")
        )
    else:
        raise UsageError(NO_BOOTSTRAP)
    return settings_from_properties(
        properties,
        bootstrap_servers=servers,
        origins=origins,
        notes=sources.notes,
        quiet_origins=() if profile_warnings else quiet,
    )


@dataclass(frozen=True, slots=True)
class _ChosenProfile:
    """The profile a command uses, and how its properties' origins are named."""

    profile: Profile
    label: str


def _chosen_profile(
    profile: str | None, *, consult_current: bool, store: Callable[[], ProfileStore]
) -> _ChosenProfile | None:
    """``--profile NAME``'s profile; else, when nothing names a bootstrap server
    (``consult_current``), the current profile, if any."""
    if profile is not None:
        return _ChosenProfile(store().get(profile), f"profile '{profile}'")
    if consult_current:
        current = store().get_current()
        if current is not None:
            return _ChosenProfile(current, f"current profile '{current.name}'")
    return None


def _property_sources(
    command_config: Path | None,
    profile: str | None,
    env_config: Path | None,
    chosen: _ChosenProfile | None,
    overrides: Mapping[str, str] | None,
) -> tuple[PropertySources, set[str]]:
    """The client properties, in precedence order, and the origins of a saved
    profile's properties (whose warnings were given when it was saved)."""
    sources = PropertySources()
    quiet: set[str] = set()
    if command_config is not None:
        sources.add_file(command_config)
    elif chosen is not None and (profile is not None or env_config is None):
        saved = chosen.profile
        if saved.command_config is not None:
            sources.add_file(saved.command_config, label=f"{chosen.label} command_config")
            quiet.add(str(saved.command_config))
        sources.add(saved.property_map(), chosen.label)
        quiet.add(chosen.label)
    elif env_config is not None:
        sources.add_file(env_config, label=COMMAND_CONFIG_ENV)
    sources.add(overrides or {}, "--property")
    return sources, quiet


def _parse_bootstrap_from(value: str, origin: str) -> tuple[str, ...]:
    try:
        return parse_bootstrap(value)
    except UsageError as error:
        raise UsageError(f"{origin}: {error}") from None
