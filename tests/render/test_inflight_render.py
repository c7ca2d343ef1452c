"""``kshare inflight``'s renderer and the strip the dashboard shares, on hand-built windows.

The windows are built from state batches as the share coordinator persists them
(``InFlightWindow.from_state``), so each strip character below can be checked
against the offsets it stands for.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from rich.text import Text

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import Coordinator, GroupDescription, KafkaError
from kshare_cli.errors import UsageError
from kshare_cli.render.inflight import (
    CSV_HEADER,
    STATE_STYLES,
    render_inflight,
    strip_plain,
    strip_text,
)
from kshare_cli.state.records import DeliveryState, StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import ACQUIRED_NOT_PERSISTED, InFlightWindow, WindowCell, WindowState

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
TOPIC_ID = uuid.UUID("9b6b96d6-fd1c-4e63-b4b7-70f1de4abd67")
ANSI = re.compile(r"\x1b\[[0-9;]*m")

ACK, AVAILABLE, ARCHIVED = (
    DeliveryState.ACKNOWLEDGED,
    DeliveryState.AVAILABLE,
    DeliveryState.ARCHIVED,
)


def _window(start: int, *batches: tuple[int, int, int, int], dcc: int = 0) -> InFlightWindow:
    state = SharePartitionState(
        snapshot_epoch=1,
        state_epoch=0,
        leader_epoch=2,
        start_offset=start,
        delivery_complete_count=dcc,
        create_timestamp=1_700_000_000_000,
        write_timestamp=1_700_000_000_500,
        state_batches=tuple(StateBatch(*batch) for batch in batches),
    )
    return InFlightWindow.from_state(state)


#: offsets 0-3 acknowledged, 4-5 available (delivered twice), 6 archived, 7-8 in no
#: batch (acquired or never delivered), then the log runs on to 12.
WINDOW = _window(0, (0, 3, ACK, 1), (4, 5, AVAILABLE, 2), (6, 6, ARCHIVED, 5), dcc=5)
WINDOW_WITH_GAP = _window(
    0, (0, 3, ACK, 1), (4, 5, AVAILABLE, 2), (6, 6, ARCHIVED, 5), (9, 9, ACK, 1), dcc=6
)


def _group(
    *partitions: PartitionInflight, note: str | None = None, limit: int | None = 5
) -> GroupInflight:
    description = GroupDescription(
        "orders-g", "Stable", Coordinator(1, "localhost", 9092), 3, 3, "simple"
    )
    return GroupInflight("orders-g", description, partitions, note, limit)


def _partition(
    partition: int,
    window: InFlightWindow | None,
    *,
    end: int | None = 12,
    lag: int | None = 6,
    error: KafkaError | None = None,
) -> PartitionInflight:
    return PartitionInflight(
        "orders", partition, TOPIC_ID, 0, end, lag, "broker", window, error=error
    )


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _cell(state: WindowState, delivery_count: int) -> WindowCell:
    return WindowCell(0, 0, state, delivery_count)


# --------------------------------------------------------------------------- strips


def test_one_character_per_cell_in_the_state_of_its_offsets() -> None:
    cells = WINDOW_WITH_GAP.cells(12, 12)
    assert len(cells) == 12
    assert strip_plain(cells, 5) == "████▒▒╳··█··"


def test_strip_text_styles_each_state() -> None:
    cells = [
        _cell(WindowState.ACKNOWLEDGED, 1),
        _cell(WindowState.ARCHIVED, 5),
        _cell(WindowState.AVAILABLE, 1),
        _cell(WindowState.UNRECORDED, 0),
    ]
    text = strip_text(cells, None)
    assert isinstance(text, Text)
    assert text.plain == "█╳░·"
    styles = [str(span.style) for span in text.spans]
    assert styles == ["green", "red", "yellow", "dim"]
    assert styles[0] == STATE_STYLES[WindowState.ACKNOWLEDGED]
    assert styles[1] == STATE_STYLES[WindowState.ARCHIVED]
    assert styles[3] == STATE_STYLES[WindowState.UNRECORDED]


@pytest.mark.parametrize(
    ("limit", "counts", "expected"),
    [
        (None, (1, 2, 3, 4), "░▒▒▓"),  # default limit 5: the 4th delivery is the last but one
        (5, (0, 1, 2, 4), "░░▒▓"),
        (3, (1, 2), "░▓"),
        (10, (2, 8, 9), "▒▒▓"),
    ],
)
def test_available_cells_darken_toward_the_delivery_count_limit(
    limit: int | None, counts: tuple[int, ...], expected: str
) -> None:
    cells = [_cell(WindowState.AVAILABLE, count) for count in counts]
    text = strip_text(cells, limit)
    assert text.plain == expected == strip_plain(cells, limit)
    styles = [str(span.style) for span in text.spans]
    assert all("yellow" in style or "orange" in style for style in styles)
    # intensity never falls as the delivery count rises
    ranks = ["░▒▓".index(char) for char in expected]
    assert ranks == sorted(ranks)


def test_an_empty_or_uninitialised_window_has_an_empty_strip() -> None:
    assert strip_text(InFlightWindow.empty().cells(10, 12), 5).plain == ""
    assert strip_plain(_window(5).cells(10, 5), 5) == ""


def test_a_compressed_strip_covers_the_window_and_the_queued_offsets() -> None:
    # 12 offsets in 4 cells of 3, each showing the most important state it holds: [0-2]
    # ack, [3-5] available before ack, [6-8] one archived among two unrecorded, [9-11] queued.
    assert strip_plain(WINDOW.cells(4, 12), 5) == "█▒╳·"


# --------------------------------------------------------------------------- table


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        if line.startswith("orders:"):
            rows[line.split()[0]] = line.split()
    return rows


def test_table_has_one_line_per_share_partition_with_strip_counts_and_lag() -> None:
    text = render_inflight(
        _group(_partition(0, WINDOW_WITH_GAP), _partition(1, None, lag=None)),
        "table",
        strip_width=12,
    )
    assert "\x1b" not in text
    header = text.splitlines()[0].split()
    assert header == [
        "SHARE-PARTITION",
        "START-OFFSET",
        "WINDOW",
        "END-OFFSET",
        "AVAILABLE",
        "ACKNOWLEDGED",
        "ARCHIVING",
        "ARCHIVED",
        "UNRECORDED",
        "DELETED",
        "QUEUED",
        "MAX-DELIVERY",
        "LAG",
    ]
    rows = _rows(text)
    # The window ends after offset 9; offsets 10 and 11 are queued (the last two ·).
    assert rows["orders:0"] == [
        "orders:0",
        "0",
        "████▒▒╳··█··",
        "12",
        "2",
        "5",
        "0",
        "1",
        "2",
        "-",  # the log start offset was not read
        "2",
        "5",
        "6",
    ]
    # no window: a blank strip and unknown counts, the offsets still shown
    assert rows["orders:1"] == ["orders:1", "0", "12", *["-"] * 9]
    assert ACQUIRED_NOT_PERSISTED in text
    assert "╳ archived  · unrecorded  ∅ deleted by retention (limit 5)." in text


def test_table_columns_line_up() -> None:
    text = render_inflight(
        _group(_partition(0, WINDOW), _partition(10, None)), "table", strip_width=8
    )
    lines = [line for line in text.splitlines() if line.startswith(("SHARE", "orders"))]
    lag_ends = {len(line) for line in lines}
    assert len(lag_ends) == 1, lines  # numbers right-justified to the same edge
    window_column = lines[0].index("WINDOW")
    strip = strip_plain(WINDOW.cells(8, 12), 5)
    assert strip == "██▒╳··"  # 12 offsets at 2 a cell: at most 8 cells, here 6
    assert lines[1][window_column:].startswith(strip + "  ")


def test_table_in_colour_styles_only_the_strip() -> None:
    model = _group(_partition(0, WINDOW))
    plain = render_inflight(model, "table", strip_width=12)
    colored = render_inflight(model, "table", strip_width=12, color=True)
    assert "\x1b[" in colored
    assert ANSI.sub("", colored) == plain


def test_table_notes_an_unreadable_state_topic_and_an_unknown_limit() -> None:
    note = "not authorized to read __share_group_state (needs READ on the topic)"
    text = render_inflight(
        _group(_partition(0, None), note=note, limit=None), "table", strip_width=10
    )
    assert f"No windows: {note}." in text
    assert "(limit unknown, 5 assumed)." in text


def test_a_group_without_share_partitions_has_no_table() -> None:
    # stdout is data: the command says on stderr why there is none.
    assert render_inflight(_group(), "table") == ""


def test_queued_is_unknown_without_a_log_end_offset() -> None:
    text = render_inflight(_group(_partition(0, WINDOW, end=None)), "table", strip_width=12)
    # START-OFFSET WINDOW END-OFFSET AVAILABLE ACKNOWLEDGED ARCHIVING ARCHIVED UNRECORDED
    # DELETED QUEUED ...
    assert _rows(text)["orders:0"][3:11] == ["-", "2", "4", "0", "1", "0", "-", "-"]


def test_a_partition_error_takes_the_place_of_the_strip() -> None:
    error = KafkaError.of(29, "Topic authorization failed.")
    model = _group(_partition(0, None, end=None, lag=None, error=error))
    assert "TOPIC_AUTHORIZATION_FAILED" in _rows(render_inflight(model, "table"))["orders:0"]


def test_plain_is_refused() -> None:
    with pytest.raises(UsageError, match="no in-flight view"):
        render_inflight(_group(_partition(0, WINDOW)), "plain")


# --------------------------------------------------------------------------- structured


def _structured_model() -> GroupInflight:
    error = KafkaError.of(29, "Topic authorization failed.")
    return _group(
        _partition(0, WINDOW_WITH_GAP),
        _partition(1, None, lag=None),
        _partition(2, _window(-1)),
        _partition(3, None, end=None, lag=None, error=error),
    )


def test_json_is_the_window_and_follows_the_schema() -> None:
    document = json.loads(render_inflight(_structured_model(), "json"))
    _validator("inflight.schema.json").validate(document)
    assert yaml.safe_load(render_inflight(_structured_model(), "yaml")) == document
    assert document["group_id"] == "orders-g"
    assert document["state"] == "Stable"
    assert document["delivery_count_limit"] == 5
    # Two lags unknown: the other two (6 + 6) are summed, marked incomplete.
    assert (document["total_lag"], document["total_lag_source"]) == (12, "broker")
    assert document["total_lag_complete"] is False
    first = document["partitions"][0]
    assert first["topic_id"] == "m2uW1v0cTmO0t3Dx3kq9Zw"
    window = first["window"]
    assert {
        key: window[key] for key in ("available", "acknowledged", "archived", "unrecorded")
    } == {
        "available": 2,
        "acknowledged": 5,
        "archived": 1,
        "unrecorded": 2,
    }
    assert window["start_offset"] == 0
    assert window["end_offset"] == 10
    assert window["queued"] == 2
    assert window["delivery_complete_count"] == 6
    assert window["max_delivery_count"] == 5
    assert window["delivery_histogram"] == [
        {"delivery_count": 1, "records": 5},
        {"delivery_count": 2, "records": 2},
        {"delivery_count": 5, "records": 1},
    ]
    assert window["runs"][1] == {
        "first_offset": 4,
        "last_offset": 5,
        "state": "available",
        "delivery_count": 2,
    }
    assert window["runs"][3] == {
        "first_offset": 7,
        "last_offset": 8,
        "state": "unrecorded",
        "delivery_count": 0,
    }
    assert document["partitions"][1]["window"] is None
    uninitialised = document["partitions"][2]["window"]
    assert uninitialised["start_offset"] is None
    assert document["partitions"][3]["error"]["name"] == "TOPIC_AUTHORIZATION_FAILED"


def test_json_carries_the_window_note() -> None:
    note = "the state topic could not be read"
    document = json.loads(render_inflight(_group(_partition(0, None), note=note), "json"))
    _validator("inflight.schema.json").validate(document)
    assert document["window_note"] == note
    assert document["partitions"][0]["window"] is None


def test_jsonl_and_csv_are_one_row_per_share_partition() -> None:
    model = _structured_model()
    validator = _validator("inflight-row.schema.json")
    lines = render_inflight(model, "jsonl").splitlines()
    rows: list[dict[str, Any]] = [json.loads(line) for line in lines]
    for row in rows:
        validator.validate(row)
    assert [row["partition"] for row in rows] == [0, 1, 2, 3]
    assert rows[0]["available"] == 2
    assert rows[0]["archived"] == 1
    assert rows[1]["available"] is None
    assert list(CSV_HEADER) == list(validator.schema["required"]) == list(rows[0])
    records = list(csv.reader(io.StringIO(render_inflight(model, "csv"))))
    assert records[0] == list(CSV_HEADER)
    assert records[1][CSV_HEADER.index("acknowledged")] == "5"
    assert records[2][CSV_HEADER.index("acknowledged")] == ""
    assert records[4][CSV_HEADER.index("error")] == (
        "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."
    )
    # Kafka 4.4's ARCHIVING and the log start offset came after error: the columns
    # before it keep their places for scripts that read the csv by position.
    after_error = CSV_HEADER[CSV_HEADER.index("error") + 1 :]
    assert after_error[:3] == ("archiving", "log_start_offset", "deleted")


def test_the_documented_example_follows_the_schema() -> None:
    documentation = (SCHEMAS.parent / "json-output.md").read_text(encoding="utf-8")
    section = documentation.split("## `kshare inflight`", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    _validator("inflight.schema.json").validate(json.loads(example))
