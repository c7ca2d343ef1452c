"""The share-consumer scenarios against librdkafka's mock cluster, and the wrapper itself.

The mock is Confluent's implementation of the broker side of the share-consumer
protocol; what these tests pin down is what the sandbox must reproduce in the
differential tests: delivery counts, redelivery after release and after a lock expiry,
archiving at the delivery limit, one acceptance per record across consumers.
"""

from __future__ import annotations

import uuid

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, Producer

from kshare_cli.kafka.api_keys import SHARE_FETCH
from tests.support import scenarios
from tests.support.rdkafka_mock import (
    MockClusterError,
    RdkafkaMockCluster,
    librdkafka_path,
    librdkafka_version,
)
from tests.support.scenarios import Action, ScenarioResult


def names(cluster: RdkafkaMockCluster, partitions: int = 1) -> tuple[str, str]:
    """A fresh topic, created on the mock, and a fresh group name."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"topic-{suffix}"
    cluster.create_topic(topic, partitions)
    return topic, f"group-{suffix}"


def assert_clean(result: ScenarioResult) -> None:
    assert result.completed, result
    assert result.commit_errors == (), result.commit_errors


def test_the_library_is_the_one_confluent_kafka_loaded() -> None:
    assert librdkafka_path().is_file()
    assert librdkafka_version() == confluent_kafka.libversion()[1]


def test_mock_cluster_reports_errors_and_closes_once(rdkafka_mock: RdkafkaMockCluster) -> None:
    host, _, port = rdkafka_mock.bootstrap_servers.partition(":")
    assert host == "127.0.0.1" and int(port) > 0
    rdkafka_mock.create_topic("duplicate", 1)
    with pytest.raises(MockClusterError) as duplicate:
        rdkafka_mock.create_topic("duplicate", 1)
    assert duplicate.value.code == KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(MockClusterError) as unknown_broker:
        rdkafka_mock.broker_set_down(7)
    assert unknown_broker.value.code == KafkaError.BROKER_NOT_AVAILABLE
    rdkafka_mock.close()
    rdkafka_mock.close()
    with pytest.raises(RuntimeError, match="closed"):
        rdkafka_mock.create_topic("after-close", 1)


def test_all_delivered(rdkafka_mock: RdkafkaMockCluster) -> None:
    topic, group = names(rdkafka_mock)
    result = scenarios.all_delivered(rdkafka_mock.bootstrap_servers, topic, group, records=20)
    assert_clean(result)
    assert len(result.produced) == 20
    assert result.delivery_counts() == {position: (1,) for position in result.produced}
    assert sorted(result.accepted()) == list(result.produced)


def test_release_once(rdkafka_mock: RdkafkaMockCluster) -> None:
    topic, group = names(rdkafka_mock)
    result = scenarios.release_once(rdkafka_mock.bootstrap_servers, topic, group, records=3)
    assert_clean(result)
    released, *others = result.produced
    target = result.deliveries_of(released)
    assert [(d.delivery_count, d.action) for d in target] == [
        (1, Action.RELEASE),
        (2, Action.ACCEPT),
    ]
    assert {position: result.delivery_counts()[position] for position in others} == {
        position: (1,) for position in others
    }
    assert sorted(result.accepted()) == list(result.produced)


def test_release_until_archived_stops_at_the_delivery_limit(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    # 4, not the default 5, so the test also proves the limit reached the mock.
    rdkafka_mock.set_sharegroup_max_delivery_attempts(4)
    topic, group = names(rdkafka_mock)
    result = scenarios.release_until_archived(
        rdkafka_mock.bootstrap_servers, topic, group, delivery_limit=4, quiet_period=1.0
    )
    assert_clean(result)
    archived, *others = result.produced
    assert [(d.delivery_count, d.action) for d in result.deliveries_of(archived)] == [
        (count, Action.RELEASE) for count in (1, 2, 3, 4)
    ]
    sentinel = result.produced[-1]
    last_release = result.deliveries_of(archived)[-1]
    sentinel_delivery = result.deliveries_of(sentinel)[0]
    assert sentinel_delivery.at > last_release.at
    assert sorted(result.accepted()) == sorted(others)


def test_lock_timeout_redelivers_to_the_other_consumer(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    lock_ms = 1_500
    rdkafka_mock.set_sharegroup_record_lock_duration(lock_ms)
    topic, group = names(rdkafka_mock)
    result = scenarios.lock_timeout(
        rdkafka_mock.bootstrap_servers,
        topic,
        group,
        redelivery_timeout=15.0,
        members_joined=rdkafka_mock.share_all_partitions,
    )
    assert_clean(result)
    (record,) = result.produced
    held, redelivered = result.deliveries_of(record)
    assert (held.delivery_count, held.action) == (1, Action.HOLD)
    assert (redelivered.delivery_count, redelivered.action) == (2, Action.ACCEPT)
    assert redelivered.consumer != held.consumer
    # Not before the lock could have expired: the record was acquired after it was produced.
    assert redelivered.at - result.produced_at >= lock_ms / 1000
    assert result.accepted() == (record,)


def test_two_consumers_share_one_partition(rdkafka_mock: RdkafkaMockCluster) -> None:
    topic, group = names(rdkafka_mock, partitions=1)
    result = scenarios.two_consumers(
        rdkafka_mock.bootstrap_servers,
        topic,
        group,
        records=100,
        members_joined=rdkafka_mock.share_all_partitions,
    )
    assert_clean(result)
    assert result.consumers() == {"a", "b"}
    accepted = result.accepted()
    assert len(accepted) == len(set(accepted)), "a record was accepted twice"
    assert sorted(accepted) == list(result.produced)
    assert {d.partition for d in result.deliveries} == {0}


def test_share_fetch_errors_are_retried(rdkafka_mock: RdkafkaMockCluster) -> None:
    topic, group = names(rdkafka_mock)
    injected = [KafkaError.REQUEST_TIMED_OUT] * 3
    rdkafka_mock.start_request_tracking()
    rdkafka_mock.push_request_errors(SHARE_FETCH, injected)
    result = scenarios.all_delivered(rdkafka_mock.bootstrap_servers, topic, group, records=10)
    assert_clean(result)
    assert result.delivery_counts() == {position: (1,) for position in result.produced}
    share_fetches = [r for r in rdkafka_mock.requests() if r.api_key == SHARE_FETCH]
    assert len(share_fetches) > len(injected), "the injected errors were never hit"


def test_broker_down_refuses_producers_until_up(rdkafka_mock: RdkafkaMockCluster) -> None:
    topic, _ = names(rdkafka_mock)
    rdkafka_mock.broker_set_down(1)
    producer = Producer({"bootstrap.servers": rdkafka_mock.bootstrap_servers})
    producer.produce(topic, value=b"while down")
    # Proving a negative needs a bounded wait: nothing is delivered while it is down.
    assert producer.flush(1.0) == 1
    rdkafka_mock.broker_set_up(1)
    assert producer.flush(15.0) == 0
