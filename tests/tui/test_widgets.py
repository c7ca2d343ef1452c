"""The group screen's line layout and its rows widget: what makes a 1,000-row refresh cheap."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.console import Console
from rich.segment import Segment
from textual.app import App, ComposeResult

from kshare_cli.render.inflight import strip_text
from kshare_cli.state.window import WindowCell, WindowState
from kshare_cli.tui.group_screen import (
    COLUMN_LABELS,
    column_widths,
    lay_out,
    split_line,
    text_segments,
)
from kshare_cli.tui.widgets import RowsView


def test_a_line_lays_out_cells_in_columns_and_reads_back() -> None:
    widths = column_widths(120)
    assert sum(widths) + 2 * (len(widths) - 1) == 118  # the scrollbar keeps two
    cells: list[Any] = [(value, "") for value in ("a-very-long-topic-name", "3", "10", "55")]
    cells += [("17", ""), ("2m05s", ""), ("▁█", "cyan"), ("", ""), ("3", ""), ("1m15s", "")]
    plain = "".join(segment.text for segment in lay_out(cells, widths))
    assert len(plain) == 118
    fields = split_line(plain, widths)
    assert list(fields) == list(COLUMN_LABELS)
    assert fields["TOPIC"] == "a-very-long-topi"  # cut to its 16 columns
    assert fields["START"] == "10" and fields["SINCE MOVED"] == "1m15s"
    assert fields["TIME LAG"] == "2m05s"
    assert plain.index("10") > plain.index("3")  # numbers are right-aligned


def test_strip_segments_are_the_strip_rich_draws() -> None:
    """The rows draw inflight's strip_text without Rich's layout: the same characters and styles."""
    cells = [
        WindowCell(0, 0, WindowState.ACKNOWLEDGED, 1),
        WindowCell(1, 1, WindowState.AVAILABLE, 4),
        WindowCell(2, 2, WindowState.ARCHIVED, 5),
        WindowCell(3, 3, WindowState.UNRECORDED, 0),
        WindowCell(4, 4, WindowState.UNRECORDED, 0),
    ]
    text = strip_text(cells, 5)
    console = Console(width=40, force_terminal=True, color_system="truecolor")
    expected = [
        (segment.text, segment.style)
        for segment in Segment.simplify(text.render(console))
        if segment.text
    ]
    ours = [(segment.text, segment.style) for segment in Segment.simplify(text_segments(text))]
    assert ours == expected


class _Rows(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.built: list[Any] = []
        self.selected: list[str] = []

    def compose(self) -> ComposeResult:
        yield RowsView(self.render_row, id="rows")

    def render_row(self, values: Any) -> list[Segment]:
        self.built.append(values)
        return [Segment(str(values))]

    def on_rows_view_selected(self, event: RowsView.Selected) -> None:
        self.selected.append(event.key)


def test_rows_are_built_when_shown_and_again_only_when_their_values_change() -> None:
    async def scenario() -> None:
        app = _Rows()
        async with app.run_test(size=(40, 10)) as pilot:
            rows = app.query_one(RowsView)
            rows.focus()
            rows.sync([(f"k{index}", index) for index in range(1000)])
            await pilot.pause()
            assert 0 < len(app.built) <= 10  # only what the screen shows
            app.built.clear()
            rows.sync([(f"k{index}", index + (index == 3)) for index in range(1000)])
            await pilot.pause()
            assert app.built == [4]  # row k3 changed; the others were drawn from cache
            await pilot.press("down", "down", "enter")
            assert app.selected == ["k2"]
            rows.sync([(f"k{index}", index) for index in reversed(range(1000))])
            assert rows.cursor_key() == "k2"  # the cursor follows its row
            await pilot.press("end", "enter")
            assert app.selected[-1] == "k0"
            assert rows.row_plain("k500") == "500"

    asyncio.run(scenario())


def test_show_asks_only_the_rows_on_screen_for_their_values() -> None:
    """10,000 rows whose values all change: a refresh asks the rows in view, not the 10,000."""

    async def scenario() -> None:
        app = _Rows()
        async with app.run_test(size=(40, 10)) as pilot:
            rows = app.query_one(RowsView)
            asked: list[int] = []
            keys = [f"k{index}" for index in range(10_000)]

            def value_of(step: int) -> Any:
                def value(index: int) -> Any:
                    asked.append(index)
                    return (index, step)

                return value

            rows.show(keys, value_of(0))
            await pilot.pause()
            shown = sorted(set(asked))
            assert shown and shown == list(range(len(shown))) and len(shown) <= 10
            asked.clear()
            app.built.clear()
            rows.show(keys, value_of(1))
            await pilot.pause()
            assert set(asked) == set(shown)  # compared and drawn again: the rows in view only
            assert app.built == [(index, 1) for index in shown]
            await pilot.press("end")
            assert rows.row_plain("k9999") == "(9999, 1)"
            assert rows.row_count == 10_000

    asyncio.run(scenario())
