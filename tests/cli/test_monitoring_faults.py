"""The monitoring commands with a node of three stopped, hung, or fenced (issue 23).

On a real three-node Kafka 4.2 cluster ``kshare health --all-groups`` ran 160 s
with a 30 s ``--timeout`` and printed nothing (five state-topic reads queued on one
lock, each with its own full timeout), and with a shorter timeout it left the dead
node's groups out and could have said OK. Here, on the sandbox's three nodes with
ten share groups spread over the coordinators (all caught up: lag 0, so a healthy
run is OK and exit 0), each command must finish within ``--timeout`` (asserted with
a 5 s margin, not a tight time), show every healthy group's rows, show the
unreachable node's groups as ERR naming the broker, and exit CRIT (2) when any
group is unknown. After the node is fenced and its groups moved, everything is OK
again, the dead node still first in the operator's bootstrap list.

A real cluster cannot be stopped node by node: these tests skip there.
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
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from typer.testing import Result

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.cluster import SHARE_STATE_TOPIC
from kshare_cli.state.partitioning import kafka_uuid, state_partition_for
from kshare_cli.state.replay import SharePartitionKey
from tests.cli.conftest import Kshare, validate
from tests.support.fault_beds import (
    PARTITIONS,
    coordinator_of,
    never_fenced_cluster,
    start_offsets_at,
    state_leaders,
    topic_id_of,
)
from tests.support.sandbox import StartCluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

#: A broker stopped or hung against --timeout: run alone, after the parallel part
#: (scripts/test.sh), so other workers' load does not eat the budgets it asserts.
pytestmark = pytest.mark.faults

RECORDS_PER_PARTITION = 4
GROUPS = 10
VICTIM = 2
TIMEOUT_S = 10.0
#: The bound every command is held to: its --timeout, plus a margin for a loaded machine.
WITHIN_S = TIMEOUT_S + 5.0
#: Nagios' critical, what `kshare health` exits with for ERR.
CRITICAL = 2


@dataclass(frozen=True)
class Bed:
    """Three nodes, ten caught-up groups; ``coordinators[group]`` is the node coordinating it."""

    sandbox: SandboxThread
    topic: str
    coordinators: dict[str, int]
    kshare: Kshare

    def broker_named(self, node: int) -> str:
        return f"broker {node} ({self.sandbox.addresses[node]})"

    def groups_of(self, node: int) -> list[str]:
        return sorted(group for group, at in self.coordinators.items() if at == node)

    def healthy(self) -> list[str]:
        return sorted(group for group, at in self.coordinators.items() if at != VICTIM)

    def held(self) -> list[str]:
        """The healthy groups whose share coordinators include the victim: Kafka's group
        coordinator holds their DescribeShareGroupOffsets while it is down."""
        return [g for g in self.healthy() if VICTIM in state_leaders(self.sandbox, g, self.topic)]

    def clean(self) -> list[str]:
        """The healthy groups that keep no state on the victim: read in full."""
        held = set(self.held())
        return [group for group in self.healthy() if group not in held]

    def named_by_the_state_topic(self, node: int) -> list[str]:
        """``node``'s groups that some readable state partition holds state of: those
        `health --all-groups` can name although their coordinator did not list them."""
        topic_id = topic_id_of(self.sandbox, self.topic)

        def led_by(partition: int) -> int:
            return self.sandbox.call(
                lambda broker: broker.cluster.leader(SHARE_STATE_TOPIC, partition)
            )

        return [
            group
            for group in self.groups_of(node)
            if any(
                led_by(state_partition_for(SharePartitionKey(group, topic_id, partition))) != node
                for partition in range(PARTITIONS)
            )
        ]


def make_bed(sandbox: SandboxThread, profiles: Path) -> Bed:
    suffix = uuid.uuid4().hex[:8]
    topic = f"monitoring-{suffix}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for partition in range(PARTITIONS):
        for index in range(RECORDS_PER_PARTITION):
            producer.produce(topic, value=f"r{index}".encode(), partition=partition)
    assert producer.flush(15) == 0
    coordinators: dict[str, int] = {}
    for index in range(200):
        group = f"{topic}-{index}"
        node = coordinator_of(sandbox.bootstrap, group)
        # At least three per node, ten in all.
        if sum(1 for at in coordinators.values() if at == node) < 3 or len(coordinators) == 9:
            coordinators[group] = node
        if len(coordinators) == GROUPS:
            break
    assert len(coordinators) == GROUPS and len(set(coordinators.values())) == 3, coordinators
    # Kafka puts a topic's share-partitions on consecutive state partitions, whose leaders
    # take turns round the nodes: every group keeps state on every node, and a down node
    # holds every group's offsets. Node 3's groups get their state moved onto node 3, so
    # the bed has groups of both kinds (node 1's stay as Kafka places them).
    topic_id = topic_id_of(sandbox, topic)
    for group, node in coordinators.items():
        if node == 3:
            for partition in range(PARTITIONS):
                sandbox.move_share_coordinator(f"{group}:{kafka_uuid(topic_id)}:{partition}", 3)
    for group in coordinators:
        start_offsets_at(sandbox, group, topic, RECORDS_PER_PARTITION)
    # The victim first in the bootstrap list, as an operator's config may well have it.
    order = [VICTIM, *(node for node in sorted(sandbox.addresses) if node != VICTIM)]
    bootstrap = ",".join(sandbox.addresses[node] for node in order)
    return Bed(sandbox, topic, coordinators, Kshare(bootstrap, None, profiles))


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    with never_fenced_cluster("it stops and hangs nodes of a sandbox cluster") as sandbox:
        yield make_bed(sandbox, tmp_path_factory.mktemp("monitoring") / "config.toml")


@pytest.fixture(params=["stopped", "hung"])
def broken(request: pytest.FixtureRequest, bed: Bed) -> Iterator[Bed]:
    if request.param == "stopped":
        bed.sandbox.stop_node(VICTIM)
    else:
        bed.sandbox.hang_node(VICTIM)
    try:
        yield bed
    finally:
        bed.sandbox.restart_node(VICTIM)


def timed(kshare: Kshare, *args: str) -> tuple[Result, float, str]:
    started = time.monotonic()
    result = kshare.run(*args, "--timeout", f"{TIMEOUT_S:g}s")
    elapsed = time.monotonic() - started
    return (
        result,
        elapsed,
        f"{args}: exit {result.exit_code} after {elapsed:.2f} s\n{result.stderr}",
    )


def health_json(kshare: Kshare, *args: str) -> tuple[Result, dict[str, Any], str]:
    result, elapsed, message = timed(kshare, "health", *args, "-o", "json")
    assert "Traceback" not in result.stderr, message
    assert elapsed < WITHIN_S, message
    document: dict[str, Any] = json.loads(result.stdout)
    validate(document, "health.schema.json")
    return result, document, message


def test_the_bed_is_healthy_with_every_node_up(bed: Bed) -> None:
    """What the fault tests compare with: every group OK, exit 0 (so a 2 below is the fault's)."""
    result, document, message = health_json(bed.kshare, "--all-groups")
    assert result.exit_code == 0, message
    assert [group["group_id"] for group in document["groups"]] == sorted(bed.coordinators)
    assert {group["status"] for group in document["groups"]} == {"OK"}
    assert document["broker_errors"] == []


def test_health_all_groups_shows_the_healthy_and_names_the_broker_for_the_rest(
    broken: Bed,
) -> None:
    result, document, message = health_json(broken.kshare, "--all-groups")
    assert result.exit_code == CRITICAL, message
    assert document["status"] == "ERR"
    by_id = {group["group_id"]: group for group in document["groups"]}
    assert broken.clean() and broken.held(), (broken.clean(), broken.held())
    for group in broken.clean():
        assert by_id[group]["state"] == "Empty", (by_id[group]["reasons"], message)
        assert len(by_id[group]["partitions"]) == PARTITIONS, by_id[group]
    for group in broken.held():
        assert by_id[group]["status"] == "ERR", by_id[group]
        assert f"{broken.broker_named(VICTIM)} does not answer" in by_id[group]["reasons"][0], (
            by_id[group]["reasons"],
            message,
        )
    (failed,) = document["broker_errors"]
    assert f"broker {failed['node_id']} ({failed['host']}:{failed['port']})" == (
        broken.broker_named(VICTIM)
    )
    named = broken.named_by_the_state_topic(VICTIM)
    assert failed["unknown_groups"] == named, message
    for group in named:
        assert by_id[group]["status"] == "ERR"
        assert broken.broker_named(VICTIM) in by_id[group]["reasons"][0]
    assert f"kshare: error: {broken.broker_named(VICTIM)} did not list its groups" in (
        result.stderr
    ), message


def test_health_all_groups_table_has_a_row_naming_the_broker(broken: Bed) -> None:
    result, elapsed, message = timed(broken.kshare, "health", "--all-groups")
    assert result.exit_code == CRITICAL, message
    assert elapsed < WITHIN_S, message
    broker_rows = [line for line in result.stdout.splitlines() if line.startswith("- ")]
    assert len(broker_rows) == 1, result.stdout
    (row,) = broker_rows
    assert f"{broken.broker_named(VICTIM)} did not list its groups" in row, row
    assert row.split()[:4] == ["-", "-", "-", "ERR"], row


def test_health_of_named_groups_reads_the_live_one_and_fails_the_victims(broken: Bed) -> None:
    live = broken.clean()[0]
    held = broken.held()[0]
    lost = broken.groups_of(VICTIM)[0]
    result, document, message = health_json(broken.kshare, live, held, lost)
    assert result.exit_code == CRITICAL, message
    by_id = {group["group_id"]: group for group in document["groups"]}
    assert by_id[live]["state"] == "Empty" and len(by_id[live]["partitions"]) == PARTITIONS
    assert by_id[held]["status"] == "ERR"
    assert f"{broken.broker_named(VICTIM)} does not answer" in by_id[held]["reasons"][0]
    assert by_id[lost]["status"] == "ERR"
    assert broken.broker_named(VICTIM) in " ".join(by_id[lost]["reasons"]), by_id[lost]
    assert document["broker_errors"] == []


def test_inflight_of_a_live_group_answers_within_the_timeout(broken: Bed) -> None:
    group = broken.clean()[0]
    result, elapsed, message = timed(broken.kshare, "inflight", group, "-o", "json")
    assert elapsed < WITHIN_S, message
    assert result.exit_code in (ExitCode.OK, ExitCode.PARTIAL), message
    document = json.loads(result.stdout)
    assert len(document["partitions"]) == PARTITIONS, document


def test_inflight_of_a_held_group_names_the_broker_it_waits_on(broken: Bed) -> None:
    result, elapsed, message = timed(broken.kshare, "inflight", broken.held()[0])
    assert elapsed < WITHIN_S, message
    assert result.exit_code == ExitCode.PARTIAL, message
    assert f"{broken.broker_named(VICTIM)} did not answer" in result.stderr, message


def test_inflight_of_the_victims_group_names_the_broker(broken: Bed) -> None:
    result, elapsed, message = timed(broken.kshare, "inflight", broken.groups_of(VICTIM)[0])
    assert elapsed < WITHIN_S, message
    assert result.exit_code == ExitCode.PARTIAL, message
    assert broken.broker_named(VICTIM) in result.stderr, message


def test_describe_all_groups_shows_the_healthy_rows_and_names_the_broker(broken: Bed) -> None:
    result, elapsed, message = timed(broken.kshare, "describe", "--all-groups", "-o", "json")
    assert elapsed < WITHIN_S, message
    assert result.exit_code == ExitCode.PARTIAL, message
    document = json.loads(result.stdout)
    validate(document, "offsets.schema.json")
    described = {group["group_id"]: group for group in document["groups"]}
    for group in broken.clean():
        assert len(described[group]["partitions"]) == PARTITIONS, described[group]
    for group in broken.held():
        assert (
            f"{broken.broker_named(VICTIM)} does not answer" in described[group]["error"]["message"]
        ), described[group]
    assert [failure["node_id"] for failure in document["broker_errors"]] == [VICTIM]
    assert broken.broker_named(VICTIM) in result.stderr, message


@pytest.mark.parametrize("fault", ["stopped", "hung"])
def test_once_the_node_is_fenced_every_group_is_ok_again(
    fault: str, sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    sandbox = sandbox_cluster(3, session_timeout_ms=1500)
    bed = make_bed(sandbox, tmp_path / "config.toml")
    if fault == "stopped":
        sandbox.stop_node(VICTIM)
    else:
        sandbox.hang_node(VICTIM)

    def fenced() -> bool:
        return all(
            coordinator_of(sandbox.addresses[1], group) != VICTIM for group in bed.coordinators
        )

    wait_for(fenced, 15, what="node 2 to be fenced and its groups to move")
    result, document, message = health_json(bed.kshare, "--all-groups")
    assert result.exit_code == 0, message
    assert [group["group_id"] for group in document["groups"]] == sorted(bed.coordinators)
    assert {group["status"] for group in document["groups"]} == {"OK"}, message
    for args in (("describe", "--all-groups"), ("inflight", bed.groups_of(VICTIM)[0])):
        result, elapsed, message = timed(bed.kshare, *args)
        assert result.exit_code == ExitCode.OK, message
        assert elapsed < WITHIN_S, message
