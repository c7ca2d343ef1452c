"""The output formats every renderer offers, and the encoders they share.

Renderers are pure: they return the text and the command writes it, so tests
compare strings and nothing here knows about terminals or streams. Rich and
PyYAML are imported only when a table or YAML is asked for, which keeps the
plain and JSON paths (scripts, cron) quick to start. A table whose columns fit
is laid out here, in Rich's layout (``layout_table``): Rich's own ``Table`` is
only asked to fold columns to a narrow terminal, as it takes seconds over
thousands of rows.
"""

from __future__ import annotations

import base64
import csv
import enum
import io
import json
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kshare_cli.output_format import OutputFormat as OutputFormat

if TYPE_CHECKING:
    from rich.table import Table

    from kshare_cli.admin.models import GroupFailure

G = TypeVar("G")

#: Used when a caller gives no terminal width (a pipe, a file, a test): in effect
#: unbounded, so a table is as wide as its content and no id is ever folded.
DEFAULT_TABLE_WIDTH = 4096


def output_format(fmt: OutputFormat | str) -> OutputFormat:
    """Accept the enum or its value, so callers can pass a CLI option straight through."""
    if isinstance(fmt, OutputFormat):
        return fmt
    return OutputFormat(str(fmt.value if isinstance(fmt, enum.Enum) else fmt).lower())


def dispatch(
    fmt: OutputFormat | str,
    *,
    plain: Callable[[], str],
    table: Callable[[], str],
    document: Callable[[], Any],
    rows: Callable[[], Iterable[Mapping[str, Any]]],
    csv_header: Sequence[str],
    csv_rows: Callable[[], Iterable[Sequence[Any]]],
) -> str:
    """One model in ``fmt``: every renderer supplies its views, this picks one.

    json and yaml are the same document; only the chosen view is computed.
    """
    match output_format(fmt):
        case OutputFormat.plain:
            return plain()
        case OutputFormat.table:
            return table()
        case OutputFormat.json:
            return to_json(document())
        case OutputFormat.yaml:
            return to_yaml(document())
        case OutputFormat.jsonl:
            return to_jsonl(rows())
        case OutputFormat.csv:
            return to_csv(csv_header, csv_rows())


def to_json(document: Any) -> str:
    """One JSON document, indented for people, newline-terminated for shells."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def to_jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    """One compact JSON object per line (``jq -c``-style), for streaming tools."""
    return "".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows
    )


def to_yaml(document: Any) -> str:
    import yaml

    return str(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """RFC 4180 CSV with a header row; None becomes an empty cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if cell is None else cell for cell in row])
    return buffer.getvalue()


def put_bytes(document: dict[str, Any], name: str, value: bytes | None) -> None:
    """A record's key, value or header value in a JSON object: text when it is UTF-8, else
    base64 with ``<name>_encoding: "base64"`` beside it, as ``consume -o jsonl`` writes them."""
    if value is None:
        document[name] = None
        return
    try:
        document[name] = value.decode("utf-8")
    except UnicodeDecodeError:
        document[name] = base64.b64encode(value).decode("ascii")
        document[f"{name}_encoding"] = "base64"


def bytes_text(value: bytes) -> str:
    """Record bytes in a table cell: the text when they are UTF-8, else ``base64:`` and the
    base64, so a cell never hides that it is not the bytes themselves."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(value).decode("ascii")


def error_document(error: Any) -> dict[str, Any] | None:
    """A ``KafkaError`` as JSON: code, Kafka's name, the broker's message."""
    if error is None:
        return None
    return {"code": error.code, "name": error.name, "message": error.message}


def error_cell(error: Any) -> str | None:
    """A ``KafkaError`` in one CSV cell."""
    return None if error is None else str(error)


def failed_group_csv_row(group_id: str, error: Any, header: Sequence[str]) -> tuple[Any, ...]:
    """A group that failed, as one CSV row under ``header``: its id first, its error in the
    last column, the cells between empty."""
    return (group_id, *([None] * (len(header) - 2)), error_cell(error))


def per_group_csv_rows(
    results: Iterable[G | GroupFailure],
    header: Sequence[str],
    rows_of: Callable[[G], Iterable[tuple[Any, ...]]],
) -> list[tuple[Any, ...]]:
    """Each group's CSV rows in turn (``rows_of``), a group that failed as one row naming
    its error (:func:`failed_group_csv_row`): a script sees every group it asked for."""
    from kshare_cli.admin.models import GroupFailure  # loaded already: the results hold it

    rows: list[tuple[Any, ...]] = []
    for result in results:
        if isinstance(result, GroupFailure):
            rows.append(failed_group_csv_row(result.group_id, result.error, header))
        else:
            rows.extend(rows_of(result))
    return rows


class TextTable:
    """A table of literal cell texts, in the look of Kafka's tools; ``table_text`` lays it out.

    Built by ``new_table`` and ``add_row``. It holds plain strings, not Rich objects,
    so a large table that fits its width is laid out directly (``layout_table``) and
    Rich is imported only when columns must fold to a narrow terminal.
    """

    __slots__ = ("headers", "right", "rows", "sections")

    def __init__(self, headers: Sequence[str], right: Sequence[bool]) -> None:
        self.headers: tuple[str, ...] = tuple(headers)
        #: Per column: right-justified (numbers) rather than left-justified.
        self.right: tuple[bool, ...] = tuple(right)
        self.rows: list[tuple[str, ...]] = []
        #: Per row: a section ends after it (a blank line, unless it is the last row).
        self.sections: list[bool] = []

    def __repr__(self) -> str:
        return (
            f"TextTable(headers={self.headers!r}, right={self.right!r}, "
            f"rows={self.rows!r}, sections={self.sections!r})"
        )


def new_table(*columns: str, right: Iterable[str] = ()) -> TextTable:
    """A borderless table in the look of Kafka's tools: upper-case headers, no colour."""
    right_set = set(right)
    return TextTable(columns, [column in right_set for column in columns])


def add_row(table: TextTable, values: Sequence[object], *, end_section: bool = False) -> None:
    """Add cells as literal text (``None`` is ``-``): a group id like ``[x]`` is not markup."""
    table.rows.append(tuple(or_dash(value) for value in values))
    table.sections.append(end_section)


def table_text(table: TextTable, width: int | None, notes: Sequence[str] = ()) -> str:
    """The table as text: no colour, no terminal probing, trailing spaces trimmed.

    ``width`` is the terminal's width when there is one; columns then fold to fit.
    ``notes`` follow the table, one paragraph each, wrapped to ``width`` if given
    (not to the table's width, which may be narrow).
    """
    lines = layout_table(table, width)
    if lines is None:
        lines = rich_table_lines(table, width)
    for note in notes:
        lines.extend(textwrap.wrap(note, width) if width else [note])
    return "\n".join(lines) + "\n"


def layout_table(table: TextTable, width: int | None) -> list[str] | None:
    """The table's lines, laid out directly, exactly as ``rich_table_lines`` would give them.

    None when Rich is needed: the columns do not fit in ``width`` (they must fold), or
    a cell holds something other than printable text (a tab, a newline, a control or
    format character) whose width and line breaking only Rich knows. Otherwise this is
    Rich's layout for ``rich_table`` (``box.SIMPLE_HEAD``, no edge, ``pad_edge=False``,
    ``padding=(0, 1, 0, 0)``): each column as wide as its widest cell (in terminal
    cells, so wide characters count twice) plus one space of right padding (none on
    the last column), columns divided by a space, a rule of ``─`` under the header, a
    blank line after a row that ends a section (unless it is the last row), numbers
    right-justified with their trailing spaces dropped, every line right-trimmed.
    """
    count = len(table.headers)
    if not count or any(len(row) > count for row in table.rows):
        return None
    lines = [table.headers, *table.rows]
    sizes: list[list[int]] = []
    widths = [0] * count
    for cells in lines:
        row_sizes = []
        for column, text in enumerate(cells):
            if text.isascii():
                if not text.isprintable():
                    return None
                size = len(text)
            elif text.isprintable():
                size = _cell_len(text)
            else:
                return None
            row_sizes.append(size)
            if size > widths[column]:
                widths[column] = size
        sizes.append(row_sizes)
    last = count - 1
    # Rich's column widths include the padding, and a column never collapses below 1.
    padded = [size + (column < last) or 1 for column, size in enumerate(widths)]
    available = (width or DEFAULT_TABLE_WIDTH) - last
    if sum(padded) > available:
        return None
    content = [size - (column < last) for column, size in enumerate(padded)]
    right = table.right
    rule = "\u2500" * (sum(padded) + last)
    out: list[str] = []
    for index, (cells, row_sizes) in enumerate(zip(lines, sizes, strict=True)):
        parts = []
        for column, text in enumerate(cells):
            room = content[column]
            if not room:
                # Only zero-width text (a lone combining mark): Rich renders nothing in 0 cells.
                parts.append("")
            elif right[column]:
                # Rich right-justifies a cell's text with its trailing whitespace dropped.
                stripped = text.rstrip()
                size = row_sizes[column] if stripped == text else _cell_len(stripped)
                parts.append(" " * (room - size) + stripped)
            else:
                parts.append(text + " " * (room - row_sizes[column]))
        # Cells a short row lacks are blank; the padding and dividers are all spaces.
        out.append("  ".join(parts).rstrip())
        if index == 0:
            out.append(rule)
        elif table.sections[index - 1] and index < len(lines) - 1:
            out.append("")
    return out


def _cell_len(text: str) -> int:
    """The terminal cells of non-ASCII text, by Rich's own table of widths.

    Imported here, on the first such cell, so that an all-ASCII table (``kshare
    list`` of ASCII group ids) loads no Rich at all.
    """
    from rich.cells import cell_len

    return cell_len(text)


def rich_table(table: TextTable) -> Table:
    """The Rich ``Table`` for ``table``: what ``table_text`` renders when columns must fold."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rich = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold",
    )
    for header, right in zip(table.headers, table.right, strict=True):
        rich.add_column(header, justify="right" if right else "left", overflow="fold")
    for cells, end_section in zip(table.rows, table.sections, strict=True):
        rich.add_row(*(Text(text) for text in cells), end_section=end_section)
    return rich


def rich_table_lines(table: TextTable, width: int | None) -> list[str]:
    """The table's lines as Rich renders them to ``width`` columns, right-trimmed."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width or DEFAULT_TABLE_WIDTH,
        color_system=None,
        force_terminal=False,
        force_interactive=False,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    console.print(rich_table(table))
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


def java_row(widths: Sequence[int], values: Sequence[object]) -> str:
    """One line of Kafka's ``printf("%-Ns %-Ms ... %s")``: left-justified, the last unpadded."""
    cells = [f"{value!s:<{width}}" for width, value in zip(widths, values[:-1], strict=True)]
    cells.append(str(values[-1]))
    return " ".join(cells)


def or_dash(value: object) -> str:
    """Kafka's MISSING_COLUMN_VALUE for anything unknown."""
    return "-" if value is None else str(value)
