"""The redrive engine on a broker: what it sends, how it finds what it sent, and how it stops.

``kshare dlq redrive``'s command-level tests (``tests/cli/test_dlq_redrive.py``) run the
whole thing on the 4.4 sandbox's dead letters; these hold the engine to its parts: a
redriven record is the source record again plus three headers naming its dead letter,
the scan of a target topic finds exactly the dead letters redriven there, a stop between
two records leaves an exact count, and the pace is the one asked for. They run on the
sandbox or on ``KSHARE_TEST_BOOTSTRAP``'s cluster.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.consumer.redrive import (
    REDRIVE_HEADERS,
    DlqRecordId,
    RedriveRecord,
    redrive_headers,
    redriven_from,
    scan_target,
    send_records,
)
from kshare_cli.errors import NotFound
from tests.support.sandbox import Cluster
from tests.support.waiting import PROMPTLY_S


def _record(offset: int, *, headers: tuple[tuple[str, bytes | None], ...] = ()) -> RedriveRecord:
    return RedriveRecord(
        dlq=DlqRecordId("dlq.orders", offset % 2, offset),
        source_topic="orders",
        source_partition=offset % 2,
        source_offset=100 + offset,
        reason="rejected",
        key=f"k{offset}".encode(),
        value=f"v{offset}".encode(),
        headers=headers,
        dead_lettered_ms=int(time.time() * 1000),
    )


def test_a_redriven_record_keeps_its_headers_and_names_its_dead_letter_last() -> None:
    record = _record(7, headers=(("trace", b"t-1"), ("__kshare.redrive.dlq.offset", b"3")))
    headers = redrive_headers(record)
    assert headers == [
        ("trace", b"t-1"),
        ("__kshare.redrive.dlq.topic", b"dlq.orders"),
        ("__kshare.redrive.dlq.partition", b"1"),
        ("__kshare.redrive.dlq.offset", b"7"),
    ]
    assert redriven_from(headers) == DlqRecordId("dlq.orders", 1, 7)
    assert redriven_from([("trace", b"t-1")]) is None
    assert redriven_from([(name, b"x") for name in REDRIVE_HEADERS]) is None
    assert redriven_from(None) is None


def _topic(cluster: Cluster, partitions: int) -> str:
    name = f"redrive-{uuid.uuid4().hex[:10]}"
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(15)
    return name


def _read_all(cluster: Cluster, topic: str, partitions: int) -> list[tuple[int, object]]:
    consumer = Consumer(
        cluster.config(**{"group.id": f"t-{uuid.uuid4().hex}", "enable.partition.eof": True})
    )
    try:
        ends = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 15)
            if high > low:
                ends[partition] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        found: list[tuple[int, object]] = []
        deadline = time.monotonic() + 20
        while ends and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            found.append((message.partition() or 0, message))
            if (message.offset() or 0) + 1 >= ends.get(message.partition() or 0, 0):
                ends.pop(message.partition() or 0, None)
        return found
    finally:
        consumer.close()


def test_what_is_sent_is_what_the_scan_finds(cluster: Cluster) -> None:
    topic = _topic(cluster, 2)
    records = [_record(offset, headers=(("h", f"x{offset}".encode()),)) for offset in range(6)]
    result = send_records(
        cluster.config(), [(record, topic, record.source_partition) for record in records]
    )
    assert result.stopped_by == "done"
    assert [record.dlq for record in result.delivered] != []
    assert sorted(record.dlq for record in result.delivered) == sorted(r.dlq for r in records)
    assert result.failures == () and result.unconfirmed == () and result.not_sent == 0

    scan = scan_target(cluster.config(), topic, min(r.dead_lettered_ms or 0 for r in records), 15)
    assert scan.partitions == 2
    assert scan.redriven == frozenset(record.dlq for record in records)

    seen = _read_all(cluster, topic, 2)
    assert len(seen) == 6
    for partition, message in seen:
        offset = int(dict(message.headers())["__kshare.redrive.dlq.offset"])  # type: ignore[attr-defined]
        assert partition == offset % 2
        assert message.key() == f"k{offset}".encode()  # type: ignore[attr-defined]
        assert message.value() == f"v{offset}".encode()  # type: ignore[attr-defined]
        assert message.headers()[0] == ("h", f"x{offset}".encode())  # type: ignore[attr-defined]


def test_the_scan_of_a_missing_topic_says_so(cluster: Cluster) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        scan_target(cluster.config(), f"missing-{uuid.uuid4().hex[:8]}", None, 10)


def test_a_stop_ends_the_run_between_two_records_with_an_exact_count(cluster: Cluster) -> None:
    topic = _topic(cluster, 1)
    # An idempotent producer's first reports come after its producer id (about 0.6 s on
    # the sandbox): 200 records at 100/s leave time to stop halfway.
    records = [(_record(offset), topic, 0) for offset in range(200)]
    stop = threading.Event()

    def delivered(count: int) -> None:
        if count >= 5:
            stop.set()

    result = send_records(cluster.config(), records, rate=100, stop=stop, on_delivered=delivered)
    assert result.stopped_by == "interrupted"
    assert 5 <= len(result.delivered) < 200
    assert result.not_sent > 0
    assert len(result.delivered) + result.not_sent == 200
    scan = scan_target(cluster.config(), topic, None, 15)
    assert scan.redriven == frozenset(record.dlq for record in result.delivered)


def test_the_rate_paces_the_records(cluster: Cluster) -> None:
    topic = _topic(cluster, 1)
    records = [(_record(offset), topic, 0) for offset in range(21)]
    started = time.monotonic()
    result = send_records(cluster.config(), records, rate=40)
    elapsed = time.monotonic() - started
    assert len(result.delivered) == 21
    # 20 intervals of 25 ms after the first record; paced, yet not held back (one a
    # second would take 20 s).
    assert 0.45 <= elapsed < 20 / 40 + PROMPTLY_S, elapsed
