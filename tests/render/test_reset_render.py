"""Rendering ``ResetPlan``: the documented JSON, and a refused reset in every format."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import MemberDescription
from kshare_cli.admin.reset import PlannedOffset, ResetPlan
from kshare_cli.render.reset import render_reset, reset_document, reset_rows
from kshare_cli.wire.errors import KafkaError

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"

# Golden scenario A after close, reset to earliest: every record of both partitions was
# acknowledged or archived, so all 15 + 15 come back (the start offsets 2 and 5 trail).
OFFSETS = (
    PlannedOffset("golden-a", 0, 2, 0, 0, 0, 15, redelivered=15, resume_offset=15),
    PlannedOffset("golden-a", 1, 5, 0, 0, 0, 15, redelivered=15, resume_offset=15),
)


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / name).read_text()))


MEMBER = MemberDescription("m-1", "c-1", "/10.0.0.1", None, 3)


def test_the_documented_example_follows_the_schema() -> None:
    documentation = (SCHEMAS.parent / "json-output.md").read_text(encoding="utf-8")
    section = documentation.split("## `kshare reset-offsets`", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    _validator("reset.schema.json").validate(json.loads(example))


@pytest.mark.parametrize(
    "plan",
    [
        ResetPlan("golden-g", "--to-earliest", OFFSETS, "Stable", (MEMBER,)),
        ResetPlan(
            "golden-g",
            "--to-earliest",
            OFFSETS,
            "Empty",
            executed=True,
            group_error=KafkaError.of(ErrorCode.non_empty_group, "The group is not empty."),
        ),
    ],
    ids=["members-when-planned", "broker-answered-non-empty"],
)
def test_a_refused_reset_reads_refused_everywhere_but_plain(plan: ResetPlan) -> None:
    assert plan.refusal == "not_empty"
    document = reset_document(plan)
    _validator("reset.schema.json").validate(document)
    assert document["reason"] == "not_empty"
    assert [row["result"] for row in reset_rows(plan)] == ["refused", "refused"]
    for row in reset_rows(plan):
        _validator("reset-row.schema.json").validate(row)
    table = render_reset(plan, "table", width=200)
    assert table.count(" refused") == 2 and "Dry run" not in table
    assert "Refused: the group is not empty" in table
    assert render_reset(plan, "plain") == ""


def test_the_confirmation_table_has_no_dry_run_footer() -> None:
    plan = ResetPlan("golden-g", "--to-earliest", OFFSETS, "Empty")
    assert "Dry run: nothing changed" in render_reset(plan, "table", width=200)
    asked = render_reset(plan, "table", width=200, confirming=True)
    assert "Plan (--to-earliest): skips 0 record(s), re-delivers 30 " in asked
    assert "Dry run" not in asked and reset_document(plan)["reason"] is None
