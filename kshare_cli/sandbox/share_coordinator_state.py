"""The sandbox share coordinator's state machine: which record each share-state call appends.

A share-partition leader calls its share coordinator with WriteShareGroupState,
InitializeShareGroupState, ReadShareGroupState (a leader epoch bump) and
DeleteShareGroupState; the coordinator decides, with epoch fencing, whether it
may and which ShareSnapshot or ShareUpdate record it appends. Only a broker does
that, so it lives with the sandbox; replaying what it wrote is ``state/replay.py``'s
``ShareStateReplayer``, the one the dashboard and the audit use, so writer and
readers cannot disagree. As in Kafka's coordinator runtime, producing a record
and applying it are separate steps: the caller appends the record to the log
and then applies it, so a failed append leaves the state untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, Final

from kio.schema.errors import ErrorCode

from kshare_cli.state.batches import combine_state_batches
from kshare_cli.state.records import (
    DELIVERY_COMPLETE_COUNT_UNKNOWN,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
)
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState, ShareStateReplayer

__all__ = [
    "DEFAULT_UPDATES_PER_SNAPSHOT",
    "FencedLeaderEpochError",
    "FencedStateEpochError",
    "ShareCoordinatorState",
    "ShareStateWriteError",
    "UninitializedSharePartitionError",
]

DEFAULT_UPDATES_PER_SNAPSHOT: Final = 500
"""Kafka's `share.coordinator.snapshot.update.records.per.snapshot` default."""

_UNCHANGED: Final = -1
_UNINITIALIZED_EPOCH: Final = 0


class ShareStateWriteError(ValueError):
    """A share-state call the share coordinator refuses; error_code is Kafka's error for it."""

    error_code: ClassVar[int]


class UninitializedSharePartitionError(ShareStateWriteError):
    """Write or read on a share-partition that has no state (Kafka answers INVALID_REQUEST)."""

    error_code = ErrorCode.invalid_request


class FencedLeaderEpochError(ShareStateWriteError):
    """The caller's leader epoch is older than one already recorded."""

    error_code = ErrorCode.fenced_leader_epoch
    epoch_name: ClassVar[str] = "leader"


class FencedStateEpochError(ShareStateWriteError):
    """The caller's state epoch is older than one already recorded (e.g. after a reset)."""

    error_code = ErrorCode.fenced_state_epoch
    epoch_name: ClassVar[str] = "state"


def _fence(
    epoch: int, known_epoch: int | None, error: type[FencedLeaderEpochError | FencedStateEpochError]
) -> None:
    """Refuse a call whose epoch (unless -1, "unchanged") is older than the one recorded."""
    if epoch != _UNCHANGED and known_epoch is not None and known_epoch > epoch:
        raise error(f"{error.epoch_name} epoch {epoch} is older than {known_epoch}")


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ShareCoordinatorState:
    """The share coordinator's soft state for one `__share_group_state` partition.

    Besides the share-partition states it tracks, per share-partition, the
    highest leader and state epochs seen (for fencing) and how many updates
    were written since the last snapshot (to decide when the next write must
    be a snapshot). The counting is Kafka 4.2.0's: the first update after an
    initial snapshot counts as 0, so the first threshold snapshot comes one
    update late; only a threshold snapshot resets the count (an initialize
    does not); a tombstone forgets it. Kafka 4.2.1 counts that first update
    as 1 and writes a reset's snapshot with delivery-complete count 0 instead
    of -1; the golden corpus was recorded on 4.2.0.
    """

    def __init__(
        self,
        *,
        updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT,
        clock: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        if updates_per_snapshot < 0:
            raise ValueError("updates_per_snapshot must be at least 0")
        self._updates_per_snapshot = updates_per_snapshot
        self._clock = clock
        self._replayer = ShareStateReplayer()
        self._leader_epochs: dict[SharePartitionKey, int] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}
        self._updates_since_snapshot: dict[SharePartitionKey, int] = {}

    # ------------------------------------------------------------------ replay

    def apply(self, record: StateRecord) -> None:
        """Replay one record of the log (one this coordinator produced, or one read back)."""
        share_partition = SharePartitionKey.of(record.key)
        value = record.value
        self._replayer.apply(record)
        if value is None:
            self._leader_epochs.pop(share_partition, None)
            self._state_epochs.pop(share_partition, None)
            self._updates_since_snapshot.pop(share_partition, None)
            return
        self._raise_epoch(self._leader_epochs, share_partition, value.leader_epoch)
        if isinstance(value, ShareSnapshotValue):
            self._raise_epoch(self._state_epochs, share_partition, value.state_epoch)
            count = self._updates_since_snapshot.get(share_partition)
            if count is not None and count >= self._updates_per_snapshot:
                self._updates_since_snapshot[share_partition] = 0
        else:
            count = self._updates_since_snapshot.get(share_partition)
            self._updates_since_snapshot[share_partition] = 0 if count is None else count + 1

    def apply_all(self, records: Iterable[StateRecord]) -> None:
        for record in records:
            self.apply(record)

    def state(self, share_partition: SharePartitionKey) -> SharePartitionState | None:
        return self._replayer.state(share_partition)

    def states(self) -> dict[SharePartitionKey, SharePartitionState]:
        return self._replayer.states()

    # ------------------------------------------------------------------ calls

    def initialize(
        self,
        share_partition: SharePartitionKey,
        *,
        state_epoch: int,
        start_offset: int,
        delivery_complete_count: int = DELIVERY_COMPLETE_COUNT_UNKNOWN,
    ) -> StateRecord:
        """The snapshot an InitializeShareGroupState call writes: a fresh start, no batches.

        Offset resets (kafka-share-groups --reset-offsets) arrive this way with
        a higher state epoch, which then fences writes from the old epoch. Kafka 4.2
        writes them with an unknown (-1) delivery-complete count, 4.4 with 0.
        """
        _fence(state_epoch, self._state_epochs.get(share_partition), FencedStateEpochError)
        current = self.state(share_partition)
        now = self._clock()
        return StateRecord(
            share_partition.record_key(StateRecordKind.SNAPSHOT),
            ShareSnapshotValue(
                snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
                state_epoch=state_epoch,
                leader_epoch=_UNINITIALIZED_EPOCH,
                start_offset=start_offset,
                delivery_complete_count=delivery_complete_count,
                create_timestamp=now,
                write_timestamp=now,
                state_batches=(),
            ),
        )

    def write(
        self,
        share_partition: SharePartitionKey,
        *,
        start_offset: int,
        delivery_complete_count: int,
        leader_epoch: int,
        state_epoch: int,
        state_batches: Sequence[StateBatch],
    ) -> StateRecord:
        """The record a WriteShareGroupState call appends: usually an update, sometimes a snapshot.

        The request's leader epoch only fences; the record keeps the leader
        epoch already recorded, as Kafka does.
        """
        current = self._require_state(share_partition)
        _fence(leader_epoch, self._leader_epochs.get(share_partition), FencedLeaderEpochError)
        _fence(state_epoch, self._state_epochs.get(share_partition), FencedStateEpochError)
        return self._state_record(
            share_partition,
            current,
            start_offset=start_offset,
            delivery_complete_count=delivery_complete_count,
            leader_epoch=current.leader_epoch,
            state_batches=state_batches,
        )

    def read(
        self, share_partition: SharePartitionKey, *, leader_epoch: int
    ) -> tuple[SharePartitionState, StateRecord | None]:
        """What a ReadShareGroupState call returns, plus the record it appends, if any.

        A new share-partition leader reads with its higher leader epoch, and
        the coordinator records that epoch (with no batches) so that the old
        leader's writes are fenced from then on.
        """
        current = self._require_state(share_partition)
        known_leader_epoch = self._leader_epochs.get(share_partition)
        if known_leader_epoch is not None and known_leader_epoch > leader_epoch:
            raise FencedLeaderEpochError(
                f"leader epoch {leader_epoch} is older than {known_leader_epoch}"
            )
        if leader_epoch == _UNCHANGED or known_leader_epoch == leader_epoch:
            return current, None
        record = self._state_record(
            share_partition,
            current,
            start_offset=current.start_offset,
            delivery_complete_count=current.delivery_complete_count,
            leader_epoch=leader_epoch,
            state_batches=(),
        )
        return current, record

    def delete(self, share_partition: SharePartitionKey) -> StateRecord | None:
        """The tombstone a DeleteShareGroupState call appends; None when nothing is there."""
        if self.state(share_partition) is None:
            return None
        return StateRecord(share_partition.record_key(StateRecordKind.SNAPSHOT), None)

    # ------------------------------------------------------------------ internals

    def _require_state(self, share_partition: SharePartitionKey) -> SharePartitionState:
        current = self.state(share_partition)
        if current is None:
            raise UninitializedSharePartitionError(
                f"share-partition {share_partition.group_id}:{share_partition.topic_id}:"
                f"{share_partition.partition} has no state"
            )
        return current

    def _state_record(
        self,
        share_partition: SharePartitionKey,
        current: SharePartitionState,
        *,
        start_offset: int,
        delivery_complete_count: int,
        leader_epoch: int,
        state_batches: Sequence[StateBatch],
    ) -> StateRecord:
        if self._updates_since_snapshot.get(share_partition, 0) >= self._updates_per_snapshot:
            # Enough updates: fold everything into a new snapshot so that
            # replay stays short; it starts a new snapshot epoch.
            new_start_offset = current.start_offset if start_offset == _UNCHANGED else start_offset
            now = self._clock()
            return StateRecord(
                share_partition.record_key(StateRecordKind.SNAPSHOT),
                ShareSnapshotValue(
                    snapshot_epoch=current.snapshot_epoch + 1,
                    state_epoch=current.state_epoch,
                    leader_epoch=leader_epoch,
                    start_offset=new_start_offset,
                    delivery_complete_count=delivery_complete_count,
                    create_timestamp=now,
                    write_timestamp=now,
                    state_batches=combine_state_batches(
                        current.state_batches, state_batches, new_start_offset
                    ),
                ),
            )
        # The update carries only the request's own batches, combined among
        # themselves (this is where [0,0] and [1,1] Acknowledged become [0,1]).
        return StateRecord(
            share_partition.record_key(StateRecordKind.UPDATE),
            ShareUpdateValue(
                snapshot_epoch=current.snapshot_epoch,
                leader_epoch=leader_epoch,
                start_offset=start_offset,
                delivery_complete_count=delivery_complete_count,
                state_batches=combine_state_batches((), state_batches, start_offset),
            ),
        )

    @staticmethod
    def _raise_epoch(
        epochs: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int
    ) -> None:
        known = epochs.get(key)
        if known is None or known < epoch:
            epochs[key] = epoch
