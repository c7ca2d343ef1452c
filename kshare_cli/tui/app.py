"""``kshare dashboard``: the Textual app, its keys, its clock and its memory.

Screens stack: groups → group → share-partition; enter drills in, escape
comes back. The app owns what outlives a screen: the data source, the lag
history (so going back and forth keeps the sparklines), the refresh interval,
pause, and the clock. The clock is injectable so the snapshot tests draw
ages and rates from fixed times; everything shown is computed from it.

Ctrl+C quits, as in other terminal dashboards, and exits 130 like an
interrupted kshare command (``q`` exits 0): pressed in the terminal it
arrives as a key (Textual reads the terminal raw), and sent as SIGINT
(``kill -INT``) it arrives as a signal; both end the app the same way, so the
command's edge reports one "interrupted" line and the documented code.

A ticker runs several times a second on the UI loop; it only asks the active
screen whether a fetch is due and redraws the status line. The fetches
themselves run in workers (see ``tui.live_screen``), so no key ever waits
for the broker.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any, ClassVar, Final

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kshare_cli.errors import ExitCode
from kshare_cli.services.dashboard import GroupInflight, GroupsOverview
from kshare_cli.state.window import ACQUIRED_NOT_PERSISTED
from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.group_screen import GroupScreen
from kshare_cli.tui.groups_screen import GroupsScreen
from kshare_cli.tui.lag_history import (
    HistoryStore,
    LagReading,
    completed_key,
    group_key,
    partition_key,
)
from kshare_cli.tui.live_screen import LiveScreen
from kshare_cli.tui.source import ClosableSource, DashboardSource

__all__ = ["HELP_TEXT", "REFRESH_STEPS", "DashboardApp", "HelpScreen", "help_text"]

#: What ``+`` and ``-`` step through (seconds).
REFRESH_STEPS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
#: How often the ticker looks at the active screen.
TICK_S: Final = 0.25
DEFAULT_PEEK_LIMIT: Final = 10

_HELP_FIGURES: Final = """\
[b]Keys[/b]
  enter, arrows   drill into the highlighted group or share-partition, move
  escape          back (first clears an active filter)
  /               filter the rows (enter keeps it, escape clears it)
  p               pause or resume refreshing
  + / -           refresh less / more often
  r               refresh now
  ?               this help
  q               quit
  ctrl+c          quit (exit code 130, as an interrupted command)

[b]Columns and figures[/b]
  LAG             log end offset - start offset - delivery-complete count (KIP-1226);
                  ≤N is kshare's upper bound when the broker gave no lag
  LAG TREND       the lag over the last samples, one character a refresh
  IN-FLIGHT       the persisted window from the start offset to the log end offset
  SINCE MOVED     time since the start offset last changed; ≥ when Kafka pruned that record
  consumed        records completed per second: the growth of start offset +
                  delivery-complete count (an offset reset counts as 0)
  arriving        records appended per second: the growth of the log end offset
  NET DRAIN       the lag's decrease per second (consumed - arriving); negative while
                  the lag grows. Rates are over the last minute.
  EMPTY IN        lag / net drain; "never" while the lag grows or stands still
  stalled (⚠)     lag above 0 and the start offset unmoved for the stall time
                  (kshare dashboard --stall-after)
  stale 42s       last figures, that old, of a group whose broker is down (status line)
"""
#: The help's line for the groups screen's DLQ mark, shown on a cluster that writes
#: dead letters (elsewhere there is no such mark to explain).
DLQ_MARK_HELP: Final = """\
  DLQ+12          the group's dead-letter queue topic got 12 records in the last minute,
                  as the refreshes read its end offsets (a topic several groups share
                  counts for each; the group screen's DLQ line counts the group's own)
"""
_HELP_WINDOWS: Final = f"""
[b]Windows[/b]
  Read from __share_group_state, which needs READ on that internal topic; with only
  DESCRIBE the window column stays empty and the screen says why.
  Note: {ACQUIRED_NOT_PERSISTED}.

escape, q or ? closes this help."""
HELP_TEXT: Final = _HELP_FIGURES + _HELP_WINDOWS


def help_text(*, dead_letters: bool = False) -> str:
    """The help, with the DLQ mark's line when the groups screen marks dead letters."""
    return _HELP_FIGURES + DLQ_MARK_HELP + _HELP_WINDOWS if dead_letters else HELP_TEXT


class HelpScreen(ModalScreen[None]):
    """The keys and what every figure means (``text``: ``help_text()``'s)."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[Any]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, text: str = HELP_TEXT) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._text, id="help")

    def action_close(self) -> None:
        self.dismiss(None)


class DashboardApp(App[None]):
    """The dashboard over one ``DashboardSource``.

    ``group`` opens that group's screen first (escape still leads to the list);
    ``refresh_s`` is the first refresh interval, ``stall_after_s`` how long a
    start offset may stand still under lag before the share-partition is
    called stalled; ``clock`` gives the seconds every age and rate is computed
    from.
    """

    TITLE = "kshare dashboard"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[Any]] = [
        Binding("q", "quit", "Quit"),
        # Priority: the screens and the filter box bind ctrl+c to copy.
        Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("r", "refresh_now", "Refresh"),
        Binding("plus", "slower", "Slower"),
        Binding("minus", "faster", "Faster"),
    ]

    def __init__(
        self,
        source: DashboardSource,
        *,
        group: str | None = None,
        refresh_s: float = 2.0,
        stall_after_s: float = 60.0,
        clock: Callable[[], float] = time.time,
        peek_limit: int = DEFAULT_PEEK_LIMIT,
        history: HistoryStore | None = None,
    ) -> None:
        if refresh_s <= 0:
            raise ValueError(f"refresh interval must be above 0 s, got {refresh_s:g}")
        if stall_after_s <= 0:
            raise ValueError(f"stall time must be above 0 s, got {stall_after_s:g}")
        super().__init__()
        self.source = source
        self.initial_group = group
        self.refresh_s = refresh_s
        self.stall_after_s = stall_after_s
        self.peek_limit = peek_limit
        self.paused = False
        self.history = history if history is not None else HistoryStore()
        self._clock = clock
        self._closed = False
        self._catching_sigint = False
        self.interrupted = False
        """Ended by ctrl+c or SIGINT: the command exits 130 instead of 0."""
        self.crash: BaseException | None = None
        """An exception that ended the app, for the command's edge to report as one line."""

    def now(self) -> float:
        return self._clock()

    def on_mount(self) -> None:
        self.push_screen(GroupsScreen())
        if self.initial_group is not None:
            self.push_screen(GroupScreen(self.initial_group))
        self.set_interval(TICK_S, self._tick)
        self._catch_sigint()

    def _catch_sigint(self) -> None:
        """Turn SIGINT into ``action_interrupt``: the app shuts down and gives the terminal back.

        Left alone, asyncio cancels Textual's main task on SIGINT and Textual
        swallows the cancellation: the process ended with 0. Headless (the Pilot
        tests) there is no terminal user to interrupt, and the test runner keeps
        its own ctrl+c.
        """
        if self.is_headless:
            return
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self._on_sigint)
        except (NotImplementedError, RuntimeError, ValueError):
            return  # no signal handlers on this platform or off the main thread
        self._catching_sigint = True

    def _release_sigint(self) -> None:
        if self._catching_sigint:
            self._catching_sigint = False
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)

    def _on_sigint(self) -> None:
        self.call_next(self.action_interrupt)

    def _tick(self) -> None:
        # While the app shuts down, screens lose their widgets before this timer stops.
        if not self.is_running:
            return
        screen = self.screen
        if isinstance(screen, LiveScreen):
            screen.tick()

    # -- history ---------------------------------------------------------------

    def record_group(self, inflight: GroupInflight, at: float) -> None:
        """Add one reading per share-partition, and the group's totals, to the history.

        Every refresh of the group screen runs this over every share-partition, so
        its loop stays lean: the figures go into the series as they are (``History.record``)
        and the group's sums are kept as it goes, a sum unknown once a part is.
        """
        history = self.history
        series_of = history.series
        group_id = inflight.group_id
        keys = []
        start_sum: int | None = 0
        complete_sum: int | None = 0
        end_sum: int | None = 0
        for partition in inflight.partitions:
            key = partition_key(group_id, partition.topic, partition.partition)
            keys.append(key)
            series = series_of(key)
            start_offset, end_offset, window = (
                partition.start_offset,
                partition.end_offset,
                partition.window,
            )
            if window is None:
                complete = None
                series.recorded_move(None, exact=False)
            else:
                complete, moved = window.delivery_complete_count, window.start_offset_moved
                if moved is None:
                    series.recorded_move(None, exact=False)
                else:
                    series.recorded_move(moved.at_ms / 1000, exact=moved.exact)
            series.record(at, partition.lag, start_offset, complete, end_offset)
            if start_sum is not None:
                start_sum = _plus(start_sum, start_offset)
            if complete_sum is not None:
                complete_sum = _plus(complete_sum, complete)
            if end_sum is not None:
                end_sum = _plus(end_sum, end_offset)
        history.retain(keys, prefix=("p", group_id))
        total = _whole_total(inflight.total_lag, inflight.total_lag_complete)
        history.add(group_key(group_id), LagReading.of(at, total))
        if inflight.partitions:
            history.add(
                completed_key(group_id),
                LagReading(at, total, start_sum, complete_sum, end_sum),
            )

    def record_overview(self, overview: GroupsOverview, at: float) -> None:
        for group in overview.groups:
            total = _whole_total(group.total_lag, group.total_lag_complete)
            self.history.add(group_key(group.group_id), LagReading.of(at, total))

    # -- actions ---------------------------------------------------------------

    def back(self) -> None:
        """Escape: one screen back; the groups list is the bottom."""
        if len(self.screen_stack) > 2:
            self.pop_screen()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            groups = next(
                (screen for screen in self.screen_stack if isinstance(screen, GroupsScreen)), None
            )
            marks = groups is not None and groups.marks_dead_letters
            self.push_screen(HelpScreen(help_text(dead_letters=marks)))

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self._tick()

    def action_refresh_now(self) -> None:
        screen = self.screen
        if isinstance(screen, LiveScreen):
            screen.refresh_now()

    def action_slower(self) -> None:
        self._set_refresh(next((step for step in REFRESH_STEPS if step > self.refresh_s), None))

    def action_faster(self) -> None:
        self._set_refresh(
            next((step for step in reversed(REFRESH_STEPS) if step < self.refresh_s), None)
        )

    def _set_refresh(self, seconds: float | None) -> None:
        if seconds is None:
            self.bell()
            return
        self.refresh_s = seconds
        self.notify(f"refreshing every {fmt.interval(seconds)}", timeout=2)
        self._tick()

    # -- failures --------------------------------------------------------------
    # Textual has no public hook for an unhandled exception: these override its private
    # App._handle_exception and _fatal_error (and call MessagePump._close_messages_no_wait),
    # held by pyproject.toml's textual bound and tests/test_third_party_bounds.py.

    def _handle_exception(self, error: Exception) -> None:
        if self.crash is None:
            self.crash = error
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        # Textual's own report is a traceback with local variables, which would print
        # SASL passwords; the command's edge reports ``crash`` instead (its traceback
        # only with --debug, secrets redacted).
        self.bell()
        self._close_messages_no_wait()

    async def action_quit(self) -> None:
        await self.close_source()
        self.exit()

    async def action_interrupt(self) -> None:
        """Ctrl+C or SIGINT: quit, and say it was an interruption (exit 130, not 0)."""
        self.interrupted = True
        await self.close_source()
        self.exit(return_code=int(ExitCode.INTERRUPTED))

    async def on_unmount(self) -> None:
        self._release_sigint()
        await self.close_source()

    async def close_source(self) -> None:
        if self._closed:
            return
        self._closed = True
        source = self.source
        if isinstance(source, ClosableSource):
            await source.aclose()


def _whole_total(total: int | None, complete: bool | None) -> int | None:
    """The total lag for trends and rates: only a total over every share-partition.

    A sum that leaves out share-partitions of unknown lag jumps as they come and go;
    its trend would be that jump, not the queue's.
    """
    return None if complete is False else total


def _plus(total: int | None, value: int | None) -> int | None:
    """A sum that becomes unknown as soon as one part is (Kafka's -1 sentinels are unknown)."""
    return None if total is None or value is None or value < 0 else total + value
