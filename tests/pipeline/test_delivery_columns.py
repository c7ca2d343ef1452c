"""The deliveries audit's column-wise ranges (`pipeline.delivery_columns`) against its
record-by-record offset history (`deliveries._record_by_record`, which
tests/pipeline/test_deliveries.py checks offset by offset)."""

from __future__ import annotations

import datetime
import random
import uuid
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from kshare_cli.pipeline import deliveries
from kshare_cli.pipeline.delivery_columns import delivery_ranges
from kshare_cli.pipeline.replay_columns import decoded_records
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

TOPIC = uuid.UUID("5f1b3b9e-33a1-4f4e-9d0c-6a1b2c3d4e5f")
SNAPSHOT_KEY = ShareStateKey(StateRecordKind.SNAPSHOT, "audit", TOPIC, 3)
UPDATE_KEY = ShareStateKey(StateRecordKind.UPDATE, "audit", TOPIC, 3)
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _table(records: list[StateRecord]) -> Any:
    """The records as the grouped map hands them over (state-topic partition 5)."""
    encoded = [encode_record(record) for record in records]
    return pa.table(
        {
            "state_partition": pa.array([5] * len(records), pa.int32()),
            "state_offset": pa.array(range(len(records)), pa.int64()),
            "state_timestamp": pa.array(
                [EPOCH + datetime.timedelta(seconds=index) for index in range(len(records))],
                pa.timestamp("us", tz="UTC"),
            ),
            "key": pa.array([key for key, _ in encoded], pa.binary()),
            "value": pa.array([value for _, value in encoded], pa.binary()),
            "share_partition": pa.array([key[2:] for key, _ in encoded], pa.binary()),
        }
    )


def _assert_same_ranges(records: list[StateRecord], gaps: dict[int, int]) -> None:
    table = _table(records)
    columns, skipped = deliveries._share_partition_deliveries(table, None, gaps)
    expected, expected_skipped = deliveries._record_by_record(table, None, gaps)
    assert skipped == expected_skipped
    assert columns.to_pylist() == expected.to_pylist()


def _took_columns(records: list[StateRecord], gap: int | None = None) -> bool:
    table = _table(records)
    decoded = decoded_records(table.column("key"), table.column("value"))
    if decoded is None:
        return False
    ranges = delivery_ranges(
        decoded,
        table.column("state_timestamp").cast(pa.int64()).to_numpy(),
        table.column("state_offset").to_numpy(),
        gap,
    )
    return ranges is not None


def _consumers_story(seed: int, writes: int) -> list[StateRecord]:
    """Acknowledgements, releases and archivals beyond everything before, the start
    offset trailing, and every 20 writes a snapshot restating the window."""
    chooser = random.Random(seed)
    start = 0
    next_offset = 0
    window: list[StateBatch] = []
    records = [StateRecord(SNAPSHOT_KEY, ShareSnapshotValue(0, 1, 0, 0, -1, 1, 1, ()))]
    states = list(DeliveryState)[:1] + [DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED]
    for write in range(writes):
        batches = []
        for _ in range(chooser.randrange(1, 4)):
            first = next_offset + chooser.randrange(0, 2)
            last = first + chooser.randrange(0, 3)
            next_offset = last + 1
            batches.append(StateBatch(first, last, chooser.choice(states), chooser.randrange(1, 3)))
        window = [batch for batch in [*window, *batches] if batch.last_offset >= start]
        moved = -1
        if chooser.random() < 0.3 and window:
            start = moved = window[chooser.randrange(len(window))].first_offset
            window = [batch for batch in window if batch.last_offset >= start]
        records.append(
            StateRecord(UPDATE_KEY, ShareUpdateValue(write // 20, -1, moved, 4, tuple(batches)))
        )
        if write % 20 == 19:
            value = ShareSnapshotValue(write // 20 + 1, 1, 0, start, 4, 1, 1, tuple(window))
            records.append(StateRecord(SNAPSHOT_KEY, value))
    return records


def test_consumers_working_through_a_partition_give_the_same_ranges_column_wise() -> None:
    for seed in range(15):
        records = _consumers_story(seed, writes=120)
        assert _took_columns(records)
        _assert_same_ranges(records, {})
        _assert_same_ranges(records[7:], {})  # pruned: the earliest record is not dated
        _assert_same_ranges(records, {5: 40})  # a gap before state offset 40


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.integers(0, 2),
            st.integers(-1, 30),
            st.lists(
                st.tuples(
                    st.integers(0, 30),
                    st.integers(0, 4),
                    st.sampled_from([0, 2, 3, 4, 7]),
                    st.integers(0, 3),
                ),
                max_size=3,
            ),
        ),
        min_size=1,
        max_size=10,
    ),
    st.one_of(st.none(), st.integers(0, 10)),
)
def test_any_records_give_the_record_by_record_ranges(
    writes: list[tuple[bool, int, int, list[tuple[int, int, int, int]]]], gap: int | None
) -> None:
    records = []
    for is_snapshot, epoch, start, raw in writes:
        batches = tuple(
            StateBatch(first, first + width, state, count) for first, width, state, count in raw
        )
        if is_snapshot:
            value: Any = ShareSnapshotValue(epoch, 1, 0, start, 2, 5, 6, batches)
            records.append(StateRecord(SNAPSHOT_KEY, value))
        else:
            records.append(StateRecord(UPDATE_KEY, ShareUpdateValue(epoch, 0, start, 2, batches)))
    _assert_same_ranges(records, {} if gap is None else {5: gap})
