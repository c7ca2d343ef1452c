"""``kshare health``'s structured output against its contract in ``docs/schemas/``.

Real runs against the cluster: the session's ``live`` group (OK), ``drained`` (no
members with lag: STOP, its share-partitions STALL over two samples) and a group
that does not exist (ERR, ``not_found``), so every status kind and every nullable
field's two sides appear. ``-o json`` and ``-o yaml`` are ``health.schema.json``;
each ``-o jsonl`` line is ``health-row.schema.json``, whose fields are the CSV columns.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kshare_cli.render.health import CSV_HEADER
from tests.cli.conftest import SCHEMAS, Kshare, ShareGroups, validate

JSON_OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "json-output.md"


def _groups(share_groups: ShareGroups) -> list[str]:
    return [share_groups.live, share_groups.drained, share_groups.missing]


def _run(kshare: Kshare, share_groups: ShareGroups, fmt: str) -> str:
    result = kshare.run("health", *_groups(share_groups), "--stall-after", "0.3", "-o", fmt)
    assert result.exit_code == 5, result.stderr  # the missing group
    return result.stdout


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_the_document_follows_health_schema(
    kshare: Kshare, share_groups: ShareGroups, fmt: str
) -> None:
    text = _run(kshare, share_groups, fmt)
    document: dict[str, Any] = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    validate(document, "health.schema.json")
    statuses = {each["group_id"]: each["status"] for each in document["groups"]}
    live = next(each for each in document["groups"] if each["group_id"] == share_groups.live)
    # The live member may hold records for a moment: lag above 0 with the start offset still
    # over 0.3 s is a STALL by the rule, so the live group's status follows its lag.
    assert statuses.pop(share_groups.live) in (("OK",) if live["lag"] == 0 else ("OK", "STALL"))
    assert statuses == {share_groups.drained: "STOP", share_groups.missing: "ERR"}
    drained = next(each for each in document["groups"] if each["group_id"] == share_groups.drained)
    assert {each["status"] for each in drained["partitions"]} == {"STALL"}
    missing = next(each for each in document["groups"] if each["not_found"])
    assert missing["reasons"] == [f"share group '{share_groups.missing}': not found"]


def test_every_jsonl_row_follows_health_row_schema_and_is_a_csv_row(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    rows = [json.loads(line) for line in _run(kshare, share_groups, "jsonl").splitlines()]
    for row in rows:
        validate(row, "health-row.schema.json")
    assert {row["topic"] is None for row in rows} == {True, False}  # group and partition rows
    schema = json.loads((SCHEMAS / "health-row.schema.json").read_text())
    assert list(schema["required"]) == list(CSV_HEADER) == list(rows[0])
    table = list(csv.reader(io.StringIO(_run(kshare, share_groups, "csv"))))
    assert table[0] == list(CSV_HEADER)
    assert len(table) == len(rows) + 1


def test_the_documented_example_follows_the_schema() -> None:
    text = JSON_OUTPUT.read_text(encoding="utf-8")
    section = text.split("## `kshare health`", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    validate(json.loads(example), "health.schema.json")
