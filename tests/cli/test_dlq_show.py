"""``kshare dlq show``: a group's dead letters, with the records they stand for (issue 26).

A ShareConsumer rejects two records and releases a third until the delivery limit (2),
in two groups with a broker DLQ (Kafka 4.4, ``share.version`` 2): one with
``errors.deadletterqueue.copy.record.enable`` off, one with it on. ``dlq show`` must
list exactly those three records per group, with their reasons and delivery counts;
with the copy off, key, value and headers come from the source log; with it on, key
and value from the copy (Kafka never copies the headers: from the log too). After
DeleteRecords (confluent-kafka's ``AdminClient.delete_records``; the sandbox answers it
as Kafka's ``deleteRecordsOnLeader``) the source is gone and the rows say so. Runs on
the sandbox's 4.4 profile, or on the cluster ``KSHARE_TEST_BOOTSTRAP`` names (4.4 with
``share.version`` 2): topic names are unique per run.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.security import ListenerSecurity
from tests.cli.conftest import (
    KSHARE,
    Kshare,
    assert_one_error_line,
    skip_unless_dead_letter_queues,
    validate,
    write_properties,
)
from tests.support.sandbox import (
    KEEP_OLD_RECORDS,
    Cluster,
    read_properties,
    skip_on_real_cluster,
)
from tests.support.sandbox_thread import SandboxThread

RECORDS = 10
REJECTED = (2, 6)
OVER_LIMIT = 4
DELIVERY_LIMIT = 2


@dataclass(frozen=True)
class Scenario:
    cluster: Cluster
    source: str
    copy_off: str  # group
    copy_on: str  # group
    plain: str  # a group without a DLQ


def _dlq(group: str) -> str:
    return f"dlq.{group}"


def _admin(cluster: Cluster) -> AdminClient:
    return AdminClient(cluster.config())  # type: ignore[arg-type]


def _consume(cluster: Cluster, topic: str, group: str) -> None:
    """Reject REJECTED, release OVER_LIMIT until the limit, accept the rest; until the
    dead letters are all written (the over-limit record's last release) and a quiet spell."""
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe([topic])
    deliveries = 0
    releases = 0
    deadline = time.monotonic() + 60
    quiet_until: float | None = None
    try:
        while time.monotonic() < deadline:
            if quiet_until is None and deliveries >= RECORDS and releases >= DELIVERY_LIMIT:
                quiet_until = time.monotonic() + 2.0
            if quiet_until is not None and time.monotonic() >= quiet_until:
                break
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                offset = message.offset()
                deliveries += 1
                if offset in REJECTED:
                    action = AcknowledgeType.REJECT
                elif offset == OVER_LIMIT:
                    action = AcknowledgeType.RELEASE
                    releases += 1
                else:
                    action = AcknowledgeType.ACCEPT
                consumer.acknowledge(message, action)
            consumer.commit_sync()
        assert releases >= DELIVERY_LIMIT, f"{releases} releases of offset {OVER_LIMIT}"
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def scenario() -> Iterator[Scenario]:
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if bootstrap:
        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        skip_unless_dead_letter_queues(bootstrap, Path(config_path) if config_path else None)
        yield _play(Cluster(bootstrap, read_properties(config_path) if config_path else {}))
        return
    with SandboxThread(kafka_version="4.4") as sandbox:
        yield _play(Cluster(sandbox.bootstrap, {}, sandbox))


def _play(cluster: Cluster) -> Scenario:
    run = uuid.uuid4().hex[:8]
    played = Scenario(cluster, f"dlq-src-{run}", f"dlq-off-{run}", f"dlq-on-{run}", f"none-{run}")
    admin = _admin(cluster)
    topics = [NewTopic(played.source, 1, 1, config=KEEP_OLD_RECORDS)] + [
        NewTopic(_dlq(group), 1, 1, config={"errors.deadletterqueue.group.enable": "true"})
        for group in (played.copy_off, played.copy_on)
    ]
    for future in admin.create_topics(topics).values():
        future.result(15)
    resources = []
    for group, copy in ((played.copy_off, False), (played.copy_on, True), (played.plain, None)):
        entries = [
            ConfigEntry("share.auto.offset.reset", "earliest"),
            ConfigEntry("share.delivery.count.limit", str(DELIVERY_LIMIT)),
        ]
        if copy is not None:
            entries.append(ConfigEntry("errors.deadletterqueue.topic.name", _dlq(group)))
            entries.append(
                ConfigEntry("errors.deadletterqueue.copy.record.enable", str(copy).lower())
            )
        for entry in entries:
            entry.incremental_operation = AlterConfigOpType.SET
        resources.append(ConfigResource(ResourceType.GROUP, group, incremental_configs=entries))
    for future in admin.incremental_alter_configs(resources).values():
        future.result(15)
    producer = Producer(cluster.config(acks="all"))
    for i in range(RECORDS):
        producer.produce(
            played.source,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=0,
            headers=[("trace", f"t{i}".encode())],
        )
    assert producer.flush(15) == 0
    for group in (played.copy_off, played.copy_on):
        _consume(cluster, played.source, group)
    return played


@pytest.fixture
def kshare(scenario: Scenario, tmp_path: Path) -> Kshare:
    config = None
    if scenario.cluster.client_config:
        config = write_properties(tmp_path / "client.properties", scenario.cluster.client_config)
    return Kshare(scenario.cluster.bootstrap, config, tmp_path / "config.toml")


def _show(kshare: Kshare, *args: str) -> dict[str, object]:
    result = kshare.run("dlq", "show", *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "dlq-show.schema.json")
    return document  # type: ignore[no-any-return]


def _letters(document: dict[str, object]) -> dict[int, dict[str, object]]:
    rows = document["dead_letters"]
    assert isinstance(rows, list)
    return {row["offset"]: row for row in rows}


EXPECTED = {2: ("rejected", 1), 4: ("limit", DELIVERY_LIMIT), 6: ("rejected", 1)}


def _check_listing(document: dict[str, object], source: str) -> dict[int, dict[str, object]]:
    letters = _letters(document)
    assert {
        offset: (row["reason"], row["delivery_count"]) for offset, row in letters.items()
    } == EXPECTED
    assert all(row["topic"] == source and row["partition"] == 0 for row in letters.values())
    assert document["summary"] == [
        {"topic": source, "partition": 0, "reason": "limit", "records": 1},
        {"topic": source, "partition": 0, "reason": "rejected", "records": 2},
    ]
    assert document["complete"] is True
    return letters


def test_dlq_show_lists_the_dead_letters_and_deleted_sources_as_gone(
    scenario: Scenario, kshare: Kshare
) -> None:
    """Issue 26's acceptance, ``dlq show``: copy off and on, before and after DeleteRecords."""
    off = _check_listing(_show(kshare, scenario.copy_off), scenario.source)
    for offset, row in off.items():
        assert (row["record_origin"], row["key"], row["value"]) == (
            "log",
            f"k{offset}",
            f"v{offset}",
        )
        assert row["headers_origin"] == "log"
        assert row["headers"] == [{"name": "trace", "value": f"t{offset}"}]
    on = _check_listing(_show(kshare, scenario.copy_on), scenario.source)
    for offset, row in on.items():
        assert (row["record_origin"], row["key"], row["value"]) == (
            "copy",
            f"k{offset}",
            f"v{offset}",
        )
        # Kafka copies key and value, never the headers: those still come from the log.
        assert row["headers_origin"] == "log"
        assert row["headers"] == [{"name": "trace", "value": f"t{offset}"}]

    only = _show(kshare, scenario.copy_off, "--reason", "limit", "--topic", scenario.source)
    assert list(_letters(only)) == [OVER_LIMIT]
    assert _show(kshare, scenario.copy_off, "--topic", "another")["dead_letters"] == []
    since = _show(kshare, scenario.copy_off, "--since", "10m")
    assert sorted(_letters(since)) == sorted(EXPECTED)
    # The DLQ topic named, not looked up: the same rows.
    named = _show(kshare, scenario.copy_off, "--dlq-topic", _dlq(scenario.copy_off))
    assert named["dlq_topic_from"] == "--dlq-topic"
    assert sorted(_letters(named)) == sorted(EXPECTED)

    table = kshare.run("dlq", "show", scenario.copy_off)
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "DEAD-LETTERED AT" in lines[0]
    # In the DLQ topic's order: as the broker wrote them.
    assert sorted(line.split()[2] for line in lines[2:5]) == ["2", "4", "6"]
    assert any("trace=t2" in line for line in lines[2:5])

    admin = _admin(scenario.cluster)  # kept: a collected AdminClient never completes its futures
    deleted = admin.delete_records([TopicPartition(scenario.source, 0, 8)])
    for future in deleted.values():
        assert future.result(15).low_watermark == 8
    gone = _check_listing(_show(kshare, scenario.copy_off), scenario.source)
    for row in gone.values():
        assert (row["record_origin"], row["key"], row["value"]) == ("gone", None, None)
        assert (row["headers_origin"], row["headers"]) == ("gone", None)
    copied = _check_listing(_show(kshare, scenario.copy_on), scenario.source)
    for offset, row in copied.items():
        assert (row["record_origin"], row["value"]) == ("copy", f"v{offset}")
        assert row["headers_origin"] == "gone"
    table = kshare.run("dlq", "show", scenario.copy_off)
    assert table.exit_code == 0, table.stderr
    assert table.stdout.splitlines()[2].split()[-3:] == ["gone", "gone", "gone"]


def test_jsonl_and_csv_have_a_row_per_dead_letter(scenario: Scenario, kshare: Kshare) -> None:
    lines = kshare.run("dlq", "show", scenario.copy_on, "-o", "jsonl")
    assert lines.exit_code == 0, lines.stderr
    rows = [json.loads(line) for line in lines.stdout.splitlines()]
    for row in rows:
        validate(row, "dlq-show-row.schema.json")
    assert sorted(row["offset"] for row in rows) == sorted(EXPECTED)
    table = kshare.run("dlq", "show", scenario.copy_on, "-o", "csv")
    assert table.exit_code == 0, table.stderr
    assert table.stdout.splitlines()[0].startswith("topic,partition,offset,delivery_count,reason")
    assert len(table.stdout.splitlines()) == 1 + len(EXPECTED)


def test_a_group_without_a_dlq_is_one_line_and_exit_5(scenario: Scenario, kshare: Kshare) -> None:
    result = kshare.run("dlq", "show", scenario.plain)
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stdout == ""
    assert_one_error_line(result.stderr, scenario.plain, "has no DLQ topic", "--dlq-topic")


def test_a_missing_dlq_topic_is_one_line_and_exit_5(scenario: Scenario, kshare: Kshare) -> None:
    result = kshare.run("dlq", "show", scenario.copy_off, "--dlq-topic", "dlq.no-such-topic")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "dlq.no-such-topic", "does not exist")


def test_a_since_in_the_future_is_a_usage_error(kshare: Kshare) -> None:
    result = kshare.run("dlq", "show", "g", "--since", "tomorrow")
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "--since", "in the future")


def test_plain_output_is_refused(kshare: Kshare) -> None:
    result = kshare.run("dlq", "show", "g", "-o", "plain", connect=False)
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""


USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def test_a_dlq_topic_the_principal_may_not_read_is_exit_6(tmp_path: Path) -> None:
    """bob may not READ the DLQ topic: one stderr line naming it, exit 6."""
    skip_on_real_cluster("needs a principal the cluster's ACLs refuse; the sandbox's deny list")
    security = ListenerSecurity(protocol="SASL_PLAINTEXT", users=USERS, mechanisms=("PLAIN",))
    deny = {"User:bob": [("TOPIC", "dlq.secret", "READ")]}
    with SandboxThread(kafka_version="4.4", security=security, deny=deny) as sandbox:
        configs = {
            user: write_properties(
                tmp_path / f"{user}.properties",
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                    f'required username="{user}" password="{password}";',
                },
            )
            for user, password in USERS.items()
        }
        alice = Cluster(
            sandbox.bootstrap,
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": USERS["alice"],
            },
        )
        admin = _admin(alice)
        for future in admin.create_topics([NewTopic("dlq.secret", 1, 1)]).values():
            future.result(15)
        producer = Producer(alice.config())
        producer.produce("dlq.secret", value=None, headers=[("__dlq.errors.group", b"g")])
        assert producer.flush(15) == 0
        bob = Kshare(sandbox.bootstrap, configs["bob"], tmp_path / "config.toml")
        result = bob.run("dlq", "show", "g", "--dlq-topic", "dlq.secret", "--timeout", "20s")
        assert result.exit_code == ExitCode.NOT_AUTHORIZED, result.stderr
        assert result.stdout == ""
        assert_one_error_line(result.stderr, "not authorized", "dlq.secret")
        allowed = Kshare(sandbox.bootstrap, configs["alice"], tmp_path / "config.toml")
        result = allowed.run("dlq", "show", "g", "--dlq-topic", "dlq.secret", "-o", "json")
        assert result.exit_code == 0, result.stderr
        assert len(json.loads(result.stdout)["dead_letters"]) == 1


def test_dlq_help_names_show(kshare: Kshare) -> None:
    result = kshare.run("dlq", "--help", connect=False)
    assert result.exit_code == 0
    assert "show" in result.stdout
    assert KSHARE.exists()
