"""auto.create.topics.enable in the sandbox: a producer's first record creates its topic.

Kafka 4.2 (KRaft) answers the Metadata request that triggers the creation
before the controller has made the topic -- UNKNOWN_TOPIC_OR_PARTITION, no
partitions (``AutoTopicCreationManager.sendCreateTopicRequest``) -- and the
client finds the topic when it asks again. A request that does not allow
creation (kshare's admin client, consumers) never creates anything.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from tests.support.raw import call
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread


def _metadata(bootstrap: str, name: str, *, allow: bool) -> Any:
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name),),  # type: ignore[arg-type]
        allow_auto_topic_creation=allow,
        include_topic_authorized_operations=False,
    )
    (topic,) = call(bootstrap, request).topics
    return topic


@pytest.fixture
def no_auto_create() -> Iterator[SandboxThread]:
    with SandboxThread(auto_create_topics=False) as sandbox:
        yield sandbox


def _sandbox_only(cluster: Cluster) -> SandboxThread:
    if cluster.sandbox is None:
        pytest.skip("whether a real cluster creates topics is its auto.create.topics.enable")
    return cluster.sandbox


def test_first_answer_is_unknown_topic_and_the_next_finds_one_partition(
    cluster: Cluster, unique: str
) -> None:
    sandbox = _sandbox_only(cluster)
    name = f"auto-{unique}"
    first = _metadata(sandbox.bootstrap, name, allow=True)
    assert (first.error_code, first.name, first.partitions) == (
        ErrorCode.unknown_topic_or_partition,
        name,
        (),
    )
    assert first.topic_id is None  # kio's decoding of the zero id: no topic yet
    second = _metadata(sandbox.bootstrap, name, allow=True)
    assert second.error_code == 0
    assert second.topic_id is not None
    assert [(p.partition_index, p.leader_id, p.error_code) for p in second.partitions] == [
        (0, 1, 0)
    ]


def test_a_request_that_does_not_allow_creation_creates_nothing(
    cluster: Cluster, unique: str
) -> None:
    name = f"not-auto-{unique}"
    for _ in range(2):
        answer = _metadata(cluster.bootstrap, name, allow=False)
        assert (answer.error_code, answer.partitions) == (ErrorCode.unknown_topic_or_partition, ())


def test_an_invalid_name_is_invalid_topic_and_not_created(cluster: Cluster) -> None:
    sandbox = _sandbox_only(cluster)
    answer = _metadata(sandbox.bootstrap, "bad name!", allow=True)
    assert answer.error_code == ErrorCode.invalid_topic_exception
    assert sandbox.call(lambda broker: broker.topic("bad name!")) is None


def test_a_producer_creates_its_topic_and_its_records_land(cluster: Cluster, unique: str) -> None:
    sandbox = _sandbox_only(cluster)
    topic = f"auto-produced-{unique}"
    producer = Producer(cluster.config())  # librdkafka's producer allows creation by default
    for i in range(5):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0
    assert sandbox.call(lambda broker: broker.partition_log(topic, 0).log_end_offset) == 5  # type: ignore[union-attr]
    assert sandbox.call(lambda broker: len(broker.topic(topic).partitions)) == 1  # type: ignore[union-attr]


def test_kcat_creates_its_topic_and_reads_its_records_back(cluster: Cluster, unique: str) -> None:
    _sandbox_only(cluster)
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is installed by scripts/test.sh (Debian package kcat)"
    topic = f"auto-kcat-{unique}"
    subprocess.run(
        [kcat, "-b", cluster.bootstrap, "-P", "-t", topic],
        input=b"one\ntwo\nthree\n",
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [kcat, "-b", cluster.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
         "-f", "%s@%p:%o\n"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()  # fmt: skip
    assert out.splitlines() == ["one@0:0", "two@0:1", "three@0:2"]


def test_auto_create_topics_false_leaves_an_unknown_topic_unknown(
    no_auto_create: SandboxThread,
) -> None:
    for _ in range(2):
        answer = _metadata(no_auto_create.bootstrap, "never-made", allow=True)
        assert (answer.error_code, answer.partitions) == (ErrorCode.unknown_topic_or_partition, ())
    producer = Producer({"bootstrap.servers": no_auto_create.bootstrap, "message.timeout.ms": 1000})
    failures: list[str] = []
    producer.produce(
        "never-made",
        value=b"x",
        on_delivery=lambda error, _: failures.append(error.name() if error else ""),
    )
    producer.flush(30)
    # librdkafka waits for the topic to appear until the record times out.
    assert failures == ["_MSG_TIMED_OUT"]
    assert no_auto_create.call(lambda broker: broker.topic("never-made")) is None
