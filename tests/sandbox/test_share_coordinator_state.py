"""The sandbox share coordinator's writes, against what a Kafka 4.2.0 share coordinator did."""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    DELETE_SHARE_GROUP_STATE,
    INITIALIZE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE,
    WRITE_SHARE_GROUP_STATE,
)
from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.sandbox.share_coordinator_state import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    ShareCoordinatorState,
    UninitializedSharePartitionError,
)
from kshare_cli.state.records import (
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
)
from kshare_cli.state.replay import SharePartitionKey
from tests.state.test_replay import GOLDEN_LOG, GOLDEN_TOPIC_ID, P0, P1, _golden_g
from tests.support.golden import GOLDEN

ACKED, AVAILABLE, ARCHIVED = (
    DeliveryState.ACKNOWLEDGED,
    DeliveryState.AVAILABLE,
    DeliveryState.ARCHIVED,
)
_SHARE_STATE_KEYS = (
    INITIALIZE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE,
    WRITE_SHARE_GROUP_STATE,
    DELETE_SHARE_GROUP_STATE,
)


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _batches(*triples: tuple[int, int, int, int]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(*triple) for triple in triples)


# --------------------------------------------------------------------------- golden writes


def _share_state_calls() -> list[dict[str, Any]]:
    """golden-g's share-state RPCs from the broker's persister, in the order they were answered."""
    calls = []
    for line in _load_jsonl(GOLDEN / "decoded" / "scenario-a.wire.jsonl"):
        if line["api_key"] in _SHARE_STATE_KEYS and line["request"]["groupId"] == "golden-g":
            calls.append(line)
    return calls


def test_coordinator_reproduces_golden_g_records_from_the_recorded_requests() -> None:
    clock_ms = 1795263252201
    coordinator = ShareCoordinatorState(clock=lambda: clock_ms)
    produced: list[StateRecord] = []
    writes = 0

    for call in _share_state_calls():
        request = call["request"]
        (topic,) = request["topics"]
        (partition,) = topic["partitions"]
        share_partition = SharePartitionKey(
            request["groupId"], _kafka_uuid(topic["topicId"]), partition["partition"]
        )
        record: StateRecord | None
        if call["api_key"] == INITIALIZE_SHARE_GROUP_STATE:
            record = coordinator.initialize(
                share_partition,
                state_epoch=partition["stateEpoch"],
                start_offset=partition["startOffset"],
            )
        elif call["api_key"] == READ_SHARE_GROUP_STATE:
            state, record = coordinator.read(share_partition, leader_epoch=partition["leaderEpoch"])
            response = call["response"]["results"][0]["partitions"][0]
            assert (state.start_offset, state.state_epoch) == (
                response["startOffset"],
                response["stateEpoch"],
            )
        elif call["api_key"] == WRITE_SHARE_GROUP_STATE:
            writes += 1
            record = coordinator.write(
                share_partition,
                start_offset=partition["startOffset"],
                delivery_complete_count=partition["deliveryCompleteCount"],
                leader_epoch=partition["leaderEpoch"],
                state_epoch=partition["stateEpoch"],
                state_batches=[
                    StateBatch(
                        batch["firstOffset"],
                        batch["lastOffset"],
                        batch["deliveryState"],
                        batch["deliveryCount"],
                    )
                    for batch in partition["stateBatches"]
                ],
            )
        else:
            record = coordinator.delete(share_partition)
        if record is not None:
            produced.append(record)
            coordinator.apply(record)

    expected = _golden_g(GOLDEN_LOG)
    assert writes == 7
    assert len(produced) == len(expected) == 14

    def by_partition(records: list[StateRecord]) -> dict[int, list[StateRecord]]:
        """Records per partition; snapshot timestamps zeroed, as they are the clock's."""
        grouped: dict[int, list[StateRecord]] = {}
        for record in records:
            value = record.value
            if isinstance(value, ShareSnapshotValue):
                value = dataclasses.replace(value, create_timestamp=0, write_timestamp=0)
                record = dataclasses.replace(record, value=value)
            grouped.setdefault(record.key.partition, []).append(record)
        return grouped

    assert {
        (record.value.create_timestamp, record.value.write_timestamp)
        for record in produced
        if isinstance(record.value, ShareSnapshotValue)
    } == {(clock_ms, clock_ms)}
    assert by_partition(produced) == by_partition(expected)
    # The README's example: request batches [0,0] and [1,1], both acknowledged, became [0,1].
    first_update = next(r for r in produced if isinstance(r.value, ShareUpdateValue))
    assert first_update.value is not None
    assert first_update.value.state_batches[0] == StateBatch(0, 1, ACKED, 1)
    assert coordinator.states().keys().isdisjoint({P0, P1})


# --------------------------------------------------------------------------- coordinator rules


def _initialized(
    updates_per_snapshot: int = 500,
) -> tuple[ShareCoordinatorState, SharePartitionKey]:
    coordinator = ShareCoordinatorState(updates_per_snapshot=updates_per_snapshot, clock=lambda: 7)
    share_partition = SharePartitionKey("g", GOLDEN_TOPIC_ID, 0)
    coordinator.apply(coordinator.initialize(share_partition, state_epoch=1, start_offset=-1))
    return coordinator, share_partition


def _write(
    coordinator: ShareCoordinatorState,
    share_partition: SharePartitionKey,
    start_offset: int,
    *batches: tuple[int, int, int, int],
    leader_epoch: int = 0,
    state_epoch: int = 1,
) -> StateRecord:
    record = coordinator.write(
        share_partition,
        start_offset=start_offset,
        delivery_complete_count=start_offset + 1,
        leader_epoch=leader_epoch,
        state_epoch=state_epoch,
        state_batches=_batches(*batches),
    )
    coordinator.apply(record)
    return record


def test_snapshot_after_the_configured_number_of_updates() -> None:
    coordinator, share_partition = _initialized(updates_per_snapshot=3)
    kinds = [
        _write(coordinator, share_partition, offset, (offset, offset + 1, ACKED, 1)).key.kind
        for offset in range(10)
    ]

    # Kafka 4.2.0 counts the first update after the initial snapshot as 0, so
    # the first threshold snapshot comes after 4 updates, the next ones after 3.
    snapshot, update = StateRecordKind.SNAPSHOT, StateRecordKind.UPDATE
    assert kinds == [update] * 4 + [snapshot] + [update] * 3 + [snapshot] + [update]
    state = coordinator.state(share_partition)
    assert state is not None
    assert (state.snapshot_epoch, state.start_offset) == (2, 9)
    assert state.state_batches == _batches((9, 10, ACKED, 1))


def test_threshold_snapshot_folds_in_the_state_so_far() -> None:
    coordinator, share_partition = _initialized(updates_per_snapshot=0)

    first = _write(coordinator, share_partition, 0, (0, 4, ACKED, 1), (5, 9, AVAILABLE, 1))
    second = _write(coordinator, share_partition, 5, (5, 6, ACKED, 2))

    assert isinstance(first.value, ShareSnapshotValue)
    assert isinstance(second.value, ShareSnapshotValue)
    assert second.value.snapshot_epoch == 2
    assert second.value.state_epoch == 1
    assert (second.value.create_timestamp, second.value.write_timestamp) == (7, 7)
    assert second.value.state_batches == _batches((5, 6, ACKED, 2), (7, 9, AVAILABLE, 1))


def test_update_carries_only_the_request_batches_and_keeps_the_recorded_leader_epoch() -> None:
    coordinator, share_partition = _initialized()
    _write(coordinator, share_partition, 0, (0, 9, AVAILABLE, 1))

    record = _write(
        coordinator, share_partition, -1, (3, 3, ACKED, 1), (4, 4, ACKED, 1), leader_epoch=4
    )

    assert record.value == ShareUpdateValue(
        snapshot_epoch=0,
        leader_epoch=0,
        start_offset=-1,
        delivery_complete_count=0,
        state_batches=_batches((3, 4, ACKED, 1)),
    )
    state = coordinator.state(share_partition)
    assert state is not None
    assert state.start_offset == 0  # -1 in an update means "unchanged"
    assert state.state_batches == _batches(
        (0, 2, AVAILABLE, 1), (3, 4, ACKED, 1), (5, 9, AVAILABLE, 1)
    )


def test_write_fencing() -> None:
    coordinator, share_partition = _initialized()
    unknown = SharePartitionKey("g", GOLDEN_TOPIC_ID, 9)

    with pytest.raises(UninitializedSharePartitionError) as uninitialized:
        _write(coordinator, unknown, 0)
    assert uninitialized.value.error_code == ErrorCode.invalid_request

    state, record = coordinator.read(share_partition, leader_epoch=3)
    assert record is not None and record.value is not None
    assert record.value.leader_epoch == 3
    assert record.value.state_batches == ()
    coordinator.apply(record)
    assert coordinator.read(share_partition, leader_epoch=3)[1] is None

    with pytest.raises(FencedLeaderEpochError) as fenced_leader:
        _write(coordinator, share_partition, 0, leader_epoch=2)
    assert fenced_leader.value.error_code == ErrorCode.fenced_leader_epoch
    assert str(fenced_leader.value) == "leader epoch 2 is older than 3"
    _write(coordinator, share_partition, 0, leader_epoch=-1)

    coordinator.apply(coordinator.initialize(share_partition, state_epoch=3, start_offset=0))
    with pytest.raises(FencedStateEpochError) as fenced_state:
        _write(coordinator, share_partition, 1, leader_epoch=3, state_epoch=1)
    assert fenced_state.value.error_code == ErrorCode.fenced_state_epoch
    assert str(fenced_state.value) == "state epoch 1 is older than 3"
    with pytest.raises(FencedStateEpochError, match="^state epoch 2 is older than 3$"):
        coordinator.initialize(share_partition, state_epoch=2, start_offset=0)


def test_initialize_starts_a_new_snapshot_epoch_and_delete_forgets_everything() -> None:
    coordinator, share_partition = _initialized()
    _write(coordinator, share_partition, 0, (0, 9, ACKED, 1))

    reset = coordinator.initialize(share_partition, state_epoch=2, start_offset=4)
    coordinator.apply(reset)
    tombstone = coordinator.delete(share_partition)
    assert tombstone is not None
    coordinator.apply(tombstone)

    assert reset.value == ShareSnapshotValue(1, 2, 0, 4, -1, 7, 7, ())
    assert tombstone == StateRecord(
        ShareStateKey(StateRecordKind.SNAPSHOT, "g", GOLDEN_TOPIC_ID, 0), None
    )
    assert coordinator.state(share_partition) is None
    assert coordinator.delete(share_partition) is None
    # After deletion an old state epoch is accepted again, as the epoch is forgotten.
    again = coordinator.initialize(share_partition, state_epoch=1, start_offset=-1)
    assert again.value is not None and again.value.snapshot_epoch == 0
