"""The flow figures on the screens: the same words and the same numbers on every screen.

A queue that fills faster than it is consumed (10 records a second consumed,
14 arriving) is the case the groups screen and the group screen used to
disagree on: "DRAIN" was the net lag decrease on one and the consumption rate
on the other, and "empty in" divided the growing lag by the consumption rate.
The source here is a few frozen answers whose offsets make those rates
exact, played with the dashboard clock set to each answer's time.
"""

from __future__ import annotations

import time
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from kshare_cli.admin.inflight import GroupInflight, GroupsOverview, GroupSummary, PartitionInflight
from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.group_screen import GroupScreen
from kshare_cli.tui.groups_screen import GroupsScreen
from kshare_cli.tui.lag_history import completed_key
from kshare_cli.tui.live_screen import LiveScreen
from tests.tui.scenario import FakeClock, RecordedSource, Stage
from tests.tui.test_dashboard import cells, run

GROUP = "filling-up"
TOPIC = "orders"
CONSUMED_PER_S = 10
ARRIVING_PER_S = 14
STEP_S = 10.0


def _stage(index: int) -> Stage:
    """Every STEP_S seconds the start offset moves 100 and the log end offset 140."""
    at = index * STEP_S
    start_offset = int(CONSUMED_PER_S * at)
    end_offset = 100 + int(ARRIVING_PER_S * at)
    lag = end_offset - start_offset
    partition = PartitionInflight(
        TOPIC, 0, None, start_offset, end_offset, lag, "broker", window=None
    )
    group = GroupInflight(GROUP, None, (partition,), window_note=None)
    overview = GroupsOverview((GroupSummary(GROUP, "Stable", 1, 1, lag),))
    return Stage(at, overview, {GROUP: group}, {})


async def _refresh_at(
    pilot: Pilot[Any], source: RecordedSource, clock: FakeClock, index: int
) -> None:
    """Answer with stage ``index`` at its time, and wait until the active screen shows it."""
    source.stage = index
    clock.now = source.stages[index].at
    await pilot.press("r")
    screen = pilot.app.screen
    deadline = time.monotonic() + 20
    while not (
        isinstance(screen, LiveScreen)
        and screen.freshness.received_at == clock.now
        and not screen.freshness.fetching
    ):
        assert time.monotonic() < deadline, f"no answer for stage {index}"
        await pilot.pause(0.02)


def _columns(table: DataTable[Any]) -> list[str]:
    return [str(column.label) for column in table.columns.values()]


def _row(table: DataTable[Any]) -> dict[str, str]:
    return dict(zip(_columns(table), cells(table, GROUP), strict=True))


@run
async def test_a_queue_filling_faster_than_it_drains_never_empties_on_either_screen() -> None:
    source = RecordedSource([_stage(index) for index in range(4)])
    clock = FakeClock(0.0)
    app = DashboardApp(source, refresh_s=3600.0, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        groups = app.screen
        assert isinstance(groups, GroupsScreen)
        await _refresh_at(pilot, source, clock, 0)
        await _refresh_at(pilot, source, clock, 1)
        table = groups.query_one("#groups", DataTable)
        assert _columns(table)[-3:] == ["TREND", "NET DRAIN", "EMPTY IN"]
        row = _row(table)
        # The lag rose 40 in 10 s: a net drain of -4/s, and no end in sight (not 140 / 10).
        assert (row["TOTAL LAG"], row["TREND"]) == ("140", "↑")
        assert (row["NET DRAIN"], row["EMPTY IN"]) == ("-4.0/s", "never")

        await pilot.press("enter")
        group = app.screen
        assert isinstance(group, GroupScreen)
        await _refresh_at(pilot, source, clock, 2)
        flow = str(group.query_one("#flow", Static).render())
        assert flow == (
            "consumed 10/s · arriving 14/s · net drain -4.0/s · empty in never (lag grows 4.0/s)"
        )
        assert "drain" not in str(group.query_one("#summary", Static).render())

        await pilot.press("escape")
        assert app.screen is groups
        await _refresh_at(pilot, source, clock, 3)
        assert (_row(table)["NET DRAIN"], _row(table)["EMPTY IN"]) == ("-4.0/s", "never")


def _half_known_stage(index: int) -> Stage:
    """The filling queue on partition 0, and a partition 1 whose lag is unknown."""
    known = _stage(index).groups[GROUP].partitions[0]
    unknown = PartitionInflight(TOPIC, 1, None, None, 9, None, None, window=None)
    group = GroupInflight(GROUP, None, (known, unknown), window_note=None)
    summary = GroupSummary(GROUP, "Stable", 1, 2, known.lag, "broker", False)
    return Stage(index * STEP_S, GroupsOverview((summary,)), {GROUP: group}, {})


@run
async def test_a_total_over_some_share_partitions_is_a_lower_bound_on_both_screens() -> None:
    # kshare describe's marking (≥N), not a bare number, and no trend from a partial sum.
    source = RecordedSource([_half_known_stage(index) for index in range(3)])
    clock = FakeClock(0.0)
    app = DashboardApp(source, refresh_s=3600.0, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        groups = app.screen
        assert isinstance(groups, GroupsScreen)
        await _refresh_at(pilot, source, clock, 0)
        await _refresh_at(pilot, source, clock, 1)
        row = _row(groups.query_one("#groups", DataTable))
        assert (row["TOTAL LAG"], row["TREND"], row["NET DRAIN"]) == ("≥140", "", "-")

        await pilot.press("enter")
        group = app.screen
        assert isinstance(group, GroupScreen)
        await _refresh_at(pilot, source, clock, 2)
        summary = str(group.query_one("#summary", Static).render())
        assert summary.endswith("total lag ≥180"), summary


def test_the_groups_rates_sum_its_share_partitions_and_say_unknown_once_one_part_is() -> None:
    """Two share-partitions consuming 10/s and 5/s: the group consumes 15/s; once one
    start offset is Kafka's -1 (unknown) the group's consumption is unknown, not 10/s."""
    app = DashboardApp(RecordedSource([_stage(0)]), clock=FakeClock(0.0))

    def answer(start_offsets: tuple[int, int], end_offset: int) -> GroupInflight:
        partitions = tuple(
            PartitionInflight(TOPIC, number, None, start, end_offset, 5, "broker", window=None)
            for number, start in enumerate(start_offsets)
        )
        return GroupInflight(GROUP, None, partitions, window_note=None)

    app.record_group(answer((0, 0), 100), 0.0)
    app.record_group(answer((100, 50), 300), 10.0)
    summed = app.history.get(completed_key(GROUP))
    assert summed is not None
    assert summed.flow().consumed_per_s == 15.0
    assert summed.flow().arriving_per_s == 40.0  # two log end offsets, 20/s each
    app.record_group(answer((200, -1), 500), 20.0)
    assert summed.latest is not None and summed.latest.start_offset is None
    assert summed.flow(window_s=10.0).consumed_per_s is None  # not (200 - 150) / 10
