"""Fixtures shared by the whole test suite: the test beds kshare is checked against."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.rdkafka_mock import RdkafkaMockCluster

# The sandbox (or a real cluster named by KSHARE_TEST_BOOTSTRAP): fixtures ``cluster``, ``unique``;
# TLS material and secured sandboxes: ``tls_material``, ``secure_sandbox``; one Spark session
# for the pipeline and audit tests: ``spark``.
pytest_plugins = ["tests.support.sandbox", "tests.support.tls", "tests.support.spark"]

# The mock's defaults are Kafka's (5 s heartbeats, 30 s locks, 45 s sessions); tests
# shorten them so joining takes milliseconds and a lock expiry a second or two.
MOCK_HEARTBEAT_INTERVAL_MS = 100
MOCK_SESSION_TIMEOUT_MS = 10_000


@pytest.fixture
def rdkafka_mock() -> Iterator[RdkafkaMockCluster]:
    """A fresh one-broker librdkafka mock cluster, ``share.auto.offset.reset=earliest``.

    Function-scoped because every share-group setter of the mock is cluster-wide: a test
    that shortens the lock duration must not change another test's cluster. Starting
    one costs a few milliseconds.
    """
    with RdkafkaMockCluster(broker_count=1) as cluster:
        cluster.set_sharegroup_heartbeat_interval(MOCK_HEARTBEAT_INTERVAL_MS)
        cluster.set_sharegroup_session_timeout(MOCK_SESSION_TIMEOUT_MS)
        cluster.set_sharegroup_auto_offset_reset("earliest")
        yield cluster
