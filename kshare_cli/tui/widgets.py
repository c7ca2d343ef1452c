"""Small pieces the screens share: a table that updates only what changed, the filter box.

A refresh of a thousand share-partitions must cost milliseconds, and most of
their cells do not change between two refreshes. ``TableSync`` remembers the
values each cell was drawn from and touches only the cells whose values
differ; the table is rebuilt only when rows appear, disappear or reorder.
``FastTable`` takes all of a refresh's changed cells in one call (DataTable's
``update_cell`` repaints once per cell: 4,000 changed cells cost 200 ms), and
``LazyCell`` leaves a costly cell (a window strip) undrawn until the table
draws its row, so the rows scrolled out of sight cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import DataTable, Input
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowKey

__all__ = ["FastTable", "FilterInput", "LazyCell", "RowsView", "TableSync"]

Render = Callable[[int, Any], RenderableType]


class LazyCell:
    """A cell whose text is built the first time the table draws it, then kept.

    It measures as its column's width without being built, so adding a
    thousand rows does not draw a thousand strips. Its segments are kept too:
    every refresh invalidates the table's render caches, and a row whose
    values did not change is then drawn again from them instead of through
    Rich's text layout.
    """

    __slots__ = ("_build", "_segments", "_text", "_width")

    def __init__(self, build: Callable[[], Text], width: int) -> None:
        self._build = build
        self._width = width
        self._text: Text | None = None
        self._segments: tuple[int, list[Segment]] | None = None

    @property
    def text(self) -> Text:
        if self._text is None:
            self._text = self._build()
        return self._text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cached = self._segments
        if cached is None or cached[0] != options.max_width:
            segments = list(self.text.__rich_console__(console, options))
            cached = self._segments = (options.max_width, segments)
        yield from cached[1]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self._width, self._width)


class FastTable(DataTable[Any]):
    """A DataTable that takes many cell updates at the cost of one repaint."""

    def update_rows(self, updates: Iterable[tuple[str, dict[ColumnKey, Any]]]) -> None:
        """Set cells of many rows (row key -> {column key: value}); one repaint for all.

        The same bookkeeping as ``DataTable.update_cell`` (the cell's value, the
        update count that invalidates the render caches), without its repaint
        per cell; column widths stay as set (the dashboard's columns are fixed).
        DataTable has no public batch update, so this writes its private ``_data``,
        ``_column_locations`` and ``_update_count``: pyproject.toml bounds textual for
        them and tests/test_third_party_bounds.py checks them against update_cell.
        """
        data = self._data
        columns = self._column_locations
        changed = False
        for row, cells in updates:
            stored = data.get(RowKey(row))
            if stored is None or any(column not in columns for column in cells):
                raise CellDoesNotExist(f"no cells {list(cells)} in row {row!r}")
            stored.update(cells)
            changed = True
        if changed:
            self._update_count += 1
            self.refresh()


class TableSync:
    """Keeps a FastTable in step with rows of plain values, redrawing only changed cells.

    ``render(column, value)`` turns a column's value into what the table draws;
    it runs only when the table draws the cell (``LazyCell``), so cells of rows
    scrolled out of sight are never drawn, and a costly cell (a window strip)
    is drawn once per change of its value, not once per refresh.
    """

    def __init__(self, table: FastTable, columns: Sequence[ColumnKey], render: Render) -> None:
        self.table = table
        self._columns = tuple(columns)
        self._widths = tuple(max(table.columns[column].width, 1) for column in columns)
        self._render = render
        self._values: dict[str, tuple[Any, ...]] = {}
        self._order: list[str] = []

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self._order)

    def cursor_key(self) -> str | None:
        table = self.table
        if not self._order or table.row_count == 0:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        return self._order[row]

    def _cell(self, index: int, value: Any) -> LazyCell:
        render = self._render
        return LazyCell(lambda: _as_text(render(index, value)), self._widths[index])

    def sync(self, rows: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
        keys = [key for key, _ in rows]
        if keys != self._order:
            self.rebuild(rows)
            return
        values = self._values
        columns = self._columns
        cell = self._cell
        updates = []
        for key, new in rows:
            old = values[key]
            if old == new:
                continue
            updates.append(
                (
                    key,
                    {
                        columns[index]: cell(index, after)
                        for index, (before, after) in enumerate(zip(old, new, strict=True))
                        if before != after
                    },
                )
            )
            values[key] = new
        self.table.update_rows(updates)

    def rebuild(self, rows: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
        """Draw every row again (new rows, a filter, a new width), keeping the cursor's row."""
        table = self.table
        cursor = self.cursor_key()
        table.clear()
        cell = self._cell
        for key, values in rows:
            table.add_row(*(cell(index, value) for index, value in enumerate(values)), key=key)
        self._values = dict(rows)
        self._order = [key for key, _ in rows]
        if cursor is not None and cursor in self._values:
            table.move_cursor(row=self._order.index(cursor), animate=False, scroll=True)

    def forget(self) -> None:
        """The next sync rebuilds (e.g. the renderer's width changed)."""
        self._order = []
        self._values = {}


def _as_text(renderable: RenderableType) -> Text:
    if isinstance(renderable, Text):
        return renderable
    if isinstance(renderable, LazyCell):
        return renderable.text
    return Text(str(renderable), end="")


class RowsView(ScrollView, can_focus=True):
    """A list of one-line rows drawn with Textual's line API: 10,000 rows, drawn as seen.

    The group screen's share-partition table. A DataTable draws every visible
    cell through Rich's padding and styling again whenever any cell changes
    (30 rows: 50-80 ms, most of a refresh); here each row is one line built
    once per change of its values (``render(values) -> segments``, called only
    for rows on screen) and kept as a ready ``Strip``, so a refresh costs the rows
    whose values changed and came into view, and a repaint costs nothing else.

    A row's values are asked for only when it is drawn, or compared because it
    was (``show``'s ``value_of``): a refresh of 10,000 share-partitions builds
    the values of the thirty on screen, not of the 10,000.
    Keys: up/down, page up/down, home/end move the cursor; enter selects.
    """

    DEFAULT_CSS = """
    RowsView { height: 1fr; }
    RowsView > .rows--cursor { background: $accent 40%; text-style: bold; }
    RowsView:focus > .rows--cursor { background: $accent; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"rows--cursor"}

    BINDINGS: ClassVar[list[Any]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    class Selected(Message):
        """Enter (or a click) on a row."""

        def __init__(self, view: RowsView, key: str) -> None:
            super().__init__()
            self.view = view
            self.key = key

        @property
        def control(self) -> RowsView:
            return self.view

    cursor_row: reactive[int] = reactive(0)

    def __init__(self, render: Callable[[Any], list[Segment]], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._render_row = render
        self._order: list[str] = []
        self._index: dict[str, int] = {}
        self._value_of: Callable[[int], Any] = _no_values
        #: The values each kept line was drawn from.
        self._values: dict[str, Any] = {}
        self._lines: dict[str, list[Segment]] = {}
        self._strips: dict[str, Strip] = {}
        self._width = 0

    # -- data --------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self._order)

    def cursor_key(self) -> str | None:
        if not self._order:
            return None
        return self._order[min(max(self.cursor_row, 0), len(self._order) - 1)]

    def row_segments(self, key: str) -> list[Segment]:
        """The row as drawn (built now if it has not been shown yet)."""
        line = self._lines.get(key)
        if line is None:
            values = self._values[key] = self._value_of(self._index[key])
            line = self._lines[key] = self._render_row(values)
        return line

    def row_plain(self, key: str) -> str:
        return "".join(segment.text for segment in self.row_segments(key))

    def sync(self, rows: Sequence[tuple[str, Any]]) -> None:
        """Show these rows (key, values), in this order; only changed rows are drawn again."""
        self.show([key for key, _ in rows], lambda index: rows[index][1])

    def show(self, keys: Sequence[str], value_of: Callable[[int], Any]) -> None:
        """Show the rows of these keys, in this order; ``value_of(index)`` gives a row's values.

        Only the lines on screen are kept, and only if their values did not
        change; the other rows are asked for their values when they come into view.
        """
        cursor = self.cursor_key()
        order = list(keys)
        reordered = order != self._order
        if reordered:
            self._order = order
            self._index = {key: index for index, key in enumerate(order)}
        self._value_of = value_of
        index = self._index
        values = self._values
        lines = self._lines
        strips = self._strips
        top = self.scroll_offset.y
        bottom = top + self.size.height
        redrawn = False
        for key in list(lines):
            position = index.get(key)
            if position is not None and top <= position < bottom:
                if value_of(position) == values[key]:
                    continue
                redrawn = True
            del lines[key]
            del values[key]
            strips.pop(key, None)
        if reordered:
            self.virtual_size = Size(self._width, len(order))
            if cursor is not None and cursor in index:
                self.move_cursor(index[cursor])
            else:
                self.move_cursor(self.cursor_row)
        if reordered or redrawn:
            self.refresh()

    def clear_cache(self) -> None:
        """Draw every row again (its renderer's layout changed)."""
        self._lines.clear()
        self._values.clear()
        self._strips.clear()
        self.refresh()

    # -- drawing -----------------------------------------------------------------

    def on_resize(self) -> None:
        self._width = self.scrollable_content_region.width
        self.virtual_size = Size(self._width, len(self._order))
        self._strips.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if not 0 <= index < len(self._order):
            return Strip.blank(width, base)
        key = self._order[index]
        strip = self._strips.get(key)
        if strip is None:
            strip = Strip(list(Segment.apply_style(self.row_segments(key), base)))
            self._strips[key] = strip
        strip = strip.crop_extend(scroll_x, scroll_x + width, base)
        if index == self.cursor_row:
            strip = strip.apply_style(self.get_component_rich_style("rows--cursor"))
        return strip

    # -- cursor ------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        last = len(self._order) - 1
        self.cursor_row = min(max(row, 0), max(last, 0))
        self.scroll_to_region(Region(0, self.cursor_row, 1, 1), animate=False, immediate=True)

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh()

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(self.size.height - 1, 1))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self._order) - 1 if end else 0)

    def action_select(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(self.Selected(self, key))

    def on_click(self, event: events.Click) -> None:
        row = self.scroll_offset.y + event.y
        if 0 <= row < len(self._order):
            already = row == self.cursor_row
            self.move_cursor(row)
            if already or event.chain > 1:
                self.action_select()


def _no_values(index: int) -> Any:
    raise IndexError(index)


class FilterInput(Input):
    """The ``/`` box: filters rows as you type; enter keeps the filter, escape clears it.

    Opened again, it shows the filter in force with the cursor after it, so the
    next key refines the filter instead of replacing it (an Input selects all of
    its text when focused, and the first key typed over the selection).
    """

    DEFAULT_CSS = """
    FilterInput { dock: bottom; height: 3; display: none; }
    FilterInput.-shown { display: block; }
    """

    BINDINGS = [Binding("escape", "cancel", "Clear filter", show=False)]

    class Cancelled(Message):
        """Escape in the box: the filter was dropped."""

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(placeholder=placeholder, id=id, select_on_focus=False)

    def open(self) -> None:
        self.add_class("-shown")
        self.focus()
        self.cursor_position = len(self.value)

    def close(self) -> None:
        self.remove_class("-shown")

    def action_cancel(self) -> None:
        self.value = ""
        self.close()
        self.post_message(self.Cancelled())
