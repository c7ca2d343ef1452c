"""ShareGroupAdmin asks again what Kafka answers with a retriable error, at every level.

Issue 23: during leader churn on Kafka 4.2, a broker still loading a
group-coordinator partition answers the whole ListGroups with
COORDINATOR_LOAD_IN_PROGRESS (``GroupCoordinatorService.listGroups``), and a
``describe --all-groups`` failed with it; Java's admin client asks again. So do
per-group errors (``tests/wire/test_retriable.py``), and per-partition ones: a
share coordinator or a leader that has not learnt of a new topic answers its
partitions UNKNOWN_TOPIC_OR_PARTITION for a moment. Each test makes the sandbox
answer so on cue, a few times or for good, and checks what the operator gets:
every group and offset once the error passes, the error itself, named, within the
deadline when it does not. A real broker cannot be told to, so these are skipped
on one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import GroupOffsets, TopicPartition
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.api_keys import DESCRIBE_SHARE_GROUP_OFFSETS, LIST_GROUPS, LIST_OFFSETS
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.wire.client import KafkaClient
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import make_groups_with_offsets
from tests.support.waiting import PROMPTLY_S
from tests.wire.conftest import Handler, replaced_handler

PARTITIONS = 3
START_OFFSET = 4
LOADING = ErrorCode(ErrorCode.coordinator_load_in_progress)
UNKNOWN = ErrorCode(ErrorCode.unknown_topic_or_partition)


@dataclasses.dataclass(frozen=True)
class Bed:
    sandbox: SandboxThread
    settings: ConnectionSettings
    topic: str
    groups: list[str]


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    skip_on_real_cluster("the sandbox is made to answer retriable errors on cue")
    suffix = uuid.uuid4().hex[:8]
    topic = f"retriable-{suffix}"
    groups = [f"retriable-{suffix}-{index}" for index in range(2)]
    with SandboxThread() as sandbox:
        settings = ConnectionSettings(bootstrap_servers=(sandbox.bootstrap,))

        async def make() -> None:
            async with await KafkaClient.connect(settings, timeout_s=30) as client:
                await make_groups_with_offsets(client, topic, groups, PARTITIONS, START_OFFSET)

        asyncio.run(make())
        yield Bed(sandbox, settings, topic, groups)


def _with_admin(bed: Bed, timeout_s: float, work: Callable[[ShareGroupAdmin], Any]) -> Any:
    async def scenario() -> Any:
        async with await KafkaClient.connect(bed.settings, timeout_s=timeout_s) as client:
            async with client.bounded("the test"):
                return await work(ShareGroupAdmin(client))

    return asyncio.run(scenario())


def _list_groups_loading(times: int | None, asked: list[float]) -> Callable[[Handler], Handler]:
    """ListGroups answered as a loading Kafka broker does, ``times`` times (None: always)."""

    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            asked.append(time.monotonic())
            if times is not None and len(asked) > times:
                return response
            return dataclasses.replace(response, error_code=LOADING, groups=())

        return handler

    return make


def test_a_broker_loading_its_group_coordinator_is_asked_again_and_lists_every_group(
    bed: Bed,
) -> None:
    asked: list[float] = []
    with replaced_handler(bed.sandbox, LIST_GROUPS, _list_groups_loading(2, asked)):
        listing = _with_admin(bed, 10, lambda admin: admin.list_groups())
    assert listing.failures == ()
    assert list(listing.group_ids()) == bed.groups
    assert len(asked) == 3


def test_a_broker_still_loading_when_its_share_runs_out_is_named_with_the_error(
    bed: Bed,
) -> None:
    asked: list[float] = []
    started = time.monotonic()
    with replaced_handler(bed.sandbox, LIST_GROUPS, _list_groups_loading(None, asked)):
        listing = _with_admin(bed, 1.0, lambda admin: admin.list_groups())
    elapsed = time.monotonic() - started
    (failure,) = listing.failures
    assert failure.node_id == 1
    assert failure.error.name == "COORDINATOR_LOAD_IN_PROGRESS"
    assert listing.group_ids() == ()
    assert len(asked) >= 3  # asked again, with backoff, for half of the second
    # The listing came back, the broker named, rather than a TimedOut for the whole call.
    assert elapsed < PROMPTLY_S


def test_a_share_partition_the_share_coordinator_does_not_know_yet_is_asked_again(
    bed: Bed,
) -> None:
    group = bed.groups[0]
    asked: list[str] = []

    def unknown_once(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            asked.extend(g.group_id for g in request.payload.groups)
            if len(asked) > 1:
                return response
            groups = tuple(
                dataclasses.replace(
                    answered,
                    topics=tuple(
                        dataclasses.replace(
                            topic,
                            partitions=tuple(
                                dataclasses.replace(partition, error_code=UNKNOWN)
                                if partition.partition_index == 1
                                else partition
                                for partition in topic.partitions
                            ),
                        )
                        for topic in answered.topics
                    ),
                )
                for answered in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    with replaced_handler(bed.sandbox, DESCRIBE_SHARE_GROUP_OFFSETS, unknown_once):
        offsets = _with_admin(bed, 10, lambda admin: admin.list_share_partition_offsets([group]))
    assert asked == [group, group]
    described = offsets.get(group)
    assert isinstance(described, GroupOffsets)
    assert [(p.partition, p.start_offset, p.error) for p in described.partitions] == [
        (partition, START_OFFSET, None) for partition in range(PARTITIONS)
    ]


def test_a_partition_its_leader_does_not_know_yet_is_asked_again(bed: Bed) -> None:
    asked: list[float] = []

    def unknown_once(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            asked.append(time.monotonic())
            if len(asked) > 1:
                return response
            topics = tuple(
                dataclasses.replace(
                    topic,
                    partitions=tuple(
                        dataclasses.replace(partition, error_code=UNKNOWN, offset=-1)
                        for partition in topic.partitions
                    ),
                )
                for topic in response.topics
            )
            return dataclasses.replace(response, topics=topics)

        return handler

    wanted = [TopicPartition(bed.topic, partition) for partition in range(PARTITIONS)]
    with replaced_handler(bed.sandbox, LIST_OFFSETS, unknown_once):
        ends = _with_admin(bed, 10, lambda admin: admin.log_end_offsets(wanted))
    assert len(asked) == 2
    assert ends.failures == {}
    assert sorted(ends.offsets) == wanted


def test_a_topic_that_does_not_exist_fails_at_once(bed: Bed) -> None:
    """Retriable, yet for a whole topic a typo or a deleted topic: as Java, not asked again."""
    missing = TopicPartition(f"missing-{uuid.uuid4().hex[:8]}", 0)
    started = time.monotonic()
    ends = _with_admin(bed, 30, lambda admin: admin.log_end_offsets([missing]))
    elapsed = time.monotonic() - started
    assert ends.failures[missing].name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert elapsed < PROMPTLY_S  # not half of the 30 s asking again
