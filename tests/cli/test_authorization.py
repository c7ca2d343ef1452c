"""Authorization failures are one exit code, 6, on every command and both planes (issue 24).

A secured cluster refuses a principal a topic or a group with TOPIC_, GROUP_ or
CLUSTER_AUTHORIZATION_FAILED. Before, ``consume`` said 3 (as for a cluster it
could not reach), ``produce`` and ``config get`` 1 (as for a partial answer).
Here ``bob`` authenticates on the sandbox's SASL PLAIN listener and its ACLs
refuse him everything on group ``g`` and READ and WRITE on topic ``orders``
(``alice`` may do anything); every command he runs must exit 6 with one stderr
line naming what was refused, and change nothing. ``list`` is the exception
Kafka makes: ListGroups without DESCRIBE on the cluster lists only the groups the
principal may describe, with no error.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.security import ListenerSecurity
from tests.cli.conftest import KSHARE, process_env, write_properties
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
REFUSED_GROUP = "g"
OTHER_GROUP = "h"
TOPIC = "orders"
DENY = {
    "User:bob": [
        ("GROUP", REFUSED_GROUP, "ALL"),
        ("TOPIC", TOPIC, "READ"),
        ("TOPIC", TOPIC, "WRITE"),
        ("CLUSTER", "kafka-cluster", "DESCRIBE"),
    ]
}
#: Kafka's closing lines, which the console tools print whatever happened.
CLOSING = ("Processed a total of", "Produced a total of")


@dataclass(frozen=True)
class Secured:
    bootstrap: str
    configs: dict[str, Path]

    def run(self, user: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        argv = [str(KSHARE), *args, "-b", self.bootstrap]
        argv += ["--command-config", str(self.configs[user]), "--timeout", "20s"]
        return subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            env=process_env({"KSHARE_BOOTSTRAP_SERVERS": None, "KSHARE_COMMAND_CONFIG": None}),
            timeout=60,
            check=False,
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    skip_on_real_cluster("needs a principal the cluster's ACLs refuse; the sandbox's deny list")
    directory = tmp_path_factory.mktemp("authorization")
    security = ListenerSecurity(protocol="SASL_PLAINTEXT", users=USERS, mechanisms=("PLAIN",))
    with SandboxThread(security=security, deny=DENY, default_partitions=2) as sandbox:
        configs = {
            user: write_properties(
                directory / f"{user}.properties",
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                    f'required username="{user}" password="{password}";',
                },
            )
            for user, password in USERS.items()
        }
        producer = Producer(
            {
                "bootstrap.servers": sandbox.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": USERS["alice"],
            }
        )
        for index in range(4):
            producer.produce(TOPIC, value=f"r{index}".encode(), partition=index % 2)
        assert producer.flush(30) == 0
        bed = Secured(sandbox.bootstrap, configs)
        for group in (REFUSED_GROUP, OTHER_GROUP):
            made = bed.run(
                "alice", "reset-offsets", group, "--topic", TOPIC, "--to-earliest",
                "--execute", "--allow-new-group",
            )  # fmt: skip
            assert made.returncode == ExitCode.OK, made.stderr
        yield bed


def error_line(stderr: str) -> str:
    """The one line that is not Kafka's closing line; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if not line.startswith(CLOSING)]
    assert len(lines) == 1, stderr
    return lines[0]


COMMANDS = {
    "describe": (["describe", REFUSED_GROUP], "share group 'g': GROUP_AUTHORIZATION_FAILED"),
    "inflight": (["inflight", REFUSED_GROUP], "share group 'g': GROUP_AUTHORIZATION_FAILED"),
    "config-get": (
        ["config", "get", REFUSED_GROUP],
        "not authorized to read the configs of group 'g'",
    ),
    "config-set": (
        ["config", "set", REFUSED_GROUP, "share.auto.offset.reset=earliest"],
        "group 'g'",
    ),
    "consume-group": (
        ["consume", "-t", TOPIC, "-g", REFUSED_GROUP, "--timeout-ms", "15000"],
        "Group authorization failed",
    ),
    "consume-topic": (
        ["consume", "-t", TOPIC, "-g", "bobs-own", "--timeout-ms", "15000"],
        "ShareFetch failed for orders",
    ),
    "produce": (["produce", "-t", TOPIC], "TOPIC_AUTHORIZATION_FAILED"),
    "reset-offsets": (
        ["reset-offsets", REFUSED_GROUP, "--topic", TOPIC, "--to-latest", "--execute"],
        "share group 'g': GROUP_AUTHORIZATION_FAILED",
    ),
    "delete": (["delete", REFUSED_GROUP, "--execute"], "share group 'g': GROUP_AUTHORIZATION"),
}


@pytest.mark.parametrize("command", COMMANDS)
def test_an_authorization_failure_is_exit_6_with_one_line_naming_it(
    secured: Secured, command: str
) -> None:
    args, words = COMMANDS[command]
    result = secured.run("bob", *args, stdin="a record\n")
    assert result.returncode == ExitCode.NOT_AUTHORIZED, (result.stdout, result.stderr)
    line = error_line(result.stderr)
    assert line.startswith("kshare: error: "), line
    assert words in line, line


def test_what_was_refused_was_not_changed(secured: Secured) -> None:
    """The refused reset, config change and delete left the group as alice sees it."""
    for args in (COMMANDS["reset-offsets"][0], COMMANDS["config-set"][0], COMMANDS["delete"][0]):
        assert secured.run("bob", *args).returncode == ExitCode.NOT_AUTHORIZED
    described = secured.run("alice", "describe", REFUSED_GROUP, "-o", "json")
    assert described.returncode == ExitCode.OK, described.stderr
    (group,) = json.loads(described.stdout)["groups"]
    assert {p["start_offset"] for p in group["partitions"]} == {0}  # not --to-latest (2)
    configs = secured.run("alice", "config", "get", REFUSED_GROUP, "-o", "json")
    assert configs.returncode == ExitCode.OK, configs.stderr
    reset = next(  # the entry itself comes before its synonyms
        entry
        for entry in _config_entries(json.loads(configs.stdout))
        if entry.get("name") == "share.auto.offset.reset"
    )
    assert (reset["value"], reset["source"]) == ("latest", "DEFAULT_CONFIG")


def _config_entries(document: object) -> list[dict[str, object]]:
    """Every object with a ``name`` in ``config get``'s JSON, wherever it nests them."""
    if isinstance(document, dict):
        found = [document] if "name" in document else []
        for value in document.values():
            found += _config_entries(value)
        return found
    if isinstance(document, list):
        return [entry for value in document for entry in _config_entries(value)]
    return []


def test_list_leaves_out_the_groups_kafka_hides_and_says_no_error(secured: Secured) -> None:
    """Without DESCRIBE on the cluster, ListGroups lists only describable groups (Kafka)."""
    result = secured.run("bob", "list")
    assert result.returncode == ExitCode.OK, result.stderr
    assert result.stdout.split()[:1] != [REFUSED_GROUP]
    assert OTHER_GROUP in result.stdout.split()
    assert REFUSED_GROUP not in result.stdout.split()
    assert result.stderr == ""


def test_a_refused_group_beside_an_answered_one_is_still_6_and_shows_the_answer(
    secured: Secured,
) -> None:
    """As exit 5 for a missing group: every failure an authorization failure is 6."""
    result = secured.run("bob", "describe", OTHER_GROUP, REFUSED_GROUP)
    assert result.returncode == ExitCode.NOT_AUTHORIZED, result.stderr
    assert OTHER_GROUP in result.stdout
    assert "share group 'g': GROUP_AUTHORIZATION_FAILED" in error_line(result.stderr)
