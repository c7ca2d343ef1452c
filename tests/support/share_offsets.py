"""An empty share group with state, made as the tests make one: AlterShareGroupOffsets.

Kafka 4.2 creates the group on an AlterShareGroupOffsets for a new group id, but only
when a requested topic is in the group coordinator's metadata image
(``GroupMetadataManager.alterShareGroupOffsets``: the group is persisted by its
ShareGroupStatePartitionMetadata record). A topic created a moment before reaches that
image when the broker has replayed the controller's log, a little after CreateTopics
answered; until then each partition answers UNKNOWN_TOPIC_OR_PARTITION, the request as a
whole answers 0, and no group exists. So the request is repeated until every partition
is accepted.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    CREATE_TOPICS,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.cluster import BrokerNode

#: Whole-request answers Kafka's Admin client retries after a new coordinator lookup: on
#: a freshly started broker the group's ``__consumer_offsets`` partition is still being
#: made or loaded (Kafka 4.2 answered NOT_COORDINATOR to the suite's first requests).
_COORDINATOR_MOVING = frozenset(
    {
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
    }
)


async def alter_share_group_offsets(
    client: KafkaClient,
    group: str,
    partitions: Mapping[str, Sequence[int]],
    *,
    start_offset: int = 0,
    wait_s: float = 30.0,
) -> Any:
    """Set ``group``'s start offsets on ``partitions`` (topic -> indexes); the response.

    Fails the test when the group is refused, or its coordinator or a partition is still
    unknown after ``wait_s`` seconds.
    """
    body = {
        "group_id": group,
        "topics": [
            {
                "topic_name": topic,
                "partitions": [
                    {"partition_index": index, "start_offset": start_offset} for index in indexes
                ],
            }
            for topic, indexes in partitions.items()
        ],
    }
    deadline = time.monotonic() + wait_s
    while True:
        coordinator = (await client.find_coordinators([group]))[group]
        assert isinstance(coordinator, BrokerNode), coordinator
        _, response = await client.request(
            ALTER_SHARE_GROUP_OFFSETS, body, node=coordinator.node_id
        )
        if int(response.error_code) in _COORDINATOR_MOVING and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # a fresh broker still electing or loading it
            continue
        assert int(response.error_code) == 0, response
        codes = [
            int(partition.error_code)
            for topic in response.responses
            for partition in topic.partitions
        ]
        if all(code == 0 for code in codes):
            return response
        unknown = all(code in (0, ErrorCode.unknown_topic_or_partition) for code in codes)
        assert unknown and time.monotonic() < deadline, response
        await asyncio.sleep(0.2)


async def make_groups_with_offsets(
    client: KafkaClient, topic: str, groups: Sequence[str], partitions: int, start_offset: int
) -> None:
    """Create ``topic`` and, for each group, a share group that a member joined and left,
    with every partition's start offset at ``start_offset``: groups with offsets and no
    clients, made over the wire alone."""
    _, created = await client.request(
        CREATE_TOPICS,
        {
            "topics": [
                {
                    "name": topic,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 30_000,
            "validate_only": False,
        },
    )
    assert [int(t.error_code) for t in created.topics] == [0]
    client.forget_metadata()
    for group_id in groups:
        member = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        for epoch, subscribed in ((0, [topic]), (-1, None)):
            _, beat = await client.request(
                SHARE_GROUP_HEARTBEAT,
                {
                    "group_id": group_id,
                    "member_id": member,
                    "member_epoch": epoch,
                    "rack_id": None,
                    "subscribed_topic_names": subscribed,
                },
            )
            assert int(beat.error_code) == 0, beat
        _, altered = await client.request(
            ALTER_SHARE_GROUP_OFFSETS,
            {
                "group_id": group_id,
                "topics": [
                    {
                        "topic_name": topic,
                        "partitions": [
                            {"partition_index": p, "start_offset": start_offset}
                            for p in range(partitions)
                        ],
                    }
                ],
            },
        )
        assert int(altered.error_code) == 0, altered
