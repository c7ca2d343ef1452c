"""``kshare inflight`` and ``kshare health`` through the command line on the sandbox:
a record left ARCHIVING (Kafka 4.4) and records retention deleted below the start offset
(issue 25).

ARCHIVING: the sandbox's Kafka 4.4 profile with ``share.version`` 2 and a group DLQ; its
DLQ write is stopped (the share coordinator never drains its dead letters), as a broker
that stops between the ARCHIVING write and the DLQ write leaves it, so the rejected record
stays ARCHIVING in ``__share_group_state``. Retention: the partition's log start offset is
moved past the group's start offset (DeleteRecords on a real cluster).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kshare_cli.sandbox.broker import Broker
from tests.cli.conftest import Kshare, validate
from tests.support.records import produce
from tests.support.sandbox import Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for


def _earliest(cluster: Cluster, group: str, **extra: str) -> None:
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    entries = [ConfigEntry("share.auto.offset.reset", "earliest")]
    entries += [ConfigEntry(key, value) for key, value in extra.items()]
    for entry in entries:
        entry.incremental_operation = AlterConfigOpType.SET
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)


def _produce(cluster: Cluster, topic: str, count: int) -> None:
    produce(
        cluster.config(**{"linger.ms": 100}),
        topic,
        {0: count},
        value=lambda partition, index: f"v{index}".encode(),
    )


def _consume(cluster: Cluster, group: str, topic: str, count: int, reject: set[int]) -> None:
    """Acknowledge ``count`` records of partition 0, rejecting the offsets in ``reject``."""
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 40
    try:
        while len(seen) < count:
            assert time.monotonic() < deadline, f"consumed only {sorted(seen)}"
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                offset = message.offset()
                assert offset is not None
                seen.add(offset)
                kind = AcknowledgeType.REJECT if offset in reject else AcknowledgeType.ACCEPT
                consumer.acknowledge(message, kind)
        consumer.commit_sync()
    finally:
        consumer.close()


def _kshare(cluster: Cluster, tmp_path: Any) -> Kshare:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text("")
    return Kshare(cluster.bootstrap, None, profiles)


# --------------------------------------------------------------------------- ARCHIVING


def _stop_dlq_writes(broker: Broker) -> None:
    """The share coordinator keeps its ARCHIVING writes and never writes the DLQ record
    (nor ARCHIVED): a broker stopped between the two writes."""
    (shares,) = [each for each in broker.extensions if hasattr(each, "drain_dead_letters")]
    shares.drain_dead_letters = lambda: None  # type: ignore[attr-defined]


@pytest.fixture
def archiving(tmp_path: Any) -> Iterator[tuple[Kshare, str, str]]:
    skip_on_real_cluster("a record is left ARCHIVING by stopping the sandbox's DLQ writes")
    with SandboxThread(kafka_version="4.4") as sandbox:
        cluster = Cluster(sandbox.bootstrap, {}, sandbox)
        suffix = uuid.uuid4().hex[:8]
        topic, group = f"k44-src-{suffix}", f"k44-g-{suffix}"
        admin = AdminClient(cluster.config())  # type: ignore[arg-type]
        new = [
            NewTopic(topic, 1, 1),
            NewTopic(f"dlq.{group}", 1, 1, config={"errors.deadletterqueue.group.enable": "true"}),
        ]
        for future in admin.create_topics(new).values():
            future.result(15)
        _earliest(cluster, group, **{"errors.deadletterqueue.topic.name": f"dlq.{group}"})
        sandbox.call(_stop_dlq_writes)
        _produce(cluster, topic, 4)
        _consume(cluster, group, topic, 4, reject={1})
        yield _kshare(cluster, tmp_path), group, topic


def test_a_record_left_archiving_has_its_glyph_column_and_json_state(
    archiving: tuple[Kshare, str, str],
) -> None:
    kshare, group, topic = archiving
    table = kshare.run("inflight", group, "--width", "4")
    assert table.exit_code == 0, table.stderr
    header, _, row = table.stdout.splitlines()[:3]
    cells = dict(zip(header.split(), row.split(), strict=True))
    assert cells["SHARE-PARTITION"] == f"{topic}:0"
    assert cells["ARCHIVING"] == "1" and cells["ARCHIVED"] == "0"
    assert "╱" in cells["WINDOW"]
    assert "╱ archiving (on its way to the dead-letter queue)" in table.stdout
    result = kshare.run("inflight", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "inflight.schema.json")
    window = document["partitions"][0]["window"]
    assert (window["archiving"], window["archived"]) == (1, 0)
    states = {
        offset: run["state"]
        for run in window["runs"]
        for offset in range(run["first_offset"], run["last_offset"] + 1)
    }
    assert states.get(1) == "archiving"


def test_health_warns_of_a_record_left_archiving(archiving: tuple[Kshare, str, str]) -> None:
    kshare, group, _ = archiving
    result = kshare.run("health", group, "-o", "json")
    # The archiving record is not delivery-complete, so it is lag, and the group has no
    # member: STOP (exit 2) for the group, WARN with words for the share-partition.
    assert result.exit_code == 2, result.stdout + result.stderr
    (partition,) = json.loads(result.stdout)["groups"][0]["partitions"]
    assert (partition["status"], partition["archiving"]) == ("WARN", 1)
    assert any(
        reason.startswith(
            "1 records are archiving (offset 1): persisted on their way to the dead-letter queue"
        )
        for reason in partition["reasons"]
    ), partition["reasons"]


# --------------------------------------------------------------------------- retention


def _delete_records(cluster: Cluster, topic: str, before: int) -> None:
    """Move partition 0's log start offset to ``before`` (DeleteRecords; the sandbox's log)."""
    if cluster.sandbox is not None:
        cluster.sandbox.call(
            lambda broker: broker.partition_log(topic, 0).delete_records_before(before)  # type: ignore[union-attr]
        )
        return
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    for future in admin.delete_records([TopicPartition(topic, 0, before)]).values():
        future.result(15)


def test_records_retention_deleted_are_deleted_not_queued(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    topic, group = f"k44-ret-{unique}", f"k44-ret-g-{unique}"
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(15)
    _earliest(cluster, group)
    _produce(cluster, topic, 3)
    _consume(cluster, group, topic, 3, reject=set())  # offsets 0-2 acknowledged
    _produce(cluster, topic, 6)  # offsets 3-8, never delivered
    _delete_records(cluster, topic, 6)  # 3, 4, 5 deleted before anyone got them

    def document() -> dict[str, Any]:
        result = kshare.run("inflight", group, "-o", "json")
        assert result.exit_code == 0, result.stderr
        parsed: dict[str, Any] = json.loads(result.stdout)
        return parsed

    first = wait_for(
        lambda: (d := document())["partitions"][0]["window"] is not None and d, timeout=15
    )
    validate(first, "inflight.schema.json")
    (partition,) = first["partitions"]
    assert partition["log_start_offset"] == 6
    window = partition["window"]
    assert (window["deleted"], window["queued"], window["unrecorded"]) == (3, 3, 0)
    assert any(run["state"] == "deleted" for run in window["runs"])
    table = kshare.run("inflight", group, "--width", "9")
    header, _, row = table.stdout.splitlines()[:3]
    cells = dict(zip(header.split(), row.split(), strict=True))
    assert (cells["DELETED"], cells["QUEUED"]) == ("3", "3")
    assert cells["WINDOW"].endswith("∅∅∅···")
    assert "3 records were deleted by retention before they were delivered" in table.stdout
    health = kshare.run("health", group, "-o", "json")
    (health_partition,) = json.loads(health.stdout)["groups"][0]["partitions"]
    assert health_partition["deleted"] == 3
    assert any(
        "3 records were deleted by retention" in reason for reason in health_partition["reasons"]
    )
