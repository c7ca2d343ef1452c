"""Column-wise decoding of ShareUpdate values (`records.decode_update_columns`) against
`records.decode_record`, value for value."""

from __future__ import annotations

import uuid

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kshare_cli.state.records import (
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecordError,
    StateRecordKind,
    decode_record,
    decode_update_columns,
    encode_key,
    encode_value,
)

KEY = encode_key(ShareStateKey(StateRecordKind.UPDATE, "g", uuid.UUID(int=7), 0))

_updates = st.builds(
    ShareUpdateValue,
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.lists(
        st.builds(
            StateBatch,
            st.integers(-(2**63), 2**63 - 1),
            st.integers(-(2**63), 2**63 - 1),
            st.integers(-128, 127),
            st.integers(-(2**15), 2**15 - 1),
        ),
        max_size=130,
    ).map(tuple),
)


def _columns(values: list[bytes]) -> object:
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    ends = np.cumsum([len(value) for value in values])
    return decode_update_columns(data, ends - [len(value) for value in values], ends)


@settings(max_examples=200, deadline=None)
@given(st.lists(_updates, max_size=6))
def test_updates_decode_column_wise_as_one_by_one(updates: list[ShareUpdateValue]) -> None:
    values = [encode_value(update) for update in updates]
    columns = _columns(values)
    if any(len(update.state_batches) >= 127 for update in updates):
        assert columns is None  # a two-byte batch count: decode_record reads those
        return
    assert columns is not None
    decoded = [decode_record(KEY, value).value for value in values]
    assert columns.leader_epochs.tolist() == [value.leader_epoch for value in decoded]
    assert columns.start_offsets.tolist() == [value.start_offset for value in decoded]
    assert columns.delivery_complete_counts.tolist() == [
        value.delivery_complete_count for value in decoded
    ]
    assert columns.batch_counts.tolist() == [len(value.state_batches) for value in decoded]
    batches = [batch for value in decoded for batch in value.state_batches]
    assert columns.first_offsets.tolist() == [batch.first_offset for batch in batches]
    assert columns.last_offsets.tolist() == [batch.last_offset for batch in batches]
    assert columns.delivery_states.tolist() == [batch.delivery_state for batch in batches]
    assert columns.delivery_counts.tolist() == [batch.delivery_count for batch in batches]


@settings(max_examples=200, deadline=None)
@given(_updates, st.data())
def test_a_damaged_value_is_left_to_decode_record(
    update: ShareUpdateValue, data: st.DataObject
) -> None:
    """Bytes changed or cut: never a decoding decode_record would not give; None whenever
    decode_record fails."""
    value = bytearray(encode_value(update))
    if data.draw(st.booleans()):
        del value[data.draw(st.integers(0, len(value) - 1)) :]
    else:
        value[data.draw(st.integers(0, len(value) - 1))] = data.draw(st.integers(0, 255))
    columns = _columns([bytes(value)])
    try:
        expected = decode_record(KEY, bytes(value)).value
    except StateRecordError:
        assert columns is None
        return
    if columns is not None:
        assert isinstance(expected, ShareUpdateValue)
        assert columns.start_offsets.tolist() == [expected.start_offset]
        assert columns.delivery_complete_counts.tolist() == [expected.delivery_complete_count]
        assert columns.first_offsets.tolist() == [b.first_offset for b in expected.state_batches]
        assert columns.delivery_counts.tolist() == [
            b.delivery_count for b in expected.state_batches
        ]
