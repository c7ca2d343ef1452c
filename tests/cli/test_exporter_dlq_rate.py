"""The exporter's status on a DLQ flood: ``--dlq-rate-above``, health's rule (issue 26).

A group with a broker DLQ (Kafka 4.4, ``share.version`` 2) is watched by the exporter
with ``--dlq-rate-above 0``: while nothing is dead-lettered its status is not WARN; a
consumer rejecting every record floods the DLQ and ``kshare_share_group_status`` turns
WARN for the group; once the flood stops and ``--stall-after`` has passed, WARN ends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

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

from tests.cli.conftest import KSHARE, process_env
from tests.support.exporter_process import Exporter, samples, start_exporter
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

GROUP = "flooded"
SOURCE = "flood-src"
DLQ = "dlq.flooded"
RECORDS = 20


def _status(exporter: Exporter) -> str | None:
    status, body = exporter.get("/metrics")
    if status != 200:
        return None
    for (name, labels), value in samples(body).items():
        found = dict(labels)
        if name == "kshare_share_group_status" and found.get("group") == GROUP and value == 1:
            return found["status"]
    return None


@pytest.fixture
def flood_bed(tmp_path: Path) -> Iterator[tuple[str, Exporter]]:
    skip_on_real_cluster("floods a DLQ on a fresh 4.4 sandbox")
    with SandboxThread(kafka_version="4.4") as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        topics = [
            NewTopic(SOURCE, 1, 1),
            NewTopic(DLQ, 1, 1, config={"errors.deadletterqueue.group.enable": "true"}),
        ]
        for future in admin.create_topics(topics).values():
            future.result(15)
        entries = [
            ConfigEntry("share.auto.offset.reset", "earliest"),
            ConfigEntry("errors.deadletterqueue.topic.name", DLQ),
        ]
        for entry in entries:
            entry.incremental_operation = AlterConfigOpType.SET
        resource = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=entries)
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(15)
        argv = [
            str(KSHARE),
            "exporter",
            "--listen",
            "127.0.0.1:0",
            "--group",
            GROUP,
            "--interval",
            "500ms",
            "--stall-after",
            "2s",
            "--dlq-rate-above",
            "0",
            "-b",
            sandbox.bootstrap,
        ]
        exporter = start_exporter(
            argv, process_env({"KSHARE_CONFIG": str(tmp_path / "config.toml")})
        )
        try:
            yield sandbox.bootstrap, exporter
        finally:
            exporter.kill()


def _reject_everything(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(SOURCE, value=f"poison-{i}".encode())
    assert producer.flush(15) == 0
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([SOURCE])
    rejected = 0
    deadline = time.monotonic() + 30
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


def test_a_dlq_flood_turns_the_group_warn_until_it_stops(
    flood_bed: tuple[str, Exporter],
) -> None:
    bootstrap, exporter = flood_bed
    # The group exists once its first consumer joined; before the flood its DLQ is still.
    before = wait_for(lambda: _status(exporter), timeout=30, what="the group's status")
    assert before != "WARN"
    _reject_everything(bootstrap)
    wait_for(lambda: _status(exporter) == "WARN" or None, timeout=30, what="WARN on the DLQ flood")
    # No more dead letters: once --stall-after has passed, the rate is 0 again.
    wait_for(
        lambda: _status(exporter) not in (None, "WARN") or None,
        timeout=30,
        what="the WARN ending after the flood",
    )
