"""Kafka 4.3's assignment batching (KIP-1263) in the sandbox's group coordinator.

From 4.3 (KAFKA-20291, in 4.3.1) a share group's epoch still moves at once when a
member joins or leaves, but its target assignment is computed only in a heartbeat
that comes ``share.assignment.interval.ms`` (1 s by default) or more after the
last computation: ``GroupMetadataManager.canComputeNextTargetAssignment``. Until
then a new member reconciles to the last target (empty for it) at that target's
epoch. These follow Kafka's own ``GroupMetadataManagerTest.
testShareGroupAssignmentInterval`` (interval 5 s: member 2 joins 4,995 ms after
the last assignment and gets epoch 2 with nothing; 10 ms later, its heartbeat
computes epoch 3), and show 4.2 assigning at once.
"""

from __future__ import annotations

import pytest

from kshare_cli.kafka.versions import KafkaVersion
from kshare_cli.sandbox.group_configs import BrokerGroupSettings, GroupConfigStore
from kshare_cli.sandbox.group_coordinator import HeartbeatResult, ShareGroupCoordinator
from kshare_cli.sandbox.profile import KafkaProfile

TOPIC = "orders"
PARTITIONS = {TOPIC: 2}
START_MS = 1_000_000


def coordinator(version: KafkaVersion, interval_ms: int = 5000) -> ShareGroupCoordinator:
    """A coordinator whose share-partitions of ``orders`` are initialised already."""
    profile = KafkaProfile(version)
    groups = ShareGroupCoordinator(
        GroupConfigStore(
            BrokerGroupSettings(share_assignment_interval_ms=interval_ms), kafka_version=version
        ),
        initial_group_epoch=profile.initial_group_epoch,
        assignment_batching=profile.assignment_batching,
    )
    groups.ensure_group("g")
    groups.mark_initialized("g", {TOPIC: [0, 1]})
    return groups


def beat(groups: ShareGroupCoordinator, member: str, epoch: int, at_ms: int) -> HeartbeatResult:
    topics = [TOPIC] if epoch == 0 else None
    answer = groups.heartbeat(
        "g", member, epoch, None, member, "/127.0.0.1", topics, at_ms, PARTITIONS
    )
    assert answer.error_code == 0, answer
    return answer


def test_a_member_joining_within_the_interval_waits_for_the_next_computation() -> None:
    groups = coordinator("4.3")
    first = beat(groups, "m1", 0, START_MS)
    # A new group's first assignment is computed at once (never computed before), epoch 2.
    assert (first.member_epoch, first.assignment) == (2, {TOPIC: [0, 1]})

    second = beat(groups, "m2", 0, START_MS + 4995)
    assert (second.member_epoch, second.assignment) == (2, {})
    described = groups.describe("g")
    assert (described.group_epoch, described.assignment_epoch) == (3, 2)
    # The first member keeps what it has meanwhile.
    assert beat(groups, "m1", 2, START_MS + 4999).assignment is None

    computed = beat(groups, "m2", 2, START_MS + 5005)
    assert computed.member_epoch == 3
    assert computed.assignment is not None and len(computed.assignment[TOPIC]) == 1
    described = groups.describe("g")
    assert (described.group_epoch, described.assignment_epoch) == (3, 3)
    # The first member gives up the other partition on its next heartbeat.
    moved = beat(groups, "m1", 2, START_MS + 5010)
    assert moved.member_epoch == 3
    assert moved.assignment is not None
    assert sorted(moved.assignment[TOPIC] + computed.assignment[TOPIC]) == [0, 1]


def test_a_member_leaving_within_the_interval_leaves_its_partitions_unassigned_until_then() -> None:
    groups = coordinator("4.4", interval_ms=1000)
    beat(groups, "m1", 0, START_MS)
    second = beat(groups, "m2", 0, START_MS + 2000)
    assert second.member_epoch == 3 and second.assignment is not None
    kept = beat(groups, "m1", 2, START_MS + 2100)
    assert kept.member_epoch == 3 and kept.assignment is not None
    assert len(kept.assignment[TOPIC]) == 1

    beat(groups, "m2", -1, START_MS + 2200)  # leaves: epoch 4, no computation yet
    waiting = beat(groups, "m1", 3, START_MS + 2500)
    assert waiting.member_epoch == 3 and waiting.assignment is None
    assert groups.describe("g").group_epoch == 4

    whole = beat(groups, "m1", 3, START_MS + 3000)  # a second since the last computation
    assert (whole.member_epoch, whole.assignment) == (4, {TOPIC: [0, 1]})


@pytest.mark.parametrize("version", ["4.2", "4.3"])
def test_without_batching_the_joining_member_is_assigned_at_once(version: KafkaVersion) -> None:
    """4.2 has no interval; on 4.3 an interval of 0 turns batching off."""
    groups = coordinator(version, interval_ms=0)
    first = beat(groups, "m1", 0, START_MS)
    second = beat(groups, "m2", 0, START_MS + 10)
    initial = KafkaProfile(version).initial_group_epoch
    assert first.member_epoch == initial + 1
    assert second.member_epoch == initial + 2
    assert second.assignment is not None and len(second.assignment[TOPIC]) == 1


def test_the_first_assignment_after_initialisation_waits_for_the_interval() -> None:
    """A new group's join computes (empty: nothing initialised yet) and asks for the
    initialisation; a heartbeat within the interval after it bumps the epoch but does not
    compute (Java's immediate second heartbeat: Kafka 4.4 gave Java's console share
    consumer its first record after 6.7 s where 4.2 took 2.35 s); the first heartbeat a
    second after the join gets the partitions."""
    profile = KafkaProfile("4.4")
    groups = ShareGroupCoordinator(
        GroupConfigStore(kafka_version="4.4"),
        initial_group_epoch=profile.initial_group_epoch,
        assignment_batching=profile.assignment_batching,
    )
    joined = beat(groups, "m1", 0, START_MS)
    assert (joined.member_epoch, joined.assignment) == (2, {})
    assert joined.initialization is not None  # initialised at once (auto_initialize)
    early = beat(groups, "m1", 2, START_MS + 30)
    assert (early.member_epoch, early.assignment) == (2, None)
    assert groups.describe("g").group_epoch == 3
    assert beat(groups, "m1", 2, START_MS + 999).member_epoch == 2
    assigned = beat(groups, "m1", 2, START_MS + 1000)
    assert (assigned.member_epoch, assigned.assignment) == (3, {TOPIC: [0, 1]})
