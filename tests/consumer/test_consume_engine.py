"""kshare's share-consume engine against librdkafka's mock cluster and the sandbox.

Each acknowledgement type is checked by what the broker does next, seen by a
later consumer of the same group: released records come back with delivery
count 2, rejected and accepted ones never come back. ``--max-messages N`` accepts
exactly N; the idle timeout ends a run cleanly; a closed pipe accepts exactly the
lines its reader took.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from kshare_cli.consumer.share_consume import AckMode, RecordUnreadable
from kshare_cli.errors import ConnectionFailed, NotFound, UsageError
from tests.support.consume_beds import (
    FIRST_RECORD_MS,
    Bed,
    Record,
    consume_jsonl,
    drain,
    mock_bed,
    sandbox_bed,
    values,
)
from tests.support.rdkafka_mock import RdkafkaMockCluster


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Bed]:
    with sandbox_bed() as bed:
        yield bed


@pytest.fixture(params=["mock", "sandbox"])
def bed(request: pytest.FixtureRequest, sandbox: Bed) -> Bed:
    if request.param == "mock":
        mock: RdkafkaMockCluster = request.getfixturevalue("rdkafka_mock")
        return mock_bed(mock)
    return sandbox


def _offsets(lines: list[dict[str, object]]) -> list[object]:
    return [line["offset"] for line in lines]


def test_accept_prints_each_record_once_and_it_never_comes_back(bed: Bed) -> None:
    topic, group = bed.names("accept")
    offsets = bed.produce(topic, values(5))
    result, lines = consume_jsonl(bed, topic, group, max_messages=5)
    assert result.stopped_by == "max-messages"
    assert (result.processed, result.accepted, result.returned) == (5, 5, 0)
    assert _offsets(lines) == offsets
    assert [line["value"] for line in lines] == [f"r-{index:05d}" for index in range(5)]
    assert {line["delivery_count"] for line in lines} == {1}
    assert drain(bed, topic, group) == []


def test_released_records_come_back_with_delivery_count_2(bed: Bed) -> None:
    topic, group = bed.names("release")
    offsets = bed.produce(topic, values(3))
    result, lines = consume_jsonl(bed, topic, group, max_messages=3, ack=AckMode.release)
    assert (result.processed, result.released, result.accepted) == (3, 3, 0)
    assert [line["delivery_count"] for line in lines] == [1, 1, 1]
    again = drain(bed, topic, group)
    assert _offsets(again) == offsets
    assert [line["delivery_count"] for line in again] == [2, 2, 2]
    assert drain(bed, topic, group) == []


def test_rejected_records_never_come_back(bed: Bed) -> None:
    topic, group = bed.names("reject")
    bed.produce(topic, values(3))
    result, lines = consume_jsonl(bed, topic, group, max_messages=3, ack=AckMode.reject)
    assert (result.processed, result.rejected) == (3, 3)
    assert len(lines) == 3
    assert drain(bed, topic, group) == []


def test_max_messages_accepts_exactly_n(bed: Bed) -> None:
    topic, group = bed.names("max")
    # One produce request: the sandbox, like Kafka, acquires the whole batch at once, so
    # the first poll holds records beyond the 4 wanted and must release them.
    offsets = bed.produce(topic, values(10))
    result, lines = consume_jsonl(bed, topic, group, max_messages=4)
    assert result.stopped_by == "max-messages"
    assert (result.processed, result.accepted) == (4, 4)
    assert _offsets(lines) == offsets[:4]
    rest = drain(bed, topic, group)
    assert _offsets(rest) == offsets[4:]
    # Acquired and released: delivered a second time; never acquired: a first time.
    counts = [line["delivery_count"] for line in rest]
    assert counts.count(2) == result.returned
    assert counts.count(1) == len(rest) - result.returned
    assert drain(bed, topic, group) == []


def test_idle_timeout_ends_the_run_cleanly(bed: Bed) -> None:
    topic, group = bed.names("idle")
    started = time.monotonic()
    result, lines = consume_jsonl(bed, topic, group, idle_timeout_ms=600)
    elapsed = time.monotonic() - started
    assert result.stopped_by == "idle"
    assert result.error is None
    assert (result.processed, lines) == (0, [])
    assert 0.6 <= elapsed < 10


def test_idle_timeout_counts_from_the_last_record(bed: Bed) -> None:
    topic, group = bed.names("idle-after")
    bed.produce(topic, values(3))
    # The first wait includes the join (5 s on Kafka); the run still ends on the idle
    # timeout, counted from the last of the three records.
    result, lines = consume_jsonl(bed, topic, group, idle_timeout_ms=FIRST_RECORD_MS)
    assert result.stopped_by == "idle"
    assert (result.processed, result.accepted, len(lines)) == (3, 3, 3)
    assert drain(bed, topic, group) == []


def _ints(*numbers: int) -> list[Record]:
    return [Record(struct.pack(">i", number)) for number in numbers]


def test_a_record_that_cannot_be_read_stops_the_run_and_is_released(bed: Bed) -> None:
    topic, group = bed.names("unreadable")
    offsets = bed.produce(topic, [*_ints(1, 2), Record(b"abc"), *_ints(4)])
    result, lines = consume_jsonl(bed, topic, group, value_deserializer="int")
    assert result.stopped_by == "error"
    assert isinstance(result.error, RecordUnreadable)
    assert f"offset {offsets[2]}" in str(result.error)
    assert [line["value"] for line in lines] == [1, 2]
    assert (result.processed, result.accepted) == (2, 2)
    back = drain(bed, topic, group)
    assert _offsets(back) == offsets[2:]
    assert back[0]["value"] == "abc"
    assert back[0]["delivery_count"] == 2


def test_reject_on_error_rejects_the_unreadable_record_and_goes_on(bed: Bed) -> None:
    topic, group = bed.names("reject-on-error")
    offsets = bed.produce(topic, [*_ints(1), Record(b"abc"), *_ints(3)])
    rejected: list[str] = []
    from kshare_cli.consumer.deserializers import make_deserializer
    from kshare_cli.consumer.record_formatters import make_formatter
    from kshare_cli.consumer.share_consume import ConsumeOptions, consume
    from tests.support.consume_beds import Captured

    sink = Captured()
    formatter = make_formatter("jsonl", {}, make_deserializer("bytes"), make_deserializer("int"))
    result = consume(
        bed.config(),
        ConsumeOptions(topics=(topic,), group_id=group, reject_on_error=True, max_messages=3),
        formatter,
        sink,
        on_rejected=rejected.append,
    )
    assert result.error is None
    assert [line["value"] for line in sink.json_lines()] == [1, 3]
    assert (result.processed, result.accepted, result.rejected) == (3, 2, 1)
    assert len(rejected) == 1 and f"offset {offsets[1]}" in rejected[0]
    assert drain(bed, topic, group) == []


def test_a_stop_before_printing_releases_the_batch(bed: Bed) -> None:
    topic, group = bed.names("stopped")
    offsets = bed.produce(topic, values(4))
    stop = threading.Event()

    class StopOnFirstWrite:
        """The stop arrives while the first batch is being written: nothing printed is lost."""

        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> int:
            stop.set()
            self.data += data
            return len(data)

        def flush(self) -> None:
            pass

        def fileno(self) -> int:
            raise OSError("not a file")

    sink = StopOnFirstWrite()
    result, _ = consume_jsonl(bed, topic, group, sink=sink, stop=stop)
    assert result.stopped_by == "interrupted"
    printed = len(sink.data.splitlines())
    assert printed >= 1
    assert result.accepted == result.processed == printed
    rest = drain(bed, topic, group)
    assert _offsets(rest) == offsets[printed:]


def test_a_closed_pipe_accepts_exactly_what_its_reader_took(bed: Bed) -> None:
    topic, group = bed.names("pipe")
    offsets = bed.produce(topic, values(10))
    line_length = len(b"r-00000\n")
    taken_lines = 3
    read_end, write_end = os.pipe()
    sink = os.fdopen(write_end, "wb")
    outcome: list[object] = []

    def run() -> None:
        from kshare_cli.consumer.deserializers import make_deserializer
        from kshare_cli.consumer.record_formatters import make_formatter
        from kshare_cli.consumer.share_consume import ConsumeOptions, consume

        formatter = make_formatter(
            "text", {}, make_deserializer("bytes"), make_deserializer("bytes")
        )
        outcome.append(
            consume(bed.config(), ConsumeOptions(topics=(topic,), group_id=group), formatter, sink)
        )

    thread = threading.Thread(target=run)
    thread.start()
    taken = b""
    # Three lines and half of the fourth: the fourth was not printed.
    wanted = taken_lines * line_length + line_length // 2
    while len(taken) < wanted:
        taken += os.read(read_end, wanted - len(taken))
    os.close(read_end)
    thread.join(30)
    sink.close()
    (result,) = outcome
    assert result.stopped_by == "output-closed"  # type: ignore[attr-defined]
    assert result.processed == result.accepted == taken_lines  # type: ignore[attr-defined]
    rest = drain(bed, topic, group)
    assert _offsets(rest) == offsets[taken_lines:]
    assert rest[0]["delivery_count"] == 2  # the half-read line's record: released, not lost


def test_unknown_topic_fails_before_joining(bed: Bed) -> None:
    _, group = bed.names("missing")
    with pytest.raises(NotFound, match="does not exist"):
        consume_jsonl(bed, "no-such-topic-" + group, group)


def test_unreachable_cluster_fails_fast() -> None:
    bed = Bed("nowhere", "127.0.0.1:1")
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match="cannot connect to 127.0.0.1:1"):
        consume_jsonl(bed, "topic", "group")
    assert time.monotonic() - started < 5


def test_a_property_librdkafka_refuses_is_a_usage_error() -> None:
    bed = Bed("nowhere", "127.0.0.1:1", {"no.such.property": "1"})
    with pytest.raises(UsageError, match="no.such.property"):
        consume_jsonl(bed, "topic", "group")


LOCK_MS = 1_000


@pytest.fixture(params=["mock", "sandbox"])
def short_locks(request: pytest.FixtureRequest) -> Iterator[Bed]:
    """A bed whose acquisition locks last a second (the sandbox's bound allows it)."""
    if request.param == "mock":
        mock: RdkafkaMockCluster = request.getfixturevalue("rdkafka_mock")
        mock.set_sharegroup_record_lock_duration(LOCK_MS)
        yield mock_bed(mock)
        return
    if os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        pytest.skip("on a real cluster: the lock duration cannot go below its 15 s minimum")
    with sandbox_bed(
        share_record_lock_duration_ms=LOCK_MS, share_min_record_lock_duration_ms=LOCK_MS
    ) as bed:
        yield bed


def test_acknowledgements_after_the_lock_expired_are_reported(short_locks: Bed) -> None:
    """A reader slower than the lock: the broker refuses the acceptance, the records return."""
    from tests.support.consume_beds import Captured

    class SlowReader(Captured):
        def write(self, data: object) -> int:
            if not self.data:
                time.sleep(LOCK_MS / 1000 * 2.5)  # the mock reclaims locks on a 1 s timer
            return super().write(data)

    topic, group = short_locks.names("lock")
    offsets = short_locks.produce(topic, values(3))
    sink = SlowReader()
    result, _ = consume_jsonl(
        short_locks, topic, group, sink=sink, max_messages=6, idle_timeout_ms=3_000
    )
    assert result.stopped_by == "max-messages"
    (failure,) = result.acknowledgement_failures
    assert (failure.topic, failure.partition, failure.records) == (topic, 0, 3)
    # The broker answered with its refusal: only then may the records be promised back.
    assert failure.refused
    assert str(failure).endswith(
        "the broker did not apply them; they will be delivered again "
        "unless that was their last delivery"
    )
    # Printed twice: the late first delivery, then the redelivery, accepted in time.
    lines = sink.json_lines()
    assert [(line["offset"], line["delivery_count"]) for line in lines] == [
        *((offset, 1) for offset in offsets),
        *((offset, 2) for offset in offsets),
    ]
    assert drain(short_locks, topic, group) == []
