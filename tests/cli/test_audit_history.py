"""``kshare audit`` over a state topic that Kafka prunes, and ``audit capture`` that keeps it.

The sandbox's share coordinator runs Kafka's timers a thousand times faster
(cold snapshots every second, pruning every few), so a scenario's early
state records are gone from the topic a few seconds later, as on Kafka
after five minutes. A capture started before the scenario keeps them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.sandbox.runner import SandboxThread
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC
from tests.cli.conftest import Kshare
from tests.cli.test_audit_cmd import (
    ACCEPT,
    ACK_TYPES,
    MASTER,
    REJECT,
    Record,
    _produce,
    _set_group_configs,
    _share_consumer,
)
from tests.support.golden import wait_for
from tests.support.sandbox import Cluster, skip_on_real_cluster

COLD_MS = "share.coordinator.cold.partition.snapshot.interval.ms"
PRUNE_MS = "share.coordinator.state.topic.prune.interval.ms"
REJECTED = (2, 5, 7)


@dataclass
class Pruned:
    kshare: Kshare
    cluster: Cluster
    topic: str
    group: str
    records: list[Record]
    history: Path


def _state_log_starts(cluster: Cluster) -> dict[int, int]:
    consumer = Consumer(cluster.config(**{"group.id": "kshare-test-watermarks"}))
    try:
        metadata = consumer.list_topics(SHARE_STATE_TOPIC, timeout=10)
        partitions = metadata.topics[SHARE_STATE_TOPIC].partitions
        return {
            partition: consumer.get_watermark_offsets(
                TopicPartition(SHARE_STATE_TOPIC, partition), timeout=10
            )[0]
            for partition in partitions
        }
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def pruned(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pruned]:
    skip_on_real_cluster("the share coordinator's snapshot and prune timers are broker configs")
    from kshare_cli.pipeline.capture import CaptureManifest, capture_query, start_manifest

    settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=100,
        share_min_heartbeat_interval_ms=100,
        share_min_record_lock_duration_ms=1_000,
    )
    config = {COLD_MS: "1000", PRUNE_MS: "4000"}
    with SandboxThread(settings=settings, config=config) as sandbox:
        cluster = Cluster(sandbox.bootstrap, {}, sandbox)
        suffix = uuid.uuid4().hex[:8]
        topic, group = f"hist-{suffix}", f"hist-g-{suffix}"
        admin = AdminClient(cluster.config())
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(30)
        _set_group_configs(admin, group, {"share.auto.offset.reset": "earliest"})
        home = tmp_path_factory.mktemp("history")
        kshare = Kshare(cluster.bootstrap, None, home / "config.toml")
        history = home / "capture"
        # The capture runs from before the first state record, as an operator would run it.
        manifest = CaptureManifest(SHARE_STATE_TOPIC, (group,))
        start_manifest(history, manifest)
        query = capture_query(
            spark,
            {"bootstrap.servers": cluster.bootstrap},
            history,
            manifest,
            trigger_seconds=0.2,
        )
        consumer: ShareConsumer | None = None
        try:
            records = _produce(cluster, topic, range(10))
            consumer = _share_consumer(cluster, group, topic, f"hist-{suffix}")
            by_value = {record.value: record for record in records}
            deadline = time.monotonic() + 60
            while any(not record.actions for record in records):
                assert time.monotonic() < deadline, records
                messages = [m for m in consumer.poll(0.1) if m.error() is None]
                for message in messages:
                    record = by_value[message.value() or b""]
                    action = REJECT if record.index in REJECTED else ACCEPT
                    record.actions.append((message.delivery_count() or 0, action))
                    consumer.acknowledge(message, ACK_TYPES[action])
                if messages:
                    consumer.commit_sync(10)
            consumer.close()
            consumer = None
            # Idle now: cold snapshots restate the state, and pruning moves the log start.
            wait_for(
                lambda: any(_state_log_starts(cluster).values()),
                timeout=30,
                interval=0.2,
                what="the state topic pruned",
            )
        finally:
            if consumer is not None:
                consumer.close()
            query.stop()
        # The command's bounded run catches up with what the stream had not read yet.
        caught_up = kshare.run(
            "audit",
            "capture",
            "--group",
            group,
            "--to",
            str(history),
            "--until-caught-up",
            "--master",
            MASTER,
        )
        assert caught_up.exit_code == 0, caught_up.stderr
        yield Pruned(kshare, cluster, topic, group, records, history)


def _json(pruned: Pruned, *args: str) -> tuple[dict[str, Any], str]:
    result = pruned.kshare.run(
        "audit", *args, "--group", pruned.group, "-o", "json", "--master", MASTER
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    document: dict[str, Any] = json.loads(result.stdout)
    return document, result.stderr


def test_archived_after_pruning_says_history_is_missing_and_dates_nothing_wrongly(
    pruned: Pruned,
) -> None:
    document, stderr = _json(pruned, "archived")

    (history,) = document["history"]
    assert (history["topic"], history["partition"]) == (pruned.topic, 0)
    assert history["history_complete"] is False and history["history_missing"] == "pruned"
    assert history["history_from"] is not None
    # Every archiving happened before the earliest state left: its time is unknown.
    assert sorted(row["offset"] for row in document["archived"]) == list(REJECTED)
    assert {row["archived_at"] for row in document["archived"]} == {None}
    lines = stderr.strip().splitlines()
    assert [line for line in lines if "history incomplete" in line] == [
        line for line in lines if f"{pruned.topic}-0 from {history['history_from']}" in line
    ]
    assert any("history incomplete for 1 share-partitions" in line for line in lines)


def test_history_of_another_group_is_refused_before_spark(pruned: Pruned) -> None:
    result = pruned.kshare.run(
        "audit", "archived", "--group", "someone-else", "--history", str(pruned.history)
    )

    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"kshare: error: --history {pruned.history}: it captures {pruned.group}, "
        "not group 'someone-else'"
    ]
