"""Third-party clients against the sandbox's core APIs: what they send is what they get back."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec, TopicMetadata

from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster
from tests.support.waiting import wait_for

BASE_TS = 1767225600000


def _create(cluster: Cluster, topic: str, partitions: int) -> AdminClient:
    admin = AdminClient(cluster.config())
    new = NewTopic(topic, partitions, 1, config=KEEP_OLD_RECORDS)  # January 2026 records
    for future in admin.create_topics([new]).values():
        future.result(15)
    return admin


def _produce(cluster: Cluster, topic: str, count: int, partitions: int, **extra: object) -> None:
    producer = Producer(cluster.config(**extra))
    for i in range(count):
        producer.produce(
            topic,
            key=None if i % 10 == 9 else f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % partitions,
            timestamp=BASE_TS + i * 1000,
            headers=[("h", f"x{i}".encode())] if i % 2 == 0 else None,
        )
    assert producer.flush(15) == 0


def _consume_all(cluster: Cluster, topic: str, partitions: int, expected: int) -> list[object]:
    consumer = Consumer(
        cluster.config(**{"group.id": f"plain-{topic}", "enable.auto.commit": False})
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = []
    deadline = time.monotonic() + 20
    while len(seen) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        seen.append(message)
    consumer.close()
    return seen


def test_admin_creates_and_lists_topics(cluster: Cluster, unique: str) -> None:
    topic = f"core-{unique}"
    admin = _create(cluster, topic, 3)

    def listed() -> TopicMetadata | None:
        # A real cluster answers CreateTopics once the controller has the topic; the broker
        # that answers Metadata may learn of it a moment later (or list it without leaders).
        metadata = admin.list_topics(timeout=10).topics.get(topic)
        return metadata if metadata is not None and metadata.error is None else None

    metadata = wait_for(listed, timeout=15, interval=0.2, what=f"{topic} in the metadata")
    assert sorted(metadata.partitions) == [0, 1, 2]
    again = admin.create_topics([NewTopic(topic, 3, 1)])[topic]
    with pytest.raises(Exception, match="already exists"):
        again.result(10)


@pytest.mark.parametrize("compression", ["none", "gzip", "lz4", "zstd", "snappy"])
def test_produced_records_come_back_byte_for_byte(
    cluster: Cluster, unique: str, compression: str
) -> None:
    topic = f"core-{compression}-{unique}"
    _create(cluster, topic, 2)
    _produce(cluster, topic, 30, 2, **{"compression.type": compression, "linger.ms": 50})
    seen = _consume_all(cluster, topic, 2, 30)
    got = {(m.partition(), m.offset()): m for m in seen}  # type: ignore[attr-defined]
    assert len(got) == 30
    for i in range(30):
        message = got[(i % 2, i // 2)]
        assert message.key() == (None if i % 10 == 9 else f"k{i}".encode())  # type: ignore[attr-defined]
        assert message.value() == f"v{i}".encode()  # type: ignore[attr-defined]
        assert message.timestamp()[1] == BASE_TS + i * 1000  # type: ignore[attr-defined]
        expected_headers = [("h", f"x{i}".encode())] if i % 2 == 0 else None
        assert message.headers() == expected_headers  # type: ignore[attr-defined]


def test_list_offsets_earliest_latest_and_by_timestamp(cluster: Cluster, unique: str) -> None:
    topic = f"core-offsets-{unique}"
    admin = _create(cluster, topic, 2)
    _produce(cluster, topic, 30, 2)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    def offsets(spec: OffsetSpec) -> dict[int, int]:
        result = admin.list_offsets({p0: spec, p1: spec})
        return {tp.partition: f.result(10).offset for tp, f in result.items()}

    assert offsets(OffsetSpec.earliest()) == {0: 0, 1: 0}
    assert offsets(OffsetSpec.latest()) == {0: 15, 1: 15}
    # Record i (partition i % 2, offset i // 2) has timestamp BASE_TS + i s: the first
    # record at or after +10 s is i = 10 on p0 (offset 5) and i = 11 on p1 (offset 5).
    assert offsets(OffsetSpec.for_timestamp(BASE_TS + 10_000)) == {0: 5, 1: 5}
    assert offsets(OffsetSpec.for_timestamp(BASE_TS + 999_999)) == {0: -1, 1: -1}


def test_kcat_produces_and_consumes(cluster: Cluster, unique: str) -> None:
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is installed by scripts/test.sh (Debian package kcat)"
    topic = f"core-kcat-{unique}"
    _create(cluster, topic, 1)
    lines = "".join(f"key{i}:value {i}\n" for i in range(20))
    subprocess.run(
        [kcat, "-b", cluster.bootstrap, "-P", "-t", topic, "-K", ":", "-p", "0"],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [kcat, "-b", cluster.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
         "-f", "%k=%s@%o\n"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()  # fmt: skip
    assert out.splitlines() == [f"key{i}=value {i}@{i}" for i in range(20)]
    metadata = subprocess.run(
        [kcat, "-b", cluster.bootstrap, "-L", "-t", topic],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    assert f'topic "{topic}" with 1 partitions' in metadata


def test_an_idempotent_producer_gets_a_producer_id_and_its_records_land(
    cluster: Cluster, unique: str
) -> None:
    """librdkafka's idempotent producer asks InitProducerId first (kshare audit --dlq-topic
    produces that way); every record must then land once, in order."""
    topic = f"idempotent-{unique}"
    _create(cluster, topic, 1)
    delivered: list[tuple[object, int | None]] = []
    producer = Producer(cluster.config(**{"enable.idempotence": True, "acks": "all"}))
    for i in range(20):
        producer.produce(
            topic,
            value=f"v{i}".encode(),
            on_delivery=lambda e, m: delivered.append((e, m.offset())),
        )
    assert producer.flush(15) == 0

    assert delivered == [(None, offset) for offset in range(20)]
    seen = _consume_all(cluster, topic, 1, 20)
    assert [message.value() for message in seen] == [f"v{i}".encode() for i in range(20)]
