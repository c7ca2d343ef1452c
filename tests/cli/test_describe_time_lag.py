"""``kshare describe --time-lag``: the age of the oldest record a share group has not acknowledged.

The module topic's records carry known CreateTime timestamps in the past
(partition 0: 120 s, 100 s, ... 20 s before the module started; partition 1:
90 s, 80 s, 70 s), so the age the command reports is known within the test's own
running time. Groups with chosen start offsets are made, empty, with
``reset-offsets --allow-new-group --execute``; none of them consumes, so what
``describe`` shows is what the start offset points at. A group whose start
offsets are at the log end (fully consumed, lag 0) has no age.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cli.conftest import Kshare, validate
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster

#: Partition → each record's age in seconds when produced (oldest first).
AGES = {0: (120, 100, 80, 60, 40, 20), 1: (90, 80, 70)}
#: The test's own running time may add to an age, never subtract; this much slack.
SLACK_S = 10.0


@pytest.fixture(scope="module")
def aged_topic(cluster: Cluster) -> tuple[str, float]:
    """The topic and the wall-clock second its record ages count back from."""
    name = f"tl-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(name, 2, 1, config=KEEP_OLD_RECORDS)]).values():
        future.result(30)
    produced_at = time.time()
    producer = Producer(cluster.config())
    for partition, ages in AGES.items():
        for age in ages:
            producer.produce(
                name,
                value=f"aged-{age}".encode(),
                partition=partition,
                timestamp=int((produced_at - age) * 1000),
            )
    assert producer.flush(30) == 0
    return name, produced_at


def make_group(kshare: Kshare, tmp_path: Path, topic: str, offsets: Mapping[int, int]) -> str:
    group = f"tl-g-{uuid.uuid4().hex[:6]}"
    plan = tmp_path / f"{group}.csv"
    plan.write_text("".join(f"{topic},{p},{o}\n" for p, o in offsets.items()))
    result = kshare.run(
        "reset-offsets",
        group,
        "--from-file",
        str(plan),
        "--execute",
        "--allow-new-group",
        "--rollback-file",
        str(tmp_path / f"{group}-rollback.csv"),
    )
    assert result.exit_code == 0, result.stderr
    return group


def partitions_of(stdout: str) -> dict[int, Mapping[str, Any]]:
    document = json.loads(stdout)
    validate(document, "offsets.schema.json")
    (group,) = document["groups"]
    return {p["partition"]: p for p in group["partitions"]}


def assert_age(seconds: float | None, expected: int, produced_at: float) -> None:
    assert seconds is not None
    elapsed = time.time() - produced_at
    assert expected - 1 <= seconds <= expected + elapsed + SLACK_S, (seconds, expected)


def test_unconsumed_records_give_the_age_of_the_record_at_the_start_offset(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, produced_at = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 0, 1: 2})
    result = kshare.run("describe", group, "--time-lag", "-o", "json")
    assert result.exit_code == 0, result.stderr
    partitions = partitions_of(result.stdout)
    assert_age(partitions[0]["lag_seconds"], 120, produced_at)
    assert_age(partitions[1]["lag_seconds"], 70, produced_at)


def test_a_start_offset_inside_the_log_reads_that_record_not_the_first(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, produced_at = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 3})
    result = kshare.run("describe", group, "--time-lag", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert_age(partitions_of(result.stdout)[0]["lag_seconds"], 60, produced_at)


def test_a_fully_consumed_group_has_no_age(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, _ = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: len(AGES[0]), 1: len(AGES[1])})
    result = kshare.run("describe", group, "--time-lag", "-o", "json")
    assert result.exit_code == 0, result.stderr
    partitions = partitions_of(result.stdout)
    assert [partitions[p]["lag"] for p in (0, 1)] == [0, 0]
    assert [partitions[p]["lag_seconds"] for p in (0, 1)] == [None, None]


def test_the_table_shows_lag_age_and_plain_stays_kafkas(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, _ = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 0, 1: len(AGES[1])})
    result = kshare.run("describe", group, "--time-lag")
    assert result.exit_code == 0, result.stderr
    header = result.stdout.splitlines()[0].split()
    assert header == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "END-OFFSET", "LAG", "LAG-AGE"]
    rows = {
        int(row[2]): row
        for line in result.stdout.splitlines()
        if (row := line.split())[:2] == [group, topic]
    }
    assert rows[0][6].startswith("2m"), rows[0]  # 120 s and the test's few seconds
    assert rows[1][6] == "-", rows[1]
    plain = kshare.run("describe", group, "--time-lag", "-o", "plain")
    assert plain.stdout == kshare.run("describe", group, "-o", "plain").stdout
    assert "LAG-AGE" not in plain.stdout


def test_without_the_option_json_has_no_lag_seconds(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, _ = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 0})
    result = kshare.run("describe", group, "-o", "json")
    assert "lag_seconds" not in partitions_of(result.stdout)[0]


def test_time_lag_with_members_is_a_usage_error(kshare: Kshare) -> None:
    result = kshare.run("describe", "any-group", "--members", "--time-lag")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--time-lag needs the offsets view" in result.stderr
