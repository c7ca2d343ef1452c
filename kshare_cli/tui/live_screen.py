"""The part every dashboard screen shares: fetch in a worker, keep the last data, say its age.

A screen never awaits the broker itself. ``refresh_now`` starts one async
Textual worker (the admin client is asyncio; the blocking state-topic and
peek reads are already in threads below it), and the worker's answer comes
back as a past-tense message (``Fetched`` or ``FetchFailed``) that the
screen applies on the UI loop. At most one fetch per screen is under way: a
broker slower than the refresh interval does not pile up requests, the
screen just says its data is getting old. The app's ticker calls ``tick``
several times a second, which starts the next fetch when one is due and
rewrites the status line so the age keeps counting even when nothing
arrives.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar, cast

from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from kshare_cli.tui.freshness import Freshness

if TYPE_CHECKING:
    from kshare_cli.tui.app import DashboardApp

__all__ = ["LiveScreen", "StatusLine", "one_line"]

D = TypeVar("D")


class StatusLine(Static):
    """The one line that says how old the screen's data is (a warning colour when stale)."""

    DEFAULT_CSS = """
    StatusLine { height: 1; color: $text-muted; }
    StatusLine.stale { color: $warning; text-style: bold; }
    """


class LiveScreen(Screen[None], Generic[D]):
    """A screen whose data comes from the dashboard's source, refreshed on a timer."""

    class Fetched(Message):
        """A fetch answered; ``at`` is the dashboard clock when it did."""

        def __init__(self, data: object, at: float) -> None:
            super().__init__()
            self.data = data
            self.at = at

    class FetchFailed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    STATUS_ID: ClassVar[str] = "status"

    def __init__(self, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.freshness = Freshness()
        self.data: D | None = None
        self._last_started: float | None = None

    # -- to override -----------------------------------------------------------

    @abstractmethod
    async def fetch(self) -> D:
        """Ask the source for this screen's data (runs in a worker); every screen defines it."""

    def apply(self, data: D, at: float) -> None:
        """Show new data (on the UI loop)."""

    def partial_note(self, data: D) -> str | None:
        """What an answer lacks, for the status line (a broker down): None when complete.

        A partial answer is fresh data, not stale data: the rows that came are shown,
        and the status line names what did not, so a broker down is never mistaken for
        a quiet cluster.
        """
        return None

    def compose_status(self) -> ComposeResult:
        yield StatusLine("loading…", id=self.STATUS_ID)

    # -- shared ----------------------------------------------------------------

    @property
    def dashboard(self) -> DashboardApp:
        return cast("DashboardApp", self.app)

    def on_mount(self) -> None:
        self.refresh_now()

    def on_screen_resume(self) -> None:
        self.tick()

    def on_unmount(self) -> None:
        # A fetch stuck on a silent broker must not outlive its screen.
        self.workers.cancel_node(self)

    def tick(self) -> None:
        """Start the next fetch when one is due, and bring the status line up to date."""
        dashboard = self.dashboard
        now = dashboard.now()
        due = self._last_started is None or now - self._last_started >= dashboard.refresh_s
        if due and not dashboard.paused and not self.freshness.fetching:
            self.refresh_now()
        self.show_status()

    def refresh_now(self) -> None:
        """Fetch now, unless a fetch is already under way (then its answer is awaited)."""
        if self.freshness.fetching:
            self.show_status()
            return
        now = self.dashboard.now()
        self._last_started = now
        self.freshness = self.freshness.started(now)
        self.run_worker(self._fetch(), group="fetch", exit_on_error=False)
        self.show_status()

    async def _fetch(self) -> None:
        try:
            data = await self.fetch()
        except Exception as error:  # noqa: BLE001 -- shown on the status line; last data stays
            self.post_message(self.FetchFailed(one_line(error)))
        else:
            self.post_message(self.Fetched(data, self.dashboard.now()))

    def on_live_screen_fetched(self, message: LiveScreen.Fetched) -> None:
        message.stop()
        self.data = cast(D, message.data)
        self.freshness = self.freshness.succeeded(message.at, self.partial_note(self.data))
        self.apply(self.data, message.at)
        self.show_status()

    def on_live_screen_fetch_failed(self, message: LiveScreen.FetchFailed) -> None:
        message.stop()
        self.freshness = self.freshness.failed(message.error)
        self.show_status()

    def show_status(self) -> None:
        dashboard = self.dashboard
        status = self.freshness.status(
            dashboard.now(), dashboard.refresh_s, paused=dashboard.paused
        )
        for line in self.query(StatusLine):
            line.update(status.text)
            line.set_class(status.stale, "stale")


def one_line(error: BaseException) -> str:
    """An error as the status line shows it: kshare's own message, else its type and first line."""
    text = str(error).strip().splitlines()
    detail = text[0] if text else ""
    from kshare_cli.errors import KshareError

    if isinstance(error, KshareError) and detail:
        return detail
    name = type(error).__name__
    return f"{name}: {detail}" if detail else name
