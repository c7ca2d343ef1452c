"""Codec for the records of the `__share_group_state` topic.

The share coordinator persists every share-partition's durable state as
ShareSnapshot and ShareUpdate records. kio carries no schemas for them, and
every reader of the topic (sandbox, dashboard, audit) must agree with a real
broker byte for byte, so the layout is written out here by hand from Kafka
4.2's `share-coordinator/src/main/resources/common/message/Share*.json`:

* key   = int16 record type (0 ShareSnapshot, 1 ShareUpdate; Kafka's
  `CoordinatorRecordType`) + the key struct, which is non-flexible version 0
  (int16-length string group id, 16-byte topic id, int32 partition) for both
  types.
* value = int16 value version + the value struct. Both value schemas have a
  single version, 0, and it is flexible: compact arrays, a tagged-field
  section after every struct, and DeliveryCompleteCount (KIP-1226, added in
  4.2 without a version bump) travels as tagged field 0, written only when it
  differs from its default -1. A value without it is therefore an older
  broker's record or a state whose count is unknown; both decode to -1.
* a null value is a tombstone: the share-partition's state was deleted.

Replaying the topic must keep up with 100,000 records a second, so the usual
update (fewer than 127 batches, no tagged fields but the count) is read with
one `struct` unpack, and anything else is walked field by field, with the
same result; malformed bytes always surface as `StateRecordError`, never as a
struct or index error.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from kshare_cli.kafka.share_states import DeliveryState, StateBatch

__all__ = [
    "DELIVERY_COMPLETE_COUNT_UNKNOWN",
    "LATEST_VALUE_VERSION",
    "DeliveryState",
    "ShareSnapshotValue",
    "ShareStateKey",
    "ShareUpdateValue",
    "StateBatch",
    "StateRecord",
    "StateRecordError",
    "StateRecordKind",
    "StateValue",
    "decode_key",
    "UpdateColumns",
    "decode_record",
    "decode_update_columns",
    "decode_value",
    "encode_key",
    "encode_record",
    "encode_value",
    "state_batches_from_fields",
]

DELIVERY_COMPLETE_COUNT_UNKNOWN: Final = -1
"""The schema default: Kafka writes no tagged field when the count is unknown."""

LATEST_VALUE_VERSION: Final = 0
"""The value version Kafka 4.2's share coordinator writes (the only one defined)."""

_SUPPORTED_VALUE_VERSIONS: Final = frozenset({0})
_DELIVERY_COMPLETE_COUNT_TAG: Final = 0


class StateRecordError(ValueError):
    """Bytes that are not a share-state record this codec understands.

    A ValueError so that callers validating input can treat it like any other
    bad value; the message names the field so a corrupt topic can be located.
    """


class StateRecordKind(IntEnum):
    """The record type that prefixes every key; its value is the wire number."""

    SNAPSHOT = 0
    UPDATE = 1


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    """Which share-partition a record is about, and whether it is a snapshot or an update."""

    kind: StateRecordKind
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    """The complete state of a share-partition; it supersedes everything before it."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    """A delta on top of the snapshot with the same snapshot_epoch.

    start_offset -1 means "unchanged"; the record has no state epoch and no
    timestamps because those belong to the snapshot.
    """

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]


StateValue = ShareSnapshotValue | ShareUpdateValue


@dataclass(frozen=True, slots=True)
class StateRecord:
    """One record of the state topic; value None is a tombstone."""

    key: ShareStateKey
    value: StateValue | None

    def __post_init__(self) -> None:
        value = self.value
        if value is not None and type(value) is not _VALUE_TYPES[self.key.kind]:
            expected = _VALUE_TYPES[self.key.kind]
            raise StateRecordError(
                f"a {self.key.kind.name} key needs a {expected.__name__}, "
                f"got {type(self.value).__name__}"
            )

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


# Indexed by the record type number (an IntEnum indexes a tuple at C speed).
_VALUE_TYPES: Final[tuple[type, ...]] = (ShareSnapshotValue, ShareUpdateValue)

# Decoding builds several frozen dataclasses per record, and their generated
# __init__ (an object.__setattr__ call per field) would be most of the decoding
# time; so would calling the slots' descriptors. Instead the decoder fills an
# instance of an unfrozen twin -- a plain class with the same slots, whose
# attribute stores the interpreter specializes -- and then turns it into an
# instance of the frozen class by __class__ assignment, which Python allows
# between classes of identical layout (and checks, here at import). What comes
# out is an ordinary instance of the frozen class at a third of the cost.
# Only the decoder does this, for values it built (snapshots are rare enough
# to keep the ordinary constructor).


def _unfrozen_twin(frozen: type) -> Any:
    twin = type(
        f"_Unfrozen{frozen.__name__}",
        (),
        {"__slots__": vars(frozen)["__slots__"], "__module__": __name__},
    )
    probe = twin()
    probe.__class__ = frozen  # a TypeError here if the layouts ever differ
    return twin


_UnfrozenStateBatch: Final = _unfrozen_twin(StateBatch)
_UnfrozenShareUpdateValue: Final = _unfrozen_twin(ShareUpdateValue)
_UnfrozenStateRecord: Final = _unfrozen_twin(StateRecord)


def _build_state_batch(
    first_offset: int, last_offset: int, delivery_state: int, delivery_count: int
) -> StateBatch:
    batch = _UnfrozenStateBatch()
    batch.first_offset = first_offset
    batch.last_offset = last_offset
    batch.delivery_state = delivery_state
    batch.delivery_count = delivery_count
    batch.__class__ = StateBatch
    built: StateBatch = batch
    return built


def state_batches_from_fields(fields: Sequence[int]) -> tuple[StateBatch, ...]:
    """StateBatch objects from flat (first offset, last offset, delivery state, delivery
    count) quadruples, built as cheaply as the decoder builds them (no validation)."""
    batches: list[StateBatch] = []
    append = batches.append
    iterator = iter(fields)
    for first_offset, last_offset, delivery_state, delivery_count in zip(
        iterator, iterator, iterator, iterator, strict=True
    ):
        # _build_state_batch, inlined: every snapshot's and every replayed state's batches.
        batch = _UnfrozenStateBatch()
        batch.first_offset = first_offset
        batch.last_offset = last_offset
        batch.delivery_state = delivery_state
        batch.delivery_count = delivery_count
        batch.__class__ = StateBatch
        append(batch)
    return tuple(batches)


def _build_update(
    snapshot_epoch: int,
    leader_epoch: int,
    start_offset: int,
    delivery_complete_count: int,
    state_batches: tuple[StateBatch, ...],
) -> ShareUpdateValue:
    value = _UnfrozenShareUpdateValue()
    value.snapshot_epoch = snapshot_epoch
    value.leader_epoch = leader_epoch
    value.start_offset = start_offset
    value.delivery_complete_count = delivery_complete_count
    value.state_batches = state_batches
    value.__class__ = ShareUpdateValue
    built: ShareUpdateValue = value
    return built


def _build_record(key: ShareStateKey, value: StateValue | None) -> StateRecord:
    record = _UnfrozenStateRecord()
    record.key = key
    record.value = value
    record.__class__ = StateRecord
    built: StateRecord = record
    return built


_SNAPSHOT: Final = StateRecordKind.SNAPSHOT
_UPDATE: Final = StateRecordKind.UPDATE
_KINDS: Final = (_SNAPSHOT, _UPDATE)

_KEY_HEAD = struct.Struct(">hh")
_KEY_TAIL = struct.Struct(">16si")
# SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset, CreateTimestamp, WriteTimestamp
_SNAPSHOT_HEAD = struct.Struct(">hiiiqqq")
# SnapshotEpoch, LeaderEpoch, StartOffset
_UPDATE_HEAD = struct.Struct(">hiiq")
# FirstOffset, LastOffset, DeliveryState, DeliveryCount, then the first byte of
# the batch's tagged-field count: almost always 0, so one unpack reads a batch.
_BATCH = struct.Struct(">qqbhB")
_BATCH_WITHOUT_TAGS = struct.Struct(">qqbh")
# A batch in a one-unpack layout: its fields, then its tagged-field count byte skipped.
_BATCH_FIELDS: Final = "qqbhx"
_FIRST_UPDATE_BATCH_TAGS: Final = _UPDATE_HEAD.size + 1 + _BATCH_WITHOUT_TAGS.size
_INT32 = struct.Struct(">i")
_NO_TAGGED_FIELDS: Final = b"\x00"
# One tagged field, tag 0 (DeliveryCompleteCount), 4 bytes long.
_ONLY_DELIVERY_COMPLETE_COUNT: Final = b"\x01\x00\x04"
_KEY_CACHE_LIMIT: Final = 65_536
_BATCH_LAYOUT_CACHE_LIMIT: Final = 256

# One-unpack layouts: of batch arrays by batch count (see _batch_layout), and of
# update values by the byte that starts their batch array (see _update_layout).
_batch_layouts: dict[int, tuple[Callable[[bytes, int], tuple[int, ...]], bytes]] = {}
_update_layouts: dict[int, tuple[Callable[[bytes, int], tuple[int, ...]], int, bytes]] = {}

# Keys repeat for every write to a share-partition, so decoded keys are shared.
_key_cache: dict[bytes, ShareStateKey] = {}


# --------------------------------------------------------------------------- decoding


def decode_key(data: bytes) -> ShareStateKey:
    """Decode a record key; identical key bytes yield the same (immutable) object."""
    if type(data) is not bytes:
        data = bytes(data)
    cached = _key_cache.get(data)
    if cached is not None:
        return cached
    key = _decode_key_uncached(data)
    if len(_key_cache) >= _KEY_CACHE_LIMIT:
        _key_cache.clear()
    _key_cache[data] = key
    return key


def _decode_key_uncached(data: bytes) -> ShareStateKey:
    if len(data) < 4:
        raise StateRecordError(f"key is {len(data)} bytes, too short for a record type")
    record_type, group_length = _KEY_HEAD.unpack_from(data, 0)
    if record_type not in (0, 1):
        raise StateRecordError(
            f"unknown record type {record_type} in key (0 ShareSnapshot, 1 ShareUpdate)"
        )
    if group_length < 0:
        raise StateRecordError("key has a null group id")
    end = 4 + group_length
    if len(data) != end + _KEY_TAIL.size:
        raise StateRecordError(
            f"key is {len(data)} bytes, expected {end + _KEY_TAIL.size} "
            f"for a {group_length}-byte group id"
        )
    try:
        group_id = data[4:end].decode("utf-8")
    except UnicodeDecodeError as error:
        raise StateRecordError(f"key group id is not UTF-8: {error}") from None
    topic_id_bytes, partition = _KEY_TAIL.unpack_from(data, end)
    return ShareStateKey(_KINDS[record_type], group_id, uuid.UUID(bytes=topic_id_bytes), partition)


def decode_value(kind: StateRecordKind, data: bytes) -> StateValue:
    """Decode a non-null record value of the type the key announced."""
    if kind not in _KINDS:
        raise StateRecordError(f"unknown record kind {kind!r}")
    try:
        return _VALUE_DECODERS[kind](data)
    except (struct.error, IndexError):
        raise StateRecordError(f"{kind.name.lower()} value truncated ({len(data)} bytes)") from None


def decode_record(key_bytes: bytes, value_bytes: bytes | None) -> StateRecord:
    """Decode one record as read from the topic; a None value is a tombstone."""
    key = _key_cache.get(key_bytes) if type(key_bytes) is bytes else None
    if key is None:
        key = decode_key(key_bytes)
    if value_bytes is None:
        return _build_record(key, None)
    if type(value_bytes) is not bytes:
        value_bytes = bytes(value_bytes)
    try:
        value = _VALUE_DECODERS[key.kind](value_bytes)
    except (struct.error, IndexError):
        raise StateRecordError(
            f"{key.kind.name.lower()} value truncated ({len(value_bytes)} bytes)"
        ) from None
    record = _UnfrozenStateRecord()
    record.key = key
    record.value = value
    record.__class__ = StateRecord
    decoded: StateRecord = record
    return decoded


def _check_version(version: int, what: str) -> None:
    if version not in _SUPPORTED_VALUE_VERSIONS:
        raise StateRecordError(
            f"unsupported {what} version {version} (this codec knows Kafka 4.2's "
            f"version {sorted(_SUPPORTED_VALUE_VERSIONS)})"
        )


def _decode_snapshot(data: bytes) -> ShareSnapshotValue:
    (
        version,
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        create_timestamp,
        write_timestamp,
    ) = _SNAPSHOT_HEAD.unpack_from(data, 0)
    if version != 0:
        _check_version(version, "ShareSnapshotValue")
    batches, position = _decode_batches(data, _SNAPSHOT_HEAD.size)
    return ShareSnapshotValue(
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        _decode_top_level_tags(data, position),
        create_timestamp,
        write_timestamp,
        batches,
    )


def _decode_update(data: bytes) -> ShareUpdateValue:
    """Decode an update value; the shape nearly every update has is read with one unpack.

    That shape: fewer than 127 batches (a one-byte array length), no batch
    with tagged fields, and no tagged field but DeliveryCompleteCount. Any
    other value, including every malformed one, is walked field by field
    (`_walk_update`), which the one unpack must always agree with.
    """
    try:
        length_plus_one = data[_UPDATE_HEAD.size]
    except IndexError:
        return _walk_update(data)
    layout = _update_layouts.get(length_plus_one)
    if layout is None:
        if not 0 < length_plus_one < 0x80:
            return _walk_update(data)
        layout = _update_layouts[length_plus_one] = _update_layout(length_plus_one)
    unpack, end, no_batch_tags = layout
    tail = len(data) - end
    if (
        not (
            (tail == 1 and data[end] == 0)
            or (tail == 7 and data[end : end + 3] == _ONLY_DELIVERY_COMPLETE_COUNT)
        )
        or data[_FIRST_UPDATE_BATCH_TAGS : end : _BATCH.size] != no_batch_tags
    ):
        return _walk_update(data)
    fields = iter(unpack(data, 0))
    # No strict=: the layout makes whole quadruples, and the keyword costs 5% of decoding.
    quadruples = zip(fields, fields, fields, fields)  # noqa: B905
    version, snapshot_epoch, leader_epoch, start_offset = next(quadruples)
    if version != 0:
        _check_version(version, "ShareUpdateValue")
    batches: list[StateBatch] = []
    append = batches.append
    for first_offset, last_offset, delivery_state, delivery_count in quadruples:
        # _build_state_batch, inlined: this loop is most of replaying the state topic.
        batch = _UnfrozenStateBatch()
        batch.first_offset = first_offset
        batch.last_offset = last_offset
        batch.delivery_state = delivery_state
        batch.delivery_count = delivery_count
        batch.__class__ = StateBatch
        append(batch)
    value = _UnfrozenShareUpdateValue()
    value.snapshot_epoch = snapshot_epoch
    value.leader_epoch = leader_epoch
    value.start_offset = start_offset
    value.delivery_complete_count = (
        DELIVERY_COMPLETE_COUNT_UNKNOWN if tail == 1 else _INT32.unpack_from(data, end + 3)[0]
    )
    value.state_batches = tuple(batches)
    value.__class__ = ShareUpdateValue
    decoded: ShareUpdateValue = value
    return decoded


def _walk_update(data: bytes) -> ShareUpdateValue:
    version, snapshot_epoch, leader_epoch, start_offset = _UPDATE_HEAD.unpack_from(data, 0)
    if version != 0:
        _check_version(version, "ShareUpdateValue")
    batches, position = _decode_batches(data, _UPDATE_HEAD.size)
    return _build_update(
        snapshot_epoch,
        leader_epoch,
        start_offset,
        _decode_top_level_tags(data, position),
        batches,
    )


def _update_layout(
    length_plus_one: int,
) -> tuple[Callable[[bytes, int], tuple[int, ...]], int, bytes]:
    """How `_decode_update` reads a value whose batch array starts with this length byte.

    An unpack of the head and of the batches without their tagged-field count
    bytes -- four ints each, so head and batches zip alike --, where the
    batches end, and what those count bytes read when all are 0, the only
    case the unpack is for.
    """
    count = length_plus_one - 1
    layout = struct.Struct(_UPDATE_HEAD.format + "x" + _BATCH_FIELDS * count)
    return layout.unpack_from, layout.size, bytes(count)


_VALUE_DECODERS: Final = (_decode_snapshot, _decode_update)


def _read_uvarint(data: bytes, position: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift > 28:
            raise StateRecordError("unsigned varint longer than 5 bytes")


def _decode_batches(data: bytes, position: int) -> tuple[tuple[StateBatch, ...], int]:
    length_plus_one = data[position]
    if length_plus_one < 0x80:
        position += 1
    else:
        length_plus_one, position = _read_uvarint(data, position)
    if length_plus_one == 0:
        raise StateRecordError("StateBatches is null, but the schema does not allow it")
    count = length_plus_one - 1
    end = position + count * _BATCH.size
    if end > len(data):
        raise StateRecordError(
            f"StateBatches claims {count} batches, more than the "
            f"{len(data) - position} bytes left can hold"
        )
    layout = _batch_layouts.get(count)
    if layout is None:
        layout = _batch_layout(count)
    unpack, no_batch_tags = layout
    if data[position + _BATCH_WITHOUT_TAGS.size : end : _BATCH.size] != no_batch_tags:
        return _walk_batches(data, position, count)
    return state_batches_from_fields(unpack(data, position)), end


def _batch_layout(count: int) -> tuple[Callable[[bytes, int], tuple[int, ...]], bytes]:
    """An unpack of `count` batches without their tagged-field count bytes, and what
    those bytes read when all are 0, the only case the unpack is for."""
    layout = (struct.Struct(">" + _BATCH_FIELDS * count).unpack_from, bytes(count))
    if count <= _BATCH_LAYOUT_CACHE_LIMIT:
        _batch_layouts[count] = layout
    return layout


def _walk_batches(data: bytes, position: int, count: int) -> tuple[tuple[StateBatch, ...], int]:
    """Decode the batches one by one, skipping the tagged fields of those that have some."""
    batches: list[StateBatch] = []
    unpack_batch = _BATCH.unpack_from
    for _ in range(count):
        first_offset, last_offset, delivery_state, delivery_count, tag_count = unpack_batch(
            data, position
        )
        if tag_count == 0:
            position += _BATCH.size
        else:
            position = _skip_tagged_fields(data, position + _BATCH_WITHOUT_TAGS.size)
        batches.append(
            _build_state_batch(first_offset, last_offset, delivery_state, delivery_count)
        )
    return tuple(batches), position


def _skip_tagged_fields(data: bytes, position: int) -> int:
    """Skip a tagged-field section whose tags this schema does not define, as Kafka does."""
    tag_count, position = _read_uvarint(data, position)
    for _ in range(tag_count):
        _, position = _read_uvarint(data, position)
        size, position = _read_uvarint(data, position)
        position += size
    if position > len(data):
        raise StateRecordError("tagged field runs past the end of the value")
    return position


def _decode_top_level_tags(data: bytes, position: int) -> int:
    remaining = len(data) - position
    if remaining == 1 and data[position] == 0:
        return DELIVERY_COMPLETE_COUNT_UNKNOWN
    if remaining == 7 and data[position : position + 3] == _ONLY_DELIVERY_COMPLETE_COUNT:
        count: int = _INT32.unpack_from(data, position + 3)[0]
        return count
    delivery_complete_count = DELIVERY_COMPLETE_COUNT_UNKNOWN
    tag_count, position = _read_uvarint(data, position)
    for _ in range(tag_count):
        tag, position = _read_uvarint(data, position)
        size, position = _read_uvarint(data, position)
        if tag == _DELIVERY_COMPLETE_COUNT_TAG:
            if size != _INT32.size:
                raise StateRecordError(
                    f"DeliveryCompleteCount tagged field is {size} bytes, expected 4"
                )
            (delivery_complete_count,) = _INT32.unpack_from(data, position)
        position += size
    if position != len(data):
        raise StateRecordError(
            f"value has {len(data) - position} bytes after its end (or a tagged field runs past it)"
        )
    return delivery_complete_count


# --------------------------------------------------------------------------- column-wise


@dataclass(frozen=True, slots=True)
class UpdateColumns:
    """ShareUpdate values decoded column-wise: numpy arrays, one entry per value
    (leader_epochs ... batch_counts) and one per batch, the values' batches one after
    another in value order (first_offsets ... delivery_counts)."""

    leader_epochs: Any
    start_offsets: Any
    delivery_complete_counts: Any
    batch_counts: Any
    first_offsets: Any
    last_offsets: Any
    delivery_states: Any
    delivery_counts: Any


def decode_update_columns(data: Any, starts: Any, ends: Any) -> UpdateColumns | None:
    """The ShareUpdate values at data[starts[i]:ends[i]] (a uint8 numpy array, int64
    positions), decoded with numpy in a few passes over all of them; None when any one
    is not in the shape `_decode_update` reads with one unpack (then decode them one by
    one with `decode_record`, which also says what is wrong with a malformed one).

    Why: the audit replays millions of records per share-partition in Spark, where
    building a StateBatch per batch was most of its cost; this reads the same layout
    as `_decode_update`'s one unpack (version 0, fewer than 127 batches, no tagged
    field but DeliveryCompleteCount), and agrees with `decode_record` value for value
    (tests/state/test_records_columns.py).
    """
    import numpy as np

    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if not len(starts):
        return _empty_update_columns()
    head = _UPDATE_HEAD.size
    if (ends - starts < head + 2).any():
        return None
    versions = _big_endian(data, starts, 2)
    length_plus_one = data[starts + head].astype(np.int64)
    counts = length_plus_one - 1
    batches_end = starts + head + 1 + counts * _BATCH.size
    tails = ends - batches_end
    if (
        versions.any()
        or (length_plus_one < 1).any()
        or (length_plus_one >= 0x80).any()
        or ((tails != 1) & (tails != 7)).any()
    ):
        return None
    one = tails == 1
    if (data[batches_end[one]] != 0).any():
        return None
    seven = ~one
    for index, byte in enumerate(_ONLY_DELIVERY_COMPLETE_COUNT):
        if (data[batches_end[seven] + index] != byte).any():
            return None
    complete = np.full(len(starts), DELIVERY_COMPLETE_COUNT_UNKNOWN, dtype=np.int64)
    complete[seven] = _big_endian(data, batches_end[seven] + 3, 4)
    # Each batch's first byte: its value's batch array start, plus its place in it.
    value_of_batch = np.repeat(np.arange(len(starts)), counts)
    first_batch = np.cumsum(counts) - counts
    place = np.arange(len(value_of_batch)) - first_batch[value_of_batch]
    at = (starts + head + 1)[value_of_batch] + place * _BATCH.size
    if (data[at + _BATCH_WITHOUT_TAGS.size] != 0).any():
        return None
    return UpdateColumns(
        leader_epochs=_big_endian(data, starts + 6, 4),
        start_offsets=_big_endian(data, starts + 10, 8),
        delivery_complete_counts=complete,
        batch_counts=counts,
        first_offsets=_big_endian(data, at, 8),
        last_offsets=_big_endian(data, at + 8, 8),
        delivery_states=_big_endian(data, at + 16, 1),
        delivery_counts=_big_endian(data, at + 17, 2),
    )


def _big_endian(data: Any, positions: Any, width: int) -> Any:
    """The signed big-endian integers of `width` bytes at positions, as int64."""
    import numpy as np

    if not len(positions):
        return np.zeros(0, dtype=np.int64)
    gathered = data[positions[:, None] + np.arange(width)]
    return np.ascontiguousarray(gathered).view(f">i{width}").ravel().astype(np.int64)


def _empty_update_columns() -> UpdateColumns:
    import numpy as np

    empty = np.zeros(0, dtype=np.int64)
    return UpdateColumns(empty, empty, empty, empty, empty, empty, empty, empty)


# --------------------------------------------------------------------------- encoding


def encode_key(key: ShareStateKey) -> bytes:
    """Encode a record key exactly as Kafka's CoordinatorRecordSerde does."""
    group_id = key.group_id.encode("utf-8")
    if len(group_id) > 0x7FFF:
        raise StateRecordError(f"group id is {len(group_id)} bytes, the limit is 32767")
    try:
        return b"".join(
            (
                _KEY_HEAD.pack(int(key.kind), len(group_id)),
                group_id,
                _KEY_TAIL.pack(key.topic_id.bytes, key.partition),
            )
        )
    except struct.error as error:
        raise StateRecordError(f"cannot encode key {key}: {error}") from None


def encode_value(value: StateValue, version: int = LATEST_VALUE_VERSION) -> bytes:
    """Encode a record value; Kafka 4.2 writes version 0, the only one there is."""
    _check_version(version, type(value).__name__)
    try:
        if isinstance(value, ShareSnapshotValue):
            head = _SNAPSHOT_HEAD.pack(
                version,
                value.snapshot_epoch,
                value.state_epoch,
                value.leader_epoch,
                value.start_offset,
                value.create_timestamp,
                value.write_timestamp,
            )
        else:
            head = _UPDATE_HEAD.pack(
                version, value.snapshot_epoch, value.leader_epoch, value.start_offset
            )
        parts = [head, _encode_uvarint(len(value.state_batches) + 1)]
        pack_batch = _BATCH.pack
        for batch in value.state_batches:
            parts.append(
                pack_batch(
                    batch.first_offset,
                    batch.last_offset,
                    batch.delivery_state,
                    batch.delivery_count,
                    0,
                )
            )
        if value.delivery_complete_count == DELIVERY_COMPLETE_COUNT_UNKNOWN:
            parts.append(_NO_TAGGED_FIELDS)
        else:
            parts.append(_ONLY_DELIVERY_COMPLETE_COUNT)
            parts.append(_INT32.pack(value.delivery_complete_count))
    except struct.error as error:
        raise StateRecordError(f"cannot encode {type(value).__name__}: {error}") from None
    return b"".join(parts)


def encode_record(record: StateRecord) -> tuple[bytes, bytes | None]:
    """Encode a record as the (key, value) pair to produce; tombstones get a None value."""
    key = encode_key(record.key)
    if record.value is None:
        return key, None
    return key, encode_value(record.value)


def _encode_uvarint(number: int) -> bytes:
    if number < 0 or number > 0xFFFFFFFF:
        raise StateRecordError(f"{number} does not fit an unsigned varint")
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)
