"""The timeline's column-wise replay (`pipeline.replay_columns`) against `ShareStateReplayer`.

Every figure of every record's state must be what replaying record by record
with `replay.ShareStateReplayer` and counting with `window.window_counts`
gives; where the column-wise path declines (None), the per-record replay
runs instead, so the stories here are the ones it must not decline.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from kshare_cli.pipeline.replay_columns import WINDOW_FIGURES, replayed_columns
from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.records import (
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    encode_record,
)
from kshare_cli.state.replay import SharePartitionKey, ShareStateReplayer, same_state
from kshare_cli.state.window import window_counts

TOPIC = uuid.UUID("5f1b3b9e-33a1-4f4e-9d0c-6a1b2c3d4e5f")
SHARE_PARTITION = SharePartitionKey("audit", TOPIC, 3)
SNAPSHOT_KEY = ShareStateKey(StateRecordKind.SNAPSHOT, "audit", TOPIC, 3)
UPDATE_KEY = ShareStateKey(StateRecordKind.UPDATE, "audit", TOPIC, 3)
STATES = (
    DeliveryState.AVAILABLE,
    DeliveryState.ACKNOWLEDGED,
    DeliveryState.ARCHIVING,
    DeliveryState.ARCHIVED,
)


def _reference(records: list[StateRecord]) -> dict[str, list[Any]]:
    """Per record: the figures the record-by-record replay gives."""
    replayer = ShareStateReplayer()
    figures: dict[str, list[Any]] = {name: [] for name in (*WINDOW_FIGURES, "restated")}
    before = None
    for record in records:
        replayer.apply(record)
        state = replayer.state(SHARE_PARTITION)
        assert state is not None
        counts = window_counts(state)
        values = {
            "snapshot_epoch": state.snapshot_epoch,
            "state_epoch": state.state_epoch,
            "leader_epoch": state.leader_epoch,
            "start_offset": state.start_offset,
            "delivery_complete_count": state.delivery_complete_count,
            "end_offset": counts.end_offset,
            "available": counts.available,
            "acknowledged": counts.acknowledged,
            "archived": counts.archived,
            "archiving": counts.archiving,
            "unrecorded": counts.unrecorded,
            "max_delivery_count": counts.max_delivery_count,
            "restated": before is not None
            and record.key.kind is StateRecordKind.SNAPSHOT
            and same_state(before, state),
        }
        for name, value in values.items():
            figures[name].append(value)
        before = state
    return figures


def _columns(records: list[StateRecord]) -> dict[str, Any] | None:
    encoded = [encode_record(record) for record in records]
    keys = pa.array([key for key, _ in encoded], pa.binary())
    values = pa.array([value for _, value in encoded], pa.binary())
    return replayed_columns(keys, values)


def _assert_agrees(records: list[StateRecord]) -> None:
    columns = _columns(records)
    assert columns is not None, "the column-wise replay declined a coordinator's records"
    expected = _reference(records)
    for name, values in expected.items():
        assert np.asarray(columns[name]).tolist() == values, name
    kinds = [record.key.kind is StateRecordKind.SNAPSHOT for record in records]
    assert np.asarray(columns["is_snapshot"]).tolist() == kinds


def _coordinator_story(seed: int, writes: int, per_snapshot: int) -> list[StateRecord]:
    """A share coordinator's records for one share-partition: consumers acknowledge,
    release (redelivered later with a higher count), archive, and the start offset
    trails; a snapshot every per_snapshot updates, as Kafka folds them."""
    chooser = random.Random(seed)
    coordinator = ShareCoordinatorState(updates_per_snapshot=per_snapshot)
    log: list[StateRecord] = []

    def append(record: StateRecord | None) -> None:
        if record is not None:
            coordinator.apply(record)
            log.append(record)

    append(coordinator.initialize(SHARE_PARTITION, state_epoch=1, start_offset=0))
    next_offset = 0
    for _ in range(writes):
        current = coordinator.state(SHARE_PARTITION)
        assert current is not None
        first = next_offset
        size = chooser.randrange(1, 6)
        next_offset += size + chooser.randrange(0, 3)
        batches = [
            StateBatch(first, first + size - 1, chooser.choice(STATES), chooser.randrange(1, 4))
        ]
        advance = chooser.random() < 0.4
        start = current.start_offset + chooser.randrange(0, 4) if advance else -1
        append(
            coordinator.write(
                SHARE_PARTITION,
                start_offset=start,
                delivery_complete_count=chooser.randrange(-1, 9),
                leader_epoch=chooser.choice([-1, 0, 1]),
                state_epoch=1,
                state_batches=batches,
            )
        )
    return log


def test_a_coordinators_records_replay_column_wise_as_record_by_record() -> None:
    for seed in range(20):
        _assert_agrees(_coordinator_story(seed, writes=300, per_snapshot=25))


def test_a_snapshot_that_restates_the_state_is_marked_restated() -> None:
    def snapshot(epoch: int, start: int, *batches: StateBatch) -> StateRecord:
        return StateRecord(
            SNAPSHOT_KEY, ShareSnapshotValue(epoch, 1, 0, start, 3, 10, 20 + epoch, batches)
        )

    def update(start: int, *batches: StateBatch) -> StateRecord:
        return StateRecord(UPDATE_KEY, ShareUpdateValue(0, -1, start, 3, batches))

    available = DeliveryState.AVAILABLE
    acknowledged = DeliveryState.ACKNOWLEDGED
    records = [
        snapshot(0, 0, StateBatch(0, 4, acknowledged, 1)),
        snapshot(1, 0, StateBatch(0, 4, acknowledged, 1)),
        update(2, StateBatch(5, 6, acknowledged, 1), StateBatch(7, 9, available, 2)),
        snapshot(2, 2, StateBatch(2, 6, acknowledged, 1), StateBatch(7, 9, available, 2)),
        snapshot(3, 2, StateBatch(2, 6, acknowledged, 1), StateBatch(7, 8, available, 2)),
    ]
    columns = _columns(records)

    assert columns is not None
    assert np.asarray(columns["restated"]).tolist() == [False, True, False, True, False]
    _assert_agrees(records)


_batch_lists = st.lists(
    st.tuples(
        st.integers(0, 30),
        st.integers(0, 4),
        st.sampled_from([0, 1, 2, 3, 4, 5]),
        st.integers(0, 5),
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(-1, 40), st.integers(-1, 3), _batch_lists),
        min_size=1,
        max_size=12,
    )
)
def test_any_records_give_the_record_by_record_figures_or_none(
    writes: list[tuple[bool, int, int, list[tuple[int, int, int, int]]]],
) -> None:
    """Arbitrary records, overlapping batches, start offsets moving back, updates before
    any snapshot: never a figure that differs from the per-record replay."""
    records = []
    for is_snapshot, start, leader_epoch, raw in writes:
        batches = tuple(
            StateBatch(first, first + width, state, count) for first, width, state, count in raw
        )
        if is_snapshot:
            value: Any = ShareSnapshotValue(1, 1, leader_epoch, start, 2, 5, 6, batches)
            records.append(StateRecord(SNAPSHOT_KEY, value))
        else:
            records.append(
                StateRecord(UPDATE_KEY, ShareUpdateValue(1, leader_epoch, start, 2, batches))
            )
    columns = _columns(records)
    if columns is None:
        return
    expected = _reference(records)
    for name, values in expected.items():
        assert np.asarray(columns[name]).tolist() == values, name
