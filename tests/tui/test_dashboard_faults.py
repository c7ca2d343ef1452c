"""The dashboard on a three-node sandbox cluster with a node stopped (issue 16).

The live source over a real (sandbox) cluster, driven by Textual's Pilot: the
other groups stay fresh, the status line names the broker that is down by id
and address, and a group screen is not held up by the delivery-limit lookup,
which used to go to the lowest broker id (here the stopped one).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.group_screen import GroupScreen
from kshare_cli.tui.groups_screen import GroupsScreen
from kshare_cli.tui.live_screen import LiveScreen
from kshare_cli.tui.source import LiveSource
from tests.cli.test_cluster_faults import make_bed
from tests.support.sandbox import StartCluster
from tests.tui.test_dashboard import SIZE, run, status_of, until

#: The stopped node: the lowest id, which the delivery-limit lookup asked first.
VICTIM = 1
NEVER_FENCED_MS = 600_000


def loaded(screen: object) -> bool:
    return isinstance(screen, LiveScreen) and screen.data is not None


def test_with_a_node_stopped_the_dashboard_shows_the_rest_and_names_the_broker(
    sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    sandbox = sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS)
    bed = make_bed(sandbox, tmp_path / "config.toml")
    settings = ConnectionSettings(bootstrap_servers=tuple(bed.kshare.bootstrap.split(",")))
    sandbox.stop_node(VICTIM)
    victim = f"broker {VICTIM} ({bed.address(VICTIM)})"
    alive = sorted(group for node, group in bed.groups.items() if node != VICTIM)

    @run
    async def overview() -> None:
        app = DashboardApp(LiveSource(settings, timeout_s=30, read_state=False), refresh_s=1.0)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, GroupsScreen)
            started = time.monotonic()
            await until(pilot, lambda: loaded(screen), within=15, what="the groups")
            elapsed = time.monotonic() - started
            status = str(status_of(screen).render())
            assert f"{victim} not answering" in status, status
            assert status_of(screen).has_class("stale")
            assert elapsed < 10, f"first partial answer after {elapsed:.2f} s"
            data: Any = screen.data
            assert [group.group_id for group in data.groups] == alive
            # Still refreshing (not stuck on the dead broker): a second answer comes.
            first = screen.freshness.received_at
            await until(
                pilot,
                lambda: screen.freshness.received_at != first,
                within=15,
                what="the next refresh",
            )
            assert f"{victim} not answering" in str(status_of(screen).render())
            await pilot.press("q")

    @run
    async def group_screen() -> None:
        group = alive[0]
        app = DashboardApp(
            LiveSource(settings, timeout_s=30, read_state=False), group=group, refresh_s=1.0
        )
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, GroupScreen)
            started = time.monotonic()
            await until(pilot, lambda: loaded(screen), within=15, what="the group")
            elapsed = time.monotonic() - started
            assert elapsed < 10, f"the group screen answered after {elapsed:.2f} s"
            data: Any = screen.data
            # The limit came from a live broker (the sandbox's default), not from node 1.
            assert data.delivery_count_limit is not None
            assert len(data.partitions) == 3
            await pilot.press("q")

    overview()
    group_screen()
