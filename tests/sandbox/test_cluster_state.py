"""The sandbox cluster's rules on their own: placement, coordinators, fencing, a node's errors."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.sandbox.broker_config import BrokerConfigError, broker_config
from kshare_cli.sandbox.cluster import (
    GROUP_METADATA_TOPIC,
    ControllerState,
    NodeState,
    coordinator_partition,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_coordinator_partition_is_java_s_hash_code_modulo_the_partitions() -> None:
    # "hello".hashCode() is 99162322 in Java; "polygenelubricants" hashes to Integer.MIN_VALUE,
    # which Kafka's Utils.abs maps to 0 (Math.abs would leave it negative).
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert coordinator_partition("polygenelubricants", 50) == 0
    # A negative hash code counts by its absolute value (-1657079920 here).
    assert coordinator_partition("orders-processing-group-0", 50) == 20


def test_a_fresh_cluster_spreads_leaders_round_robin_from_a_rotating_start() -> None:
    cluster = ControllerState(3)
    offsets = [cluster.leader(GROUP_METADATA_TOPIC, p) for p in range(6)]
    assert offsets == [1, 2, 3, 1, 2, 3]
    cluster.assign("orders", 3, 2)
    # The next topic starts one node further on; replicas follow the leader round the nodes.
    assert [cluster.leader("orders", p) for p in range(3)] == [2, 3, 1]
    assert [cluster.leadership("orders", p).replicas for p in range(3)] == [  # type: ignore[union-attr]
        (2, 3),
        (3, 1),
        (1, 2),
    ]
    assert cluster.controller_id() == 1
    assert cluster.registered == [1, 2, 3]


def test_fencing_moves_leaderships_to_the_next_unfenced_replica_with_a_higher_epoch() -> None:
    clock = Clock()
    cluster = ControllerState(3, coordinator_load_s=0.5, clock=clock)
    cluster.assign("orders", 3, 3)
    led_by_2 = cluster.partitions_led_by(2)
    cluster.node_down(2, NodeState.STOPPED)
    assert cluster.registered == [1, 2, 3]  # down, not fenced: still registered
    assert cluster.partitions_led_by(2) == led_by_2
    moved = cluster.fence(2)
    assert moved == led_by_2
    assert cluster.registered == [1, 3]
    assert cluster.partitions_led_by(2) == []
    for topic, partition in moved:
        leadership = cluster.leadership(topic, partition)
        assert leadership is not None
        assert leadership.epoch == 1
        assert leadership.leader == next(n for n in leadership.replicas if n != 2)
    # A moved coordinator partition loads on its new leader for a moment.
    group_partition = next(p for t, p in moved if t == GROUP_METADATA_TOPIC)
    new_leader = cluster.leader(GROUP_METADATA_TOPIC, group_partition)
    assert (
        cluster.coordinator_error(new_leader, GROUP_METADATA_TOPIC, group_partition)
        == ErrorCode.coordinator_load_in_progress
    )
    clock.now += 0.5
    assert cluster.coordinator_error(new_leader, GROUP_METADATA_TOPIC, group_partition) == 0
    assert (
        cluster.coordinator_error(2, GROUP_METADATA_TOPIC, group_partition)
        == ErrorCode.not_coordinator
    )


def test_a_partition_without_an_unfenced_replica_has_no_leader_until_one_returns() -> None:
    cluster = ControllerState(2)
    cluster.assign("single", 2, 1)
    (on_2,) = [p for p in range(2) if cluster.leader("single", p) == 2]
    cluster.fence(2)
    assert cluster.leader("single", on_2) == -1
    assert cluster.node_up(2) == [("single", on_2)]
    leadership = cluster.leadership("single", on_2)
    assert leadership is not None
    assert (leadership.leader, leadership.epoch) == (2, 2)


def test_a_node_answers_epoch_errors_before_leadership_errors() -> None:
    cluster = ControllerState(2)
    cluster.assign("orders", 1, 2)
    leader = cluster.leader("orders", 0)
    other = 3 - leader
    assert cluster.leader_error(leader, "orders", 0) == 0
    assert cluster.leader_error(other, "orders", 0) == ErrorCode.not_leader_or_follower
    cluster.move_leader("orders", 0, other)
    assert (
        cluster.leader_error(other, "orders", 0, current_leader_epoch=0)
        == ErrorCode.fenced_leader_epoch
    )
    assert (
        cluster.leader_error(leader, "orders", 0, current_leader_epoch=0)
        == ErrorCode.fenced_leader_epoch
    )
    assert (
        cluster.leader_error(other, "orders", 0, current_leader_epoch=2)
        == ErrorCode.unknown_leader_epoch
    )
    assert cluster.leader_error(leader, "orders", 0, current_leader_epoch=1) == (
        ErrorCode.not_leader_or_follower
    )
    assert cluster.leader_error(other, "orders", 0, current_leader_epoch=1) == 0


def test_a_fenced_node_cannot_be_elected_and_an_unknown_node_is_refused() -> None:
    cluster = ControllerState(3)
    cluster.assign("orders", 1, 3)
    cluster.fence(3)
    with pytest.raises(ValueError, match="fenced"):
        cluster.move_leader("orders", 0, 3)
    with pytest.raises(ValueError, match="no node 4"):
        cluster.move_leader("orders", 0, 4)
    with pytest.raises(ValueError, match="replication factor 4"):
        cluster.assign("wide", 1, 4)


def test_broker_session_timeout_and_default_replication_factor_configs() -> None:
    assert broker_config({}).broker_session_timeout_ms == 9000
    assert broker_config({}).default_replication_factor == 1
    configured = broker_config(
        {"broker.session.timeout.ms": "1500", "default.replication.factor": "3"}
    )
    assert (configured.broker_session_timeout_ms, configured.default_replication_factor) == (
        1500,
        3,
    )
    with pytest.raises(BrokerConfigError, match="Not a number of type INT"):
        broker_config({"broker.session.timeout.ms": "9s"})
    with pytest.raises(BrokerConfigError, match="Value must be at least 1"):
        broker_config({"default.replication.factor": "0"})


def test_a_node_loading_a_group_coordinator_partition_it_leads_is_loading_for_list_groups() -> None:
    clock = Clock()
    cluster = ControllerState(3, coordinator_load_s=0.5, clock=clock)
    assert not any(cluster.group_coordinator_loading(node) for node in (1, 2, 3))
    partition = next(p for p in range(50) if cluster.leader(GROUP_METADATA_TOPIC, p) == 1)
    cluster.move_leader(GROUP_METADATA_TOPIC, partition, 2)
    # Only the new leader loads, for all its groups: the old one no longer holds it.
    assert [cluster.group_coordinator_loading(node) for node in (1, 2, 3)] == [False, True, False]
    # A share-state partition loading is no group coordinator loading.
    cluster.assign("__share_group_state", 1, 3)
    cluster.move_leader("__share_group_state", 0, 3)
    assert not cluster.group_coordinator_loading(3)
    clock.now += 0.5
    assert not cluster.group_coordinator_loading(2)
    # A partition that moves on while loading stops loading where it was.
    cluster.move_leader(GROUP_METADATA_TOPIC, partition, 3)
    cluster.move_leader(GROUP_METADATA_TOPIC, partition, 1)
    assert [cluster.group_coordinator_loading(node) for node in (1, 2, 3)] == [True, False, False]


def test_a_topic_is_loading_somewhere_exactly_while_one_of_its_partitions_loads() -> None:
    """``any_loading`` is the cheap first test before ``loading``: it may never say no
    while a partition of the topic loads, and says no again once none does."""
    clock = Clock()
    cluster = ControllerState(3, coordinator_load_s=0.5, clock=clock)
    cluster.assign("__share_group_state", 3, 3)
    clock.now += 0.5
    assert not cluster.any_loading("__share_group_state")
    cluster.move_leader("__share_group_state", 1, 3)
    assert cluster.loading("__share_group_state", 1)
    assert cluster.any_loading("__share_group_state")
    # Another topic's move is no move of this one.
    assert not cluster.any_loading(GROUP_METADATA_TOPIC)
    clock.now += 0.25
    cluster.move_leader("__share_group_state", 2, 1)
    clock.now += 0.25
    # Partition 1 has loaded, partition 2 still loads: the topic too.
    assert not cluster.loading("__share_group_state", 1)
    assert cluster.loading("__share_group_state", 2)
    assert cluster.any_loading("__share_group_state")
    clock.now += 0.25
    assert not cluster.loading("__share_group_state", 2)
    assert not cluster.any_loading("__share_group_state")
