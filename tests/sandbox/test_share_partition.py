"""The sandbox's share-partition engine against Kafka 4.2.0's recorded behaviour and its rules.

The golden replay is the specification: the consumer's ShareFetch traffic of scenario A goes
through :class:`SharePartition` and must produce the broker's WriteShareGroupState requests
field for field, and the same acquired ranges the broker handed out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    READ_SHARE_GROUP_STATE,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    WRITE_SHARE_GROUP_STATE,
)
from kshare_cli.kafka.share_states import DeliveryState, StateBatch
from kshare_cli.sandbox.share_partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    SharePartition,
    SharePartitionConfig,
    StateWrite,
)
from kshare_cli.state.lag import share_partition_lag
from tests.support.golden import GOLDEN

SCENARIO_A_WIRE = GOLDEN / "decoded" / "scenario-a.wire.jsonl"
SCENARIO_A_DELIVERIES = GOLDEN / "scenario-a-deliveries.jsonl"
GOLDEN_GROUP = "golden-g"
GOLDEN_LOG_END_OFFSET = 15

ACCEPT = (int(AcknowledgeType.ACCEPT),)
RELEASE = (int(AcknowledgeType.RELEASE),)
REJECT = (int(AcknowledgeType.REJECT),)


def _ack(first: int, last: int, types: tuple[int, ...]) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, types)


def _fresh(config: SharePartitionConfig | None = None, start: int = 0) -> SharePartition:
    return SharePartition(start_offset=-1, state_epoch=1, reset_start_offset=start, config=config)


def _state_of(share_partition: SharePartition, offset: int) -> tuple[DeliveryState, int, str]:
    for record in share_partition.in_flight():
        if record.offset == offset:
            return record.state, record.delivery_count, record.member_id
    raise AssertionError(f"offset {offset} is not in flight")


# --------------------------------------------------------------------------- golden replay


def _golden_lines() -> list[dict[str, Any]]:
    with SCENARIO_A_WIRE.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def _write_from_wire(partition: dict[str, Any]) -> StateWrite:
    return StateWrite(
        start_offset=partition["startOffset"],
        delivery_complete_count=partition["deliveryCompleteCount"],
        leader_epoch=partition["leaderEpoch"],
        state_epoch=partition["stateEpoch"],
        state_batches=tuple(
            StateBatch(
                batch["firstOffset"],
                batch["lastOffset"],
                batch["deliveryState"],
                batch["deliveryCount"],
            )
            for batch in partition["stateBatches"]
        ),
    )


@dataclass
class _Replay:
    """What the replay produced: writes per partition in order, and deliveries."""

    writes: list[tuple[int, StateWrite]] = field(default_factory=list)
    acquired: list[tuple[int, int, list[AcquiredRecords]]] = field(default_factory=list)
    partitions: dict[int, SharePartition] = field(default_factory=dict)


def _acquire_for(
    replay: _Replay, wanted: list[int], member_id: str, request: dict[str, Any], now_ms: int
) -> dict[int, list[AcquiredRecords]]:
    """One ShareFetch's acquisition on each partition its response names (one log batch each)."""
    return {
        index: replay.partitions[index].acquire(
            member_id,
            GOLDEN_LOG_END_OFFSET,
            request["maxRecords"],
            now_ms,
            record_batches=[(0, GOLDEN_LOG_END_OFFSET - 1)],
            batch_size=request["batchSize"],
        )
        for index in wanted
    }


def _replay_scenario_a(*, defer_commit: bool = True) -> _Replay:
    """Drive SharePartitions with the consumer's ShareFetch/ShareAcknowledge requests.

    A ShareFetch's acknowledgements start writes that are still in flight when the broker
    looks for records (defer_commit); if nothing is acquirable the real broker parks the
    fetch until a write completes and looks again, so the replay commits and retries then.
    Without ``defer_commit`` every write completes at once: the acquisitions shift by one
    fetch, but the writes must not change.
    """
    lines = _golden_lines()
    topic_id = next(
        line["request"]["topics"][0]["topicId"]
        for line in lines
        if line["api_key"] == READ_SHARE_GROUP_STATE and line["request"]["groupId"] == GOLDEN_GROUP
    )
    replay = _Replay()
    consumer = [
        line
        for line in lines
        if line["api_key"] in (SHARE_FETCH, SHARE_ACKNOWLEDGE)
        and line["request"]["groupId"] == GOLDEN_GROUP
    ]
    consumer.sort(key=lambda line: (line["conn"], line["correlation_id"]))
    # The broker read the uninitialised state (startOffset -1); the group's
    # share.auto.offset.reset=earliest resolves it to log start offset 0.
    for line in lines:
        if line["api_key"] != READ_SHARE_GROUP_STATE:
            continue
        if line["request"]["groupId"] != GOLDEN_GROUP:
            continue
        for result in line["response"]["results"]:
            for partition in result["partitions"]:
                replay.partitions[partition["partition"]] = SharePartition(
                    start_offset=partition["startOffset"],
                    state_epoch=partition["stateEpoch"],
                    state_batches=[
                        StateBatch(
                            b["firstOffset"],
                            b["lastOffset"],
                            b["deliveryState"],
                            b["deliveryCount"],
                        )
                        for b in partition["stateBatches"]
                    ],
                    leader_epoch=line["request"]["topics"][0]["partitions"][0]["leaderEpoch"],
                    reset_start_offset=0,
                )

    for step, line in enumerate(consumer):
        now_ms = 1_000 * step
        request = line["request"]
        member_id = request["memberId"]
        for topic in request["topics"]:
            assert topic["topicId"] == topic_id
            for partition in topic["partitions"]:
                batches = [
                    _ack(b["firstOffset"], b["lastOffset"], tuple(b["acknowledgeTypes"]))
                    for b in partition["acknowledgementBatches"]
                ]
                if not batches:
                    continue
                index = partition["partitionIndex"]
                result = replay.partitions[index].acknowledge(
                    member_id, batches, now_ms, defer_commit=defer_commit
                )
                assert result.error_code == ErrorCode.none
                if result.state_write is not None:
                    replay.writes.append((index, result.state_write))

        if line["api_key"] == SHARE_FETCH:
            wanted = [
                partition["partitionIndex"]
                for topic in line["response"]["responses"]
                for partition in topic["partitions"]
            ]

            acquired = _acquire_for(replay, wanted, member_id, request, now_ms)
            if not any(acquired.values()):
                for share_partition in replay.partitions.values():
                    share_partition.commit_pending()
                acquired = _acquire_for(replay, wanted, member_id, request, now_ms)
            for index in wanted:
                replay.acquired.append((step, index, acquired[index]))

        for share_partition in replay.partitions.values():
            share_partition.commit_pending()
        if request["shareSessionEpoch"] == -1:
            for index, share_partition in replay.partitions.items():
                write = share_partition.release_member(member_id, now_ms)
                if write is not None:
                    replay.writes.append((index, write))
    return replay


@pytest.mark.parametrize("defer_commit", [True, False], ids=["writes-in-flight", "writes-instant"])
def test_scenario_a_replay_writes_the_recorded_write_share_group_state_requests(
    defer_commit: bool,
) -> None:
    recorded = [
        (partition["partition"], _write_from_wire(partition))
        for line in _golden_lines()
        if line["api_key"] == WRITE_SHARE_GROUP_STATE and line["request"]["groupId"] == GOLDEN_GROUP
        for topic in line["request"]["topics"]
        for partition in topic["partitions"]
    ]
    assert len(recorded) == 7  # the corpus README: 7 ShareUpdate records during consumption

    replay = _replay_scenario_a(defer_commit=defer_commit)

    assert replay.writes == recorded
    # The surprise of the corpus: the persisted start offset stays behind the work done.
    last_written = {index: write for index, write in replay.writes}
    assert (last_written[0].start_offset, last_written[0].delivery_complete_count) == (2, 13)
    assert (last_written[1].start_offset, last_written[1].delivery_complete_count) == (5, 10)
    for write in last_written.values():
        lag = share_partition_lag(
            GOLDEN_LOG_END_OFFSET, write.start_offset, write.delivery_complete_count
        )
        assert lag == 0
    # In memory the broker has moved on: everything is finished, nothing in flight.
    for share_partition in replay.partitions.values():
        assert share_partition.start_offset == GOLDEN_LOG_END_OFFSET
        assert share_partition.delivery_complete_count == 0
        assert share_partition.in_flight() == ()
        assert share_partition.lag(GOLDEN_LOG_END_OFFSET) == 0


def test_scenario_a_replay_acquires_what_the_broker_handed_out() -> None:
    recorded = [
        (
            partition["partitionIndex"],
            [
                AcquiredRecords(r["firstOffset"], r["lastOffset"], r["deliveryCount"])
                for r in partition["acquiredRecords"]
            ],
        )
        for line in sorted(
            (
                line
                for line in _golden_lines()
                if line["api_key"] == SHARE_FETCH and line["request"]["groupId"] == GOLDEN_GROUP
            ),
            key=lambda line: line["correlation_id"],
        )
        for topic in line["response"]["responses"]
        for partition in topic["partitions"]
    ]

    replay = _replay_scenario_a()

    assert [(index, acquired) for _step, index, acquired in replay.acquired] == recorded


def test_scenario_a_replay_delivers_what_the_consumer_saw() -> None:
    with SCENARIO_A_DELIVERIES.open(encoding="utf-8") as file:
        seen = [json.loads(line) for line in file]
    expected = [(d["partition"], d["offset"], d["delivery_count"]) for d in seen]

    replay = _replay_scenario_a()

    delivered = [
        (index, offset, records.delivery_count)
        for _step, index, acquired in replay.acquired
        for records in acquired
        for offset in range(records.first_offset, records.last_offset + 1)
    ]
    assert delivered == expected


# --------------------------------------------------------------------------- delivery counts


def test_released_record_is_redelivered_with_delivery_count_two() -> None:
    share_partition = _fresh()
    assert share_partition.acquire("m1", 3, 10, 0) == [AcquiredRecords(0, 2, 1)]

    result = share_partition.acknowledge("m1", [_ack(0, 2, (1, 2, 1))], 10)

    assert result.error_code == ErrorCode.none
    assert result.state_write == StateWrite(
        start_offset=0,
        delivery_complete_count=2,
        leader_epoch=0,
        state_epoch=1,
        state_batches=(StateBatch(0, 0, 2, 1), StateBatch(1, 1, 0, 1), StateBatch(2, 2, 2, 1)),
    )
    assert share_partition.start_offset == 1
    assert share_partition.acquire("m2", 3, 10, 20) == [AcquiredRecords(1, 1, 2)]
    assert _state_of(share_partition, 1) == (DeliveryState.ACQUIRED, 2, "m2")


def test_release_until_the_limit_archives_the_record_for_good() -> None:
    share_partition = _fresh(SharePartitionConfig(delivery_count_limit=3))
    assert share_partition.acquire("m1", 1, 10, 0) == [AcquiredRecords(0, 0, 1)]
    writes = []
    for attempt in range(1, 4):
        if attempt > 1:
            assert share_partition.acquire("m1", 1, 10, attempt) == [AcquiredRecords(0, 0, attempt)]
        result = share_partition.acknowledge("m1", [_ack(0, 0, RELEASE)], attempt)
        writes.append(result.state_write)

    assert [w.state_batches for w in writes if w is not None] == [
        (StateBatch(0, 0, 0, 1),),
        (StateBatch(0, 0, 0, 2),),
        (StateBatch(0, 0, 4, 3),),
    ]
    assert share_partition.acquire("m1", 1, 10, 10) == []
    assert share_partition.acquire("m2", 1, 10, 10) == []
    assert share_partition.start_offset == 1
    assert share_partition.in_flight() == ()


def test_lock_timeout_redelivers_with_delivery_count_two() -> None:
    share_partition = _fresh(SharePartitionConfig(record_lock_duration_ms=1_000))
    assert share_partition.acquire("m1", 5, 10, 0) == [AcquiredRecords(0, 4, 1)]

    assert share_partition.release_expired_locks(999) == []
    writes = share_partition.release_expired_locks(1_000)

    assert writes == [StateWrite(0, 0, 0, 1, (StateBatch(0, 4, 0, 1),))]
    assert share_partition.acquire("m2", 5, 10, 1_001) == [AcquiredRecords(0, 4, 2)]
    assert (
        share_partition.acknowledge("m1", [_ack(0, 4, ACCEPT)], 1_002).error_code
        == ErrorCode.invalid_record_state
    )


def test_lock_timeout_at_the_limit_archives() -> None:
    share_partition = _fresh(
        SharePartitionConfig(delivery_count_limit=2, record_lock_duration_ms=100)
    )
    share_partition.acquire("m1", 2, 10, 0)
    share_partition.release_expired_locks(100)
    assert share_partition.acquire("m1", 2, 10, 200) == [AcquiredRecords(0, 1, 2)]

    writes = share_partition.release_expired_locks(300)

    assert writes == [StateWrite(0, 2, 0, 1, (StateBatch(0, 1, 4, 2),))]
    assert share_partition.start_offset == 2
    assert share_partition.acquire("m1", 2, 10, 400) == []


def test_renew_extends_the_lock_without_a_write() -> None:
    share_partition = _fresh(SharePartitionConfig(record_lock_duration_ms=100))
    share_partition.acquire("m1", 2, 10, 0)

    result = share_partition.acknowledge("m1", [_ack(0, 1, (int(AcknowledgeType.RENEW),))], 90)

    assert result == share_partition.acknowledge("m1", [], 90)
    assert result.state_write is None
    assert share_partition.release_expired_locks(150) == []
    assert len(share_partition.release_expired_locks(190)) == 1


def test_member_leaving_returns_its_records_and_keeps_the_delivery_count() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 4, 2, 0)
    share_partition.acquire("m2", 4, 2, 0)

    write = share_partition.release_member("m1", 5)

    assert write == StateWrite(0, 0, 0, 1, (StateBatch(0, 1, 0, 1),))
    assert _state_of(share_partition, 2) == (DeliveryState.ACQUIRED, 1, "m2")
    assert share_partition.acquire("m3", 4, 10, 6) == [AcquiredRecords(0, 1, 2)]
    assert share_partition.release_member("nobody", 7) is None


# --------------------------------------------------------------------------- limits and states


def test_max_in_flight_record_locks_are_respected() -> None:
    share_partition = _fresh(SharePartitionConfig(max_in_flight_records=10))

    assert share_partition.acquire("m1", 100, 50, 0) == [AcquiredRecords(0, 9, 1)]
    assert share_partition.acquire("m2", 100, 50, 0) == []

    share_partition.acknowledge("m1", [_ack(0, 4, ACCEPT)], 1)
    assert share_partition.start_offset == 5
    assert share_partition.acquire("m2", 100, 50, 2) == [AcquiredRecords(10, 14, 1)]
    assert share_partition.end_offset - share_partition.start_offset == 10


def test_whole_log_batches_are_acquired_past_max_records() -> None:
    share_partition = _fresh()

    acquired = share_partition.acquire("m1", 30, 3, 0, record_batches=[(0, 9), (10, 19), (20, 29)])

    assert acquired == [AcquiredRecords(0, 9, 1)]
    assert share_partition.acquire(
        "m1", 30, 500, 0, record_batches=[(0, 9), (10, 19), (20, 29)], batch_size=10
    ) == [AcquiredRecords(10, 19, 1), AcquiredRecords(20, 29, 1)]


def test_reject_archives() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 3, 10, 0)

    result = share_partition.acknowledge("m1", [_ack(0, 2, REJECT)], 1)

    assert result.state_write == StateWrite(0, 3, 0, 1, (StateBatch(0, 2, 4, 1),))
    assert share_partition.start_offset == 3
    assert share_partition.acquire("m1", 3, 10, 2) == []


def test_gap_acknowledgement_archives_the_offset() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 3, 10, 0)

    result = share_partition.acknowledge("m1", [_ack(0, 2, (1, int(AcknowledgeType.GAP), 2))], 1)

    assert result.state_write is not None
    assert result.state_write.state_batches == (
        StateBatch(0, 0, 2, 1),
        StateBatch(1, 1, 4, 1),
        StateBatch(2, 2, 0, 1),
    )
    assert share_partition.start_offset == 2
    assert share_partition.delivery_complete_count == 0


def test_acknowledging_someone_elses_records_is_invalid_record_state() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 2, 1, 0)
    share_partition.acquire("m2", 2, 1, 0)
    before = share_partition.in_flight()

    mixed = [_ack(0, 0, ACCEPT), _ack(1, 1, ACCEPT)]
    result = share_partition.acknowledge("m1", mixed, 1)

    assert result.error_code == ErrorCode.invalid_record_state
    assert result.error_code == ErrorCode.invalid_record_state
    assert result.state_write is None
    assert share_partition.in_flight() == before  # all or nothing: offset 0 was rolled back


def test_acknowledging_released_or_unknown_records_fails() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 4, 2, 0)
    share_partition.acknowledge("m1", [_ack(0, 1, RELEASE)], 1)

    assert (
        share_partition.acknowledge("m1", [_ack(0, 0, ACCEPT)], 2).error_code
        == ErrorCode.invalid_record_state
    )
    assert (
        share_partition.acknowledge("m1", [_ack(2, 3, ACCEPT)], 2).error_code
        == ErrorCode.invalid_request
    )
    assert (
        share_partition.acknowledge("m1", [_ack(0, 1, (1, 1, 1))], 2).error_code
        == ErrorCode.invalid_request
    )
    assert (
        share_partition.acknowledge("m1", [_ack(0, 0, (9,))], 2).error_code
        == ErrorCode.invalid_request
    )


def test_start_offset_advances_past_the_finished_prefix_only() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 10, 10, 0)

    first = share_partition.acknowledge("m1", [_ack(2, 9, ACCEPT)], 1).state_write
    assert share_partition.start_offset == 0
    assert share_partition.delivery_complete_count == 8
    assert share_partition.lag(10) == 2

    second = share_partition.acknowledge("m1", [_ack(0, 1, REJECT)], 2).state_write

    assert share_partition.start_offset == 10 == share_partition.end_offset
    assert share_partition.delivery_complete_count == 0
    # The writes carry the start offset from before each acknowledgement moved it.
    assert first is not None and second is not None
    assert (first.start_offset, first.delivery_complete_count) == (0, 8)
    assert (second.start_offset, second.delivery_complete_count) == (0, 10)


def test_deferred_acknowledgement_blocks_reacquisition_until_committed() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 2, 10, 0)
    share_partition.acknowledge("m1", [_ack(0, 1, RELEASE)], 1, defer_commit=True)

    assert share_partition.has_pending_writes
    assert share_partition.acquire("m2", 2, 10, 2) == []
    assert (
        share_partition.acknowledge("m1", [_ack(0, 1, ACCEPT)], 2).error_code
        == ErrorCode.invalid_record_state
    )
    share_partition.commit_pending()
    assert share_partition.acquire("m2", 2, 10, 3) == [AcquiredRecords(0, 1, 2)]


def test_failed_write_rolls_back_to_the_holder() -> None:
    share_partition = _fresh(SharePartitionConfig(record_lock_duration_ms=100))
    share_partition.acquire("m1", 2, 10, 0)
    share_partition.acknowledge("m1", [_ack(0, 1, ACCEPT)], 1, defer_commit=True)
    assert share_partition.delivery_complete_count == 2

    share_partition.rollback_pending(2)

    assert share_partition.delivery_complete_count == 0
    assert _state_of(share_partition, 0) == (DeliveryState.ACQUIRED, 1, "m1")
    assert share_partition.acknowledge("m1", [_ack(0, 1, ACCEPT)], 3).error_code == 0
    assert share_partition.start_offset == 2


def test_redelivery_is_throttled_as_the_delivery_count_grows() -> None:
    share_partition = _fresh()
    for expected_count in (1, 2, 3):
        assert share_partition.acquire("m1", 10, 500, 0) == [AcquiredRecords(0, 9, expected_count)]
        share_partition.acknowledge("m1", [_ack(0, 9, RELEASE)], 0)

    # Past half the limit (3 of 5) a batch goes out in halves...
    assert share_partition.acquire("m1", 10, 500, 1) == [AcquiredRecords(0, 4, 4)]
    assert share_partition.acquire("m2", 10, 500, 1) == [AcquiredRecords(5, 9, 4)]
    share_partition.acknowledge("m1", [_ack(0, 4, RELEASE)], 2)
    # ...and a record on its last attempt goes out alone.
    assert share_partition.acquire("m1", 10, 500, 3) == [AcquiredRecords(0, 0, 5)]
    assert share_partition.acquire("m1", 10, 500, 3) == [AcquiredRecords(1, 1, 5)]


# --------------------------------------------------------------------------- initialisation


def test_uninitialised_state_needs_the_reset_offset() -> None:
    with pytest.raises(ValueError, match=r"share\.auto\.offset\.reset"):
        SharePartition(start_offset=-1, state_epoch=1)
    latest = SharePartition(start_offset=-1, state_epoch=1, reset_start_offset=42)
    assert latest.start_offset == latest.end_offset == 42
    assert latest.acquire("m1", 45, 10, 0) == [AcquiredRecords(42, 44, 1)]


def test_initialisation_from_persisted_state() -> None:
    share_partition = SharePartition(
        start_offset=5,
        state_epoch=2,
        state_batches=[StateBatch(5, 7, 2, 1), StateBatch(8, 9, 0, 2), StateBatch(10, 10, 4, 5)],
    )

    assert share_partition.start_offset == 8
    assert share_partition.delivery_complete_count == 1
    assert share_partition.lag(12) == 12 - 8 - 1
    # Released records come back first, then the fetch goes on past the window's end.
    assert share_partition.acquire("m1", 12, 10, 0) == [
        AcquiredRecords(8, 9, 3),
        AcquiredRecords(11, 11, 1),
    ]
    with pytest.raises(ValueError, match="before the start offset"):
        SharePartition(start_offset=5, state_epoch=1, state_batches=[StateBatch(4, 6, 2, 1)])


def test_gaps_in_persisted_state_are_delivered_and_hold_the_start_offset() -> None:
    share_partition = SharePartition(
        start_offset=0, state_epoch=1, state_batches=[StateBatch(5, 9, 2, 1)]
    )

    assert share_partition.start_offset == 0
    assert share_partition.acquire("m1", 12, 500, 0) == [
        AcquiredRecords(0, 4, 1),
        AcquiredRecords(10, 11, 1),
    ]
    write = share_partition.acknowledge("m1", [_ack(0, 4, ACCEPT)], 1).state_write

    assert write == StateWrite(0, 10, 0, 1, (StateBatch(0, 4, 2, 1),))
    assert share_partition.start_offset == 10
    assert [record.offset for record in share_partition.in_flight()] == [10, 11]


def test_reset_drops_the_window() -> None:
    share_partition = _fresh()
    share_partition.acquire("m1", 10, 10, 0)
    share_partition.acknowledge("m1", [_ack(3, 3, ACCEPT)], 1)

    share_partition.reset(7)

    assert share_partition.in_flight() == ()
    assert (share_partition.start_offset, share_partition.delivery_complete_count) == (7, 0)
    assert share_partition.acquire("m1", 10, 10, 2) == [AcquiredRecords(7, 9, 1)]


# --------------------------------------------------------------------------- properties

_MEMBERS = ("m1", "m2", "m3")
_LOG_END = 40

_operation = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(_MEMBERS), st.integers(1, 12)),
    st.tuples(
        st.just("ack"),
        st.sampled_from(_MEMBERS),
        st.tuples(st.integers(0, _LOG_END - 1), st.integers(0, 6), st.integers(0, 4)),
    ),
    st.tuples(st.just("leave"), st.sampled_from(_MEMBERS), st.just(0)),
    st.tuples(st.just("tick"), st.just(""), st.integers(0, 150)),
)


@settings(max_examples=200, deadline=None)
@given(operations=st.lists(_operation, max_size=60))
def test_no_offset_is_held_twice_and_finished_records_never_return(
    operations: list[tuple[str, str, Any]],
) -> None:
    share_partition = _fresh(
        SharePartitionConfig(
            max_in_flight_records=16, delivery_count_limit=3, record_lock_duration_ms=100
        )
    )
    finished: set[int] = set()
    now_ms = 0
    for kind, member_id, argument in operations:
        before = {record.offset: record for record in share_partition.in_flight()}
        if kind == "acquire":
            acquired = share_partition.acquire(member_id, _LOG_END, argument, now_ms)
            after = {record.offset: record for record in share_partition.in_flight()}
            for records in acquired:
                for offset in range(records.first_offset, records.last_offset + 1):
                    assert offset not in finished
                    previous = before.get(offset)
                    assert previous is None or previous.state is DeliveryState.AVAILABLE
                    assert after[offset].state is DeliveryState.ACQUIRED
                    assert after[offset].member_id == member_id
                    assert after[offset].delivery_count == records.delivery_count
        elif kind == "ack":
            first, length, ack_type = argument
            share_partition.acknowledge(
                member_id, [_ack(first, first + length, (ack_type,))], now_ms
            )
        elif kind == "leave":
            share_partition.release_member(member_id, now_ms)
        else:
            now_ms += argument
            share_partition.release_expired_locks(now_ms)

        window = share_partition.in_flight()
        for record in window:
            if record.state.is_terminal:
                finished.add(record.offset)
            if record.state is DeliveryState.ACQUIRED:
                assert record.member_id in _MEMBERS
            else:
                assert record.member_id == ""
            assert record.delivery_count <= 3
        assert all(
            offset < share_partition.start_offset
            for offset in finished - {record.offset for record in window}
        )
        assert share_partition.delivery_complete_count == sum(
            1 for record in window if record.state.is_terminal
        )
        assert share_partition.start_offset <= share_partition.end_offset
