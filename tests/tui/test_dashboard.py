"""The dashboard driven by keys (Textual's Pilot) over a real share group.

Every test reads ``live_group`` through the live source (InflightService, the
state-topic tailer, the peek), so it runs on the sandbox and on a real
cluster alike. Where a test needs the broker to misbehave (a fetch that never
returns, a state topic the operator may not read), the source is wrapped, and
only that one call is changed.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import Any

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from kshare_cli.admin.inflight import GroupInflight, GroupsOverview
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.state.records import DeliveryState, StateBatch
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.state.sources import TailingStateSource
from kshare_cli.state.tailer import StateTopicUnavailable
from kshare_cli.state.window import ACQUIRED_NOT_PERSISTED
from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.app import DashboardApp, HelpScreen
from kshare_cli.tui.group_screen import GroupScreen, partition_row_key
from kshare_cli.tui.groups_screen import GroupsScreen
from kshare_cli.tui.lag_history import partition_key
from kshare_cli.tui.live_screen import LiveScreen, StatusLine
from kshare_cli.tui.partition_screen import PartitionScreen
from kshare_cli.tui.source import LiveSource
from kshare_cli.tui.widgets import FilterInput, LazyCell, RowsView
from tests.tui.scenario import DESCRIBE_ONLY, FakeClock, LiveGroup

SIZE = (120, 40)


async def until(
    pilot: Pilot[Any], condition: Callable[[], object], within: float = 20, what: str = ""
) -> None:
    """Let the app run until ``condition()`` holds (the UI keeps working meanwhile)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.05)


def cells(table: DataTable[Any], key: str) -> list[str]:
    """A row's cells as drawn (a LazyCell is drawn here if it was not on screen yet)."""
    drawn = [cell.text if isinstance(cell, LazyCell) else cell for cell in table.get_row(key)]
    return [cell.plain if isinstance(cell, Text) else str(cell) for cell in drawn]


def text_of(screen: LiveScreen[Any], selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def status_of(screen: LiveScreen[Any]) -> StatusLine:
    return screen.query_one(StatusLine)


def loaded(screen: object) -> bool:
    return isinstance(screen, LiveScreen) and screen.data is not None


def run(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body on its own event loop (Textual's Pilot is async)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return wrapper


def live_app(live_group: LiveGroup, **options: Any) -> DashboardApp:
    return DashboardApp(live_group.source(), **options)


@run
async def test_enter_drills_into_the_group_and_a_share_partition_escape_comes_back(
    live_group: LiveGroup,
) -> None:
    app = live_app(live_group, refresh_s=1.0)
    async with app.run_test(size=SIZE) as pilot:
        groups = app.screen
        assert isinstance(groups, GroupsScreen)
        await until(pilot, lambda: loaded(groups), what="the groups")
        # Other tests' groups share the cluster: filter down to ours.
        await pilot.press("slash", *live_group.group, "enter")
        table = groups.query_one("#groups", DataTable)
        await until(pilot, lambda: table.row_count == 1, what="the filtered group")
        assert cells(table, live_group.group)[0] == live_group.group
        await pilot.press("enter")
        group = app.screen
        assert isinstance(group, GroupScreen) and group.group_id == live_group.group
        await until(pilot, lambda: loaded(group), what="the group")
        partitions = group.query_one("#partitions", RowsView)
        assert partitions.row_count == 2
        for partition in (0, 1):
            row = group.row_fields(partition_row_key(live_group.topic, partition))
            assert row["PART"] == str(partition)
            assert 0 <= int(row["START"]) <= LiveGroup.START_AT_MOST[partition]
            assert row["END"] == str(LiveGroup.END[partition])
            assert row["LAG"] == str(LiveGroup.LAG[partition])
        summary = text_of(group, "#summary")
        assert "Empty" in summary and "0 members" in summary and "total lag 4" in summary
        data = group.data
        assert data is not None
        if data.window_note is None:
            row = group.row_fields(partition_row_key(live_group.topic, 0))
            assert row["ARCHIVED"] == "1"  # offset 7 was rejected
            assert "╳" in row["IN-FLIGHT WINDOW"]
            assert ACQUIRED_NOT_PERSISTED in text_of(group, "#note")
        await pilot.press("enter")
        partition_screen = app.screen
        assert isinstance(partition_screen, PartitionScreen)
        assert (partition_screen.topic, partition_screen.partition) == (live_group.topic, 0)
        await until(pilot, lambda: loaded(partition_screen), what="the share-partition")
        start_offset = data.partitions[0].start_offset
        assert f"start offset {start_offset}" in text_of(partition_screen, "#title")
        peek = partition_screen.query_one("#peek", DataTable)
        await until(pilot, lambda: peek.row_count > 0, what="the peek")
        # From the start offset on, up to 10 records: offsets 6 and 7 among them.
        assert cells(peek, str(start_offset))[0] == str(start_offset)
        assert peek.row_count == 10 - (start_offset or 0)
        if data.window_note is None:
            assert cells(peek, "6")[1] == "available"  # released: redelivery pending
            assert cells(peek, "7")[1] == "archived"
        await pilot.press("escape")
        assert app.screen is group
        await pilot.press("escape")
        assert app.screen is groups
        await pilot.press("escape")  # the list is the bottom: escape clears the filter only
        assert app.screen is groups
        await until(pilot, lambda: table.row_count >= 1)
        assert groups.filter_text == ""


@run
async def test_pause_interval_refresh_help_and_quit_keys(live_group: LiveGroup) -> None:
    app = live_app(live_group, group=live_group.group, refresh_s=2.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        status = status_of(screen)

        await pilot.press("p")
        assert app.paused
        assert str(status.render()).startswith("paused")
        received = screen.freshness.received_at
        await pilot.pause(0.3)
        assert screen.freshness.received_at == received and not screen.freshness.fetching
        await pilot.press("p")
        assert not app.paused

        await pilot.press("plus")
        assert app.refresh_s == 5.0
        await pilot.press("minus", "minus")
        assert app.refresh_s == 1.0
        await until(pilot, lambda: "every 1 s" in str(status.render()))

        await until(pilot, lambda: not screen.freshness.fetching)
        before = screen.freshness.received_at
        assert before is not None
        await pilot.press("r")
        await until(pilot, lambda: (screen.freshness.received_at or 0) > before, what="refresh")

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("#help").render())
        assert "p               pause or resume" in help_text
        assert "ctrl+c          quit (exit code 130" in help_text
        await pilot.press("escape")
        assert app.screen is screen

        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, what="the app to quit")
    assert app.return_code == 0


@run
async def test_ctrl_c_quits_from_any_screen_with_the_interrupted_exit_code(
    live_group: LiveGroup,
) -> None:
    """Ctrl+C quits (exit 130, as an interrupt), even from the filter box or the help."""
    for before in (("slash", "x"), ("question_mark",), ()):
        app = live_app(live_group, group=live_group.group)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: loaded(screen))  # noqa: B023 -- awaited in this loop
            await pilot.press(*before)
            await pilot.press("ctrl+c")
            await until(pilot, lambda: not app.is_running, what="ctrl+c to quit")  # noqa: B023
        assert (app.return_code, app.interrupted) == (130, True), before


@run
async def test_filter_on_the_group_screen(live_group: LiveGroup) -> None:
    app = live_app(live_group, group=live_group.group)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        table = screen.query_one("#partitions", RowsView)
        assert table.row_count == 2
        await pilot.press("slash", *f"{live_group.topic}:1")
        assert table.row_count == 1
        assert screen.row_fields(partition_row_key(live_group.topic, 1))["PART"] == "1"
        await pilot.press("enter")  # keeps the filter, back to the table
        assert table.has_focus and table.row_count == 1
        await pilot.press("escape")  # clears it; the screen stays
        assert app.screen is screen and table.row_count == 2


@run
async def test_the_filter_reopens_with_the_filter_in_force_and_typing_refines_it(
    live_group: LiveGroup,
) -> None:
    app = live_app(live_group)
    async with app.run_test(size=SIZE) as pilot:
        groups = app.screen
        assert isinstance(groups, GroupsScreen)
        await until(pilot, lambda: loaded(groups))
        box = groups.query_one(FilterInput)
        await pilot.press("slash", *live_group.group[:-1], "enter")
        await pilot.press("slash")  # open again: the filter is there, the cursor after it
        assert box.has_focus and box.value == live_group.group[:-1]
        await pilot.press(live_group.group[-1])
        assert groups.filter_text == box.value == live_group.group
        await pilot.press("enter", "enter")
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        table = screen.query_one("#partitions", RowsView)
        box = screen.query_one(FilterInput)
        await pilot.press("slash", *f"{live_group.topic}:", "enter")
        assert table.row_count == 2
        await pilot.press("slash", "1")
        assert screen.filter_text == box.value == f"{live_group.topic}:1"
        assert table.row_count == 1


@run
async def test_a_flat_lag_draws_a_flat_sparkline(live_group: LiveGroup) -> None:
    clock = FakeClock()
    app = DashboardApp(live_group.source(), group=live_group.group, refresh_s=2.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        for _ in range(2):
            clock.now += 2
            await pilot.press("r")
            await until(
                pilot,
                lambda: screen.freshness.received_at == clock.now and not screen.freshness.fetching,
                what="the refresh",
            )
        for partition in (0, 1):
            row = screen.row_fields(partition_row_key(live_group.topic, partition))
            assert row["LAG"] == str(LiveGroup.LAG[partition])  # the same at every refresh
            assert row["LAG TREND"] == "▄▄▄"  # a flat middle line, not a full-height wall


@run
async def test_since_moved_is_dated_by_the_state_topic_not_by_the_dashboards_start(
    live_group: LiveGroup,
) -> None:
    # Fifteen minutes after the consumer left: the dashboard, just started, shows how long
    # the start offsets have stood, exactly (the records date their last change).
    clock = FakeClock(time.time() + 900)
    app = DashboardApp(live_group.source(), group=live_group.group, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        for partition in (0, 1):
            series = app.history.get(partition_key(live_group.group, live_group.topic, partition))
            assert series is not None
            since_moved = series.since_moved(clock.now)
            assert since_moved is not None and not since_moved.lower_bound
            assert 900 - 5 <= since_moved.seconds <= clock.now - live_group.played_at + 5
            row = screen.row_fields(partition_row_key(live_group.topic, partition))
            # Lag above 0 for 15 minutes unmoved: stalled, known from the first refresh.
            assert row["SINCE MOVED"] == "⚠ " + fmt.since(since_moved.seconds, compact=True)
            assert "≥" not in row["SINCE MOVED"]


class OneStateReplaced:
    """The live state source, with one share-partition's state replaced by ``state``."""

    def __init__(self, inner: TailingStateSource, group: str, partition: int, state: Any) -> None:
        self.inner, self.group, self.partition, self.state = inner, group, partition, state

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        states = dict(self.inner.refresh(group_ids, timeout_s))
        for key in list(states):
            if (key.group_id, key.partition) == (self.group, self.partition):
                states[key] = self.state
        return states


@run
async def test_a_window_cell_shows_an_acknowledged_record_among_unrecorded_ones(
    live_group: LiveGroup,
) -> None:
    # Offsets 0-40 in the 17 cells of a 120-column screen: 3 a cell. Offset 1 is
    # acknowledged, 0 and 2 unrecorded; the cell shows the acknowledgement, not "·".
    acked = DeliveryState.ACKNOWLEDGED
    state = SharePartitionState(
        1, 1, 0, 0, 2, 0, 0, (StateBatch(1, 1, acked, 1), StateBatch(40, 40, acked, 1))
    )
    source = live_group.source(state=OneStateReplaced(live_group.state, live_group.group, 1, state))
    app = DashboardApp(source, group=live_group.group)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        row = screen.row_fields(partition_row_key(live_group.topic, 1))
        assert row["IN-FLIGHT WINDOW"] == "█" + "·" * 12 + "█"  # 41 offsets in 14 cells


class StallingSource:
    """The live source, except that every group fetch after the first never returns."""

    def __init__(self, inner: LiveSource) -> None:
        self.inner = inner
        self.group_calls = 0
        self.closed = False

    async def overview(self) -> GroupsOverview:
        return await self.inner.overview()

    async def group(self, group_id: str) -> GroupInflight:
        self.group_calls += 1
        if self.group_calls > 1:
            await asyncio.Event().wait()
        return await self.inner.group(group_id)

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        return await self.inner.peek(topic, partition, offset, limit)

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


@run
async def test_a_broker_that_stops_answering_shows_stale_data_and_keys_still_work(
    live_group: LiveGroup,
) -> None:
    clock = FakeClock()
    source = StallingSource(live_group.source())
    app = DashboardApp(source, group=live_group.group, refresh_s=2.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        first_received = clock.now
        clock.now += 3  # a refresh is due: it starts, and hangs
        await until(pilot, lambda: source.group_calls == 2, what="the second fetch")
        clock.now = first_received + 12
        status = status_of(screen)
        await until(pilot, lambda: "stale" in str(status.render()), what="the stale status")
        assert str(status.render()) == "stale: 12 s old — broker not answering"
        assert status.has_class("stale")
        # The last data stays on screen.
        assert screen.query_one("#partitions", RowsView).row_count == 2
        # Keys still work while the fetch hangs.
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("p")
        await until(pilot, lambda: "paused — data 12 s old" in str(status.render()))
        await pilot.press("p")
        started = time.monotonic()
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, within=5, what="quit with a hung fetch")
        assert time.monotonic() - started < 5
    assert source.closed
    assert source.group_calls == 2  # one fetch at a time: the hung one is not piled onto


class DescribeOnly:
    """A state source refused as the tailer is refused without READ on the state topic."""

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        raise StateTopicUnavailable(DESCRIBE_ONLY)


@run
async def test_with_only_describe_the_window_column_is_empty_and_the_screen_says_why(
    live_group: LiveGroup,
) -> None:
    source = live_group.source(state=DescribeOnly())
    app = DashboardApp(source, group=live_group.group)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen))
        assert text_of(screen, "#note") == f"window column empty: {DESCRIBE_ONLY}"
        for partition in (0, 1):
            row = screen.row_fields(partition_row_key(live_group.topic, partition))
            assert row["IN-FLIGHT WINDOW"] == "" and row["ARCHIVED"] == "-"
            assert row["LAG"] == str(LiveGroup.LAG[partition])
        await pilot.press("enter")
        partition_screen = app.screen
        assert isinstance(partition_screen, PartitionScreen)
        await until(pilot, lambda: loaded(partition_screen))
        assert text_of(partition_screen, "#legend") == f"No window: {DESCRIBE_ONLY}"
        assert text_of(partition_screen, "#strip") == ""
