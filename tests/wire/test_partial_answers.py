"""One deadline, partial answers: a down broker, moving leaders, a hung bootstrap server.

Played on librdkafka's mock cluster with three brokers, a real protocol peer
that can take a broker down (it stays in the metadata, as a killed Kafka broker
does until the controller fences it), move a partition's leader, place a
group's coordinator and push error codes into its answers. It answers
Metadata, FindCoordinator (v3: one group per request), ListOffsets and
OffsetFetch (v6: one group per request), which is what these tests ask.

Every call runs under a 30 s deadline; the faulty part must cost seconds, name
the broker (id and address) and leave the healthy answers standing.

Where Kafka and the mock differ: Kafka lists a dead broker in its metadata until
the controller fences it (about 9 s), the mock stops listing a broker the moment
it is set down (but leaves it leader of its partitions). The tests therefore
learn the metadata first, then take the broker down: the client plans with a
broker that is still listed, as it would on Kafka, and finds it gone when it
looks again.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.kafka.api_keys import FIND_COORDINATOR, LIST_OFFSETS, METADATA, api_key
from kshare_cli.wire.client import BOOTSTRAP_STAGGER_S, KafkaClient
from kshare_cli.wire.errors import KafkaError
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.waiting import PROMPTLY_S
from tests.wire.conftest import plaintext_settings, run

#: Not a key kshare speaks, so kafka/api_keys binds no name for it: kio's index has it.
OFFSET_FETCH = api_key("offset_fetch")
DEADLINE_S = 30.0
TOPIC = "orders"
PARTITIONS = 6  # the mock spreads leaders round robin: partition p on broker p % 3 + 1


@pytest.fixture
def mock3() -> Iterator[RdkafkaMockCluster]:
    with RdkafkaMockCluster(broker_count=3) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        yield cluster


def address_of(cluster: RdkafkaMockCluster, broker_id: int) -> str:
    """The mock lists its brokers' listeners in id order."""
    return cluster.bootstrap_servers.split(",")[broker_id - 1]


def connect(bootstrap: str) -> Any:
    return KafkaClient.connect(plaintext_settings(bootstrap), timeout_s=DEADLINE_S)


def metadata_body() -> dict[str, Any]:
    return {
        "topics": [],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def offset_fetch_body(version: int, groups: Sequence[str]) -> dict[str, Any]:
    (group,) = groups  # OffsetFetch before v8 carries one group
    return {"group_id": group, "topics": None, "require_stable": False}


def offset_fetch_split(response: Any) -> dict[str, tuple[int, Any]]:
    # v6 has no group id in the answer: the request's one group is the answer's.
    return {"*": (int(response.error_code), response)}


def leaders(cluster: RdkafkaMockCluster) -> dict[int, int]:
    """Partition -> leader as the mock spreads them (checked against its metadata)."""
    return {partition: partition % cluster.broker_count + 1 for partition in range(PARTITIONS)}


# -- a broker down -----------------------------------------------------------------


def test_a_fan_out_to_every_broker_answers_without_the_down_one_and_names_it(
    mock3: RdkafkaMockCluster,
) -> None:
    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            await client.metadata([TOPIC])
            mock3.broker_set_down(2)
            started = time.monotonic()
            answers = await client.fan_out_to_brokers(METADATA, metadata_body())
            elapsed = time.monotonic() - started
            by_id = {broker.node_id: answer for broker, answer in answers.items()}
            assert sorted(by_id) == [1, 2, 3]
            assert not isinstance(by_id[1], KafkaError) and not isinstance(by_id[3], KafkaError)
            assert 1 in {b.node_id for b in by_id[1][1].brokers}  # a real answer
            failure = by_id[2]
            assert isinstance(failure, KafkaError)
            assert failure.name == "NETWORK_EXCEPTION"
            # The mock, like Kafka once the broker is fenced, stops listing it.
            assert str(failure.message).startswith(
                f"broker 2 ({address_of(mock3, 2)}): connection refused"
            )
            assert elapsed < PROMPTLY_S

    run(scenario())


def test_list_groups_names_the_down_broker_within_seconds(mock3: RdkafkaMockCluster) -> None:
    """The mock has no ListGroups: the healthy brokers say so, per broker, not for all."""

    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            await client.metadata([TOPIC])
            mock3.broker_set_down(3)
            started = time.monotonic()
            listing = await ShareGroupAdmin(client).list_groups()
            assert time.monotonic() - started < PROMPTLY_S
            failures = {failure.node_id: failure for failure in listing.errors()}
            assert failures[3].error.name == "NETWORK_EXCEPTION"
            assert str(failures[3]).startswith(
                f"broker 3 ({address_of(mock3, 3)}): NETWORK_EXCEPTION: connection refused"
            )
            assert failures[1].error.name == "UNSUPPORTED_VERSION"
            assert "does not support ListGroups" in str(failures[1].error.message)

    run(scenario())


def test_end_offsets_of_a_down_leaders_partitions_fail_and_the_rest_stand(
    mock3: RdkafkaMockCluster,
) -> None:
    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            admin = ShareGroupAdmin(client)
            await client.metadata([TOPIC])
            mock3.broker_set_down(2)
            started = time.monotonic()
            ends = await admin.log_end_offsets(
                TopicPartition(TOPIC, partition) for partition in range(PARTITIONS)
            )
            elapsed = time.monotonic() - started
            down = {p for p, leader in leaders(mock3).items() if leader == 2}
            assert set(ends.offsets) == {
                TopicPartition(TOPIC, p) for p in range(PARTITIONS) if p not in down
            }
            assert {tp.partition for tp in ends.errors()} == down
            for error in ends.errors().values():
                assert error.name == "NETWORK_EXCEPTION"
                assert str(error.message).startswith(
                    f"broker 2 ({address_of(mock3, 2)}): connection refused"
                )
            assert elapsed < PROMPTLY_S

    run(scenario())


def test_a_dead_coordinator_fails_its_group_and_the_others_are_answered(
    mock3: RdkafkaMockCluster,
) -> None:
    """``describe g2 g5 g6`` with g2's coordinator dead: g5 and g6 still answered."""
    for group, broker in (("g2", 2), ("g5", 1), ("g6", 3)):
        mock3.coordinator_set(group, broker)

    def split_for(groups: list[str]) -> Any:
        return lambda response: {groups[0]: offset_fetch_split(response)["*"]}

    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            await client.metadata([TOPIC])
            mock3.broker_set_down(2)
            started = time.monotonic()
            results = {}
            for group in ("g2", "g5", "g6"):  # one group per OffsetFetch v6
                results.update(
                    await client.fan_out_to_coordinators(
                        OFFSET_FETCH, [group], offset_fetch_body, split_for([group])
                    )
                )
            elapsed = time.monotonic() - started
            assert not isinstance(results["g5"], KafkaError)
            assert not isinstance(results["g6"], KafkaError)
            failure = results["g2"]
            assert isinstance(failure, KafkaError)
            assert failure.name == "NETWORK_EXCEPTION"
            assert str(failure.message).startswith(
                f"broker 2 ({address_of(mock3, 2)}): connection refused"
            )
            assert elapsed < PROMPTLY_S

    run(scenario())


# -- leaders and coordinators moving ------------------------------------------------


def test_a_leader_moved_between_calls_is_found_in_fresh_metadata(
    mock3: RdkafkaMockCluster,
) -> None:
    partitions = [TopicPartition(TOPIC, partition) for partition in range(PARTITIONS)]

    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            admin = ShareGroupAdmin(client)
            assert (await admin.log_end_offsets(partitions)).ok()  # metadata now cached
            mock3.partition_set_leader(TOPIC, 0, 2)  # was broker 1
            mock3.start_request_tracking()
            ends = await admin.log_end_offsets(partitions)
            assert ends.ok(), dict(ends.errors())
            assert set(ends.offsets) == set(partitions)
            asked = [(r.broker_id, r.api_key) for r in mock3.requests()]
            # Broker 1 said NOT_LEADER_OR_FOLLOWER; fresh metadata sent partition 0 to 2.
            assert (1, METADATA) in asked or (2, METADATA) in asked or (3, METADATA) in asked
            assert asked.count((2, LIST_OFFSETS)) == 2

    run(scenario())


def test_not_leader_answers_are_retried_after_a_metadata_refresh(
    mock3: RdkafkaMockCluster,
) -> None:
    partitions = [TopicPartition(TOPIC, partition) for partition in range(PARTITIONS)]

    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            admin = ShareGroupAdmin(client)
            await client.metadata([TOPIC])
            # The next two ListOffsets, whichever leaders get them, fail every partition.
            mock3.push_request_errors(LIST_OFFSETS, [ErrorCode.not_leader_or_follower] * 2)
            mock3.start_request_tracking()
            ends = await admin.log_end_offsets(partitions)
            assert ends.ok(), dict(ends.errors())
            assert set(ends.offsets) == set(partitions)
            api_keys = [request.api_key for request in mock3.requests()]
            assert METADATA in api_keys
            assert api_keys.count(LIST_OFFSETS) >= 3 + 2

    run(scenario())


def test_not_coordinator_answers_are_retried_with_the_coordinator_found_again(
    mock3: RdkafkaMockCluster,
) -> None:
    mock3.coordinator_set("g", 3)

    async def scenario() -> None:
        async with await connect(address_of(mock3, 1)) as client:
            # (Not pushed on FindCoordinator: the mock's error answer has a null host,
            # which Kafka's schema forbids.)
            mock3.push_request_errors(
                OFFSET_FETCH, [ErrorCode.not_coordinator, ErrorCode.not_coordinator]
            )
            mock3.start_request_tracking()
            results = await client.fan_out_to_coordinators(
                OFFSET_FETCH,
                ["g"],
                offset_fetch_body,
                lambda response: {"g": offset_fetch_split(response)["*"]},
            )
            assert not isinstance(results["g"], KafkaError), results["g"]
            asked = [(r.broker_id, r.api_key) for r in mock3.requests()]
            assert asked.count((3, OFFSET_FETCH)) == 3
            # Found once, then again after each NOT_COORDINATOR (the cache forgot it).
            assert [key for _, key in asked].count(FIND_COORDINATOR) == 3

    run(scenario())


# -- bootstrap ---------------------------------------------------------------------


@pytest.fixture
def hung_server() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers a byte."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_hung_first_bootstrap_server_costs_a_stagger_not_half_the_deadline(
    mock3: RdkafkaMockCluster, hung_server: str
) -> None:
    async def scenario() -> None:
        started = time.monotonic()
        async with await connect(f"{hung_server},{address_of(mock3, 1)}") as client:
            elapsed = time.monotonic() - started
            assert len((await client.metadata([])).brokers) == 3
        assert BOOTSTRAP_STAGGER_S <= elapsed < BOOTSTRAP_STAGGER_S + PROMPTLY_S

    run(scenario())
