"""The groups screen's header names the cluster: its Kafka line and share.version (issue 25).

Offline, a scripted source that knows its cluster's facts counts how often it is
asked (once per dashboard session, refreshes after); live, ``LiveSource`` on the
sandbox's 4.4 profile formatted with share.version 1 (as a new 4.4 cluster is) goes
through ``services.dashboard`` and the session's ``ClusterFacts``. A source that
does not know its cluster leaves the header as it was.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable, Header

from kshare_cli.admin.cluster_facts import ClusterFacts
from kshare_cli.admin.inflight import GroupInflight, GroupsOverview, GroupSummary
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.tui.app import DashboardApp
from kshare_cli.tui.groups_screen import GroupsScreen, cluster_line
from kshare_cli.tui.source import LiveSource
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.tui.scenario import FakeClock
from tests.tui.test_dashboard import SIZE, run, until

KAFKA_44_SHARE_2 = ClusterFacts(
    None,
    (("metadata.version", 30), ("share.version", 2)),
    (("metadata.version", 7, 30), ("share.version", 0, 2)),
)


class FactsSource:
    """One group; knows its cluster's facts, and counts the lookups."""

    def __init__(self, facts: ClusterFacts) -> None:
        self.facts = facts
        self.overviews = 0
        self.lookups = 0

    async def overview(self) -> GroupsOverview:
        self.overviews += 1
        return GroupsOverview((GroupSummary("orders", "Stable", 1, 3, 7),))

    async def cluster_facts(self) -> ClusterFacts:
        self.lookups += 1
        return self.facts

    async def group(self, group_id: str) -> GroupInflight:
        raise AssertionError("not asked in these tests")

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        raise AssertionError("not asked in these tests")


def _header_text(app: DashboardApp) -> str:
    return " ".join(
        str(child.render()) for child in app.screen.query_one(Header).query("HeaderTitle")
    )


@run
async def test_the_header_shows_the_kafka_line_and_share_version_looked_up_once() -> None:
    clock = FakeClock()
    source = FactsSource(KAFKA_44_SHARE_2)
    app = DashboardApp(source, refresh_s=1.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        await until(pilot, lambda: screen.cluster is not None, what="the cluster's facts")
        await until(pilot, lambda: "share.version" in _header_text(app), what="the header")
        assert "share groups — Kafka 4.4 · share.version 2" in _header_text(app)
        clock.now += 1.5
        await until(pilot, lambda: source.overviews >= 2, what="the second refresh")
        clock.now += 1.5
        await until(pilot, lambda: source.overviews >= 3, what="the third refresh")
        assert source.lookups == 1


def test_the_cluster_line_says_what_is_not_known() -> None:
    assert cluster_line(KAFKA_44_SHARE_2) == "Kafka 4.4 · share.version 2"
    assert cluster_line(ClusterFacts(None)) == ("Kafka line unknown · share.version not reported")


@run
async def test_the_live_header_on_a_new_kafka_44_cluster_says_share_version_1() -> None:
    skip_on_real_cluster("it starts a sandbox on the Kafka 4.4 profile")
    with SandboxThread(kafka_version="4.4", share_version=1) as sandbox:
        settings = resolve_settings(
            bootstrap=sandbox.bootstrap, command_config=None, profile=None, environ={}
        )
        app = DashboardApp(LiveSource(settings, timeout_s=15), refresh_s=1.0)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, GroupsScreen)
            table: DataTable[Any] = screen.query_one("#groups", DataTable)
            await until(pilot, lambda: screen.data is not None, what="the first refresh")
            await until(pilot, lambda: "share.version" in _header_text(app), what="the header")
            assert "Kafka 4.4 · share.version 1" in _header_text(app)
            assert table.row_count == 0
