"""Golden scenario D, replayed live on the sandbox's Kafka 4.4 profile: the dead-letter queue.

The same client actions as the recording (``tests/golden/kafka-4.4/README.md``, "Scenario D"):
confluent-kafka creates ``golden-d`` and the DLQ topics ``dlq.golden-dg`` and ``dlq.golden-dg2``
(``errors.deadletterqueue.group.enable=true``), gives ``golden-dg`` and ``golden-dg2`` their DLQ
topic (``golden-dg2`` with ``copy.record.enable``), produces the 30 records and consumes them
with a ShareConsumer in explicit mode per group, releasing, rejecting and accepting as recorded.
Then the DLQ records the sandbox wrote must equal the recorded ones field by field (headers in
order, keys, values, partitions, offsets; the timestamp is the write time), and
``__share_group_state`` must hold what Kafka 4.4 wrote, ARCHIVING before each ARCHIVED. On the
same profile with ``share.version`` 1 the DLQ configs are ignored: rejects archive directly.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.state.records import (
    DELIVERY_COMPLETE_COUNT_UNKNOWN,
    ShareSnapshotValue,
    StateRecordKind,
    decode_record,
)
from tests.sandbox.test_golden_scenario_a import _read_state_topic
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread

GOLDEN_44 = Path(__file__).resolve().parents[1] / "golden" / "kafka-4.4"
TOPIC = "golden-d"
GROUPS = {"golden-dg": False, "golden-dg2": True}  # group -> copy.record.enable
DELIVERIES = {
    "golden-dg": "scenario-d-deliveries.jsonl",
    "golden-dg2": "scenario-d-copy-deliveries.jsonl",
}
DLQ_RECORDS = {"golden-dg": "scenario-d-dlq.jsonl", "golden-dg2": "scenario-d-copy-dlq.jsonl"}
NO_REDELIVERY_S = 3.0
ACTIONS = {
    "accept": AcknowledgeType.ACCEPT,
    "release": AcknowledgeType.RELEASE,
    "reject": AcknowledgeType.REJECT,
}


def _read_jsonl(name: str) -> list[dict[str, Any]]:
    lines = (GOLDEN_44 / name).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def sandbox_44() -> Iterator[Cluster]:
    skip_on_real_cluster(
        "the DLQ records and state records are compared with a fresh recording's, "
        "which a shared broker already holding golden-d cannot give"
    )
    with SandboxThread(kafka_version="4.4") as sandbox:
        yield Cluster(sandbox.bootstrap, {}, sandbox)


def _setup(cluster: Cluster, groups: dict[str, bool]) -> None:
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    topics = [NewTopic(TOPIC, 2, 1, config=KEEP_OLD_RECORDS)] + [
        NewTopic(f"dlq.{group}", 2, 1, config={"errors.deadletterqueue.group.enable": "true"})
        for group in groups
    ]
    for future in admin.create_topics(topics).values():
        future.result(15)
    resources = []
    for group, copy in groups.items():
        entries = [
            ConfigEntry("share.auto.offset.reset", "earliest"),
            ConfigEntry("errors.deadletterqueue.topic.name", f"dlq.{group}"),
        ]
        if copy:
            entries.append(ConfigEntry("errors.deadletterqueue.copy.record.enable", "true"))
        for entry in entries:
            entry.incremental_operation = AlterConfigOpType.SET
        resources.append(ConfigResource(ResourceType.GROUP, group, incremental_configs=entries))
    for future in admin.incremental_alter_configs(resources).values():
        future.result(15)


def _produce(cluster: Cluster) -> None:
    producer = Producer(cluster.config(**{"acks": "all", "linger.ms": 1000}))
    for record in _read_jsonl("scenario-d-produced.jsonl"):
        producer.produce(
            TOPIC,
            key=None if record["key"] is None else record["key"].encode(),
            value=record["value"].encode(),
            partition=record["partition"],
            timestamp=record["timestamp"],
            headers=[(name, value.encode()) for name, value in record["headers"]] or None,
        )
    assert producer.flush(15) == 0


def _consume(cluster: Cluster, group: str) -> Counter[tuple[int, int, int, str]]:
    """Consume with the recorded actions until every recorded delivery came and a quiet spell."""
    recorded = _read_jsonl(DELIVERIES[group])
    actions = {(d["partition"], d["offset"], d["delivery_count"]): d["action"] for d in recorded}
    consumer = ShareConsumer(
        cluster.config(
            **{
                "group.id": group,
                "client.id": f"{group}-share-consumer",
                "share.acknowledgement.mode": "explicit",
            }
        )
    )
    consumer.subscribe([TOPIC])
    deliveries: Counter[tuple[int, int, int, str]] = Counter()
    deadline = time.monotonic() + 40
    quiet_until: float | None = None
    try:
        while True:
            now = time.monotonic()
            if quiet_until is None and sum(deliveries.values()) >= len(recorded):
                quiet_until = now + NO_REDELIVERY_S
            if (quiet_until is not None and now >= quiet_until) or now >= deadline:
                break
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                partition, offset = message.partition(), message.offset()
                count = message.delivery_count()
                assert partition is not None and offset is not None and count is not None
                action = actions.get((partition, offset, count), "unexpected")
                deliveries[(partition, offset, count, action)] += 1
                consumer.acknowledge(message, ACTIONS.get(action, AcknowledgeType.ACCEPT))
        assert consumer.commit_sync() == {}
    finally:
        consumer.close()
    return deliveries


def _read_topic(cluster: Cluster, topic: str, partitions: int) -> list[Any]:
    """Every record of ``topic``, low to high watermark, partition by partition."""
    consumer = Consumer(
        cluster.config(
            **{"group.id": f"golden-dlq-reader-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}
        )
    )
    try:
        ends: dict[int, int] = {}
        starts: dict[int, int] = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 15)
            if high > low:
                starts[partition], ends[partition] = low, high
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in ends])
        positions = dict(starts)
        messages: list[Any] = []
        deadline = time.monotonic() + 20
        while any(positions[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"{topic} read stuck at {positions} of {ends}"
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
            at, offset = message.partition(), message.offset()
            assert at is not None and offset is not None
            positions[at] = offset + 1
        return sorted(messages, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _dlq_content(message: Any) -> dict[str, Any]:
    key, value = message.key(), message.value()
    return {
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp_type": "CreateTime" if message.timestamp()[0] == 1 else message.timestamp()[0],
        "key_b64": _b64(key),
        "value_b64": _b64(value),
        "headers": [
            [name, bytes(data).decode(), _b64(bytes(data))]
            for name, data in message.headers() or []
        ],
    }


def _recorded_dlq_content(row: dict[str, Any]) -> dict[str, Any]:
    return {
        name: row[name]
        for name in ("partition", "offset", "timestamp_type", "key_b64", "value_b64", "headers")
    }


def _record_content(kind: int, key_partition: int, value: dict[str, Any]) -> str:
    content = {
        "partition": key_partition,
        "kind": kind,
        "snapshot_epoch": value["snapshot_epoch"],
        "leader_epoch": value["leader_epoch"],
        "start_offset": value["start_offset"],
        "delivery_complete_count": value["delivery_complete_count"],
        "state_batches": value["state_batches"],
    }
    if kind == StateRecordKind.SNAPSHOT:
        content["state_epoch"] = value["state_epoch"]
    return json.dumps(content, sort_keys=True)


def _recorded_state(group: str) -> list[str]:
    lines = _read_jsonl("decoded/share-group-state.jsonl")
    contents = []
    for line in sorted(
        lines, key=lambda row: (row["key"]["partition"], row["partition"], row["offset"])
    ):
        if line["key"]["groupId"] != group:
            continue
        value = line["value"]
        contents.append(
            _record_content(
                line["key_type"],
                line["key"]["partition"],
                {
                    "snapshot_epoch": value["snapshotEpoch"],
                    "state_epoch": value.get("stateEpoch"),
                    "leader_epoch": value["leaderEpoch"],
                    "start_offset": value["startOffset"],
                    "delivery_complete_count": value.get(
                        "deliveryCompleteCount", DELIVERY_COMPLETE_COUNT_UNKNOWN
                    ),
                    "state_batches": [
                        [b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"]]
                        for b in value["stateBatches"]
                    ],
                },
            )
        )
    return contents


def _live_state(cluster: Cluster, group: str) -> list[str]:
    records = sorted(_read_state_topic(cluster), key=lambda r: (r[0], r[1]))
    decoded = [decode_record(key, value) for _, _, key, value in records]
    contents = []
    for record in sorted(
        (r for r in decoded if r.key.group_id == group and r.value is not None),
        key=lambda r: r.key.partition,
    ):
        value = record.value
        assert value is not None
        contents.append(
            _record_content(
                int(record.key.kind),
                record.key.partition,
                {
                    "snapshot_epoch": value.snapshot_epoch,
                    "state_epoch": value.state_epoch
                    if isinstance(value, ShareSnapshotValue)
                    else None,
                    "leader_epoch": value.leader_epoch,
                    "start_offset": value.start_offset,
                    "delivery_complete_count": value.delivery_complete_count,
                    "state_batches": [
                        [b.first_offset, b.last_offset, b.delivery_state, b.delivery_count]
                        for b in value.state_batches
                    ],
                },
            )
        )
    return contents


def test_golden_scenario_d_dead_letters(sandbox_44: Cluster) -> None:
    started_ms = int(time.time() * 1000)
    _setup(sandbox_44, GROUPS)
    _produce(sandbox_44)

    for group in GROUPS:
        recorded = Counter(
            (d["partition"], d["offset"], d["delivery_count"], d["action"])
            for d in _read_jsonl(DELIVERIES[group])
        )
        delivered = _consume(sandbox_44, group)
        assert delivered == recorded, (
            f"{group}: missing {recorded - delivered}, unexpected {delivered - recorded}"
        )

    for group in GROUPS:
        # The DLQ records: Kafka's, field by field (partition = source partition mod 2).
        written = _read_topic(sandbox_44, f"dlq.{group}", 2)
        recorded_rows = _read_jsonl(DLQ_RECORDS[group])
        assert [_dlq_content(m) for m in written] == [
            _recorded_dlq_content(r) for r in recorded_rows
        ]
        # CreateTime is the write time, not the original record's (January 2026).
        assert all(m.timestamp()[1] >= started_ms for m in written)
        # __share_group_state: every record Kafka 4.4 wrote for the group, ARCHIVING first.
        assert _live_state(sandbox_44, group) == _recorded_state(group)


def test_share_version_1_ignores_the_dead_letter_queue() -> None:
    skip_on_real_cluster("it starts a sandbox in Kafka 4.4's profile with share.version 1")
    with SandboxThread(kafka_version="4.4", share_version=1) as sandbox:
        cluster = Cluster(sandbox.bootstrap, {}, sandbox)
        _setup(cluster, {"golden-dg": False})
        _produce(cluster)
        delivered = _consume(cluster, "golden-dg")
        assert sum(delivered.values()) == 35
        # Nothing written to the DLQ topic; the rejects went straight to ARCHIVED.
        assert _read_topic(cluster, "dlq.golden-dg", 2) == []
        states = {
            b.delivery_state
            for _, _, key, value in _read_state_topic(cluster)
            for record in [decode_record(key, value)]
            if record.value is not None
            for b in record.value.state_batches
        }
        assert DeliveryState.ARCHIVED in states
        assert DeliveryState.ARCHIVING not in states
