"""``kshare health`` against the cluster: statuses, reasons and Nagios exit codes.

The session's ``live`` group has a member (OK), ``drained`` lost its consumer with
lag left (STOP). A module group whose consumer rejected a record and stayed has
an archived record in its window (WARN with ``--archived-above 0``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from tests.cli.conftest import Kshare, ShareGroups
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def _health(kshare: Kshare, *args: str) -> tuple[int, dict[str, Any], str]:
    result = kshare.run("health", *args, "-o", "json")
    return result.exit_code, json.loads(result.stdout), result.stderr


def _group(document: dict[str, Any], group_id: str) -> dict[str, Any]:
    (group,) = [each for each in document["groups"] if each["group_id"] == group_id]
    return group


@pytest.fixture(scope="module")
def rejecting(cluster: Cluster, kshare_module: Kshare) -> Iterator[tuple[str, str]]:
    """A group whose consumer released offset 0, rejected offset 2 and is still a member."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"kshare-health-{suffix}", f"kshare-health-rejecting-{suffix}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[earliest])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    producer = Producer(cluster.config(**{"linger.ms": 100}))
    for index in range(4):
        producer.produce(topic, value=f"r{index}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe([topic])
    try:
        done: set[int] = set()
        action = {0: AcknowledgeType.RELEASE, 2: AcknowledgeType.REJECT}

        def all_acknowledged() -> bool:
            records = [each for each in consumer.poll(0.1) if each.error() is None]
            for record in records:
                offset = record.offset() or 0
                consumer.acknowledge(record, action.get(offset, AcknowledgeType.ACCEPT))
                done.add(offset)
            if records:
                assert not any(consumer.commit_sync(10).values())
            return done >= {0, 1, 2, 3}

        wait_for(all_acknowledged, timeout=60, interval=0, what="the records acknowledged")

        def archived_written() -> bool:
            result = kshare_module.run("inflight", group, "-o", "json")
            document = json.loads(result.stdout) if result.exit_code == 0 else {}
            windows = [each.get("window") for each in document.get("partitions", [])]
            return any(window and window.get("archived") == 1 for window in windows)

        wait_for(archived_written, timeout=30, what="the rejected record in the window")
        yield topic, group
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def kshare_module(
    cluster: Cluster, cluster_command_config: Path | None, tmp_path_factory: pytest.TempPathFactory
) -> Kshare:
    profiles = tmp_path_factory.mktemp("health-profiles") / "config.toml"
    return Kshare(cluster.bootstrap, cluster_command_config, profiles)


def test_a_group_with_a_member_is_ok_exit_0(kshare: Kshare, share_groups: ShareGroups) -> None:
    code, document, stderr = _health(kshare, share_groups.live)
    assert code == 0, stderr
    group = _group(document, share_groups.live)
    assert (document["status"], group["status"], group["members"]) == ("OK", "OK", 1)
    assert [each["status"] for each in group["partitions"]] == ["OK", "OK"]
    assert "stalls not evaluated: one sample" in stderr


def test_a_stopped_consumer_with_lag_is_stop_exit_2(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    code, document, _ = _health(kshare, share_groups.drained)
    assert code == 2
    group = _group(document, share_groups.drained)
    lag = sum(ShareGroups.DRAINED_LAG.values())
    assert (group["status"], group["members"], group["lag"]) == ("STOP", 0, lag)
    assert group["reasons"] == [f"no members while the lag is {lag}: nothing is being delivered"]
    table = kshare.run("health", share_groups.drained, share_groups.live)
    assert table.exit_code == 2
    rows = [line.split() for line in table.stdout.splitlines() if line.startswith("kshare-cli-")]
    assert rows[0][:3] == [share_groups.drained, "-", "-"] and rows[0][3] == "STOP"
    assert [row[3] for row in rows if row[0] == share_groups.live] == ["OK", "OK", "OK"]


def test_archived_records_warn_above_the_threshold_exit_1(
    kshare: Kshare, rejecting: tuple[str, str]
) -> None:
    topic, group_id = rejecting
    code, document, stderr = _health(kshare, group_id)
    assert code == 0, stderr  # the archived rule is off by default
    code, document, stderr = _health(kshare, group_id, "--archived-above", "0")
    assert code == 1, stderr
    group = _group(document, group_id)
    (partition,) = group["partitions"]
    assert (group["status"], partition["status"], partition["topic"]) == ("WARN", "WARN", topic)
    assert partition["archived"] == 1
    assert partition["reasons"][0].startswith("1 archived records")
    assert group["reasons"] == ["1 share-partition WARN"]
    rows = kshare.run("health", group_id, "--archived-above", "0", "-o", "csv").stdout
    assert rows.splitlines()[0].startswith("group,topic,partition,status,reason")
    assert f"{group_id},{topic},0,WARN," in rows


def test_a_missing_group_is_5_with_an_err_row(kshare: Kshare, share_groups: ShareGroups) -> None:
    code, document, stderr = _health(kshare, share_groups.missing, share_groups.live)
    assert code == 5
    missing = _group(document, share_groups.missing)
    assert (missing["status"], missing["not_found"]) == ("ERR", True)
    assert _group(document, share_groups.live)["status"] == "OK"
    assert f"share group '{share_groups.missing}' does not exist" in stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "name at least one group"),
        (["g", "--all-groups"], "not both"),
        (["g", "--lag-above", "-1"], "--lag-above must be 0 or more"),
        (["g", "--stall-after", "0"], "--stall-after must be above 0"),
        (["g", "-o", "plain"], "no health view"),
    ],
)
def test_usage_errors_are_2_with_nothing_on_stdout(
    kshare: Kshare, args: list[str], fragment: str
) -> None:
    result = kshare.run("health", *args, connect=False)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert fragment in result.stderr


def test_help_loads_nothing_heavy() -> None:
    code = (
        "import sys\nsys.argv = ['kshare', 'health', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'kio', 'rich')"
        " or m.startswith(('kshare_cli.services', 'kshare_cli.admin', 'kshare_cli.render'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_two_samples_stall_after_apart_show_the_stalled_share_partitions(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    code, document, stderr = _health(kshare, share_groups.drained, "--stall-after", "0.3")
    assert code == 2
    group = _group(document, share_groups.drained)
    assert group["status"] == "STOP"  # above STALL: nobody is there to unstick it
    assert [each["status"] for each in group["partitions"]] == ["STALL", "STALL"]
    first = group["partitions"][0]["reasons"][0]
    assert first.startswith(f"start offset {group['partitions'][0]['start_offset']} has not moved")
    assert "2 share-partitions STALL" in group["reasons"]
    assert "stalls not evaluated" not in stderr


def test_all_groups_evaluates_every_share_group(kshare: Kshare, share_groups: ShareGroups) -> None:
    code, document, _ = _health(kshare, "--all-groups")
    assert code == 2  # drained is STOP, whatever else the cluster holds
    assert document["status"] in ("STOP", "ERR")
    assert _group(document, share_groups.drained)["status"] == "STOP"
    assert _group(document, share_groups.live)["status"] == "OK"
    rows = [
        json.loads(line)
        for line in kshare.run("health", "--all-groups", "-o", "jsonl").stdout.splitlines()
    ]
    assert {"group": share_groups.drained, "topic": None, "status": "STOP"}.items() <= next(
        row for row in rows if row["group"] == share_groups.drained
    ).items()
