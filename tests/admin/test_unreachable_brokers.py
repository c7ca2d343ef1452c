"""A broker that does not answer costs only what it alone knows.

The sandbox is one node, so a second, silent broker is played by a stand-in
client: the metadata names two brokers, and every request to node 2 times out
(as ``KafkaClient.request`` does at its deadline). The answers of node 1 are
real kio responses built from the same descriptions the sandbox uses.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any, cast

from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.errors import TimedOut
from kshare_cli.wire.build import build
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.cluster import BrokerNode, ClusterMetadata, PartitionMetadata, TopicMetadata
from kshare_cli.wire.framing import response_schema


class _HalfCluster:
    """Node 1 answers; node 2 never does."""

    timeout_s = 1.0

    def __init__(self) -> None:
        self.asked: list[tuple[int, int | None]] = []

    def api_version(self, api_key: int, **_: Any) -> int:
        return {16: 5, 2: 9}[api_key]

    async def metadata(self, topics: Any = None) -> ClusterMetadata:
        partitions = {
            p: PartitionMetadata(p, leader_id=1 + p % 2, leader_epoch=0, error_code=0)
            for p in range(2)
        }
        return ClusterMetadata(
            "c",
            1,
            {1: BrokerNode(1, "b1", 9092), 2: BrokerNode(2, "b2", 9092)},
            {"t": TopicMetadata("t", uuid.uuid4(), partitions, 0)},
        )

    async def request(
        self, api_key: int, body: Mapping[str, Any], *, node: int | None = None, **_: Any
    ) -> tuple[int, Any]:
        self.asked.append((api_key, node))
        if node == 2:
            raise TimedOut("ListGroups did not finish within 1 s (last error: refused)")
        if api_key == 16:
            groups = [
                {
                    "group_id": "g",
                    "protocol_type": "share",
                    "group_state": "Stable",
                    "group_type": "share",
                }
            ]
            answer = {"throttle_time": 0, "error_code": 0, "groups": groups}
            return 5, build(response_schema(16, 5), answer)
        partitions = [
            {
                "partition_index": p["partition_index"],
                "error_code": 0,
                "timestamp": -1,
                "offset": 42,
                "leader_epoch": 0,
            }
            for topic in body["topics"]
            for p in topic["partitions"]
        ]
        answer = {"throttle_time": 0, "topics": [{"name": "t", "partitions": partitions}]}
        return 9, build(response_schema(2, 9), answer)


def test_list_groups_reports_the_silent_broker_and_keeps_the_rest() -> None:
    client = _HalfCluster()
    listing = asyncio.run(ShareGroupAdmin(cast(KafkaClient, client)).list_groups())
    assert listing.group_ids() == ("g",)
    (failure,) = listing.errors()
    assert (failure.node_id, failure.host, failure.error.name) == (2, "b2", "REQUEST_TIMED_OUT")
    assert sorted(client.asked) == [(16, 1), (16, 2)]  # one ListGroups per broker


def test_end_offsets_one_request_per_leader_and_a_failure_per_silent_leaders_partition() -> None:
    client = _HalfCluster()
    ends = asyncio.run(
        ShareGroupAdmin(cast(KafkaClient, client)).log_end_offsets(
            [TopicPartition("t", 0), TopicPartition("t", 1)]
        )
    )
    # Partition 0's leader is node 1, partition 1's is node 2.
    assert dict(ends.offsets) == {TopicPartition("t", 0): 42}
    assert {tp: e.name for tp, e in ends.errors().items()} == {
        TopicPartition("t", 1): "REQUEST_TIMED_OUT"
    }
    assert sorted(client.asked) == [(2, 1), (2, 2)]
