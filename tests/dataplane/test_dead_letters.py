"""``DeadLetterCounter``: a DLQ topic counted by group and reason, each read only what is new.

The records carry Kafka 4.4's six ``__dlq.errors.*`` headers, as the broker writes them
(``tests/golden/kafka-4.4/scenario-d-dlq.jsonl``); a record without the group header is
not a share group's dead letter and is read but not counted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kshare_cli.dataplane.dead_letters import DeadLetterCounter
from kshare_cli.kafka.dead_letters import DeadLetterReason
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread

TOPIC = "dlq.counted"
REJECT = b"Offset rejected by client."
OVER = b"Offset delivery count exceeded the threshold."


@pytest.fixture
def bootstrap() -> Iterator[str]:
    skip_on_real_cluster("it counts a topic it creates on a sandbox of its own")
    with SandboxThread() as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
            future.result(15)
        yield sandbox.bootstrap


def _produce(bootstrap: str, letters: list[tuple[str | None, bytes, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for index, (group, message, timestamp) in enumerate(letters):
        headers: list[tuple[str, str | bytes | None]] = [
            ("__dlq.errors.topic", b"src"),
            ("__dlq.errors.partition", b"0"),
            ("__dlq.errors.offset", str(index).encode()),
        ]
        if group is not None:
            headers.append(("__dlq.errors.group", group.encode()))
        headers += [("__dlq.errors.delivery.count", b"1"), ("__dlq.errors.message", message)]
        producer.produce(TOPIC, partition=index % 2, headers=headers, timestamp=timestamp)
    assert producer.flush(15) == 0


def test_each_read_counts_only_what_was_written_since(bootstrap: str) -> None:
    now_ms = int(time.time() * 1000)
    _produce(
        bootstrap,
        [("a", REJECT, now_ms - 3000), ("a", OVER, now_ms - 2000), ("b", REJECT, now_ms - 1000)]
        + [(None, REJECT, now_ms)],
    )
    counter = DeadLetterCounter({"bootstrap.servers": bootstrap}, TOPIC)
    try:
        first = counter.read(15)
        assert first.complete and first.error is None
        assert first.records_read == 4
        a = first.group("a")
        assert a.records == 2
        assert a.count(DeadLetterReason.REJECTED) == 1
        assert a.count(DeadLetterReason.DELIVERY_LIMIT) == 1
        assert a.newest_timestamp_ms == now_ms - 2000
        assert first.group("b").records == 1

        _produce(bootstrap, [("a", b"something newer", now_ms + 1000), ("a", REJECT, now_ms)])
        second = counter.read(15)
        # Two records read, not six: the counter went on where it stopped.
        assert second.records_read == 6
        a = second.group("a")
        assert a.records == 4
        assert a.count(DeadLetterReason.REJECTED) == 2
        assert a.count(DeadLetterReason.OTHER) == 1
        assert a.newest_timestamp_ms == now_ms + 1000
        assert counter.read(15).records_read == 6
    finally:
        counter.close()


def test_a_read_out_of_time_says_so_and_a_missing_topic_is_named(bootstrap: str) -> None:
    missing = DeadLetterCounter({"bootstrap.servers": bootstrap}, "dlq.nowhere")
    try:
        tally = missing.read(10)
        assert tally.missing and not tally.complete
        assert tally.error == "the topic does not exist"
    finally:
        missing.close()
    counter = DeadLetterCounter({"bootstrap.servers": bootstrap}, TOPIC)
    try:
        tally = counter.read(0)
        assert not tally.complete and tally.records_read == 0
    finally:
        counter.close()
