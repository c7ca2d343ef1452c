"""What the status line and the cells say: ages, staleness, durations and rates."""

from __future__ import annotations

import math

from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.freshness import Freshness


def test_fresh_data_says_its_age_and_the_interval() -> None:
    status = Freshness().started(100.0).succeeded(101.0).status(103.0, 2.0)
    assert status.text == "updated 2 s ago · refresh every 2 s"
    assert not status.stale


def test_a_fetch_slower_than_the_interval_makes_the_data_stale() -> None:
    freshness = Freshness().succeeded(100.0).started(103.0)
    assert not freshness.status(104.0, 2.0).stale
    status = freshness.status(112.0, 2.0)
    assert status.text == "stale: 12 s old — broker not answering"
    assert status.stale


def test_a_slow_fetch_after_a_partial_answer_names_what_the_answer_lacked() -> None:
    """Issue 23: the refresh waits on the broker the last answer named; the status line
    said "broker not answering" and named none."""
    partial = "broker 2 (127.0.0.1:9092) did not list its groups: 1 group unknown"
    freshness = Freshness().succeeded(100.0, partial).started(103.0)
    assert freshness.status(104.0, 2.0).text == (
        f"updated 4 s ago · refresh every 2 s — partial: {partial}"
    )
    status = freshness.status(108.0, 2.0)
    assert status.text == f"stale: 8 s old — waiting on a refresh; partial: {partial}"
    assert status.stale


def test_a_failed_fetch_keeps_the_age_and_says_why() -> None:
    status = Freshness().succeeded(100.0).started(101.0).failed("cannot connect").status(130, 2)
    assert status.text == "stale: 30 s old — cannot connect"
    assert status.stale
    assert Freshness().succeeded(100.0).failed("x").succeeded(131.0).error is None


def test_before_the_first_answer() -> None:
    assert Freshness().started(0.0).status(1.0, 2.0).text == "loading…"
    waiting = Freshness().started(0.0).status(7.0, 2.0)
    assert waiting.text == "no data yet: 7 s — broker not answering" and waiting.stale
    assert Freshness().failed("refused").status(1.0, 2.0).text == "no data yet — refused"


def test_paused() -> None:
    status = Freshness().succeeded(0.0).status(75.0, 2.0, paused=True)
    assert status.text == "paused — data 1 min 15 s old (p resumes)"


def test_durations_and_rates() -> None:
    assert [fmt.duration(s) for s in (0, 59.9, 60, 61, 3599, 3600, 3660, 48 * 3600 + 7200)] == [
        "0 s",
        "59 s",
        "1 min",
        "1 min 01 s",
        "59 min 59 s",
        "1 h",
        "1 h 01 min",
        "2 d 2 h",
    ]
    assert [fmt.short(s) for s in (None, 5, 90, 7500, 200_000, math.inf)] == [
        "-",
        "5s",
        "1m30s",
        "2h05m",
        "2d07h",
        "∞",
    ]
    assert fmt.plural(1, "member") == "1 member" and fmt.plural(2, "member") == "2 members"
    assert fmt.duration(math.inf) == "∞"
    assert fmt.duration(None) == "-"
    assert fmt.since(12, lower_bound=True) == "≥12 s"
    assert [fmt.rate(r) for r in (None, 0, 0.25, 9.94, 12.4, 1250)] == [
        "-",
        "0/s",
        "0.2/s",
        "9.9/s",
        "12/s",
        "1,250/s",
    ]
    assert fmt.interval(0.5) == "0.5 s"
    assert fmt.number(1234567) == "1,234,567"
    assert fmt.truncate("abcdef", 4) == "abc…"
