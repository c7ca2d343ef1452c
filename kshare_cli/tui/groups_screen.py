"""The groups screen: every share group of the cluster, and which of them are backing up.

One row per group: its state, members, share-partitions, total lag with the
direction it took, how fast the backlog shrinks (net drain: the decrease of
the total lag per second) and when it would be gone at that pace. The
listing carries no offsets, so what is consumed and what arrives is on the
group screen; the net drain and the time to empty are the same figures,
from the same functions (``tui.lag_history.Flow``), as there.

A broker that does not answer costs only its own groups: the others are fresh
at every refresh, and a group that a refresh could not read (its coordinator
did not list its groups, or it could not be described) keeps its row and its
last figures, its name marked ``stale`` with the age of those figures (the rates
``-``: they would be the past's), while the status line names the broker. The
next refresh that reads it makes it fresh again, with no key to press.

The header names the cluster: its Kafka line and ``share.version`` (what
decides, for one, whether its dead-letter queues work), looked up once, with
the first refresh, from a source that knows them (``ClusterFactsSource``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Input, Static

from kshare_cli.render.offsets import total_lag_text
from kshare_cli.services.dashboard import (
    ClusterFacts,
    GroupFailure,
    GroupSummary,
    GroupsView,
    KnownGroups,
    StaleGroup,
)
from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.group_screen import GroupScreen
from kshare_cli.tui.lag_history import group_key
from kshare_cli.tui.live_screen import LiveScreen
from kshare_cli.tui.source import ClusterFactsSource
from kshare_cli.tui.widgets import FastTable, FilterInput, TableSync

__all__ = ["GroupsScreen", "cluster_line"]

_COLUMNS: Final = (
    ("group", "GROUP", 34),
    ("state", "STATE", 8),
    ("members", "MEMBERS", 7),
    ("partitions", "SHARE-PARTITIONS", 16),
    ("lag", "TOTAL LAG", 11),
    ("trend", "TREND", 5),
    ("net_drain", "NET DRAIN", 9),
    ("empty", "EMPTY IN", 8),
)


def cluster_line(facts: ClusterFacts) -> str:
    """The header's words for the cluster: ``Kafka 4.4 · share.version 2``."""
    line = "Kafka line unknown" if facts.kafka_line is None else f"Kafka {facts.kafka_line}"
    version = facts.share_version
    share = "share.version not reported" if version is None else f"share.version {version}"
    return f"{line} · {share}"


def _right(text: str) -> Text:
    return Text(text, justify="right", no_wrap=True, end="")


class GroupsScreen(LiveScreen[GroupsView]):
    """Every share group, refreshed from ``DashboardSource.overview``; unread ones kept, stale."""

    DEFAULT_CSS = """
    GroupsScreen #title { height: 1; text-style: bold; }
    GroupsScreen #groups { height: 1fr; }
    GroupsScreen #failures { height: auto; color: $warning; }
    """

    BINDINGS: ClassVar[list[Any]] = [
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("slash", "filter", "Filter"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self._table: TableSync | None = None
        self._known = KnownGroups()
        self._ages_shown: tuple[str, ...] = ()
        #: The cluster's facts, once the first refresh looked them up (None before, or
        #: from a source that does not know them).
        self.cluster: ClusterFacts | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("Share groups", id="title")
        table = FastTable(id="groups", cursor_type="row")
        yield table
        yield Static("", id="failures")
        yield FilterInput(placeholder="filter groups", id="filter")
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "share groups"
        table = self.query_one("#groups", FastTable)
        keys = [table.add_column(label, width=width, key=key) for key, label, width in _COLUMNS]
        self._table = TableSync(table, keys, _render_cell)
        table.focus()
        super().on_mount()

    async def fetch(self) -> GroupsView:
        source = self.dashboard.source
        overview = await source.overview()
        if self.cluster is None and isinstance(source, ClusterFactsSource):
            self.cluster = await source.cluster_facts()
        return self._known.merge(overview, self.dashboard.now())

    def partial_note(self, data: GroupsView) -> str | None:
        """The brokers that did not list (by id and address, with the groups that hides),
        and the groups not described."""
        notes = [] if data.unlisted is None else [str(data.unlisted)]
        groups = sum(isinstance(failure, GroupFailure) for failure in data.failures)
        if groups:
            notes.append(f"{groups} group{'s' if groups != 1 else ''} not described")
        return "; ".join(notes) or None

    def apply(self, data: GroupsView, at: float) -> None:
        self.dashboard.record_overview(data.overview, at)
        self._show(data)

    def show_status(self) -> None:
        super().show_status()
        # The stale rows' ages count on between refreshes, as the status line's does; the
        # rows are drawn again only when an age's text changed (once a second at most).
        data = self.data
        if data is not None and data.stale and self._ages(data) != self._ages_shown:
            self._show(data)

    def _ages(self, data: GroupsView) -> tuple[str, ...]:
        now = self.dashboard.now()
        return tuple(fmt.short(now - stale.read_at) for stale in data.stale)

    def _show(self, data: GroupsView) -> None:
        if self._table is None:
            return
        needle = self.filter_text.strip().lower()
        self._ages_shown = ages = self._ages(data)
        rows = [(group.group_id, self._row(group)) for group in data.groups]
        rows.extend(
            (stale.summary.group_id, self._stale_row(stale, age))
            for stale, age in zip(data.stale, ages, strict=True)
        )
        rows.sort(key=lambda row: row[0])
        shown = [row for row in rows if needle in row[0].lower()]
        self._table.sync(shown)
        count = data.count
        title = f"Share groups ({count})" if count else "Share groups: none on this cluster"
        if data.stale:
            title += f", {len(data.stale)} stale"
        if needle:
            title += f" — {len(shown)} match '{self.filter_text.strip()}'"
        self.query_one("#title", Static).update(title)
        if self.cluster is not None:
            self.sub_title = f"share groups — {cluster_line(self.cluster)}"
        self.query_one("#failures", Static).update(
            "\n".join(f"not answered: {failure}" for failure in data.failures)
        )

    def _row(self, group: GroupSummary) -> tuple[Any, ...]:
        series = self.dashboard.history.get(group_key(group.group_id))
        trend = None if series is None else series.trend()
        flow = None if series is None else series.flow()
        return (
            group.group_id,
            group.state,
            group.members,
            group.share_partitions,
            total_lag_text(
                group.total_lag, group.total_lag_source, group.total_lag_complete, fmt.number
            ),
            "" if trend is None else trend.value,
            fmt.rate(None if flow is None else flow.net_drain_per_s),
            fmt.empty_in(None if flow is None else flow.time_to_empty, compact=True),
        )

    def _stale_row(self, stale: StaleGroup, age: str) -> tuple[Any, ...]:
        """The last figures read, the name marked with their age; no rates (they were then)."""
        row = self._row(stale.summary)
        marked = _Stale(stale.summary.group_id, f"stale {age}")
        return (marked, *row[1:-2], fmt.UNKNOWN, fmt.UNKNOWN)

    def selected_group(self) -> str | None:
        return None if self._table is None else self._table.cursor_key()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key is None:
            return
        self.app.push_screen(GroupScreen(key))

    def action_filter(self) -> None:
        self.query_one(FilterInput).open()

    def action_clear_filter(self) -> None:
        if self.filter_text:
            self.query_one(FilterInput).action_cancel()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value
        if self.data is not None:
            self._show(self.data)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#groups", DataTable).focus()
        if not self.filter_text:
            self.query_one(FilterInput).close()

    def on_filter_input_cancelled(self, event: FilterInput.Cancelled) -> None:
        event.stop()
        self.filter_text = ""
        self.query_one("#groups", DataTable).focus()
        if self.data is not None:
            self._show(self.data)


@dataclass(frozen=True, slots=True)
class _Stale:
    """A stale row's name cell: the group id and ``stale <age>``."""

    group_id: str
    mark: str


def _render_cell(column: int, value: Any) -> RenderableType:
    if column == 0:
        width = _COLUMNS[0][2]
        if isinstance(value, _Stale):
            name = fmt.truncate(value.group_id, width - len(value.mark) - 1)
            text = Text(name, no_wrap=True, end="")
            text.append(" " + value.mark, style="bold yellow")
            return text
        return Text(fmt.truncate(str(value), width), no_wrap=True, end="")
    if column == 1:
        style = {"Stable": "green", "Empty": "dim", "Dead": "red"}.get(str(value), "")
        return Text(str(value), style=style, end="")
    if column in (2, 3):
        return _right(fmt.number(value))
    if column == 5:
        style = {"↑": "red", "↓": "green"}.get(str(value), "")
        return Text(str(value), style=style, justify="center", end="")
    return _right(str(value))
