"""``kshare dlq redrive`` through the command line, on the sandbox's Kafka 4.4 profile (issue 26).

The bed: a topic of ``RECORDS`` records (key ``k{i}``, value ``v{i}``, header ``h=x{i}``
on even ``i``, partition ``i % 2``), a share group whose DLQ topic is ``dlq.<topic>``
(``errors.deadletterqueue.topic.name``, the topic opened with
``errors.deadletterqueue.group.enable=true``), and a share consumer that rejected every
record, so the broker itself dead-lettered them all (headers only: no copy, the source
log keeps key, value and headers). Each test redrives them its own way and counts what
arrived by the headers naming each dead letter. With ``KSHARE_TEST_BOOTSTRAP`` the same
tests run on that cluster (it needs ``share.version`` 2); nothing here reaches into the
sandbox.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
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
from typer.testing import CliRunner

from kshare_cli.cli.app import app
from tests.cli.conftest import (
    KSHARE,
    Kshare,
    assert_one_error_line,
    process_env,
    skip_unless_dead_letter_queues,
    write_properties,
)
from tests.support.sandbox import Cluster, read_properties
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

RECORDS = 120
REDRIVE = (
    "__kshare.redrive.dlq.topic",
    "__kshare.redrive.dlq.partition",
    "__kshare.redrive.dlq.offset",
)


@dataclass(frozen=True)
class Bed:
    cluster: Cluster
    topic: str
    group: str
    dlq: str
    command_config: Path | None


def _admin(cluster: Cluster) -> AdminClient:
    return AdminClient(cluster.config())  # type: ignore[arg-type]


def _create(cluster: Cluster, *topics: NewTopic) -> None:
    admin = _admin(cluster)  # kept alive until the answers came
    for future in admin.create_topics(list(topics)).values():
        future.result(15)


def _group_configs(cluster: Cluster, group: str, configs: dict[str, str]) -> None:
    entries = []
    for name, value in configs.items():
        entry = ConfigEntry(name, value)
        entry.incremental_operation = AlterConfigOpType.SET
        entries.append(entry)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = _admin(cluster)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)


def _read(cluster: Cluster, topic: str) -> list[Any]:
    """Every record of ``topic``, log start to high watermark."""
    consumer = Consumer(
        cluster.config(**{"group.id": f"t-{uuid.uuid4().hex}", "enable.auto.commit": False})
    )
    try:
        partitions = consumer.list_topics(topic, timeout=15).topics[topic].partitions
        ends, starts = {}, {}
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 15)
            if high > low:
                starts[partition], ends[partition] = low, high
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in ends])
        positions = dict(starts)
        found: list[Any] = []
        deadline = time.monotonic() + 30
        while any(positions[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"{topic} read stuck at {positions} of {ends}"
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            found.append(message)
            positions[message.partition()] = message.offset() + 1
        return found
    finally:
        consumer.close()


def _ends(cluster: Cluster, topic: str) -> dict[int, int]:
    consumer = Consumer(cluster.config(**{"group.id": f"t-{uuid.uuid4().hex}"}))
    try:
        partitions = consumer.list_topics(topic, timeout=15).topics[topic].partitions
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), 15)[1] for p in partitions
        }
    finally:
        consumer.close()


def _redriven_from(message: Any) -> tuple[str, int, int] | None:
    headers = dict(message.headers() or [])
    if REDRIVE[0] not in headers:
        return None
    return (
        headers[REDRIVE[0]].decode(),
        int(headers[REDRIVE[1]]),
        int(headers[REDRIVE[2]]),
    )


def _redriven(cluster: Cluster, topic: str) -> Counter[tuple[str, int, int]]:
    return Counter(
        source for message in _read(cluster, topic) if (source := _redriven_from(message))
    )


def _dead_letters(cluster: Cluster, dlq: str) -> set[tuple[str, int, int]]:
    return {(dlq, message.partition(), message.offset()) for message in _read(cluster, dlq)}


def _make_bed(cluster: Cluster, command_config: Path | None) -> Bed:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"redrive-{suffix}", f"redrive-g-{suffix}"
    dlq = f"dlq.{topic}"
    _create(
        cluster,
        NewTopic(topic, 2, 1),
        NewTopic(dlq, 2, 1, config={"errors.deadletterqueue.group.enable": "true"}),
    )
    _group_configs(
        cluster,
        group,
        {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": dlq},
    )
    producer = Producer(cluster.config(**{"acks": "all"}))
    for i in range(RECORDS):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % 2,
            headers=[("h", f"x{i}".encode())] if i % 2 == 0 else None,
        )
    assert producer.flush(15) == 0
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe([topic])
    rejected = 0
    deadline = time.monotonic() + 60
    try:
        while rejected < RECORDS and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                consumer.acknowledge(message, AcknowledgeType.REJECT)
                rejected += 1
        consumer.commit_sync()
    finally:
        consumer.close()
    assert rejected == RECORDS
    wait_for(
        lambda: sum(_ends(cluster, dlq).values()) >= RECORDS,
        timeout=30,
        what="the broker's dead letters",
    )
    return Bed(cluster, topic, group, dlq, command_config)


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if bootstrap:
        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        properties = read_properties(config_path) if config_path else {}
        command_config = None
        if properties:
            directory = tmp_path_factory.mktemp("redrive-config")
            command_config = write_properties(directory / "client.properties", properties)
        skip_unless_dead_letter_queues(bootstrap, command_config)
        yield _make_bed(Cluster(bootstrap, properties), command_config)
        return
    with SandboxThread(kafka_version="4.4") as sandbox:
        yield _make_bed(Cluster(sandbox.bootstrap, {}, sandbox), None)


@pytest.fixture
def kshare(bed: Bed, tmp_path: Path) -> Kshare:
    return Kshare(bed.cluster.bootstrap, bed.command_config, tmp_path / "config.toml")


def _fresh_topic(bed: Bed, partitions: int = 2) -> str:
    name = f"redrive-to-{uuid.uuid4().hex[:8]}"
    _create(bed.cluster, NewTopic(name, partitions, 1))
    return name


def test_a_dry_run_plans_per_partition_and_reason_and_sends_nothing(
    bed: Bed, kshare: Kshare
) -> None:
    before = _ends(bed.cluster, bed.topic)
    result = kshare.run("dlq", "redrive", bed.group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["dry_run"] is True
    assert document["dlq_topic"] == bed.dlq
    assert (document["send"], document["cannot"]) == (RECORDS, 0)
    rows = {(row["topic"], row["partition"], row["reason"]): row for row in document["partitions"]}
    assert set(rows) == {(bed.topic, 0, "rejected"), (bed.topic, 1, "rejected")}
    assert [rows[key]["send"] for key in sorted(rows)] == [RECORDS // 2, RECORDS // 2]
    assert all(row["sent"] is None for row in rows.values())
    assert f"dry run: nothing was sent; {RECORDS} records would be sent" in result.stderr
    assert _ends(bed.cluster, bed.topic) == before

    table = kshare.run("dlq", "redrive", bed.group, "--reason", "limit")
    assert table.exit_code == 0, table.stderr
    assert "0 records would be sent" in table.stderr


def test_execute_sends_each_once_and_a_share_consumer_gets_them_with_key_value_headers(
    bed: Bed, kshare: Kshare
) -> None:
    """Back on the source topic, in their partitions; a second run sends nothing."""
    chosen = f"{bed.topic}:0:2,{bed.topic}:0:3,{bed.topic}:1:4"  # records 4, 6 and 9
    result = kshare.run("dlq", "redrive", bed.group, "--offsets", chosen, "--execute", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "3 records of 3 redriven" in result.stderr
    counts = _redriven(bed.cluster, bed.topic)
    assert sum(counts.values()) == 3 and set(counts.values()) == {1}

    group = f"redrive-reader-{uuid.uuid4().hex[:8]}"
    _group_configs(bed.cluster, group, {"share.auto.offset.reset": "earliest"})
    consumer = ShareConsumer(bed.cluster.config(**{"group.id": group}))
    consumer.subscribe([bed.topic])
    received: dict[str, Any] = {}
    deadline = time.monotonic() + 40
    try:
        while len(received) < 3 and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                if message.error() is None and _redriven_from(message) is not None:
                    received[message.value().decode()] = message
    finally:
        consumer.close()
    assert sorted(received) == ["v4", "v6", "v9"]
    for value, message in received.items():
        i = int(value[1:])
        assert message.key() == f"k{i}".encode()
        assert message.partition() == i % 2
        own = [(name, data) for name, data in message.headers() if not name.startswith("__")]
        assert own == ([("h", f"x{i}".encode())] if i % 2 == 0 else [])

    before = _ends(bed.cluster, bed.topic)
    again = kshare.run("dlq", "redrive", bed.group, "--offsets", chosen, "--execute", "--yes")
    assert again.exit_code == 0, again.stderr
    assert "nothing to send: 3 already redriven" in again.stderr
    assert _ends(bed.cluster, bed.topic) == before


def _run_until(
    bed: Bed, kshare: Kshare, target: str, delivered: int, stop: signal.Signals
) -> subprocess.CompletedProcess[str]:
    """Run the console script redriving to ``target`` at 40/s; send ``stop`` once
    ``delivered`` records are in ``target``."""
    argv = [
        str(KSHARE),
        *("dlq", "redrive", bed.group, "--to-topic", target, "--rate", "40/s"),
        *("--execute", "--yes", *kshare.connection_args()),
    ]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env(kshare.environment()),
    )
    try:
        wait_for(
            lambda: sum(_ends(bed.cluster, target).values()) >= delivered,
            timeout=40,
            interval=0.1,
            what=f"{delivered} records in {target}",
        )
        process.send_signal(stop)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def test_a_run_killed_halfway_and_run_again_sends_each_record_exactly_once(
    bed: Bed, kshare: Kshare
) -> None:
    target = _fresh_topic(bed)
    killed = _run_until(bed, kshare, target, 20, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    first = _redriven(bed.cluster, target)
    assert 20 <= sum(first.values()) < RECORDS

    rerun = kshare.subprocess(
        "dlq", "redrive", bed.group, "--to-topic", target, "--execute", "--yes", timeout=120
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"{sum(first.values())} already redriven" in rerun.stderr
    counts = _redriven(bed.cluster, target)
    assert set(counts) == _dead_letters(bed.cluster, bed.dlq)
    assert set(counts.values()) == {1}
    assert sum(_ends(bed.cluster, target).values()) == RECORDS


def test_ctrl_c_stops_between_records_says_how_far_and_a_rerun_continues(
    bed: Bed, kshare: Kshare
) -> None:
    target = _fresh_topic(bed, partitions=3)
    stopped = _run_until(bed, kshare, target, 10, signal.SIGINT)
    assert stopped.returncode == 130, stopped.stderr
    line = assert_one_error_line(stopped.stderr, "interrupted:", "run again to send the rest")
    sent = int(line.split("interrupted: ", 1)[1].split(" record", 1)[0])
    assert sum(_redriven(bed.cluster, target).values()) == sent  # exactly what it said

    rerun = kshare.run("dlq", "redrive", bed.group, "--to-topic", target, "--execute", "--yes")
    assert rerun.exit_code == 0, rerun.stderr
    assert f"{RECORDS - sent} records of {RECORDS - sent} redriven" in rerun.stderr
    assert f"{sent} already redriven" in rerun.stderr
    counts = _redriven(bed.cluster, target)
    assert set(counts.values()) == {1} and sum(counts.values()) == RECORDS


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (("no-such-group-{u}",), 5, "has no DLQ topic"),
        (("{group}", "--to-topic", "no-such-topic-{u}"), 5, "does not exist"),
        (("{group}", "--since", "2099-01-01T00:00:00"), 2, "in the future"),
        (("{group}", "--offsets", "{topic}:0"), 2, "TOPIC:PARTITION:OFFSET"),
        (("{group}", "--offsets", "{topic}:0:999999"), 5, "no such dead letter"),
        (("{group}", "--rate", "fast"), 2, "--rate"),
    ],
)
def test_bad_input_is_one_line_a_documented_code_and_nothing_sent(
    bed: Bed, kshare: Kshare, args: tuple[str, ...], code: int, fragment: str
) -> None:
    before = _ends(bed.cluster, bed.topic)
    u = uuid.uuid4().hex[:8]
    argv = [arg.format(u=u, group=bed.group, topic=bed.topic) for arg in args]
    result = kshare.run("dlq", "redrive", *argv, "--execute", "--yes")
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, fragment)
    assert _ends(bed.cluster, bed.topic) == before


def _dead_letter_headers(group: str, topic: str, partition: int, offset: int) -> list[Any]:
    """Kafka 4.4's DLQ headers for a rejected record (as ``audit --dlq-topic`` writes them)."""
    return [
        ("__dlq.errors.topic", topic.encode()),
        ("__dlq.errors.partition", str(partition).encode()),
        ("__dlq.errors.offset", str(offset).encode()),
        ("__dlq.errors.group", group.encode()),
        ("__dlq.errors.delivery.count", b"1"),
        ("__dlq.errors.message", b"Offset rejected by client."),
    ]


def test_a_dead_letter_without_copy_whose_source_is_gone_cannot_be_sent(
    bed: Bed, kshare: Kshare
) -> None:
    """Four header-only dead letters in a DLQ topic named by --dlq-topic; DeleteRecords
    removed the first two source records: two are sent, two cannot be, and a copy is sent
    even when its source is gone."""
    suffix = uuid.uuid4().hex[:8]
    source, dlq, group = f"gone-{suffix}", f"dlq.gone-{suffix}", f"gone-g-{suffix}"
    _create(bed.cluster, NewTopic(source, 1, 1), NewTopic(dlq, 1, 1))
    producer = Producer(bed.cluster.config(**{"acks": "all"}))
    for i in range(5):
        producer.produce(source, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    for i in range(4):
        producer.produce(dlq, headers=_dead_letter_headers(group, source, 0, i), partition=0)
    # A copy (audit --copy-record) of a record that will be gone too: still sendable.
    producer.produce(
        dlq, key=b"k0", value=b"copy", headers=_dead_letter_headers(group, source, 0, 0)
    )
    assert producer.flush(15) == 0
    admin = _admin(bed.cluster)
    for future in admin.delete_records([TopicPartition(source, 0, 2)]).values():
        future.result(15)

    target = _fresh_topic(bed)
    plan = kshare.run(
        "dlq", "redrive", group, "--dlq-topic", dlq, "--to-topic", target, "-o", "json"
    )
    assert plan.exit_code == 0, plan.stderr
    document = json.loads(plan.stdout)
    assert (document["send"], document["cannot"]) == (3, 2)
    assert sorted(entry["offset"] for entry in document["cannot_send"]) == [0, 1]
    assert {entry["why"] for entry in document["cannot_send"]} == {
        "no copy in the DLQ record and gone from the source log"
    }
    assert document["without_headers"] == 1  # the copy: Kafka's format has no headers

    done = kshare.run(
        "dlq", "redrive", group, "--dlq-topic", dlq, "--to-topic", target, "--execute", "--yes"
    )
    assert done.exit_code == 0, done.stderr
    assert "3 records of 3 redriven" in done.stderr
    assert "2 cannot be" in done.stderr
    values = sorted(message.value() for message in _read(bed.cluster, target))
    assert values == [b"copy", b"v2", b"v3"]


def test_on_a_terminal_execute_asks_first_and_no_sends_nothing(
    bed: Bed, kshare: Kshare, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kshare_cli.cli import dlq_redrive_cmd

    monkeypatch.setattr(dlq_redrive_cmd, "_stdin_is_terminal", lambda: True)
    target = _fresh_topic(bed)
    result = CliRunner().invoke(
        app,
        ["dlq", "redrive", bed.group, "--to-topic", target, "--execute", *kshare.connection_args()],
        input="n\n",
        env=kshare.environment(),
    )
    assert result.exit_code == 1, result.stderr
    assert f"Send {RECORDS} records to '{target}'" in result.stderr
    assert "not confirmed: nothing was sent" in result.stderr
    assert "TOTAL" not in result.stdout  # the plan went to stderr with the question
    assert sum(_ends(bed.cluster, target).values()) == 0


def test_a_dlq_topic_the_principal_may_not_read_sends_nothing_exit_6(tmp_path: Path) -> None:
    """bob may not READ the DLQ topic: one stderr line naming it, exit 6, and the source topic
    gains no record (issue 26's bad input)."""
    from kshare_cli.errors import ExitCode
    from kshare_cli.sandbox.security import ListenerSecurity
    from tests.cli.test_dlq_show import USERS
    from tests.support.sandbox import skip_on_real_cluster

    skip_on_real_cluster("needs a principal the cluster's ACLs refuse; the sandbox's deny list")
    security = ListenerSecurity(protocol="SASL_PLAINTEXT", users=USERS, mechanisms=("PLAIN",))
    deny = {"User:bob": [("TOPIC", "dlq.secret", "READ")]}
    with SandboxThread(kafka_version="4.4", security=security, deny=deny) as sandbox:
        alice = {
            "bootstrap.servers": sandbox.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": USERS["alice"],
        }
        admin = AdminClient(alice)
        for future in admin.create_topics(
            [NewTopic("dlq.secret", 1, 1), NewTopic("orders", 1, 1)]
        ).values():
            future.result(15)
        producer = Producer(alice)
        producer.produce("orders", key=b"k", value=b"v")
        headers = [
            ("__dlq.errors.topic", b"orders"),
            ("__dlq.errors.partition", b"0"),
            ("__dlq.errors.offset", b"0"),
            ("__dlq.errors.group", b"g"),
            ("__dlq.errors.delivery.count", b"1"),
            ("__dlq.errors.message", b"Offset rejected by client."),
        ]
        producer.produce("dlq.secret", key=b"k", value=b"v", headers=headers)
        assert producer.flush(15) == 0
        bob = write_properties(
            tmp_path / "bob.properties",
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                f'required username="bob" password="{USERS["bob"]}";',
            },
        )
        kshare = Kshare(sandbox.bootstrap, bob, tmp_path / "config.toml")
        result = kshare.run(
            "dlq", "redrive", "g", "--dlq-topic", "dlq.secret", "--execute", "--yes",
            "--timeout", "20s",
        )  # fmt: skip
        assert result.exit_code == ExitCode.NOT_AUTHORIZED, result.stderr
        assert_one_error_line(result.stderr, "not authorized", "dlq.secret")
        reader = Consumer({**alice, "group.id": "check"})
        low, high = reader.get_watermark_offsets(TopicPartition("orders", 0), timeout=15)
        reader.close()
        assert (low, high) == (0, 1)  # the source record only: nothing was redriven
