"""Describing the offsets of many groups costs one group's wait, not one per group.

Why: Kafka 4.2 serves the groups of one DescribeShareGroupOffsets one after the
other (112 groups: 2.40 s) and one-group requests at once (DESIGN.md, measured
facts), so ``list_share_partition_offsets`` sends one group per request,
concurrently. The sandbox models Kafka's wait per further group of a request
(``summary_read_wait_s``); here it is 200 ms, large enough that ten groups in one
request (nine waits, 1.8 s) cannot be mistaken for ten one-group requests (no
wait). The requests are counted at the broker, and the answers are compared with
the old one-request-per-coordinator batching, which must give the same offsets.

The groups are made through the protocol: a ShareGroupHeartbeat join and leave
leaves each group Empty, then AlterShareGroupOffsets gives it a start offset on
every partition. These tests set the sandbox's pacing and watch its requests, so
they are skipped on a real cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import GroupFailure, GroupOffsets
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.api_keys import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
)
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.wire.client import KafkaClient
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import make_groups_with_offsets
from tests.wire.conftest import Handler, replaced_handler

WAIT_S = 0.2
GROUPS = 10
PARTITIONS = 3
START_OFFSET = 4


@dataclasses.dataclass(frozen=True)
class Bed:
    sandbox: SandboxThread
    settings: ConnectionSettings
    groups: list[str]


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    if os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        pytest.skip("the sandbox's per-group wait is set and its requests watched here")
    suffix = uuid.uuid4().hex[:8]
    groups = [f"scale-{suffix}-{index:02d}" for index in range(GROUPS)]
    with SandboxThread(summary_read_wait_s=WAIT_S) as sandbox:
        settings = ConnectionSettings(bootstrap_servers=(sandbox.bootstrap,))

        async def setup() -> None:
            async with await KafkaClient.connect(settings, timeout_s=30) as client:
                await make_groups_with_offsets(
                    client, f"scale-{suffix}", groups, PARTITIONS, START_OFFSET
                )

        asyncio.run(setup())
        yield Bed(sandbox, settings, groups)


def _recording(seen: list[list[str]]) -> Any:
    """Wrap the broker's DescribeShareGroupOffsets handler to note each request's groups."""

    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            seen.append([str(group.group_id) for group in request.payload.groups])
            return await original(broker, request, connection)

        return handler

    return make


def _offsets(bed: Bed, **options: Any) -> tuple[Any, float]:
    """The offsets of every group, and the seconds the offsets call took (connect excluded)."""

    async def ask() -> tuple[Any, float]:
        async with await KafkaClient.connect(bed.settings, timeout_s=30) as client:
            admin = ShareGroupAdmin(client)
            started = time.perf_counter()
            result = await admin.list_share_partition_offsets(bed.groups, **options)
            return result, time.perf_counter() - started

    return asyncio.run(ask())


def test_ten_groups_cost_one_wait_and_answer_as_one_batched_request_did(bed: Bed) -> None:
    per_group: list[list[str]] = []
    with replaced_handler(bed.sandbox, DESCRIBE_SHARE_GROUP_OFFSETS, _recording(per_group)):
        offsets, took_s = _offsets(bed)
    batched: list[list[str]] = []
    with replaced_handler(bed.sandbox, DESCRIBE_SHARE_GROUP_OFFSETS, _recording(batched)):
        baseline, baseline_s = _offsets(bed, groups_per_request=None)

    assert sorted(per_group) == [[group] for group in bed.groups]
    assert batched == [bed.groups]
    # Nine waits of 200 ms for the batched request; none for one-group requests.
    assert baseline_s >= (GROUPS - 1) * WAIT_S
    assert took_s < 5 * WAIT_S, f"{took_s:.2f} s for {GROUPS} groups"
    assert offsets == baseline
    assert offsets.ok() and not offsets.partition_errors()
    assert [group.group_id for group in offsets.succeeded()] == bed.groups
    for group in offsets.succeeded():
        assert [p.start_offset for p in group.partitions] == [START_OFFSET] * PARTITIONS


def test_a_group_whose_request_failed_is_a_failure_of_that_group_only(bed: Bed) -> None:
    refused = bed.groups[3]

    def refusing(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            groups = tuple(
                dataclasses.replace(group, error_code=ErrorCode.group_authorization_failed)
                if group.group_id == refused
                else group
                for group in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    with replaced_handler(bed.sandbox, DESCRIBE_SHARE_GROUP_OFFSETS, refusing):
        offsets, _ = _offsets(bed)
    failure = offsets.get(refused)
    assert isinstance(failure, GroupFailure)
    assert failure.error.code == ErrorCode.group_authorization_failed
    others = [group for group in bed.groups if group != refused]
    assert [group.group_id for group in offsets.succeeded()] == others
    assert all(isinstance(offsets.get(group), GroupOffsets) for group in others)
