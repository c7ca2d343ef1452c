"""The group screen: one group's share-partitions, their windows and lag history, and the members.

One row per share-partition: start offset, end offset, lag, the time lag (the
age of the oldest record not yet acknowledged), a sparkline of the lag, the
persisted in-flight window as a strip (the same drawing as ``kshare inflight``:
``render.inflight.strip_text``), the archived count and
how long the start offset has stood still. A share-partition whose lag is
above zero while its start offset has not moved for the stall time is marked
on its row and listed above the table. Below the table, the members: who
they are, where they run, and what they were assigned.

With only DESCRIBE permission the state topic cannot be read: the window
column stays empty and the screen says why instead of drawing nothing.

The time lag costs one peek per share-partition with lag, so it is looked up
beside the refresh, not in it (``TimeLagSource.oldest_unacknowledged``, one
lookup at a time, started by a group answer when none is under way and the
last began ``TIME_LAG_EVERY_S`` ago or more): a slow
or failed lookup leaves the column unknown ("-"), never the rows waiting. The
source answers the records' timestamps, and the rows age them with the
dashboard's clock once a second, as the other ages.

The DLQ line (Kafka 4.4) is looked up the same way (``DeadLetterSource``, at most
every ``DLQ_EVERY_S``): the group's DLQ topic, the dead letters the broker wrote
there for it by reason, the newest one's age on the dashboard's clock.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Final

from rich.cells import cell_len, set_cell_size
from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Header, Input, Static

from kshare_cli.render.inflight import LEGEND, strip_text
from kshare_cli.render.offsets import lag_text, total_lag_text
from kshare_cli.services import health
from kshare_cli.services.dashboard import GroupDeadLetterQueue, GroupInflight, PartitionInflight
from kshare_cli.state.window import ACQUIRED_NOT_PERSISTED, InFlightWindow
from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.lag_history import (
    Flow,
    History,
    completed_key,
    group_key,
    partition_key,
    sparkline,
)
from kshare_cli.tui.live_screen import LiveScreen, one_line
from kshare_cli.tui.partition_screen import PartitionScreen
from kshare_cli.tui.source import DeadLetterSource, TimeLagSource
from kshare_cli.tui.widgets import FastTable, FilterInput, RowsView, TableSync

__all__ = [
    "COLUMN_LABELS",
    "GroupScreen",
    "column_widths",
    "lay_out",
    "partition_row_key",
    "segments_text",
    "split_line",
    "text_segments",
    "window_width_for",
]

#: (label, width, justify); the window column (width 0) takes what the others leave.
_COLUMNS: Final[tuple[tuple[str, int, str], ...]] = (
    ("TOPIC", 16, "left"),
    ("PART", 4, "right"),
    ("START", 9, "right"),
    ("END", 9, "right"),
    ("LAG", 8, "right"),
    ("TIME LAG", 8, "right"),
    ("LAG TREND", 10, "left"),
    ("IN-FLIGHT WINDOW", 0, "left"),
    ("ARCHIVED", 8, "right"),
    ("SINCE MOVED", 11, "right"),
)
COLUMN_LABELS: Final = tuple(label for label, _, _ in _COLUMNS)
_WINDOW_COLUMN: Final = COLUMN_LABELS.index("IN-FLIGHT WINDOW")
_SPARK_WIDTH: Final = _COLUMNS[COLUMN_LABELS.index("LAG TREND")][1]
_GAP: Final = 2
_MIN_WINDOW_WIDTH: Final = 10
# The rows' scrollbar takes two columns.
_TABLE_CHROME: Final = 2
_MEMBER_COLUMNS: Final = (
    ("member", "MEMBER ID", 24),
    ("client", "CLIENT ID", 20),
    ("host", "HOST", 16),
    ("rack", "RACK", 12),
    ("epoch", "EPOCH", 6),
    ("assignment", "ASSIGNMENT", 26),
)
_STALL_LIST_LIMIT: Final = 6
#: The time lag is looked up at most this often (dashboard clock); its ages tick between.
TIME_LAG_EVERY_S: Final = 10.0
#: The least time between two DLQ lookups of the group screen (each reads only the dead
#: letters written since the last; the DLQ line's age follows the clock in between).
DLQ_EVERY_S: Final = 10.0


def dead_letter_line(
    queue: GroupDeadLetterQueue | None, error: str | None, now: float
) -> str | None:
    """The group screen's DLQ line: the topic, the broker's dead letters for the group by
    reason and the newest's age at ``now`` (epoch seconds), or why they are not shown;
    None for a group without a DLQ on a cluster that has none (nothing to say)."""
    if queue is None:
        return None if error is None else f"DLQ: not read: {error}"
    if queue.topic is None:
        if not queue.active:
            return None
        return "DLQ: none (errors.deadletterqueue.topic.name is not set)"
    if queue.records is None:
        return f"DLQ {queue.topic}: {queue.note or 'not read'}"
    floor = "" if queue.complete else "+"
    newest = (
        ""
        if queue.newest_timestamp_ms is None
        else f", newest {fmt.short(max(0.0, now - queue.newest_timestamp_ms / 1000))} ago"
    )
    text = (
        f"DLQ {queue.topic}: {queue.records}{floor} records ({queue.rejected} rejected, "
        f"{queue.delivery_limit} over the delivery limit"
        + (f", {queue.other} other" if queue.other else "")
        + f"){newest}"
    )
    if error is not None:
        text += f" (last lookup failed: {error})"
    elif queue.note is not None:
        text += f" ({queue.note})"
    return text


def partition_row_key(topic: str, partition: int) -> str:
    return f"{topic}\x00{partition}"


def column_widths(screen_width: int) -> tuple[int, ...]:
    """Every column's width; the window strip gets what the others leave of the screen."""
    fixed = sum(width for _, width, _ in _COLUMNS) + _GAP * (len(_COLUMNS) - 1)
    window = max(_MIN_WINDOW_WIDTH, screen_width - _TABLE_CHROME - fixed)
    return tuple(
        window if index == _WINDOW_COLUMN else width for index, (_, width, _) in enumerate(_COLUMNS)
    )


def window_width_for(screen_width: int) -> int:
    return column_widths(screen_width)[_WINDOW_COLUMN]


Cell = tuple[str, str] | Text
"""A cell of a line: plain text and a style name, or styled Text (a window strip)."""


def lay_out(cells: Sequence[Cell], widths: Sequence[int]) -> list[Segment]:
    """One table line as segments: each cell cut or padded to its column, numbers right.

    Segments, not Rich Text: a Text is laid out by Rich on every draw, and a
    refresh of thirty visible rows spent most of its time there.
    """
    line: list[Segment] = []
    gap = Segment(" " * _GAP)
    for index, (cell, width) in enumerate(zip(cells, widths, strict=True)):
        if index:
            line.append(gap)
        if isinstance(cell, Text):
            segments = text_segments(cell)
            length = cell.cell_len
        else:
            plain, style = cell
            if cell_len(plain) > width:
                plain = set_cell_size(plain, width)
            segments = [Segment(plain, _style(style))]
            length = cell_len(plain)
        padding = Segment(" " * max(width - length, 0))
        if _COLUMNS[index][2] == "right":
            line.append(padding)
            line.extend(segments)
        else:
            line.extend(segments)
            line.append(padding)
    return line


@functools.lru_cache(maxsize=256)
def _style(name: str) -> Style | None:
    return Style.parse(name) if name else None


def text_segments(text: Text) -> list[Segment]:
    """A one-line Text of non-overlapping spans (a strip) as segments, without Rich's layout."""
    plain = text.plain
    base = _style(text.style) if isinstance(text.style, str) else text.style
    segments: list[Segment] = []
    position = 0
    for span in sorted(text.spans, key=lambda each: each.start):
        if span.start < position:  # overlapping spans: let Rich resolve them
            return list(text.render(Console(width=max(len(plain), 1))))
        if span.start > position:
            segments.append(Segment(plain[position : span.start], base))
        style = _style(span.style) if isinstance(span.style, str) else span.style
        if base is not None and style is not None:
            style = base + style
        segments.append(Segment(plain[span.start : span.end], style or base))
        position = span.end
    if position < len(plain):
        segments.append(Segment(plain[position:], base))
    return segments


def segments_text(segments: Sequence[Segment]) -> Text:
    """Segments back to Text (the header, which a Static draws)."""
    text = Text(end="")
    for segment in segments:
        text.append(segment.text, segment.style)
    return text


def split_line(line: str, widths: Sequence[int]) -> dict[str, str]:
    """The fields of a drawn table line, by column label (what tests read back)."""
    fields = {}
    position = 0
    for (label, _, _), width in zip(_COLUMNS, widths, strict=True):
        fields[label] = line[position : position + width].strip()
        position += width + _GAP
    return fields


def _right(text: str, style: str = "") -> Text:
    return Text(text, style=style, justify="right", no_wrap=True, end="")


class GroupScreen(LiveScreen[GroupInflight]):
    """One share group, refreshed from ``DashboardSource.group``."""

    class TimeLagRead(Message):
        """A time-lag lookup answered: (topic, partition) -> the oldest unacknowledged
        record's timestamp in epoch milliseconds, None where unknown or nothing waits."""

        def __init__(self, timestamps: Mapping[tuple[str, int], int | None]) -> None:
            super().__init__()
            self.timestamps = timestamps

    class TimeLagFailed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    class DeadLetterQueueRead(Message):
        """A DLQ lookup answered (``DeadLetterSource.dead_letter_queue``), or failed."""

        def __init__(self, queue: GroupDeadLetterQueue | None, error: str | None) -> None:
            super().__init__()
            self.queue = queue
            self.error = error

    DEFAULT_CSS = """
    GroupScreen #summary { height: 1; text-style: bold; }
    GroupScreen #flow { height: 1; }
    GroupScreen #stall { height: auto; color: $error; text-style: bold; display: none; }
    GroupScreen #stall.-shown { display: block; }
    GroupScreen #dlq { height: auto; display: none; }
    GroupScreen #dlq.-shown { display: block; }
    GroupScreen #note { height: auto; color: $text-muted; }
    GroupScreen #note.-missing { color: $warning; }
    GroupScreen #partitions-header { height: 1; }
    GroupScreen #partitions { height: 1fr; }
    GroupScreen #members-title { height: 1; text-style: bold; margin-top: 1; }
    GroupScreen #members { height: auto; max-height: 8; }
    """

    BINDINGS: ClassVar[list[Any]] = [
        Binding("escape", "back", "Back"),
        Binding("slash", "filter", "Filter"),
    ]

    def __init__(self, group_id: str) -> None:
        super().__init__()
        self.group_id = group_id
        self.filter_text = ""
        self._widths = column_widths(80)
        self._limit: int | None = None
        self._partitions: dict[str, PartitionInflight] = {}
        self._rows: RowsView | None = None
        self._members: TableSync | None = None
        self.stalled: tuple[PartitionInflight, ...] = ()
        self._aged_at = 0
        self._oldest_unacknowledged: Mapping[tuple[str, int], int | None] = {}
        self._looking_up_time_lag = False
        self._time_lag_started: float | None = None
        #: Why the last time-lag lookup failed (its column shows "-" meanwhile).
        self.time_lag_error: str | None = None
        #: The group's DLQ as last read (None: not yet, or no DLQ lookup), and why the
        #: last lookup failed.
        self.dead_letter_queue: GroupDeadLetterQueue | None = None
        self.dead_letter_error: str | None = None
        self._looking_up_dlq = False
        self._dlq_started: float | None = None

    # -- layout ----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(f"share group {self.group_id}", id="summary")
        yield Static("", id="flow")
        yield Static("", id="stall")
        yield Static("", id="dlq")
        yield Static("", id="note")
        yield Static("", id="partitions-header")
        yield RowsView(self._render_row, id="partitions")
        yield Static("Members", id="members-title")
        members = FastTable(id="members", cursor_type="none", show_cursor=False)
        members.can_focus = False
        yield members
        yield FilterInput(placeholder="filter share-partitions (topic:partition)", id="filter")
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"group {self.group_id}"
        self._rows = self.query_one("#partitions", RowsView)
        self._widths = column_widths(self.app.size.width)
        self.query_one("#partitions-header", Static).update(self._header())
        members = self.query_one("#members", FastTable)
        member_keys = [
            members.add_column(label, width=width, key=key) for key, label, width in _MEMBER_COLUMNS
        ]
        self._members = TableSync(members, member_keys, _render_member_cell)
        self._rows.focus()
        super().on_mount()

    def _header(self) -> Text:
        return segments_text(lay_out([(label, "bold") for label in COLUMN_LABELS], self._widths))

    def on_resize(self, event: events.Resize) -> None:
        widths = column_widths(event.size.width)
        if widths == self._widths or self._rows is None:
            return
        self._widths = widths
        self.query_one("#partitions-header", Static).update(self._header())
        self._rows.clear_cache()

    @property
    def window_width(self) -> int:
        return self._widths[_WINDOW_COLUMN]

    def row_fields(self, key: str) -> dict[str, str]:
        """The fields of one drawn row, by column label."""
        assert self._rows is not None
        return split_line(self._rows.row_plain(key), self._widths)

    # -- data ------------------------------------------------------------------

    async def fetch(self) -> GroupInflight:
        return await self.dashboard.source.group(self.group_id)

    def partial_note(self, data: GroupInflight) -> str | None:
        """The share-partitions the cluster answered with an error, and the first error."""
        failed = [partition for partition in data.partitions if partition.error is not None]
        if not failed:
            return None
        first = failed[0]
        count = f"{len(failed)} share-partition{'s' if len(failed) != 1 else ''}"
        return f"{count} failed ({first.topic}:{first.partition} {first.error})"

    def apply(self, data: GroupInflight, at: float) -> None:
        dashboard = self.dashboard
        dashboard.record_group(data, at)
        self._limit = data.delivery_count_limit
        self._aged_at = int(dashboard.now())
        self._show_partitions(data, dashboard.now())
        self._show_summary(data, dashboard.now())
        self._show_note(data)
        self._show_members(data)
        self._look_up_time_lag(data)
        self._look_up_dead_letters()

    def _look_up_dead_letters(self) -> None:
        """Start a DLQ lookup, unless one is under way or the last began less than
        ``DLQ_EVERY_S`` ago: each reads only what the DLQ topic got since the last."""
        source = self.dashboard.source
        if self._looking_up_dlq or not isinstance(source, DeadLetterSource):
            return
        now = self.dashboard.now()
        if self._dlq_started is not None and now - self._dlq_started < DLQ_EVERY_S:
            return
        self._dlq_started = now
        self._looking_up_dlq = True
        self.run_worker(self._dead_letters(source), group="dlq", exit_on_error=False)

    async def _dead_letters(self, source: DeadLetterSource) -> None:
        try:
            queue = await source.dead_letter_queue(self.group_id)
        except Exception as error:  # noqa: BLE001 -- said on the DLQ line, the rows stay
            self.post_message(self.DeadLetterQueueRead(None, one_line(error)))
        else:
            self.post_message(self.DeadLetterQueueRead(queue, None))

    def on_group_screen_dead_letter_queue_read(
        self, message: GroupScreen.DeadLetterQueueRead
    ) -> None:
        message.stop()
        self._looking_up_dlq = False
        if message.queue is not None:
            self.dead_letter_queue = message.queue
        self.dead_letter_error = message.error
        self._show_dead_letters(self.dashboard.now())

    def _show_dead_letters(self, now: float) -> None:
        line = self.query_one("#dlq", Static)
        text = dead_letter_line(self.dead_letter_queue, self.dead_letter_error, now)
        line.update(text or "")
        line.set_class(text is not None, "-shown")

    def _look_up_time_lag(self, data: GroupInflight) -> None:
        """Start a time-lag lookup for this answer, unless one is under way."""
        source = self.dashboard.source
        if self._looking_up_time_lag or not isinstance(source, TimeLagSource):
            return
        now = self.dashboard.now()
        if self._time_lag_started is not None and now - self._time_lag_started < TIME_LAG_EVERY_S:
            return
        self._time_lag_started = now
        self._looking_up_time_lag = True
        self.run_worker(self._time_lag(source, data), group="time-lag", exit_on_error=False)

    async def _time_lag(self, source: TimeLagSource, data: GroupInflight) -> None:
        try:
            answer = await source.oldest_unacknowledged(data)
        except Exception as error:  # noqa: BLE001 -- the column shows "-", the rows stay
            self.post_message(self.TimeLagFailed(one_line(error)))
        else:
            self.post_message(
                self.TimeLagRead(
                    {(topic, number): stamp for (_, topic, number), stamp in answer.items()}
                )
            )

    def on_group_screen_time_lag_read(self, message: GroupScreen.TimeLagRead) -> None:
        message.stop()
        self._looking_up_time_lag = False
        self._oldest_unacknowledged = message.timestamps
        self.time_lag_error = None
        if self.data is not None:
            self._show_partitions(self.data, self.dashboard.now())

    def on_group_screen_time_lag_failed(self, message: GroupScreen.TimeLagFailed) -> None:
        message.stop()
        self._looking_up_time_lag = False
        self._oldest_unacknowledged = {}
        self.time_lag_error = message.error
        if self.data is not None:
            self._show_partitions(self.data, self.dashboard.now())

    def tick(self) -> None:
        super().tick()
        # Ages grow between refreshes: the rows follow the clock, once a second.
        now = self.dashboard.now()
        if self.data is not None and int(now) != self._aged_at:
            self._aged_at = int(now)
            self._show_partitions(self.data, now)
            self._show_summary(self.data, now)
            if self.dead_letter_queue is not None:
                self._show_dead_letters(now)

    def _show_partitions(self, data: GroupInflight, now: float) -> None:
        """Bring the rows up to date at ``now``: the view redraws only the rows that changed.

        This runs for every share-partition on every refresh and once a second for
        the ages, so the pass over all of them does only what the screen needs of
        all of them: which are stalled (the banner), which pass the filter, and
        their keys. What a row is drawn from (``_row_values``) is built only for the
        rows the view draws or compares, the thirty on screen of 10,000.
        """
        if self._rows is None:
            return
        series_of = self.dashboard.history.get
        stall_after_s = self.dashboard.stall_after_s
        is_stalled = health.is_stalled
        needle = self.filter_text.strip().lower()
        group_id = data.group_id
        stalled = []
        keys = []
        partitions: list[PartitionInflight] = []
        series_list: list[History | None] = []
        for partition in data.partitions:
            topic, number = partition.topic, partition.partition
            series = series_of(partition_key(group_id, topic, number))
            if series is not None:
                moved = series.unmoved(now)
                if moved is not None and is_stalled(partition.lag, moved[0], stall_after_s):
                    stalled.append(partition)
            if needle and needle not in f"{topic}:{number}".lower():
                continue
            keys.append(partition_row_key(topic, number))
            partitions.append(partition)
            series_list.append(series)
        self._partitions = dict(zip(keys, partitions, strict=True))
        values = self._row_values(now)
        self._rows.show(keys, lambda index: values(partitions[index], series_list[index]))
        self.stalled = tuple(stalled)
        self._show_stall()

    def _row_values(
        self, now: float
    ) -> Callable[[PartitionInflight, History | None], tuple[Any, ...]]:
        """What a row is drawn from at ``now``: plain values, compared to know if it changed."""
        stall_after_s = self.dashboard.stall_after_s
        oldest_unacknowledged = self._oldest_unacknowledged

        def values(partition: PartitionInflight, series: History | None) -> tuple[Any, ...]:
            topic, number, lag = partition.topic, partition.partition, partition.lag
            if series is None:
                lags, moved, stalled = None, None, False
            else:
                lags = series.recent_lags(_SPARK_WIDTH)
                moved = series.unmoved(now)
                stalled = moved is not None and health.is_stalled(lag, moved[0], stall_after_s)
            if lag == 0:
                time_lag = fmt.short(0)  # nothing waits
            else:
                stamp = oldest_unacknowledged.get((topic, number))
                time_lag = fmt.UNKNOWN if stamp is None else fmt.short(now - stamp / 1000)
            error = partition.error
            return (
                topic,
                number,
                partition.start_offset,
                partition.end_offset,
                lag,
                partition.lag_source,
                time_lag,
                lags,
                None if error is None else error.name,
                partition.window,
                moved,
                stalled,
            )

        return values

    def _render_row(self, value: Any) -> list[Segment]:
        (
            topic,
            number,
            start_offset,
            end_offset,
            lag,
            lag_source,
            time_lag,
            lags,
            error,
            window,
            since_moved,
            stalled,
        ) = value
        spark = "" if lags is None else sparkline(lags, _SPARK_WIDTH)
        if since_moved is None:
            moved = fmt.UNKNOWN
        else:
            seconds, lower_bound = since_moved
            moved = fmt.since(seconds, lower_bound=lower_bound, compact=True)
        cells: list[Cell] = [
            (fmt.truncate(topic, _COLUMNS[0][1]), ""),
            (str(number), ""),
            (fmt.number(start_offset), ""),
            (fmt.number(end_offset), ""),
            (lag_text(lag, lag_source), ""),
            (time_lag, ""),
            (spark, "cyan"),
            self._strip(error, window, end_offset),
            (fmt.UNKNOWN if window is None else fmt.number(window.archived), ""),
            (f"⚠ {moved}", "bold red") if stalled else (moved, ""),
        ]
        return lay_out(cells, self._widths)

    def _strip(self, error: str | None, window: InFlightWindow | None, end_offset: int) -> Cell:
        """The window's strip; the share-partition's error instead, in red; nothing without."""
        if error is not None:
            return (error, "red")
        if window is None:
            return ("", "")
        return strip_text(window.cells(self.window_width, end_offset), self._limit)

    def _show_stall(self) -> None:
        banner = self.query_one("#stall", Static)
        if not self.stalled:
            banner.remove_class("-shown")
            return
        names = [f"{each.topic}:{each.partition}" for each in self.stalled[:_STALL_LIST_LIMIT]]
        more = len(self.stalled) - len(names)
        listed = ", ".join(names) + (f" and {more} more" if more > 0 else "")
        count = len(self.stalled)
        noun = "share-partition" if count == 1 else "share-partitions"
        after = fmt.duration(self.dashboard.stall_after_s)
        banner.update(
            f"⚠ {count} {noun} stalled (lag above 0, start offset unmoved for {after} or more): "
            f"{listed}"
        )
        banner.add_class("-shown")

    def _show_summary(self, data: GroupInflight, now: float) -> None:
        dashboard = self.dashboard
        description = data.description
        state = "-" if description is None else description.state
        members = (
            "- members" if description is None else fmt.plural(description.member_count, "member")
        )
        count = len(data.partitions)
        total = data.total_lag
        group_series = dashboard.history.get(group_key(data.group_id))
        trend = None if group_series is None else group_series.trend()
        parts = [
            f"group {data.group_id}",
            state,
            members,
            fmt.plural(count, "share-partition"),
            f"total lag {total_lag_text(total, data.total_lag_source, data.total_lag_complete)}"
            + (f" {trend.value}" if trend is not None else ""),
        ]
        self.query_one("#summary", Static).update(" · ".join(parts))
        # The sums of the share-partitions' offsets, one series: the group's rates
        # without a pass over a thousand share-partitions.
        completed = dashboard.history.get(completed_key(data.group_id))
        flow = Flow(total, None, None, None) if completed is None else completed.flow()
        self.query_one("#flow", Static).update(fmt.flow(flow))

    def _show_note(self, data: GroupInflight) -> None:
        note = self.query_one("#note", Static)
        if data.window_note is not None:
            note.update(f"window column empty: {data.window_note}")
            note.add_class("-missing")
        else:
            note.update(f"{LEGEND}\nNote: {ACQUIRED_NOT_PERSISTED}.")
            note.remove_class("-missing")

    def _show_members(self, data: GroupInflight) -> None:
        if self._members is None:
            return
        description = data.description
        members = () if description is None else description.members
        self._members.sync(
            [
                (
                    member.member_id,
                    (
                        member.member_id,
                        member.client_id,
                        member.host,
                        member.rack,
                        member.member_epoch,
                        member.assignment_text,
                    ),
                )
                for member in members
            ]
        )
        count = len(members)
        self.query_one("#members-title", Static).update(
            f"Members ({count})" if count else "Members: none (the group is empty)"
        )

    # -- keys ------------------------------------------------------------------

    def selected(self) -> PartitionInflight | None:
        if self._rows is None:
            return None
        key = self._rows.cursor_key()
        return None if key is None else self._partitions.get(key)

    def on_rows_view_selected(self, event: RowsView.Selected) -> None:
        event.stop()
        partition = self._partitions.get(event.key)
        if partition is None:
            return
        self.app.push_screen(
            PartitionScreen(
                self.group_id,
                partition.topic,
                partition.partition,
                peek_limit=self.dashboard.peek_limit,
            )
        )

    def action_filter(self) -> None:
        self.query_one(FilterInput).open()

    def action_back(self) -> None:
        if self.filter_text:
            self.query_one(FilterInput).action_cancel()
            return
        self.dashboard.back()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value
        if self.data is not None:
            self._show_partitions(self.data, self.dashboard.now())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#partitions", RowsView).focus()
        if not self.filter_text:
            self.query_one(FilterInput).close()

    def on_filter_input_cancelled(self, event: FilterInput.Cancelled) -> None:
        event.stop()
        self.filter_text = ""
        self.query_one("#partitions", RowsView).focus()
        if self.data is not None:
            self._show_partitions(self.data, self.dashboard.now())


def _render_member_cell(column: int, value: Any) -> RenderableType:
    if column == 3 and value is None:
        return Text(fmt.UNKNOWN, end="")
    if column == 4:
        return _right(str(value))
    width = _MEMBER_COLUMNS[column][2]
    return Text(fmt.truncate(str(value), width), no_wrap=True, end="")
