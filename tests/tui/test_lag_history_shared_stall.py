"""The dashboard's stall verdict is the one ``kshare health`` and the exporter give.

A second copy of the rule would let the dashboard and an alert disagree about
the same share-partition, so these tests replace the shared rule and watch the
dashboard follow it.
"""

from __future__ import annotations

import pytest

from kshare_cli.services import health
from kshare_cli.tui.lag_history import History, LagReading, SinceMoved, is_stalled


def test_the_dashboard_asks_the_shared_rule_with_the_unmoved_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[int | None, float | None, float]] = []

    def verdict(lag: int | None, unmoved_s: float | None, stall_after_s: float) -> bool:
        asked.append((lag, unmoved_s, stall_after_s))
        return True

    monkeypatch.setattr(health, "is_stalled", verdict)
    # The built-in rule says no to all three (lag 0, unknown since-moved, too soon).
    assert is_stalled(0, SinceMoved(600.0, lower_bound=False), 60.0)
    assert is_stalled(5, None, 60.0)
    assert is_stalled(5, SinceMoved(12.5, lower_bound=True), 60.0)
    assert asked == [(0, 600.0, 60.0), (5, None, 60.0), (5, 12.5, 60.0)]


def test_a_history_stalls_by_the_shared_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    history = History()
    history.add(LagReading.of(0.0, 7, start_offset=3))
    history.add(LagReading.of(10.0, 7, start_offset=3))
    assert not history.stalled(10.0, 60.0)
    monkeypatch.setattr(health, "is_stalled", lambda lag, unmoved_s, after: lag == 7)
    assert history.stalled(10.0, 60.0)
