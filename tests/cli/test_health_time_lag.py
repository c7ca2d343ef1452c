"""``kshare health --time-lag``: the oldest unacknowledged record's age beside each status.

The records and groups are ``test_describe_time_lag``'s: CreateTime timestamps
known in the past, groups placed with ``reset-offsets`` and never consumed (so
without members and with lag: STOP, exit 2, whatever the age says).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.conftest import Kshare, validate
from tests.cli.test_describe_time_lag import AGES, aged_topic, assert_age, make_group

__all__ = ["aged_topic"]  # the module fixture, shared


def _partitions(group: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in group["partitions"]}


def test_json_carries_each_age_and_the_groups_oldest(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, produced_at = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 1, 1: len(AGES[1])})
    result = kshare.run("health", group, "--time-lag", "-o", "json")
    assert result.exit_code == 2, result.stderr  # no members while records wait: STOP
    document = json.loads(result.stdout)
    validate(document, "health.schema.json")
    (found,) = document["groups"]
    assert found["status"] == "STOP"
    partitions = _partitions(found)
    assert_age(partitions[0]["lag_seconds"], 100, produced_at)  # offset 1: 100 s old
    assert partitions[1]["lag_seconds"] is None  # lag 0
    assert found["lag_seconds"] == partitions[0]["lag_seconds"]


def test_jsonl_rows_and_the_table_carry_it_too(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, produced_at = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 0})
    rows = [
        json.loads(line)
        for line in kshare.run("health", group, "--time-lag", "-o", "jsonl").stdout.splitlines()
    ]
    for row in rows:
        validate(row, "health-row.schema.json")
    (partition_row,) = [row for row in rows if row["partition"] == 0]
    assert_age(partition_row["lag_seconds"], 120, produced_at)
    table = kshare.run("health", group, "--time-lag").stdout
    assert table.splitlines()[0].split()[:6] == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "STATUS",
        "LAG",
        "LAG-AGE",
    ]
    (line,) = [line.split() for line in table.splitlines() if line.split()[1:3] == [topic, "0"]]
    assert line[5].startswith("2m"), line


def test_without_the_option_there_is_no_age(
    kshare: Kshare, tmp_path: Path, aged_topic: tuple[str, float]
) -> None:
    topic, _ = aged_topic
    group = make_group(kshare, tmp_path, topic, {0: 0})
    result = kshare.run("health", group, "-o", "json")
    (found,) = json.loads(result.stdout)["groups"]
    assert "lag_seconds" not in found
    assert "lag_seconds" not in found["partitions"][0]
    assert "LAG-AGE" not in kshare.run("health", group).stdout
