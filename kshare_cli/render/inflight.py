"""Rendering ``GroupInflight``: ``kshare inflight``, and the one drawing of a window.

A window is drawn as a strip, one character per ``WindowCell``; the dashboard
draws its strips with the same ``strip_text`` and ``STATE_STYLES``, so a colour or
a character means the same on every screen. The characters differ per state, not
only the colours, so a strip still reads in a pipe, a log or a monochrome terminal:

- ``█`` acknowledged (green);
- ``░ ▒ ▓`` available, a redelivery pending: lighter to darker (yellow to orange)
  as the delivery count nears the group's delivery count limit;
- ``╱`` archiving (Kafka 4.4): on its way to the group's dead-letter queue, half
  of ``╳``: persisted before the DLQ write, archived after it (magenta);
- ``╳`` archived: rejected, or delivered up to the limit (red);
- ``·`` unrecorded: acquired right now, or not delivered yet; the state topic
  does not say which (dim);
- ``∅`` deleted: below the log start offset that retention (or DeleteRecords)
  moved past the start offset, and not finished: gone, never to be delivered
  (dim red).

The table has one line per share-partition, with records per state, DELETED
(from the start offset up to the log start offset, not finished) and QUEUED,
the offsets past the persisted window (and the log start offset) up to the log
end offset (the strip's trailing ``·``): produced, never delivered. json and yaml are
``docs/schemas/inflight.schema.json``, jsonl and csv one row per share-partition
(``inflight-row.schema.json``). Kafka's tool has no such view, so there is no
``plain`` layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.admin.inflight import DEFAULT_DELIVERY_COUNT_LIMIT, GroupInflight, PartitionInflight
from kshare_cli.errors import UsageError
from kshare_cli.render.offsets import lag_text
from kshare_cli.render.output_formats import (
    OutputFormat,
    dispatch,
    error_cell,
    error_document,
    or_dash,
)
from kshare_cli.state.partitioning import kafka_uuid
from kshare_cli.state.window import (
    ACQUIRED_NOT_PERSISTED,
    InFlightWindow,
    WindowCell,
    WindowRun,
    WindowState,
)

if TYPE_CHECKING:
    from rich.text import Text

__all__ = [
    "AVAILABLE_GLYPHS",
    "AVAILABLE_STYLES",
    "CSV_HEADER",
    "DEFAULT_STRIP_WIDTH",
    "LEGEND",
    "STATE_GLYPHS",
    "STATE_STYLES",
    "cell_glyph",
    "cell_style",
    "delivery_level",
    "inflight_document",
    "inflight_rows",
    "render_inflight",
    "retention_notes",
    "strip_plain",
    "strip_text",
]

#: Cells of a strip when the caller does not choose (``kshare inflight --width``).
DEFAULT_STRIP_WIDTH: Final = 40

#: The base Rich style of each state. Available cells get a stronger style as their
#: delivery count rises (``AVAILABLE_STYLES``); this is the lightest of them.
STATE_STYLES: Final[Mapping[WindowState, str]] = {
    WindowState.ACKNOWLEDGED: "green",
    WindowState.AVAILABLE: "yellow",
    WindowState.ARCHIVING: "magenta",
    WindowState.ARCHIVED: "red",
    WindowState.UNRECORDED: "dim",
    WindowState.DELETED: "dim red",
}

#: The character of each state; available cells use ``AVAILABLE_GLYPHS`` by level instead.
STATE_GLYPHS: Final[Mapping[WindowState, str]] = {
    WindowState.ACKNOWLEDGED: "█",
    WindowState.AVAILABLE: "░",
    WindowState.ARCHIVING: "╱",
    WindowState.ARCHIVED: "╳",
    WindowState.UNRECORDED: "·",
    WindowState.DELETED: "∅",
}

#: Available cells by ``delivery_level``: delivered once (or never), more often, on the
#: last attempt before the limit archives them.
AVAILABLE_GLYPHS: Final = ("░", "▒", "▓")
AVAILABLE_STYLES: Final = ("yellow", "bold yellow", "bold dark_orange")

LEGEND: Final = (
    "█ acknowledged  ░▒▓ available, darker as the delivery count nears the limit  "
    "╱ archiving (on its way to the dead-letter queue)  ╳ archived  · unrecorded  "
    "∅ deleted by retention"
)

#: The window document's figures a row carries under their own names.
_WINDOW_SUMMARY_COLUMNS: Final = (
    "delivery_complete_count",
    "available",
    "acknowledged",
    "archived",
    "unrecorded",
    "queued",
    "max_delivery_count",
)
CSV_HEADER: Final = (
    "group_id",
    "topic",
    "partition",
    "topic_id",
    "start_offset",
    "end_offset",
    "lag",
    "lag_source",
    "window_start_offset",
    "window_end_offset",
    *_WINDOW_SUMMARY_COLUMNS,
    "error",
    "archiving",
    "log_start_offset",
    "deleted",
    "offsets_note",
)


# --------------------------------------------------------------------------- strips


def delivery_level(delivery_count: int, max_limit: int | None) -> int:
    """How urgent an available cell is: 0 delivered at most once, 2 on its last attempt, else 1.

    A record whose delivery count has reached ``limit - 1`` is archived by its next
    release or lock timeout; those are what an operator looks for first.
    """
    limit = DEFAULT_DELIVERY_COUNT_LIMIT if max_limit is None else max_limit
    if delivery_count <= 1:
        return 0
    if delivery_count >= limit - 1:
        return 2
    return 1


def cell_glyph(cell: WindowCell, max_limit: int | None) -> str:
    if cell.state is WindowState.AVAILABLE:
        return AVAILABLE_GLYPHS[delivery_level(cell.delivery_count, max_limit)]
    return STATE_GLYPHS[cell.state]


def cell_style(cell: WindowCell, max_limit: int | None) -> str:
    if cell.state is WindowState.AVAILABLE:
        return AVAILABLE_STYLES[delivery_level(cell.delivery_count, max_limit)]
    return STATE_STYLES[cell.state]


def strip_plain(cells: Sequence[WindowCell], max_limit: int | None) -> str:
    """The strip's characters without styles (pipes, files, tests)."""
    return "".join(cell_glyph(cell, max_limit) for cell in cells)


def strip_text(cells: Sequence[WindowCell], max_limit: int | None) -> Text:
    """The strip as Rich ``Text``: one character per cell, styled by state and delivery count.

    ``max_limit`` is the group's delivery count limit (None: Kafka's default, 5).
    """
    from rich.text import Text

    text = Text(no_wrap=True, overflow="crop", end="")
    for cell in cells:
        text.append(cell_glyph(cell, max_limit), cell_style(cell, max_limit))
    return text


def partition_cells(partition: PartitionInflight, width: int) -> tuple[WindowCell, ...]:
    """The cells of a share-partition's strip: its window up to the log end offset."""
    if partition.window is None:
        return ()
    return partition.window.cells(width, partition.end_offset)


# --------------------------------------------------------------------------- entry point


def render_inflight(
    model: GroupInflight,
    fmt: OutputFormat | str,
    *,
    strip_width: int = DEFAULT_STRIP_WIDTH,
    color: bool = False,
) -> str:
    """``model`` in ``fmt``; ``color`` adds ANSI styles to the table's strips (a terminal)."""
    return dispatch(
        fmt,
        plain=_no_plain,
        table=lambda: _table(model, strip_width, color),
        document=lambda: inflight_document(model),
        rows=lambda: inflight_rows(model),
        csv_header=CSV_HEADER,
        csv_rows=lambda: _csv_rows(model),
    )


def _no_plain() -> str:
    raise UsageError(
        "-o plain: kafka-share-groups.sh has no in-flight view to reproduce; "
        "use table, json, jsonl, csv or yaml"
    )


# --------------------------------------------------------------------------- table

_HEADERS: Final = (
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
)
_STRIP_COLUMN: Final = 2
_LEFT: Final = frozenset({0, _STRIP_COLUMN})


def _counts(partition: PartitionInflight) -> list[str]:
    """Records per state, DELETED, then QUEUED (the strip's trailing ``·``).

    DELETED counts the offsets from the start offset up to the log start offset that
    were not finished (``-`` when the log start offset is unknown); QUEUED what lies
    past the persisted window and the log start offset up to the log end offset:
    produced, never delivered; ``-`` when the log end offset is unknown.
    """
    window = partition.window
    if window is None:
        return ["-"] * 8
    return [
        str(window.available),
        str(window.acknowledged),
        str(window.archiving),
        str(window.archived),
        str(window.unrecorded),
        or_dash(partition.deleted),
        or_dash(partition.queued),
        str(window.max_delivery_count),
    ]


def _table(model: GroupInflight, strip_width: int, color: bool) -> str:
    limit = model.delivery_count_limit
    if not model.partitions:
        return ""  # stdout is data: the command says on stderr why there is none
    rows: list[tuple[list[str], tuple[WindowCell, ...]]] = []
    for partition in model.partitions:
        cells = partition_cells(partition, strip_width)
        window = partition.window
        start = window.start_offset if window is not None else partition.start_offset
        texts = [
            f"{partition.topic}:{partition.partition}",
            or_dash(start if start is None or start >= 0 else None),
            strip_plain(cells, limit),
            or_dash(partition.end_offset),
            *_counts(partition),
            lag_text(partition.lag, partition.lag_source),
        ]
        if partition.error is not None:
            texts[_STRIP_COLUMN] = partition.error.name
            cells = ()
        rows.append((texts, cells))
    widths = [len(header) for header in _HEADERS]
    for texts, _ in rows:
        for column, text in enumerate(texts):
            widths[column] = max(widths[column], len(text))
    # Each line is (text before the strip, the strip's cells, text after it), so that a
    # terminal gets the strip styled and everything else exactly as in a pipe.
    header = _line(list(_HEADERS), widths)
    lines: list[tuple[str, tuple[WindowCell, ...], str]] = [
        (header, (), ""),
        ("─" * len(header), (), ""),
    ]
    for texts, cells in rows:
        if not cells:
            lines.append((_line(texts, widths), (), ""))
            continue
        padded = [
            _pad(text, width, column)
            for column, (text, width) in enumerate(zip(texts, widths, strict=True))
        ]
        before = "  ".join(padded[:_STRIP_COLUMN]) + "  "
        after = (
            padded[_STRIP_COLUMN][len(texts[_STRIP_COLUMN]) :]
            + "  "
            + "  ".join(padded[_STRIP_COLUMN + 1 :])
        )
        lines.append((before, cells, after.rstrip()))
    notes = _notes(model)
    if color:
        return _colored(lines, notes, limit)
    body = [before + strip_plain(cells, limit) + after for before, cells, after in lines]
    return "\n".join([*body, *notes]) + "\n"


def _pad(text: str, width: int, column: int) -> str:
    """Names and the strip are left-justified, numbers right-justified."""
    return text.ljust(width) if column in _LEFT else text.rjust(width)


def _line(texts: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(
        _pad(text, width, column)
        for column, (text, width) in enumerate(zip(texts, widths, strict=True))
    ).rstrip()


def _notes(model: GroupInflight) -> list[str]:
    limit = model.delivery_count_limit
    scale = (
        f"limit {limit}"
        if limit is not None
        else f"limit unknown, {DEFAULT_DELIVERY_COUNT_LIMIT} assumed"
    )
    notes = ["", f"{LEGEND} ({scale}).", f"Note: {ACQUIRED_NOT_PERSISTED}."]
    if model.window_note is not None:
        notes.append(f"No windows: {model.window_note}.")
    if model.offsets_note is not None:
        notes.append(f"Offsets: {model.offsets_note}.")
    notes.extend(f"Note: {line}." for line in retention_notes(model))
    return notes


def retention_notes(model: GroupInflight) -> list[str]:
    """One line per share-partition whose start offset is below the log start offset:
    the records in between are gone, not queued (what ``health`` warns of)."""
    lines = []
    for partition in model.partitions:
        log_start = partition.log_start_offset
        start = partition.start_offset
        if log_start is None or start is None or not 0 <= start < log_start:
            continue
        deleted = partition.deleted
        lost = (
            f"{deleted} records were deleted by retention before they were delivered "
            "(DELETED, ∅: never delivered, not queued)"
            if deleted
            else "the records below it were all finished before retention deleted them"
        )
        lines.append(
            f"{partition.topic}:{partition.partition}: start offset {start} is below the "
            f"log start offset {log_start}: {lost}"
        )
    return lines


def _colored(
    lines: Sequence[tuple[str, tuple[WindowCell, ...], str]],
    notes: Sequence[str],
    limit: int | None,
) -> str:
    import io

    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=True,
        width=100_000,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    for before, cells, after in lines:
        line = Text(before, no_wrap=True, end="")
        if cells:
            line.append_text(strip_text(cells, limit))
        line.append(after)
        console.print(line, soft_wrap=True)
    for note in notes:
        console.print(Text(note), soft_wrap=True)
    return buffer.getvalue()


# --------------------------------------------------------------------------- structured


def _run_document(run: WindowRun) -> dict[str, Any]:
    return {
        "first_offset": run.first_offset,
        "last_offset": run.last_offset,
        "state": run.state.value,
        "delivery_count": run.delivery_count,
    }


def _window_document(partition: PartitionInflight, window: InFlightWindow) -> dict[str, Any]:
    end_offset = partition.end_offset
    return {
        "start_offset": window.start_offset if window.start_offset >= 0 else None,
        "end_offset": window.end_offset if window.end_offset >= 0 else None,
        "delivery_complete_count": (
            window.delivery_complete_count if window.delivery_complete_count >= 0 else None
        ),
        "available": window.available,
        "acknowledged": window.acknowledged,
        "archiving": window.archiving,
        "archived": window.archived,
        "unrecorded": window.unrecorded,
        "deleted": partition.deleted,
        "queued": None if end_offset is None else window.queued(end_offset),
        "max_delivery_count": window.max_delivery_count,
        "delivery_histogram": [
            {"delivery_count": count, "records": records}
            for count, records in window.delivery_histogram().items()
        ],
        "runs": [_run_document(run) for run in window.runs],
        "snapshot_epoch": window.snapshot_epoch,
        "state_epoch": window.state_epoch,
        "leader_epoch": window.leader_epoch,
        "write_timestamp": window.write_timestamp or None,
    }


def _partition_document(partition: PartitionInflight) -> dict[str, Any]:
    return {
        "topic": partition.topic,
        "partition": partition.partition,
        "topic_id": None if partition.topic_id is None else kafka_uuid(partition.topic_id),
        "start_offset": partition.start_offset,
        "end_offset": partition.end_offset,
        "log_start_offset": partition.log_start_offset,
        "lag": partition.lag,
        "lag_source": partition.lag_source,
        "window": (
            None if partition.window is None else _window_document(partition, partition.window)
        ),
        "window_error": partition.window_error,
        "error": error_document(partition.error),
        "end_offset_error": error_document(partition.end_offset_error),
    }


def inflight_document(model: GroupInflight) -> dict[str, Any]:
    """The group and every share-partition's window (``docs/schemas/inflight.schema.json``)."""
    description = model.description
    return {
        "group_id": model.group_id,
        "state": None if description is None else description.state,
        "members": None if description is None else description.member_count,
        "delivery_count_limit": model.delivery_count_limit,
        "total_lag": model.total_lag,
        "total_lag_source": model.total_lag_source,
        "total_lag_complete": model.total_lag_complete,
        "window_note": model.window_note,
        "offsets_note": model.offsets_note,
        "partitions": [_partition_document(partition) for partition in model.partitions],
    }


def _row(model: GroupInflight, partition: PartitionInflight) -> dict[str, Any]:
    """The row's columns in ``CSV_HEADER``'s order: the ones added with Kafka 4.4's
    ARCHIVING and the log start offset come after ``error``, so that a script reading
    the csv by position still finds every earlier column where it was."""
    window = partition.window
    document = None if window is None else _window_document(partition, window)
    return {
        "group_id": model.group_id,
        "topic": partition.topic,
        "partition": partition.partition,
        "topic_id": None if partition.topic_id is None else kafka_uuid(partition.topic_id),
        "start_offset": partition.start_offset,
        "end_offset": partition.end_offset,
        "lag": partition.lag,
        "lag_source": partition.lag_source,
        "window_start_offset": None if document is None else document["start_offset"],
        "window_end_offset": None if document is None else document["end_offset"],
        **{key: None if document is None else document[key] for key in _WINDOW_SUMMARY_COLUMNS},
        "error": error_document(partition.error),
        "archiving": None if document is None else document["archiving"],
        "log_start_offset": partition.log_start_offset,
        "deleted": partition.deleted,
        "offsets_note": model.offsets_note,
    }


def inflight_rows(model: GroupInflight) -> list[dict[str, Any]]:
    """One object per share-partition (``docs/schemas/inflight-row.schema.json``)."""
    return [_row(model, partition) for partition in model.partitions]


def _csv_rows(model: GroupInflight) -> list[tuple[Any, ...]]:
    rows = []
    for partition in model.partitions:
        row = _row(model, partition)
        row["error"] = error_cell(partition.error)
        rows.append(tuple(row[key] for key in CSV_HEADER))
    return rows
