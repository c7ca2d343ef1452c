"""Which node of the sandbox cluster leads what, and which nodes the controller still counts.

``kshare sandbox --brokers N`` serves N nodes from one process over one shared
model of logs and groups; what differs between nodes is only who answers what.
This module is that knowledge, with no I/O, so the rules can be read and tested
on their own:

- Partition placement as Kafka's controller does it on a fresh cluster: the
  replicas of partition ``p`` start at node ``start + p`` and go round the
  nodes (``StripedReplicaPlacer`` without racks, one shared rotating start per
  topic instead of its random one, so a test can predict it); the first
  replica leads, with leader epoch 0.
- Coordinators as Kafka finds them: a group's is the leader of partition
  ``Utils.abs(groupId.hashCode) % 50`` of ``__consumer_offsets``, a
  share-partition's share coordinator the leader of
  ``Utils.abs("group:topicId:partition".hashCode) % 50`` of
  ``__share_group_state`` (``GroupCoordinatorService.partitionFor``,
  ``ShareCoordinatorService.partitionFor``). The sandbox keeps no log for
  ``__consumer_offsets``, only its leadership, so Metadata never lists it.
- Fencing as KRaft does it: a node that stops heartbeating stays registered
  (and in Metadata) until ``broker.session.timeout.ms`` passes, then the
  controller fences it and elects, for each partition it led, the first
  unfenced replica (leader epoch + 1), or none (leader -1) when every replica
  is fenced; a fenced replica that comes back leads its leaderless partitions again.
- A partition of a coordinator topic that gets a new leader is loading there for
  ``coordinator_load_s``: its groups' RPCs get COORDINATOR_LOAD_IN_PROGRESS,
  as on Kafka while the new coordinator replays the partition, and so does the
  new leader's ListGroups, for all its groups; the share-partitions
  whose state a moved ``__share_group_state`` partition holds are described with
  NOT_LEADER_OR_FOLLOWER meanwhile (measured on Kafka 4.2.0 during reassignments).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from kio.schema.errors import ErrorCode

from kshare_cli.state.partitioning import (
    DEFAULT_STATE_PARTITIONS,
    SHARE_STATE_TOPIC,
    java_string_hash,
)

__all__ = [
    "GROUP_METADATA_PARTITIONS",
    "GROUP_METADATA_TOPIC",
    "ControllerState",
    "Leadership",
    "NodeState",
    "coordinator_partition",
]

GROUP_METADATA_TOPIC: Final = "__consumer_offsets"
#: Kafka's ``offsets.topic.num.partitions`` default.
GROUP_METADATA_PARTITIONS: Final = 50
#: ``offsets.topic.replication.factor`` and ``share.coordinator.state.topic.replication.factor``.
INTERNAL_REPLICATION_FACTOR: Final = 3


_INT_MIN: Final = -(1 << 31)


class NodeState(enum.Enum):
    """What a node's process is doing: serving, gone (``kill -9``), or stuck (``kill -STOP``)."""

    RUNNING = "running"
    STOPPED = "stopped"
    HUNG = "hung"


@dataclass(slots=True)
class Leadership:
    """One partition's replicas (preferred leader first), its leader (-1: none) and epoch."""

    replicas: tuple[int, ...]
    leader: int
    epoch: int = 0


def coordinator_partition(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions`` (``Utils.abs(MIN_VALUE)`` is 0)."""
    hashed = java_string_hash(key)
    return 0 if hashed == _INT_MIN else abs(hashed) % partitions


class ControllerState:
    """The controller's view of a sandbox cluster of ``node_count`` nodes: who is registered
    or fenced, who leads each partition, which coordinator partitions are still loading."""

    def __init__(
        self,
        node_count: int = 1,
        *,
        coordinator_load_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if node_count < 1:
            raise ValueError(f"a cluster needs at least one node, not {node_count}")
        self.node_ids: tuple[int, ...] = tuple(range(1, node_count + 1))
        self.states: dict[int, NodeState] = dict.fromkeys(self.node_ids, NodeState.RUNNING)
        self.fenced: set[int] = set()
        self.coordinator_load_s = coordinator_load_s
        self._clock = clock
        self._leaderships: dict[tuple[str, int], Leadership] = {}
        self._next_start = 0
        self._loading_until: dict[tuple[str, int], float] = {}
        #: Per topic, the latest moment any of its partitions loads until: whether a
        #: partition loads is asked for every share-partition of every answer, and
        #: naming its state partition costs a hash of its key.
        self._topic_loading_until: dict[str, float] = {}
        internal = min(INTERNAL_REPLICATION_FACTOR, node_count)
        self.assign(GROUP_METADATA_TOPIC, GROUP_METADATA_PARTITIONS, internal)

    # -- nodes ---------------------------------------------------------------

    @property
    def registered(self) -> list[int]:
        """The nodes Metadata lists: every node the controller has not fenced."""
        return [node for node in self.node_ids if node not in self.fenced]

    @property
    def internal_replication_factor(self) -> int:
        return min(INTERNAL_REPLICATION_FACTOR, len(self.node_ids))

    def controller_id(self) -> int:
        """The id Metadata gives as controller: KRaft names a live broker; the lowest here."""
        registered = self.registered
        return registered[0] if registered else -1

    def check_node(self, node_id: int) -> None:
        if node_id not in self.states:
            raise ValueError(f"no node {node_id} (nodes are 1..{len(self.node_ids)})")

    # -- placement -------------------------------------------------------------

    def assign(self, topic: str, partitions: int, replication_factor: int) -> None:
        """Place a new topic's partitions; replicas go round the nodes from a rotating start."""
        nodes = self.node_ids
        if not 1 <= replication_factor <= len(nodes):
            raise ValueError(f"replication factor {replication_factor} with {len(nodes)} node(s)")
        start = self._next_start
        self._next_start += 1
        for partition in range(partitions):
            first = (start + partition) % len(nodes)
            replicas = tuple(nodes[(first + i) % len(nodes)] for i in range(replication_factor))
            leader = next((node for node in replicas if node not in self.fenced), -1)
            self._leaderships[(topic, partition)] = Leadership(replicas, leader)

    def forget(self, topic: str) -> None:
        for key in [key for key in self._leaderships if key[0] == topic]:
            del self._leaderships[key]
            self._loading_until.pop(key, None)

    def leadership(self, topic: str, partition: int) -> Leadership | None:
        return self._leaderships.get((topic, partition))

    def leader(self, topic: str, partition: int) -> int:
        found = self._leaderships.get((topic, partition))
        return -1 if found is None else found.leader

    def partitions_led_by(self, node_id: int) -> list[tuple[str, int]]:
        return sorted(key for key, led in self._leaderships.items() if led.leader == node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> Leadership:
        """Make ``node_id`` the leader (a reassignment or preferred election); the epoch goes up.

        The node becomes a replica if it was not one, as after a reassignment.
        """
        self.check_node(node_id)
        found = self._leaderships.get((topic, partition))
        if found is None:
            raise KeyError(f"no partition {topic}-{partition}")
        if node_id in self.fenced:
            raise ValueError(f"node {node_id} is fenced: the controller cannot elect it")
        if node_id not in found.replicas:
            found.replicas = (node_id, *found.replicas[1:])
        self._elect(topic, partition, found, node_id)
        return found

    def _elect(self, topic: str, partition: int, leadership: Leadership, leader: int) -> None:
        leadership.leader = leader
        leadership.epoch += 1
        if leader != -1 and topic in (GROUP_METADATA_TOPIC, SHARE_STATE_TOPIC):
            until = self._clock() + self.coordinator_load_s
            self._loading_until[(topic, partition)] = until
            self._topic_loading_until[topic] = max(until, self._topic_loading_until.get(topic, 0.0))

    # -- fencing -----------------------------------------------------------------

    def node_down(self, node_id: int, state: NodeState) -> None:
        self.check_node(node_id)
        self.states[node_id] = state

    def fence(self, node_id: int) -> list[tuple[str, int]]:
        """The controller fences the node: its leaderships go to the first unfenced replicas.

        Returns the partitions whose leader changed.
        """
        self.check_node(node_id)
        self.fenced.add(node_id)
        moved = []
        for (topic, partition), led in sorted(self._leaderships.items()):
            if led.leader != node_id:
                continue
            successor = next((node for node in led.replicas if node not in self.fenced), -1)
            self._elect(topic, partition, led, successor)
            moved.append((topic, partition))
        return moved

    def node_up(self, node_id: int) -> list[tuple[str, int]]:
        """The node runs again and registers: it leads the leaderless partitions it holds."""
        self.check_node(node_id)
        self.states[node_id] = NodeState.RUNNING
        self.fenced.discard(node_id)
        moved = []
        for (topic, partition), led in sorted(self._leaderships.items()):
            if led.leader == -1 and node_id in led.replicas:
                self._elect(topic, partition, led, node_id)
                moved.append((topic, partition))
        return moved

    # -- errors a node answers -----------------------------------------------------

    def leader_error(
        self, node_id: int, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> int:
        """What ``node_id`` answers for a partition a request needs the leader of.

        Kafka's ``Partition.localLogWithEpochOrThrow``: a stale epoch is
        FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, then a node that
        does not lead it says NOT_LEADER_OR_FOLLOWER.
        """
        found = self._leaderships.get((topic, partition))
        if found is None:
            return ErrorCode.none
        if current_leader_epoch >= 0:
            if current_leader_epoch < found.epoch:
                return ErrorCode.fenced_leader_epoch
            if current_leader_epoch > found.epoch:
                return ErrorCode.unknown_leader_epoch
        return ErrorCode.none if found.leader == node_id else ErrorCode.not_leader_or_follower

    def coordinator_error(self, node_id: int, topic: str, partition: int) -> int:
        """What ``node_id`` answers for an RPC of a group kept in this coordinator partition."""
        found = self._leaderships.get((topic, partition))
        if found is None or found.leader != node_id:
            return ErrorCode.not_coordinator
        if self.loading(topic, partition):
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.none

    def loading(self, topic: str, partition: int) -> bool:
        """Whether a coordinator partition's new leader is still loading it."""
        return self._clock() < self._loading_until.get((topic, partition), 0.0)

    def any_loading(self, topic: str) -> bool:
        """Whether some partition of ``topic`` may still be loading (a cheap first test
        before ``loading``, whose partition can cost more to name than the test)."""
        return self._clock() < self._topic_loading_until.get(topic, 0.0)

    def group_coordinator_loading(self, node_id: int) -> bool:
        """Whether ``node_id`` is still loading a ``__consumer_offsets`` partition it leads.

        ListGroups asks every group-coordinator partition a broker holds, and one that
        is still loading fails the whole answer (see ``share_admin_rpcs.list_groups``).
        """
        now = self._clock()
        return any(
            now < until and self.leader(topic, partition) == node_id
            for (topic, partition), until in self._loading_until.items()
            if topic == GROUP_METADATA_TOPIC
        )

    def group_coordinator(self, group_id: str) -> tuple[str, int]:
        return GROUP_METADATA_TOPIC, coordinator_partition(group_id, GROUP_METADATA_PARTITIONS)

    def share_coordinator(self, key: str) -> tuple[str, int]:
        """``key`` is FindCoordinator v6's share coordinator key, ``group:topicId:partition``."""
        return SHARE_STATE_TOPIC, coordinator_partition(key, DEFAULT_STATE_PARTITIONS)

    def groups_coordinated_by(self, node_id: int, group_ids: Iterable[str]) -> list[str]:
        return [g for g in group_ids if self.leader(*self.group_coordinator(g)) == node_id]
