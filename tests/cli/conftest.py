"""Fixtures for the command-level tests of ``kshare list`` and ``kshare describe``.

The commands run as an operator runs them: in-process through Typer's CliRunner
(stdout and stderr kept apart), or as the installed ``kshare`` console script in
a subprocess. Nothing from the operator's own environment leaks in: every run
gets an empty profile file and no ``KSHARE_*`` connection variables unless the
test sets them.

The share groups are made by confluent-kafka's ShareConsumer on the ``cluster``
fixture (the sandbox, or ``KSHARE_TEST_BOOTSTRAP``), once per session: a share
consumer's join costs a heartbeat interval (5 s on Kafka and the sandbox), so
the two groups are joined side by side and every test reads them without
changing them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from confluent_kafka import ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from typer.testing import CliRunner, Result

from kshare_cli.cli.app import app
from tests.support.records import produce
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for

#: The installed console script, beside the interpreter running the tests.
KSHARE = Path(sys.executable).with_name("kshare")

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"

#: Connection variables an operator may have exported; cleared for every run.
CONNECTION_ENV = ("KSHARE_BOOTSTRAP_SERVERS", "KSHARE_COMMAND_CONFIG", "KSHARE_CONFIG")


def write_properties(path: Path, properties: Mapping[str, str]) -> Path:
    """A client properties file as an operator writes one for kafka-share-groups.sh."""
    path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    return path


@dataclass
class Kshare:
    """Runs ``kshare`` against one cluster with a clean environment.

    ``run`` adds ``-b`` (and ``--command-config`` when the cluster needs client
    properties) unless ``connect=False``; ``env`` entries override the clean
    environment (``None`` removes a variable).
    """

    bootstrap: str
    command_config: Path | None
    profiles: Path
    extra_env: dict[str, str | None] = field(default_factory=dict)

    def environment(self, env: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
        clean: dict[str, str | None] = dict.fromkeys(CONNECTION_ENV)
        clean["KSHARE_CONFIG"] = str(self.profiles)
        clean.update(self.extra_env)
        clean.update(env or {})
        return clean

    def connection_args(self) -> list[str]:
        args = ["-b", self.bootstrap]
        if self.command_config is not None:
            args += ["--command-config", str(self.command_config)]
        return args

    def run(
        self,
        *args: str,
        connect: bool = True,
        env: Mapping[str, str | None] | None = None,
    ) -> Result:
        argv = [*args, *(self.connection_args() if connect else [])]
        return CliRunner().invoke(app, argv, env=self.environment(env))

    def subprocess(
        self,
        *args: str,
        connect: bool = True,
        env: Mapping[str, str | None] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(KSHARE), *args, *(self.connection_args() if connect else [])]
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=process_env(self.environment(env)),
            timeout=timeout,
            check=False,
        )


def process_env(overrides: Mapping[str, str | None]) -> dict[str, str]:
    """``os.environ`` with ``overrides`` applied (``None`` removes a variable)."""
    environment = dict(os.environ)
    for key, value in overrides.items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    return environment


def validate(instance: object, schema_name: str) -> None:
    """Check ``instance`` against ``docs/schemas/<schema_name>`` (draft 2020-12)."""
    schema = json.loads((SCHEMAS / schema_name).read_text())
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    validator.validate(instance)


def assert_one_error_line(stderr: str, *fragments: str) -> str:
    """Exactly one line on stderr, no traceback, naming every fragment; returns the line."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    (line,) = lines
    for fragment in fragments:
        assert fragment in line, line
    return line


@pytest.fixture(scope="session")
def cluster_command_config(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Path | None:
    """The cluster's client properties as a --command-config file (None for plaintext)."""
    if not cluster.client_config:
        return None
    directory = tmp_path_factory.mktemp("cluster-config")
    return write_properties(directory / "client.properties", cluster.client_config)


@pytest.fixture
def kshare(cluster: Cluster, cluster_command_config: Path | None, tmp_path: Path) -> Kshare:
    return Kshare(cluster.bootstrap, cluster_command_config, tmp_path / "kshare" / "config.toml")


# --------------------------------------------------------------------------- share groups


@dataclass(frozen=True)
class ShareGroups:
    """The session's share groups and what was done to them (hence what kshare must show).

    ``drained``: 10 + 4 records (partitions 0 and 1) consumed and accepted by one
    share consumer, which then left; 5 + 2 more records produced after it left.
    So end offsets 15 and 6, lag 5 and 2, state Empty, no members.
    ``live``: one share consumer (client id ``live_client_id``) still in the
    group, assigned both partitions; state Stable.
    """

    topic: str
    drained: str
    live: str
    live_client_id: str
    missing: str
    suffix: str

    DRAINED_CONSUMED = {0: 10, 1: 4}
    DRAINED_END = {0: 15, 1: 6}
    DRAINED_LAG = {0: 5, 1: 2}


def _describe_json(kshare: Kshare, *args: str) -> dict[str, Any]:
    result = kshare.run("describe", *args, "-o", "json")
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@pytest.fixture(scope="session")
def share_groups(
    cluster: Cluster, cluster_command_config: Path | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ShareGroups]:
    suffix = uuid.uuid4().hex[:8]
    topic = f"kshare-cli-{suffix}"
    drained = f"kshare-cli-drained-{suffix}"
    live = f"kshare-cli-live-{suffix}"
    live_client_id = f"kshare-cli-live-client-{suffix}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(30)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, drained, incremental_configs=[earliest])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    produce(cluster, topic, ShareGroups.DRAINED_CONSUMED)

    checker = Kshare(
        cluster.bootstrap,
        cluster_command_config,
        tmp_path_factory.mktemp("profiles") / "config.toml",
    )
    drainer = ShareConsumer(cluster.config(**{"group.id": drained, "client.id": "drainer"}))
    # The member stays in the group for the whole session without polling: librdkafka
    # leaves a group whose application has not polled for max.poll.interval.ms (5 minutes
    # by default), which a long suite passes between the fixture and its last user.
    member = ShareConsumer(
        cluster.config(
            **{
                "group.id": live,
                "client.id": live_client_id,
                "max.poll.interval.ms": 86_400_000,
            }
        )
    )
    drainer.subscribe([topic])
    member.subscribe([topic])
    drainer_open = True
    try:
        seen: set[tuple[int | None, int | None]] = set()
        wanted = sum(ShareGroups.DRAINED_CONSUMED.values())

        def drained_and_assigned() -> bool:
            # Both consumers join side by side: one heartbeat interval for the two.
            if len(seen) < wanted:
                for message in drainer.poll(0.1):
                    if message.error() is None:
                        seen.add((message.partition(), message.offset()))
            member.poll(0.05)
            if len(seen) < wanted:
                return False
            (group,) = _describe_json(checker, live, "--members")["groups"]
            members = group.get("members") or []
            return len(members) == 1 and members[0]["partition_count"] == 2

        wait_for(drained_and_assigned, timeout=90, interval=0, what="share groups ready")
        # Implicit acknowledgement: the commit accepts the last poll's records.
        drainer.commit_sync(10)
        drainer.close()
        drainer_open = False
        produce(cluster, topic, {0: 5, 1: 2})

        def drained_offsets_known() -> bool:
            # Readiness only (both share-partitions reported); the tests check the values.
            (group,) = _describe_json(checker, drained)["groups"]
            return {p["partition"] for p in group.get("partitions") or []} == {0, 1}

        wait_for(drained_offsets_known, timeout=30, interval=0.05, what="the drained offsets")
        missing = f"kshare-cli-missing-{suffix}"
        yield ShareGroups(topic, drained, live, live_client_id, missing, suffix)
    finally:
        member.close()
        if drainer_open:
            drainer.close()


def members_of(document: Mapping[str, Any], group_id: str) -> Sequence[Mapping[str, Any]]:
    for group in document["groups"]:
        if group["group_id"] == group_id:
            members: Sequence[Mapping[str, Any]] = group["members"]
            return members
    raise AssertionError(f"{group_id} not in {document}")


def kafka_line(kshare: Kshare, group_id: str) -> tuple[int, int]:
    """The Kafka release line the cluster's feature levels prove, as (major, minor).

    Read from ``describe GROUP --state -o json``'s cluster facts: the suite's sandbox is
    pinned to 4.2, a real cluster is whatever release it runs, and some answers changed
    between the lines (from 4.3 a reset's share-partition has a known lag).
    """
    document = _describe_json(kshare, group_id, "--state")
    line = document["cluster"]["kafka_line"]
    assert line is not None, document["cluster"]
    major, minor = line.split(".")
    return int(major), int(minor)


def skip_unless_dead_letter_queues(bootstrap: str, command_config: Path | None) -> None:
    """Skip a dead-letter-queue scenario on a real cluster that does not write DLQs.

    The DLQ is Kafka 4.4's with ``share.version`` 2; an older cluster refuses the DLQ topic
    config (``errors.deadletterqueue.group.enable``: INVALID_CONFIG on 4.2), a 4.4 one at
    share.version 1 accepts it and ignores it. What the cluster supports is read from its
    finalized features, as kshare reads them.
    """
    if not os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        return
    from kshare_cli.admin.cluster_facts import read_cluster_facts
    from kshare_cli.connect.resolve import resolve_settings
    from kshare_cli.wire.client import KafkaClient

    settings = resolve_settings(
        bootstrap=bootstrap,
        command_config=command_config,
        profile=None,
        environ={},
        profiles_path=Path(os.devnull),
    )

    async def lacking() -> str | None:
        async with await KafkaClient.connect(settings, timeout_s=30) as client:
            return (await read_cluster_facts(client, configs=False)).dead_letter_queue_lacking()

    reason = asyncio.run(lacking())
    if reason is not None:
        pytest.skip(f"on a real cluster: the scenario needs the broker's DLQ writes: {reason}")
