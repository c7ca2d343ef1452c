"""KafkaClient against a broker: negotiation, metadata, coordinators, fan-out, faults, deadlines.

Everything here runs on the sandbox or, with KSHARE_TEST_BOOTSTRAP, on a real
cluster; the tests that need the broker to misbehave on cue use a private
sandbox and are skipped on a real cluster.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import (
    ConnectionFailed,
    ExitCode,
    IncompatibleBroker,
    TimedOut,
    exit_code_for,
)
from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_GROUPS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    FIND_COORDINATOR,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_GROUPS,
    LIST_OFFSETS,
    METADATA,
    SHARE_GROUP_DESCRIBE,
)
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.wire.client import BOOTSTRAP_STAGGER_S, KafkaClient
from kshare_cli.wire.cluster import BrokerNode, our_versions
from kshare_cli.wire.errors import KafkaError
from tests.support.raw import call
from tests.support.records import create_topic
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import PROMPTLY_S
from tests.wire.conftest import Handler, plaintext_settings, replaced_handler, run

#: The APIs kshare's admin commands send, whose negotiated version the client must pick.
_ADMIN_KEYS = (
    LIST_OFFSETS,
    METADATA,
    FIND_COORDINATOR,
    LIST_GROUPS,
    DESCRIBE_CONFIGS,
    DELETE_GROUPS,
    INCREMENTAL_ALTER_CONFIGS,
    DESCRIBE_CLUSTER,
    SHARE_GROUP_DESCRIBE,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
)


def describe_body(version: int, group_ids: Sequence[str]) -> dict[str, Any]:
    return {"group_ids": list(group_ids), "include_authorized_operations": False}


def describe_split(response: Any) -> dict[str, tuple[int, Any]]:
    return {group.group_id: (int(group.error_code), group) for group in response.groups}


async def join_share_group(client: KafkaClient, group_id: str, topic: str) -> None:
    """Make ``group_id`` a live share group with one member, as a share consumer would."""
    coordinator = (await client.find_coordinators([group_id]))[group_id]
    assert isinstance(coordinator, BrokerNode)
    _, response = await client.request(
        76,
        {
            "group_id": group_id,
            # Kafka's Uuid.toString(), as Java share consumers make their member ids
            "member_id": base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode(),
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": [topic],
        },
        node=coordinator.node_id,
    )
    assert int(response.error_code) == 0, response


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A port that completes TCP handshakes (the kernel's backlog) and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


# -- connecting and negotiating ---------------------------------------------------


def test_connect_picks_the_highest_version_both_sides_speak(
    cluster: Cluster, cluster_settings: ConnectionSettings
) -> None:
    if cluster.client_config:
        pytest.skip("the independent ApiVersions probe speaks PLAINTEXT only")
    probe = call(
        cluster.bootstrap,
        ApiVersionsRequest(client_software_name="probe", client_software_version="1"),
    )
    theirs = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in probe.api_keys}

    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            assert client.round_trips == 1  # ApiVersions, nothing else
            for api_key in _ADMIN_KEYS:
                ours = our_versions(api_key)
                assert ours is not None
                assert client.api_version(api_key) == min(ours[1], theirs[api_key][1]), api_key
            assert client.supports(SHARE_GROUP_DESCRIBE)

    run(scenario())


def test_a_version_outside_what_the_broker_speaks_names_the_api(
    cluster_settings: ConnectionSettings,
) -> None:
    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            assert not client.supports(SHARE_GROUP_DESCRIBE, min_version=9)
            with pytest.raises(IncompatibleBroker, match=r"ShareGroupDescribe \(API 77\)"):
                client.api_version(SHARE_GROUP_DESCRIBE, min_version=9)

    run(scenario())


def test_a_broker_without_share_groups_is_reported_as_too_old() -> None:
    if os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        pytest.skip("needs a broker without share groups")

    async def scenario(bootstrap: str) -> None:
        async with await KafkaClient.connect(plaintext_settings(bootstrap), timeout_s=10) as client:
            assert not client.supports(SHARE_GROUP_DESCRIBE)
            with pytest.raises(IncompatibleBroker) as raised:
                client.api_version(SHARE_GROUP_DESCRIBE)
            assert str(raised.value) == (
                f"broker at {bootstrap} does not support ShareGroupDescribe (API 77); "
                "share groups need Apache Kafka 4.1 or later"
            )
            assert exit_code_for(raised.value) is ExitCode.CONNECTION
            # In a fan-out, an incompatible coordinator fails only its own groups.
            results = await client.fan_out_to_coordinators(
                SHARE_GROUP_DESCRIBE, ["g"], describe_body, describe_split
            )
            assert isinstance(results["g"], KafkaError)
            assert results["g"].name == "UNSUPPORTED_VERSION"
            assert "does not support ShareGroupDescribe" in str(results["g"].message)
            assert str(results["g"].message).startswith(f"broker 1 ({bootstrap}): ")

    with SandboxThread(share_groups=False) as old:
        run(scenario(old.bootstrap))


def test_unreachable_bootstrap_servers_fail_fast_and_are_named() -> None:
    servers = f"127.0.0.1:{closed_port()},127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(ConnectionFailed) as raised:
        run(KafkaClient.connect(plaintext_settings(servers), timeout_s=30))
    assert time.monotonic() - started < PROMPTLY_S  # refused at once, not after the 30 s
    message = str(raised.value)
    assert f"({servers.replace(',', ', ')})" in message
    assert "connection refused" in message
    assert "\n" not in message
    assert exit_code_for(raised.value) is ExitCode.CONNECTION


def test_a_listener_that_never_answers_times_out_within_the_timeout(silent_listener: str) -> None:
    started = time.monotonic()
    with pytest.raises(TimedOut) as raised:
        run(KafkaClient.connect(plaintext_settings(silent_listener), timeout_s=0.5))
    assert time.monotonic() - started < PROMPTLY_S  # the 0.5 s, not a default of its own
    assert silent_listener in str(raised.value)
    assert exit_code_for(raised.value) is ExitCode.TIMEOUT


def test_the_next_bootstrap_server_is_tried_when_one_is_down(cluster: Cluster) -> None:
    if cluster.client_config:
        pytest.skip("plaintext only")
    servers = f"127.0.0.1:{closed_port()},{cluster.bootstrap}"

    async def scenario() -> None:
        async with await KafkaClient.connect(plaintext_settings(servers), timeout_s=10) as client:
            assert (await client.metadata()).brokers

    run(scenario())


def test_a_silent_bootstrap_server_costs_a_stagger_not_half_the_timeout(
    cluster: Cluster, silent_listener: str
) -> None:
    if cluster.client_config:
        pytest.skip("plaintext only")
    servers = f"{silent_listener},{cluster.bootstrap}"

    async def scenario() -> None:
        started = time.monotonic()
        async with await KafkaClient.connect(plaintext_settings(servers), timeout_s=30) as client:
            # The next server was tried BOOTSTRAP_STAGGER_S after the silent one,
            # and answered at once (it was 15 s, half of --timeout, before).
            elapsed = time.monotonic() - started
            assert BOOTSTRAP_STAGGER_S <= elapsed < BOOTSTRAP_STAGGER_S + PROMPTLY_S
            assert (await client.metadata([])).brokers

    run(scenario())


# -- metadata ---------------------------------------------------------------------


def test_metadata_describes_brokers_and_topics_without_creating_any(
    cluster: Cluster, cluster_settings: ConnectionSettings, unique: str
) -> None:
    topic = f"wire-md-{unique}"
    missing = f"wire-missing-{unique}"
    create_topic(cluster, topic, 3)

    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            metadata = await client.metadata([topic, missing])
            assert metadata.cluster_id
            assert metadata.brokers
            described = metadata.topics[topic]
            assert sorted(described.partitions) == [0, 1, 2]
            assert described.error_code == 0
            assert described.topic_id != uuid.UUID(int=0)
            assert all(p.leader_id in metadata.brokers for p in described.partitions.values())
            assert metadata.topic_by_id(described.topic_id) == described
            assert metadata.topics[missing].error_code == ErrorCode.unknown_topic_or_partition
            everything = await client.metadata(refresh=True)
            assert topic in everything.topics
            assert missing not in everything.topics

            before = client.round_trips
            assert (await client.metadata([topic])).topics[topic] == described
            assert client.round_trips == before  # answered from the cache
            await client.metadata([topic], refresh=True)
            assert client.round_trips == before + 1

            # The same question asked side by side while it is on its way: one request
            # (a thousand groups read at once each asked for their topic's metadata).
            client.metadata_max_age_s = 0.0
            before = client.round_trips
            answers = await asyncio.gather(*(client.metadata([topic, missing]) for _ in range(5)))
            assert client.round_trips == before + 1
            assert all(answer.topics[topic] == described for answer in answers)

    run(scenario())


def test_requests_to_a_node_reuse_the_bootstrap_connection(
    cluster_settings: ConnectionSettings,
) -> None:
    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            metadata = await client.metadata([])
            node = min(metadata.brokers.values(), key=lambda n: str(n) not in
                       cluster_settings.bootstrap_servers)  # fmt: skip
            before = client.round_trips
            version, response = await client.request(
                METADATA,
                {
                    "topics": [],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
                node=node.node_id,
            )
            assert version == client.api_version(METADATA)
            assert {int(b.node_id) for b in response.brokers} == set(metadata.brokers)
            if str(node) in cluster_settings.bootstrap_servers:
                assert client.round_trips == before + 1  # no new connection, no ApiVersions

    run(scenario())


def test_concurrent_requests_are_matched_to_their_answers(
    cluster_settings: ConnectionSettings,
) -> None:
    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            groups = [f"concurrent-{i}-{uuid.uuid4().hex[:6]}" for i in range(20)]

            async def find(group_id: str) -> str:
                _, response = await client.request(
                    FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [group_id]}
                )
                return str(response.coordinators[0].key)

            assert await asyncio.gather(*(find(g) for g in groups)) == groups

    run(scenario())


# -- coordinators and fan-out -------------------------------------------------------


def test_fifty_coordinators_are_found_in_one_round_trip(
    cluster_settings: ConnectionSettings, unique: str
) -> None:
    groups = [f"wire-fc-{unique}-{i}" for i in range(50)]

    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            assert client.api_version(FIND_COORDINATOR) >= 4
            brokers = (await client.metadata([])).brokers
            before = client.round_trips
            found = await client.find_coordinators(groups)
            assert client.round_trips == before + 1
            assert list(found) == groups
            for node in found.values():
                assert isinstance(node, BrokerNode)
                assert node.node_id in brokers
            again = await client.find_coordinators(groups[:10])
            assert client.round_trips == before + 1  # cached
            assert again == {g: found[g] for g in groups[:10]}

    run(scenario())


def test_a_broker_without_batched_find_coordinator_is_asked_once_per_group(
    sandbox: SandboxThread,
) -> None:
    def before_kip_699(broker: Broker) -> None:
        offered = broker.supported_versions()
        broker.supported_versions = lambda: {**offered, FIND_COORDINATOR: (0, 3)}  # type: ignore[method-assign]

    sandbox.call(before_kip_699)
    groups = ["a", "b", "c"]

    async def scenario() -> None:
        async with await KafkaClient.connect(
            plaintext_settings(sandbox.bootstrap), timeout_s=10
        ) as client:
            assert client.api_version(FIND_COORDINATOR) == 3
            before = client.round_trips
            found = await client.find_coordinators(groups)
            assert client.round_trips - before == 3
            assert all(isinstance(node, BrokerNode) for node in found.values())
            assert list(found) == groups

    run(scenario())


def test_fan_out_returns_each_groups_result_or_error(
    cluster: Cluster, cluster_settings: ConnectionSettings, unique: str
) -> None:
    topic = f"wire-fan-{unique}"
    live, absent = f"wire-live-{unique}", f"wire-absent-{unique}"
    create_topic(cluster, topic, 1)

    async def scenario() -> None:
        async with await KafkaClient.connect(cluster_settings, timeout_s=10) as client:
            await join_share_group(client, live, topic)
            client_coordinators = await client.find_coordinators([live, absent])
            coordinators = {node for node in client_coordinators.values()}
            before = client.round_trips
            results = await client.fan_out_to_coordinators(
                SHARE_GROUP_DESCRIBE, [live, absent, live], describe_body, describe_split
            )
            assert client.round_trips == before + len(coordinators)  # coordinators cached
            assert list(results) == [live, absent]
            assert results[live].group_id == live
            assert [m.client_id for m in results[live].members] == [cluster_settings.client_id]
            error = results[absent]
            assert isinstance(error, KafkaError)
            assert (error.code, error.name) == (ErrorCode.group_id_not_found, "GROUP_ID_NOT_FOUND")

    run(scenario())


def test_fan_out_refinds_a_moved_coordinator_and_retries_only_that_group(
    sandbox: SandboxThread, unique: str
) -> None:
    topic, moved, stays = f"t-{unique}", f"moved-{unique}", f"stays-{unique}"
    seen: list[list[str]] = []

    def once_not_coordinator(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            seen.append([str(g) for g in request.payload.group_ids])
            if len(seen) > 1:
                return response
            groups = tuple(
                dataclasses.replace(g, error_code=ErrorCode(ErrorCode.not_coordinator))
                if g.group_id == moved
                else g
                for g in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    async def scenario() -> None:
        settings = plaintext_settings(sandbox.bootstrap)
        async with await KafkaClient.connect(settings, timeout_s=10) as client:
            await client.metadata([topic])  # auto-creates on the sandbox
            await join_share_group(client, moved, topic)
            before = client.round_trips
            with replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, once_not_coordinator):
                results = await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE, [moved, stays], describe_body, describe_split
                )
            # FindCoordinator for `stays` (`moved` is cached since the join), the
            # describe, FindCoordinator for `moved` again, the describe of `moved` alone.
            assert seen == [[moved, stays], [moved]]
            assert results[moved].group_id == moved
            assert int(results[moved].error_code) == 0
            assert isinstance(results[stays], KafkaError)
            assert client.round_trips - before == 4

    run(scenario())


def test_a_loading_coordinator_is_asked_again_with_growing_backoff(
    sandbox: SandboxThread, unique: str
) -> None:
    group = f"loading-{unique}"
    calls: list[float] = []

    def loading_three_times(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            calls.append(time.monotonic())
            if len(calls) > 3:
                return response
            groups = tuple(
                dataclasses.replace(g, error_code=ErrorCode(ErrorCode.coordinator_load_in_progress))
                for g in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    async def scenario() -> None:
        async with await KafkaClient.connect(
            plaintext_settings(sandbox.bootstrap), timeout_s=10
        ) as client:
            with replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, loading_three_times):
                results = await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE, [group], describe_body, describe_split
                )
            assert isinstance(results[group], KafkaError)
            assert results[group].code == ErrorCode.group_id_not_found
            gaps = [later - earlier for earlier, later in zip(calls, calls[1:], strict=False)]
            assert len(gaps) == 3
            assert gaps[0] >= 0.045 and gaps[2] > gaps[0]  # 50 ms, then doubling

    run(scenario())


def test_a_coordinator_that_keeps_moving_fails_its_group_naming_the_error(
    sandbox: SandboxThread, unique: str
) -> None:
    asked: list[Request] = []

    def always_not_coordinator(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            asked.append(request)
            groups = tuple(
                dataclasses.replace(g, error_code=ErrorCode(ErrorCode.not_coordinator))
                for g in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    async def scenario() -> None:
        async with await KafkaClient.connect(
            plaintext_settings(sandbox.bootstrap), timeout_s=0.6
        ) as client:
            started = time.monotonic()
            with replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, always_not_coordinator):
                results = await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE, [f"g-{unique}"], describe_body, describe_split
                )
            # Asked again for half of the time left, then the group's last error
            # is its answer: the call itself ends, with whatever else it found,
            # rather than failing with the 0.6 s deadline.
            assert len(asked) >= 2
            assert results[f"g-{unique}"].name == "NOT_COORDINATOR"
            assert time.monotonic() - started < PROMPTLY_S

    run(scenario())


# -- dropped connections and silent brokers ----------------------------------------


def _drop_connection_once(dropped: list[int]) -> Any:
    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            if not dropped:
                dropped.append(request.correlation_id)
                raise ConnectionResetError("test: broker drops the connection mid-request")
            return await original(broker, request, connection)

        return handler

    return make


def test_a_connection_dropped_mid_request_is_reopened_and_the_request_retried(
    sandbox: SandboxThread,
) -> None:
    dropped: list[int] = []

    async def scenario() -> None:
        async with await KafkaClient.connect(
            plaintext_settings(sandbox.bootstrap), timeout_s=10
        ) as client:
            before = client.round_trips
            with replaced_handler(sandbox, METADATA, _drop_connection_once(dropped)):
                metadata = await client.metadata([])
            assert dropped
            assert metadata.brokers
            # the lost Metadata, ApiVersions on the new connection, Metadata again
            assert client.round_trips - before == 3

    run(scenario())


def test_a_coordinator_connection_dropped_mid_fan_out_is_retried(
    sandbox: SandboxThread, unique: str
) -> None:
    dropped: list[int] = []

    async def scenario() -> None:
        async with await KafkaClient.connect(
            plaintext_settings(sandbox.bootstrap), timeout_s=10
        ) as client:
            with replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, _drop_connection_once(dropped)):
                results = await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE, [f"g-{unique}"], describe_body, describe_split
                )
            assert dropped
            assert results[f"g-{unique}"].code == ErrorCode.group_id_not_found

    run(scenario())


def test_a_broker_that_stops_answering_times_out_within_the_timeout(
    sandbox: SandboxThread,
) -> None:
    def hang(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            await asyncio.Event().wait()

        return handler

    async def scenario() -> None:
        async with await KafkaClient.connect(
            plaintext_settings(sandbox.bootstrap), timeout_s=0.5
        ) as client:
            started = time.monotonic()
            with (
                replaced_handler(sandbox, METADATA, hang),
                pytest.raises(TimedOut, match=r"Metadata did not finish within 0.5 s"),
            ):
                await client.metadata()
            assert time.monotonic() - started < PROMPTLY_S  # the 0.5 s, not another deadline

    run(scenario())


def test_a_closed_client_refuses_requests(cluster_settings: ConnectionSettings) -> None:
    async def scenario() -> None:
        client = await KafkaClient.connect(cluster_settings, timeout_s=10)
        await client.close()
        with pytest.raises(ConnectionFailed, match="closed"):
            await client.metadata()

    run(scenario())
