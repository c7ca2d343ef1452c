"""Rendering group configs: ``-o plain`` against kafka-configs.sh byte for byte, the rest
against ``docs/schemas/group-configs.schema.json``.

The models come from the golden corpus's recorded DescribeConfigs responses of the
same kafka-configs.sh runs (scenario A step 6), so the converter and the layout are
checked together.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from kshare_cli.admin.group_configs import (
    ConfigChange,
    ConfigUpdate,
    GroupConfigEntry,
    GroupConfigs,
    describe_result_for,
    group_configs_from,
)
from kshare_cli.render.configs import (
    CONFIGS_CSV_HEADER,
    UPDATE_CSV_HEADER,
    render_config_update,
    render_group_configs,
)
from tests.support.golden import GOLDEN
from tests.support.golden_admin import response

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
CONFIGS_OUTPUT = GOLDEN / "tool-output" / "kafka-configs"
DESCRIBE_02, DESCRIBE_04 = 404, 413


def recorded(line: int) -> GroupConfigs:
    return group_configs_from(describe_result_for(response(line), 32, "golden-h"), "golden-h")


def golden(name: str) -> str:
    return (CONFIGS_OUTPUT / f"{name}.out").read_text(encoding="utf-8")


def schema_check(instance: object, definition: str | None = None) -> None:
    """Validate against the schema file, or one of its ``$defs``."""
    schema = json.loads((SCHEMAS / "group-configs.schema.json").read_text())
    registry: Registry[Any] = Registry().with_resource(
        schema["$id"], Resource.from_contents(schema)
    )
    target = schema if definition is None else {"$ref": f"{schema['$id']}#/$defs/{definition}"}
    jsonschema.Draft202012Validator(target, registry=registry).validate(instance)


UPDATE = ConfigUpdate(
    "golden-h",
    (
        ConfigChange("share.record.lock.duration.ms", "set", "20000", "30000", "DEFAULT_CONFIG"),
        ConfigChange("share.auto.offset.reset", "set", "earliest", "latest", "DEFAULT_CONFIG"),
    ),
)
UNSET = ConfigUpdate(
    "golden-h",
    (
        ConfigChange(
            "share.isolation.level", "delete", None, "read_committed", "DYNAMIC_GROUP_CONFIG"
        ),
    ),
    validate_only=True,
    notes=("share.auto.offset.reset is not set on group 'golden-h': it already has its default",),
)


# --------------------------------------------------------------------------- plain


def test_plain_describe_is_kafka_configs_02() -> None:
    assert render_group_configs(recorded(DESCRIBE_02), "plain") == golden("02-describe-golden-h")


def test_plain_describe_all_is_kafka_configs_04() -> None:
    assert render_group_configs(recorded(DESCRIBE_04), "plain", show_all=True) == golden(
        "04-describe-golden-h-all"
    )


def test_plain_update_is_kafka_configs_01() -> None:
    assert render_config_update(UPDATE, "plain") == golden("01-alter-golden-h")
    assert render_config_update(UPDATE, "table") == golden("01-alter-golden-h")


def test_plain_of_a_group_that_neither_exists_nor_has_configs() -> None:
    nobody = GroupConfigs(
        "nobody",
        (GroupConfigEntry("share.isolation.level", "read_uncommitted", "DEFAULT_CONFIG"),),
        False,
    )
    assert render_group_configs(nobody, "plain") == (
        "The group 'nobody' doesn't exist and doesn't have dynamic config.\n"
    )
    # --all describes it anyway, as Kafka's tool (which checks only without --all).
    assert render_group_configs(nobody, "plain", show_all=True).startswith(
        "All configs for group nobody are:\n  share.isolation.level=read_uncommitted "
    )
    # An existing group with no configs of its own: the header alone.
    empty = GroupConfigs("empty", nobody.entries, True)
    assert render_group_configs(empty, "plain") == "Dynamic configs for group empty are:\n"


def test_plain_prints_null_as_kafka_does() -> None:
    hidden = GroupConfigs("g", (GroupConfigEntry("share.x", None, "DYNAMIC_GROUP_CONFIG", True),))
    assert render_group_configs(hidden, "plain") == (
        "Dynamic configs for group g are:\n  share.x=null sensitive=true synonyms={}\n"
    )


# --------------------------------------------------------------------------- table


def test_table_shows_the_share_configs_with_their_sources() -> None:
    lines = render_group_configs(recorded(DESCRIBE_02), "table").splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "SOURCE"]
    rows = [line.split() for line in lines[2:]]
    assert rows == [
        ["share.auto.offset.reset", "earliest", "DYNAMIC_GROUP_CONFIG"],
        ["share.heartbeat.interval.ms", "5000", "DEFAULT_CONFIG"],
        ["share.isolation.level", "read_uncommitted", "DEFAULT_CONFIG"],
        ["share.record.lock.duration.ms", "20000", "DYNAMIC_GROUP_CONFIG"],
        ["share.session.timeout.ms", "45000", "DEFAULT_CONFIG"],
    ]
    everything = render_group_configs(recorded(DESCRIBE_02), "table", show_all=True)
    assert len(everything.splitlines()) == 2 + 11
    assert "consumer.session.timeout.ms" in everything


def test_a_dry_run_table_shows_what_would_change() -> None:
    text = render_config_update(UNSET, "table")
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "OPERATION", "CURRENT", "SOURCE", "NEW"]
    assert lines[2].split() == [
        "share.isolation.level",
        "DELETE",
        "read_committed",
        "DYNAMIC_GROUP_CONFIG",
        "(default)",
    ]
    assert lines[-1] == (
        "Dry run: the broker accepted the update of group golden-h; nothing was changed."
    )
    assert render_config_update(UNSET, "plain") == lines[-1] + "\n"


# --------------------------------------------------------------------------- structured


@pytest.mark.parametrize("show_all", [False, True])
def test_json_yaml_jsonl_csv_follow_the_schema(show_all: bool) -> None:
    configs = recorded(DESCRIBE_02)
    document = json.loads(render_group_configs(configs, "json", show_all=show_all))
    schema_check(document)
    assert yaml.safe_load(render_group_configs(configs, "yaml", show_all=show_all)) == document
    names = [config["name"] for config in document["configs"]]
    assert len(names) == (11 if show_all else 5)
    lock = next(c for c in document["configs"] if c["name"] == "share.record.lock.duration.ms")
    assert lock == {
        "name": "share.record.lock.duration.ms",
        "value": "20000",
        "source": "DYNAMIC_GROUP_CONFIG",
        "dynamic": True,
        "sensitive": False,
        "read_only": False,
        "type": "INT",
        "synonyms": [
            {
                "name": "share.record.lock.duration.ms",
                "value": "20000",
                "source": "DYNAMIC_GROUP_CONFIG",
            }
        ],
    }
    rows = [
        json.loads(line)
        for line in render_group_configs(configs, "jsonl", show_all=show_all).splitlines()
    ]
    for row in rows:
        schema_check(row, "config_row")
    assert [row["name"] for row in rows] == names
    table = list(csv.reader(io.StringIO(render_group_configs(configs, "csv", show_all=show_all))))
    assert tuple(table[0]) == CONFIGS_CSV_HEADER
    assert [row[1] for row in table[1:]] == names
    assert table[1 + names.index("share.record.lock.duration.ms")] == [
        "golden-h", "share.record.lock.duration.ms", "20000", "DYNAMIC_GROUP_CONFIG",
        "true", "false", "false", "INT",
    ]  # fmt: skip


def test_update_documents_follow_the_schema() -> None:
    for update in (UPDATE, UNSET):
        document = json.loads(render_config_update(update, "json"))
        schema_check(document, "update")
        assert yaml.safe_load(render_config_update(update, "yaml")) == document
        for line in render_config_update(update, "jsonl").splitlines():
            schema_check(json.loads(line), "update_row")
    assert json.loads(render_config_update(UNSET, "json")) == {
        "group_id": "golden-h",
        "dry_run": True,
        "changes": [
            {
                "name": "share.isolation.level",
                "operation": "delete",
                "value": None,
                "previous_value": "read_committed",
                "previous_source": "DYNAMIC_GROUP_CONFIG",
            }
        ],
        "notes": list(UNSET.notes),
    }
    table = list(csv.reader(io.StringIO(render_config_update(UPDATE, "csv"))))
    assert tuple(table[0]) == UPDATE_CSV_HEADER
    assert table[1] == [
        "golden-h", "share.record.lock.duration.ms", "set", "20000", "30000", "DEFAULT_CONFIG",
        "false",
    ]  # fmt: skip


def test_the_schema_refuses_what_kshare_never_prints() -> None:
    document = json.loads(render_group_configs(recorded(DESCRIBE_02), "json"))
    document["configs"][0]["source"] = "SOMEWHERE"
    with pytest.raises(jsonschema.ValidationError):
        schema_check(document)
    with pytest.raises(jsonschema.ValidationError):
        schema_check({"group_id": "g", "dry_run": False, "changes": [], "notes": []})
