"""Fixtures of the dashboard tests: a share group on the test cluster, and a recorded scenario.

``live_group`` is played once per session on the ``cluster`` fixture (the
sandbox, or the real cluster named by KSHARE_TEST_BOOTSTRAP): the Pilot tests
and the terminal test read it live. ``snapshot_stages`` is played on a private
sandbox with fixed names and timestamps (heartbeats every 100 ms, so it takes
seconds) and recorded through the live source; on a real cluster the names
and timings cannot be fixed, so the snapshot tests skip there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.tui.scenario import LiveGroup, Stage, play_live_group, record_snapshot_scenario

REAL_CLUSTER_SKIP = (
    "on a real cluster: snapshots need fixed topic names, member ids and timings, "
    "which only a private sandbox gives"
)


@pytest.fixture(scope="session")
def live_group(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGroup]:
    live = play_live_group(cluster, uuid.uuid4().hex[:10], tmp_path_factory.mktemp("tui"))
    try:
        yield live
    finally:
        live.state.close()


@pytest.fixture(scope="session")
def snapshot_stages() -> Iterator[list[Stage]]:
    if os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        pytest.skip(REAL_CLUSTER_SKIP)
    settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=100, share_min_heartbeat_interval_ms=100
    )
    # The pictures were drawn from Kafka 4.2's states (no ARCHIVING, no DLQ line).
    with SandboxThread(settings=settings, kafka_version="4.2") as sandbox:
        yield record_snapshot_scenario(sandbox)
