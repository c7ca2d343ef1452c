"""``kshare exporter``'s ``kshare_share_partition_lag_seconds``: the age of the oldest
unacknowledged record, read at each refresh when asked for (``time_lag``).

The records and groups are ``test_describe_time_lag``'s: CreateTime timestamps known
in the past, a group placed with ``reset-offsets`` and never consumed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.render.metrics import MetricsPage, index_page
from kshare_cli.services.exporter_server import build_refresher
from kshare_cli.services.health import Thresholds
from tests.cli.conftest import Kshare
from tests.cli.test_describe_time_lag import AGES, aged_topic, assert_age, make_group
from tests.support.sandbox import Cluster

__all__ = ["aged_topic"]  # the module fixture, shared


def _ages(
    cluster: Cluster, group: str, *, time_lag: bool
) -> tuple[dict[tuple[str, int], float], str]:
    """One refresh of ``group``: the lag_seconds series by (topic, partition), and the page."""
    if cluster.client_config:
        pytest.skip("a plain ConnectionSettings cannot carry this cluster's client settings")
    settings = ConnectionSettings(bootstrap_servers=tuple(cluster.bootstrap.split(",")))
    refresher, source = build_refresher(
        settings, [group], Thresholds(), 15.0, 10.0, lambda line: None, time_lag=time_lag
    )
    page = MetricsPage(lambda: refresher.snapshot, "c")
    refresher.on_snapshot = page.publish
    try:
        asyncio.run(refresher.refresh())
    finally:
        source.close()
    assert refresher.snapshot.refreshed_at is not None, refresher.snapshot.last_error
    text = page.body().decode()
    ages = {
        (sample.labels["topic"], int(sample.labels["partition"])): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "kshare_share_partition_lag_seconds"
    }
    return ages, text


def test_the_age_of_the_oldest_unacknowledged_record_is_exported(
    cluster: Cluster, kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, produced_at = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 1, 1: len(AGES[1])})
    ages, _ = _ages(cluster, group, time_lag=True)
    assert set(ages) == {(topic, 0)}  # partition 1 has no lag: absent, not 0
    assert_age(ages[(topic, 0)], 100, produced_at)  # offset 1 of partition 0: 100 s old


def test_without_time_lag_there_is_no_such_series(
    cluster: Cluster, kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, _ = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 1})
    ages, text = _ages(cluster, group, time_lag=False)
    assert ages == {}
    assert "kshare_share_partition_lag_seconds" not in text


def test_the_index_page_lists_it() -> None:
    assert "<code>kshare_share_partition_lag_seconds</code>" in index_page("c")


def test_the_command_line_option_turns_it_on(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    """``kshare exporter --time-lag``, as an operator starts it, serves the series."""
    import queue
    import subprocess
    import threading
    import urllib.request

    from tests.cli.conftest import KSHARE, process_env
    from tests.support.waiting import wait_for

    topic, produced_at = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 1})
    process = subprocess.Popen(
        [
            str(KSHARE),
            "exporter",
            "--listen",
            "127.0.0.1:0",
            "--group",
            group,
            "--interval",
            "500ms",
            "--time-lag",
            *kshare.connection_args(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env(kshare.environment()),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stderr = process.stderr
    threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True).start()
    try:
        first = lines.get(timeout=30)
        base = first.split("listening on ", 1)[1].strip().removesuffix("/metrics")

        def ages() -> dict[tuple[str, int], float]:
            with urllib.request.urlopen(base + "/metrics", timeout=5) as response:
                text = response.read().decode()
            return {
                (sample.labels["topic"], int(sample.labels["partition"])): sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
                if sample.name == "kshare_share_partition_lag_seconds"
            }

        found = wait_for(ages, timeout=30, what="a time lag in /metrics")
        assert_age(found[(topic, 0)], 100, produced_at)
    finally:
        process.kill()
        process.wait(10)
