"""The exporter's refresher and snapshot: failures are counted and named, /healthz ages out."""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
import types
import urllib.request
import uuid
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from kshare_cli.admin.inflight import GroupInflight, GroupUnavailable, PartitionInflight
from kshare_cli.admin.models import (
    BrokerFailure,
    GroupDescription,
    GroupFailure,
    GroupListing,
    KafkaError,
    ListedGroup,
)
from kshare_cli.errors import ConnectionFailed
from kshare_cli.render.metrics import MetricsPage, SnapshotCollector
from kshare_cli.services.exporter import (
    ExporterSnapshot,
    OneStateReadPerRefresh,
    Refresher,
    StateReads,
)
from kshare_cli.services.health import Status, Thresholds
from kshare_cli.services.inflight import InflightService
from kshare_cli.state.replay import SharePartitionKey
from kshare_cli.state.sources import TailingStateSource
from kshare_cli.state.tailer import StateTopicUnavailable
from tests.support.waiting import wait_for


@asynccontextmanager
async def _unreachable() -> AsyncIterator[InflightService]:
    raise ConnectionFailed("broker 127.0.0.1:1: connection refused")
    yield  # pragma: no cover -- a generator, so the context manager is one


def test_a_failed_refresh_is_counted_named_and_keeps_healthz_503() -> None:
    errors: list[str] = []
    refresher = Refresher(_unreachable, ["g"], Thresholds(), 1.0, 5.0, on_error=errors.append)
    asyncio.run(refresher.refresh())
    asyncio.run(refresher.refresh())
    snapshot = refresher.snapshot
    assert (snapshot.refresh_errors, snapshot.refreshed_at) == (2, None)
    assert errors == ["broker 127.0.0.1:1: connection refused"] * 2
    ok, reason = snapshot.healthy(1.0, 100.0)
    assert not ok
    assert reason == (
        "no refresh has succeeded yet; last error: broker 127.0.0.1:1: connection refused"
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: snapshot, "c"))
    text = generate_latest(registry).decode()
    assert 'kshare_exporter_refresh_errors_total{cluster_name="c"} 2.0' in text
    assert "kshare_exporter_last_refresh_timestamp_seconds" not in text
    assert "kshare_exporter_last_refresh_age_seconds" not in text


def test_healthz_is_200_within_three_intervals_of_the_last_success() -> None:
    snapshot = ExporterSnapshot(refreshed_at=1.0, refreshed_monotonic=50.0, refresh_seconds=0.1)
    assert snapshot.healthy(10.0, 80.0) == (True, "ok: refreshed 30.0 s ago")
    ok, reason = snapshot.healthy(10.0, 80.5)
    assert not ok
    assert reason == "the last successful refresh was 30.5 s ago (limit 30 s)"


def test_the_age_gauge_is_computed_at_scrape_time_and_grows_between_refreshes() -> None:
    snapshot = ExporterSnapshot(refreshed_at=1.0, refreshed_monotonic=50.0, refresh_seconds=0.1)
    now = [52.5]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: snapshot, "c", clock=lambda: now[0]))
    line = 'kshare_exporter_last_refresh_age_seconds{cluster_name="c"}'
    assert f"{line} 2.5" in generate_latest(registry).decode()
    now[0] = 110.0
    assert f"{line} 60.0" in generate_latest(registry).decode()


def test_the_metrics_page_renders_a_snapshot_once_and_ages_it_per_scrape() -> None:
    snapshot = ExporterSnapshot(refreshed_at=1.0, refreshed_monotonic=50.0, refresh_seconds=0.1)
    current = [snapshot]
    now = [51.0]
    page = MetricsPage(lambda: current[0], "c", clock=lambda: now[0])
    first = page.body()
    now[0] = 53.0
    second = page.body()
    age = 'kshare_exporter_last_refresh_age_seconds{cluster_name="c"}'
    assert f"{age} 1.0" in first.decode() and f"{age} 3.0" in second.decode()
    assert first.split(age.encode())[0] == second.split(age.encode())[0]
    assert page.renders == 1
    current[0] = replace(snapshot, refresh_errors=4)
    page.publish()
    assert page.renders == 2
    assert 'kshare_exporter_refresh_errors_total{cluster_name="c"} 4.0' in page.body().decode()
    assert page.renders == 2


def test_the_refresh_renders_the_page_and_a_scrape_only_copies_it() -> None:
    errors: list[str] = []
    refresher = Refresher(_unreachable, ["g"], Thresholds(), 1.0, 5.0, on_error=errors.append)
    now = [100.0]
    page = MetricsPage(lambda: refresher.snapshot, "c", clock=lambda: now[0])
    refresher.on_snapshot = page.publish
    page.publish()
    renders = page.renders
    asyncio.run(refresher.refresh())
    assert page.renders == renders + 1  # in the refresh, before any scrape
    body = page.body().decode()
    assert page.renders == renders + 1  # the scrape did not render
    assert 'kshare_exporter_refresh_errors_total{cluster_name="c"} 1.0' in body
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: refresher.snapshot, "c"))
    assert body.encode() == generate_latest(registry)  # what a plain registry serves
    succeeded = replace(refresher.snapshot, refreshed_at=1.0, refreshed_monotonic=98.0)
    page.publish(succeeded)
    age = 'kshare_exporter_last_refresh_age_seconds{cluster_name="c"}'
    assert f"{age} 2.0" in page.body().decode()
    now[0] = 105.0
    assert f"{age} 7.0" in page.body().decode()  # aged at scrape time, not rendered again
    assert page.renders == renders + 2


class _CountingSource(TailingStateSource):
    """A TailingStateSource that counts its reads and holds fixed states."""

    def __init__(self, states: dict[SharePartitionKey, object], refusal: str | None) -> None:
        super().__init__({})
        self.reads = 0
        self._fixed = states
        self._refusal = refusal

    def refresh(self, group_ids: Collection[str], timeout_s: float) -> Any:
        self.reads += 1
        if self._refusal is not None:
            raise StateTopicUnavailable(self._refusal)
        return {}

    def states(self) -> Any:
        return dict(self._fixed)


def test_one_state_read_answers_every_group_of_a_refresh() -> None:
    topic = uuid.uuid4()
    keys = [SharePartitionKey(f"g{n}", topic, 0) for n in range(3)]
    source = _CountingSource(dict.fromkeys(keys, "state"), None)
    per_refresh = OneStateReadPerRefresh(StateReads(source), 1.0)
    for key in keys:
        assert per_refresh.refresh([key.group_id], 1.0) == {key: "state"}
    assert source.reads == 1
    refused = _CountingSource({}, "not authorized to read __share_group_state")
    per_refresh = OneStateReadPerRefresh(StateReads(refused), 1.0)
    for group in ("g0", "g1"):
        with pytest.raises(StateTopicUnavailable, match="not authorized"):
            per_refresh.refresh([group], 1.0)
    assert refused.reads == 1


class _HeldSource(_CountingSource):
    """A state source whose reads after the first wait until ``release`` is set, as a
    read stuck on a hung broker waits out its timeout."""

    def __init__(self, states: dict[SharePartitionKey, object]) -> None:
        super().__init__(states, None)
        self.release = threading.Event()

    def refresh(self, group_ids: Collection[str], timeout_s: float) -> Any:
        self.reads += 1
        if self.reads > 1:
            self.release.wait(30)
        return {}


def test_a_stuck_state_read_holds_no_refresh_past_its_wait_and_no_read_piles_up() -> None:
    key = SharePartitionKey("g", uuid.uuid4(), 0)
    source = _HeldSource({key: "state"})
    reads = StateReads(source)
    assert OneStateReadPerRefresh(reads, 0.2).refresh(["g"], 20.0) == {key: "state"}
    for _ in range(3):  # the second read hangs: each refresh waits 0.2 s, not 20 s
        started = time.monotonic()
        assert OneStateReadPerRefresh(reads, 0.2).refresh(["g"], 20.0) == {key: "state"}
        assert time.monotonic() - started < 5.0
    assert source.reads == 2  # one read under way, none started behind it
    source.release.set()
    wait_for(lambda: reads.read(20.0, 5.0) is not None and source.reads == 3, 10, what="a read")


def test_a_first_state_read_that_does_not_finish_leaves_the_windows_out_with_why() -> None:
    source = _HeldSource({})
    source.reads = 1  # every read waits
    per_refresh = OneStateReadPerRefresh(StateReads(source), 0.1)
    with pytest.raises(StateTopicUnavailable, match="not read within 0.3 s"):
        per_refresh.refresh(["g"], 0.3)
    source.release.set()


# -- a refresh over fakes of the admin layer: brokers that do not list their groups ---------

NODES = {1: ("127.0.0.1", 9091), 2: ("127.0.0.1", 9092), 3: ("127.0.0.1", 9093)}


class _Node:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.host, self.port = NODES[node_id]


class _Metadata:
    brokers = {node_id: _Node(node_id) for node_id in NODES}


class _Client:
    async def metadata(self, topics: Collection[str]) -> _Metadata:
        return _Metadata()

    async def find_coordinators(self, group_ids: Collection[str]) -> dict[str, object]:
        return {}  # the sampler's one lookup for every group; each group's read stands


class _Cluster:
    """What the fakes answer: the groups listed, the brokers failing, each group's
    lag (or its error)."""

    def __init__(self) -> None:
        self.listed: tuple[str, ...] = ()
        self.silent: tuple[int, ...] = ()
        self.lags: dict[str, int | str] = {}


class _Admin:
    def __init__(self, cluster: _Cluster) -> None:
        self._cluster = cluster
        self.client = _Client()

    async def list_groups(self) -> GroupListing:
        failures = tuple(
            BrokerFailure(n, *NODES[n], KafkaError.of(7, "no answer within 5 s"))
            for n in self._cluster.silent
        )
        listed = tuple(ListedGroup(group_id, "Empty") for group_id in self._cluster.listed)
        return GroupListing(listed, (), failures)

    async def log_offsets(self, partitions: Collection[object], timestamp: int) -> Any:
        return types.SimpleNamespace(offsets={})


class _Service:
    def __init__(self, cluster: _Cluster) -> None:
        self._cluster = cluster
        self.admin = _Admin(cluster)

    async def groups(
        self, group_ids: Collection[str], *, log_start_offsets: bool = False
    ) -> dict[str, GroupInflight | GroupUnavailable]:
        """Every group as the cluster has it (these groups have no delivery limit)."""
        read: dict[str, GroupInflight | GroupUnavailable] = {}
        for group_id in group_ids:
            lag = self._cluster.lags[group_id]
            if isinstance(lag, str):
                read[group_id] = GroupUnavailable(GroupFailure(group_id, KafkaError.of(7, lag)))
                continue
            description = GroupDescription(group_id, "Empty", None, 1, 1, "simple")
            partition = PartitionInflight("t", 0, None, 0, lag, lag, None, None)
            read[group_id] = GroupInflight(group_id, description, (partition,), None)
        return read


def _refresher(
    cluster: _Cluster, group_ids: list[str] | None = None
) -> tuple[Refresher, list[str]]:
    @asynccontextmanager
    async def open_service() -> AsyncIterator[Any]:
        yield _Service(cluster)

    warnings: list[str] = []
    refresher = Refresher(
        open_service, group_ids, Thresholds(), 1.0, 5.0, on_warning=warnings.append
    )
    return refresher, warnings


def _group(snapshot: ExporterSnapshot, group_id: str) -> Any:
    (found,) = [each for each in snapshot.report.groups if each.group_id == group_id]
    return found


BROKER_2 = "broker 2 (127.0.0.1:9092)"


def test_a_broker_that_does_not_list_its_groups_is_counted_named_and_its_groups_kept_err() -> None:
    cluster = _Cluster()
    cluster.listed, cluster.lags = ("g1", "g2"), {"g1": 5, "g2": 7}
    refresher, warnings = _refresher(cluster)
    asyncio.run(refresher.refresh())
    first = refresher.snapshot
    assert first.broker_errors == {
        (1, "127.0.0.1:9091"): 0,
        (2, "127.0.0.1:9092"): 0,
        (3, "127.0.0.1:9093"): 0,
    }

    cluster.listed, cluster.silent, cluster.lags = ("g1",), (2,), {"g1": 6, "g2": 9}
    asyncio.run(refresher.refresh())
    asyncio.run(refresher.refresh())
    snapshot = refresher.snapshot
    assert snapshot.refresh_errors == 0
    assert snapshot.broker_errors[(2, "127.0.0.1:9092")] == 2
    assert snapshot.broker_errors[(1, "127.0.0.1:9091")] == 0
    assert snapshot.group_errors == {"g1": 0, "g2": 2}
    assert _group(snapshot, "g1").lag == 6  # fresh
    kept = _group(snapshot, "g2")
    assert (kept.lag, kept.status) == (7, Status.ERR)  # its last figures, ERR
    assert kept.reasons == (f"share group 'g2' not listed: {BROKER_2} did not list its groups",)
    assert snapshot.group_read_at["g2"] == first.group_read_at["g2"] < snapshot.group_read_at["g1"]
    ok, reason = snapshot.healthy(1.0, snapshot.refreshed_monotonic or 0.0)
    assert ok
    assert f"{BROKER_2} did not list its groups: 1 group unknown (REQUEST_TIMED_OUT" in reason
    assert "1 group not read, last figures kept: share group 'g2' not listed" in reason
    assert warnings == [
        f"{BROKER_2} did not list its groups: 1 group unknown "
        "(REQUEST_TIMED_OUT: no answer within 5 s)"
    ]  # said once, not at every refresh

    cluster.silent = ()  # the listing is whole again: g2 is gone (deleted meanwhile)
    asyncio.run(refresher.refresh())
    snapshot = refresher.snapshot
    assert [each.group_id for each in snapshot.report.groups] == ["g1"]
    assert snapshot.broker_errors[(2, "127.0.0.1:9092")] == 2  # a counter: kept
    assert snapshot.unlisted == ()
    assert snapshot.healthy(1.0, snapshot.refreshed_monotonic or 0.0)[1].startswith("ok")


def test_a_timeout_from_a_healthy_broker_names_the_silent_one_and_counts_only_it() -> None:
    cluster = _Cluster()
    cluster.listed, cluster.lags = ("g1", "g3"), {"g1": 5, "g3": 4}
    refresher, _ = _refresher(cluster, ["g1", "g3"])
    asyncio.run(refresher.refresh())
    timed_out = "broker 1 (127.0.0.1:9091): DescribeShareGroupOffsets timed out"
    cluster.silent, cluster.lags = (2,), {"g1": timed_out, "g3": 3}
    asyncio.run(refresher.refresh())
    snapshot = refresher.snapshot
    (reason,) = _group(snapshot, "g1").reasons
    assert timed_out in reason and BROKER_2 in reason, reason
    assert snapshot.broker_errors == {
        (1, "127.0.0.1:9091"): 0,
        (2, "127.0.0.1:9092"): 1,
        (3, "127.0.0.1:9093"): 0,
    }
    assert _group(snapshot, "g3").lag == 3
    assert snapshot.unlisted == (
        f"{BROKER_2} did not list its groups (REQUEST_TIMED_OUT: no answer within 5 s)",
    )


def test_a_refresh_that_reads_no_group_fails_and_turns_the_known_groups_err() -> None:
    cluster = _Cluster()
    cluster.listed, cluster.lags = ("g2",), {"g2": 7}
    refresher, _ = _refresher(cluster)
    asyncio.run(refresher.refresh())
    cluster.listed, cluster.silent = (), (2,)  # the only group's coordinator is silent
    asyncio.run(refresher.refresh())
    snapshot = refresher.snapshot
    assert snapshot.refresh_errors == 1
    assert snapshot.last_error is not None and BROKER_2 in snapshot.last_error
    kept = _group(snapshot, "g2")
    assert (kept.lag, kept.status) == (7, Status.ERR)
    assert BROKER_2 in kept.reasons[0]
    assert snapshot.broker_errors[(2, "127.0.0.1:9092")] == 1


def test_a_scraper_that_accepts_gzip_gets_the_same_page_gzipped() -> None:
    from kshare_cli.services.exporter_server import make_server

    snapshot = ExporterSnapshot(refreshed_at=1.0, refreshed_monotonic=50.0, refresh_errors=2)
    page = MetricsPage(lambda: snapshot, "c", clock=lambda: 51.0)
    page.publish()
    assert gzip.decompress(page.body(gzipped=True)) == page.body()
    refresher = Refresher(_unreachable, ["g"], Thresholds(), 1.0, 5.0)
    server = make_server(("127.0.0.1", 0), page, refresher, 1.0, "")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        asked = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(asked, timeout=10) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(response.read()) == page.body()
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.headers["Content-Encoding"] is None
            assert response.read() == page.body()
    finally:
        server.shutdown()
        server.server_close()
    assert page.renders == 1


def test_healthz_stays_200_and_names_the_groups_the_last_refresh_could_not_read() -> None:
    unread = {
        "b": "share group 'b': GROUP_AUTHORIZATION_FAILED",
        "c": "no answer within 5 s",
    }
    snapshot = ExporterSnapshot(refreshed_at=1.0, refreshed_monotonic=50.0, unread=unread)
    assert snapshot.healthy(10.0, 51.0) == (
        True,
        "ok: refreshed 1.0 s ago; 2 groups not read, last figures kept: "
        "share group 'b': GROUP_AUTHORIZATION_FAILED; c: no answer within 5 s",
    )
    many = replace(snapshot, unread={f"g{index}": "gone" for index in range(7)})
    ok, reason = many.healthy(10.0, 51.0)
    assert ok
    assert reason.endswith(
        "7 groups not read, last figures kept: "
        "g0: gone; g1: gone; g2: gone; g3: gone; g4: gone; and 2 more"
    )


def test_the_exporter_collects_cycles_less_often_than_cpython_by_default() -> None:
    """A refresh's objects live until the next one: CPython's thresholds (700, 10, 10)
    made full collections over half of a refresh's CPU at 30,000 share-partitions."""
    import gc

    from kshare_cli.services.exporter_server import GC_THRESHOLDS, tune_gc

    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > 700 and GC_THRESHOLDS[2] > 10
    finally:
        gc.set_threshold(*before)
