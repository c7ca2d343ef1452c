"""The groups screen while a broker does not list its groups (issue 23), offline.

A scripted source answers what ``InflightService.overview`` answers during an
outage (the live broker's groups, and a BrokerFailure for the other) and the
dashboard's clock is a test's, so the words and ages on screen are exact: the
unlisted group keeps its row and last figures, its name marked with the age of
those figures, which counts on; the status line names the broker; and the next
complete answer makes the row fresh again with no key pressed. The sandbox
version is ``test_dashboard_faults.py``.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from kshare_cli.admin.inflight import GroupInflight, GroupsOverview, GroupSummary
from kshare_cli.admin.models import BrokerFailure
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.groups_screen import GroupsScreen
from kshare_cli.wire.errors import KafkaError
from tests.tui.scenario import FakeClock
from tests.tui.test_dashboard import SIZE, cells, run, status_of, until

NETWORK_EXCEPTION = 13
DOWN = BrokerFailure(2, "127.0.0.1", 9092, KafkaError.of(NETWORK_EXCEPTION, "refused"))
NAMED = "broker 2 (127.0.0.1:9092) did not list its groups: 1 group unknown"


def summary(group_id: str, lag: int) -> GroupSummary:
    return GroupSummary(group_id, "Stable", 1, 3, lag)


class ScriptedSource:
    """Answers ``answer`` to every overview; counts the calls."""

    def __init__(self, answer: GroupsOverview) -> None:
        self.answer = answer
        self.calls = 0

    async def overview(self) -> GroupsOverview:
        self.calls += 1
        return self.answer

    async def group(self, group_id: str) -> GroupInflight:
        raise AssertionError("not asked in these tests")

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        raise AssertionError("not asked in these tests")


@run
async def test_an_unlisted_group_stays_stale_with_its_age_and_comes_back_fresh() -> None:
    clock = FakeClock()
    source = ScriptedSource(GroupsOverview((summary("live", 10), summary("orphan", 20))))
    app = DashboardApp(source, refresh_s=2.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        table: DataTable[Any] = screen.query_one("#groups", DataTable)
        await until(pilot, lambda: table.row_count == 2, what="both groups")
        assert cells(table, "orphan")[0] == "orphan"

        source.answer = GroupsOverview((summary("live", 15),), (DOWN,))
        clock.now += 3
        await until(pilot, lambda: cells(table, "live")[4] == "15", what="the live group's lag")
        assert cells(table, "orphan") == ["orphan stale 3s", "Stable", "1", "3", "20", "", "-", "-"]
        status = status_of(screen)
        assert NAMED in str(status.render()) and status.has_class("stale")
        assert str(screen.query_one("#title").render()) == "Share groups (2), 1 stale"

        # Nothing new about it: its age counts on, refresh after refresh.
        source.answer = GroupsOverview((summary("live", 18),), (DOWN,))
        clock.now += 60
        await until(pilot, lambda: cells(table, "live")[4] == "18", what="the next refresh")
        assert cells(table, "orphan")[0] == "orphan stale 1m03s"
        assert cells(table, "orphan")[4] == "20"

        # The broker lists again: fresh, no key pressed.
        source.answer = GroupsOverview((summary("live", 18), summary("orphan", 25)))
        clock.now += 3
        await until(pilot, lambda: cells(table, "orphan")[4] == "25", what="the orphan fresh")
        assert cells(table, "orphan")[0] == "orphan"
        assert "did not list" not in str(status.render())
        assert not status.has_class("stale")
        assert str(screen.query_one("#title").render()) == "Share groups (2)"
        await pilot.press("q")


@run
async def test_a_stale_row_ages_between_refreshes() -> None:
    """Paused, no refresh comes: the stale age still follows the clock, as the status line's."""
    clock = FakeClock()
    source = ScriptedSource(GroupsOverview((summary("live", 1), summary("orphan", 2))))
    app = DashboardApp(source, refresh_s=2.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        table: DataTable[Any] = screen.query_one("#groups", DataTable)
        await until(pilot, lambda: table.row_count == 2, what="both groups")
        source.answer = GroupsOverview((summary("live", 1),), (DOWN,))
        clock.now += 2
        await until(pilot, lambda: "stale" in cells(table, "orphan")[0], what="the stale row")
        await pilot.press("p")
        calls = source.calls
        clock.now += 40
        await until(pilot, lambda: cells(table, "orphan")[0] == "orphan stale 42s", what="the age")
        assert source.calls == calls
        await pilot.press("q")
