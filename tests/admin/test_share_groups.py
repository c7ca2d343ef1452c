"""ShareGroupAdmin against a broker, with share groups made by confluent-kafka's ShareConsumer.

The groups are real: librdkafka's ShareConsumer joins them, consumes and
acknowledges, so what ShareGroupAdmin reports is checked against what an
independent client did (records produced, records accepted), not against the
sandbox's internals. With ``KSHARE_TEST_BOOTSTRAP`` set the same tests run on
that cluster; the v0-only-broker test needs to cap the sandbox's advertised
versions and is skipped there.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from kshare_cli.admin.models import (
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupOffsets,
    TopicPartition,
)
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import UsageError
from kshare_cli.kafka.api_keys import DELETE_SHARE_GROUP_OFFSETS, DESCRIBE_SHARE_GROUP_OFFSETS
from kshare_cli.render.descriptions import render_members, render_states
from kshare_cli.render.offsets import render_offsets
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.wire.client import KafkaClient
from tests.support.records import create_topic, produce
from tests.support.sandbox import read_properties
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

T = TypeVar("T")

HEARTBEAT_MS = 100


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@dataclass
class Bed:
    """The cluster under test and the share groups the module made on it."""

    bootstrap: str
    client_config: dict[str, str]
    settings: ConnectionSettings
    sandbox: SandboxThread | None
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def config(self, **extra: Any) -> dict[str, Any]:
        return {**self.client_config, "bootstrap.servers": self.bootstrap, **extra}

    async def admin_call(self, call: Callable[[ShareGroupAdmin], Coroutine[Any, Any, T]]) -> T:
        async with await KafkaClient.connect(self.settings, timeout_s=15) as client:
            return await call(ShareGroupAdmin(client))

    def ask(self, call: Callable[[ShareGroupAdmin], Coroutine[Any, Any, T]]) -> T:
        return run(self.admin_call(call))


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    real = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if real:
        from kshare_cli.connect.resolve import resolve_settings

        config = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        settings = resolve_settings(
            bootstrap=real,
            command_config=Path(config) if config else None,
            profile=None,
            environ={},
        )
        yield Bed(real, read_properties(config) if config else {}, settings, None)
        return
    # Short heartbeats so a share consumer is assigned its partitions in milliseconds.
    group_settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=HEARTBEAT_MS, share_min_heartbeat_interval_ms=HEARTBEAT_MS
    )
    with SandboxThread(settings=group_settings) as sandbox:
        settings = ConnectionSettings(bootstrap_servers=(sandbox.bootstrap,))
        yield Bed(sandbox.bootstrap, {}, settings, sandbox)


# --------------------------------------------------------------------------- the groups


def _earliest(bed: Bed, group: str) -> None:
    admin = AdminClient(bed.config())
    entry = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _share_consumer(bed: Bed, group: str, topic: str, client_id: str) -> ShareConsumer:
    consumer = ShareConsumer(bed.config(**{"group.id": group, "client.id": client_id}))
    consumer.subscribe([topic])
    return consumer


def _accept_all(bed: Bed, group: str, topic: str, expected: int) -> None:
    """Consume ``expected`` records in implicit mode (each poll accepts the previous one's)."""
    consumer = _share_consumer(bed, group, topic, "kshare-admin-test-drain")
    seen: set[tuple[int | None, int | None]] = set()
    try:

        def drained() -> bool:
            for message in consumer.poll(0.2):
                if message.error() is None:
                    seen.add((message.partition(), message.offset()))
            return len(seen) >= expected

        wait_for(drained, timeout=60, interval=0, what=f"{expected} records in {group}")
        consumer.commit_sync(10)
    finally:
        consumer.close()


@dataclass(frozen=True)
class Groups:
    topic: str
    drained: str  # consumed 10+4 records, closed; then 5+2 more produced: lag 5 and 2
    live: str  # one member still in the group, assigned both partitions
    live_client_id: str
    missing: str


@pytest.fixture(scope="module")
def groups(bed: Bed) -> Iterator[Groups]:
    topic = f"kshare-admin-{bed.suffix}"
    drained = f"kshare-admin-drained-{bed.suffix}"
    live = f"kshare-admin-live-{bed.suffix}"
    create_topic(bed.config(), topic, 2)
    _earliest(bed, drained)
    produce(bed.config(), topic, {0: 10, 1: 4})
    _accept_all(bed, drained, topic, 14)
    produce(bed.config(), topic, {0: 5, 1: 2})

    client_id = f"kshare-admin-live-client-{bed.suffix}"
    consumer = _share_consumer(bed, live, topic, client_id)
    try:

        def assigned() -> bool:
            consumer.poll(0.1)
            result = bed.ask(lambda admin: admin.describe_groups([live]))
            group = result.get(live)
            return (
                isinstance(group, GroupDescription)
                and len(group.members) == 1
                and group.members[0].partition_count == 2
            )

        wait_for(assigned, timeout=60, interval=0, what="the live member's assignment")
        yield Groups(topic, drained, live, client_id, f"kshare-admin-missing-{bed.suffix}")
    finally:
        consumer.close()


# --------------------------------------------------------------------------- list


def test_list_groups_names_both_groups_with_their_states(bed: Bed, groups: Groups) -> None:
    listing = bed.ask(lambda admin: admin.list_groups())
    assert listing.ok()
    states = {group.group_id: group.state for group in listing}
    assert states[groups.drained] == "Empty"
    assert states[groups.live] == "Stable"
    assert list(listing.group_ids()) == sorted(listing.group_ids())
    assert groups.missing not in states


def test_list_groups_filters_by_state_case_insensitively(bed: Bed, groups: Groups) -> None:
    stable = bed.ask(lambda admin: admin.list_groups(["stable"]))
    empty = bed.ask(lambda admin: admin.list_groups(["EMPTY"]))
    both = bed.ask(lambda admin: admin.list_groups(["Stable,empty"]))
    assert stable.states_filter == ("Stable",)
    assert groups.live in stable.group_ids() and groups.drained not in stable.group_ids()
    assert groups.drained in empty.group_ids() and groups.live not in empty.group_ids()
    assert {groups.live, groups.drained} <= set(both.group_ids())
    assert {group.state for group in stable} == {"Stable"}


def test_list_groups_refuses_a_state_share_groups_cannot_be_in(bed: Bed) -> None:
    with pytest.raises(UsageError, match="Invalid state list 'Reconciling'"):
        bed.ask(lambda admin: admin.list_groups(["Reconciling"]))


def test_all_group_ids_is_every_share_group(bed: Bed, groups: Groups) -> None:
    ids = bed.ask(lambda admin: admin.all_group_ids())
    assert {groups.drained, groups.live} <= set(ids)
    assert list(ids) == sorted(ids)


# --------------------------------------------------------------------------- describe


def test_describe_a_live_group_members_assignment_and_epochs(bed: Bed, groups: Groups) -> None:
    async def describe(admin: ShareGroupAdmin) -> Any:
        metadata = await admin.client.metadata([])
        return await admin.describe_groups([groups.live]), metadata

    descriptions, metadata = bed.ask(describe)
    assert descriptions.ok()
    (group,) = descriptions.succeeded()
    assert group.state == "Stable"
    assert group.assignor == "simple"
    assert group.coordinator is not None
    broker = metadata.brokers[group.coordinator.node_id]
    assert (group.coordinator.host, group.coordinator.port) == (broker.host, broker.port)
    (member,) = group.members
    assert member.client_id == groups.live_client_id
    assert member.subscribed_topics == (groups.topic,)
    assert member.assignment == {groups.topic: (0, 1)}
    assert member.member_epoch >= 1
    assert group.group_epoch >= 1 and group.assignment_epoch >= 1
    assert member.host  # the broker's view of the client's address

    members = render_members(descriptions, "plain").splitlines()
    assert members[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
    ]
    assert members[2].split() == [
        groups.live,
        member.member_id,
        member.host,
        groups.live_client_id,
        "2",
        f"{groups.topic}:0,1",
    ]
    state = render_states(descriptions, "plain").splitlines()
    coordinator = f"{group.coordinator.host}:{group.coordinator.port}  ({broker.node_id})"
    assert state[2].startswith(f"{groups.live:<15} {coordinator:<25} Stable          1")


def test_describe_an_empty_group(bed: Bed, groups: Groups) -> None:
    descriptions = bed.ask(lambda admin: admin.describe_groups([groups.drained]))
    (group,) = descriptions.succeeded()
    assert group.state == "Empty"
    assert group.members == ()


def test_describe_unknown_group_is_not_found_for_that_group_only(bed: Bed, groups: Groups) -> None:
    descriptions = bed.ask(
        lambda admin: admin.describe_groups([groups.missing, groups.live, groups.live])
    )
    assert descriptions.group_ids() == tuple(sorted([groups.missing, groups.live]))
    assert not descriptions.ok()
    (failure,) = descriptions.errors()
    assert failure.group_id == groups.missing
    assert failure.not_found
    assert failure.error.name == "GROUP_ID_NOT_FOUND"
    assert str(failure) == f"share group '{groups.missing}': not found"
    assert isinstance(descriptions.get(groups.live), GroupDescription)


# --------------------------------------------------------------------------- offsets


def test_offsets_lag_from_the_broker(bed: Bed, groups: Groups) -> None:
    offsets = bed.ask(lambda admin: admin.list_share_partition_offsets([groups.drained]))
    assert offsets.ok()
    (group,) = offsets.succeeded()
    by_partition = {offset.partition: offset for offset in group.partitions}
    assert [offset.topic for offset in group.partitions] == [groups.topic] * 2
    # 10 + 5 and 4 + 2 records produced; the first 10 and 4 were accepted.
    assert by_partition[0].end_offset == 15 and by_partition[1].end_offset == 6
    assert (by_partition[0].lag, by_partition[1].lag) == (5, 2)
    assert {offset.lag_source for offset in group.partitions} == {"broker"}
    assert group.total_lag == 7 and group.total_lag_source == "broker"
    for offset in group.partitions:
        assert offset.start_offset is not None and offset.leader_epoch is not None
        assert offset.error is None

    plain = render_offsets(offsets, "plain").splitlines()
    assert plain[2].split()[-1] == "5" and plain[3].split()[-1] == "2"


def test_offsets_of_unknown_group_is_not_found_not_no_information(bed: Bed, groups: Groups) -> None:
    offsets = bed.ask(
        lambda admin: admin.list_share_partition_offsets([groups.drained, groups.missing])
    )
    assert offsets.group_ids() == tuple(sorted([groups.drained, groups.missing]))
    (failure,) = offsets.errors()
    assert failure.group_id == groups.missing and failure.not_found
    drained = offsets.get(groups.drained)
    assert isinstance(drained, GroupOffsets) and drained.total_lag == 7
    # plain shows the good group only; the failure is the command's to report.
    assert groups.missing not in render_offsets(offsets, "plain")


def test_offsets_without_end_offsets_still_carry_the_brokers_lag(bed: Bed, groups: Groups) -> None:
    offsets = bed.ask(
        lambda admin: admin.list_share_partition_offsets([groups.drained], end_offsets=False)
    )
    (group,) = offsets.succeeded()
    assert [offset.end_offset for offset in group.partitions] == [None, None]
    assert group.total_lag == 7


def test_log_end_offsets_one_answer_per_partition(bed: Bed, groups: Groups) -> None:
    wanted = [
        TopicPartition(groups.topic, 0),
        TopicPartition(groups.topic, 1),
        TopicPartition(groups.topic, 9),
        TopicPartition(f"no-such-topic-{bed.suffix}", 0),
    ]
    ends = bed.ask(lambda admin: admin.log_end_offsets(wanted))
    assert dict(ends.offsets) == {wanted[0]: 15, wanted[1]: 6}
    assert {tp: error.name for tp, error in ends.errors().items()} == {
        wanted[2]: "UNKNOWN_TOPIC_OR_PARTITION",
        wanted[3]: "UNKNOWN_TOPIC_OR_PARTITION",
    }
    assert not ends.ok()


def test_group_whose_offsets_were_deleted_has_no_offset_information(bed: Bed) -> None:
    topic = f"kshare-admin-deleted-{bed.suffix}"
    group = f"kshare-admin-deleted-g-{bed.suffix}"
    create_topic(bed.config(), topic, 1)
    _earliest(bed, group)
    produce(bed.config(), topic, {0: 3})
    _accept_all(bed, group, topic, 3)

    async def delete_then_list(admin: ShareGroupAdmin) -> Any:
        client = admin.client
        coordinator = (await client.find_coordinators([group]))[group]
        _, response = await client.request(
            DELETE_SHARE_GROUP_OFFSETS,
            {"group_id": group, "topics": [{"topic_name": topic}]},
            node=getattr(coordinator, "node_id", None),
        )
        assert int(response.error_code) == 0, response
        return await admin.list_share_partition_offsets([group])

    offsets = bed.ask(delete_then_list)
    assert offsets.ok()
    (result,) = offsets.succeeded()
    assert result.partitions == () and result.total_lag is None
    assert render_offsets(offsets, "plain") == (
        f"\nShare group '{group}' has no offset information.\n"
    )


# --------------------------------------------------------------------------- old brokers


@contextmanager
def _offsets_capped_at_v0(bed: Bed) -> Iterator[None]:
    """Make the sandbox advertise DescribeShareGroupOffsets v0 only, as 4.1 brokers do."""
    sandbox = bed.sandbox
    if sandbox is None:
        pytest.skip("on a real cluster: its advertised versions cannot be capped")
    assert sandbox.broker is not None
    original = type(sandbox.broker).supported_versions

    def capped(broker: Any) -> dict[int, tuple[int, int]]:
        versions = dict(original(broker))
        low, _ = versions[DESCRIBE_SHARE_GROUP_OFFSETS]
        versions[DESCRIBE_SHARE_GROUP_OFFSETS] = (low, 0)
        return versions

    sandbox.call(lambda broker: setattr(broker, "supported_versions", lambda: capped(broker)))
    try:
        yield
    finally:
        sandbox.call(lambda broker: delattr(broker, "supported_versions"))


def test_v0_only_broker_gives_an_upper_bound_marked_as_such(bed: Bed, groups: Groups) -> None:
    with _offsets_capped_at_v0(bed):

        async def ask(admin: ShareGroupAdmin) -> Any:
            assert admin.client.api_version(DESCRIBE_SHARE_GROUP_OFFSETS) == 0
            return await admin.list_share_partition_offsets([groups.drained])

        offsets = bed.ask(ask)
    (group,) = offsets.succeeded()
    true_lag = {0: 5, 1: 2}
    for offset in group.partitions:
        assert offset.lag_source == "bound"
        assert offset.start_offset is not None and offset.end_offset is not None
        assert offset.lag == offset.end_offset - offset.start_offset
        assert offset.lag >= true_lag[offset.partition]
        assert offset.broker_lag is None
    assert group.total_lag_source == "bound"
    # Kafka's layout prints no lag it was not given; the table marks the bound.
    assert [line.split()[-1] for line in render_offsets(offsets, "plain").splitlines()[2:]] == [
        "-",
        "-",
    ]
    table = render_offsets(offsets, "table")
    assert f"≤{group.partitions[0].lag}" in table and "upper bound" in table


def test_broker_without_share_groups_is_incompatible() -> None:
    if os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        pytest.skip("on a real cluster: this needs a broker without share groups")
    with SandboxThread(share_groups=False) as old:
        settings = ConnectionSettings(bootstrap_servers=(old.bootstrap,))

        async def describe() -> GroupDescriptions:
            async with await KafkaClient.connect(settings, timeout_s=10) as client:
                return await ShareGroupAdmin(client).describe_groups(["g"])

        # The coordinator's incompatibility fails its groups, not the whole fan-out
        # (the commands still refuse a cluster whose bootstrap broker lacks it: exit 3).
        (failure,) = run(describe()).errors()
        assert failure.error.name == "UNSUPPORTED_VERSION"
        assert "does not support ShareGroupDescribe" in str(failure)


def test_no_groups_asked_is_no_round_trip(bed: Bed) -> None:
    async def ask(admin: ShareGroupAdmin) -> tuple[int, int]:
        before = admin.client.round_trips
        described = await admin.describe_groups([])
        offsets = await admin.list_share_partition_offsets([])
        assert len(described) == 0 and len(offsets) == 0
        return before, admin.client.round_trips

    before, after = bed.ask(ask)
    assert before == after


def test_failure_type_is_a_group_failure(bed: Bed, groups: Groups) -> None:
    result = bed.ask(lambda admin: admin.describe_groups([groups.missing])).get(groups.missing)
    assert isinstance(result, GroupFailure)
