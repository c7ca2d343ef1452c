"""The exporter's refresher and snapshot: failures are counted and named, /healthz ages out."""

from __future__ import annotations

import asyncio
import gzip
import threading
import urllib.request
import uuid
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from kshare_cli.admin.inflight import InflightService, StateTopicUnavailable, TailingStateSource
from kshare_cli.errors import ConnectionFailed
from kshare_cli.render.metrics import MetricsPage, SnapshotCollector
from kshare_cli.services.exporter import ExporterSnapshot, OneStateReadPerRefresh, Refresher
from kshare_cli.services.health import Thresholds
from kshare_cli.state.replay import SharePartitionKey


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
    per_refresh = OneStateReadPerRefresh(source)
    for key in keys:
        assert per_refresh.refresh([key.group_id], 1.0) == {key: "state"}
    assert source.reads == 1
    refused = _CountingSource({}, "not authorized to read __share_group_state")
    per_refresh = OneStateReadPerRefresh(refused)
    for group in ("g0", "g1"):
        with pytest.raises(StateTopicUnavailable, match="not authorized"):
            per_refresh.refresh([group], 1.0)
    assert refused.reads == 1


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
