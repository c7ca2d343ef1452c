"""One round of a fan-out's routing, decided without a socket (``cluster.plan_leaders``,
``cluster.plan_coordinators``).

Why: which broker gets which partition or group, and which of them are worth asking
again, decides both what a command reports and how many requests it costs; the
fan-outs act on these plans, so a wrong plan is a wrong answer or a wasted round.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kshare_cli.wire.cluster import (
    BrokerNode,
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
    plan_coordinators,
    plan_leaders,
)
from kshare_cli.wire.errors import KafkaError

BROKERS = {n: BrokerNode(n, "127.0.0.1", 9092 + n) for n in (1, 2, 3)}


def topic(name: str, leaders: dict[int, int], *, error: int = 0, code: int = 0) -> TopicMetadata:
    partitions = {
        index: PartitionMetadata(index, leader, 0, code) for index, leader in leaders.items()
    }
    return TopicMetadata(name, uuid.uuid4(), partitions, error)


def metadata(*topics: TopicMetadata) -> ClusterMetadata:
    return ClusterMetadata("cluster", 1, BROKERS, {each.name: each for each in topics})


def test_partitions_go_to_their_leaders_in_the_order_asked() -> None:
    known = metadata(topic("orders", {0: 2, 1: 1, 2: 2}), topic("audit", {0: 3}))
    plan = plan_leaders([("orders", 2), ("audit", 0), ("orders", 0), ("orders", 1)], known)
    assert dict(plan.by_leader) == {
        2: [("orders", 2), ("orders", 0)],
        3: [("audit", 0)],
        1: [("orders", 1)],
    }
    assert not plan.failed
    assert plan.retry == []


def test_a_missing_topic_fails_at_once_and_a_leaderless_partition_is_asked_again() -> None:
    known = metadata(
        topic("gone", {}, error=ErrorCode.unknown_topic_or_partition),
        topic("electing", {}, error=ErrorCode.leader_not_available),
        topic("orders", {0: -1, 1: 1}),
        topic("moving", {0: 2}, code=ErrorCode.not_leader_or_follower),
    )
    asked = [("gone", 0), ("electing", 0), ("orders", 0), ("orders", 1), ("orders", 7)]
    plan = plan_leaders([*asked, ("moving", 0)], known)
    assert dict(plan.by_leader) == {1: [("orders", 1)]}
    assert {key: error.name for key, error in plan.failed.items()} == {
        ("gone", 0): "UNKNOWN_TOPIC_OR_PARTITION",
        ("electing", 0): "LEADER_NOT_AVAILABLE",
        ("orders", 0): "LEADER_NOT_AVAILABLE",
        ("orders", 7): "UNKNOWN_TOPIC_OR_PARTITION",
        ("moving", 0): "NOT_LEADER_OR_FOLLOWER",
    }
    # A topic that does not exist is not worth a second round; an election is.
    assert plan.retry == [("electing", 0), ("orders", 0), ("moving", 0)]


def test_groups_go_to_their_coordinators_in_batches_and_the_unfound_fail() -> None:
    loading = KafkaError.of(ErrorCode.coordinator_not_available)
    groups = [f"g{n}" for n in range(7)]
    found = {
        "g0": BROKERS[2],
        "g1": BROKERS[1],
        "g2": BROKERS[2],
        "g3": loading,
        "g4": BROKERS[2],
        "g5": BROKERS[1],
        "g6": BROKERS[2],
    }
    batched = plan_coordinators(groups, found, 3)
    assert list(batched.batches) == [BROKERS[2], BROKERS[1]]
    assert batched.batches[BROKERS[2]] == [["g0", "g2", "g4"], ["g6"]]
    assert batched.batches[BROKERS[1]] == [["g1", "g5"]]
    assert dict(batched.failed) == {"g3": loading}
    # Without a batch size, one request carries all of a coordinator's groups.
    whole = plan_coordinators(groups, found, None)
    assert whole.batches[BROKERS[2]] == [["g0", "g2", "g4", "g6"]]
