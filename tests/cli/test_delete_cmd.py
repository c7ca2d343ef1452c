"""``kshare delete-offsets`` and ``kshare delete`` as an operator runs them, against a broker.

Every assertion is about what the operator sees and what the cluster then holds:
after delete-offsets, ``kshare describe`` shows no offsets for the topic; after
delete, ``kshare list`` no longer shows the group and describe exits 5; a dry run
(the default) changes nothing; a group with members is refused, named, and still
there. Groups are made empty-with-state by AlterShareGroupOffsets (cheap); the
session's ``live`` group (a ShareConsumer still in it) is the non-empty one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kshare_cli.cli import delete_cmd
from kshare_cli.cli.app import app
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.wire.client import KafkaClient
from tests.cli.conftest import Kshare, ShareGroups, assert_one_error_line, validate
from tests.support import golden_admin as golden
from tests.support.records import create_topics
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import alter_share_group_offsets

DRY_RUN_NOTICE = delete_cmd.DRY_RUN_NOTICE


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


def _empty_group_with_offsets(
    settings: ConnectionSettings, group: str, topic: str, partitions: int = 2
) -> None:
    """AlterShareGroupOffsets: the broker creates the (empty) share group with state."""

    async def alter() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            await alter_share_group_offsets(client, group, {topic: range(partitions)})

    asyncio.run(alter())


def _offsets(kshare: Kshare, group: str) -> dict[str, list[int]]:
    """Topic -> partitions with offset information, as ``kshare describe -o json`` shows them."""
    result = kshare.run("describe", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (document,) = json.loads(result.stdout)["groups"]
    found: dict[str, list[int]] = {}
    for partition in document["partitions"]:
        found.setdefault(partition["topic"], []).append(partition["partition"])
    return found


def _listed(kshare: Kshare) -> list[str]:
    result = kshare.run("list", "-o", "json")
    assert result.exit_code == 0, result.stderr
    return [group["group_id"] for group in json.loads(result.stdout)["groups"]]


@pytest.fixture
def names(unique: str) -> tuple[str, str]:
    """A topic and a group id as long as the golden run's (``golden-a``, ``golden-g``)."""
    return f"ta{unique[:6]}", f"gg{unique[:6]}"


# --------------------------------------------------------------------------- the golden runs


def test_delete_offsets_then_delete_reproduce_kafkas_runs_20_to_23(
    kshare: Kshare, cluster: Cluster, settings: ConnectionSettings, names: tuple[str, str]
) -> None:
    topic, group = names
    create_topics(cluster, topic, partitions=2)
    _empty_group_with_offsets(settings, group, topic)

    def as_kafka(run: str) -> str:
        recorded = golden.tool_output(run).decode()
        return recorded.replace("golden-a", topic).replace("golden-g", group)

    # The default is a dry run: it says what it would do and changes nothing.
    dry = kshare.run("delete-offsets", group, "--topic", topic)
    assert dry.exit_code == 0, dry.stderr
    assert dry.stdout.splitlines()[2].split() == [group, topic, "0,1", "would", "delete"]
    assert dry.stderr == DRY_RUN_NOTICE + "\n"
    assert _offsets(kshare, group) == {topic: [0, 1]}

    done = kshare.run("delete-offsets", group, "--topic", topic, "--execute", "-o", "plain")
    assert (done.exit_code, done.stderr) == (0, "")
    assert done.stdout == as_kafka("20")
    assert _offsets(kshare, group) == {}
    assert kshare.run("describe", group, "-o", "plain").stdout == as_kafka("21")

    dry_delete = kshare.run("delete", group, "-o", "plain")
    assert dry_delete.exit_code == 0, dry_delete.stderr
    assert dry_delete.stdout == (
        f"Deletion of requested share groups ('{group}') would be successful (dry run).\n"
    )
    assert group in _listed(kshare)

    deleted = kshare.run("delete", group, "--execute", "-o", "plain")
    assert (deleted.exit_code, deleted.stderr) == (0, "")
    assert deleted.stdout == as_kafka("22")
    assert group not in _listed(kshare)
    described = kshare.run("describe", group)
    assert described.exit_code == 5
    assert_one_error_line(described.stderr, group, "not found")


# --------------------------------------------------------------------------- per-topic errors


def test_delete_offsets_reports_each_topic_and_exits_5_when_the_failures_are_missing(
    kshare: Kshare, cluster: Cluster, settings: ConnectionSettings, unique: str
) -> None:
    topic, bare, group = f"kshare-do-t-{unique}", f"kshare-do-b-{unique}", f"kshare-do-g-{unique}"
    unknown = f"kshare-do-unknown-{unique}"
    create_topics(cluster, topic, bare, partitions=2)
    _empty_group_with_offsets(settings, group, topic)
    args = ("delete-offsets", group, "-t", topic, "-t", bare, "-t", unknown)

    dry = kshare.run(*args, "-o", "json")
    assert dry.exit_code == 5
    document = json.loads(dry.stdout)
    validate(document, "deletions.schema.json")
    assert [(r["topic"], r["result"]) for r in document["results"]] == [
        (bare, "not_found"),
        (topic, "would_delete"),
        (unknown, "not_found"),
    ]
    assert _offsets(kshare, group) == {topic: [0, 1]}

    done = kshare.run(*args, "--execute", "-o", "jsonl")
    assert done.exit_code == 5
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    for row in rows:
        validate(row, "deletions-row.schema.json")
    by_topic = {row["topic"]: row for row in rows}
    assert by_topic[topic]["result"] == "deleted" and by_topic[topic]["partitions"] == [0, 1]
    assert by_topic[bare]["error"]["message"] == "There is no offset information to delete."
    assert by_topic[unknown]["error"]["name"] == "UNKNOWN_TOPIC_OR_PARTITION"
    errors = done.stderr.splitlines()
    assert len(errors) == 2 and "Traceback" not in done.stderr
    assert f"topic '{bare}'" in errors[0] and f"topic '{unknown}'" in errors[1]
    assert _offsets(kshare, group) == {}


# --------------------------------------------------------------------------- refusals


def test_a_group_with_members_is_refused_named_and_left_alone(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    live, topic = share_groups.live, share_groups.topic
    before = _offsets(kshare, live)

    refused = kshare.run("delete", live, "--execute", "-o", "json")
    assert refused.exit_code == 1
    (result,) = json.loads(refused.stdout)["results"]
    assert (result["result"], result["reason"]) == ("refused", "not_empty")
    assert [member["client_id"] for member in result["members"]] == [share_groups.live_client_id]
    member_id = result["members"][0]["member_id"]
    assert_one_error_line(refused.stderr, live, "not empty", member_id, share_groups.live_client_id)
    assert live in _listed(kshare)

    offsets = kshare.run("delete-offsets", live, "-t", topic, "--execute")
    assert offsets.exit_code == 1
    assert_one_error_line(offsets.stderr, live, "not empty", share_groups.live_client_id)
    assert _offsets(kshare, live) == before

    # The group with members is not among --all-groups --empty-only's candidates.
    candidates = kshare.run("delete", "--all-groups", "--empty-only", "-o", "json")
    assert candidates.exit_code == 0, candidates.stderr
    listed = [r["group_id"] for r in json.loads(candidates.stdout)["results"]]
    assert live not in listed and share_groups.drained in listed


def test_unknown_groups_exit_5_with_one_line_each(kshare: Kshare, unique: str) -> None:
    missing = f"kshare-delete-missing-{unique}"
    for args in (
        ("delete", missing, "--execute"),
        ("delete", missing),
        ("delete-offsets", missing, "-t", "any-topic", "--execute"),
    ):
        result = kshare.run(*args)
        assert result.exit_code == 5, (args, result.stderr)
        errors = [line for line in result.stderr.splitlines() if line != DRY_RUN_NOTICE]
        assert_one_error_line("\n".join(errors), missing, "not found")
        row = result.stdout.splitlines()[2].split()
        expected = [missing, "-", "-"] if args[0] == "delete-offsets" else [missing]
        assert row[: len(expected) + 2] == [*expected, "not", "found"]


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("delete",), "name at least one group"),
        (("delete", "g", "--all-groups", "--empty-only"), "not both"),
        (("delete", "--all-groups"), "--empty-only"),
        (("delete", "g", "--dry-run", "--execute"), "mutually exclusive"),
        (("delete", " "), "cannot be empty"),
        (("delete-offsets", "g"), "--topic"),
        (("delete-offsets", "g", "-t", "t:0"), "topic name alone"),
        (("delete-offsets", "g", "-t", ""), "cannot be empty"),
        (("delete-offsets", "g", "-t", "t", "--dry-run", "--execute"), "mutually exclusive"),
        (("delete", "g", "--timeout", "soon"), "--timeout"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    kshare: Kshare, args: tuple[str, ...], fragment: str
) -> None:
    result = kshare.run(*args, connect=False)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert_one_error_line(result.stderr, fragment)


# --------------------------------------------------------------------------- confirmation


@pytest.fixture
def on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(delete_cmd, "_stdin_is_terminal", lambda: True)
    yield


def _answer(kshare: Kshare, answer: str, *args: str) -> Any:
    argv = [*args, *kshare.connection_args()]
    return CliRunner().invoke(app, argv, input=answer, env=kshare.environment())


@pytest.mark.usefixtures("on_a_terminal")
def test_on_a_terminal_execute_asks_first(
    kshare: Kshare, cluster: Cluster, settings: ConnectionSettings, unique: str
) -> None:
    topic, group = f"kshare-ask-t-{unique}", f"kshare-ask-g-{unique}"
    create_topics(cluster, topic, partitions=2)
    _empty_group_with_offsets(settings, group, topic)

    declined = _answer(kshare, "n\n", "delete-offsets", group, "-t", topic, "--execute")
    assert declined.exit_code == 1
    assert f"Delete the offsets of share group '{group}' on topic '{topic}'" in declined.stderr
    assert "not confirmed: nothing was deleted" in declined.stderr
    # CliRunner echoes the typed answer to stdout, as a terminal would show it; no result.
    assert declined.stdout.strip() == "n"
    assert _offsets(kshare, group) == {topic: [0, 1]}

    declined = _answer(kshare, "\n", "delete", group, "--execute")
    assert declined.exit_code == 1 and f"Delete share group '{group}'" in declined.stderr
    assert group in _listed(kshare)

    confirmed = _answer(kshare, "y\n", "delete", group, "--execute", "-o", "plain")
    assert confirmed.exit_code == 0, confirmed.stderr
    assert confirmed.stdout.endswith(
        f"\nDeletion of requested share groups ('{group}') was successful.\n"
    )
    assert group not in _listed(kshare)


@pytest.mark.usefixtures("on_a_terminal")
def test_yes_skips_the_question(
    kshare: Kshare, cluster: Cluster, settings: ConnectionSettings, unique: str
) -> None:
    topic, group = f"kshare-yes-t-{unique}", f"kshare-yes-g-{unique}"
    create_topics(cluster, topic, partitions=2)
    _empty_group_with_offsets(settings, group, topic)
    result = _answer(kshare, "", "delete", group, "--execute", "--yes")
    assert (result.exit_code, result.stderr) == (0, "")
    assert group not in _listed(kshare)


# --------------------------------------------------------------------------- --all-groups


def test_all_empty_groups_are_deleted_and_only_they(tmp_path: Path, unique: str) -> None:
    # Its own sandbox: --all-groups --execute deletes every empty group of a cluster,
    # which on the shared test bed would take the other tests' groups with it.
    with SandboxThread() as sandbox:
        cluster = Cluster(sandbox.bootstrap)
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "kshare" / "config.toml")
        settings = ConnectionSettings(bootstrap_servers=(sandbox.bootstrap,))
        topic = f"kshare-all-t-{unique}"
        create_topics(cluster, topic, partitions=2)
        groups = [f"kshare-all-{n}-{unique}" for n in range(3)]
        for group in groups:
            _empty_group_with_offsets(settings, group, topic)

        dry = kshare.run("delete", "--all-groups", "--empty-only", "-o", "csv")
        assert dry.exit_code == 0, dry.stderr
        assert [line.split(",")[2] for line in dry.stdout.splitlines()[1:]] == groups
        assert _listed(kshare) == groups

        done = kshare.run("delete", "--all-groups", "--empty-only", "--execute", "-o", "plain")
        assert (done.exit_code, done.stderr) == (0, "")
        quoted = ", ".join(f"'{group}'" for group in groups)
        assert done.stdout == f"Deletion of requested share groups ({quoted}) was successful.\n"
        assert _listed(kshare) == []

        nothing = kshare.run("delete", "--all-groups", "--empty-only", "--execute")
        assert nothing.exit_code == 0
        assert (nothing.stdout, nothing.stderr) == ("", "kshare: no empty share group to delete\n")


@pytest.mark.parametrize(
    ("version", "exception"),
    [
        ("4.2", "java.lang.IllegalArgumentException"),
        ("4.3", "java.lang.IllegalArgumentException"),
        ("4.4", "org.apache.kafka.common.errors.GroupIdNotFoundException"),
    ],
)
def test_plain_words_a_missing_group_as_the_clusters_release_of_kafkas_tool_does(
    tmp_path: Path, version: str, exception: str
) -> None:
    """Kafka's ``--delete`` of a group that is not a share group raised an
    IllegalArgumentException up to 4.3 and a GroupIdNotFoundException from 4.4 (read on
    real 4.2.0 and 4.4 brokers): ``-o plain`` follows the release the cluster runs."""
    with SandboxThread(kafka_version=version) as sandbox:
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "kshare" / "config.toml")
        result = kshare.run("delete", "kshare-delete-nowhere", "--execute", "-o", "plain")
    assert result.exit_code == 5, result.stderr
    assert result.stdout == (
        "\nError: Deletion of some share groups failed:\n"
        "* Group 'kshare-delete-nowhere' could not be deleted due to: "
        f"{exception}: Group 'kshare-delete-nowhere' is not a share group.\n"
    )
