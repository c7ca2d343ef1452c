"""``kshare describe`` as an operator runs it: offsets, members and state of real share groups.

What the rows must say follows from what the share consumers did (``share_groups``):
the drained group accepted 10 + 4 records and then 5 + 2 more were produced, so its
end offsets are 15 and 6 and its lag 5 and 2; the live group has one member, with a
known client id, assigned both partitions. Structured output is validated against
``docs/schemas/``. Shell completion of group ids runs the installed script as bash does.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.api_keys import ALTER_SHARE_GROUP_OFFSETS, SHARE_GROUP_HEARTBEAT
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.cluster import BrokerNode
from tests.cli.conftest import (
    Kshare,
    ShareGroups,
    kafka_line,
    members_of,
    validate,
    write_properties,
)
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for


def table_rows(stdout: str, group_id: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.split()[:1] == [group_id]]


def group_of(document: Mapping[str, Any], group_id: str) -> Mapping[str, Any]:
    (group,) = [g for g in document["groups"] if g["group_id"] == group_id]
    found: Mapping[str, Any] = group
    return found


def check_start_offsets(cluster: Cluster, partitions: Mapping[int, int | None]) -> None:
    """The persisted start offset may trail what was accepted (Kafka keeps it behind)."""
    for partition, start_offset in partitions.items():
        consumed = ShareGroups.DRAINED_CONSUMED[partition]
        assert start_offset is not None and 0 <= start_offset <= consumed, partitions
    if cluster.sandbox is not None:
        # As Kafka 4.2 in the golden corpus: a group that accepted everything shows 0.
        assert set(partitions.values()) == {0}, partitions


# --------------------------------------------------------------------------- offsets (default view)


def test_offsets_table_start_end_and_lag_per_share_partition(
    kshare: Kshare, share_groups: ShareGroups, cluster: Cluster
) -> None:
    result = kshare.run("describe", share_groups.drained)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    header = result.stdout.splitlines()[0].split()
    assert header == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "END-OFFSET", "LAG"]
    rows = table_rows(result.stdout, share_groups.drained)
    by_partition = {int(row[2]): row for row in rows if row[1] == share_groups.topic}
    assert sorted(by_partition) == [0, 1]
    for partition, row in by_partition.items():
        assert int(row[4]) == ShareGroups.DRAINED_END[partition]
        assert int(row[5]) == ShareGroups.DRAINED_LAG[partition]
    check_start_offsets(cluster, {p: int(row[3]) for p, row in by_partition.items()})
    assert [share_groups.drained, "TOTAL", "7"] in rows


def test_offsets_plain_is_kafkas_layout(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("describe", share_groups.drained, "-o", "plain")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == ""  # Kafka's tool starts each group with an empty line
    assert lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    rows = table_rows(result.stdout, share_groups.drained)
    assert [(row[1], row[2], row[4]) for row in rows] == [
        (share_groups.topic, "0", "5"),
        (share_groups.topic, "1", "2"),
    ]

    verbose = kshare.run("describe", share_groups.drained, "-o", "plain", "--verbose")
    assert verbose.exit_code == 0
    assert verbose.stdout.splitlines()[1].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "LEADER-EPOCH",
        "START-OFFSET",
        "LAG",
    ]


def test_offsets_json_jsonl_csv_yaml(
    kshare: Kshare, share_groups: ShareGroups, cluster: Cluster
) -> None:
    result = kshare.run("describe", share_groups.drained, "-o", "json")
    assert result.exit_code == 0 and result.stderr == ""
    document = json.loads(result.stdout)
    validate(document, "offsets.schema.json")
    (group,) = document["groups"]
    assert group["group_id"] == share_groups.drained and group["error"] is None
    assert (group["total_lag"], group["total_lag_source"]) == (7, "broker")
    partitions = {p["partition"]: p for p in group["partitions"]}
    assert sorted(partitions) == [0, 1]
    for number, partition in partitions.items():
        assert partition["topic"] == share_groups.topic
        assert partition["end_offset"] == ShareGroups.DRAINED_END[number]
        assert partition["lag"] == ShareGroups.DRAINED_LAG[number]
        assert partition["lag_source"] == "broker"
        assert partition["error"] is None
    check_start_offsets(cluster, {n: p["start_offset"] for n, p in partitions.items()})

    jsonl = kshare.run("describe", share_groups.drained, "-o", "jsonl")
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    for line in lines:
        validate(line, "offsets-row.schema.json")
    assert [(line["partition"], line["lag"]) for line in lines] == [(0, 5), (1, 2)]

    as_csv = kshare.run("describe", share_groups.drained, "-o", "csv")
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [(row["partition"], row["end_offset"], row["lag"], row["error"]) for row in table] == [
        ("0", "15", "5", ""),
        ("1", "6", "2", ""),
    ]

    as_yaml = kshare.run("describe", share_groups.drained, "-o", "yaml")
    assert yaml.safe_load(as_yaml.stdout) == document


@pytest.fixture
def settings(
    cluster: Cluster, cluster_command_config: Path | None, tmp_path: Path
) -> ConnectionSettings:
    return resolve_settings(
        bootstrap=cluster.bootstrap,
        command_config=cluster_command_config,
        profile=None,
        environ={},
        profiles_path=tmp_path / "profiles.toml",
    )


def _join_and_leave(settings: ConnectionSettings, group: str, topic: str) -> None:
    """A member joins ``group`` on ``topic`` and leaves before fetching anything.

    The coordinator initialises the assigned share-partitions with start offset -1
    (InitializeShareGroupState, as Kafka's golden state topic shows), and nothing
    moves it: describe answers the share-partitions with an unknown start offset.
    """

    async def beat() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            coordinator = (await client.find_coordinators([group]))[group]
            assert isinstance(coordinator, BrokerNode), coordinator
            member = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
            epoch = 0
            for _ in range(50):  # until the member is assigned both partitions
                _, answer = await client.request(
                    SHARE_GROUP_HEARTBEAT,
                    {
                        "group_id": group,
                        "member_id": member,
                        "member_epoch": epoch,
                        "rack_id": None,
                        "subscribed_topic_names": [topic] if epoch == 0 else None,
                    },
                    node=coordinator.node_id,
                )
                assert int(answer.error_code) == 0, answer
                epoch = int(answer.member_epoch)
                assignment = answer.assignment
                if assignment is not None and sum(
                    len(t.partitions) for t in assignment.topic_partitions
                ):
                    break
                await asyncio.sleep(0.1)
            _, left = await client.request(
                SHARE_GROUP_HEARTBEAT,
                {
                    "group_id": group,
                    "member_id": member,
                    "member_epoch": -1,
                    "rack_id": None,
                    "subscribed_topic_names": None,
                },
                node=coordinator.node_id,
            )
            assert int(left.error_code) == 0, left

    asyncio.run(beat())


def test_end_offset_is_shown_where_the_start_offset_is_unknown(
    kshare: Kshare, share_groups: ShareGroups, settings: ConnectionSettings
) -> None:
    group = f"kshare-cli-unstarted-{share_groups.suffix}"
    _join_and_leave(settings, group, share_groups.topic)

    def partitions() -> list[dict[str, Any]]:
        result = kshare.run("describe", group, "-o", "json")
        assert result.exit_code == 0, result.stderr
        found: list[dict[str, Any]] = group_of(json.loads(result.stdout), group)["partitions"]
        return found

    wait_for(lambda: len(partitions()) == 2, timeout=30, interval=0.1, what="share-partitions")
    document = json.loads(kshare.run("describe", group, "-o", "json").stdout)
    validate(document, "offsets.schema.json")
    rows = group_of(document, group)["partitions"]
    # Kafka's "-" start offset; the log end offset is still known and shown.
    assert [(p["partition"], p["start_offset"], p["end_offset"]) for p in rows] == [
        (0, None, ShareGroups.DRAINED_END[0]),
        (1, None, ShareGroups.DRAINED_END[1]),
    ]
    table = kshare.run("describe", group)
    by_partition = {row[2]: row for row in table_rows(table.stdout, group) if row[1] != "TOTAL"}
    assert [row[3:5] for _, row in sorted(by_partition.items())] == [
        ["-", str(ShareGroups.DRAINED_END[0])],
        ["-", str(ShareGroups.DRAINED_END[1])],
    ]


def test_total_lag_sums_the_known_lags_and_says_some_are_unknown(
    kshare: Kshare, share_groups: ShareGroups, settings: ConnectionSettings
) -> None:
    group = f"kshare-cli-half-known-{share_groups.suffix}"
    _join_and_leave(settings, group, share_groups.topic)

    async def start_partition_0_at_10() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            coordinator = (await client.find_coordinators([group]))[group]
            assert isinstance(coordinator, BrokerNode), coordinator
            body = {
                "group_id": group,
                "topics": [
                    {
                        "topic_name": share_groups.topic,
                        "partitions": [{"partition_index": 0, "start_offset": 10}],
                    }
                ],
            }
            _, answer = await client.request(
                ALTER_SHARE_GROUP_OFFSETS, body, node=coordinator.node_id
            )
            assert int(answer.error_code) == 0, answer

    wait_for(
        lambda: (
            len(
                group_of(json.loads(kshare.run("describe", group, "-o", "json").stdout), group)[
                    "partitions"
                ]
            )
            == 2
        ),
        timeout=30,
        interval=0.1,
        what="share-partitions",
    )
    asyncio.run(start_partition_0_at_10())
    result = kshare.run("describe", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "offsets.schema.json")
    described = group_of(document, group)
    # Partition 1: unknown (never read). Partition 0 after the reset: on 4.2 its lag is
    # unknown (the reset's snapshot has deliveryCompleteCount -1), bounded by 15 - 10; from
    # 4.3 on (KAFKA-20034: the snapshot counts 0 delivered) the broker says 15 - 10.
    after_reset = ShareGroups.DRAINED_END[0] - 10
    source = "broker" if kafka_line(kshare, group) >= (4, 3) else "bound"
    assert [(p["partition"], p["lag"], p["lag_source"]) for p in described["partitions"]] == [
        (0, after_reset, source),
        (1, None, None),
    ]
    assert (
        described["total_lag"],
        described["total_lag_source"],
        described["total_lag_complete"],
    ) == (after_reset, source, False)
    table = kshare.run("describe", group)
    # A bound plus unknowns, or a known lag plus unknowns (a lower bound).
    total = f"≤{after_reset}+?" if source == "bound" else f"≥{after_reset}"
    assert [group, "TOTAL", total] in table_rows(table.stdout, group)
    # Kafka's layout has no total, and prints "-" for an unknown lag.
    plain = kshare.run("describe", group, "-o", "plain")
    lag_0 = "-" if source == "bound" else str(after_reset)
    assert [row[-1] for row in table_rows(plain.stdout, group)] == [lag_0, "-"]


def test_a_consumer_group_is_not_a_share_group(
    kshare: Kshare, cluster: Cluster, share_groups: ShareGroups
) -> None:
    # A consumer commits offsets without joining: a classic group of that id.
    group = f"kshare-cli-classic-{share_groups.suffix}"
    consumer = Consumer(cluster.config(**{"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(share_groups.topic, 0, 3)], asynchronous=False)
    finally:
        consumer.close()

    # Kafka's tool: "...GroupIdNotFoundException: Group X is not a share group." (exit 0);
    # kshare names it as what it is, exit 1 as kshare delete refuses it (5 is "no such group").
    for view in ("--offsets", "--members", "--state"):
        result = kshare.run("describe", group, view, "-o", "plain")
        assert (result.exit_code, result.stdout) == (1, ""), result.stderr
        assert result.stderr == f"kshare: error: group '{group}' is not a share group\n"
    document = json.loads(kshare.run("describe", group, "-o", "json").stdout)
    validate(document, "offsets.schema.json")
    (described,) = document["groups"]
    assert described["error"]["name"] == "GROUP_ID_NOT_FOUND"
    assert described["error"]["message"] == f"Group {group} is not a share group."
    # Beside a missing group, the exit code is still 1: not every failure is "not found".
    both = kshare.run("describe", group, share_groups.missing)
    assert both.exit_code == 1
    assert both.stderr.splitlines() == [
        f"kshare: error: group '{group}' is not a share group",
        f"kshare: error: share group '{share_groups.missing}': not found",
    ]


def test_console_script_describes_offsets_as_json(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    completed = kshare.subprocess("describe", share_groups.drained, "-o", "json")
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    document = json.loads(completed.stdout)
    validate(document, "offsets.schema.json")
    assert group_of(document, share_groups.drained)["total_lag"] == 7


# --------------------------------------------------------------------------- members


def test_members_client_id_host_and_assignment(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("describe", share_groups.live, "--members")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    (row,) = table_rows(result.stdout, share_groups.live)
    # GROUP CONSUMER-ID HOST CLIENT-ID RACK #PARTITIONS ASSIGNMENT SUBSCRIBED
    assert row[2].startswith("/")  # the broker's view of the client's address, as Kafka prints
    assert row[3:] == [
        share_groups.live_client_id,
        "-",
        "2",
        f"{share_groups.topic}:0,1",
        share_groups.topic,
    ]

    plain = kshare.run("describe", share_groups.live, "--members", "-o", "plain")
    assert plain.stdout.splitlines()[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
    ]
    (plain_row,) = table_rows(plain.stdout, share_groups.live)
    assert plain_row[1] == row[1]  # the same member id in both layouts
    assert plain_row[3:] == [share_groups.live_client_id, "2", f"{share_groups.topic}:0,1"]


def test_members_json_and_rows_match_the_schemas(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("describe", share_groups.live, "--members", "-o", "json")
    assert result.exit_code == 0 and result.stderr == ""
    document = json.loads(result.stdout)
    validate(document, "describe.schema.json")
    (member,) = members_of(document, share_groups.live)
    assert member["client_id"] == share_groups.live_client_id
    assert member["assignment"] == {share_groups.topic: [0, 1]}
    assert member["subscribed_topics"] == [share_groups.topic]
    assert member["partition_count"] == 2 and member["member_epoch"] >= 1

    jsonl = kshare.run("describe", share_groups.live, "--members", "-o", "jsonl")
    (row,) = [json.loads(line) for line in jsonl.stdout.splitlines()]
    validate(row, "members-row.schema.json")
    assert row["member_id"] == member["member_id"] and row["group_id"] == share_groups.live

    as_csv = kshare.run("describe", share_groups.live, "--members", "-o", "csv")
    (csv_row,) = csv.DictReader(io.StringIO(as_csv.stdout))
    assert csv_row["assignment"] == f"{share_groups.topic}:0,1"
    assert csv_row["client_id"] == share_groups.live_client_id


def test_members_of_an_empty_group_say_so_on_stderr(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    # Kafka's maybePrintEmptyGroupState: "\nShare group '...' has no active members." on
    # stderr (golden 13); -o plain reproduces it with its blank line, in both views.
    notice = f"\nShare group '{share_groups.drained}' has no active members.\n"
    result = kshare.run("describe", share_groups.drained, "--members", "-o", "plain")
    assert result.exit_code == 0
    assert result.stderr == notice
    assert result.stdout == ""
    state = kshare.run("describe", share_groups.drained, "--state", "-o", "plain")
    assert state.exit_code == 0 and state.stderr == notice
    assert state.stdout.startswith("\nGROUP ") and "Empty" in state.stdout
    # kshare's own formats: one line.
    table = kshare.run("describe", share_groups.drained, "--members")
    assert table.stderr == notice.lstrip("\n")


# --------------------------------------------------------------------------- state


def test_state_verbose_shows_coordinator_and_epochs(
    kshare: Kshare, share_groups: ShareGroups, cluster: Cluster
) -> None:
    document = json.loads(kshare.run("describe", share_groups.live, "--state", "-o", "json").stdout)
    validate(document, "describe.schema.json")
    group = group_of(document, share_groups.live)
    coordinator = group["coordinator"]
    if cluster.sandbox is not None:  # one broker: it coordinates every group
        assert f"{coordinator['host']}:{coordinator['port']}" == cluster.bootstrap

    # A cluster that acts on dead-letter queues (Kafka 4.4, share.version 2) adds the DLQ
    # columns; this group names none.
    acts_on_dlq = document["cluster"]["dead_letter_queue"]
    dlq_columns = ["DLQ", "DLQ-RECORDS", "REJECTED", "OVER-LIMIT", "NEWEST-DLQ"]
    result = kshare.run("describe", share_groups.live, "--state", "-v")
    assert result.exit_code == 0 and result.stderr == ""
    header = result.stdout.splitlines()[0]
    assert header.split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "STATE",
        "ASSIGNOR",
        "GROUP-EPOCH",
        "ASSIGNMENT-EPOCH",
        "#MEMBERS",
        *(dlq_columns if acts_on_dlq else []),
    ]
    (row,) = table_rows(result.stdout, share_groups.live)
    assert row == [
        share_groups.live,
        f"{coordinator['host']}:{coordinator['port']}",
        f"({coordinator['node_id']})",
        "Stable",
        "simple",
        str(group["group_epoch"]),
        str(group["assignment_epoch"]),
        "1",
        *(["none", "-", "-", "-", "-"] if acts_on_dlq else []),
    ]
    assert group["group_epoch"] >= 1 and group["assignment_epoch"] >= 1

    plain = kshare.run("describe", share_groups.live, "--state", "--verbose", "-o", "plain")
    lines = plain.stdout.splitlines()
    assert lines[1].split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "STATE",
        "GROUP-EPOCH",
        "ASSIGNMENT-EPOCH",
        "#MEMBERS",
    ]
    assert lines[2].split() == [
        share_groups.live,
        f"{coordinator['host']}:{coordinator['port']}",
        f"({coordinator['node_id']})",
        "Stable",
        str(group["group_epoch"]),
        str(group["assignment_epoch"]),
        "1",
    ]


def test_state_of_several_groups_one_row_each(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run(
        "describe", share_groups.live, share_groups.drained, "--state", "-o", "jsonl"
    )
    assert result.exit_code == 0
    # Kafka's tool says this for an empty group; kshare too, on stderr, not in the data.
    assert result.stderr == f"Share group '{share_groups.drained}' has no active members.\n"
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    for row in rows:
        validate(row, "state-row.schema.json")
    assert [(row["group_id"], row["state"], row["member_count"]) for row in rows] == sorted(
        [(share_groups.live, "Stable", 1), (share_groups.drained, "Empty", 0)]
    )


# --------------------------------------------------------------------------- all groups


def test_all_groups_describes_every_share_group(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("describe", "--all-groups", "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "offsets.schema.json")
    ids = [group["group_id"] for group in document["groups"]]
    assert {share_groups.drained, share_groups.live} <= set(ids)
    assert ids == sorted(ids)
    assert group_of(document, share_groups.drained)["total_lag"] == 7

    members = kshare.run("describe", "--all-groups", "--members", "-o", "json")
    assert members.exit_code == 0
    described = json.loads(members.stdout)
    validate(described, "describe.schema.json")
    (member,) = members_of(described, share_groups.live)
    assert member["client_id"] == share_groups.live_client_id
    assert members_of(described, share_groups.drained) == []


# --------------------------------------------------------------------------- shell completion


def complete(kshare: Kshare, words: str, env: Mapping[str, str | None]) -> tuple[int, str, float]:
    """Ask the installed script for bash completions of the last word of ``words``."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    started = time.monotonic()
    completed = kshare.subprocess(
        connect=False,
        env={
            "_KSHARE_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
            **env,
        },
        timeout=30,
    )
    return completed.returncode, completed.stdout, time.monotonic() - started


def test_completion_offers_group_ids_from_the_cluster(
    kshare: Kshare, share_groups: ShareGroups, tmp_path: Path
) -> None:
    env: dict[str, str | None] = {"KSHARE_BOOTSTRAP_SERVERS": kshare.bootstrap}
    if kshare.command_config is not None:
        env["KSHARE_COMMAND_CONFIG"] = str(kshare.command_config)
    prefix = f"kshare-cli-live-{share_groups.suffix[:4]}"
    code, stdout, _ = complete(kshare, f"kshare describe {prefix}", env)
    assert code == 0
    assert stdout.split() == [share_groups.live]

    # The cluster named on the command line being completed, not in the environment,
    # --command-config included (a plaintext cluster gets a file that changes nothing).
    config = kshare.command_config or write_properties(
        tmp_path / "client.properties", {"security.protocol": "PLAINTEXT"}
    )
    words = f"kshare describe -b {kshare.bootstrap} --command-config {config} kshare-cli-"
    code, stdout, _ = complete(kshare, words, {})
    assert code == 0
    assert {share_groups.live, share_groups.drained} <= set(stdout.split())


def test_completion_uses_the_profile_named_on_the_command_line(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    # The first profile becomes the current one: a dead end, so only --profile can work.
    first = kshare.run("profile", "add", "elsewhere", "-b", "127.0.0.1:1", connect=False)
    assert first.exit_code == 0, first.stderr
    add = ["profile", "add", "here", "--bootstrap-server", kshare.bootstrap]
    if kshare.command_config is not None:
        add += ["--command-config", str(kshare.command_config)]
    assert kshare.run(*add, connect=False).exit_code == 0

    code, stdout, _ = complete(kshare, "kshare describe --profile here kshare-cli-live-", {})
    assert code == 0
    assert share_groups.live in stdout.split()
    code, stdout, _ = complete(kshare, "kshare describe kshare-cli-live-", {})
    assert (code, stdout.strip()) == (0, "")


def test_completion_without_a_cluster_is_silent_and_quick(kshare: Kshare) -> None:
    code, stdout, elapsed = complete(kshare, "kshare describe kshare-", {})
    assert (code, stdout.strip()) == (0, "")  # typer ends even no completions with a newline
    assert elapsed < 10


def test_completion_with_an_unreachable_cluster_is_silent(kshare: Kshare) -> None:
    code, stdout, elapsed = complete(
        kshare, "kshare describe kshare-", {"KSHARE_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    )
    assert (code, stdout.strip()) == (0, "")  # typer ends even no completions with a newline
    assert elapsed < 10
