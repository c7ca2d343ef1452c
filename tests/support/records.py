"""Topics and records for a test, made with third-party clients (confluent-kafka).

One home for what most integration tests start with: create a topic, put records on
given partitions. Both take the ``Cluster`` a test has, a ``SandboxThread``, or a client
config, so they work on the sandbox and on a real cluster alike. Deadlines are generous:
a loaded machine must not fail a test here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread

#: How long a topic creation or a producer's flush may take before the test fails.
CLIENT_DEADLINE_S: Final = 30.0

#: A broker to talk to: the suite's ``Cluster`` (with its client properties), a sandbox
#: of a test's own, or a client config.
Target = Cluster | SandboxThread | Mapping[str, Any]

#: What ``produce`` writes as the value of the ``index``-th record of a partition.
ValueOf = Callable[[int, int], bytes]


def client_config(target: Target) -> dict[str, Any]:
    """The confluent-kafka config for ``target``."""
    if isinstance(target, Cluster):
        return target.config()
    if isinstance(target, SandboxThread):
        return {"bootstrap.servers": target.bootstrap}
    return dict(target)


def numbered(partition: int, index: int) -> bytes:
    """``r0``, ``r1``, ...: the default value, the record's index on its partition."""
    return f"r{index}".encode()


def create_topics(
    target: Target,
    *topics: str,
    partitions: int = 1,
    replicas: int = 1,
    topic_config: Mapping[str, str] | None = None,
) -> None:
    """Create ``topics``, each of ``partitions`` partitions; fail the test on any error."""
    admin = AdminClient(client_config(target))
    new = [
        NewTopic(topic, partitions, replicas, config=dict(topic_config or {})) for topic in topics
    ]
    for future in admin.create_topics(new).values():
        future.result(CLIENT_DEADLINE_S)


def create_topic(
    target: Target,
    topic: str,
    partitions: int = 1,
    *,
    replicas: int = 1,
    topic_config: Mapping[str, str] | None = None,
) -> None:
    """Create one topic (see ``create_topics``)."""
    create_topics(
        target, topic, partitions=partitions, replicas=replicas, topic_config=topic_config
    )


def produce(
    target: Target,
    topic: str,
    counts: Mapping[int, int],
    *,
    value: ValueOf = numbered,
) -> None:
    """Produce ``counts[partition]`` records to each partition and wait until all are
    written. A config ``target`` may carry producer settings too (``linger.ms`` 100 puts a
    partition's records in one batch, which a broker hands to one consumer at once)."""
    producer = Producer(client_config(target))
    for partition, count in counts.items():
        for index in range(count):
            producer.produce(topic, value=value(partition, index), partition=partition)
    assert producer.flush(CLIENT_DEADLINE_S) == 0
