"""Table, JSON, JSONL, CSV and YAML output against reviewed golden files, and the schemas.

The files in ``tests/render/golden/`` were generated from ``cases.py`` once, read
by a person, and checked in; a change in any output shows up as a diff. Run with
``KSHARE_UPDATE_GOLDEN=1`` to rewrite them after an intended change (and review
the diff). Every JSON-shaped output is also validated against its JSON Schema in
``docs/schemas/``, the contract documented in ``docs/json-output.md``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from kshare_cli.render.descriptions import render_members, render_states
from kshare_cli.render.listing import render_listing
from kshare_cli.render.offsets import render_offsets
from tests.render import cases

GOLDEN_DIR = Path(__file__).parent / "golden"
SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
UPDATE = os.environ.get("KSHARE_UPDATE_GOLDEN") == "1"

EXTENSIONS = {"table": "table.txt", "json": "json", "jsonl": "jsonl", "csv": "csv", "yaml": "yaml"}

Renderer = Callable[..., str]


def _outputs() -> list[tuple[str, Renderer, Any, dict[str, Any], str]]:
    """(golden file name, renderer, model, keyword arguments, format) for every output."""
    outputs: list[tuple[str, Renderer, Any, dict[str, Any], str]] = []
    for name, listing in cases.listings().items():
        for fmt in EXTENSIONS:
            outputs.append((f"{name}.{EXTENSIONS[fmt]}", render_listing, listing, {}, fmt))
    for name, model in cases.offsets().items():
        for fmt in EXTENSIONS:
            outputs.append((f"{name}.{EXTENSIONS[fmt]}", render_offsets, model, {}, fmt))
        outputs.append(
            (f"{name}.verbose.table.txt", render_offsets, model, {"verbose": True}, "table")
        )
    for name, described in cases.descriptions().items():
        for fmt in ("json", "yaml"):
            outputs.append((f"{name}.{EXTENSIONS[fmt]}", render_members, described, {}, fmt))
        for view, renderer in (("members", render_members), ("state", render_states)):
            for fmt in ("table", "jsonl", "csv"):
                outputs.append((f"{name}.{view}.{EXTENSIONS[fmt]}", renderer, described, {}, fmt))
            outputs.append(
                (
                    f"{name}.{view}.verbose.table.txt",
                    renderer,
                    described,
                    {"verbose": True},
                    "table",
                )
            )
    return outputs


OUTPUTS = _outputs()


@pytest.mark.parametrize(
    ("file_name", "renderer", "model", "options", "fmt"),
    OUTPUTS,
    ids=[output[0] for output in OUTPUTS],
)
def test_output_matches_reviewed_golden_file(
    file_name: str, renderer: Renderer, model: Any, options: dict[str, Any], fmt: str
) -> None:
    rendered = renderer(model, fmt, **options)
    path = GOLDEN_DIR / file_name
    if UPDATE:
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with KSHARE_UPDATE_GOLDEN=1 and review it"
    assert rendered == path.read_text(encoding="utf-8")


def test_every_golden_file_is_produced() -> None:
    produced = {output[0] for output in OUTPUTS}
    assert {path.name for path in GOLDEN_DIR.iterdir()} == produced


# --------------------------------------------------------------------------- schemas


@cache
def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _schemas_of(file_name: str) -> tuple[str, str]:
    """(document schema, row schema) for a golden file's command."""
    if file_name.startswith("list"):
        return "list", "list-row"
    if file_name.startswith("offsets"):
        return "offsets", "offsets-row"
    row = "state-row" if ".state." in file_name else "members-row"
    return "describe", row


def _validate(validator: Draft202012Validator, instance: Any) -> None:
    errors = sorted(validator.iter_errors(instance), key=str)
    assert not errors, "\n".join(str(error) for error in errors[:3])


@pytest.mark.parametrize(
    ("file_name", "renderer", "model", "options", "fmt"),
    [output for output in OUTPUTS if output[4] in ("json", "yaml", "jsonl")],
    ids=[output[0] for output in OUTPUTS if output[4] in ("json", "yaml", "jsonl")],
)
def test_structured_output_follows_its_schema(
    file_name: str, renderer: Renderer, model: Any, options: dict[str, Any], fmt: str
) -> None:
    document_schema, row_schema = _schemas_of(file_name)
    text = renderer(model, fmt, **options)
    if fmt == "json":
        _validate(_validator(document_schema), json.loads(text))
    elif fmt == "yaml":
        document = yaml.safe_load(text)
        _validate(_validator(document_schema), document)
        # YAML is the JSON document, nothing more, nothing less.
        assert document == json.loads(renderer(model, "json", **options))
    else:
        lines = text.splitlines()
        # A group without offset information has no rows; every other case has some.
        assert bool(lines) != file_name.startswith("offsets-none")
        for line in lines:
            _validate(_validator(row_schema), json.loads(line))


@pytest.mark.parametrize(
    ("file_name", "renderer", "model", "options", "fmt"),
    [output for output in OUTPUTS if output[4] == "csv"],
    ids=[output[0] for output in OUTPUTS if output[4] == "csv"],
)
def test_csv_columns_are_the_row_schema_fields(
    file_name: str, renderer: Renderer, model: Any, options: dict[str, Any], fmt: str
) -> None:
    _, row_schema = _schemas_of(file_name)
    fields = set(_row_fields(_validator(row_schema).schema))
    if "coordinator" in fields:  # one JSON object, three CSV columns; operations left out
        fields = fields - {"coordinator", "authorized_operations"}
        fields |= {"coordinator_id", "coordinator_host", "coordinator_port"}
    records = list(csv.reader(io.StringIO(renderer(model, fmt, **options))))
    assert set(records[0]) == fields
    assert (len(records) > 1) != file_name.startswith("offsets-none")
    assert all(len(record) == len(records[0]) for record in records)


def _row_fields(schema: Any) -> list[str]:
    """The fields of a row schema's full (not failed-group) row."""
    if "oneOf" not in schema:
        return list(schema["required"])
    for option in schema["oneOf"]:
        definition = schema["$defs"][option["$ref"].rsplit("/", 1)[1]]
        if len(definition["required"]) > 2:
            return list(definition["required"])
    raise AssertionError("no full row in the schema")


def test_describe_json_is_the_same_for_both_views() -> None:
    for model in cases.descriptions().values():
        assert render_members(model, "json") == render_states(model, "json")
        assert render_members(model, "yaml") == render_states(model, "yaml")


def test_every_schema_is_documented() -> None:
    documentation = (SCHEMAS.parent / "json-output.md").read_text(encoding="utf-8")
    for schema in SCHEMAS.glob("*.schema.json"):
        assert f"(schemas/{schema.name})" in documentation, schema.name
