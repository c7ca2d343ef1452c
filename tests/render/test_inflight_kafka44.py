"""``kshare inflight``'s drawing of Kafka 4.4's ARCHIVING records and of offsets retention
deleted below the group's start offset (issue 25).

ARCHIVING (state 3) is a record persisted on its way to the dead-letter queue: its own
glyph ``╱`` and column, never a KeyError. Offsets from the start offset up to the log
start offset that the group had not finished are gone: ``∅`` and DELETED, not QUEUED.
"""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import GroupDescription
from kshare_cli.render.inflight import CSV_HEADER, LEGEND, render_inflight, strip_plain
from kshare_cli.state.records import DeliveryState, StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def _window(start: int, *batches: tuple[int, int, int, int]) -> InFlightWindow:
    state = SharePartitionState(
        0, 2, 0, start, 0, 0, 0, tuple(StateBatch(*batch) for batch in batches)
    )
    return InFlightWindow.from_state(state)


def _group(*partitions: PartitionInflight) -> GroupInflight:
    description = GroupDescription("dg", "Empty", None, 0, 3, "simple")
    return GroupInflight("dg", description, partitions, None, 5)


def _rows(text: str) -> dict[str, list[str]]:
    lines = text.splitlines()
    return {line.split()[0]: line.split() for line in lines[2:] if line.startswith("golden")}


def _validate(document: object, name: str) -> None:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(document)


# A group left behind by a broker that stopped between the ARCHIVING write and the DLQ
# write: offset 4 rejected (ARCHIVING), 5 over the delivery limit (ARCHIVING, count 5).
ARCHIVING = _window(
    2,
    (2, 3, DeliveryState.ACKNOWLEDGED, 1),
    (4, 4, DeliveryState.ARCHIVING, 1),
    (5, 5, DeliveryState.ARCHIVING, 5),
    (6, 7, DeliveryState.ARCHIVED, 1),
)


def test_archiving_has_its_own_glyph_and_column() -> None:
    partition = PartitionInflight("golden-d", 0, None, 2, 10, 6, "broker", ARCHIVING)
    text = render_inflight(_group(partition), "table", strip_width=20)
    header = text.splitlines()[0].split()
    row = dict(zip(header, _rows(text)["golden-d:0"], strict=True))
    assert row["WINDOW"] == "██╱╱╳╳··"
    assert (row["ARCHIVING"], row["ARCHIVED"], row["ACKNOWLEDGED"]) == ("2", "2", "2")
    assert "╱ archiving (on its way to the dead-letter queue)" in LEGEND
    assert LEGEND in text
    colored = render_inflight(_group(partition), "table", strip_width=20, color=True)
    assert "╱" in colored


def test_archiving_in_json_rows_and_csv() -> None:
    partition = PartitionInflight("golden-d", 0, None, 2, 10, 6, "broker", ARCHIVING)
    document = json.loads(render_inflight(_group(partition), "json"))
    _validate(document, "inflight.schema.json")
    window = document["partitions"][0]["window"]
    assert (window["archiving"], window["archived"]) == (2, 2)
    assert [run["state"] for run in window["runs"]] == [
        "acknowledged",
        "archiving",
        "archiving",
        "archived",
    ]
    (row,) = [json.loads(line) for line in render_inflight(_group(partition), "jsonl").splitlines()]
    _validate(row, "inflight-row.schema.json")
    assert row["archiving"] == 2
    header, values = render_inflight(_group(partition), "csv").splitlines()
    assert header.split(",") == list(CSV_HEADER)
    assert values.split(",")[CSV_HEADER.index("archiving")] == "2"


# Offsets 0-1 acknowledged, 2 released (available), 3-5 never delivered; retention then
# moved the log start offset to 6 (or past the window, to 8).
RETAINED = _window(0, (0, 1, DeliveryState.ACKNOWLEDGED, 1), (2, 2, DeliveryState.AVAILABLE, 1))


def _retained(log_start: int | None) -> PartitionInflight:
    partition = PartitionInflight("golden-d", 1, None, 0, 10, 8, "broker", RETAINED)
    return partition.with_log_start_offset(log_start)


def test_offsets_below_the_log_start_offset_are_deleted_not_queued() -> None:
    text = render_inflight(_group(_retained(6)), "table", strip_width=10)
    header = text.splitlines()[0].split()
    row = dict(zip(header, _rows(text)["golden-d:1"], strict=True))
    assert row["WINDOW"] == "██∅∅∅∅····"
    assert (row["AVAILABLE"], row["UNRECORDED"], row["DELETED"], row["QUEUED"]) == (
        "0",
        "0",
        "4",
        "4",
    )
    assert (
        "Note: golden-d:1: start offset 0 is below the log start offset 6: 4 records were "
        "deleted by retention before they were delivered" in text
    )
    past_the_window = render_inflight(_group(_retained(8)), "table", strip_width=10)
    row = dict(zip(header, _rows(past_the_window)["golden-d:1"], strict=True))
    assert (row["WINDOW"], row["DELETED"], row["QUEUED"]) == ("██∅∅∅∅∅∅··", "6", "2")


def test_without_the_log_start_offset_nothing_is_deleted() -> None:
    text = render_inflight(_group(_retained(None)), "table", strip_width=10)
    header = text.splitlines()[0].split()
    row = dict(zip(header, _rows(text)["golden-d:1"], strict=True))
    assert (row["WINDOW"], row["DELETED"], row["QUEUED"]) == ("██░·······", "-", "7")
    assert "log start offset" not in text
    at_start = render_inflight(_group(_retained(0)), "table", strip_width=10)
    assert dict(zip(header, _rows(at_start)["golden-d:1"], strict=True))["DELETED"] == "0"


def test_deleted_in_json_rows_and_csv() -> None:
    document = json.loads(render_inflight(_group(_retained(6)), "json"))
    _validate(document, "inflight.schema.json")
    (partition,) = document["partitions"]
    assert partition["log_start_offset"] == 6
    window = partition["window"]
    assert (window["deleted"], window["queued"], window["available"]) == (4, 4, 0)
    assert window["runs"][1] == {
        "first_offset": 2,
        "last_offset": 5,
        "state": "deleted",
        "delivery_count": 0,
    }
    (row,) = [
        json.loads(line) for line in render_inflight(_group(_retained(6)), "jsonl").splitlines()
    ]
    _validate(row, "inflight-row.schema.json")
    assert (row["log_start_offset"], row["deleted"], row["queued"]) == (6, 4, 4)
    # Without a window, every offset from the start offset to the log start offset.
    bare = PartitionInflight("golden-d", 1, None, 0, 10, 8, "broker", None)
    (row,) = [
        json.loads(line)
        for line in render_inflight(_group(bare.with_log_start_offset(6)), "jsonl").splitlines()
    ]
    assert (row["deleted"], row["queued"]) == (6, None)


def test_strip_plain_draws_every_state() -> None:
    cells = ARCHIVING.after_retention(5).cells(8, 10)
    # Done records keep their state below the log start offset: only unfinished go.
    assert strip_plain(cells, 5) == "██╱╱╳╳··"
