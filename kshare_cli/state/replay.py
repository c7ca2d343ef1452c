"""Share-partition state from `__share_group_state`: replaying the topic as Kafka does.

Two kinds of programs need Kafka's state semantics and must never disagree:
readers (dashboard, audit) that replay the topic, and the sandbox's share
coordinator that writes it. Both sit on `ShareStateReplayer`, which mirrors
Kafka 4.2.0's `ShareCoordinatorShard.replay`:

* a ShareSnapshot replaces the share-partition's state wholesale;
* a ShareUpdate is merged into it: start offset -1 and leader epoch -1 mean
  "unchanged", the delivery-complete count is always taken (even -1), and the
  batches are combined (`batches.combine_state_batches`) after pruning at the
  new start offset. Kafka applies every update whatever its snapshot epoch —
  the coordinator only ever writes updates carrying the latest snapshot's
  epoch, so a mismatch means a damaged log, and Kafka does not filter it; nor
  does this. An update with no state before it becomes the state as it is;
* a tombstone (null value) deletes the share-partition's state.

Beside the state, replay keeps when the start offset last changed
(`StartOffsetMove`), which Kafka does not store: a ShareUpdate that carries a new
start offset moved it at the record's timestamp (its CreateTime, the share
coordinator's append time; updates have no timestamp of their own), a snapshot
that carries one at its writeTimestamp. When the earliest record read already
holds the start offset (Kafka pruned what came before, see `opens_history`),
the move is only known to be no later than that record: `exact` is False.

The writing side of the shard (which record each share-state call appends, and
the epoch fencing) is the sandbox broker's: ``sandbox/share_coordinator_state.py``.
"""

from __future__ import annotations

import uuid
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from kshare_cli.state.batches import combine_state_batches
from kshare_cli.state.records import (
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    state_batches_from_fields,
)

__all__ = [
    "SharePartitionKey",
    "SharePartitionState",
    "ShareStateReplayer",
    "StartOffsetMove",
    "opens_history",
    "same_state",
]

#: A ShareUpdate's start offset or leader epoch that stays as it was.
_UNCHANGED: Final = -1
# Queued updates are folded at least this often: folding a run is cheaper than merging
# each update, and a bound keeps memory flat (with 1,000 share-partitions, some 18 MB at
# 32; 64 would save another 4% of replay's instructions for 34 MB).
_FOLD_EVERY: Final = 32
# How `_Slot` queues an update: its head is (start offset, leader epoch, delivery-complete
# count, batch count), and each batch is (first offset, last offset, delivery state,
# delivery count).
_HEAD_SIZE: Final = 4
_BATCH_SIZE: Final = 4
_FOLD_HEADS: Final = _FOLD_EVERY * _HEAD_SIZE
_NO_TIMESTAMP: Final = 0
_UNINITIALIZED_EPOCH: Final = 0


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """A share-partition: one group's view of one topic partition."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    @classmethod
    def of(cls, key: ShareStateKey) -> SharePartitionKey:
        return cls(key.group_id, key.topic_id, key.partition)

    def record_key(self, kind: StateRecordKind) -> ShareStateKey:
        return ShareStateKey(kind, self.group_id, self.topic_id, self.partition)


@dataclass(frozen=True, slots=True)
class StartOffsetMove:
    """When a share-partition's start offset last changed, as the state topic's records say.

    ``at_ms`` is epoch milliseconds. ``exact``: the records read reach back to the
    change. Otherwise the earliest record read already had this start offset
    (Kafka pruned the records before it): it changed at ``at_ms`` or earlier.
    """

    at_ms: int
    exact: bool


@dataclass(frozen=True, slots=True)
class SharePartitionState:
    """The durable state of a share-partition: start offset and the in-flight batches.

    create_timestamp and write_timestamp come from the latest snapshot (0 when
    the state was built from an update alone, as in Kafka). start_offset_moved is
    replay's, not Kafka's: when the start offset last changed (None when no record
    said when); it is left out of comparisons, as it says nothing about the records.
    """

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]
    start_offset_moved: StartOffsetMove | None = field(default=None, compare=False)

    @classmethod
    def from_snapshot(cls, value: ShareSnapshotValue) -> SharePartitionState:
        return cls(
            value.snapshot_epoch,
            value.state_epoch,
            value.leader_epoch,
            value.start_offset,
            value.delivery_complete_count,
            value.create_timestamp,
            value.write_timestamp,
            value.state_batches,
        )

    @classmethod
    def from_update(cls, value: ShareUpdateValue) -> SharePartitionState:
        """The state Kafka keeps when an update arrives with nothing before it."""
        return cls(
            value.snapshot_epoch,
            _UNINITIALIZED_EPOCH,
            value.leader_epoch,
            value.start_offset,
            value.delivery_complete_count,
            _NO_TIMESTAMP,
            _NO_TIMESTAMP,
            value.state_batches,
        )

    def merged_with(self, value: ShareUpdateValue) -> SharePartitionState:
        """This state after a ShareUpdate, exactly as the share coordinator merges it."""
        start_offset = self.start_offset if value.start_offset == _UNCHANGED else value.start_offset
        leader_epoch = self.leader_epoch if value.leader_epoch == _UNCHANGED else value.leader_epoch
        return SharePartitionState(
            self.snapshot_epoch,
            self.state_epoch,
            leader_epoch,
            start_offset,
            value.delivery_complete_count,
            self.create_timestamp,
            self.write_timestamp,
            combine_state_batches(self.state_batches, value.state_batches, start_offset),
        )


def opens_history(record: StateRecord) -> bool:
    """Whether a share-partition's history can begin with this record.

    Kafka's share coordinator writes snapshot epoch 0 only in the snapshot of
    an InitializeShareGroupState for a share-partition it holds no state for;
    every later snapshot (after `records.per.snapshot` updates, a cold
    share-partition's forced snapshot, an offset reset) carries the previous
    epoch + 1, and updates carry their snapshot's. So a share-partition whose
    earliest readable record is anything else had records before it that the
    coordinator pruned (or that a reader never saw).
    """
    value = record.value
    return type(value) is ShareSnapshotValue and value.snapshot_epoch == 0


def same_state(before: SharePartitionState | None, after: SharePartitionState | None) -> bool:
    """Whether two states say the same about the share-partition.

    The snapshot epoch and timestamps are left out: a cold share-partition's
    forced snapshot (every `cold.partition.snapshot.interval.ms`) and an
    update-count snapshot restate the state with a new epoch and write time,
    and nothing happened to a record.
    """
    if before is None or after is None:
        return before is after
    return (
        before.state_epoch == after.state_epoch
        and before.leader_epoch == after.leader_epoch
        and before.start_offset == after.start_offset
        and before.delivery_complete_count == after.delivery_complete_count
        and before.state_batches == after.state_batches
    )


class _Slot:
    """Where one share-partition's state lives during replay.

    Every key (snapshot and update) of a share-partition resolves to the same
    slot once, so replaying a record costs one dictionary hit. Updates wait
    until someone asks for the state: a snapshot or tombstone makes them moot,
    and a run of them is usually folded in one pass (`_fold`). They wait as
    plain ints, update after update: `heads` holds each update's head and
    `fields` its batches' fields (see _HEAD_SIZE). So the decoded records die
    young -- keeping thousands of them alive until the fold cost replay a third
    of its time in garbage collection -- and the fold builds StateBatch objects
    only for the batches it keeps. There are queued updates only when there
    is a state to fold them into.
    """

    __slots__ = ("fields", "heads", "moved", "share_partition", "start_offset", "state")

    def __init__(self, share_partition: SharePartitionKey) -> None:
        self.share_partition = share_partition
        self.state: SharePartitionState | None = None
        self.heads: list[int] = []
        self.fields: list[int] = []
        # The start offset as the records so far leave it, and when it last changed.
        self.start_offset = _UNCHANGED
        self.moved: StartOffsetMove | None = None

    def current(self) -> SharePartitionState | None:
        heads = self.heads
        state = self.state
        if heads:
            assert state is not None
            state = self.state = _fold(state, heads, self.fields)
            self.heads = []
            self.fields = []
        if state is not None and state.start_offset_moved is not self.moved:
            state = self.state = replace(state, start_offset_moved=self.moved)
        return state

    def moved_to(self, start_offset: int, at_ms: int | None, *, first: bool, opens: bool) -> None:
        """Note a record's start offset: a change (or the first record) sets when it moved."""
        if first:
            self.start_offset = start_offset
            self.moved = None if at_ms is None else StartOffsetMove(at_ms, exact=opens)
        elif start_offset != self.start_offset:
            self.start_offset = start_offset
            self.moved = None if at_ms is None else StartOffsetMove(at_ms, exact=True)


class ShareStateReplayer:
    """Replays state records in log order into the current state of every share-partition.

    Records are applied as they come, so a reader can show the state at any
    point of the log by stopping there. Applying a ShareUpdate only queues it
    (replay must keep up with 100,000 records a second); the state is brought
    up to date when it is read, with exactly the result of merging each update
    in turn.
    """

    def __init__(self) -> None:
        self._slots: dict[SharePartitionKey, _Slot] = {}
        # By the identity of the key object: the decoder hands out one shared key
        # object per key, and hashing a ShareStateKey (its UUID hashes in Python)
        # cost a fifth of replay. Each entry holds its key, so the id stays unique.
        self._slot_by_key_id: dict[int, tuple[ShareStateKey, _Slot]] = {}

    def apply(self, record: StateRecord, timestamp_ms: int | None = None) -> None:
        """Apply one record; ``timestamp_ms`` is its timestamp in the topic (CreateTime),
        which dates a start offset carried by a ShareUpdate (None: not known)."""
        key = record.key
        known = self._slot_by_key_id.get(id(key))
        slot = known[1] if known is not None and known[0] is key else self._slot(key)
        value = record.value
        if type(value) is ShareUpdateValue:
            if slot.state is None:
                slot.state = SharePartitionState.from_update(value)
                slot.moved_to(value.start_offset, timestamp_ms, first=True, opens=False)
                return
            if value.start_offset != _UNCHANGED and value.start_offset != slot.start_offset:
                slot.moved_to(value.start_offset, timestamp_ms, first=False, opens=False)
            heads = slot.heads
            batches = value.state_batches
            heads += (
                value.start_offset,
                value.leader_epoch,
                value.delivery_complete_count,
                len(batches),
            )
            fields = slot.fields
            for batch in batches:
                fields += (
                    batch.first_offset,
                    batch.last_offset,
                    batch.delivery_state,
                    batch.delivery_count,
                )
            if len(heads) >= _FOLD_HEADS:
                slot.current()
            return
        if slot.heads:
            slot.heads = []
            slot.fields = []
        if value is None:
            # Kafka only writes tombstones with a snapshot key; an update-key
            # tombstone (which Kafka itself could not replay) is read the same way.
            slot.state = None
            slot.moved = None
        else:
            assert type(value) is ShareSnapshotValue
            first = slot.state is None
            slot.state = SharePartitionState.from_snapshot(value)
            written = value.write_timestamp if value.write_timestamp > 0 else timestamp_ms
            slot.moved_to(value.start_offset, written, first=first, opens=value.snapshot_epoch == 0)

    def apply_all(self, records: Iterable[StateRecord]) -> None:
        for record in records:
            self.apply(record)

    def state(self, share_partition: SharePartitionKey) -> SharePartitionState | None:
        slot = self._slots.get(share_partition)
        return None if slot is None else slot.current()

    def states(self) -> dict[SharePartitionKey, SharePartitionState]:
        """A copy, so callers can keep it while replay goes on."""
        states: dict[SharePartitionKey, SharePartitionState] = {}
        for share_partition, slot in self._slots.items():
            state = slot.current()
            if state is not None:
                states[share_partition] = state
        return states

    def _slot(self, key: ShareStateKey) -> _Slot:
        share_partition = SharePartitionKey.of(key)
        slot = self._slots.get(share_partition)
        if slot is None:
            slot = self._slots[share_partition] = _Slot(share_partition)
        by_id = self._slot_by_key_id
        if len(by_id) > 4 * len(self._slots) + 1_024:
            # Equal keys decoded into new objects (the decoder's cache was cleared):
            # forget the old ones rather than keep them all.
            by_id.clear()
        by_id[id(key)] = (key, slot)
        return slot


def _fold(
    state: SharePartitionState, heads: Sequence[int], fields: Sequence[int]
) -> SharePartitionState:
    """The state after merging the queued updates in turn, as `merged_with` would.

    heads and fields are the updates as `_Slot` queues them. When every update
    only adds batches past everything before it and the start offset never
    moves back -- what a coordinator writes while consumers work through a
    partition -- merging in turn equals concatenating all batches, pruning once
    at the last start offset and joining touching equals once (pruning at a
    lower start offset first removes nothing the last one keeps), and only the
    batches that survive are built. Anything else is merged update by update.
    """
    # Plain loops: on ints they beat map() with operator functions.
    start_offset = state.start_offset
    for update_start_offset in heads[0::_HEAD_SIZE]:
        if update_start_offset != _UNCHANGED:
            if update_start_offset < start_offset:
                return _merge_each(state, heads, fields)
            start_offset = update_start_offset
    leader_epoch = state.leader_epoch
    for update_leader_epoch in reversed(heads[1::_HEAD_SIZE]):
        if update_leader_epoch != _UNCHANGED:
            leader_epoch = update_leader_epoch
            break
    state_batches = state.state_batches
    previous_last = -1
    for batch in state_batches:
        if batch.first_offset <= previous_last or batch.last_offset < batch.first_offset:
            return _merge_each(state, heads, fields)
        previous_last = batch.last_offset
    lasts = fields[1::_BATCH_SIZE]
    for first_offset, last_offset in zip(fields[0::_BATCH_SIZE], lasts, strict=True):
        if first_offset <= previous_last or last_offset < first_offset:
            return _merge_each(state, heads, fields)
        previous_last = last_offset

    # In offset order and disjoint: pruning drops a prefix, and the last offsets ascend.
    kept = state_batches
    if start_offset != _UNCHANGED and kept and kept[0].last_offset < start_offset:
        if kept[-1].last_offset < start_offset:
            kept = ()
        else:
            kept = tuple(batch for batch in kept if batch.last_offset >= start_offset)
    if kept:
        batches = combine_state_batches(kept, state_batches_from_fields(fields), start_offset)
    else:
        batches = state_batches_from_fields(_pruned_and_joined(fields, lasts, start_offset))
    return SharePartitionState(
        state.snapshot_epoch,
        state.state_epoch,
        leader_epoch,
        start_offset,
        heads[-2],
        state.create_timestamp,
        state.write_timestamp,
        batches,
    )


def _pruned_and_joined(fields: Sequence[int], lasts: Sequence[int], start_offset: int) -> list[int]:
    """`combine_state_batches` of batches in offset order that do not overlap, in fields.

    Pruning drops the batches before the start offset and cuts the one
    straddling it; then touching neighbours of equal delivery state and count
    join, left to right (see `batches._coalesced_if_disjoint`).
    """
    index = _BATCH_SIZE * bisect_left(lasts, start_offset)
    if index == len(fields):
        return []
    first_offset, last_offset, delivery_state, delivery_count = fields[index : index + _BATCH_SIZE]
    if first_offset < start_offset:
        first_offset = start_offset
    joined: list[int] = []
    rest = iter(fields[index + _BATCH_SIZE :])
    for next_first, next_last, next_state, next_count in zip(rest, rest, rest, rest, strict=True):
        if (
            next_first == last_offset + 1
            and next_count == delivery_count
            and next_state == delivery_state
        ):
            last_offset = next_last
        else:
            joined += (first_offset, last_offset, delivery_state, delivery_count)
            first_offset, last_offset, delivery_state = next_first, next_last, next_state
            delivery_count = next_count
    joined += (first_offset, last_offset, delivery_state, delivery_count)
    return joined


def _merge_each(
    state: SharePartitionState, heads: Sequence[int], fields: Sequence[int]
) -> SharePartitionState:
    batches = state_batches_from_fields(fields)
    position = 0
    for index in range(0, len(heads), _HEAD_SIZE):
        start_offset, leader_epoch, delivery_complete_count, count = heads[
            index : index + _HEAD_SIZE
        ]
        update = ShareUpdateValue(
            state.snapshot_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count,
            batches[position : position + count],
        )
        position += count
        state = state.merged_with(update)
    return state
