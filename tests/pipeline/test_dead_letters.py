"""Dead letters produced straight from ArchivedRecords (no Spark), read back with a Consumer.

The audit's own tests (tests/cli/test_audit_cmd.py, tests/cli/test_audit_dlq_kafka44.py)
cover the common case end to end; these cover what a scripted share group does not
give: the records of golden scenario D compared field by field with the DLQ records
a real Kafka 4.4 broker wrote (``tests/golden/kafka-4.4/scenario-d*-dlq.jsonl``), a
delivery count limit the cluster would not tell, a source record that itself carries
``__dlq.*`` headers (the source topic is a DLQ), a topic whose name is unknown, the
group's own broker DLQ topic beside the one written to (its dead letters count, a
record still ARCHIVING is the broker's), a leader that refuses the read of what the
topic holds for a moment (librdkafka's mock cluster).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.kafka.api_keys import LIST_OFFSETS, METADATA
from kshare_cli.pipeline.dead_letters import (
    DeadLetterError,
    archive_reason,
    produce_dead_letters,
    with_reasons,
)
from kshare_cli.pipeline.models import ArchivedRecord, DeadLetterCount
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox import Cluster
from tests.support.waiting import PROMPTLY_S, wait_for

TOPIC_ID = "mSCBXRSwQxKnp8cV0x1v2A"
GOLDEN_44 = Path(__file__).resolve().parents[1] / "golden" / "kafka-4.4"


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
    group_id: str = "g1",
    key: bytes | None = None,
    value: bytes | None = None,
    state: str = "archived",
) -> ArchivedRecord:
    return ArchivedRecord(
        group_id=group_id,
        topic_id=TOPIC_ID,
        topic=topic,
        partition=partition,
        offset=offset,
        delivery_count=delivery_count,
        archived_at=None,
        record_found=True,
        key=f"k{offset}".encode() if key is None else key,
        value=f"v{offset}".encode() if value is None else value,
        timestamp=None,
        headers=headers,
        state=state,
    )


def _b64(data: str | bytes | None) -> str | None:
    return None if data is None else base64.b64encode(_bytes(data)).decode()


def _bytes(data: str | bytes | None) -> bytes:
    return data.encode() if isinstance(data, str) else data or b""


@pytest.mark.parametrize(
    ("group", "recorded", "copy_record"),
    [
        ("golden-dg", "scenario-d-dlq.jsonl", False),
        ("golden-dg2", "scenario-d-copy-dlq.jsonl", True),
    ],
)
def test_scenario_ds_dead_letters_are_the_ones_kafka_44_wrote_field_by_field(
    cluster: Cluster, unique: str, group: str, recorded: str, copy_record: bool
) -> None:
    """The three records golden scenario D dead-lettered (p0 o4 and p1 o3 rejected on their
    first delivery, p1 o5 over the limit of 5), written as the audit writes them, equal
    what Kafka 4.4 wrote: partition (source partition mod 2), offset, CreateTime, null key
    and value unless copy.record.enable (then the original ones), no original header
    (v8's h=x8 is dropped), the six __dlq.errors.* headers in order with Kafka's texts."""
    dlq = f"dlq.{group}-{unique}"
    _topic(cluster, dlq, 2)
    produced = {
        (row["partition"], row["offset"]): row
        for line in (GOLDEN_44 / "scenario-d-produced.jsonl").read_text().splitlines()
        for row in [json.loads(line)]
    }
    archived = [
        ArchivedRecord(
            group_id=group,
            topic_id="tXs4w6sZTYyPfT9kGSFB7g",
            topic="golden-d",
            partition=partition,
            offset=offset,
            delivery_count=count,
            archived_at=None,
            record_found=True,
            key=source["key"].encode(),
            value=source["value"].encode(),
            timestamp=None,
            # README: h=x{i} on even i (the .jsonl lists none); Kafka copies none either way.
            headers=(("h", f"x{source['i']}".encode()),) if source["i"] % 2 == 0 else (),
        )
        for partition, offset, count in ((0, 4, 1), (1, 3, 1), (1, 5, 5))
        for source in [produced[(partition, offset)]]
    ]
    assert archived[0].headers == (("h", b"x8"),)

    count = produce_dead_letters(
        with_reasons(archived, 5),
        cluster.config(),
        dlq,
        group,
        delivery_limit=5,
        copy_record=copy_record,
    )

    assert count == DeadLetterCount(produced=3, already_there=0)
    written = sorted(_read(cluster, dlq), key=lambda m: (m.partition(), m.offset()))
    expected = [json.loads(line) for line in (GOLDEN_44 / recorded).read_text().splitlines()]
    assert [
        {
            "partition": message.partition(),
            "offset": message.offset(),
            "timestamp_type": "CreateTime"
            if message.timestamp()[0] == TIMESTAMP_CREATE_TIME
            else message.timestamp()[0],
            "key_b64": _b64(message.key()),
            "value_b64": _b64(message.value()),
            "headers": [
                [name, _bytes(data).decode(), _b64(data)]
                for name, data in list(message.headers() or [])
            ],
        }
        for message in written
    ] == [
        {
            name: row[name]
            for name in ("partition", "offset", "timestamp_type", "key_b64", "value_b64", "headers")
        }
        for row in expected
    ]


def test_reasons_are_inferred_as_kafka_does_from_the_delivery_count_and_the_limit() -> None:
    """At or above the limit: over the delivery limit; below: rejected; no limit: unknown.
    A reason already known is kept."""
    assert archive_reason(1, 5) == "rejected"
    assert archive_reason(5, 5) == "delivery_limit"
    assert archive_reason(5, None) is None
    reasoned = with_reasons([_archived(1, 1), _archived(2, 5), _archived(3, 4)], 4)
    assert [record.reason for record in reasoned] == [
        "rejected",
        "delivery_limit",
        "delivery_limit",
    ]
    assert [record.reason for record in with_reasons(reasoned, None)] == [
        "rejected",
        "delivery_limit",
        "delivery_limit",
    ]
    assert [record.reason for record in with_reasons([_archived(1, 1)], None)] == [None]


def test_beside_the_groups_broker_dlq_only_what_it_does_not_hold_is_written(
    cluster: Cluster, unique: str
) -> None:
    """The group's broker DLQ topic (another topic than the one written to) is read too:
    a dead letter the broker wrote there is not written again, another group's there does
    not count; a record still ARCHIVING is the broker's to write; what the broker never
    wrote (archived before its DLQ was configured) is back-filled; a second run writes
    nothing. A broker DLQ topic that does not exist yet holds nothing."""
    dlq, broker = f"audit-dlq-{unique}", f"dlq.g1-{unique}"
    _topic(cluster, dlq, 1)
    _topic(cluster, broker, 2)
    by_broker, others, archiving, before = (
        _archived(3, 1, key=b"", value=b""),
        _archived(4, 1),
        _archived(5, 1, state="archiving"),
        _archived(1, 1),
    )
    producer = Producer(cluster.config())
    for group, record in (("g1", by_broker), ("g2", others)):
        producer.produce(
            broker,
            partition=0,
            headers=[
                ("__dlq.errors.topic", b"orders"),
                ("__dlq.errors.partition", b"0"),
                ("__dlq.errors.offset", str(record.offset).encode()),
                ("__dlq.errors.group", group.encode()),
                ("__dlq.errors.delivery.count", b"1"),
                ("__dlq.errors.message", b"Offset rejected by client."),
            ],
        )
    assert producer.flush(30) == 0
    records = with_reasons([before, by_broker, others, archiving], 5)

    first = produce_dead_letters(
        records, cluster.config(), dlq, "g1", delivery_limit=5, broker_topic=broker
    )
    again = produce_dead_letters(
        records, cluster.config(), dlq, "g1", delivery_limit=5, broker_topic=broker
    )

    assert first == DeadLetterCount(produced=2, already_there=1, left_to_broker=1)
    assert again == DeadLetterCount(produced=0, already_there=3, left_to_broker=1)
    written = _read(cluster, dlq)
    offsets = [_bytes(dict(m.headers() or ())["__dlq.errors.offset"]) for m in written]
    assert sorted(offsets) == [b"1", b"4"]
    assert {(m.key(), m.value()) for m in written} == {(None, None)}
    missing = produce_dead_letters(
        [_archived(9, 1)],
        cluster.config(),
        dlq,
        "g1",
        delivery_limit=5,
        broker_topic=f"dlq.none-{unique}",
    )
    assert missing == DeadLetterCount(produced=1, already_there=0)


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
        None,
        None,
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
    """A record of a DLQ topic archived again, with --keep-headers and --copy-record: its
    other headers stay, its __dlq.* ones are replaced, so each appears once and names this
    source; the topic id stands in for an unknown name, as Kafka's resolveSourceTopicName;
    partition 4 of 3 goes to 1. The old headers do not make it count as already there:
    they name another source."""
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

    count = produce_dead_letters(
        [record], cluster.config(), dlq, "g1", delivery_limit=5, copy_record=True, keep_headers=True
    )

    assert count == DeadLetterCount(produced=1, already_there=0)
    (message,) = _read(cluster, dlq)
    assert message.partition() == 1
    assert (message.key(), message.value()) == (b"k7", b"v7")
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
    assert time.monotonic() - started < 2 + PROMPTLY_S, raised.value  # gave up at its 2 s timeout
    rdkafka_mock.clear_request_errors(LIST_OFFSETS)
    assert len(_read(mocked, dlq)) == 1


def test_a_dlq_topic_listed_without_a_leader_for_a_moment_is_read_all_the_same(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    """Right after a topic's creation a real broker lists it with LEADER_NOT_AVAILABLE until
    its leader is elected (seen on Kafka 4.2): the reader asks for the topic's metadata
    again until it is listed without error, then reads and produces; a topic that stays
    so fails within the timeout, naming the error, and produces nothing."""
    mocked = Cluster(rdkafka_mock.bootstrap_servers)
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    rdkafka_mock.create_topic(dlq, 1)
    rdkafka_mock.topic_set_error(dlq, KafkaError.LEADER_NOT_AVAILABLE)
    rdkafka_mock.start_request_tracking()
    outcome: list[DeadLetterCount | DeadLetterError] = []

    def produce() -> None:
        try:
            outcome.append(
                produce_dead_letters(
                    [_archived(4, 5)], mocked.config(), dlq, "g1", delivery_limit=5, timeout_s=30
                )
            )
        except DeadLetterError as error:
            outcome.append(error)

    def metadata_asked() -> int:
        return sum(request.api_key == METADATA for request in rdkafka_mock.requests())

    worker = threading.Thread(target=produce)
    worker.start()
    try:
        # The leader is elected once the reader has been refused twice (or it gave up).
        wait_for(lambda: outcome or metadata_asked() >= 3, timeout=20, what="Metadata asked")
    finally:
        rdkafka_mock.topic_set_error(dlq, 0)
        worker.join(40)
    assert outcome == [DeadLetterCount(produced=1, already_there=0)]
    assert len(_read(mocked, dlq)) == 1

    rdkafka_mock.topic_set_error(dlq, KafkaError.LEADER_NOT_AVAILABLE)
    started = time.monotonic()
    with pytest.raises(DeadLetterError, match="Leader not available") as raised:
        produce_dead_letters(
            [_archived(5, 5)], mocked.config(), dlq, "g1", delivery_limit=5, timeout_s=2
        )
    assert time.monotonic() - started < 2 + PROMPTLY_S, raised.value  # gave up at its 2 s timeout
    rdkafka_mock.topic_set_error(dlq, 0)
    assert len(_read(mocked, dlq)) == 1
