"""The broker's dead-letter queue, visible: ``describe --state``, ``health --dlq-rate-above``
and the exporter on the sandbox's Kafka 4.4 profile (issue 25).

Golden scenario D is replayed live (``tests/sandbox/test_golden_scenario_d.py``: the
recorded client actions on ``golden-dg``), so the broker itself writes the three dead
letters the recording holds: p0 o4 and p1 o3 rejected, p1 o5 over the delivery limit.
Each front end must count each of them once, with its reason, from the group's DLQ topic
(``errors.deadletterqueue.topic.name``) by its ``__dlq.errors.group`` header.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.wire.client import KafkaClient
from tests.cli.conftest import KSHARE, Kshare, process_env, validate
from tests.sandbox.test_golden_scenario_d import _consume, _produce, _setup
from tests.support.exporter_process import Exporter, samples, start_exporter
from tests.support.sandbox import Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import alter_share_group_offsets
from tests.support.waiting import wait_for

GROUP = "golden-dg"
DLQ = "dlq.golden-dg"
#: A group with a DLQ topic of its own that the health test floods.
BURST = "dlq-burst"
#: A group without a DLQ.
PLAIN = "no-dlq"


def _make_group(bootstrap: str, group: str, topic: str) -> None:
    settings = resolve_settings(bootstrap=bootstrap, command_config=None, profile=None, environ={})

    async def make() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            await alter_share_group_offsets(client, group, {topic: [0]})

    asyncio.run(make())


def _set_dlq(bootstrap: str, group: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("errors.deadletterqueue.topic.name", topic)
    entry.incremental_operation = AlterConfigOpType.SET
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)


@pytest.fixture(scope="module")
def scenario_d() -> Iterator[Cluster]:
    """Scenario D consumed on golden-dg (the broker dead-letters three records), and two
    more groups: dlq-burst with an empty DLQ topic of its own, no-dlq with none."""
    skip_on_real_cluster("scenario D's DLQ counts need a fresh cluster holding golden-d")
    with SandboxThread(kafka_version="4.4") as sandbox:
        cluster = Cluster(sandbox.bootstrap, {}, sandbox)
        _setup(cluster, {GROUP: False})
        _produce(cluster)
        _consume(cluster, GROUP)
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        topics = [
            NewTopic("burst-src", 1, 1),
            NewTopic(f"dlq.{BURST}", 2, 1, config={"errors.deadletterqueue.group.enable": "true"}),
        ]
        for future in admin.create_topics(topics).values():
            future.result(15)
        for group in (BURST, PLAIN):
            _make_group(sandbox.bootstrap, group, "burst-src")
        _set_dlq(sandbox.bootstrap, BURST, f"dlq.{BURST}")
        yield cluster


@pytest.fixture
def kshare_d(scenario_d: Cluster, tmp_path: Path) -> Kshare:
    return Kshare(scenario_d.bootstrap, None, tmp_path / "config.toml")


def test_describe_state_counts_the_dead_letters_by_reason(kshare_d: Kshare) -> None:
    before_ms = int(time.time() * 1000)
    result = kshare_d.run("describe", GROUP, PLAIN, "--state", "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "describe.schema.json")
    queues = {group["group_id"]: group["dead_letter_queue"] for group in document["groups"]}
    golden = queues[GROUP]
    assert {key: golden[key] for key in golden if not key.startswith("newest")} == {
        "topic": DLQ,
        "active": True,
        "records": 3,
        "rejected": 2,
        "delivery_limit": 1,
        "other": 0,
        "complete": True,
        "note": None,
    }
    # Kafka stamps a dead letter with its write time: during the fixture, before now.
    assert golden["newest_timestamp_ms"] <= before_ms
    assert before_ms - golden["newest_timestamp_ms"] < 600_000
    assert 0 <= golden["newest_age_seconds"] < 600
    assert queues[PLAIN]["topic"] is None
    assert queues[PLAIN]["records"] is None

    table = kshare_d.run("describe", GROUP, PLAIN, "--state")
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    header = next(line for line in lines if "GROUP" in line)
    for column in ("DLQ", "DLQ-RECORDS", "REJECTED", "OVER-LIMIT", "NEWEST-DLQ"):
        assert column in header
    golden_row = next(line for line in lines if line.lstrip("│ ").startswith(GROUP)).split()
    assert DLQ in golden_row
    at = golden_row.index(DLQ)
    assert [cell for cell in golden_row[at + 1 :] if cell != "│"][:3] == ["3", "2", "1"]
    plain_row = next(line for line in lines if line.lstrip("│ ").startswith(PLAIN))
    assert "none" in plain_row.split()


@pytest.fixture
def exporter_d(kshare_d: Kshare) -> Iterator[Exporter]:
    argv = [
        str(KSHARE),
        "exporter",
        "--listen",
        "127.0.0.1:0",
        "--group",
        GROUP,
        "--group",
        PLAIN,
        "--interval",
        "500ms",
        "--cluster-name",
        "test",
        *kshare_d.connection_args(),
    ]
    exporter = start_exporter(argv, process_env(kshare_d.environment()))
    try:
        yield exporter
    finally:
        exporter.kill()


def test_the_exporter_reports_each_dead_letter_once_with_its_reason(
    exporter_d: Exporter,
) -> None:
    """Issue 25's acceptance, the exporter's part: scenario D's three dead letters."""

    def dlq_series() -> dict[str, float] | None:
        status, body = exporter_d.get("/metrics")
        if status != 200:
            return None
        series = {
            dict(labels)["reason"]: value
            for (name, labels), value in samples(body).items()
            if name == "kshare_share_group_dlq_records_total" and dict(labels)["group"] == GROUP
        }
        return series or None

    series = wait_for(dlq_series, timeout=30, what="the DLQ series")
    assert series == {"rejected": 2.0, "delivery_limit": 1.0, "other": 0.0}
    # Later refreshes read only what is new: nothing, so nothing is counted twice.
    wait_for(
        lambda: exporter_d.get("/healthz")[1].startswith("ok: refreshed 0."),
        timeout=10,
        what="a later refresh",
    )
    status, body = exporter_d.get("/metrics")
    scraped = samples(body)
    assert {
        dict(labels)["reason"]: value
        for (name, labels), value in scraped.items()
        if name == "kshare_share_group_dlq_records_total" and dict(labels)["group"] == GROUP
    } == series
    newest = scraped[
        (
            "kshare_share_group_dlq_last_record_timestamp_seconds",
            (("cluster_name", "test"), ("group", GROUP)),
        )
    ]
    assert time.time() - 600 < newest <= time.time()
    # A group without a DLQ has no DLQ series (none rather than 0).
    assert not any(
        name.startswith("kshare_share_group_dlq") and dict(labels)["group"] == PLAIN
        for name, labels in scraped
    )


def _flood(bootstrap: str, stop: threading.Event, per_second: int) -> int:
    """Dead letters of dlq-burst, as the broker writes them (headers only), until stopped."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent = 0
    while not stop.is_set():
        headers: list[tuple[str, str | bytes | None]] = [
            ("__dlq.errors.topic", b"burst-src"),
            ("__dlq.errors.partition", b"0"),
            ("__dlq.errors.offset", str(sent).encode()),
            ("__dlq.errors.group", BURST.encode()),
            ("__dlq.errors.delivery.count", b"1"),
            ("__dlq.errors.message", b"Offset rejected by client."),
        ]
        producer.produce(f"dlq.{BURST}", value=None, partition=sent % 2, headers=headers)
        producer.poll(0)
        sent += 1
        stop.wait(1 / per_second)
    assert producer.flush(15) == 0
    return sent


def test_health_warns_when_the_dlq_grows_faster_than_dlq_rate_above(kshare_d: Kshare) -> None:
    # One sample: nothing to compare, said on stderr, no status from it.
    one = kshare_d.run("health", BURST, "--dlq-rate-above", "1", "-o", "json")
    assert one.exit_code == 0, one.stdout + one.stderr
    assert f"dead-letter rate not evaluated: one sample of dlq.{BURST}" in one.stderr

    stop = threading.Event()
    sent: list[int] = []
    flooding = threading.Thread(
        target=lambda: sent.append(_flood(kshare_d.bootstrap, stop, 20)), daemon=True
    )
    flooding.start()
    try:
        result = kshare_d.subprocess(
            "health", BURST, "--dlq-rate-above", "2", "--stall-after", "3s", "-o", "json"
        )
    finally:
        stop.set()
        flooding.join(20)
    assert result.returncode == 1, result.stdout + result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    assert group["status"] == "WARN"
    (reason,) = [each for each in group["reasons"] if "dead-letter queue" in each]
    assert reason.startswith(f"the dead-letter queue dlq.{BURST} grew by ")
    assert "rejected), above --dlq-rate-above 2/s" in reason

    # The same without the flood: the DLQ does not grow, OK.
    calm = kshare_d.subprocess(
        "health", BURST, "--dlq-rate-above", "2", "--stall-after", "1s", "-o", "json"
    )
    assert calm.returncode == 0, calm.stdout + calm.stderr


def test_share_version_1_says_the_dlq_is_ignored(tmp_path: Path) -> None:
    skip_on_real_cluster("it starts a sandbox in Kafka 4.4's profile with share.version 1")
    with SandboxThread(kafka_version="4.4", share_version=1) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        for future in admin.create_topics([NewTopic("t", 1, 1)]).values():
            future.result(15)
        _make_group(sandbox.bootstrap, "g", "t")
        _set_dlq(sandbox.bootstrap, "g", "dlq.g")
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
        result = kshare.run("describe", "g", "--state", "-o", "json")
        table = kshare.run("describe", "g", "--state")
        health = kshare.run("health", "g", "--dlq-rate-above", "1")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "describe.schema.json")
    (group,) = document["groups"]
    queue_ = group["dead_letter_queue"]
    assert queue_["topic"] == "dlq.g"
    assert queue_["active"] is False
    assert queue_["records"] is None
    said = (
        "this cluster's share.version is 1: the dead-letter queue needs 2 "
        "(`kafka-features.sh upgrade --feature share.version=2`)"
    )
    assert queue_["note"] == f"{said}; nothing is written to dlq.g"
    assert table.exit_code == 0, table.stderr
    assert "dlq.g (ignored)" in table.stdout
    assert f"kshare: note: share group 'g': dead-letter queue: {said}" in table.stderr
    assert health.exit_code == 0, health.stderr
    assert f"dead-letter rate not evaluated: {said}" in health.stderr
