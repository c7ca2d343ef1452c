"""A reset's share-partition has a known lag from Kafka 4.3 on (KAFKA-20034, in 4.3.0).

``AlterShareGroupOffsets`` writes a snapshot whose deliveryCompleteCount is -1 (unknown)
on 4.2 and 0 from 4.3 on, so DescribeShareGroupOffsets answers lag -1 on 4.2 and the
records from the new start offset to the end from 4.3 on (as real 4.2.0 and 4.4 brokers
answered kshare's describe after a reset).
"""

from __future__ import annotations

import pytest
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)

from tests.support.fault_beds import start_offsets_at
from tests.support.raw import call
from tests.support.records import create_topics, produce
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread


@pytest.mark.parametrize(("release", "lag"), [("4.2", -1), ("4.3", 6), ("4.4", 6)])
def test_a_resets_lag_is_known_from_4_3(release: str, lag: int) -> None:
    topic, group = "reset-lag", "reset-lag-group"
    with SandboxThread(kafka_version=release) as sandbox:
        create_topics(Cluster(sandbox.bootstrap), topic, partitions=3)
        produce(Cluster(sandbox.bootstrap), topic, {partition: 10 for partition in range(3)})
        start_offsets_at(sandbox, group, topic, 4)
        response = call(
            sandbox.bootstrap,
            DescribeShareGroupOffsetsRequest(
                groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)  # type: ignore[arg-type]
            ),
        )
    (answer,) = response.groups
    lags = [p.lag for t in answer.topics for p in t.partitions]
    starts = [p.start_offset for t in answer.topics for p in t.partitions]
    assert starts == [4, 4, 4]
    assert lags == [lag] * 3
