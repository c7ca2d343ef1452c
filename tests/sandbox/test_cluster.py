"""A three-node sandbox cluster: who answers what, and what happens when a node dies.

Third-party clients (confluent-kafka's Producer, Consumer, AdminClient and
ShareConsumer) must work across the nodes; raw requests check the errors Kafka
gives a request sent to the wrong node; the faults (stop, hang, restart, moves)
are checked through the protocol only: Metadata, FindCoordinator, sockets.
"""

from __future__ import annotations

import datetime
import socket
import struct
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.list_offsets.v9.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v11.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.sandbox.record_batches import encode_batch
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, java_string_hash, kafka_uuid
from kshare_cli.wire.framing import encode_request
from tests.support import scenarios
from tests.support.raw import call
from tests.support.records import create_topic
from tests.support.sandbox import StartCluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

SESSION_TIMEOUT_MS = 1_500


@pytest.fixture
def sandbox(sandbox_cluster: StartCluster) -> SandboxThread:
    """Three nodes, fenced 1.5 s after they go silent, with fast share-group heartbeats."""
    settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=100, share_min_heartbeat_interval_ms=100
    )
    return sandbox_cluster(3, session_timeout_ms=SESSION_TIMEOUT_MS, settings=settings)


def _metadata(address: str, *topics: str) -> Any:
    return call(
        address,
        MetadataRequest(
            topics=tuple(
                MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name)  # type: ignore[arg-type]
                for name in topics
            ),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )


def _leaders(address: str, topic: str) -> dict[int, tuple[int, int]]:
    """Partition -> (leader id, leader epoch), as the node at ``address`` sees them."""
    (found,) = _metadata(address, topic).topics
    return {p.partition_index: (p.leader_id, p.leader_epoch) for p in found.partitions}


def _nodes(address: str) -> list[int]:
    return sorted(broker.node_id for broker in _metadata(address).brokers)


def _find_coordinator(address: str, key: str, key_type: int = 0) -> Any:
    response = call(
        address,
        FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,)),  # type: ignore[arg-type]
    )
    (coordinator,) = response.coordinators
    return coordinator


def _describe_error(address: str, group: str) -> int:
    response = call(
        address, ShareGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False)
    )
    return int(response.groups[0].error_code)


def test_clients_work_across_three_nodes_that_lead_different_partitions(
    sandbox: SandboxThread,
) -> None:
    topic = f"spread-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox, topic, 3, replicas=3)
    addresses = sandbox.addresses
    assert sorted(addresses) == [1, 2, 3]
    assert len(set(addresses.values())) == 3
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    listed = admin.list_topics(topic, timeout=10)
    assert sorted(listed.brokers) == [1, 2, 3]
    assert {b.port for b in listed.brokers.values()} == {
        int(a.rsplit(":", 1)[1]) for a in addresses.values()
    }
    leaders = {p: m.leader for p, m in listed.topics[topic].partitions.items()}
    assert sorted(leaders.values()) == [1, 2, 3]
    # Every node tells the same story.
    assert {_leaders(a, topic)[p][0] for a in addresses.values() for p in leaders} == {1, 2, 3}
    assert all(_leaders(a, topic) == _leaders(sandbox.bootstrap, topic) for a in addresses.values())

    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for index in range(30):
        producer.produce(topic, value=f"v{index}".encode(), partition=index % 3)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": sandbox.bootstrap, "group.id": f"plain-{topic}",
         "enable.auto.commit": False}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + 20
    while len(seen) < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.add((message.partition(), message.offset()))  # type: ignore[arg-type]
    consumer.close()
    assert seen == {(p, o) for p in range(3) for o in range(10)}

    queue = f"queue-{topic}"
    create_topic(sandbox, queue, 3, replicas=3)
    assert sorted(leader for leader, _ in _leaders(sandbox.bootstrap, queue).values()) == [1, 2, 3]
    group = f"share-{topic}"

    def prepare(group_id: str) -> None:
        entry = ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ConfigResource.Type.GROUP, group_id, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(15)

    result = scenarios.all_delivered(
        sandbox.bootstrap, queue, group, records=12, prepare_group=prepare, timeout=30, partitions=3
    )
    assert result.completed, result
    assert sorted(result.accepted()) == sorted(result.produced)
    assert {position.partition for position in result.accepted()} == {0, 1, 2}
    coordinator = _find_coordinator(sandbox.bootstrap, group)

    def acknowledged() -> bool:
        offsets = call(
            f"{coordinator.host}:{coordinator.port}",
            DescribeShareGroupOffsetsRequest(
                groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)
            ),
        )
        lags = [p.lag for t in offsets.groups[0].topics for p in t.partitions]
        return len(lags) == 3 and all(lag == 0 for lag in lags)

    wait_for(acknowledged, 30, what="every share-partition acknowledged (lag 0)")


def _produce(address: str, topic: str, partition: int) -> Any:
    batch = encode_batch([(b"k", b"v")], int(time.time() * 1000))
    response = call(
        address,
        ProduceRequest(
            transactional_id=None,
            acks=-1,  # type: ignore[arg-type]
            timeout=datetime.timedelta(seconds=5),  # type: ignore[arg-type]
            topic_data=(
                TopicProduceData(
                    name=topic,  # type: ignore[arg-type]
                    partition_data=(PartitionProduceData(index=partition, records=batch),),  # type: ignore[arg-type]
                ),
            ),
        ),
    )
    return response.responses[0].partition_responses[0]


def _fetch(address: str, topic: str, partition: int, leader_epoch: int = -1) -> Any:
    response = call(
        address,
        FetchRequest(
            max_wait=datetime.timedelta(milliseconds=10),  # type: ignore[arg-type]
            min_bytes=0,  # type: ignore[arg-type]
            topics=(
                FetchTopic(
                    topic=topic,  # type: ignore[arg-type]
                    partitions=(
                        FetchPartition(
                            partition=partition,  # type: ignore[arg-type]
                            current_leader_epoch=leader_epoch,  # type: ignore[arg-type]
                            fetch_offset=0,  # type: ignore[arg-type]
                            partition_max_bytes=1 << 20,  # type: ignore[arg-type]
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        ),
    )
    return response.responses[0].partitions[0]


def _list_offsets(address: str, topic: str, partition: int, leader_epoch: int = -1) -> Any:
    response = call(
        address,
        ListOffsetsRequest(
            replica_id=-1,  # type: ignore[arg-type]
            isolation_level=0,  # type: ignore[arg-type]
            topics=(
                ListOffsetsTopic(
                    name=topic,  # type: ignore[arg-type]
                    partitions=(
                        ListOffsetsPartition(
                            partition_index=partition,  # type: ignore[arg-type]
                            current_leader_epoch=leader_epoch,  # type: ignore[arg-type]
                            timestamp=-1,  # type: ignore[arg-type]
                        ),
                    ),
                ),
            ),
        ),
    )
    return response.topics[0].partitions[0]


def test_a_request_to_a_node_that_does_not_lead_the_partition_gets_not_leader_or_follower(
    sandbox: SandboxThread,
) -> None:
    topic = f"leaders-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox, topic, 1, replicas=3)
    ((leader, epoch),) = _leaders(sandbox.bootstrap, topic).values()
    follower = next(node for node in sandbox.addresses if node != leader)
    at_leader, at_follower = sandbox.addresses[leader], sandbox.addresses[follower]

    refused = _produce(at_follower, topic, 0)
    assert refused.error_code == ErrorCode.not_leader_or_follower
    assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (
        leader,
        epoch,
    )
    assert _produce(at_leader, topic, 0).error_code == ErrorCode.none
    assert _fetch(at_follower, topic, 0).error_code == ErrorCode.not_leader_or_follower
    fetched = _fetch(at_leader, topic, 0, epoch)
    assert (fetched.error_code, fetched.high_watermark) == (ErrorCode.none, 1)
    assert _list_offsets(at_follower, topic, 0).error_code == ErrorCode.not_leader_or_follower
    listed = _list_offsets(at_leader, topic, 0, epoch)
    assert (listed.error_code, listed.offset, listed.leader_epoch) == (ErrorCode.none, 1, epoch)

    # Leadership moves: the old leader refuses, a stale epoch is fenced everywhere.
    new_epoch = sandbox.move_leader(topic, 0, follower)
    assert new_epoch == epoch + 1
    assert _leaders(at_leader, topic) == {0: (follower, new_epoch)}
    assert _produce(at_leader, topic, 0).error_code == ErrorCode.not_leader_or_follower
    assert _fetch(at_follower, topic, 0, epoch).error_code == ErrorCode.fenced_leader_epoch
    assert _list_offsets(at_follower, topic, 0, epoch).error_code == ErrorCode.fenced_leader_epoch
    moved = _list_offsets(at_follower, topic, 0, new_epoch)
    assert (moved.error_code, moved.offset) == (ErrorCode.none, 1)


def test_a_group_rpc_to_a_node_that_does_not_coordinate_the_group_gets_not_coordinator(
    sandbox: SandboxThread,
) -> None:
    group = f"coordinated-{uuid.uuid4().hex[:8]}"
    coordinator = _find_coordinator(sandbox.bootstrap, group)
    assert coordinator.error_code == ErrorCode.none
    # Every node names the same coordinator, at its own address.
    for address in sandbox.addresses.values():
        again = _find_coordinator(address, group)
        assert (again.node_id, again.port) == (coordinator.node_id, coordinator.port)
    assert sandbox.addresses[coordinator.node_id] == f"{coordinator.host}:{coordinator.port}"
    other = next(node for node in sandbox.addresses if node != coordinator.node_id)
    # A group nobody has seen: the coordinator says so, the other node is not the one to ask.
    assert (
        _describe_error(sandbox.addresses[coordinator.node_id], group)
        == ErrorCode.group_id_not_found
    )
    assert _describe_error(sandbox.addresses[other], group) == ErrorCode.not_coordinator
    offsets = call(
        sandbox.addresses[other],
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)
        ),
    )
    assert offsets.groups[0].error_code == ErrorCode.not_coordinator

    # The coordinator moves: the new node loads for a moment, the old one refuses.
    sandbox.move_group_coordinator(group, other)
    assert _find_coordinator(sandbox.bootstrap, group).node_id == other
    assert (
        _describe_error(sandbox.addresses[other], group) == ErrorCode.coordinator_load_in_progress
    )
    wait_for(
        lambda: _describe_error(sandbox.addresses[other], group) == 69,
        30,
        what="the new coordinator to finish loading",
    )
    assert (
        _describe_error(sandbox.addresses[coordinator.node_id], group) == ErrorCode.not_coordinator
    )


def test_a_share_partition_s_share_coordinator_is_the_leader_of_its_state_partition(
    sandbox: SandboxThread,
) -> None:
    topic_id = uuid.uuid4()
    key = f"g:{kafka_uuid(topic_id)}:0"
    found = _find_coordinator(sandbox.bootstrap, key, key_type=2)
    state_leaders = _leaders(sandbox.bootstrap, SHARE_STATE_TOPIC)
    assert len(state_leaders) == 50
    assert {leader for leader, _ in state_leaders.values()} == {1, 2, 3}
    partition = abs(java_string_hash(key)) % 50
    assert found.node_id == state_leaders[partition][0]
    target = next(node for node in (1, 2, 3) if node != found.node_id)
    sandbox.move_share_coordinator(key, target)
    assert _find_coordinator(sandbox.bootstrap, key, key_type=2).node_id == target
    assert _leaders(sandbox.bootstrap, SHARE_STATE_TOPIC)[partition] == (
        target,
        state_leaders[partition][1] + 1,
    )


def _api_versions_frame() -> bytes:
    return encode_request(
        ApiVersionsRequest(client_software_name="t", client_software_version="1"), 7, "t"
    )


def _connect(address: str, timeout: float = 5) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def _answers(sock: socket.socket) -> bool:
    """Send ApiVersions; True when its whole response frame comes back."""
    sock.sendall(_api_versions_frame())
    (size,) = struct.unpack(">i", _read(sock, 4))
    return len(_read(sock, size)) == size > 0


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def test_a_stopped_node_refuses_and_stays_in_metadata_until_it_is_fenced(
    sandbox: SandboxThread,
) -> None:
    topic = f"fenced-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox, topic, 3, replicas=3)
    before = _leaders(sandbox.bootstrap, topic)
    victim = 2
    led = {p for p, (leader, _) in before.items() if leader == victim}
    assert led
    group = next(
        f"g{i}" for i in range(1000) if _find_coordinator(sandbox.bootstrap, f"g{i}").node_id == 2
    )
    survivor = sandbox.addresses[1]
    connected = _connect(sandbox.addresses[victim])
    assert _answers(connected)

    started = time.monotonic()
    sandbox.stop_node(victim)
    with pytest.raises(ConnectionResetError):
        _answers(connected)
    connected.close()
    with pytest.raises(ConnectionRefusedError):
        _connect(sandbox.addresses[victim]).close()
    # Not fenced yet: still listed, still the leader and the coordinator.
    assert _nodes(survivor) == [1, 2, 3]
    assert _leaders(survivor, topic) == before
    assert _find_coordinator(survivor, group).node_id == victim

    wait_for(lambda: _nodes(survivor) == [1, 3], 30, what="node 2 to be fenced")
    assert time.monotonic() - started >= SESSION_TIMEOUT_MS / 1000
    after = _leaders(survivor, topic)
    for partition, (leader, epoch) in before.items():
        if partition in led:
            assert after[partition][0] in (1, 3)
            assert after[partition][1] > epoch
        else:
            assert after[partition] == (leader, epoch)
    (metadata_topic,) = _metadata(survivor, topic).topics
    for partition in metadata_topic.partitions:
        assert victim not in partition.isr_nodes
        assert victim in partition.offline_replicas
    moved_to = _find_coordinator(survivor, group).node_id
    assert moved_to in (1, 3)
    wait_for(
        lambda: _describe_error(sandbox.addresses[moved_to], group) == 69,
        30,
        what="the group's new coordinator to answer",
    )

    sandbox.restart_node(victim)
    assert _nodes(survivor) == [1, 2, 3]
    with _connect(sandbox.addresses[victim]) as again:
        assert _answers(again)
    # It leads nothing until a leader election gives it something back.
    assert all(leader != victim for leader, _ in _leaders(survivor, topic).values())
    partition = min(led)
    sandbox.move_leader(topic, partition, victim)
    assert _produce(sandbox.addresses[victim], topic, partition).error_code == ErrorCode.none


def test_a_partition_whose_only_replica_is_fenced_has_no_leader_until_it_returns(
    sandbox: SandboxThread,
) -> None:
    topic = f"single-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox, topic, 3)
    before = _leaders(sandbox.bootstrap, topic)
    partition = next(p for p, (leader, _) in before.items() if leader == 3)
    sandbox.stop_node(3)
    wait_for(lambda: _nodes(sandbox.bootstrap) == [1, 2], 30, what="node 3 to be fenced")
    (found,) = _metadata(sandbox.bootstrap, topic).topics
    offline = found.partitions[partition]
    assert (offline.error_code, offline.leader_id) == (ErrorCode.leader_not_available, -1)
    sandbox.restart_node(3)
    assert _leaders(sandbox.bootstrap, topic)[partition] == (3, before[partition][1] + 2)


def test_a_hung_node_accepts_connections_and_never_answers_until_restarted(
    sandbox: SandboxThread,
) -> None:
    address = sandbox.addresses[3]
    earlier = _connect(address, timeout=0.5)
    assert _answers(earlier)
    started = time.monotonic()
    sandbox.hang_node(3)
    with pytest.raises(TimeoutError):
        _answers(earlier)
    with _connect(address, timeout=0.5) as fresh, pytest.raises(TimeoutError):
        _answers(fresh)
    assert _nodes(sandbox.addresses[1]) == [1, 2, 3]
    wait_for(lambda: _nodes(sandbox.addresses[1]) == [1, 2], 30, what="the hung node to be fenced")
    assert time.monotonic() - started >= SESSION_TIMEOUT_MS / 1000
    sandbox.restart_node(3)
    with pytest.raises(ConnectionResetError):
        _answers(earlier)
    earlier.close()
    with _connect(address) as restarted:
        assert _answers(restarted)
    assert _nodes(sandbox.addresses[1]) == [1, 2, 3]


def test_each_node_lists_the_groups_it_coordinates(sandbox: SandboxThread) -> None:
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    groups = [f"listed-{i}-{uuid.uuid4().hex[:6]}" for i in range(12)]
    sandbox.call(lambda broker: _ensure(broker, groups))
    seen: dict[str, int] = {}
    for node, address in sandbox.addresses.items():
        response = call(address, ListGroupsRequest(states_filter=(), types_filter=()))
        for listed in response.groups:
            assert listed.group_id not in seen
            seen[listed.group_id] = node
    assert set(groups) <= set(seen)
    for group in groups:
        assert seen[group] == _find_coordinator(sandbox.bootstrap, group).node_id
    assert len({seen[group] for group in groups}) > 1


def test_a_node_loading_a_group_coordinator_answers_list_groups_with_no_group(
    sandbox_cluster: StartCluster,
) -> None:
    """Kafka 4.2: one partition loading fails the node's whole ListGroups (issue 23)."""
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    sandbox = sandbox_cluster(3, coordinator_load_ms=1000)
    suffix = uuid.uuid4().hex[:6]
    coordinators: dict[str, int] = {}
    for index in range(1000):  # until every node coordinates two groups
        if all(list(coordinators.values()).count(node) >= 2 for node in (1, 2, 3)):
            break
        group = f"loading-{index}-{suffix}"
        coordinators[group] = _find_coordinator(sandbox.bootstrap, group).node_id
    groups = list(coordinators)
    sandbox.call(lambda broker: _ensure(broker, groups))
    moved = groups[0]
    target = next(node for node in (1, 2, 3) if node != coordinators[moved])
    # Groups of partitions the node has loaded long ago: not listed either meanwhile.
    stays = [group for group in groups if coordinators[group] == target]

    def listed(node: int) -> tuple[int, set[str]]:
        response = call(
            sandbox.addresses[node], ListGroupsRequest(states_filter=(), types_filter=())
        )
        return int(response.error_code), {group.group_id for group in response.groups}

    sandbox.move_group_coordinator(moved, target)
    assert listed(target) == (ErrorCode.coordinator_load_in_progress, set())
    others = [node for node in (1, 2, 3) if node != target]
    assert all(listed(node)[0] == ErrorCode.none for node in others)
    wait_for(lambda: listed(target)[0] == ErrorCode.none, 30, what="the node to finish loading")
    assert {moved, *stays} <= listed(target)[1]


def _ensure(broker: Any, groups: list[str]) -> None:
    """Empty share groups, as an AlterShareGroupOffsets would leave them (no clients needed)."""
    from kshare_cli.sandbox.share import share_groups

    for group in groups:
        share_groups(broker).groups.ensure_group(group)


def test_a_default_single_node_sandbox_is_one_node_leading_everything() -> None:
    with SandboxThread() as single:
        assert single.addresses == {1: single.bootstrap}
        assert _nodes(single.bootstrap) == [1]
        assert _find_coordinator(single.bootstrap, "any-group").node_id == 1
        state = _leaders(single.bootstrap, SHARE_STATE_TOPIC)
        assert set(state.values()) == {(1, 0)}


def test_describe_offsets_says_not_leader_or_follower_while_a_share_coordinator_moves(
    sandbox: SandboxThread,
) -> None:
    """Kafka 4.2, measured: during reassignments the share-partitions answer that for a moment."""
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsRequestPartition,
        AlterShareGroupOffsetsRequestTopic,
    )

    topic = f"moving-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox, topic, 1, replicas=3)
    (described,) = _metadata(sandbox.bootstrap, topic).topics
    group = f"moving-{uuid.uuid4().hex[:8]}"
    coordinator = _find_coordinator(sandbox.bootstrap, group)
    at_coordinator = f"{coordinator.host}:{coordinator.port}"
    wait_for(lambda: _describe_error(at_coordinator, group) == 69, 30, what="the coordinator")
    altered = call(
        at_coordinator,
        AlterShareGroupOffsetsRequest(
            group_id=group,  # type: ignore[arg-type]
            topics=(
                AlterShareGroupOffsetsRequestTopic(
                    topic_name=topic,  # type: ignore[arg-type]
                    partitions=(
                        AlterShareGroupOffsetsRequestPartition(
                            partition_index=0,  # type: ignore[arg-type]
                            start_offset=0,  # type: ignore[arg-type]
                        ),
                    ),
                ),
            ),
        ),
    )
    assert altered.error_code == ErrorCode.none

    def partition_error() -> tuple[int, int]:
        response = call(
            at_coordinator,
            DescribeShareGroupOffsetsRequest(
                groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)
            ),
        )
        (entry,) = response.groups[0].topics[0].partitions
        return int(entry.error_code), int(entry.start_offset)

    assert partition_error() == (ErrorCode.none, 0)
    key = f"{group}:{kafka_uuid(described.topic_id)}:0"
    share_coordinator = _find_coordinator(sandbox.bootstrap, key, key_type=2).node_id
    sandbox.move_share_coordinator(key, next(n for n in (1, 2, 3) if n != share_coordinator))
    assert partition_error() == (ErrorCode.not_leader_or_follower, -1)
    wait_for(
        lambda: partition_error() == (ErrorCode.none, 0), 30, what="the share coordinator to settle"
    )
