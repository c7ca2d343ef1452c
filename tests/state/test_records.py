"""The state-record codec against the bytes a Kafka 4.2.0 broker wrote and Kafka's own decoding."""

from __future__ import annotations

import base64
import dataclasses
import json
import pickle
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.state import records
from kshare_cli.state.records import (
    DELIVERY_COMPLETE_COUNT_UNKNOWN,
    LATEST_VALUE_VERSION,
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordError,
    StateRecordKind,
    StateValue,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_record,
    encode_value,
    state_batches_from_fields,
)
from tests.support.golden import GOLDEN

TOPIC_ID = uuid.UUID("d1384e70-b203-4446-8f5e-1417096b3c51")  # golden-a


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _golden_pairs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    raw = _load_jsonl(GOLDEN / "state" / "share-group-state.jsonl")
    decoded = _load_jsonl(GOLDEN / "decoded" / "share-group-state.jsonl")
    assert len(raw) == len(decoded) == 109
    for raw_row, decoded_row in zip(raw, decoded, strict=True):
        assert (raw_row["partition"], raw_row["offset"]) == (
            decoded_row["partition"],
            decoded_row["offset"],
        )
    return list(zip(raw, decoded, strict=True))


GOLDEN_PAIRS = _golden_pairs()


def _bytes_of(row: dict[str, Any]) -> tuple[bytes, bytes | None]:
    value = row["value_b64"]
    return base64.b64decode(row["key_b64"]), None if value is None else base64.b64decode(value)


def _kafka_uuid(text: str) -> uuid.UUID:
    # Kafka renders a Uuid as unpadded URL-safe base64.
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _kafka_batches(rows: list[dict[str, int]]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(
            row["firstOffset"], row["lastOffset"], row["deliveryState"], row["deliveryCount"]
        )
        for row in rows
    )


def _record_as_kafka_decoded_it(row: dict[str, Any]) -> StateRecord:
    """Kafka's JSON rendering of a record, as this codec's types."""
    key = ShareStateKey(
        StateRecordKind(row["key_type"]),
        row["key"]["groupId"],
        _kafka_uuid(row["key"]["topicId"]),
        row["key"]["partition"],
    )
    value = row["value"]
    if value is None:
        return StateRecord(key, None)
    # The JSON converter leaves out a tagged field that holds its default.
    count = value.get("deliveryCompleteCount", DELIVERY_COMPLETE_COUNT_UNKNOWN)
    if row["value_record"] == "ShareSnapshotValue":
        return StateRecord(
            key,
            ShareSnapshotValue(
                snapshot_epoch=value["snapshotEpoch"],
                state_epoch=value["stateEpoch"],
                leader_epoch=value["leaderEpoch"],
                start_offset=value["startOffset"],
                delivery_complete_count=count,
                create_timestamp=value["createTimestamp"],
                write_timestamp=value["writeTimestamp"],
                state_batches=_kafka_batches(value["stateBatches"]),
            ),
        )
    assert row["value_record"] == "ShareUpdateValue"
    return StateRecord(
        key,
        ShareUpdateValue(
            snapshot_epoch=value["snapshotEpoch"],
            leader_epoch=value["leaderEpoch"],
            start_offset=value["startOffset"],
            delivery_complete_count=count,
            state_batches=_kafka_batches(value["stateBatches"]),
        ),
    )


# --------------------------------------------------------------------------- golden corpus


@pytest.mark.parametrize(
    ("raw", "decoded"),
    GOLDEN_PAIRS,
    ids=[f"p{raw['partition']}-o{raw['offset']}" for raw, _ in GOLDEN_PAIRS],
)
def test_golden_record_decodes_as_kafka_decoded_it(
    raw: dict[str, Any], decoded: dict[str, Any]
) -> None:
    key_bytes, value_bytes = _bytes_of(raw)

    record = decode_record(key_bytes, value_bytes)

    assert record == _record_as_kafka_decoded_it(decoded)
    if value_bytes is not None:
        assert decoded["value_version"] == struct.unpack_from(">h", value_bytes)[0] == 0


@pytest.mark.parametrize(
    "raw",
    [raw for raw, _ in GOLDEN_PAIRS],
    ids=[f"p{raw['partition']}-o{raw['offset']}" for raw, _ in GOLDEN_PAIRS],
)
def test_golden_record_reencodes_byte_identical(raw: dict[str, Any]) -> None:
    key_bytes, value_bytes = _bytes_of(raw)

    assert encode_record(decode_record(key_bytes, value_bytes)) == (key_bytes, value_bytes)


def test_golden_corpus_covers_every_record_shape() -> None:
    records = [decode_record(*_bytes_of(raw)) for raw, _ in GOLDEN_PAIRS]
    snapshots = [r for r in records if isinstance(r.value, ShareSnapshotValue)]
    updates = [r for r in records if isinstance(r.value, ShareUpdateValue)]
    tombstones = [r for r in records if r.value is None]

    assert (len(snapshots), len(updates), len(tombstones)) == (15, 92, 2)
    # Tombstones are written with the snapshot key type only.
    assert {r.key.kind for r in tombstones} == {StateRecordKind.SNAPSHOT}
    # In 4.2.0, snapshots (initialize/reset) carry no DeliveryCompleteCount at all ...
    assert {r.value.delivery_complete_count for r in snapshots if r.value} == {-1}
    # ... and updates always do.
    assert all(r.value and r.value.delivery_complete_count >= 0 for r in updates)


# --------------------------------------------------------------------------- hand-built bytes


def test_key_layout_is_record_type_then_non_flexible_struct() -> None:
    key = ShareStateKey(StateRecordKind.UPDATE, "golden-g", TOPIC_ID, 1)

    assert encode_key(key) == (
        b"\x00\x01"  # record type 1: ShareUpdate
        + b"\x00\x08golden-g"  # int16-length string
        + TOPIC_ID.bytes
        + b"\x00\x00\x00\x01"
    )
    assert decode_key(encode_key(key)) == key
    snapshot_key = ShareStateKey(StateRecordKind.SNAPSHOT, "", TOPIC_ID, 0)
    assert encode_key(snapshot_key)[:4] == b"\x00\x00\x00\x00"
    assert decode_key(encode_key(snapshot_key)) == snapshot_key


SNAPSHOT_HEAD = bytes.fromhex(
    "0000"  # value version 0
    "00000002"  # snapshot epoch
    "00000003"  # state epoch
    "00000004"  # leader epoch
    "0000000000000005"  # start offset
    "00000000000003e8"  # create timestamp 1000
    "00000000000007d0"  # write timestamp 2000
)
BATCH_5_9_ACKED_TWICE = (
    (5).to_bytes(8, "big")  # first offset
    + (9).to_bytes(8, "big")  # last offset
    + b"\x02"  # delivery state: acknowledged
    + b"\x00\x02"  # delivery count
    + b"\x00"  # no tagged fields
)
# An update value's fixed part: version 0, snapshot epoch 0, leader epoch 0, start offset 0.
UPDATE_HEAD_OF_ZEROS = bytes(2 + 4 + 4 + 8)


@pytest.mark.parametrize(
    ("delivery_complete_count", "tagged_section"),
    [
        (-1, b"\x00"),  # the default is not written at all
        (13, b"\x01\x00\x04\x00\x00\x00\x0d"),  # one tag, tag 0, 4 bytes, int32 13
        (0, b"\x01\x00\x04\x00\x00\x00\x00"),
    ],
)
def test_snapshot_value_v0_layout(delivery_complete_count: int, tagged_section: bytes) -> None:
    value = ShareSnapshotValue(
        snapshot_epoch=2,
        state_epoch=3,
        leader_epoch=4,
        start_offset=5,
        delivery_complete_count=delivery_complete_count,
        create_timestamp=1000,
        write_timestamp=2000,
        state_batches=(StateBatch(5, 9, DeliveryState.ACKNOWLEDGED, 2),),
    )
    expected = SNAPSHOT_HEAD + b"\x02" + BATCH_5_9_ACKED_TWICE + tagged_section

    assert encode_value(value) == expected
    assert encode_value(value, version=0) == expected
    assert decode_value(StateRecordKind.SNAPSHOT, expected) == value


@pytest.mark.parametrize(
    ("delivery_complete_count", "tagged_section"),
    [(-1, b"\x00"), (10, b"\x01\x00\x04\x00\x00\x00\x0a")],
)
def test_update_value_v0_layout(delivery_complete_count: int, tagged_section: bytes) -> None:
    value = ShareUpdateValue(
        snapshot_epoch=2,
        leader_epoch=4,
        start_offset=-1,
        delivery_complete_count=delivery_complete_count,
        state_batches=(),
    )
    expected = (
        b"\x00\x00"  # version 0
        + (2).to_bytes(4, "big")  # snapshot epoch
        + (4).to_bytes(4, "big")  # leader epoch
        + b"\xff" * 8  # start offset -1: unchanged
        + b"\x01"  # compact array of 0 batches
        + tagged_section
    )

    assert encode_value(value) == expected
    assert decode_value(StateRecordKind.UPDATE, expected) == value


def test_latest_value_version_is_the_one_kafka_writes() -> None:
    assert LATEST_VALUE_VERSION == 0


def test_unknown_tagged_fields_are_skipped_like_kafka_does() -> None:
    value = ShareUpdateValue(0, 0, 5, 9, (StateBatch(5, 9, 2, 2),))
    plain = encode_value(value)
    head, batch, count = plain[:19], plain[19:39], plain[39:]
    assert count == b"\x01\x00\x04\x00\x00\x00\x09"
    # A tag 7 of 2 bytes inside the batch, and a tag 3 of 1 byte before tag 0.
    batch_with_tag = batch[:-1] + b"\x01\x07\x02\xab\xcd"
    tags_with_unknown = b"\x02\x00\x04\x00\x00\x00\x09\x03\x01\xff"

    decoded = decode_value(StateRecordKind.UPDATE, head + batch_with_tag + tags_with_unknown)

    assert decoded == value


def test_tombstone_has_no_value() -> None:
    key = ShareStateKey(StateRecordKind.SNAPSHOT, "golden-g", TOPIC_ID, 0)
    record = StateRecord(key, None)

    assert record.is_tombstone
    assert encode_record(record) == (encode_key(key), None)
    assert decode_record(encode_key(key), None) == record


def test_record_refuses_a_value_of_the_other_kind() -> None:
    key = ShareStateKey(StateRecordKind.SNAPSHOT, "g", TOPIC_ID, 0)

    with pytest.raises(StateRecordError, match="ShareSnapshotValue"):
        StateRecord(key, ShareUpdateValue(0, 0, 0, 0, ()))


def test_delivery_state_numbers_are_kafkas() -> None:
    assert [(state.name, int(state)) for state in DeliveryState] == [
        ("AVAILABLE", 0),
        ("ACQUIRED", 1),
        ("ACKNOWLEDGED", 2),
        ("ARCHIVING", 3),
        ("ARCHIVED", 4),
    ]


# --------------------------------------------------------------------------- round trips

int8 = st.integers(-(2**7), 2**7 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
batches = st.lists(st.builds(StateBatch, int64, int64, int8, int16), max_size=140).map(tuple)
snapshot_values = st.builds(
    ShareSnapshotValue, int32, int32, int32, int64, int32, int64, int64, batches
)
update_values = st.builds(ShareUpdateValue, int32, int32, int64, int32, batches)
keys = st.builds(
    ShareStateKey,
    st.sampled_from(StateRecordKind),
    st.text(max_size=40),
    st.uuids(),
    int32,
)


@given(keys)
def test_key_round_trip(key: ShareStateKey) -> None:
    assert decode_key(encode_key(key)) == key


@given(st.one_of(snapshot_values, update_values))
def test_value_round_trip(value: StateValue) -> None:
    kind = (
        StateRecordKind.SNAPSHOT
        if isinstance(value, ShareSnapshotValue)
        else StateRecordKind.UPDATE
    )

    assert decode_value(kind, encode_value(value)) == value


@given(keys, st.one_of(st.none(), snapshot_values, update_values))
def test_record_round_trip(key: ShareStateKey, value: StateValue | None) -> None:
    if value is not None:
        kind = (
            StateRecordKind.SNAPSHOT
            if isinstance(value, ShareSnapshotValue)
            else StateRecordKind.UPDATE
        )
        key = ShareStateKey(kind, key.group_id, key.topic_id, key.partition)
    record = StateRecord(key, value)

    assert decode_record(*encode_record(record)) == record


# --------------------------------------------------------------------------- malformed input


def _golden_value_samples() -> list[tuple[StateRecordKind, bytes]]:
    samples: dict[tuple[StateRecordKind, int], bytes] = {}
    for raw, _ in GOLDEN_PAIRS:
        key_bytes, value_bytes = _bytes_of(raw)
        if value_bytes is not None:
            kind = decode_key(key_bytes).kind
            samples.setdefault(
                (kind, len(decode_value(kind, value_bytes).state_batches)), value_bytes
            )
    return [(kind, value) for (kind, _), value in samples.items()]


@pytest.mark.parametrize(("kind", "value_bytes"), _golden_value_samples())
def test_every_truncated_value_raises_state_record_error(
    kind: StateRecordKind, value_bytes: bytes
) -> None:
    for length in range(len(value_bytes)):
        with pytest.raises(StateRecordError):
            decode_value(kind, value_bytes[:length])


def test_every_truncated_key_raises_state_record_error() -> None:
    key_bytes = encode_key(ShareStateKey(StateRecordKind.UPDATE, "golden-g", TOPIC_ID, 1))
    for length in range(len(key_bytes)):
        with pytest.raises(StateRecordError):
            decode_key(key_bytes[:length])


@pytest.mark.parametrize("record_type", [2, 3, -1, 0x7FFF])
def test_unknown_record_type_raises(record_type: int) -> None:
    key_bytes = (
        struct.pack(">h", record_type)
        + encode_key(ShareStateKey(StateRecordKind.SNAPSHOT, "g", TOPIC_ID, 0))[2:]
    )

    with pytest.raises(StateRecordError, match=f"unknown record type {record_type}"):
        decode_record(key_bytes, None)


@pytest.mark.parametrize("version", [1, 2, -1])
@pytest.mark.parametrize("kind", list(StateRecordKind))
def test_unknown_value_version_raises(version: int, kind: StateRecordKind) -> None:
    value: StateValue = (
        ShareSnapshotValue(0, 1, 0, 0, -1, 0, 0, ())
        if kind is StateRecordKind.SNAPSHOT
        else ShareUpdateValue(0, 0, 0, -1, ())
    )
    data = struct.pack(">h", version) + encode_value(value)[2:]

    with pytest.raises(StateRecordError, match=f"version {version}"):
        decode_value(kind, data)
    with pytest.raises(StateRecordError, match=f"version {version}"):
        encode_value(value, version=version)


@pytest.mark.parametrize(
    ("description", "value_bytes", "message"),
    [
        (
            "trailing byte",
            encode_value(ShareUpdateValue(0, 0, 0, 1, ())) + b"\x00",
            "after its end",
        ),
        (
            "null batch array",
            UPDATE_HEAD_OF_ZEROS + b"\x00\x00",
            "null",
        ),
        (
            "array longer than the value",
            UPDATE_HEAD_OF_ZEROS + b"\xff\xff\x03\x00",
            "more than",
        ),
        (
            "count tag of the wrong size",
            UPDATE_HEAD_OF_ZEROS + b"\x01\x01\x00\x02\x00\x01",
            "expected 4",
        ),
        (
            "tag runs past the end",
            UPDATE_HEAD_OF_ZEROS + b"\x01\x01\x05\x09\x00",
            "runs past",
        ),
        (
            "endless varint",
            UPDATE_HEAD_OF_ZEROS + b"\xff" * 8,
            "varint",
        ),
    ],
)
def test_malformed_update_value_raises(description: str, value_bytes: bytes, message: str) -> None:
    with pytest.raises(StateRecordError, match=message):
        decode_record(
            encode_key(ShareStateKey(StateRecordKind.UPDATE, "g", TOPIC_ID, 0)), value_bytes
        )


def test_malformed_keys_raise() -> None:
    good = encode_key(ShareStateKey(StateRecordKind.UPDATE, "g", TOPIC_ID, 0))
    with pytest.raises(StateRecordError, match="after|expected"):
        decode_key(good + b"\x00")
    with pytest.raises(StateRecordError, match="null group id"):
        decode_key(b"\x00\x01\xff\xff" + TOPIC_ID.bytes + b"\x00\x00\x00\x00")
    with pytest.raises(StateRecordError, match="UTF-8"):
        decode_key(b"\x00\x01\x00\x01\xff" + TOPIC_ID.bytes + b"\x00\x00\x00\x00")


@pytest.mark.parametrize(
    "value",
    [
        ShareUpdateValue(0, 0, 0, -1, (StateBatch(0, 0, 0, 40_000),)),  # count is int16
        ShareUpdateValue(0, 0, 0, -1, (StateBatch(0, 0, 200, 1),)),  # state is int8
        ShareUpdateValue(2**31, 0, 0, -1, ()),
        ShareSnapshotValue(0, 0, 0, 2**63, -1, 0, 0, ()),
    ],
)
def test_values_out_of_range_refuse_to_encode(value: StateValue) -> None:
    with pytest.raises(StateRecordError):
        encode_value(value)


def test_oversized_group_id_refuses_to_encode() -> None:
    with pytest.raises(StateRecordError, match="32767"):
        encode_key(ShareStateKey(StateRecordKind.UPDATE, "g" * 40_000, TOPIC_ID, 0))


@given(st.binary(max_size=80), st.one_of(st.none(), st.binary(max_size=120)))
def test_arbitrary_bytes_decode_or_raise_state_record_error(
    key_bytes: bytes, value_bytes: bytes | None
) -> None:
    try:
        record = decode_record(key_bytes, value_bytes)
    except StateRecordError:
        return
    assert encode_record(record)[0] == key_bytes


@given(st.sampled_from(_golden_value_samples()), st.data())
def test_corrupted_golden_values_decode_or_raise_state_record_error(
    sample: tuple[StateRecordKind, bytes], data: st.DataObject
) -> None:
    kind, value_bytes = sample
    position = data.draw(st.integers(0, len(value_bytes) - 1))
    replacement = data.draw(st.integers(0, 255))
    corrupted = value_bytes[:position] + bytes([replacement]) + value_bytes[position + 1 :]
    try:
        decode_value(kind, corrupted)
    except StateRecordError:
        pass


# --------------------------------------------------------------------------- fast paths
#
# The decoder reads the usual update (fewer than 127 batches, no tagged fields but the
# count) with one unpack, and any batch array without tagged fields likewise; everything
# else is walked field by field. The fast paths must agree with the walk on every input.


def _outcome(decode: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "value", decode(data)
    except (StateRecordError, struct.error, IndexError) as error:
        return "error", (type(error), str(error))


@st.composite
def _tagged_fields(draw: st.DrawFn, first_tag: int) -> list[tuple[int, bytes]]:
    tags = sorted(set(draw(st.lists(st.integers(first_tag, 300), max_size=3))))
    return [(tag, draw(st.binary(max_size=130))) for tag in tags]


def _tag_section(fields: list[tuple[int, bytes]]) -> bytes:
    uvarint = records._encode_uvarint
    parts = [uvarint(len(fields))]
    for tag, payload in fields:
        parts += [uvarint(tag), uvarint(len(payload)), payload]
    return b"".join(parts)


@st.composite
def _update_bytes_with_unknown_tags(draw: st.DrawFn) -> tuple[ShareUpdateValue, bytes]:
    """An update encoded as a newer broker might: unknown tagged fields anywhere."""
    value = draw(update_values)
    encoded = encode_value(value)
    parts = [encoded[:18], records._encode_uvarint(len(value.state_batches) + 1)]
    for batch in value.state_batches:
        parts.append(
            records._BATCH_WITHOUT_TAGS.pack(
                batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count
            )
        )
        parts.append(_tag_section(draw(_tagged_fields(first_tag=0))))
    top = draw(_tagged_fields(first_tag=1))
    if value.delivery_complete_count != DELIVERY_COMPLETE_COUNT_UNKNOWN:
        top.insert(0, (0, struct.pack(">i", value.delivery_complete_count)))
    parts.append(_tag_section(top))
    return value, b"".join(parts)


@given(update_values)
def test_one_unpack_reads_updates_as_the_field_walk_does(value: ShareUpdateValue) -> None:
    data = encode_value(value)

    assert records._decode_update(data) == records._walk_update(data) == value


@given(_update_bytes_with_unknown_tags())
def test_updates_with_unknown_tagged_fields_decode_as_without(
    case: tuple[ShareUpdateValue, bytes],
) -> None:
    value, data = case

    assert decode_value(StateRecordKind.UPDATE, data) == value
    assert _outcome(records._decode_update, data) == _outcome(records._walk_update, data)


@given(
    st.one_of(
        update_values.map(encode_value), _update_bytes_with_unknown_tags().map(lambda c: c[1])
    ),
    st.data(),
)
def test_one_unpack_and_field_walk_agree_on_damaged_updates(
    data: bytes, draw: st.DataObject
) -> None:
    """Same value or same error (type and message) for bytes changed, cut or extended."""
    damaged = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 3))):
        position = draw.draw(st.integers(0, len(damaged) - 1))
        damaged[position] = draw.draw(
            st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF, damaged[position] ^ 1])
        )
    cut = draw.draw(st.integers(0, len(damaged) + 8))
    damaged_bytes = bytes(damaged[:cut]) + bytes(max(cut - len(damaged), 0))

    assert _outcome(records._decode_update, damaged_bytes) == _outcome(
        records._walk_update, damaged_bytes
    )
    try:
        decode_value(StateRecordKind.UPDATE, damaged_bytes)
    except StateRecordError:
        pass


@given(update_values.filter(lambda value: 0 < len(value.state_batches) < 127), st.data())
def test_a_batch_with_tagged_fields_is_walked(value: ShareUpdateValue, draw: st.DataObject) -> None:
    """Only the tag-count bytes tell a batch with tagged fields; the one unpack skips them."""
    data = bytearray(encode_value(value))
    batch = draw.draw(st.integers(0, len(value.state_batches) - 1))
    data[18 + 1 + 20 * batch + 19] = draw.draw(st.integers(1, 255))
    damaged = bytes(data)

    assert _outcome(records._decode_update, damaged) == _outcome(records._walk_update, damaged)
    array = damaged[18:]
    assert _outcome(lambda array: records._decode_batches(array, 0), array) == _outcome(
        lambda array: records._walk_batches(array, 1, len(value.state_batches)), array
    )


@given(batches)
def test_one_unpack_reads_batch_arrays_as_the_field_walk_does(
    state_batches: tuple[StateBatch, ...],
) -> None:
    value = ShareSnapshotValue(0, 0, 0, 0, -1, 0, 0, state_batches)
    data = encode_value(value)
    array = data[records._SNAPSHOT_HEAD.size :]
    length = records._encode_uvarint(len(state_batches) + 1)

    assert (
        records._decode_batches(array, 0)
        == records._walk_batches(array, len(length), len(state_batches))
        == (state_batches, len(array) - 1)
    )
    assert decode_value(StateRecordKind.SNAPSHOT, data) == value


@given(st.lists(st.tuples(int64, int64, int8, int16), max_size=20))
def test_state_batches_from_fields_are_the_constructors(
    rows: list[tuple[int, int, int, int]],
) -> None:
    fields = [field for row in rows for field in row]

    assert state_batches_from_fields(fields) == tuple(StateBatch(*row) for row in rows)


def test_decoded_objects_are_ordinary_frozen_dataclass_instances() -> None:
    """The decoder builds them without their __init__; nothing may tell them apart."""
    key = ShareStateKey(StateRecordKind.UPDATE, "g", TOPIC_ID, 3)
    built = StateRecord(key, ShareUpdateValue(1, 2, 5, 7, (StateBatch(5, 9, 2, 1),)))

    record = decode_record(*encode_record(built))
    value = record.value
    assert isinstance(value, ShareUpdateValue)
    batch = value.state_batches[0]

    assert (type(record), type(value), type(batch)) == (StateRecord, ShareUpdateValue, StateBatch)
    assert record == built
    assert repr(record) == repr(built)
    assert hash(record) == hash(built)
    assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.replace(batch, first_offset=6) == StateBatch(6, 9, 2, 1)
    assert dataclasses.astuple(value) == (1, 2, 5, 7, ((5, 9, 2, 1),))
    for frozen, field in ((record, "value"), (value, "start_offset"), (batch, "last_offset")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, field, None)
    assert state_batches_from_fields([5, 9, 2, 1])[0].__class__ is StateBatch
