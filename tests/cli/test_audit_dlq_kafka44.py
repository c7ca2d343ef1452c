"""``kshare audit archived`` beside a Kafka 4.4 broker's own dead-letter queue (issue 25).

On the sandbox's Kafka 4.4 profile (``share.version`` 2) golden scenario D is
replayed as recorded (``tests/sandbox/test_golden_scenario_d.py``): the broker
writes ``golden-dg``'s three dead letters itself, each record going ARCHIVING
then ARCHIVED in ``__share_group_state``. The audit must report each of the
three once, archived, with its reason; ``--dlq-topic`` must say the broker
writes the group's DLQ, write nothing the broker wrote, and nothing on a second
run. A group whose DLQ was configured after some records were archived gets
exactly those back-filled, in Kafka's format, once.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.cli.conftest import Kshare
from tests.sandbox.test_golden_scenario_d import GROUPS, _consume, _produce, _read_topic, _setup
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread

MASTER = "local[1]"
GROUP = "golden-dg"
REJECTED = "Offset rejected by client."


@pytest.fixture(scope="module")
def sandbox_44() -> Iterator[Cluster]:
    skip_on_real_cluster(
        "scenario D's topics and groups have fixed names, which a shared broker may hold already"
    )
    with SandboxThread(kafka_version="4.4") as sandbox:
        yield Cluster(sandbox.bootstrap, {}, sandbox)


@pytest.fixture(scope="module")
def scenario_d(sandbox_44: Cluster) -> Cluster:
    """Golden scenario D's golden-dg, consumed as recorded: three dead letters by the broker."""
    _setup(sandbox_44, {GROUP: GROUPS[GROUP]})
    _produce(sandbox_44)
    _consume(sandbox_44, GROUP)
    assert len(_read_topic(sandbox_44, f"dlq.{GROUP}", 2)) == 3
    return sandbox_44


@pytest.fixture
def kshare(sandbox_44: Cluster, tmp_path: Path) -> Kshare:
    return Kshare(sandbox_44.bootstrap, None, tmp_path / "kshare" / "config.toml")


def _audit(kshare: Kshare, *args: str) -> Any:
    result = kshare.run("audit", "archived", *args, "--master", MASTER)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_scenario_d_reports_each_dead_lettered_record_once_with_its_reason(
    spark: Any, scenario_d: Cluster, kshare: Kshare
) -> None:
    """ARCHIVING then ARCHIVED in the state records is one archived record, not two: p0 o4
    and p1 o3 rejected on their first delivery, p1 o5 over the delivery limit of 5."""
    result = _audit(kshare, "--group", GROUP, "-o", "json")

    rows = json.loads(result.stdout)["archived"]
    assert [
        (row["partition"], row["offset"], row["delivery_count"], row["state"], row["reason"])
        for row in rows
    ] == [
        (0, 4, 1, "archived", "rejected"),
        (1, 3, 1, "archived", "rejected"),
        (1, 5, 5, "archived", "delivery_limit"),
    ]
    assert [(row["key"], row["value"]) for row in rows] == [
        ("k8", "v8"),
        ("k7", "v7"),
        ("k11", "v11"),
    ]

    table = _audit(kshare, "--group", GROUP).stdout
    assert [line.split()[3:6] for line in table.splitlines() if line.startswith("golden-d ")] == [
        ["1", "rejected", "archived"],
        ["1", "rejected", "archived"],
        ["5", "delivery", "limit"],
    ]


def test_dlq_topic_writes_nothing_the_broker_wrote_and_nothing_twice(
    spark: Any, scenario_d: Cluster, kshare: Kshare
) -> None:
    """The group's broker DLQ is on (share.version 2, errors.deadletterqueue.topic.name set):
    the audit says so before Spark starts, and every archived record is already there."""
    dlq = f"dlq.{GROUP}"
    before = _read_topic(scenario_d, dlq, 2)

    for _ in range(2):
        result = _audit(kshare, "--group", GROUP, "--dlq-topic", dlq)

        assert result.stdout == ""
        assert (
            f"kshare: the broker writes group '{GROUP}''s dead letters to {dlq} itself "
            "(share.version 2)" in result.stderr
        )
        assert f"kshare: produced 0 archived records to {dlq}; skipped 3 already there\n" in (
            result.stderr
        )
        assert [(m.partition(), m.offset()) for m in _read_topic(scenario_d, dlq, 2)] == [
            (m.partition(), m.offset()) for m in before
        ]


def _set_group_configs(cluster: Cluster, group: str, configs: dict[str, str]) -> None:
    entries = [ConfigEntry(name, value) for name, value in configs.items()]
    for entry in entries:
        entry.incremental_operation = AlterConfigOpType.SET
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)


def _consume_rejecting(cluster: Cluster, group: str, topic: str, count: int, reject: int) -> None:
    """Consume the topic's ``count`` records, rejecting offset ``reject``, accepting the rest."""
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 40
    try:
        while len(seen) < count:
            assert time.monotonic() < deadline, f"{topic}: only {sorted(seen)} delivered"
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                offset = message.offset()
                assert offset is not None
                seen.add(offset)
                consumer.acknowledge(
                    message,
                    AcknowledgeType.REJECT if offset == reject else AcknowledgeType.ACCEPT,
                )
        for partition, error in consumer.commit_sync(10).items():
            assert error is None, (partition, error)
    finally:
        consumer.close()


def test_what_was_archived_before_the_dlq_was_configured_is_back_filled_once(
    spark: Any, sandbox_44: Cluster, kshare: Kshare
) -> None:
    """Topic 'early' is consumed before the group has a DLQ (its reject goes straight to
    ARCHIVED, nothing written), 'late' after (the broker writes its reject): the audit
    writes early's dead letter only, in Kafka's format, and a second run writes nothing."""
    suffix = uuid.uuid4().hex[:8]
    group, early, late, dlq = (
        f"bf-{suffix}",
        f"early-{suffix}",
        f"late-{suffix}",
        f"dlq.bf-{suffix}",
    )
    admin = AdminClient(sandbox_44.config())  # type: ignore[arg-type]
    topics = [
        NewTopic(early, 1, 1, config=KEEP_OLD_RECORDS),
        NewTopic(late, 1, 1, config=KEEP_OLD_RECORDS),
        NewTopic(dlq, 1, 1, config={"errors.deadletterqueue.group.enable": "true"}),
    ]
    for future in admin.create_topics(topics).values():
        future.result(15)
    producer = Producer(sandbox_44.config())
    for topic in (early, late):
        for index in range(3):
            producer.produce(topic, key=f"k{index}".encode(), value=f"v{index}".encode())
    assert producer.flush(15) == 0
    _set_group_configs(sandbox_44, group, {"share.auto.offset.reset": "earliest"})
    _consume_rejecting(sandbox_44, group, early, 3, reject=1)
    assert _read_topic(sandbox_44, dlq, 1) == []
    _set_group_configs(sandbox_44, group, {"errors.deadletterqueue.topic.name": dlq})
    _consume_rejecting(sandbox_44, group, late, 3, reject=2)
    (by_broker,) = _read_topic(sandbox_44, dlq, 1)
    assert dict(by_broker.headers())["__dlq.errors.topic"] == late.encode()

    first = _audit(kshare, "--group", group, "--dlq-topic", dlq)
    second = _audit(kshare, "--group", group, "--dlq-topic", dlq)

    assert f"the broker writes group '{group}''s dead letters to {dlq} itself" in first.stderr
    assert f"produced 1 archived records to {dlq}; skipped 1 already there\n" in first.stderr
    assert f"produced 0 archived records to {dlq}; skipped 2 already there\n" in second.stderr
    written = _read_topic(sandbox_44, dlq, 1)
    assert len(written) == 2
    back_filled = written[1]
    assert (back_filled.key(), back_filled.value()) == (None, None)
    assert back_filled.headers() == [
        ("__dlq.errors.topic", early.encode()),
        ("__dlq.errors.partition", b"0"),
        ("__dlq.errors.offset", b"1"),
        ("__dlq.errors.group", group.encode()),
        ("__dlq.errors.delivery.count", b"1"),
        ("__dlq.errors.message", REJECTED.encode()),
    ]
