"""The sandbox's share-group coordinator: Kafka 4.2's epochs, assignments and errors.

The first test replays every recorded ShareGroupHeartbeat of the golden corpus
(a librdkafka consumer in scenario A, ten Java console consumers in step 3)
through the coordinator and requires the recorded responses, and the recorded
ShareGroupDescribe / ListGroups / DeleteGroups answers at the same moments.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    DELETE_GROUPS,
    INITIALIZE_SHARE_GROUP_STATE,
    LIST_GROUPS,
    METADATA,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.kafka.group_configs import AlterConfigOpType
from kshare_cli.sandbox.group_configs import BrokerGroupSettings, GroupConfigStore
from kshare_cli.sandbox.group_coordinator import (
    GroupDescription,
    HeartbeatResult,
    RemovedMember,
    ShareGroupCoordinator,
)
from tests.support.golden import GOLDEN

#: The recording shows Kafka finishing a share-partition initialisation between
#: 12.6 ms (group golden-fmt-07: the next heartbeat still got epoch 1) and 12.8 ms
#: (golden-fmt-03: the next heartbeat got epoch 2) after the persister's
#: InitializeShareGroupState request. The replay completes it 12.7 ms after.
INIT_COMPLETION_MS = 12.7


# --- golden replay ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Exchange:
    t_ms: float
    entry: dict[str, Any]


def _capture(name: str) -> tuple[list[_Exchange], dict[str, tuple[str, int]]]:
    """The capture's exchanges in request-time order, and topic name -> (id, partitions)."""
    wire = (GOLDEN / "wire" / f"{name}.jsonl").read_text().splitlines()
    decoded = (GOLDEN / "decoded" / f"{name}.wire.jsonl").read_text().splitlines()
    exchanges: list[_Exchange] = []
    topics: dict[str, tuple[str, int]] = {}
    for raw_line, decoded_line in zip(wire, decoded, strict=True):
        raw = json.loads(raw_line)
        entry = json.loads(decoded_line)
        assert (raw["conn"], raw["correlation_id"]) == (entry["conn"], entry["correlation_id"])
        if entry["api_key"] == METADATA:
            for topic in entry["response"]["topics"]:
                topics[topic["name"]] = (topic["topicId"], len(topic["partitions"]))
        exchanges.append(_Exchange(raw["t"] * 1000, entry))
    exchanges.sort(key=lambda e: e.t_ms)
    return exchanges, topics


def _golden(group_id: str) -> bool:
    return group_id.startswith("golden-")


def _recorded_assignment(
    assignment: dict[str, Any] | None, names: dict[str, str]
) -> dict[str, list[int]] | None:
    if assignment is None:
        return None
    return {names[tp["topicId"]]: sorted(tp["partitions"]) for tp in assignment["topicPartitions"]}


def _described(description: GroupDescription, names: dict[str, str]) -> dict[str, Any]:
    """Our describe in the recorded ShareGroupDescribe v1 JSON shape."""
    ids = {name: topic_id for topic_id, name in names.items()}
    return {
        "errorCode": description.error_code,
        "errorMessage": description.error_message,
        "groupId": description.group_id,
        "groupState": description.state,
        "groupEpoch": description.group_epoch,
        "assignmentEpoch": description.assignment_epoch,
        "assignorName": description.assignor_name,
        "members": [
            {
                "memberId": m.member_id,
                "rackId": m.rack_id,
                "memberEpoch": m.member_epoch,
                "clientId": m.client_id,
                "clientHost": m.client_host,
                "subscribedTopicNames": list(m.subscribed_topic_names),
                "assignment": {
                    "topicPartitions": [
                        {"topicId": ids[topic], "topicName": topic, "partitions": parts}
                        for topic, parts in m.assignment.items()
                    ]
                },
            }
            for m in description.members
        ],
        "authorizedOperations": -2147483648,
    }


def _replay(name: str) -> tuple[int, int]:
    """Drive a coordinator with one capture; returns (heartbeats, describes) compared."""
    exchanges, topics = _capture(name)
    topic_partitions = {topic: count for topic, (_, count) in topics.items()}
    names = {topic_id: topic for topic, (topic_id, _) in topics.items()}
    coordinator = ShareGroupCoordinator(auto_initialize=False)
    init_requests = [e for e in exchanges if e.entry["api_key"] == INITIALIZE_SHARE_GROUP_STATE]
    pending: list[tuple[float, str, dict[str, list[int]]]] = []
    heartbeats = describes = 0

    def complete_initialisations(now: float) -> None:
        for due in [p for p in pending if p[0] <= now]:
            pending.remove(due)
            coordinator.mark_initialized(due[1], due[2])

    def schedule(result: HeartbeatResult, at: float) -> None:
        """Match our initialisation to the persister request Kafka sent for it."""
        init = result.initialization
        assert init is not None
        for topic, partitions in init.partitions.items():
            for partition in partitions:
                matches = [
                    e
                    for e in init_requests
                    if e.t_ms >= at
                    and e.entry["request"]["groupId"] == init.group_id
                    and any(
                        names[t["topicId"]] == topic
                        and p["partition"] == partition
                        and p["stateEpoch"] == init.state_epoch
                        and p["startOffset"] == init.start_offset
                        for t in e.entry["request"]["topics"]
                        for p in t["partitions"]
                    )
                ]
                assert matches, (init, topic, partition)
                pending.append(
                    (matches[0].t_ms + INIT_COMPLETION_MS, init.group_id, {topic: [partition]})
                )

    for exchange in exchanges:
        entry, request, response = exchange.entry, exchange.entry["request"], None
        response = entry["response"]
        complete_initialisations(exchange.t_ms)
        now = int(exchange.t_ms)
        if entry["api_key"] == SHARE_GROUP_HEARTBEAT and _golden(request["groupId"]):
            result = coordinator.heartbeat(
                group_id=request["groupId"],
                member_id=request["memberId"],
                member_epoch=request["memberEpoch"],
                rack_id=request["rackId"],
                client_id=entry["request_header"]["clientId"],
                client_host="/127.0.0.1",
                subscribed_topic_names=request["subscribedTopicNames"],
                now_ms=now,
                topic_partitions=topic_partitions,
            )
            assert (
                result.error_code,
                result.error_message,
                result.member_id,
                result.member_epoch,
                result.heartbeat_interval_ms,
                result.assignment,
            ) == (
                response["errorCode"],
                response["errorMessage"],
                response["memberId"],
                response["memberEpoch"],
                response["heartbeatIntervalMs"],
                _recorded_assignment(response["assignment"], names),
            ), f"{name} line {entry['line']}"
            if result.initialization is not None:
                schedule(result, exchange.t_ms)
            heartbeats += 1
        elif entry["api_key"] == SHARE_GROUP_DESCRIBE:
            for recorded in response["groups"]:
                if _golden(recorded["groupId"]) or recorded["groupId"] == "no-such-group":
                    ours = _described(coordinator.describe(recorded["groupId"]), names)
                    assert ours == recorded, f"{name} line {entry['line']}"
                    describes += 1
        elif entry["api_key"] == LIST_GROUPS:
            recorded_states = {
                g["groupId"]: g["groupState"] for g in response["groups"] if _golden(g["groupId"])
            }
            listed = coordinator.list_groups(request["statesFilter"])
            assert {g.group_id: g.state for g in listed} == recorded_states
        elif entry["api_key"] == DELETE_GROUPS:
            for recorded in response["results"]:
                if _golden(recorded["groupId"]):
                    assert coordinator.delete_group(recorded["groupId"]) == recorded["errorCode"]
    return heartbeats, describes


def test_recorded_heartbeats_of_librdkafka_consumer_replay_exactly() -> None:
    heartbeats, describes = _replay("scenario-a")
    assert heartbeats == 15
    assert describes >= 10


def test_recorded_heartbeats_of_java_console_consumers_replay_exactly() -> None:
    heartbeats, describes = _replay("console-share-consumer")
    assert heartbeats == 41
    assert describes == 4


# --- behaviour ------------------------------------------------------------------------------


class _Clock:
    """Drives members through the coordinator the way clients do."""

    def __init__(self, coordinator: ShareGroupCoordinator, topics: dict[str, int]) -> None:
        self.coordinator = coordinator
        self.topics = topics
        self.now = 1_000_000
        self.epochs: dict[str, int] = {}

    def join(self, member: str, subscription: list[str], group: str = "g") -> HeartbeatResult:
        result = self.coordinator.heartbeat(
            group,
            member,
            0,
            None,
            f"client-{member}",
            "/127.0.0.1",
            subscription,
            self.now,
            self.topics,
        )
        self.epochs[member] = result.member_epoch
        return result

    def beat(
        self, member: str, group: str = "g", subscription: list[str] | None = None
    ) -> HeartbeatResult:
        result = self.coordinator.heartbeat(
            group,
            member,
            self.epochs[member],
            None,
            f"client-{member}",
            "/127.0.0.1",
            subscription,
            self.now,
            self.topics,
        )
        if result.error_code == 0:
            self.epochs[member] = result.member_epoch
        return result

    def settle(self, *members: str, rounds: int = 3) -> None:
        for _ in range(rounds):
            for member in members:
                assert self.beat(member).error_code == 0


def _assignments(coordinator: ShareGroupCoordinator, group: str = "g") -> dict[str, Any]:
    return {m.member_id: m.assignment for m in coordinator.describe(group).members}


def test_join_gets_empty_assignment_until_partitions_are_initialised() -> None:
    clock = _Clock(ShareGroupCoordinator(auto_initialize=False), {"t": 2})
    joined = clock.join("a", ["t"])
    assert (joined.member_epoch, joined.assignment) == (1, {})
    assert joined.initialization is not None
    assert (joined.initialization.state_epoch, joined.initialization.partitions) == (
        1,
        {"t": [0, 1]},
    )
    waiting = clock.beat("a")
    assert (waiting.member_epoch, waiting.assignment, waiting.initialization) == (1, None, None)
    assert clock.coordinator.mark_initialized("g", {"t": [0, 1]})
    assigned = clock.beat("a")
    assert (assigned.member_epoch, assigned.assignment) == (2, {"t": [0, 1]})
    steady = clock.beat("a")
    assert (steady.member_epoch, steady.assignment) == (2, None)


def test_unconfirmed_initialisation_is_asked_again_after_the_retry_interval() -> None:
    clock = _Clock(ShareGroupCoordinator(auto_initialize=False), {"t": 1})
    assert clock.join("a", ["t"]).initialization is not None
    clock.now += 29_999
    assert clock.beat("a").initialization is None
    clock.now += 1
    again = clock.beat("a").initialization
    assert again is not None and again.partitions == {"t": [0]}


def test_two_members_on_one_partition_both_get_it() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 1})
    clock.join("a", ["t"])
    assert clock.beat("a").assignment == {"t": [0]}
    joined = clock.join("b", ["t"])
    assert (joined.member_epoch, joined.assignment) == (3, {"t": [0]})
    # a catches up to the new epoch without any change of partitions to report.
    caught_up = clock.beat("a")
    assert (caught_up.member_epoch, caught_up.assignment) == (3, None)
    assert _assignments(clock.coordinator) == {"a": {"t": [0]}, "b": {"t": [0]}}


def test_three_members_on_two_partitions_share_each_partition_twice() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 2})
    for member in ("a", "b", "c"):
        clock.join(member, ["t"])
    clock.settle("a", "b", "c")
    assignments = _assignments(clock.coordinator)
    counts = sorted(len(parts["t"]) for parts in assignments.values())
    assert counts == [1, 1, 2]
    for partition in (0, 1):
        holders = [m for m, parts in assignments.items() if partition in parts["t"]]
        assert len(holders) == 2
    description = clock.coordinator.describe("g")
    assert description.group_epoch == description.assignment_epoch
    assert {m.member_epoch for m in description.members} == {description.group_epoch}


def test_partitions_are_balanced_not_shared_when_there_are_enough() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 4})
    clock.join("a", ["t"])
    clock.settle("a")
    assert _assignments(clock.coordinator) == {"a": {"t": [0, 1, 2, 3]}}
    clock.join("b", ["t"])
    clock.settle("a", "b")
    before = _assignments(clock.coordinator)
    assert sorted(before["a"]["t"] + before["b"]["t"]) == [0, 1, 2, 3]
    assert len(before["a"]["t"]) == len(before["b"]["t"]) == 2


def test_assignment_is_sticky_when_a_member_joins() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 4})
    clock.join("a", ["t"])
    clock.join("b", ["t"])
    clock.settle("a", "b")
    before = _assignments(clock.coordinator)
    clock.join("c", ["t"])
    clock.settle("a", "b", "c")
    after = _assignments(clock.coordinator)
    # Quotas for 3 members on 4 partitions are 2, 1, 1: a keeps both of its partitions,
    # b gives up one of its two, and c gets exactly the one b gave up.
    assert after["a"] == before["a"]
    assert len(after["b"]["t"]) == 1 and set(after["b"]["t"]) < set(before["b"]["t"])
    assert after["c"]["t"] == sorted(set(before["b"]["t"]) - set(after["b"]["t"]))


def test_heterogeneous_subscriptions_are_assigned_topic_by_topic() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t1": 1, "t2": 2})
    clock.join("a", ["t1"])
    clock.join("b", ["t1", "t2"])
    clock.settle("a", "b")
    assert _assignments(clock.coordinator) == {
        "a": {"t1": [0]},
        "b": {"t1": [0], "t2": [0, 1]},
    }


def test_leave_empties_the_group_and_reports_what_the_member_held() -> None:
    removed: list[RemovedMember] = []
    clock = _Clock(ShareGroupCoordinator(on_member_removed=removed.append), {"t": 2})
    clock.join("a", ["t"])
    clock.settle("a")
    left = clock.coordinator.heartbeat(
        "g", "a", -1, None, "client-a", "/127.0.0.1", [], clock.now, clock.topics
    )
    assert (
        left.error_code,
        left.member_id,
        left.member_epoch,
        left.heartbeat_interval_ms,
        left.assignment,
    ) == (0, "a", -1, 0, None)
    expected = RemovedMember("g", "a", 2, {"t": [0, 1]}, "left")
    assert left.removed_member == expected
    assert removed == [expected]
    description = clock.coordinator.describe("g")
    assert (
        description.state,
        description.group_epoch,
        description.assignment_epoch,
        description.members,
    ) == ("Empty", 3, 2, ())
    assert [(g.group_id, g.state) for g in clock.coordinator.list_groups()] == [("g", "Empty")]


def test_rejoin_after_leave_is_assigned_at_once_from_initialised_state() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 1})
    clock.join("a", ["t"])
    clock.settle("a")
    clock.coordinator.heartbeat("g", "a", -1, None, "c", "/h", None, clock.now, clock.topics)
    again = clock.join("b", ["t"])
    assert (again.member_epoch, again.assignment, again.initialization) == (4, {"t": [0]}, None)


def test_session_expiry_fences_silent_members() -> None:
    broker = BrokerGroupSettings(
        share_session_timeout_ms=3000,
        share_min_session_timeout_ms=1000,
        share_heartbeat_interval_ms=1000,
        share_min_heartbeat_interval_ms=1000,
    )
    coordinator = ShareGroupCoordinator(GroupConfigStore(broker))
    clock = _Clock(coordinator, {"t": 2})
    clock.join("a", ["t"])
    clock.join("b", ["t"])
    clock.settle("a", "b")
    assert clock.beat("a").heartbeat_interval_ms == 1000
    clock.now += 2999
    clock.beat("a")
    assert coordinator.expire_members(clock.now) == []
    assert coordinator.next_session_deadline_ms() == clock.now - 2999 + 3000
    clock.now += 1
    expired = coordinator.expire_members(clock.now)
    assert [(m.member_id, m.reason) for m in expired] == [("b", "session expired")]
    assert len(expired[0].assignment["t"]) == 1
    survivor = clock.beat("a")
    assert survivor.assignment == {"t": [0, 1]}
    assert clock.beat("b").error_code == ErrorCode.unknown_member_id


def test_fenced_member_epoch() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 1})
    clock.join("a", ["t"])
    clock.settle("a")
    assert clock.epochs["a"] == 2
    ahead = clock.coordinator.heartbeat("g", "a", 3, None, "c", "/h", None, clock.now, clock.topics)
    assert (ahead.error_code, ahead.error_message, ahead.member_id, ahead.member_epoch) == (
        ErrorCode.fenced_member_epoch,
        "The share group member has a greater member epoch (3) than the one known by the group "
        "coordinator (2). The member must abandon all its partitions and rejoin.",
        None,
        0,
    )
    # The previous epoch is accepted: the response that bumped it may have been lost.
    previous = clock.coordinator.heartbeat(
        "g", "a", 1, None, "c", "/h", None, clock.now, clock.topics
    )
    assert (previous.error_code, previous.member_epoch) == (0, 2)
    clock.join("b", ["t"])
    clock.settle("a")
    behind = clock.coordinator.heartbeat(
        "g", "a", 1, None, "c", "/h", None, clock.now, clock.topics
    )
    assert (behind.error_code, behind.error_message) == (
        ErrorCode.fenced_member_epoch,
        "The share group member has a smaller member epoch (1) than the one known by the group "
        "coordinator (3), and it does not match the previous member epoch (2). The member must "
        "abandon all its partitions and rejoin.",
    )
    rejoined = clock.join("a", ["t"])
    assert (rejoined.error_code, rejoined.member_epoch, rejoined.assignment) == (0, 3, {"t": [0]})


@pytest.mark.parametrize(
    ("group", "member", "epoch", "subscription", "message"),
    [
        ("g", "", 0, ["t"], "MemberId can't be empty."),
        ("", "a", 0, ["t"], "GroupId can't be empty."),
        ("g", "a", 0, None, "SubscribedTopicNames must be set in first request."),
        ("g", "a", 0, [], "SubscribedTopicNames must be set in first request."),
        ("g", "a", -2, None, "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(
    group: str, member: str, epoch: int, subscription: list[str] | None, message: str
) -> None:
    result = ShareGroupCoordinator().heartbeat(
        group, member, epoch, None, "c", "/h", subscription, 0, {"t": 1}
    )
    assert (result.error_code, result.error_message) == (ErrorCode.invalid_request, message)


def test_empty_rack_is_invalid() -> None:
    result = ShareGroupCoordinator().heartbeat("g", "a", 0, "", "c", "/h", ["t"], 0, {"t": 1})
    assert (result.error_code, result.error_message) == (
        ErrorCode.invalid_request,
        "RackId can't be empty.",
    )


def test_unknown_group_and_member() -> None:
    coordinator = ShareGroupCoordinator()
    unknown_group = coordinator.heartbeat("g", "a", 5, None, "c", "/h", None, 0, {"t": 1})
    assert (unknown_group.error_code, unknown_group.error_message) == (
        ErrorCode.group_id_not_found,
        "Share group g not found.",
    )
    leave_unknown = coordinator.heartbeat("g", "a", -1, None, "c", "/h", None, 0, {"t": 1})
    assert (leave_unknown.error_code, leave_unknown.error_message) == (
        ErrorCode.group_id_not_found,
        "Group g not found.",
    )
    coordinator.heartbeat("g", "a", 0, None, "c", "/h", ["t"], 0, {"t": 1})
    stranger = coordinator.heartbeat("g", "z", 1, None, "c", "/h", None, 0, {"t": 1})
    assert (stranger.error_code, stranger.error_message) == (
        ErrorCode.unknown_member_id,
        "Member z is not a member of group g.",
    )
    assert coordinator.list_groups() != []
    assert coordinator.describe("nope").error_code == ErrorCode.group_id_not_found


def test_group_max_size() -> None:
    coordinator = ShareGroupCoordinator(GroupConfigStore(BrokerGroupSettings(share_max_size=1)))
    assert coordinator.heartbeat("g", "a", 0, None, "c", "/h", ["t"], 0, {"t": 1}).error_code == 0
    full = coordinator.heartbeat("g", "b", 0, None, "c", "/h", ["t"], 0, {"t": 1})
    assert (full.error_code, full.error_message) == (
        ErrorCode.group_max_size_reached,
        "The share group has reached its maximum capacity of 1 members.",
    )
    assert coordinator.heartbeat("g", "a", 0, None, "c", "/h", ["t"], 0, {"t": 1}).error_code == 0


def test_delete_group() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 1})
    assert clock.coordinator.delete_group("g") == ErrorCode.group_id_not_found
    clock.join("a", ["t"])
    assert clock.coordinator.delete_group("g") == ErrorCode.non_empty_group
    clock.coordinator.heartbeat("g", "a", -1, None, "c", "/h", None, clock.now, clock.topics)
    assert clock.coordinator.initialized_partitions("g") == {"t": [0]}
    assert clock.coordinator.delete_group("g") == 0
    assert clock.coordinator.describe("g").error_code == ErrorCode.group_id_not_found
    assert clock.coordinator.list_groups() == []


def test_list_groups_state_filter_is_case_insensitive() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 1})
    clock.join("a", ["t"], group="busy")
    clock.coordinator.ensure_group("idle")
    assert [g.group_id for g in clock.coordinator.list_groups(["stable"])] == ["busy"]
    assert [g.group_id for g in clock.coordinator.list_groups(["EMPTY"])] == ["idle"]
    assert len(clock.coordinator.list_groups()) == 2


def test_new_partitions_bump_the_epoch_and_get_assigned() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t": 1})
    clock.join("a", ["t"])
    clock.settle("a")
    assert clock.epochs["a"] == 2
    clock.topics = {"t": 3}
    grown = clock.beat("a")
    assert grown.member_epoch == 3
    assert grown.initialization is not None and grown.initialization.partitions == {"t": [1, 2]}
    assert grown.initialization.state_epoch == 3
    assigned = clock.beat("a")
    assert (assigned.member_epoch, assigned.assignment) == (4, {"t": [0, 1, 2]})


def test_subscription_change_drops_unsubscribed_topics() -> None:
    clock = _Clock(ShareGroupCoordinator(), {"t1": 1, "t2": 1})
    clock.join("a", ["t1", "t2"])
    clock.settle("a")
    assert _assignments(clock.coordinator) == {"a": {"t1": [0], "t2": [0]}}
    changed = clock.beat("a", subscription=["t2"])
    assert changed.assignment == {"t2": [0]}
    assert clock.coordinator.describe("g").members[0].subscribed_topic_names == ("t2",)


def test_heartbeat_interval_follows_the_group_config() -> None:
    configs = GroupConfigStore()
    coordinator = ShareGroupCoordinator(configs)
    assert configs.incremental_alter(
        "g", [("share.heartbeat.interval.ms", AlterConfigOpType.SET, "7000")], False
    ) == (0, None)
    result = coordinator.heartbeat("g", "a", 0, None, "c", "/h", ["t"], 0, {"t": 1})
    assert result.heartbeat_interval_ms == 7000
    other = coordinator.heartbeat("h", "a", 0, None, "c", "/h", ["t"], 0, {"t": 1})
    assert other.heartbeat_interval_ms == 5000


def test_members_subscribed_to_missing_topics_wait_for_them() -> None:
    clock = _Clock(ShareGroupCoordinator(), {})
    joined = clock.join("a", ["later"])
    assert (joined.member_epoch, joined.assignment, joined.initialization) == (1, {}, None)
    clock.topics = {"later": 1}
    created = clock.beat("a")
    assert created.member_epoch == 2 and created.initialization is not None
    assert clock.beat("a").assignment == {"later": [0]}


def _all_descriptions(coordinator: ShareGroupCoordinator) -> Iterator[GroupDescription]:
    for listed in coordinator.list_groups():
        yield coordinator.describe(listed.group_id)


def test_describe_reports_member_fields() -> None:
    coordinator = ShareGroupCoordinator()
    coordinator.heartbeat("g", "a", 0, "rack-1", "cli", "/10.0.0.1", ["t"], 0, {"t": 1})
    (description,) = list(_all_descriptions(coordinator))
    (member,) = description.members
    assert (
        member.member_id,
        member.rack_id,
        member.client_id,
        member.client_host,
        member.member_epoch,
        description.assignor_name,
    ) == ("a", "rack-1", "cli", "/10.0.0.1", 1, "simple")


# --- groups of another type ------------------------------------------------------------------


def test_a_classic_group_is_not_a_share_group_as_kafka_says() -> None:
    # Kafka 4.2 GroupMetadataManager.shareGroup: a group of another type is
    # GROUP_ID_NOT_FOUND with "Group X is not a share group."; a missing one "not found".
    coordinator = ShareGroupCoordinator()
    assert coordinator.commit_classic("orders-app", {("orders", 0): 5}) == 0
    described = coordinator.describe("orders-app")
    assert (described.error_code, described.error_message) == (
        ErrorCode.group_id_not_found,
        "Group orders-app is not a share group.",
    )
    assert coordinator.describe("nobody").error_message == "Group nobody not found."
    (listed,) = coordinator.list_classic_groups()
    assert (listed.group_id, listed.state, listed.group_type, listed.protocol_type) == (
        "orders-app",
        "Empty",
        "classic",
        "",
    )
    assert coordinator.list_classic_groups(["Stable"]) == []
    assert coordinator.list_groups() == []  # share groups only
