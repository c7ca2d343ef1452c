"""Offsets asked again through what a moment cures, and no longer than the caller's deadline.

Each case meets the error from a protocol peer: a sandbox cluster whose partition
leader moved after the reader learnt it (librdkafka asks the old leader once, gets
NOT_LEADER_OR_FOLLOWER, refreshes its metadata), or librdkafka's mock cluster
answering ListOffsets with an error a given number of times (a topic just created,
whose leader has not taken over yet; a leadership that never settles; a refusal).

librdkafka 2.16 reads a partition's two watermarks with two ListOffsets requests
(earliest, latest) to the same leader, and the mock fails requests one by one, so a
refusing leader is pushed two errors per read: given one, librdkafka loses the error
(the other request's answer overwrites it) and returns the high watermark as the low
one, (2, 2) for (0, 2) -- a lone refusal no broker gives, since both requests reach
the same leader at once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.dataplane.clients import new_reader
from kshare_cli.dataplane.errors import is_retriable
from kshare_cli.dataplane.offsets import offsets_for_times, watermark_offsets
from kshare_cli.kafka.api_keys import LIST_OFFSETS
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.records import produce
from tests.support.sandbox import StartCluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import PROMPTLY_S

NOT_LEADER = KafkaError.NOT_LEADER_FOR_PARTITION  # Kafka's NOT_LEADER_OR_FOLLOWER, 6
#: What a bounded read may overrun its deadline by: the attempt under way when it passes.
MARGIN_S = 1.0


@pytest.fixture
def moving(sandbox_cluster: StartCluster) -> Iterator[tuple[SandboxThread, str, Consumer]]:
    """A two-node sandbox, a topic of three records, and a reader that knows its leader."""
    sandbox = sandbox_cluster(2)
    topic = f"moving-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    produce(sandbox, topic, {0: 3})
    reader = new_reader({"bootstrap.servers": sandbox.bootstrap}, "test")
    try:
        assert reader.get_watermark_offsets(TopicPartition(topic, 0), 10, cached=False) == (0, 3)
        yield sandbox, topic, reader
    finally:
        reader.close()


def _move(sandbox: SandboxThread, reader: Consumer, topic: str) -> None:
    """Elect the other node; the reader's metadata still names the old leader."""
    leader = reader.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    sandbox.move_leader(topic, 0, 2 if leader == 1 else 1)


def test_watermarks_follow_a_leader_that_moved(
    moving: tuple[SandboxThread, str, Consumer],
) -> None:
    sandbox, topic, reader = moving
    _move(sandbox, reader, topic)
    met: list[KafkaError] = []
    found = watermark_offsets(reader, topic, 0, time.monotonic() + 10, on_retry=met.append)
    assert found == (0, 3)
    # The old leader was asked and refused: what a lone librdkafka call raises.
    assert [error.code() for error in met] == [NOT_LEADER]


def test_end_offsets_follow_a_leader_that_moved(
    moving: tuple[SandboxThread, str, Consumer],
) -> None:
    sandbox, topic, reader = moving
    _move(sandbox, reader, topic)
    met: list[KafkaError] = []
    (answer,) = offsets_for_times(
        reader, [TopicPartition(topic, 0, -1)], time.monotonic() + 10, on_retry=met.append
    )
    assert (answer.error, answer.offset) == (None, 3)
    assert met and all(is_retriable(error) for error in met)


@pytest.fixture
def mock_topic(rdkafka_mock: RdkafkaMockCluster) -> Iterator[tuple[Consumer, str]]:
    topic = f"mocked-{uuid.uuid4().hex[:8]}"
    rdkafka_mock.create_topic(topic, 1)
    produce({"bootstrap.servers": rdkafka_mock.bootstrap_servers}, topic, {0: 2})
    reader = new_reader({"bootstrap.servers": rdkafka_mock.bootstrap_servers}, "test")
    try:
        yield reader, topic
    finally:
        reader.close()


@pytest.mark.parametrize(
    "code",
    [NOT_LEADER, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART],
    ids=["NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION"],
)
def test_a_topic_just_created_answers_after_a_few_refusals(
    rdkafka_mock: RdkafkaMockCluster, mock_topic: tuple[Consumer, str], code: int
) -> None:
    reader, topic = mock_topic
    rdkafka_mock.push_request_errors(LIST_OFFSETS, [code] * 2 * 3)  # three reads refused
    met: list[KafkaError] = []
    found = watermark_offsets(reader, topic, 0, time.monotonic() + 10, on_retry=met.append)
    assert found == (0, 2)
    # librdkafka retries some by itself (LEADER_NOT_AVAILABLE): at least one reached us.
    assert met and {error.code() for error in met} == {code}


def test_a_refusal_that_does_not_pass_fails_within_the_deadline(
    rdkafka_mock: RdkafkaMockCluster, mock_topic: tuple[Consumer, str]
) -> None:
    reader, topic = mock_topic
    rdkafka_mock.push_request_errors(LIST_OFFSETS, [NOT_LEADER] * 1000)
    timeout_s = 2.0
    met: list[KafkaError] = []
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        watermark_offsets(reader, topic, 0, started + timeout_s, on_retry=met.append)
    elapsed = time.monotonic() - started
    assert raised.value.args[0].code() == NOT_LEADER  # the last answer, not "timed out"
    # Asked again until the deadline, and no longer than it (a loaded machine's pause aside).
    assert timeout_s - MARGIN_S < elapsed < timeout_s + PROMPTLY_S
    assert len(met) > 2  # asked again, with a backoff (not a thousand times)
    assert len(met) < 50
    # Long enough for one answer on a loaded machine (no answer at all is a timeout).
    with pytest.raises(KafkaException) as raised:
        offsets_for_times(reader, [TopicPartition(topic, 0, -1)], time.monotonic() + timeout_s)
    assert raised.value.args[0].code() == NOT_LEADER


def test_an_error_that_a_moment_does_not_cure_fails_at_once(
    rdkafka_mock: RdkafkaMockCluster, mock_topic: tuple[Consumer, str]
) -> None:
    reader, topic = mock_topic
    rdkafka_mock.push_request_errors(LIST_OFFSETS, [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 5)
    met: list[KafkaError] = []
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        watermark_offsets(reader, topic, 0, started + 30, on_retry=met.append)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert met == []  # never asked again
    assert time.monotonic() - started < PROMPTLY_S  # not the 30 s deadline
