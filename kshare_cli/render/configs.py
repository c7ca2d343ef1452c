"""Rendering group configs: ``kshare config get`` and the result of ``config set``/``unset``.

``plain`` is ``kafka-configs.sh --entity-type groups`` byte for byte
(``ConfigCommand.describeResourceConfig`` in Kafka 4.2): ``Dynamic configs for group
G are:`` and the group's own configs, or with ``show_all`` (``--describe --all``)
``All configs for group G are:`` and every group config, each line
``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``, sorted by name.
A group that does not exist and has no config of its own is Kafka's one line,
``The group 'G' doesn't exist and doesn't have dynamic config.``

The other formats show the share-group configs (``share.*``) with their effective
values and sources, defaults included, since that is what a share-group operator
asks; ``show_all`` adds the consumer and streams group configs.

An update is Kafka's ``Completed updating config for group G.`` in plain and
table; a dry run (validate-only) shows, in the table, what would change.
"""

from __future__ import annotations

from typing import Any

from kshare_cli.admin.group_configs import (
    ConfigChange,
    ConfigUpdate,
    GroupConfigEntry,
    GroupConfigs,
)
from kshare_cli.kafka.group_configs import java_str
from kshare_cli.render.output_formats import OutputFormat, add_row, dispatch, new_table, table_text

__all__ = [
    "configs_document",
    "configs_rows",
    "render_config_update",
    "render_group_configs",
    "selected_entries",
    "update_document",
    "update_rows",
]

CONFIGS_CSV_HEADER = (
    "group_id",
    "name",
    "value",
    "source",
    "dynamic",
    "sensitive",
    "read_only",
    "type",
)
UPDATE_CSV_HEADER = (
    "group_id",
    "name",
    "operation",
    "value",
    "previous_value",
    "previous_source",
    "dry_run",
)


def selected_entries(configs: GroupConfigs, show_all: bool) -> tuple[GroupConfigEntry, ...]:
    """What the table and structured formats show: ``share.*``, or everything with --all."""
    return configs.entries if show_all else configs.share()


def render_group_configs(
    configs: GroupConfigs,
    fmt: OutputFormat | str,
    *,
    show_all: bool = False,
    width: int | None = None,
) -> str:
    """``configs`` in ``fmt``; ``show_all`` is ``--all`` (every group config, defaults too)."""
    return dispatch(
        fmt,
        plain=lambda: _plain_configs(configs, show_all),
        table=lambda: _configs_table(configs, show_all, width),
        document=lambda: configs_document(configs, show_all),
        rows=lambda: configs_rows(configs, show_all),
        csv_header=CONFIGS_CSV_HEADER,
        csv_rows=lambda: [
            (
                configs.group_id,
                entry.name,
                entry.value,
                entry.source,
                _csv_bool(entry.dynamic),
                _csv_bool(entry.sensitive),
                _csv_bool(entry.read_only),
                entry.config_type,
            )
            for entry in selected_entries(configs, show_all)
        ],
    )


def render_config_update(
    update: ConfigUpdate, fmt: OutputFormat | str, *, width: int | None = None
) -> str:
    """What a ``config set``/``unset`` did, or with ``validate_only`` would do, in ``fmt``."""
    return dispatch(
        fmt,
        plain=lambda: _update_line(update) + "\n",
        table=lambda: _update_table(update, width),
        document=lambda: update_document(update),
        rows=lambda: update_rows(update),
        csv_header=UPDATE_CSV_HEADER,
        csv_rows=lambda: [
            (
                update.group_id,
                change.name,
                change.operation,
                change.value,
                change.previous_value,
                change.previous_source,
                _csv_bool(update.validate_only),
            )
            for change in update.changes
        ],
    )


# --------------------------------------------------------------------------- plain


def _plain_configs(configs: GroupConfigs, show_all: bool) -> str:
    if not show_all and configs.exists is False and not configs.dynamic():
        return f"The group '{configs.group_id}' doesn't exist and doesn't have dynamic config.\n"
    entries = configs.entries if show_all else configs.dynamic()
    lines = [f"{'All' if show_all else 'Dynamic'} configs for group {configs.group_id} are:"]
    for entry in entries:
        synonyms = ", ".join(
            f"{synonym.source}:{synonym.name}={java_str(synonym.value)}"
            for synonym in entry.synonyms
        )
        lines.append(
            f"  {entry.name}={java_str(entry.value)} sensitive={java_str(entry.sensitive)} "
            f"synonyms={{{synonyms}}}"
        )
    return "\n".join(lines) + "\n"


def _update_line(update: ConfigUpdate) -> str:
    if update.validate_only:
        return (
            f"Dry run: the broker accepted the update of group {update.group_id}; "
            "nothing was changed."
        )
    return f"Completed updating config for group {update.group_id}."


# --------------------------------------------------------------------------- table


def _configs_table(configs: GroupConfigs, show_all: bool, width: int | None) -> str:
    table = new_table("NAME", "VALUE", "SOURCE")
    for entry in selected_entries(configs, show_all):
        add_row(table, [entry.name, entry.value, entry.source])
    return table_text(table, width)


def _update_table(update: ConfigUpdate, width: int | None) -> str:
    if not update.validate_only or not update.changes:
        return _update_line(update) + "\n"
    table = new_table("NAME", "OPERATION", "CURRENT", "SOURCE", "NEW")
    for change in update.changes:
        add_row(
            table,
            [
                change.name,
                change.operation.upper(),
                change.previous_value,
                change.previous_source,
                "(default)" if change.operation == "delete" else change.value,
            ],
        )
    return table_text(table, width, [_update_line(update)])


# --------------------------------------------------------------------------- structured


def _entry_document(entry: GroupConfigEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": entry.value,
        "source": entry.source,
        "dynamic": entry.dynamic,
        "sensitive": entry.sensitive,
        "read_only": entry.read_only,
        "type": entry.config_type,
    }


def configs_document(configs: GroupConfigs, show_all: bool = False) -> dict[str, Any]:
    """The group's configs (``docs/schemas/group-configs.schema.json``)."""
    return {
        "group_id": configs.group_id,
        "configs": [
            {
                **_entry_document(entry),
                "synonyms": [
                    {"name": synonym.name, "value": synonym.value, "source": synonym.source}
                    for synonym in entry.synonyms
                ],
            }
            for entry in selected_entries(configs, show_all)
        ],
    }


def configs_rows(configs: GroupConfigs, show_all: bool = False) -> list[dict[str, Any]]:
    """One object per config (``group-configs.schema.json#/$defs/config_row``)."""
    return [
        {"group_id": configs.group_id, **_entry_document(entry)}
        for entry in selected_entries(configs, show_all)
    ]


def _change_document(change: ConfigChange) -> dict[str, Any]:
    return {
        "name": change.name,
        "operation": change.operation,
        "value": change.value,
        "previous_value": change.previous_value,
        "previous_source": change.previous_source,
    }


def update_document(update: ConfigUpdate) -> dict[str, Any]:
    """A set or unset (``group-configs.schema.json#/$defs/update``)."""
    return {
        "group_id": update.group_id,
        "dry_run": update.validate_only,
        "changes": [_change_document(change) for change in update.changes],
        "notes": list(update.notes),
    }


def update_rows(update: ConfigUpdate) -> list[dict[str, Any]]:
    """One object per changed key (``group-configs.schema.json#/$defs/update_row``)."""
    return [
        {"group_id": update.group_id, **_change_document(change), "dry_run": update.validate_only}
        for change in update.changes
    ]


def _csv_bool(value: bool) -> str:
    return "true" if value else "false"
