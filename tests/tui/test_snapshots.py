"""SVG snapshots of every screen, over a recorded sandbox scenario (see ``scenario.py``).

The data on screen came from a broker: the recorded answers of the live
source at five stages of a fixed plan of accepts, releases and rejects. Each
test replays the stages with the dashboard clock set to the stage's time, so
the sparklines, drain rates, ages and stall warnings are history the app
built itself, and the pictures are the same on every run.

Update after an intended change: ``pytest tests/tui/test_snapshots.py --snapshot-update``,
then look at the SVGs (``__snapshots__/test_snapshots/``) before committing them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from textual.pilot import Pilot

from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.live_screen import LiveScreen
from kshare_cli.tui.partition_screen import PartitionScreen
from tests.tui.scenario import DESCRIBE_ONLY, MAIN_GROUP, FakeClock, RecordedSource, Stage

SIZE = (120, 40)
SnapCompare = Callable[..., bool]


async def _settled(pilot: Pilot[Any], screen: object, at: float) -> None:
    deadline = time.monotonic() + 20
    while not (
        isinstance(screen, LiveScreen)
        and screen.freshness.received_at == at
        and not screen.freshness.fetching
    ):
        assert time.monotonic() < deadline, f"no answer for the stage at {at}"
        await pilot.pause(0.02)


def _staged(
    stages: Sequence[Stage], *, group: str | None = None
) -> tuple[DashboardApp, Callable[[Pilot[Any]], Awaitable[None]]]:
    """An app over the recorded stages, and a Pilot script that plays them in order."""
    source = RecordedSource(stages)
    clock = FakeClock(stages[0].at)
    app = DashboardApp(source, group=group, refresh_s=2.0, stall_after_s=60.0, clock=clock)

    async def play(pilot: Pilot[Any]) -> None:
        for index, stage in enumerate(stages):
            source.stage = index
            clock.now = stage.at
            if index:
                await pilot.press("r")
            await _settled(pilot, pilot.app.screen, stage.at)

    return app, play


def test_groups_screen(snap_compare: SnapCompare, snapshot_stages: list[Stage]) -> None:
    """Both groups while records flow (stage 4): total lag, trend, net drain, time to empty."""
    app, play = _staged(snapshot_stages[:4])
    assert snap_compare(app, terminal_size=SIZE, run_before=play)


def test_group_screen(snap_compare: SnapCompare, snapshot_stages: list[Stage]) -> None:
    """Share-partitions with lag sparklines, window strips and stall warnings; the member."""
    app, play = _staged(snapshot_stages, group=MAIN_GROUP)
    assert snap_compare(app, terminal_size=SIZE, run_before=play)


def test_share_partition_screen(snap_compare: SnapCompare, snapshot_stages: list[Stage]) -> None:
    """orders:0 zoomed: histogram, the most delivered offsets, the records from the start offset."""
    app, play = _staged(snapshot_stages, group=MAIN_GROUP)

    async def drill_in(pilot: Pilot[Any]) -> None:
        await play(pilot)
        await pilot.press("enter")
        screen = pilot.app.screen
        assert isinstance(screen, PartitionScreen) and (screen.topic, screen.partition) == (
            "orders",
            0,
        )
        await _settled(pilot, screen, snapshot_stages[-1].at)

    assert snap_compare(app, terminal_size=SIZE, run_before=drill_in)


def test_group_screen_with_only_describe(
    snap_compare: SnapCompare, snapshot_stages: list[Stage]
) -> None:
    """The state topic refused: offsets and lag stay, the window column is empty and says why."""
    refused = []
    for stage in snapshot_stages:
        group = stage.groups[MAIN_GROUP]
        blind = dataclasses.replace(
            group,
            partitions=tuple(
                dataclasses.replace(partition, window=None) for partition in group.partitions
            ),
            window_note=DESCRIBE_ONLY,
        )
        refused.append(dataclasses.replace(stage, groups={**stage.groups, MAIN_GROUP: blind}))
    app, play = _staged(refused, group=MAIN_GROUP)
    assert snap_compare(app, terminal_size=SIZE, run_before=play)


def test_help_screen(snap_compare: SnapCompare, snapshot_stages: list[Stage]) -> None:
    app, play = _staged(snapshot_stages[:1], group=MAIN_GROUP)

    async def help_over_the_group(pilot: Pilot[Any]) -> None:
        await play(pilot)
        await pilot.press("question_mark")

    assert snap_compare(app, terminal_size=SIZE, run_before=help_over_the_group)
