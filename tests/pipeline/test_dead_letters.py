"""Dead letters produced straight from ArchivedRecords (no Spark), read back with a Consumer.

The audit's own tests (tests/cli/test_audit_cmd.py) cover the common case end to
end; these cover what a scripted share group does not give: a delivery count limit
the cluster would not tell, a source record that itself carries ``__dlq.*`` headers
(the source topic is a DLQ), a topic whose name is unknown, a leader that refuses
the read of what the topic holds for a moment (librdkafka's mock cluster).
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.kafka.api_keys import LIST_OFFSETS
from kshare_cli.pipeline.dead_letters import DeadLetterError, produce_dead_letters
from kshare_cli.pipeline.models import ArchivedRecord, DeadLetterCount
from kshare_cli.sandbox.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox import Cluster

TOPIC_ID = "mSCBXRSwQxKnp8cV0x1v2A"


def _topic(cluster: Cluster, name: str, partitions: int) -> None:
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)


def _read(cluster: Cluster, topic: str) -> list[Message]:
    """Every record of every partition, to the end (partition EOF on each)."""
    consumer = Consumer(
        cluster.config(**{"group.id": f"reader-{uuid.uuid4().hex}", "enable.partition.eof": True})
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, partition, 0) for partition in partitions])
    read: list[Message] = []
    ended: set[int | None] = set()
    deadline = time.monotonic() + 30
    try:
        while len(ended) < len(partitions):
            assert time.monotonic() < deadline, f"{topic} did not answer to its end"
            # consume() waits its whole timeout unless 100 arrive: short slices.
            messages = consumer.consume(100, 0.2)
            read += [message for message in messages if message.error() is None]
            ended |= {message.partition() for message in messages if message.error() is not None}
        return read
    finally:
        consumer.close()


def _archived(
    offset: int,
    delivery_count: int,
    *,
    topic: str | None = "orders",
    partition: int = 0,
    headers: tuple[tuple[str, bytes | None], ...] | None = None,
) -> ArchivedRecord:
    return ArchivedRecord(
        group_id="g1",
        topic_id=TOPIC_ID,
        topic=topic,
        partition=partition,
        offset=offset,
        delivery_count=delivery_count,
        archived_at=None,
        record_found=True,
        key=f"k{offset}".encode(),
        value=f"v{offset}".encode(),
        timestamp=None,
        headers=headers,
    )


def test_without_the_delivery_limit_a_dead_letter_has_no_message_as_kafkas_without_a_cause(
    cluster: Cluster, unique: str
) -> None:
    """The cause is inferred from the limit; unknown limit, no __dlq.errors.message. The
    timestamp is the time of writing, as Kafka's (wall clock, CreateTime)."""
    dlq = f"dlq-{unique}"
    _topic(cluster, dlq, 1)
    before = int(time.time() * 1000)

    count = produce_dead_letters(
        [_archived(4, 2)], cluster.config(), dlq, "g1", delivery_limit=None
    )

    after = int(time.time() * 1000)
    assert count == DeadLetterCount(produced=1, already_there=0)
    (message,) = _read(cluster, dlq)
    kind, written = message.timestamp()
    assert kind == TIMESTAMP_CREATE_TIME and before <= written <= after
    assert (message.key(), message.value(), message.headers()) == (
        b"k4",
        b"v4",
        [
            ("__dlq.errors.topic", b"orders"),
            ("__dlq.errors.partition", b"0"),
            ("__dlq.errors.offset", b"4"),
            ("__dlq.errors.group", b"g1"),
            ("__dlq.errors.delivery.count", b"2"),
        ],
    )


def test_a_source_records_own_dlq_headers_give_way_to_the_new_ones(
    cluster: Cluster, unique: str
) -> None:
    """A record of a DLQ topic archived again: its other headers stay, its __dlq.* ones are
    replaced, so each appears once and names this source; the topic id stands in for an
    unknown name, as Kafka's resolveSourceTopicName; partition 4 of 3 goes to 1. The old
    headers do not make it count as already there: they name another source."""
    dlq = f"dlq-{unique}"
    _topic(cluster, dlq, 3)
    record = _archived(
        7,
        5,
        topic=None,
        partition=4,
        headers=(
            ("__dlq.errors.offset", b"99"),
            ("trace", b"t-1"),
            ("__dlq.errors.group", b"g1"),
            ("__dlq.errors.message", b"Offset rejected by client."),
            ("empty", None),
        ),
    )

    count = produce_dead_letters([record], cluster.config(), dlq, "g1", delivery_limit=5)

    assert count == DeadLetterCount(produced=1, already_there=0)
    (message,) = _read(cluster, dlq)
    assert message.partition() == 1
    assert message.headers() == [
        ("trace", b"t-1"),
        ("empty", None),
        ("__dlq.errors.topic", TOPIC_ID.encode()),
        ("__dlq.errors.partition", b"4"),
        ("__dlq.errors.offset", b"7"),
        ("__dlq.errors.group", b"g1"),
        ("__dlq.errors.delivery.count", b"5"),
        ("__dlq.errors.message", b"Offset delivery count exceeded the threshold."),
    ]
    again = produce_dead_letters([record], cluster.config(), dlq, "g1", delivery_limit=5)
    assert again == DeadLetterCount(produced=0, already_there=1)
    assert len(_read(cluster, dlq)) == 1


def test_a_dlq_topic_whose_leader_refuses_for_a_moment_is_read_all_the_same(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    """Right after a topic's creation its leader may answer NOT_LEADER_OR_FOLLOWER (seen on
    Kafka 4.2): librdkafka's mock answers ListOffsets so twice (two requests per watermark
    read), and the reader's read of what the topic holds waits it out; a refusal that does
    not pass fails within the timeout, naming it, and produces nothing."""
    mocked = Cluster(rdkafka_mock.bootstrap_servers)
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    rdkafka_mock.create_topic(dlq, 1)
    record = _archived(4, 5)
    first = produce_dead_letters([record], mocked.config(), dlq, "g1", delivery_limit=5)
    assert first == DeadLetterCount(produced=1, already_there=0)

    rdkafka_mock.push_request_errors(LIST_OFFSETS, [KafkaError.NOT_LEADER_FOR_PARTITION] * 4)
    rdkafka_mock.start_request_tracking()
    again = produce_dead_letters([record], mocked.config(), dlq, "g1", delivery_limit=5)
    assert again == DeadLetterCount(produced=0, already_there=1)  # it read the topic
    asked = [request for request in rdkafka_mock.requests() if request.api_key == LIST_OFFSETS]
    assert len(asked) >= 4 + 2  # refused twice, then answered

    rdkafka_mock.push_request_errors(LIST_OFFSETS, [KafkaError.NOT_LEADER_FOR_PARTITION] * 1000)
    started = time.monotonic()
    with pytest.raises(DeadLetterError, match="Not leader") as raised:
        produce_dead_letters(
            [_archived(5, 5)], mocked.config(), dlq, "g1", delivery_limit=5, timeout_s=2
        )
    assert time.monotonic() - started < 2 + 1.0, raised.value
    rdkafka_mock.clear_request_errors(LIST_OFFSETS)
    assert len(_read(mocked, dlq)) == 1
