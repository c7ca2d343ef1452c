"""Named connection profiles in one TOML file, so ``kshare list`` needs no flags.

The file may hold secrets (a profile's inline properties can carry a JAAS
password), so it is written 0600 in a 0700 directory, atomically (a temporary file
in the same directory, then ``os.replace``): a crash mid-write never leaves a
half-written file, and no other user can ever read it, even briefly.

Layout::

    current = "prod"

    [profiles.prod]
    bootstrap_servers = ["kafka-1:9093", "kafka-2:9093"]
    command_config = "/home/ops/prod.properties"

    [profiles.prod.properties]
    "client.id" = "ops-laptop"
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from kshare_cli.connect.secret import redact_property
from kshare_cli.errors import UsageError

CONFIG_ENV = "KSHARE_CONFIG"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def default_profiles_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``$KSHARE_CONFIG``, else ``$XDG_CONFIG_HOME/kshare/config.toml``, else ``~/.config/...``.

    A relative ``XDG_CONFIG_HOME`` is ignored, as the XDG specification requires.
    """
    explicit = environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = environ.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "kshare" / "config.toml"
    home = environ.get("HOME")
    base = Path(home) if home else Path.home()
    return base / ".config" / "kshare" / "config.toml"


def check_profile_name(name: str) -> str:
    """Profile names are plain words, so they read well in TOML, shells and error messages."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"invalid profile name {name!r}: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit)"
        )
    return name


@dataclass(frozen=True, slots=True)
class Profile:
    """One named cluster: where it is and how to authenticate to it."""

    name: str
    bootstrap_servers: tuple[str, ...]
    command_config: Path | None = None
    properties: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={redact_property(key, value)}" for key, value in self.properties)
        return (
            f"Profile(name={self.name!r}, bootstrap_servers={self.bootstrap_servers!r}, "
            f"command_config={self.command_config!r}, properties=[{shown}])"
        )

    def property_map(self) -> dict[str, str]:
        return dict(self.properties)


class ProfileStore:
    """The profiles file: read on every call (it is tiny), written atomically on every change."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_profiles_path()

    @classmethod
    def default(cls, environ: Mapping[str, str] = os.environ) -> ProfileStore:
        return cls(default_profiles_path(environ))

    # -- reading -------------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise UsageError(
                f"cannot read profiles file {self.path}: {error.strerror or error}"
            ) from None
        try:
            document = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise UsageError(f"profiles file {self.path} is not valid TOML: {error}") from None
        if not isinstance(document.get("profiles", {}), dict):
            raise UsageError(f"profiles file {self.path}: 'profiles' must be a table")
        current = document.get("current")
        if current is not None and not isinstance(current, str):
            raise UsageError(f"profiles file {self.path}: 'current' must be a string")
        return document

    def _profile(self, name: str, entry: object) -> Profile:
        where = f"profiles file {self.path}: profile '{name}'"
        if not isinstance(entry, dict):
            raise UsageError(f"{where} must be a table")
        servers = entry.get("bootstrap_servers")
        if isinstance(servers, str):
            servers = [part.strip() for part in servers.split(",") if part.strip()]
        if (
            not isinstance(servers, list)
            or not servers
            or not all(isinstance(server, str) for server in servers)
        ):
            raise UsageError(f"{where}: bootstrap_servers must be a list of host:port strings")
        command_config = entry.get("command_config")
        if command_config is not None and not isinstance(command_config, str):
            raise UsageError(f"{where}: command_config must be a path")
        properties = entry.get("properties", {})
        if not isinstance(properties, dict) or not all(
            isinstance(value, str) for value in properties.values()
        ):
            raise UsageError(f"{where}: properties must be a table of strings")
        return Profile(
            name=name,
            bootstrap_servers=tuple(servers),
            command_config=Path(command_config) if command_config else None,
            properties=tuple(properties.items()),
        )

    def list(self) -> builtins.list[Profile]:
        """Every profile, sorted by name."""
        document = self._load()
        profiles = document.get("profiles", {})
        return [self._profile(name, profiles[name]) for name in sorted(profiles)]

    def current(self) -> str | None:
        """The name ``kshare profile use`` chose, if that profile still exists."""
        document = self._load()
        current = document.get("current")
        return current if current in document.get("profiles", {}) else None

    def get(self, name: str) -> Profile:
        """The profile called ``name``; UsageError naming the known ones when there is none."""
        profiles = self._load().get("profiles", {})
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none yet; add one with `kshare profile add`"
            raise UsageError(f"no profile named {name!r} (profiles: {known})")
        return self._profile(name, profiles[name])

    def get_current(self) -> Profile | None:
        name = self.current()
        return None if name is None else self.get(name)

    # -- writing -------------------------------------------------------------------------------

    def add(self, profile: Profile, *, use: bool = False, replace: bool = False) -> bool:
        """Store ``profile``; returns whether it became the current one.

        The first profile becomes current by itself: with a single cluster there is
        nothing to choose.
        """
        check_profile_name(profile.name)
        document = self._load()
        profiles: dict[str, Any] = dict(document.get("profiles", {}))
        if profile.name in profiles and not replace:
            raise UsageError(
                f"profile {profile.name!r} exists; pass --replace to overwrite it, "
                f"or `kshare profile remove {profile.name}` first"
            )
        entry: dict[str, Any] = {"bootstrap_servers": builtins.list(profile.bootstrap_servers)}
        if profile.command_config is not None:
            entry["command_config"] = str(profile.command_config)
        if profile.properties:
            entry["properties"] = dict(profile.properties)
        profiles[profile.name] = entry
        document["profiles"] = profiles
        becomes_current = use or document.get("current") not in profiles
        if becomes_current:
            document["current"] = profile.name
        self._write(document)
        return becomes_current

    def use(self, name: str) -> None:
        self.get(name)
        document = self._load()
        document["current"] = name
        self._write(document)

    def remove(self, name: str) -> bool:
        """Delete a profile; returns whether it was the current one (then none is current)."""
        self.get(name)
        document = self._load()
        profiles = dict(document.get("profiles", {}))
        del profiles[name]
        document["profiles"] = profiles
        was_current = document.get("current") == name
        if was_current:
            del document["current"]
        self._write(document)
        return was_current

    def _write(self, document: dict[str, Any]) -> None:
        ordered = {key: value for key, value in document.items() if key != "profiles"}
        ordered["profiles"] = document.get("profiles", {})
        text = tomli_w.dumps(ordered)
        directory = self.path.parent
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=directory
            )
        except OSError as error:
            raise UsageError(
                f"cannot write profiles file {self.path}: {error.strerror or error}"
            ) from None
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except OSError as error:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise UsageError(
                f"cannot write profiles file {self.path}: {error.strerror or error}"
            ) from None
