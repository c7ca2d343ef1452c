"""Where a command's settings come from: flags, then environment, then profiles, then files.

The precedence is written once (:func:`resolve_settings`) for every command and
for ``kshare profile``: an explicit flag outranks the environment, which outranks
the current profile, so ``--bootstrap-server`` never sends the current profile's
credentials to another cluster.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
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

    def store() -> ProfileStore:
        return ProfileStore(profiles_path or default_profiles_path(environ))

    chosen: Profile | None = None
    chosen_label = ""
    if profile is not None:
        chosen = store().get(profile)
        chosen_label = f"profile '{profile}'"
    elif bootstrap is None and env_bootstrap is None:
        chosen = store().get_current()
        chosen_label = f"current profile '{chosen.name}'" if chosen else ""

    sources = PropertySources()
    quiet: set[str] = set()  # the origins of a saved profile's properties

    def merge_profile(chosen: Profile) -> None:
        if chosen.command_config is not None:
            sources.add_file(chosen.command_config, label=f"{chosen_label} command_config")
            quiet.add(str(chosen.command_config))
        sources.add(chosen.property_map(), chosen_label)
        quiet.add(chosen_label)

    if command_config is not None:
        sources.add_file(command_config)
    elif profile is not None and chosen is not None:
        merge_profile(chosen)
    elif env_config is not None:
        sources.add_file(env_config, label=COMMAND_CONFIG_ENV)
    elif chosen is not None:
        merge_profile(chosen)
    sources.add(overrides or {}, "--property")
    properties, origins = sources.properties, sources.origins

    if bootstrap is not None:
        servers = parse_bootstrap(bootstrap)
    elif profile is not None and chosen is not None:
        servers = _parse_bootstrap_from(",".join(chosen.bootstrap_servers), chosen_label)
    elif env_bootstrap is not None:
        servers = _parse_bootstrap_from(env_bootstrap, BOOTSTRAP_ENV)
    elif chosen is not None:
        servers = _parse_bootstrap_from(",".join(chosen.bootstrap_servers), chosen_label)
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


def _parse_bootstrap_from(value: str, origin: str) -> tuple[str, ...]:
    try:
        return parse_bootstrap(value)
    except UsageError as error:
        raise UsageError(f"{origin}: {error}") from None
