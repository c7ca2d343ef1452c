"""A three-node sandbox bed for tests of a failing cluster: nodes stopped, hung or fenced.

Each node coordinates one share group of the bed, and that group's share-partition state
lives on the same node, so a fault on one node touches only its own group; the "held"
group is coordinated by node 1 but keeps state on ``VICTIM``, so its
DescribeShareGroupOffsets waits on the fault. Commands, the exporter, the dashboard and
the leadership-churn tests all start from this bed (``make_fault_bed``) or its parts.
A real cluster cannot be stopped node by node: these beds are sandbox-only.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest

from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, kafka_uuid, state_partition_for
from kshare_cli.state.replay import SharePartitionKey
from tests.cli.conftest import Kshare
from tests.support.raw import call
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

#: Long enough that a stopped node stays listed (as Kafka's does for about 9 s) for
#: a whole test module; a fencing test fences one explicitly, or uses its own cluster.
NEVER_FENCED_MS = 600_000
PARTITIONS = 3
RECORDS_PER_PARTITION = 5
#: The node stopped and hung: not the first bootstrap server, and it coordinates G2.
VICTIM = 2


@dataclass(frozen=True)
class FaultBed:
    """Three nodes; ``groups[n]`` is coordinated by node n (the others' keep no state on
    ``VICTIM``); ``held`` is node 1's and keeps state there; every group has offsets on
    ``topic``."""

    sandbox: SandboxThread
    topic: str
    groups: dict[int, str]
    #: Coordinated by node 1, its share-partitions' state partly on ``VICTIM`` ("" when
    #: the bed was made without one).
    held: str
    kshare: Kshare

    def address(self, node: int) -> str:
        return self.sandbox.addresses[node]

    def broker_named(self, node: int) -> str:
        """How kshare names a broker on stderr: ``broker 2 (127.0.0.1:PORT)``."""
        return f"broker {node} ({self.address(node)})"


@contextlib.contextmanager
def never_fenced_cluster(why: str) -> Iterator[SandboxThread]:
    """Three sandbox nodes whose stopped or hung node is never fenced (its groups stay
    with it for the whole module); skipped on a real cluster, saying ``why``."""
    skip_on_real_cluster(why)
    config = {"broker.session.timeout.ms": str(NEVER_FENCED_MS)}
    with SandboxThread(brokers=3, config=config) as sandbox:
        yield sandbox


def coordinator_of(address: str, group: str) -> int:
    response = call(
        address,
        FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)),  # type: ignore[arg-type]
    )
    (found,) = response.coordinators
    assert found.error_code == 0, found
    return int(found.node_id)


def topic_id_of(sandbox: SandboxThread, topic: str) -> uuid.UUID:
    """The topic's id in the sandbox."""
    found = sandbox.call(lambda broker: broker.topic(topic))
    assert found is not None, topic
    return uuid.UUID(str(found.topic_id))


def state_partitions(sandbox: SandboxThread, group: str, topic: str) -> set[int]:
    """The ``__share_group_state`` partitions holding the group's share-partitions of ``topic``."""
    topic_id = topic_id_of(sandbox, topic)
    return {
        state_partition_for(SharePartitionKey(group, topic_id, partition))
        for partition in range(PARTITIONS)
    }


def state_leaders(sandbox: SandboxThread, group: str, topic: str) -> set[int]:
    """The group's share coordinators: the leaders of its state partitions, which Kafka's
    group coordinator waits on to answer DescribeShareGroupOffsets."""
    return {
        sandbox.call(lambda broker, at=at: broker.cluster.leader(SHARE_STATE_TOPIC, at))
        for at in state_partitions(sandbox, group, topic)
    }


def state_on_coordinators(sandbox: SandboxThread, groups: dict[int, str], topic: str) -> None:
    """Move every share coordinator of each group onto the node that coordinates the group.

    Kafka's share-partitions of one topic sit on consecutive state partitions, whose
    leaders take turns round the nodes: any group of three partitions or more keeps state
    on every node, and a down share coordinator holds its DescribeShareGroupOffsets even
    at a healthy group coordinator. Here a node's fault touches only its own group (the
    held case has a group and tests of its own).
    """
    topic_id = topic_id_of(sandbox, topic)
    for node, group in groups.items():
        for partition in range(PARTITIONS):
            sandbox.move_share_coordinator(share_key(group, topic_id, partition), node)


def groups_on_every_node(sandbox: SandboxThread, prefix: str) -> dict[int, str]:
    """A group id per node, found by asking FindCoordinator until every node has one."""
    chosen: dict[int, str] = {}
    for index in range(1000):
        group = f"{prefix}-{index}"
        node = coordinator_of(sandbox.bootstrap, group)
        chosen.setdefault(node, group)
        if len(chosen) == len(sandbox.addresses):
            return dict(sorted(chosen.items()))
    raise AssertionError(f"no group id found for every node: {chosen}")


def held_group(
    sandbox: SandboxThread, prefix: str, topic: str, coordinator: int, victim: int, apart: set[int]
) -> str:
    """A group that ``coordinator`` coordinates, whose state ``victim`` partly leads, on
    none of the state partitions ``apart``: its DescribeShareGroupOffsets is held while
    ``victim`` is down."""
    for index in range(1000):
        group = f"{prefix}-held-{index}"
        if coordinator_of(sandbox.bootstrap, group) != coordinator:
            continue
        if state_partitions(sandbox, group, topic) & apart:
            continue
        if victim in state_leaders(sandbox, group, topic):
            return group
    raise AssertionError(f"no group coordinated by {coordinator} with state on {victim}")


def start_offsets_at_zero(sandbox: SandboxThread, group: str, topic: str) -> None:
    """Create the share group with offsets (as ``reset-offsets --execute`` would): no clients."""
    start_offsets_at(sandbox, group, topic, 0)


def start_offsets_at(sandbox: SandboxThread, group: str, topic: str, start_offset: int) -> None:
    """Create the share group with every partition's start offset at ``start_offset``."""
    coordinator = sandbox.addresses[coordinator_of(sandbox.bootstrap, group)]

    def altered() -> bool:
        response = call(
            coordinator,
            AlterShareGroupOffsetsRequest(
                group_id=group,  # type: ignore[arg-type]
                topics=(
                    AlterShareGroupOffsetsRequestTopic(
                        topic_name=topic,  # type: ignore[arg-type]
                        partitions=tuple(
                            AlterShareGroupOffsetsRequestPartition(
                                partition_index=partition,  # type: ignore[arg-type]
                                start_offset=start_offset,  # type: ignore[arg-type]
                            )
                            for partition in range(PARTITIONS)
                        ),
                    ),
                ),
            ),
        )
        return int(response.error_code) == 0

    wait_for(altered, 10, what=f"AlterShareGroupOffsets of {group}")


def make_fault_bed(sandbox: SandboxThread, profiles: Path, *, with_held: bool = True) -> FaultBed:
    """A topic of ``PARTITIONS`` partitions on every node with records, a group coordinated
    by each node (its state there too), and, ``with_held``, the held group."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"faults-{suffix}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for partition in range(PARTITIONS):
        for index in range(RECORDS_PER_PARTITION):
            producer.produce(topic, value=f"r{index}".encode(), partition=partition)
    assert producer.flush(15) == 0
    groups = groups_on_every_node(sandbox, f"faults-{suffix}")
    state_on_coordinators(sandbox, groups, topic)
    taken = {at for group in groups.values() for at in state_partitions(sandbox, group, topic)}
    held = held_group(sandbox, f"faults-{suffix}", topic, 1, VICTIM, taken) if with_held else ""
    for group in (*groups.values(), *([held] if held else [])):
        start_offsets_at_zero(sandbox, group, topic)
    # Every node in the bootstrap list, as an operator gives them.
    bootstrap = ",".join(sandbox.addresses[node] for node in sorted(sandbox.addresses))
    return FaultBed(sandbox, topic, groups, held, Kshare(bootstrap, None, profiles))


def share_key(group: str, topic_id: uuid.UUID, partition: int) -> str:
    """``group:topicId:partition``, the key a share coordinator is found and moved by."""
    return f"{group}:{kafka_uuid(topic_id)}:{partition}"
