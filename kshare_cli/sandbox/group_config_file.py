"""The sandbox's group configs on disk, so ``--data-dir`` keeps them across restarts.

Kafka stores a group's dynamic configs as ConfigRecords in its metadata log and
replays them on start; a share group configured with
``share.auto.offset.reset=earliest`` stays so after a broker restart. The
sandbox has no metadata log, so it keeps the same facts -- every group's
overrides, as set -- in one small JSON file beside the partition logs,
replaced atomically (a temporary file, then ``os.replace``) on every change, so
a crash mid-write leaves the previous version, never half a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

FILE_NAME: Final = "group-configs.json"
_FORMAT: Final = 1


class DataDirError(Exception):
    """A data directory the sandbox cannot start from (unreadable or malformed state)."""


def group_configs_path(data_dir: Path) -> Path:
    return data_dir / FILE_NAME


def load_group_configs(data_dir: Path) -> dict[str, dict[str, str]]:
    """The overrides stored in ``data_dir``; none when the file does not exist yet.

    A file that is not what :func:`save_group_configs` writes raises
    :class:`DataDirError` naming it, rather than starting with configs silently lost.
    """
    path = group_configs_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise DataDirError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        document = json.loads(text)
        groups = document["groups"] if document.get("format") == _FORMAT else None
    except (ValueError, AttributeError, KeyError):
        groups = None
    if not isinstance(groups, dict) or not all(
        isinstance(values, dict) and all(isinstance(v, str) for v in values.values())
        for values in groups.values()
    ):
        raise DataDirError(f"{path} is not a kshare sandbox group-config file")
    return {str(group): dict(values) for group, values in groups.items()}


def save_group_configs(data_dir: Path, overrides: Mapping[str, Mapping[str, str]]) -> None:
    """Replace the stored overrides with ``overrides``, atomically."""
    path = group_configs_path(data_dir)
    temporary = path.with_name(path.name + ".tmp")
    document = {
        "format": _FORMAT,
        "groups": {group: dict(values) for group, values in sorted(overrides.items())},
    }
    with temporary.open("w", encoding="utf-8") as file:
        json.dump(document, file, indent=1, sort_keys=True)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
