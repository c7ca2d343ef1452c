"""InflightService against a broker: the admin RPCs and the state topic joined per share-partition.

A confluent-kafka ShareConsumer in explicit mode releases, rejects and accepts
chosen records of one group; the service must report the same offsets and lag as
ShareGroupAdmin and, from ``__share_group_state``, windows that show those
decisions. A state topic that cannot be read is modelled by a StateSource that
raises StateTopicUnavailable (the sandbox has no ACLs; the command-level tests
refuse the state topic on the wire instead): the admin half must still answer.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Collection, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kshare_cli.admin.inflight import GroupInflight, GroupNotFound, GroupSummary
from kshare_cli.admin.models import GroupFailure, GroupOffsets
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import ExitCode
from kshare_cli.kafka.api_keys import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
    LIST_OFFSETS,
    SHARE_GROUP_DESCRIBE,
)
from kshare_cli.services import inflight as inflight_service
from kshare_cli.services.inflight import InflightService
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.state.sources import StateSource, TailingStateSource
from kshare_cli.state.tailer import StateTopicUnavailable
from kshare_cli.state.window import WindowState
from kshare_cli.wire.client import KafkaClient
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for

T = TypeVar("T")

RECORDS = {("t", 0): 5, ("t", 1): 3, ("u", 0): 2}
PLAN = {("t", 0, 0): AcknowledgeType.RELEASE, ("t", 1, 1): AcknowledgeType.REJECT}
QUEUED = 2  # produced to t:0 after the consumer left


@dataclass(frozen=True)
class Bed:
    settings: ConnectionSettings
    group: str
    topics: Mapping[str, str]
    before: Mapping[SharePartitionKey, SharePartitionState]  # a source's first refresh
    after: Mapping[SharePartitionKey, SharePartitionState]  # the same source, later
    delivered: Mapping[tuple[str, int, int], int]  # the highest delivery count the consumer saw

    def ask(self, call: Callable[[ShareGroupAdmin], Coroutine[Any, Any, T]]) -> T:
        async def work() -> T:
            async with await KafkaClient.connect(self.settings, timeout_s=15) as client:
                return await call(ShareGroupAdmin(client))

        return asyncio.run(work())

    def inflight(self, state: StateSource | None, *topics: str) -> GroupInflight:
        return self.ask(lambda admin: InflightService(admin, state).group(self.group, topics))


def _produce(cluster: Cluster, topic: str, partition: int, count: int) -> None:
    producer = Producer(cluster.config(**{"linger.ms": 100}))
    for index in range(count):
        producer.produce(topic, value=f"v{index}".encode(), partition=partition)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def bed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    suffix = uuid.uuid4().hex[:8]
    topics = {"t": f"kshare-admin-inflight-t-{suffix}", "u": f"kshare-admin-inflight-u-{suffix}"}
    group = f"kshare-admin-inflight-{suffix}"
    settings = cluster.settings(tmp_path_factory.mktemp("inflight-admin"))
    admin = AdminClient(cluster.config())
    for future in admin.create_topics(
        [NewTopic(topics["t"], 2, 1), NewTopic(topics["u"], 1, 1)]
    ).values():
        future.result(30)
    entry = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    for (name, partition), count in RECORDS.items():
        _produce(cluster, topics[name], partition, count)

    # One source for the whole module: its first refresh (a catch-up) happens before
    # the group has any state, its second (a poll) after.
    source = TailingStateSource(settings.confluent_config())
    before = source.refresh([group], 15)
    name_of = {real: name for name, real in topics.items()}
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe(list(topics.values()))
    seen: set[tuple[str, int, int]] = set()
    delivered: dict[tuple[str, int, int], int] = {}
    try:

        def consumed() -> bool:
            records = [m for m in consumer.poll(0.1) if m.error() is None]
            for message in records:
                position = (name_of[str(message.topic())], message.partition(), message.offset())
                assert position[1] is not None and position[2] is not None
                key = (position[0], int(position[1]), int(position[2]))
                seen.add(key)
                delivered[key] = max(delivered.get(key, 0), int(message.delivery_count() or 0))
                consumer.acknowledge(message, PLAN.get(key, AcknowledgeType.ACCEPT))
            if records:
                assert not any(consumer.commit_sync(10).values())
            return len(seen) == sum(RECORDS.values())

        wait_for(consumed, timeout=90, interval=0, what="every record delivered")
    finally:
        consumer.close()
    _produce(cluster, topics["t"], 0, QUEUED)

    def written() -> Mapping[SharePartitionKey, SharePartitionState] | None:
        states = source.refresh([group], 15)
        return states if len(states) == len(RECORDS) else None

    after = wait_for(written, timeout=30, what="the group's state written")
    try:
        yield Bed(settings, group, topics, before, after, delivered)
    finally:
        source.close()


# --------------------------------------------------------------------------- the join


def test_offsets_and_lag_are_the_admins_and_windows_show_the_acknowledgements(bed: Bed) -> None:
    result = bed.inflight(
        TailingStateSource(bed.settings.confluent_config(), group_ids=[bed.group])
    )
    offsets = bed.ask(lambda admin: admin.list_share_partition_offsets([bed.group])).get(bed.group)
    assert isinstance(offsets, GroupOffsets)
    assert [(p.topic, p.partition) for p in result.partitions] == [
        (o.topic, o.partition) for o in offsets.partitions
    ]
    for partition, offset in zip(result.partitions, offsets.partitions, strict=True):
        assert (partition.start_offset, partition.end_offset) == (
            offset.start_offset,
            offset.end_offset,
        )
        assert (partition.lag, partition.lag_source) == (offset.lag, offset.lag_source)
    assert result.total_lag == offsets.total_lag
    assert result.window_note is None
    assert result.description is not None
    assert result.description.state == "Empty"
    assert result.delivery_count_limit == 5

    metadata = bed.ask(lambda admin: admin.client.metadata(list(bed.topics.values())))
    by_name = {(p.topic, p.partition): p for p in result.partitions}
    for partition in result.partitions:
        assert partition.topic_id == metadata.topics[partition.topic].topic_id

    first = by_name[(bed.topics["t"], 0)]
    assert first.window is not None
    assert first.window.start_offset == 0  # offset 0 was released: it holds the start
    assert first.window.runs[0].state is WindowState.AVAILABLE
    # A released record is delivered again while the consumer waits for the rest (a real
    # broker does; the sandbox may not), and a fetch may acquire it once more before the
    # consumer closes without handing it over: the close releases it and Kafka keeps that
    # count (SharePartition's release on leave is DeliveryCountOps.NO_OP).
    released = bed.delivered[("t", 0, 0)]
    assert 1 <= released < result.delivery_count_limit
    assert released <= first.window.runs[0].delivery_count <= released + 1
    assert (first.window.available, first.window.acknowledged, first.window.archived) == (1, 4, 0)
    assert first.end_offset == RECORDS[("t", 0)] + QUEUED
    assert first.queued == QUEUED
    second = by_name[(bed.topics["t"], 1)]
    assert second.window is not None
    if second.window.start_offset <= 1:  # the start offset may already have passed it all
        assert second.window.archived == 1


def test_topics_restrict_the_share_partitions(bed: Bed) -> None:
    result = bed.inflight(None, bed.topics["u"])
    assert [(p.topic, p.partition) for p in result.partitions] == [(bed.topics["u"], 0)]
    assert bed.inflight(None, "no-such-topic").partitions == ()


def test_without_a_state_source_there_are_no_windows_and_no_note(bed: Bed) -> None:
    result = bed.inflight(None)
    assert len(result.partitions) == len(RECORDS)
    assert all(partition.window is None for partition in result.partitions)
    assert result.window_note is None


class Unreadable:
    """The state topic as a principal without READ on it sees it."""

    REASON = "not authorized to read __share_group_state (needs DESCRIBE and READ on the topic)"

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        raise StateTopicUnavailable(self.REASON)


def test_an_unreadable_state_topic_is_a_note_not_a_failure(bed: Bed) -> None:
    result = bed.inflight(Unreadable())
    assert result.window_note == Unreadable.REASON
    assert len(result.partitions) == len(RECORDS)
    assert all(partition.window is None for partition in result.partitions)
    assert all(partition.lag is not None for partition in result.partitions)
    assert result.total_lag is not None


def test_an_unknown_group_is_describes_not_found(bed: Bed, unique: str) -> None:
    missing = f"kshare-admin-inflight-missing-{unique}"
    with pytest.raises(GroupNotFound) as raised:
        bed.ask(lambda admin: InflightService(admin, Unreadable()).group(missing))
    described = bed.ask(lambda admin: admin.describe_groups([missing])).get(missing)
    assert isinstance(described, GroupFailure)
    assert str(raised.value) == str(described)
    assert raised.value.exit_code == ExitCode.NOT_FOUND
    assert raised.value.failure.not_found


def test_groups_read_together_are_each_as_read_alone_in_requests_per_coordinator(
    bed: Bed, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two groups stand for the exporter's thousands: read together, not each alone.
    monkeypatch.setattr(inflight_service, "READ_ALONE_UP_TO", 0)
    missing = f"kshare-admin-inflight-missing-{unique}"
    wanted = [missing, bed.group]

    async def both(admin: ShareGroupAdmin) -> tuple[Any, ...]:
        with TailingStateSource(bed.settings.confluent_config(), group_ids=wanted) as source:
            service = InflightService(admin, source)
            alone = await service.group(bed.group)
            with pytest.raises(GroupNotFound) as not_found:
                await service.group(missing, log_start_offsets=False)
            client = admin.client
            coordinators = await client.find_coordinators(wanted)
            # Every request the client sends passes through its one attempt.
            sent: list[int] = []
            attempt = client._attempt  # noqa: SLF001

            async def counted(connection: Any, api_key: int, *rest: Any) -> tuple[int, Any]:
                sent.append(api_key)
                return await attempt(connection, api_key, *rest)

            client._attempt = counted  # type: ignore[method-assign]  # noqa: SLF001
            together = await service.groups(wanted, log_start_offsets=True)
        return alone, not_found.value, together, sent, coordinators

    alone, not_found, together, sent, coordinators = bed.ask(both)
    assert list(together) == wanted
    assert together[bed.group] == alone
    assert isinstance(together[missing], GroupNotFound)
    assert str(together[missing]) == str(not_found)
    assert all(each.log_start_offset is not None for each in alone.partitions)
    # The descriptions once for the list and once for the offsets, per coordinator, and
    # every group's end and log start offsets in a ListOffsets per leader each; the
    # offsets per group.
    nodes = {getattr(each, "node_id", None) for each in coordinators.values()}
    assert sent.count(SHARE_GROUP_DESCRIBE) <= 2 * len(nodes)
    assert sent.count(DESCRIBE_SHARE_GROUP_OFFSETS) == 1  # the missing group is not asked
    leaders = bed.ask(lambda admin: admin.client.metadata(list(bed.topics.values())))
    assert sent.count(LIST_OFFSETS) <= 2 * len(leaders.brokers)


# --------------------------------------------------------------------------- the source


def test_the_tailing_source_catches_up_then_follows(bed: Bed) -> None:
    assert bed.before == {}  # the group had written nothing yet
    assert {key.group_id for key in bed.after} == {bed.group}
    assert len(bed.after) == len(RECORDS)


def test_a_source_for_some_groups_answers_only_for_them(bed: Bed, unique: str) -> None:
    with TailingStateSource(bed.settings.confluent_config(), group_ids=[bed.group]) as source:
        assert source.refresh([f"other-{unique}"], 15) == {}
        assert len(source.refresh([bed.group], 15)) == len(RECORDS)
    with pytest.raises(StateTopicUnavailable, match="closed"):
        source.refresh([bed.group], 15)


# --------------------------------------------------------------------------- overview


def test_overview_summarises_every_group(bed: Bed) -> None:
    overview = bed.ask(lambda admin: InflightService(admin, None).overview())
    offsets = bed.ask(lambda admin: admin.list_share_partition_offsets([bed.group])).get(bed.group)
    assert isinstance(offsets, GroupOffsets)
    summaries = {summary.group_id: summary for summary in overview.groups}
    assert summaries[bed.group] == GroupSummary(
        bed.group,
        "Empty",
        0,
        len(RECORDS),
        offsets.total_lag,
        offsets.total_lag_source,
        offsets.total_lag_complete,
    )
    assert [summary.group_id for summary in overview.groups] == sorted(summaries)
    assert bed.group not in {getattr(failure, "group_id", None) for failure in overview.failures}
