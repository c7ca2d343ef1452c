"""The output formats every renderer offers, and the encoders they share.

Renderers are pure: they return the text and the command writes it, so tests
compare strings and nothing here knows about terminals or streams. Rich and
PyYAML are imported only when a table or YAML is asked for, which keeps the
plain and JSON paths (scripts, cron) quick to start.
"""

from __future__ import annotations

import csv
import enum
import io
import json
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

#: Used when a caller gives no terminal width (a pipe, a file, a test): in effect
#: unbounded, so a table is as wide as its content and no id is ever folded.
DEFAULT_TABLE_WIDTH = 4096


class OutputFormat(enum.StrEnum):
    """``-o``: ``plain`` is Kafka's own text layout; the rest are kshare's."""

    table = "table"
    plain = "plain"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    yaml = "yaml"


def output_format(fmt: OutputFormat | str) -> OutputFormat:
    """Accept the enum or its value, so callers can pass a CLI option straight through."""
    if isinstance(fmt, OutputFormat):
        return fmt
    return OutputFormat(str(fmt.value if isinstance(fmt, enum.Enum) else fmt).lower())


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


def error_document(error: Any) -> dict[str, Any] | None:
    """A ``KafkaError`` as JSON: code, Kafka's name, the broker's message."""
    if error is None:
        return None
    return {"code": error.code, "name": error.name, "message": error.message}


def error_cell(error: Any) -> str | None:
    """A ``KafkaError`` in one CSV cell."""
    return None if error is None else str(error)


def new_table(*columns: str, right: Iterable[str] = ()) -> Table:
    """A borderless table in the look of Kafka's tools: upper-case headers, no colour."""
    from rich import box
    from rich.table import Table

    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold",
    )
    right_set = set(right)
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in right_set else "left",
            overflow="fold",
        )
    return table


def table_text(table: Table, width: int | None, notes: Sequence[str] = ()) -> str:
    """A Rich table as text: no colour, no terminal probing, trailing spaces trimmed.

    ``width`` is the terminal's width when there is one; columns then fold to fit.
    ``notes`` follow the table, one paragraph each, wrapped to ``width`` if given
    (not to the table's width, which may be narrow).
    """
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
    console.print(table)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    for note in notes:
        lines.extend(textwrap.wrap(note, width) if width else [note])
    return "\n".join(lines) + "\n"


def java_row(widths: Sequence[int], values: Sequence[object]) -> str:
    """One line of Kafka's ``printf("%-Ns %-Ms ... %s")``: left-justified, the last unpadded."""
    cells = [f"{value!s:<{width}}" for width, value in zip(widths, values[:-1], strict=True)]
    cells.append(str(values[-1]))
    return " ".join(cells)


def or_dash(value: object) -> str:
    """Kafka's MISSING_COLUMN_VALUE for anything unknown."""
    return "-" if value is None else str(value)


def add_row(table: Table, values: Sequence[object], *, end_section: bool = False) -> None:
    """Add cells as literal text: a group id like ``[x]`` must not be read as Rich markup."""
    from rich.text import Text

    table.add_row(*(Text(or_dash(value)) for value in values), end_section=end_section)
