"""The share coordinator's upkeep of ``__share_group_state``: cold snapshots and pruning.

Kafka does not let its state topic grow for ever, and what it does about it is
what a reader of the topic sees over time (an audit that started late finds
the oldest records gone; an idle share-partition gets a fresh snapshot every
few minutes). Two periodic jobs of Kafka 4.2's ``ShareCoordinatorService``
(``setupSnapshotColdPartitions``, ``setupRecordPruning``), each re-armed
after it finished, one pass over every state-topic partition:

* cold snapshots (``ShareCoordinatorShard.snapshotColdPartitions``): see
  :func:`cold_snapshots`;
* pruning (``ShareCoordinatorService.performRecordPruning``): each state-topic
  partition's *last redundant offset* -- the lowest offset among the latest
  snapshot of every share-partition it holds (``ShareCoordinatorOffsetsManager``,
  see :class:`SnapshotOffsets`) -- goes to DeleteRecords, so the partition's
  log start offset moves up to it, unless it is unknown, 0, or what the
  previous pass already deleted up to.

The records themselves, their replay and the threshold snapshot every
``share.coordinator.snapshot.update.records.per.snapshot`` updates are
``state.replay.ShareCoordinatorState``'s; this module only decides when the
jobs write and what they delete.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.records import ShareSnapshotValue, StateRecord, StateRecordKind
from kshare_cli.state.replay import SharePartitionKey

__all__ = ["SnapshotOffsets", "cold_snapshots"]

_NO_OFFSET: Final = 2**63 - 1  # Kafka's Long.MAX_VALUE: "nothing known yet"


def cold_snapshots(
    state: ShareCoordinatorState,
    share_partitions: Iterable[SharePartitionKey],
    *,
    now: int,
    interval_ms: int,
) -> list[StateRecord]:
    """The snapshots one cold-partition pass writes for one state-topic partition's keys.

    Kafka 4.2's ``ShareCoordinatorShard.snapshotColdPartitions``: when every
    share-partition's state already comes from a cold snapshot (create and
    write timestamps differ), the shard is quiet and nothing is written.
    Otherwise every share-partition whose latest snapshot was written
    ``interval_ms`` or more before ``now`` -- idle, or only updated since --
    gets its current state again as a snapshot with the next snapshot epoch,
    the same create timestamp and ``now`` as write timestamp. So an idle
    share-partition sharing its shard with busy ones is snapshotted again at
    every pass, an identical row each time. The update count is left alone:
    replaying the snapshot resets it only past the threshold, as in Kafka.
    """
    states = [
        (share_partition, current)
        for share_partition in share_partitions
        if (current := state.state(share_partition)) is not None
    ]
    if all(current.create_timestamp != current.write_timestamp for _, current in states):
        return []
    return [
        StateRecord(
            share_partition.record_key(StateRecordKind.SNAPSHOT),
            ShareSnapshotValue(
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=current.state_epoch,
                leader_epoch=current.leader_epoch,
                start_offset=current.start_offset,
                delivery_complete_count=current.delivery_complete_count,
                create_timestamp=current.create_timestamp,
                write_timestamp=now,
                state_batches=current.state_batches,
            ),
        )
        for share_partition, current in states
        if now - current.write_timestamp >= interval_ms
    ]


class SnapshotOffsets:
    """Where each share-partition's latest snapshot is in one state-topic partition.

    Kafka's ``ShareCoordinatorOffsetsManager``: every replayed snapshot (or
    snapshot-key tombstone) records its offset, and the lowest of these latest
    offsets is recomputed then -- records below it are superseded by a later
    snapshot of their own share-partition, so they may be deleted. Updates are
    not counted: they always follow their snapshot. A tombstone's offset counts
    in the computation it triggers, then its share-partition is forgotten, as
    nothing will supersede it. Share-partitions with updates but no snapshot
    (which Kafka's own coordinator never writes) hold nothing back.
    """

    def __init__(self) -> None:
        self._latest: dict[SharePartitionKey, int] = {}
        self._last_redundant = _NO_OFFSET

    def replayed(self, record: StateRecord, offset: int) -> None:
        """Note a record appended to (or read back from) the partition at ``offset``."""
        if record.key.kind is not StateRecordKind.SNAPSHOT:
            return
        share_partition = SharePartitionKey.of(record.key)
        self._latest[share_partition] = offset
        self._last_redundant = min(self._latest.values())
        if record.value is None:
            del self._latest[share_partition]

    def last_redundant_offset(self) -> int | None:
        """The offset DeleteRecords may delete up to; None when there is none (or it is 0)."""
        value = self._last_redundant
        return None if value <= 0 or value == _NO_OFFSET else value
