"""From kio responses to domain models: Kafka's meaning of each field, per version.

The recorded answers of a real Kafka 4.2.0 broker (golden corpus) are converted
as they are; the cases the recording lacks (a v0 answer, an uninitialised
share-partition, a partition error) are built with kshare's own message builder.
"""

from __future__ import annotations

import uuid
from typing import Any

from kshare_cli.admin.models import (
    Coordinator,
    EndOffsets,
    KafkaError,
    TopicPartition,
)
from kshare_cli.admin.share_groups import (
    authorized_operations,
    description_from,
    group_offsets_from,
    listed_groups_from,
)
from kshare_cli.wire.build import build
from kshare_cli.wire.framing import response_schema
from tests.support import golden_admin as golden

TOPIC_ID = uuid.UUID(int=7)


def _offsets_response(version: int, partitions: list[dict[str, Any]]) -> Any:
    body = {
        "throttle_time": 0,
        "groups": [
            {
                "group_id": "g",
                "error_code": 0,
                "error_message": None,
                "topics": [{"topic_name": "t", "topic_id": TOPIC_ID, "partitions": partitions}],
            }
        ],
    }
    return build(response_schema(90, version), body)


def _partition(index: int, start: int, epoch: int = 0, lag: int = -1, error: int = 0) -> Any:
    return {
        "partition_index": index,
        "start_offset": start,
        "leader_epoch": epoch,
        "lag": lag,
        "error_code": error,
        "error_message": "denied" if error else None,
    }


def test_recorded_listing_parses_states() -> None:
    listed = listed_groups_from(golden.response(116))
    assert len(listed) == 11
    assert {group.state for group in listed} == {"Stable", "Empty"}


def test_recorded_description_of_a_live_group() -> None:
    coordinator = Coordinator(1, "127.0.0.1", 19092)
    (group,) = golden.response(131).groups
    description = description_from(group, coordinator)
    assert description.state == "Stable"
    assert (description.group_epoch, description.assignment_epoch) == (2, 2)
    assert description.assignor == "simple"
    assert description.authorized_operations is None  # not asked for: Integer.MIN_VALUE
    (member,) = description.members
    assert member.member_id == "aOqSC+YFSECXXPKq0SceWw"
    assert member.host == "/127.0.0.1"
    assert member.rack is None
    assert member.assignment == {"golden-a": (0, 1)}
    assert member.subscribed_topics == ("golden-a",)


def test_recorded_offsets_after_reset_have_no_broker_lag() -> None:
    (group,) = golden.response(337).groups
    plain = group_offsets_from(group)
    assert [(p.start_offset, p.lag, p.lag_source) for p in plain.partitions] == [
        (0, None, None),
        (0, None, None),
    ]
    ends = EndOffsets({TopicPartition("golden-a", 0): 15, TopicPartition("golden-a", 1): 15})
    bounded = group_offsets_from(group, ends)
    assert [(p.lag, p.lag_source) for p in bounded.partitions] == [(15, "bound"), (15, "bound")]
    assert (bounded.total_lag, bounded.total_lag_source) == (30, "bound")


def test_v1_lag_is_the_brokers() -> None:
    response = _offsets_response(1, [_partition(0, 4, lag=3)])
    ends = EndOffsets({TopicPartition("t", 0): 100})
    (offset,) = group_offsets_from(response.groups[0], ends).partitions
    assert (offset.lag, offset.lag_source, offset.end_offset) == (3, "broker", 100)
    assert offset.broker_lag == 3


def test_v0_has_no_lag_so_end_minus_start_bounds_it() -> None:
    response = _offsets_response(0, [_partition(0, 4), _partition(1, 9)])
    assert not hasattr(response.groups[0].topics[0].partitions[0], "lag")
    ends = EndOffsets({TopicPartition("t", 0): 10, TopicPartition("t", 1): 5})
    first, second = group_offsets_from(response.groups[0], ends).partitions
    assert (first.lag, first.lag_source) == (6, "bound")
    # A start offset past the end offset (truncated log): the bound does not go negative.
    assert (second.lag, second.lag_source) == (0, "bound")
    without_ends = group_offsets_from(response.groups[0]).partitions
    assert [(p.lag, p.lag_source) for p in without_ends] == [(None, None), (None, None)]


def test_uninitialised_share_partition_is_all_unknown_as_in_kafka() -> None:
    response = _offsets_response(1, [_partition(0, -1, epoch=3, lag=0)])
    ends = EndOffsets({TopicPartition("t", 0): 10})
    (offset,) = group_offsets_from(response.groups[0], ends).partitions
    assert (offset.start_offset, offset.leader_epoch, offset.lag) == (None, None, None)
    assert offset.end_offset == 10


def test_negative_leader_epoch_is_unknown() -> None:
    response = _offsets_response(1, [_partition(0, 2, epoch=-1, lag=1)])
    (offset,) = group_offsets_from(response.groups[0]).partitions
    assert (offset.leader_epoch, offset.start_offset, offset.lag) == (None, 2, 1)


def test_partition_error_is_kept_per_partition() -> None:
    response = _offsets_response(1, [_partition(0, 2, lag=1), _partition(1, -1, error=29)])
    group = group_offsets_from(response.groups[0])
    assert [p.error for p in group.partitions] == [
        None,
        KafkaError(29, "TOPIC_AUTHORIZATION_FAILED", "denied"),
    ]
    (failure,) = group.errors()
    assert str(failure) == "share group 'g', partition t:1: TOPIC_AUTHORIZATION_FAILED: denied"
    # The refused partition's lag is unknown: the total is the other's, marked incomplete.
    assert (group.total_lag, group.total_lag_complete) == (1, False)


def test_authorized_operations_bits() -> None:
    assert authorized_operations(-(2**31)) is None
    assert authorized_operations(0) == ()
    # READ(3), DESCRIBE(8), DELETE(6); ALL(2) is never reported.
    assert authorized_operations((1 << 3) | (1 << 8) | (1 << 6) | (1 << 2)) == (
        "READ",
        "DELETE",
        "DESCRIBE",
    )
