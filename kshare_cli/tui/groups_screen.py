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

On a cluster that writes dead letters (Kafka 4.4, ``share.version`` 2), each
refresh that answered is followed by one reading of the listed groups' DLQ
topics' end offsets (``DeadLetterEndsSource``, in a worker of its own, so it
never holds the rows back and its failure never fails the refresh), and a
group whose DLQ topic grew in the last minute (``tui.dead_letter_growth``) is
marked ``DLQ+N`` beside its name, N the records the topic got. A DLQ that could
not be read marks nothing and is named under the table, beside the groups not
described. Anywhere else the screen is as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Input, Static

from kshare_cli.render.offsets import total_lag_text
from kshare_cli.services.dashboard import (
    ClusterFacts,
    DeadLetterEnds,
    GroupFailure,
    GroupSummary,
    GroupsView,
    KnownGroups,
    StaleGroup,
)
from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.dead_letter_growth import DeadLetterGrowth, not_read_lines
from kshare_cli.tui.group_screen import GroupScreen
from kshare_cli.tui.lag_history import group_key
from kshare_cli.tui.live_screen import LiveScreen, one_line
from kshare_cli.tui.source import ClusterFactsSource, DeadLetterEndsSource
from kshare_cli.tui.widgets import FastTable, FilterInput, TableSync

__all__ = ["GroupsScreen", "cluster_line", "dead_letter_mark"]

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


def dead_letter_mark(records: int) -> str:
    """The name cell's mark of a group whose DLQ topic got ``records`` in the last minute."""
    return f"DLQ+{fmt.number(records)}"


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
        #: The last reading of the DLQ topics' end offsets (None: none yet, or no DLQ
        #: reading on this cluster), and why the last reading failed.
        self.dead_letter_ends: DeadLetterEnds | None = None
        self.dead_letter_error: str | None = None
        #: The dashboard clock when the last DLQ reading answered or failed.
        self.dead_letters_read_at: float | None = None
        self._dead_letters = DeadLetterGrowth()
        self._reading_dead_letters = False
        self._marks_shown: dict[str, int] = {}

    class DeadLettersRead(Message):
        """A reading of the DLQ topics' end offsets answered at ``at``, or failed."""

        def __init__(self, ends: DeadLetterEnds | None, error: str | None, at: float) -> None:
            super().__init__()
            self.ends = ends
            self.error = error
            self.at = at

    @property
    def marks_dead_letters(self) -> bool:
        """Whether this screen reads DLQs: the cluster writes dead letters (for the help)."""
        return self.dead_letter_ends is not None and self.dead_letter_ends.active

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
        self._read_dead_letters(data)

    def show_status(self) -> None:
        super().show_status()
        # The stale rows' ages count on between refreshes, as the status line's does, and a
        # DLQ mark goes a minute after the growth it counts; the rows are drawn again only
        # when an age's text or a mark changed.
        data = self.data
        if data is None:
            return
        if (data.stale and self._ages(data) != self._ages_shown) or (
            self._marks_shown and self._marks() != self._marks_shown
        ):
            self._show(data)

    # -- dead letters ----------------------------------------------------------

    def _read_dead_letters(self, data: GroupsView) -> None:
        """Read the listed groups' DLQ end offsets, unless a reading is under way, the source
        cannot, or the cluster writes no dead letters."""
        source = self.dashboard.source
        if self._reading_dead_letters or not isinstance(source, DeadLetterEndsSource):
            return
        if self.cluster is not None and not self.cluster.dead_letter_queue:
            return
        if self.dead_letter_ends is not None and not self.dead_letter_ends.active:
            return
        group_ids = [group.group_id for group in data.groups]
        group_ids.extend(stale.summary.group_id for stale in data.stale)
        self._reading_dead_letters = True
        self.run_worker(self._dead_letter_ends(source, group_ids), group="dlq", exit_on_error=False)

    async def _dead_letter_ends(
        self, source: DeadLetterEndsSource, group_ids: Sequence[str]
    ) -> None:
        try:
            ends = await source.dead_letter_ends(group_ids)
        except Exception as error:  # noqa: BLE001 -- said under the table; the rows stay
            self.post_message(self.DeadLettersRead(None, one_line(error), self.dashboard.now()))
        else:
            self.post_message(self.DeadLettersRead(ends, None, self.dashboard.now()))

    def on_groups_screen_dead_letters_read(self, message: GroupsScreen.DeadLettersRead) -> None:
        message.stop()
        self._reading_dead_letters = False
        self.dead_letters_read_at = message.at
        self.dead_letter_error = message.error
        if message.ends is not None:
            self.dead_letter_ends = message.ends
            self._dead_letters.record(message.ends, message.at)
        if self.data is not None:
            self._show(self.data)

    def _marks(self) -> dict[str, int]:
        return self._dead_letters.marked(self.dashboard.now())

    def dead_letter_lines(self) -> list[str]:
        """What the last DLQ reading could not read, or why it failed, for under the table."""
        if self.dead_letter_error is not None:
            return [f"DLQ end offsets not read: {self.dead_letter_error}"]
        ends = self.dead_letter_ends
        return [] if ends is None else not_read_lines(ends)

    def _ages(self, data: GroupsView) -> tuple[str, ...]:
        now = self.dashboard.now()
        return tuple(fmt.short(now - stale.read_at) for stale in data.stale)

    def _show(self, data: GroupsView) -> None:
        if self._table is None:
            return
        needle = self.filter_text.strip().lower()
        self._ages_shown = ages = self._ages(data)
        self._marks_shown = marks = self._marks()
        rows = [(group.group_id, self._row(group, marks)) for group in data.groups]
        rows.extend(
            (stale.summary.group_id, self._stale_row(stale, age, marks))
            for stale, age in zip(data.stale, ages, strict=True)
        )
        rows.sort(key=lambda row: row[0])
        shown = [row for row in rows if needle in row[0].lower()]
        self._table.sync(shown)
        count = data.count
        title = f"Share groups ({count})" if count else "Share groups: none on this cluster"
        if data.stale:
            title += f", {len(data.stale)} stale"
        if marks:
            title += f", {len(marks)} with new dead letters"
        if needle:
            title += f" — {len(shown)} match '{self.filter_text.strip()}'"
        self.query_one("#title", Static).update(title)
        if self.cluster is not None:
            self.sub_title = f"share groups — {cluster_line(self.cluster)}"
        lines = [f"not answered: {failure}" for failure in data.failures]
        lines.extend(self.dead_letter_lines())
        self.query_one("#failures", Static).update("\n".join(lines))

    def _row(self, group: GroupSummary, marks: dict[str, int]) -> tuple[Any, ...]:
        series = self.dashboard.history.get(group_key(group.group_id))
        trend = None if series is None else series.trend()
        flow = None if series is None else series.flow()
        grown = marks.get(group.group_id)
        return (
            group.group_id if grown is None else _Marked(group.group_id, _dlq(grown)),
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

    def _stale_row(self, stale: StaleGroup, age: str, marks: dict[str, int]) -> tuple[Any, ...]:
        """The last figures read, the name marked with their age; no rates (they were then)."""
        row = self._row(stale.summary, {})
        grown = marks.get(stale.summary.group_id)
        shown = (_STALE, f"stale {age}"), *(() if grown is None else _dlq(grown))
        marked = _Marked(stale.summary.group_id, shown)
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


#: The marks' styles: a stale row's age, and a DLQ that grew.
_STALE: Final = "bold yellow"
_DEAD_LETTERS: Final = "bold red"


@dataclass(frozen=True, slots=True)
class _Marked:
    """A name cell with marks after the group id: ``stale <age>``, ``DLQ+N`` (style, text)."""

    group_id: str
    marks: tuple[tuple[str, str], ...]


def _dlq(grown: int) -> tuple[tuple[str, str], ...]:
    return ((_DEAD_LETTERS, dead_letter_mark(grown)),)


def _render_cell(column: int, value: Any) -> RenderableType:
    if column == 0:
        width = _COLUMNS[0][2]
        if isinstance(value, _Marked):
            marks = "".join(" " + mark for _, mark in value.marks)
            text = Text(fmt.truncate(value.group_id, width - len(marks)), no_wrap=True, end="")
            for style, mark in value.marks:
                text.append(" " + mark, style=style)
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
