"""The share-partition screen: one window zoomed to the screen, its delivery counts, and a peek.

What an on-call engineer asks of one share-partition: where exactly are the
acknowledged, archived and redelivery-pending records (the window drawn over
the whole screen width, several lines when there is more to show), how often
were records delivered (a histogram), which offsets were delivered most often
(poison-pill suspects), and what are the records at the start offset. The
peek reads them with a plain consumer (``consumer.peek``), so looking
acquires nothing and changes no delivery count.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Static

from kshare_cli.render.inflight import LEGEND, STATE_STYLES, retention_notes, strip_text
from kshare_cli.render.offsets import lag_text
from kshare_cli.services.dashboard import ConsumedRecord, GroupInflight, PartitionInflight
from kshare_cli.state.window import ACQUIRED_NOT_PERSISTED, InFlightWindow, WindowState
from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.lag_history import Flow, partition_key
from kshare_cli.tui.live_screen import LiveScreen, one_line
from kshare_cli.tui.widgets import FastTable, TableSync

__all__ = ["PartitionScreen", "PartitionView", "state_at"]

_MAX_STRIP_LINES: Final = 4
_LABEL_WIDTH: Final = 12
_HISTOGRAM_BAR: Final = 30
_MOST_DELIVERED: Final = 8
_PEEK_COLUMNS: Final = (
    ("offset", "OFFSET", 10),
    ("state", "STATE", 13),
    ("deliveries", "DELIVERIES", 10),
    ("timestamp", "TIMESTAMP (UTC)", 23),
    ("key", "KEY", 16),
    ("value", "VALUE", 36),
)
QUEUED: Final = "queued"


@dataclass(frozen=True, slots=True)
class PartitionView:
    """What the screen shows: the group's answer, this share-partition in it, and the peek."""

    group: GroupInflight
    partition: PartitionInflight | None
    records: tuple[ConsumedRecord, ...] | None
    peek_error: str | None = None


def state_at(window: InFlightWindow | None, offset: int) -> tuple[str, int | None]:
    """What the window says about one offset: its state name and delivery count.

    Offsets past the window are ``queued`` (produced, never delivered); below
    the start offset they are done (acknowledged or archived, and forgotten).
    """
    if window is None or window.start_offset < 0:
        return fmt.UNKNOWN, None
    if offset < window.start_offset:
        return "done", None
    runs = window.runs
    if not runs or offset >= window.end_offset:
        return QUEUED, None
    index = bisect.bisect_right([run.first_offset for run in runs], offset) - 1
    run = runs[max(index, 0)]
    if run.state is WindowState.UNRECORDED:
        return run.state.value, None
    return run.state.value, run.delivery_count


def _printable(data: bytes | None, width: int) -> str:
    if data is None:
        return "null"
    text = data.decode("utf-8", errors="replace")
    text = "".join(character if character.isprintable() else "·" for character in text)
    return fmt.truncate(text, width)


def _timestamp(record: ConsumedRecord) -> str:
    if record.timestamp < 0:
        return fmt.UNKNOWN
    moment = datetime.fromtimestamp(record.timestamp / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{record.timestamp % 1000:03d}"


class PartitionScreen(LiveScreen[PartitionView]):
    """One share-partition of one group."""

    DEFAULT_CSS = """
    PartitionScreen #title { height: 1; text-style: bold; }
    PartitionScreen #flow { height: 1; }
    PartitionScreen #stall { height: auto; color: $error; text-style: bold; display: none; }
    PartitionScreen #stall.-shown { display: block; }
    PartitionScreen #window-title { height: 1; margin-top: 1; text-style: bold; }
    PartitionScreen #strip { height: auto; }
    PartitionScreen #legend { height: auto; color: $text-muted; }
    PartitionScreen #legend.-missing { color: $warning; }
    PartitionScreen #counts { height: auto; margin-top: 1; }
    PartitionScreen #details { height: auto; max-height: 12; margin-top: 1; }
    PartitionScreen #histogram { width: 1fr; height: auto; }
    PartitionScreen #most { width: 1fr; height: auto; }
    PartitionScreen #peek-title { height: 1; margin-top: 1; text-style: bold; }
    PartitionScreen #peek { height: 1fr; }
    """

    BINDINGS: ClassVar[list[Any]] = [Binding("escape", "back", "Back")]

    def __init__(self, group_id: str, topic: str, partition: int, *, peek_limit: int = 10) -> None:
        super().__init__()
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.peek_limit = peek_limit
        self._peek: TableSync | None = None

    @property
    def label(self) -> str:
        return f"{self.topic}:{self.partition}"

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(f"share-partition {self.label} of group {self.group_id}", id="title")
        yield Static("", id="flow")
        yield Static("", id="stall")
        yield Static("In-flight window", id="window-title")
        yield Static("", id="strip")
        yield Static("", id="legend")
        yield Static("", id="counts")
        with Horizontal(id="details"):
            yield Static("", id="histogram")
            yield Static("", id="most")
        yield Static("Next records from the start offset", id="peek-title")
        peek = FastTable(id="peek", cursor_type="row")
        yield peek
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"group {self.group_id} › {self.label}"
        table = self.query_one("#peek", FastTable)
        keys = [
            table.add_column(label, width=width, key=key) for key, label, width in _PEEK_COLUMNS
        ]
        self._peek = TableSync(table, keys, _render_peek_cell)
        super().on_mount()

    def on_resize(self, event: events.Resize) -> None:
        if self.data is not None:
            self._show_window(self.data)

    # -- data ------------------------------------------------------------------

    async def fetch(self) -> PartitionView:
        source = self.dashboard.source
        group = await source.group(self.group_id)
        partition = next(
            (
                each
                for each in group.partitions
                if each.topic == self.topic and each.partition == self.partition
            ),
            None,
        )
        if partition is None or partition.start_offset is None or partition.start_offset < 0:
            return PartitionView(group, partition, None)
        try:
            records = await source.peek(
                self.topic, self.partition, partition.start_offset, self.peek_limit
            )
        except Exception as error:  # noqa: BLE001 -- the peek is optional: say why it is missing
            previous = self.data.records if self.data is not None else None
            return PartitionView(group, partition, previous, one_line(error))
        return PartitionView(group, partition, records)

    def apply(self, data: PartitionView, at: float) -> None:
        self.dashboard.record_group(data.group, at)
        self._show_title(data)
        self._show_window(data)
        self._show_details(data)
        self._show_peek(data)

    def tick(self) -> None:
        super().tick()
        if self.data is not None:
            self._show_title(self.data)

    def _show_title(self, data: PartitionView) -> None:
        dashboard = self.dashboard
        partition = data.partition
        title = self.query_one("#title", Static)
        stall = self.query_one("#stall", Static)
        flow_line = self.query_one("#flow", Static)
        if partition is None:
            title.update(
                f"share-partition {self.label} of group {self.group_id}: "
                "not in the group's offsets (deleted, or never consumed)"
            )
            flow_line.update("")
            stall.remove_class("-shown")
            return
        now = dashboard.now()
        series = dashboard.history.get(partition_key(self.group_id, self.topic, self.partition))
        since_moved = None if series is None else series.since_moved(now)
        moved = (
            fmt.UNKNOWN
            if since_moved is None
            else fmt.since(since_moved.seconds, lower_bound=since_moved.lower_bound)
        )
        flow = Flow(partition.lag, None, None, None) if series is None else series.flow()
        parts = [
            f"{self.label} of group {self.group_id}",
            f"start offset {fmt.number(partition.start_offset)}",
            f"end offset {fmt.number(partition.end_offset)}",
            f"lag {lag_text(partition.lag, partition.lag_source)}",
            f"start offset moved {moved} ago",
        ]
        if partition.error is not None:
            parts.append(f"error {partition.error.name}")
        title.update(" · ".join(parts))
        flow_line.update(fmt.flow(flow))
        if series is not None and series.stalled(now, dashboard.stall_after_s):
            stall.update(
                f"⚠ stalled: lag above 0 and the start offset unmoved for "
                f"{fmt.duration(dashboard.stall_after_s)} or more"
            )
            stall.add_class("-shown")
        else:
            stall.remove_class("-shown")

    def _show_window(self, data: PartitionView) -> None:
        partition = data.partition
        strip = self.query_one("#strip", Static)
        legend = self.query_one("#legend", Static)
        heading = self.query_one("#window-title", Static)
        window = None if partition is None else partition.window
        if data.group.window_note is not None:
            heading.update("In-flight window: not available")
            strip.update("")
            legend.update(f"No window: {data.group.window_note}")
            legend.add_class("-missing")
            return
        legend.remove_class("-missing")
        legend.update(f"{LEGEND}\nNote: {ACQUIRED_NOT_PERSISTED}.")
        if window is None or partition is None or window.start_offset < 0:
            heading.update("In-flight window: nothing persisted for this share-partition")
            strip.update("")
            return
        end = max(window.end_offset, partition.end_offset or 0)
        total = max(end - window.start_offset, 0)
        line_width = max(self.app.size.width - _LABEL_WIDTH - 3, 10)
        lines = max(1, min(_MAX_STRIP_LINES, math.ceil(total / line_width))) if total else 1
        cells = window.cells(line_width * lines, partition.end_offset)
        per_cell = -(-total // (line_width * lines)) if total else 1
        heading.update(
            f"In-flight window: offsets {fmt.number(window.start_offset)} to "
            f"{fmt.number(end - 1 if total else window.start_offset)} "
            f"({fmt.number(total)} offsets, {fmt.number(per_cell)} per cell; "
            f"persisted window ends at {fmt.number(window.end_offset)})"
        )
        text = Text(end="")
        limit = data.group.delivery_count_limit
        for line in range(lines):
            chunk = cells[line * line_width : (line + 1) * line_width]
            if not chunk:
                break
            if line:
                text.append("\n")
            text.append(f"{chunk[0].first_offset:>{_LABEL_WIDTH},} │", style="dim")
            text.append_text(strip_text(chunk, limit))
        strip.update(text)

    def _show_details(self, data: PartitionView) -> None:
        partition = data.partition
        window = None if partition is None else partition.window
        counts = self.query_one("#counts", Static)
        histogram = self.query_one("#histogram", Static)
        most = self.query_one("#most", Static)
        if window is None or partition is None:
            counts.update("")
            histogram.update("")
            most.update("")
            return
        complete = window.delivery_complete_count
        queued = partition.queued
        limit = data.group.delivery_count_limit
        line = Text(end="")
        for state, count in (
            (WindowState.AVAILABLE, window.available),
            (WindowState.ACKNOWLEDGED, window.acknowledged),
            (WindowState.ARCHIVING, window.archiving),
            (WindowState.ARCHIVED, window.archived),
            (WindowState.UNRECORDED, window.unrecorded),
        ):
            line.append(f"{state.value} ", style=STATE_STYLES[state])
            line.append(f"{count:,}   ")
        if partition.deleted:
            line.append(f"{WindowState.DELETED.value} ", style=STATE_STYLES[WindowState.DELETED])
            line.append(f"{partition.deleted:,}   ")
        line.append(f"queued {fmt.number(queued)}\n")
        for note in retention_notes(data.group):
            if note.startswith(f"{partition.topic}:{partition.partition}:"):
                line.append(f"⚠ {note}\n", style="bold")
        line.append(f"highest delivery count {window.max_delivery_count}")
        line.append(f" (limit {limit})   " if limit is not None else "   ")
        line.append(f"delivery-complete count {fmt.number(complete if complete >= 0 else None)}   ")
        line.append(
            f"epochs: snapshot {window.snapshot_epoch}, state {window.state_epoch}, "
            f"leader {window.leader_epoch}",
            style="dim",
        )
        counts.update(line)
        histogram.update(_histogram(window))
        most.update(_most_delivered(window))

    def _show_peek(self, data: PartitionView) -> None:
        title = self.query_one("#peek-title", Static)
        partition = data.partition
        start = None if partition is None else partition.start_offset
        heading = (
            "Next records from the start offset"
            + (f" {start:,}" if start is not None and start >= 0 else "")
            + " (read with a plain consumer: nothing is acquired)"
        )
        if data.peek_error is not None:
            heading += f" — peek failed: {data.peek_error}"
        elif data.records is not None and not data.records:
            heading += " — none: the share-partition is caught up"
        title.update(heading)
        if self._peek is None:
            return
        window = None if partition is None else partition.window
        rows = []
        for record in data.records or ():
            state, deliveries = state_at(window, record.offset)
            rows.append(
                (
                    str(record.offset),
                    (
                        record.offset,
                        state,
                        deliveries,
                        _timestamp(record),
                        _printable(record.key, _PEEK_COLUMNS[4][2]),
                        _printable(record.value, _PEEK_COLUMNS[5][2]),
                    ),
                )
            )
        self._peek.sync(rows)

    def action_back(self) -> None:
        self.dashboard.back()


def _histogram(window: InFlightWindow) -> Text:
    histogram = window.delivery_histogram()
    text = Text("Delivery counts (persisted records)\n", style="bold", end="")
    if not histogram:
        text.append("nothing persisted yet", style="dim")
        return text
    top = max(histogram.values())
    for count, records in histogram.items():
        bar = max(1, round(records / top * _HISTOGRAM_BAR))
        text.append(f"{count:>4}× ", style="bold")
        text.append("█" * bar, style="yellow" if count > 1 else "green")
        text.append(f" {records:,}\n")
    text.rstrip()
    return text


def _most_delivered(window: InFlightWindow) -> Text:
    # Records delivered once say nothing about poison pills: only redeliveries are listed.
    runs = [run for run in window.most_delivered(_MOST_DELIVERED) if run.delivery_count > 1]
    text = Text("Delivered most often\n", style="bold", end="")
    if not runs:
        note = "nothing persisted yet" if not window.runs else "no record was delivered twice"
        text.append(note, style="dim")
        return text
    for run in runs:
        offsets = (
            f"offset {run.first_offset:,}"
            if run.count == 1
            else f"offsets {run.first_offset:,}–{run.last_offset:,}"
        )
        text.append(f"{offsets:<28}")
        text.append(f"{run.delivery_count:>3}×  ", style="bold")
        text.append(f"{run.state.value}\n", style=STATE_STYLES[run.state])
    text.rstrip()
    return text


def _render_peek_cell(column: int, value: Any) -> RenderableType:
    if column == 0:
        return Text(f"{value:,}", justify="right", end="")
    if column == 1:
        style = next((STATE_STYLES[state] for state in WindowState if state.value == value), "")
        return Text(str(value), style=style, end="")
    if column == 2:
        return Text(fmt.number(value), justify="right", end="")
    return Text(str(value), no_wrap=True, end="")
