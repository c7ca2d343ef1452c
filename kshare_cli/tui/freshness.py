"""How old the data on a screen is, and what the status line says about it.

A broker that stops answering must show as data getting old, never as a
frozen screen: every screen keeps its last answer and says how old it is and
why nothing newer came ("stale: 12 s old — broker not answering"). Pure, so
the words are tested without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kshare_cli.tui import humanize as fmt

__all__ = ["Freshness", "StatusLineText"]

NOT_ANSWERING = "broker not answering"


@dataclass(frozen=True, slots=True)
class StatusLineText:
    """What the status line says: its text, and whether it is a warning (drawn as one)."""

    text: str
    stale: bool


@dataclass(frozen=True, slots=True)
class Freshness:
    """When the screen's data arrived, whether a fetch is under way, and how the last one ended.

    Times are the dashboard clock's seconds. ``error`` is the last failure's
    one-line message; it is cleared by the next success.
    """

    received_at: float | None = None
    started_at: float | None = None
    error: str | None = None
    #: What the last answer lacked (a broker not answering): the data is fresh but partial.
    partial: str | None = None

    def started(self, at: float) -> Freshness:
        return replace(self, started_at=at)

    def succeeded(self, at: float, partial: str | None = None) -> Freshness:
        return Freshness(received_at=at, started_at=None, error=None, partial=partial)

    def failed(self, error: str) -> Freshness:
        return replace(self, started_at=None, error=error)

    @property
    def fetching(self) -> bool:
        return self.started_at is not None

    def overdue(self, now: float, refresh_s: float) -> bool:
        """A fetch has been under way for longer than the refresh interval."""
        return self.started_at is not None and now - self.started_at > refresh_s

    def stale(self, now: float, refresh_s: float) -> bool:
        return self.error is not None or self.overdue(now, refresh_s)

    def status(self, now: float, refresh_s: float, *, paused: bool = False) -> StatusLineText:
        every = f"every {fmt.interval(refresh_s)}"
        if self.received_at is None:
            if self.error is not None:
                return StatusLineText(f"no data yet — {self.error}", stale=True)
            waited = 0.0 if self.started_at is None else now - self.started_at
            if self.started_at is not None and waited > refresh_s:
                return StatusLineText(
                    f"no data yet: {fmt.duration(waited)} — {NOT_ANSWERING}", True
                )
            return StatusLineText("loading…", stale=False)
        age = fmt.duration(now - self.received_at)
        if paused:
            return StatusLineText(f"paused — data {age} old (p resumes)", stale=False)
        if self.error is not None:
            return StatusLineText(f"stale: {age} old — {self.error}", stale=True)
        if self.overdue(now, refresh_s) and self.partial is not None:
            # The refresh waits on the broker the last answer named: say which, not "a broker".
            return StatusLineText(
                f"stale: {age} old — waiting on a refresh; partial: {self.partial}", True
            )
        if self.overdue(now, refresh_s):
            return StatusLineText(f"stale: {age} old — {NOT_ANSWERING}", stale=True)
        if self.partial is not None:
            return StatusLineText(
                f"updated {age} ago · refresh {every} — partial: {self.partial}", True
            )
        return StatusLineText(f"updated {age} ago · refresh {every}", stale=False)
