"""The group screen's DLQ line: the broker's dead letters for the group (Kafka 4.4, issue 25).

Scenario D is replayed on the sandbox's 4.4 profile (``tests/cli/test_dead_letter_queues``'s
fixture), so the broker itself wrote golden-dg's three dead letters; the screen must show
them once each, by reason, and age the newest with the dashboard's clock.
"""

from __future__ import annotations

from textual.widgets import Static

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.group_screen import GroupScreen
from kshare_cli.tui.source import LiveSource
from tests.cli.test_dead_letter_queues import DLQ, GROUP, scenario_d  # noqa: F401 -- a fixture
from tests.support.sandbox import Cluster
from tests.tui.scenario import FakeClock
from tests.tui.test_dashboard import SIZE, loaded, run, until


@run
async def test_the_group_screen_shows_the_dead_letters_by_reason(scenario_d: Cluster) -> None:  # noqa: F811
    settings = resolve_settings(
        bootstrap=scenario_d.bootstrap, command_config=None, profile=None, environ={}
    )
    clock = FakeClock(0.0)
    app = DashboardApp(LiveSource(settings, timeout_s=15), group=GROUP, refresh_s=1.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen), what="the group")
        await until(pilot, lambda: screen.dead_letter_queue is not None, what="the DLQ lookup")
        queue = screen.dead_letter_queue
        assert queue is not None and screen.dead_letter_error is None
        assert (queue.topic, queue.records, queue.rejected, queue.delivery_limit) == (DLQ, 3, 2, 1)
        assert queue.newest_timestamp_ms is not None
        clock.now = queue.newest_timestamp_ms / 1000 + 42
        line = screen.query_one("#dlq", Static)
        expected = f"DLQ {DLQ}: 3 records (2 rejected, 1 over the delivery limit), newest 42s ago"
        await until(pilot, lambda: str(line.content) == expected, what="the DLQ line")
        assert line.display
