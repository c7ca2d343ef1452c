"""confluent-kafka's ShareConsumer against the sandbox, differentially against librdkafka's mock.

The sandbox is trusted only as far as independent clients agree with it: each
scenario runs on the sandbox and on Confluent's own mock cluster, and the
delivery history of every produced record -- its delivery counts and what the
consumer did with each delivery -- must come out the same on both.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from tests.support import records, scenarios
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.scenarios import Action, ScenarioResult

LOCK_MS = 1_500
HEARTBEAT_MS = 100


@dataclass
class Bed:
    """One test bed: where to connect, how to make a topic, how to prepare a group."""

    name: str
    bootstrap: str
    create_topic: Callable[[str, int], None]
    prepare_group: Callable[[str], object]
    lock_ms: int
    members_joined: Callable[[str, str, int], object] | None = None


def _admin_bed(name: str, bootstrap: str, lock_ms: int) -> Bed:
    admin_config = {"bootstrap.servers": bootstrap}
    admin = AdminClient(admin_config)

    def create_topic(topic: str, partitions: int) -> None:
        records.create_topic(admin_config, topic, partitions)

    def prepare_group(group: str) -> None:
        entries = [
            ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
        ]
        resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)

    return Bed(name, bootstrap, create_topic, prepare_group, lock_ms)


@pytest.fixture(scope="module")
def sandbox_bed() -> Iterator[Bed]:
    real = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if real:
        yield _admin_bed("cluster", real, 30_000)
        return
    settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=HEARTBEAT_MS,
        share_min_heartbeat_interval_ms=HEARTBEAT_MS,
        share_record_lock_duration_ms=LOCK_MS,
        share_min_record_lock_duration_ms=1_000,
    )
    with SandboxThread(settings=settings) as sandbox:
        yield _admin_bed("sandbox", sandbox.bootstrap, LOCK_MS)


@pytest.fixture
def mock_bed(rdkafka_mock: RdkafkaMockCluster) -> Bed:
    rdkafka_mock.set_sharegroup_record_lock_duration(LOCK_MS)
    return Bed(
        "mock",
        rdkafka_mock.bootstrap_servers,
        lambda topic, partitions: rdkafka_mock.create_topic(topic, partitions),
        lambda group: None,
        LOCK_MS,
        rdkafka_mock.share_all_partitions,
    )


def _names(bed: Bed, partitions: int = 1) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    topic = f"diff-{suffix}"
    bed.create_topic(topic, partitions)
    return topic, f"diff-g-{suffix}"


def _history(result: ScenarioResult) -> list[list[tuple[int, Action]]]:
    """Per produced record, in production order: its deliveries' (count, action)."""
    assert result.completed, result
    assert result.commit_errors == (), result.commit_errors
    return [
        [(d.delivery_count, d.action) for d in result.deliveries_of(position)]
        for position in result.produced
    ]


def _both(
    sandbox_bed: Bed, mock_bed: Bed, run: Callable[[Bed], ScenarioResult]
) -> tuple[ScenarioResult, ScenarioResult]:
    return run(sandbox_bed), run(mock_bed)


def test_every_record_delivered_once(sandbox_bed: Bed, mock_bed: Bed) -> None:
    def run(bed: Bed) -> ScenarioResult:
        topic, group = _names(bed)
        return scenarios.all_delivered(
            bed.bootstrap, topic, group, records=20, prepare_group=bed.prepare_group
        )

    on_sandbox, on_mock = _both(sandbox_bed, mock_bed, run)
    assert _history(on_sandbox) == _history(on_mock) == [[(1, Action.ACCEPT)]] * 20


def test_released_record_comes_back_with_delivery_count_2(sandbox_bed: Bed, mock_bed: Bed) -> None:
    def run(bed: Bed) -> ScenarioResult:
        topic, group = _names(bed)
        return scenarios.release_once(
            bed.bootstrap, topic, group, records=3, prepare_group=bed.prepare_group
        )

    on_sandbox, on_mock = _both(sandbox_bed, mock_bed, run)
    assert _history(on_sandbox) == _history(on_mock)
    assert _history(on_sandbox)[0] == [(1, Action.RELEASE), (2, Action.ACCEPT)]


def test_record_released_to_the_limit_is_archived(sandbox_bed: Bed, mock_bed: Bed) -> None:
    def run(bed: Bed) -> ScenarioResult:
        topic, group = _names(bed)
        return scenarios.release_until_archived(
            bed.bootstrap,
            topic,
            group,
            delivery_limit=5,
            quiet_period=1.5,
            prepare_group=bed.prepare_group,
        )

    on_sandbox, on_mock = _both(sandbox_bed, mock_bed, run)
    assert _history(on_sandbox) == _history(on_mock)
    assert _history(on_sandbox)[0] == [(count, Action.RELEASE) for count in range(1, 6)]


def test_unacknowledged_record_is_redelivered_after_the_lock(
    sandbox_bed: Bed, mock_bed: Bed
) -> None:
    def run(bed: Bed) -> ScenarioResult:
        topic, group = _names(bed)
        return scenarios.lock_timeout(
            bed.bootstrap,
            topic,
            group,
            redelivery_timeout=bed.lock_ms / 1000 + 20,
            prepare_group=bed.prepare_group,
            members_joined=bed.members_joined,
        )

    on_sandbox, on_mock = _both(sandbox_bed, mock_bed, run)
    assert _history(on_sandbox) == _history(on_mock)
    assert _history(on_sandbox) == [[(1, Action.HOLD), (2, Action.ACCEPT)]]
    (record,) = on_sandbox.produced
    held, again = on_sandbox.deliveries_of(record)
    assert again.at - held.at >= sandbox_bed.lock_ms / 1000 * 0.9


def test_two_consumers_share_one_partition_without_double_accepts(
    sandbox_bed: Bed, mock_bed: Bed
) -> None:
    def run(bed: Bed) -> ScenarioResult:
        topic, group = _names(bed, partitions=1)
        return scenarios.two_consumers(
            bed.bootstrap,
            topic,
            group,
            records=100,
            prepare_group=bed.prepare_group,
            members_joined=bed.members_joined,
            # One record a batch on the sandbox: Kafka acquires whole log batches, so records
            # produced in one batch would all go to whichever consumer fetches first. The
            # mock acquires record by record, and with one-record batches it loses share
            # sessions (error 122) and redelivers accepted records, so it keeps defaults.
            client_config=(
                {"batch.num.messages": 1, "linger.ms": 0} if bed is sandbox_bed else None
            ),
        )

    for bed, result in zip((sandbox_bed, mock_bed), _both(sandbox_bed, mock_bed, run), strict=True):
        accepted = result.accepted()
        assert len(set(accepted)) == len(accepted), (bed.name, result)
        assert sorted(accepted) == sorted(result.produced), bed.name
        consumers = {d.consumer for d in result.deliveries if d.action is Action.ACCEPT}
        assert len(consumers) == 2, result
