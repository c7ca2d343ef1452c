"""The dashboard's time lag: the age of each share-partition's oldest unacknowledged record.

The records of ``live_group`` carry fixed CreateTimes (offset N at 2026-01-01
00:00:00 + N s) and the dashboard clock is set, so the TIME LAG column's value
is known to the second: the group's window says which record is the oldest not
acknowledged, the cluster gives its timestamp, the clock ages it. Then the
installed command in a tmux pane, on records produced two hours in the past by
the real clock: the column reads what the timestamps say.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient

from kshare_cli.errors import TimedOut
from kshare_cli.services.dashboard import GroupInflight
from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.group_screen import GroupScreen, partition_row_key
from kshare_cli.tui.humanize import UNKNOWN
from kshare_cli.tui.source import LiveSource
from tests.support.sandbox import Cluster
from tests.tui.scenario import (
    ACCEPT,
    EPOCH_S,
    RELEASE,
    FakeClock,
    LiveGroup,
    _create,
    _first_deliveries,
    command_config_for,
)
from tests.tui.test_dashboard import SIZE, loaded, run, until
from tests.tui.test_terminal import Dashboard, Tmux, tmux  # noqa: F401 -- tmux: a fixture

#: The dashboard clock of the Pilot test: 100 s after the records' epoch.
NOW_S = EPOCH_S + 100


def _time_lags(screen: GroupScreen, topic: str) -> dict[int, str]:
    return {
        number: screen.row_fields(partition_row_key(topic, number))["TIME LAG"] for number in (0, 1)
    }


@run
async def test_the_time_lag_column_ages_the_oldest_unacknowledged_record(
    live_group: LiveGroup,
) -> None:
    """Partition 0: offsets 0-5 accepted, 6 released: its oldest unacknowledged record is
    offset 6, made at epoch + 6 s, so 94 s old at epoch + 100 s. Partition 1: 0-4 accepted,
    5-7 produced after: offset 5, 95 s. A minute later on the clock, a minute older."""
    clock = FakeClock(NOW_S)
    app = DashboardApp(live_group.source(), group=live_group.group, refresh_s=1.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen), what="the group")
        await until(
            pilot,
            lambda: UNKNOWN not in _time_lags(screen, live_group.topic).values(),
            what="the time lag",
        )
        data = screen.data
        assert data is not None and screen.time_lag_error is None
        if data.window_note is None:
            assert _time_lags(screen, live_group.topic) == {0: "1m34s", 1: "1m35s"}
        else:
            # No window: the lookup starts at the stored start offset, which may trail
            # (at most offsets 6 and 5): the record there is as old or older.
            assert all(
                value.startswith("1m") and value >= expected
                for value, expected in zip(
                    _time_lags(screen, live_group.topic).values(), ("1m34s", "1m35s"), strict=True
                )
            )
        clock.now = NOW_S + 60
        await until(
            pilot,
            lambda: _time_lags(screen, live_group.topic)[0].startswith("2m"),
            what="the ages to follow the clock",
        )
        if data.window_note is None:
            assert _time_lags(screen, live_group.topic) == {0: "2m34s", 1: "2m35s"}


class _SlowTimeLag(LiveSource):
    """The live source whose time-lag lookup never answers in time (a leader gone silent)."""

    async def oldest_unacknowledged(
        self, group: GroupInflight
    ) -> dict[tuple[str, str, int], int | None]:
        raise TimedOut("the time lag did not answer within 5 s")


@run
async def test_a_failed_time_lag_lookup_leaves_the_column_unknown_and_the_rows_fresh(
    live_group: LiveGroup,
) -> None:
    source = _SlowTimeLag(live_group.settings, timeout_s=15, state=live_group.state)
    app = DashboardApp(source, group=live_group.group, refresh_s=1.0, clock=FakeClock(NOW_S))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: loaded(screen), what="the group")
        await until(pilot, lambda: screen.time_lag_error is not None, what="the failed lookup")
        assert "did not answer" in (screen.time_lag_error or "")
        assert _time_lags(screen, live_group.topic) == {0: UNKNOWN, 1: UNKNOWN}
        row = screen.row_fields(partition_row_key(live_group.topic, 0))
        assert row["LAG"] == str(LiveGroup.LAG[0]) and row["END"] == str(LiveGroup.END[0])
        assert screen.freshness.error is None  # the refresh itself did not fail


def _old_group(cluster: Cluster, unique: str, age_s: float) -> tuple[str, str]:
    """One partition of 6 records made ``age_s`` + 3..0 minutes ago, by the real clock:
    offsets 0-2 accepted, 3-5 released, so offset 3, made ``age_s`` ago, is the oldest
    unacknowledged."""
    topic = group = f"kshare-tui-age-{unique}"
    _create(AdminClient(cluster.config()), {topic: 1}, [group])
    producer = Producer(cluster.config())
    base_ms = int((time.time() - age_s) * 1000) - 3 * 60_000
    for offset in range(6):
        producer.produce(topic, value=b"x", partition=0, timestamp=base_ms + offset * 60_000)
    assert producer.flush(30) == 0
    consumer = ShareConsumer(
        cluster.config(
            **{"group.id": group, "share.acknowledgement.mode": "explicit", "client.id": "age"}
        )
    )
    try:
        consumer.subscribe([topic])
        positions = {(topic, 0, offset) for offset in range(6)}
        acts = {(topic, 0, offset): ACCEPT if offset < 3 else RELEASE for offset in range(6)}
        _first_deliveries(consumer, positions, acts, timeout=90)
    finally:
        consumer.close()
    return topic, group


def test_the_command_shows_the_age_the_produced_timestamps_give(
    cluster: Cluster,
    tmux: Tmux,  # noqa: F811 -- test_terminal's fixture, imported above
    tmp_path: Path,
) -> None:
    """``kshare dashboard GROUP`` on the real clock: the oldest unacknowledged record was
    made two hours ago, and the TIME LAG column says 2h00m (2h01m on a slow machine)."""
    unique = uuid.uuid4().hex[:10]
    topic, group = _old_group(cluster, unique, age_s=2 * 3600)
    # Dashboard reads only these four of a LiveGroup.
    names: Any = SimpleNamespace(
        topic=topic,
        group=group,
        bootstrap=cluster.bootstrap,
        command_config=command_config_for(cluster, tmp_path),
    )
    dashboard = Dashboard(tmux, names, tmp_path)

    def time_lag_cell(text: str) -> tuple[str, str] | None:
        """(the TIME LAG cell, the row) once the row is drawn."""
        lines = text.splitlines()
        rows = [line for line in lines if line.strip().startswith(topic[:15])]
        headers = [line for line in lines if "TIME LAG" in line]
        if len(rows) != 1 or not headers:
            return None
        # Numbers are right-aligned: a cell ends where its header ends.
        end = headers[0].index("TIME LAG") + len("TIME LAG")
        return rows[0][end - len("TIME LAG") : end].strip(), rows[0]

    def aged(text: str) -> bool:
        found = time_lag_cell(text)
        return found is not None and found[0] != UNKNOWN

    found = time_lag_cell(tmux.wait_for_screen(dashboard.session, aged, timeout=60))
    assert found is not None
    cell, row = found
    assert cell in {"2h00m", "2h01m"}, row
    assert row.split()[4] == "3", row  # LAG: offsets 3-5
    tmux("send-keys", "-t", dashboard.session, "q")
    assert dashboard.exit_code() == 0


class _CountingSource(LiveSource):
    """The live source, counting the group reads and the time-lag lookups it serves."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.groups = 0
        self.lookups = 0

    async def group(self, group_id: str) -> GroupInflight:
        answer = await super().group(group_id)
        self.groups += 1
        return answer

    async def oldest_unacknowledged(
        self, group: GroupInflight
    ) -> Mapping[tuple[str, str, int], int | None]:
        self.lookups += 1
        return await super().oldest_unacknowledged(group)


@run
async def test_the_time_lag_is_looked_up_at_most_every_ten_seconds(live_group: LiveGroup) -> None:
    """A peek per lagging share-partition is not worth repeating at every refresh: refreshes
    within TIME_LAG_EVERY_S of the last lookup reuse its timestamps (aged by the clock)."""
    source = _CountingSource(live_group.settings, timeout_s=15, state=live_group.state)
    clock = FakeClock(NOW_S)
    app = DashboardApp(source, group=live_group.group, refresh_s=1.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        await until(pilot, lambda: source.lookups == 1, what="the first lookup")
        for refreshes in (2, 3):
            clock.now += 4
            await until(
                pilot, lambda count=refreshes: source.groups >= count, what=f"refresh {refreshes}"
            )
        assert source.lookups == 1
        if screen.data is not None and screen.data.window_note is None:
            # Offset 5 was made at epoch + 5 s; the clock is at epoch + 108 s.
            await until(
                pilot,
                lambda: _time_lags(screen, live_group.topic)[1] == "1m43s",
                what="the ages ticking on",
            )
        clock.now += 4  # 12 s after the first lookup
        await until(pilot, lambda: source.lookups == 2, what="the second lookup")
