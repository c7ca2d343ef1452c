"""Which errors the client asks again: Kafka's retriable ones, at every level they come at.

Issue 23: on a real Kafka 4.2 cluster, 1 run in 50 of ``describe --all-groups``
failed with COORDINATOR_LOAD_IN_PROGRESS from ListGroups, which Java's admin client
retries. The rule is Kafka's own (``errors.is_retriable``), pinned here to the list
read from Kafka's source, and the fan-out tests check that a group's retriable error
that is no coordinator move is asked again of the same coordinator.
(ListGroups' top-level error, and the per-partition errors of ListOffsets and
DescribeShareGroupOffsets: ``tests/admin/test_retriable_answers.py``.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import FIND_COORDINATOR, SHARE_GROUP_DESCRIBE
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.errors import KafkaError, is_retriable, retriable_for_topic
from tests.support.sandbox_thread import SandboxThread
from tests.wire.conftest import Handler, plaintext_settings, replaced_handler, run

#: The error codes whose exception extends ``RetriableException`` in Apache Kafka 4.2
#: (confluentinc/kafka branch 4.2, ``clients/src/main/java/org/apache/kafka/common/
#: errors/``: directly, or through ``InvalidMetadataException`` and
#: ``RefreshRetriableException``), by ``protocol/Errors.java``'s code for each class.
KAFKA_4_2_RETRIABLE = {
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    9: "REPLICA_NOT_AVAILABLE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    41: "NOT_CONTROLLER",
    51: "CONCURRENT_TRANSACTIONS",
    56: "KAFKA_STORAGE_ERROR",
    70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH",
    72: "LISTENER_NOT_FOUND",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    80: "PREFERRED_LEADER_NOT_AVAILABLE",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    88: "UNSTABLE_OFFSET_COMMIT",
    89: "THROTTLING_QUOTA_EXCEEDED",
    100: "UNKNOWN_TOPIC_ID",
    103: "INCONSISTENT_TOPIC_ID",
    106: "FETCH_SESSION_TOPIC_ID_ERROR",
    122: "SHARE_SESSION_NOT_FOUND",
    123: "INVALID_SHARE_SESSION_EPOCH",
    133: "SHARE_SESSION_LIMIT_REACHED",
}


def test_the_errors_asked_again_are_exactly_kafkas_retriable_ones() -> None:
    retried = {int(code) for code in ErrorCode if is_retriable(int(code))}
    assert retried == set(KAFKA_4_2_RETRIABLE)
    assert {code: ErrorCode(code).name.upper() for code in retried} == KAFKA_4_2_RETRIABLE


def test_the_errors_seen_during_leader_churn_are_among_them() -> None:
    for code in (
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_topic_or_partition,
    ):
        assert is_retriable(code), ErrorCode(code).name
        assert KafkaError.of(code).retriable


def test_errors_that_will_not_pass_and_codes_newer_than_kio_are_not_asked_again() -> None:
    for code in (
        ErrorCode.group_id_not_found,
        ErrorCode.group_authorization_failed,
        ErrorCode.unsupported_version,
        ErrorCode.unknown_server_error,
        ErrorCode.offset_out_of_range,
    ):
        assert not is_retriable(code), ErrorCode(code).name
    assert not is_retriable(max(int(code) for code in ErrorCode) + 1000)


def test_a_topic_kafka_does_not_know_is_not_asked_again_but_a_leaderless_one_is() -> None:
    assert not retriable_for_topic(ErrorCode.unknown_topic_or_partition)
    assert retriable_for_topic(ErrorCode.leader_not_available)
    assert not retriable_for_topic(ErrorCode.topic_authorization_failed)


def _describe_body(version: int, group_ids: Sequence[str]) -> dict[str, Any]:
    return {"group_ids": list(group_ids), "include_authorized_operations": False}


def _describe_split(response: Any) -> dict[str, tuple[int, Any]]:
    return {group.group_id: (int(group.error_code), group) for group in response.groups}


def test_a_groups_retriable_error_is_asked_again_of_the_same_coordinator(
    sandbox: SandboxThread, unique: str
) -> None:
    """REQUEST_TIMED_OUT is no coordinator move: no FindCoordinator, the same broker again."""
    group = f"timed-out-{unique}"
    answered: list[int] = []
    finds: list[int] = []

    def timed_out_once(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            answered.append(connection.node_id)
            if len(answered) > 1:
                return response
            groups = tuple(
                dataclasses.replace(g, error_code=ErrorCode(ErrorCode.request_timed_out))
                for g in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    def counting(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            finds.append(request.correlation_id)
            return await original(broker, request, connection)

        return handler

    async def scenario() -> None:
        settings = plaintext_settings(sandbox.bootstrap)
        async with await KafkaClient.connect(settings, timeout_s=10) as client:
            await client.find_coordinators([group])
            with (
                replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, timed_out_once),
                replaced_handler(sandbox, FIND_COORDINATOR, counting),
            ):
                results = await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE, [group], _describe_body, _describe_split
                )
            # The sandbox knows no such group: the second answer is Kafka's for it.
            answer = results[group]
            assert isinstance(answer, KafkaError)
            assert answer.code == ErrorCode.group_id_not_found
            assert len(answered) == 2
            assert finds == []

    run(scenario())
