"""The sandbox broker's share-partition engine: the in-flight window of one share-partition.

This is the part of a KIP-932 broker that decides which records a share consumer gets, with which
delivery count, for how long it may hold them, and what is written to the share coordinator. It
is modelled on Apache Kafka 4.2.0's ``kafka.server.share.SharePartition`` (behaviour only; the
code is our own) because the sandbox is trusted only as far as it behaves like a real broker:
the tests replay the golden recording of a Kafka 4.2.0 broker through this class and require the
same acquired ranges and the same ``WriteShareGroupState`` requests, field for field.

Kafka rules kept on purpose, because they are observable on the wire or in ``describe``:

* Records are acquired a whole cached batch at a time while the batch is uniform; a batch that
  is acknowledged in parts, or acquired in parts, switches to per-offset state for good, and
  from then on every offset is persisted as its own state batch (the coordinator merges them).
* A state write carries the start offset *before* the acknowledgement advanced it, because
  Kafka moves the start offset only once the write has completed. The last write of a run
  therefore leaves the persisted start offset behind the records it finished
  (``startOffset 2 / deliveryCompleteCount 13`` in the golden corpus).
* ``delivery_complete_count`` counts terminal (Acknowledged/Archived) records at or after the
  start offset (KIP-1226); lag is ``LEO - start offset - delivery_complete_count``.
* Acquisition increments the delivery count; release, lock timeout and a member leaving keep it,
  and archive the record instead when it has reached the delivery count limit.
* Records on their last delivery attempt, and records past half the limit, are delivered in
  shrinking groups (Kafka 4.2's throttling), so one poison record cannot drag a batch with it.
* Kafka 4.4 with a dead-letter queue (``SharePartitionConfig.dead_letter_queue``): a rejected
  record, and one released (or timed out) at the delivery limit, goes to ARCHIVING instead of
  ARCHIVED. ARCHIVING is persisted, not delivery-complete and holds the start offset; once its
  write completed the caller takes it with :meth:`SharePartition.take_dead_letters`, writes the
  DLQ record and finishes it with :meth:`SharePartition.archive_dead_letter` (ARCHIVED, counted,
  persisted with the start offset as it stands, then the start offset moves), as Kafka's
  ``SharePartition.initiateDLQAndArchive`` does. ARCHIVING loaded from persisted state (a broker
  that stopped between the two writes) is resumed the same way.

Everything is pure: no I/O, no clock. Each call takes ``now_ms``; lock expiry happens only when
the caller asks for it with :meth:`SharePartition.release_expired_locks`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.share_states import DeliveryState, StateBatch
from kshare_cli.state.lag import share_partition_lag

__all__ = [
    "AcknowledgeResult",
    "AcknowledgeType",
    "AcknowledgementBatch",
    "AcquiredRecords",
    "DeadLetter",
    "DeadLetterReason",
    "InFlightRecord",
    "SharePartition",
    "SharePartitionConfig",
    "StateWrite",
    "UNINITIALIZED_DELIVERY_COMPLETE_COUNT",
    "UNINITIALIZED_START_OFFSET",
]

UNINITIALIZED_START_OFFSET = -1
"""What the share coordinator stores as start offset before the share-partition was initialised."""

UNINITIALIZED_DELIVERY_COMPLETE_COUNT = -1
"""What the share coordinator stores after an offset reset, when nobody has counted yet."""


class AcknowledgeType(IntEnum):
    """Acknowledgement types of ShareFetch/ShareAcknowledge (0 marks a gap in a compacted log)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_ACK_TARGET: dict[int, DeliveryState] = {
    AcknowledgeType.GAP: DeliveryState.ARCHIVED,
    AcknowledgeType.ACCEPT: DeliveryState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: DeliveryState.AVAILABLE,
    AcknowledgeType.REJECT: DeliveryState.ARCHIVED,
}

_VALID_ACKNOWLEDGE_TYPES = frozenset(int(t) for t in AcknowledgeType)


class DeadLetterReason(StrEnum):
    """Why a record goes to the dead-letter queue: Kafka's ``__dlq.errors.message`` texts
    (``ShareGroupDLQManager.CLIENT_REJECT`` and ``DELIVERY_COUNT_EXCEEDED``)."""

    REJECTED = "Offset rejected by client."
    DELIVERY_LIMIT = "Offset delivery count exceeded the threshold."


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A range persisted as ARCHIVING, waiting for its DLQ write (Kafka 4.4)."""

    first_offset: int
    last_offset: int
    delivery_count: int
    reason: DeadLetterReason


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """Broker and group settings one share-partition obeys.

    Defaults are Apache Kafka 4.2.0's: ``group.share.partition.max.record.locks`` 2000,
    ``group.share.delivery.count.limit`` 5 and ``share.record.lock.duration.ms`` (group config,
    falling back to ``group.share.record.lock.duration.ms``) 30000.
    """

    max_in_flight_records: int = 2000
    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30_000
    dead_letter_queue: bool = False
    """Kafka 4.4 with ``share.version`` 2 and a group DLQ topic: archive through ARCHIVING."""

    def __post_init__(self) -> None:
        if self.max_in_flight_records <= 0:
            raise ValueError("max_in_flight_records must be positive")
        if self.delivery_count_limit <= 0:
            raise ValueError("delivery_count_limit must be positive")
        if self.record_lock_duration_ms <= 0:
            raise ValueError("record_lock_duration_ms must be positive")


@dataclass(frozen=True, slots=True)
class StateWrite:
    """What the share-partition asks the share coordinator to persist (WriteShareGroupState).

    ``state_batches`` holds only what changed; the coordinator merges it with what it has.
    """

    start_offset: int
    delivery_complete_count: int
    leader_epoch: int
    state_epoch: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """A range handed to one consumer, as in ShareFetch's ``AcquiredRecords``."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """One acknowledgement range: a single type for the range, or one type per offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AcknowledgeResult:
    """The partition's acknowledgement error code and the state write it caused, if any."""

    error_code: int
    state_write: StateWrite | None


@dataclass(frozen=True, slots=True)
class InFlightRecord:
    """One offset of the in-flight window, for dashboards and describe-style views."""

    offset: int
    state: DeliveryState
    delivery_count: int
    member_id: str
    lock_expires_ms: int | None


class _Slot:
    """State of one lock unit: a whole cached batch or one offset of a split batch.

    ``rollback`` holds the state before an acknowledgement whose write has not completed yet;
    while it is set the slot is in an "ongoing transition" and cannot be acquired or
    acknowledged, exactly like Kafka's InFlightState.
    """

    __slots__ = ("state", "delivery_count", "member_id", "lock_expires_ms", "rollback", "reason")

    def __init__(
        self,
        state: DeliveryState,
        delivery_count: int,
        member_id: str = "",
        lock_expires_ms: int | None = None,
    ) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.lock_expires_ms = lock_expires_ms
        self.rollback: tuple[DeliveryState, str] | None = None
        #: Why an ARCHIVING slot goes to the dead-letter queue.
        self.reason: DeadLetterReason | None = None

    def copy(self) -> _Slot:
        twin = _Slot(self.state, self.delivery_count, self.member_id, self.lock_expires_ms)
        twin.reason = self.reason
        return twin


class _Batch:
    """A cached in-flight batch: uniform (``whole``) or tracked per offset (``offsets``)."""

    __slots__ = ("first_offset", "last_offset", "whole", "offsets")

    def __init__(self, first_offset: int, last_offset: int, whole: _Slot) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.whole: _Slot | None = whole
        self.offsets: dict[int, _Slot] | None = None

    def split(self) -> dict[int, _Slot]:
        """Switch to per-offset state: irreversible, as in Kafka, so it shows in later writes."""
        if self.offsets is None:
            whole = self.whole
            assert whole is not None
            self.offsets = {
                offset: whole.copy() for offset in range(self.first_offset, self.last_offset + 1)
            }
            self.whole = None
        return self.offsets

    def slot_at(self, offset: int) -> _Slot | None:
        if self.offsets is None:
            return self.whole
        return self.offsets.get(offset)

    def units(self) -> Iterator[tuple[int, int, _Slot]]:
        """Each lock unit as (first offset, last offset, slot)."""
        if self.offsets is None:
            assert self.whole is not None
            yield self.first_offset, self.last_offset, self.whole
        else:
            for offset, slot in self.offsets.items():
                yield offset, offset, slot


@dataclass(slots=True)
class _AcquireRun:
    """One ``acquire`` call's bounds and progress, shared by its steps."""

    member_id: str
    fetched: list[tuple[int, int]]
    first_base: int
    last_to_acquire: int
    size_limit: int
    max_to_acquire: int
    lock_until: int
    result: list[AcquiredRecords] = field(default_factory=list)
    count: int = 0


def _resolved_start_offset(start_offset: int, reset_start_offset: int | None) -> int:
    """The persisted start offset, or for a share-partition never initialised (-1) the
    offset ``share.auto.offset.reset`` resolved to."""
    if start_offset == UNINITIALIZED_START_OFFSET:
        if reset_start_offset is None or reset_start_offset < 0:
            raise ValueError(
                "an uninitialised share-partition needs the offset share.auto.offset.reset "
                "resolves to"
            )
        return reset_start_offset
    if start_offset < 0:
        raise ValueError(f"invalid start offset {start_offset}")
    return start_offset


class SharePartition:
    """The in-flight window of one share-partition, with Kafka 4.2.0's rules.

    Build it from what the share coordinator returned for ReadShareGroupState. Mutating calls
    return what Kafka would persist; the caller hands each :class:`StateWrite` to its share
    coordinator in the order returned.
    """

    def __init__(
        self,
        *,
        start_offset: int,
        state_epoch: int,
        state_batches: Sequence[StateBatch] = (),
        leader_epoch: int = 0,
        reset_start_offset: int | None = None,
        config: SharePartitionConfig | None = None,
    ) -> None:
        """Initialise from persisted state.

        ``start_offset`` -1 means the share-partition was never initialised; then
        ``reset_start_offset`` must be the offset ``share.auto.offset.reset`` resolves to
        (earliest: log start offset; latest: log end offset; by_duration: the offset for the
        timestamp), which the caller looks up in its log.
        """
        self.config = config if config is not None else SharePartitionConfig()
        self.leader_epoch = leader_epoch
        self.state_epoch = state_epoch
        limit = self.config.delivery_count_limit
        self._throttle_delivery_limit = max(2, -(-limit // 2))
        self._keys: list[int] = []
        self._cache: dict[int, _Batch] = {}
        self._pending: list[tuple[_Slot, int, int, DeliveryState]] = []
        self._find_next_fetch_offset = False
        self._delivery_complete_count = 0
        self._gap_start: int | None = None
        self._gap_window_end = -1
        #: ARCHIVING units whose write completed, waiting for :meth:`take_dead_letters`.
        self._dead_letters: list[tuple[_Slot, int, int]] = []

        start_offset = _resolved_start_offset(start_offset, reset_start_offset)
        self._start = start_offset
        self._end = start_offset
        gap_start = self._restore(state_batches, start_offset)
        if self._keys:
            # Released records in the persisted window must be found again by the next fetch.
            self._find_next_fetch_offset = True
            self._end = self._cache[self._keys[-1]].last_offset
            if gap_start is not None:
                # Offsets between persisted batches were fetched before but never persisted:
                # they are acquirable, and the start offset may not skip them.
                self._gap_start = gap_start
                self._gap_window_end = self._end
            self._advance_start_offset()

    def _restore(self, state_batches: Sequence[StateBatch], start_offset: int) -> int | None:
        """Load the persisted state batches, checked as Kafka checks them; the first offset of
        the first gap between them (None: none)."""
        previous_last = start_offset - 1
        gap_start: int | None = None
        for batch in sorted(state_batches, key=lambda b: b.first_offset):
            if batch.first_offset < start_offset:
                raise ValueError(
                    f"state batch {batch.first_offset}-{batch.last_offset} starts before the "
                    f"start offset {start_offset}"
                )
            if batch.last_offset < batch.first_offset:
                raise ValueError(f"state batch {batch.first_offset}-{batch.last_offset} is empty")
            if batch.first_offset <= previous_last:
                raise ValueError(f"state batch {batch.first_offset} overlaps its predecessor")
            if gap_start is None and batch.first_offset > previous_last + 1:
                gap_start = previous_last + 1
            previous_last = batch.last_offset
            self._restore_batch(batch)
        return gap_start

    def _restore_batch(self, batch: StateBatch) -> None:
        state = DeliveryState(batch.delivery_state)
        if state is DeliveryState.ACQUIRED:
            raise ValueError("acquired records are never persisted")
        slot = _Slot(state, batch.delivery_count)
        self._insert(_Batch(batch.first_offset, batch.last_offset, slot))
        if state is DeliveryState.ARCHIVING:
            # Kafka resumes the DLQ write; the reason was not persisted, so it is inferred
            # from the delivery count (``maybeResumeDlqArchiving``).
            slot.reason = (
                DeadLetterReason.DELIVERY_LIMIT
                if batch.delivery_count >= self.config.delivery_count_limit
                else DeadLetterReason.REJECTED
            )
            self._dead_letters.append((slot, batch.first_offset, batch.last_offset))
        if state.is_terminal:
            self._delivery_complete_count += batch.last_offset - batch.first_offset + 1

    # ----------------------------------------------------------------- views

    @property
    def start_offset(self) -> int:
        """The share-partition start offset (SPSO) as this broker knows it, not as persisted."""
        return self._start

    @property
    def end_offset(self) -> int:
        """The share-partition end offset (SPEO): one past the last offset tracked in flight."""
        if not self._keys:
            return self._end
        return max(self._start, self._end + 1)

    @property
    def delivery_complete_count(self) -> int:
        """Terminal records at or after the start offset (KIP-1226's DeliveryCompleteCount)."""
        return self._delivery_complete_count

    @property
    def has_pending_writes(self) -> bool:
        """True while deferred acknowledgements await :meth:`commit_pending`."""
        return bool(self._pending)

    def lag(self, log_end_offset: int) -> int:
        """Lag of this in-memory window against the log end offset (KIP-1226); -1 when unknown.

        -1 is what the wire carries for an unknown lag, and the broker is what this serves.
        """
        lag = share_partition_lag(log_end_offset, self._start, self._delivery_complete_count)
        return -1 if lag is None else lag

    def in_flight(self) -> tuple[InFlightRecord, ...]:
        """Per-offset view of the window from the start offset on, for display and audits."""
        records: list[InFlightRecord] = []
        for key in self._keys:
            batch = self._cache[key]
            for first, last, slot in batch.units():
                for offset in range(max(first, self._start), last + 1):
                    records.append(
                        InFlightRecord(
                            offset=offset,
                            state=slot.state,
                            delivery_count=slot.delivery_count,
                            member_id=slot.member_id,
                            lock_expires_ms=(
                                slot.lock_expires_ms
                                if slot.state is DeliveryState.ACQUIRED
                                else None
                            ),
                        )
                    )
        return tuple(records)

    def next_fetch_offset(self) -> int:
        """Where the next fetch reads the log: the first re-available record, else the end.

        Kafka only searches the window after a release, a lock timeout or a load from persisted
        state; otherwise it reads on from the end, which the replay depends on.
        """
        if not self._keys or self._start > self._last_cached_offset():
            if self._find_next_fetch_offset:
                self._find_next_fetch_offset = False
            return self._end
        if not self._find_next_fetch_offset:
            return self._end + 1
        gap_active = self._gap_window_active()
        gap_start = self._gap_start if gap_active and self._gap_start is not None else -1
        for key in self._keys:
            batch = self._cache[key]
            if gap_active:
                if batch.first_offset > gap_start:
                    return gap_start
                gap_start = max(batch.last_offset + 1, gap_start)
            for first, _last, slot in batch.units():
                if slot.state is DeliveryState.AVAILABLE and slot.rollback is None:
                    return first
        self._find_next_fetch_offset = False
        return self._end + 1

    # ----------------------------------------------------------------- acquisition

    def acquire(
        self,
        member_id: str,
        log_end_offset: int,
        max_records: int,
        now_ms: int,
        *,
        record_batches: Sequence[tuple[int, int]] | None = None,
        batch_size: int | None = None,
    ) -> list[AcquiredRecords]:
        """Acquire records for ``member_id`` and lock them until ``now_ms`` + lock duration.

        ``record_batches`` are the log's record batches as (base offset, last offset); Kafka
        acquires whole log batches, so ``max_records`` is a soft limit rounded up to a batch
        end. Without them every offset below ``log_end_offset`` counts as its own batch.
        ``batch_size`` (ShareFetch's BatchSize) splits new acquisitions at batch boundaries.
        """
        if not member_id:
            raise ValueError("member_id must not be empty")
        if max_records <= 0:
            return []
        fetch_offset = self.next_fetch_offset()
        fetched = self._fetched_batches(fetch_offset, log_end_offset, record_batches)
        if not fetched:
            return []
        first_base = fetched[0][0]
        fetched_last = fetched[-1][1]
        if fetched_last < self._start:
            return []
        last_to_acquire, max_to_acquire = self._acquisition_bounds(
            fetch_offset, max_records, fetched_last
        )
        if max_to_acquire <= 0:
            return []
        size_limit = batch_size if batch_size is not None and batch_size > 0 else max_records
        lock_until = now_ms + self.config.record_lock_duration_ms

        self._archive_stale_batches(fetch_offset, first_base)

        base = self._acquisition_base(first_base)
        overlapping = self._batches_keyed_between(min(first_base, base), last_to_acquire)
        if not overlapping:
            acquired, _ = self._acquire_new(
                member_id, fetched, base, last_to_acquire, size_limit, max_to_acquire, lock_until
            )
            return acquired
        run = _AcquireRun(
            member_id, fetched, first_base, last_to_acquire, size_limit, max_to_acquire, lock_until
        )
        self._acquire_overlapping(run, overlapping, base)
        last_overlapping = overlapping[-1].last_offset
        if run.count < run.max_to_acquire and last_overlapping < last_to_acquire:
            self._acquire_new_into(run, last_overlapping + 1, last_to_acquire)
        if run.result:
            self._shrink_gap_window(run.result[-1].last_offset + 1)
        return run.result

    def _acquisition_base(self, first_base: int) -> int:
        """Where acquisition starts: the fetched data's first offset, moved back to the start
        of an in-flight batch that contains it, or up to the start offset."""
        floor = self._floor(first_base)
        if floor is None:
            return max(first_base, self._start)
        if floor.last_offset >= first_base:
            return floor.first_offset
        return first_base

    def _acquire_overlapping(self, run: _AcquireRun, overlapping: list[_Batch], base: int) -> None:
        """Acquire through the in-flight batches the fetch overlaps, and, while a gap window
        is open, the never-persisted offsets between them."""
        gap_cursor = base
        for batch in overlapping:
            if run.count >= run.max_to_acquire:
                break
            if self._gap_window_active():
                if gap_cursor < batch.first_offset:
                    self._acquire_new_into(run, gap_cursor, batch.first_offset - 1)
                gap_cursor = batch.last_offset + 1
                if run.count >= run.max_to_acquire:
                    break
            if not self._acquire_batch(run, batch):
                break

    def _acquire_batch(self, run: _AcquireRun, batch: _Batch) -> bool:
        """Acquire what is available in one in-flight batch: whole when the fetch covers it,
        offset by offset otherwise (or when throttled near the delivery limit). False when
        throttling ends the acquisition."""
        full_match = (
            batch.first_offset >= run.first_base and batch.last_offset <= run.last_to_acquire
        )
        throttled = self._should_throttle(batch, run.first_base, run.last_to_acquire)
        if throttled and run.count > 0:
            run.max_to_acquire = 0
            return False
        if not full_match or batch.offsets is not None or throttled:
            if batch.offsets is None:
                whole = batch.whole
                assert whole is not None
                if whole.state is not DeliveryState.AVAILABLE or whole.rollback is not None:
                    return True
                batch.split()
            acquired_count = self._acquire_offsets(
                run.member_id,
                batch,
                run.first_base,
                run.last_to_acquire,
                run.lock_until,
                run.result,
            )
            run.count += acquired_count
            if throttled and acquired_count > 0:
                run.max_to_acquire = 0
                return False
            return True
        whole = batch.whole
        assert whole is not None
        if whole.state is not DeliveryState.AVAILABLE or whole.rollback is not None:
            return True
        self._lock(whole, run.member_id, run.lock_until)
        run.result.append(
            AcquiredRecords(batch.first_offset, batch.last_offset, whole.delivery_count)
        )
        run.count += batch.last_offset - batch.first_offset + 1
        return True

    def _acquire_new_into(self, run: _AcquireRun, first_offset: int, last_offset: int) -> None:
        """Acquire offsets not yet in flight, within what ``run`` may still take."""
        acquired, acquired_count = self._acquire_new(
            run.member_id,
            run.fetched,
            first_offset,
            last_offset,
            run.size_limit,
            run.max_to_acquire - run.count,
            run.lock_until,
        )
        run.result.extend(acquired)
        run.count += acquired_count

    # ----------------------------------------------------------------- acknowledgement

    def acknowledge(
        self,
        member_id: str,
        batches: Sequence[AcknowledgementBatch],
        now_ms: int,
        *,
        defer_commit: bool = False,
    ) -> AcknowledgeResult:
        """Apply one request's acknowledgements for this partition, all or nothing.

        Only records this member holds can be acknowledged; anything else is
        INVALID_RECORD_STATE (121) and nothing changes. Offsets beyond the window are
        INVALID_REQUEST (42), as in Kafka. With ``defer_commit`` the new states stay in an
        ongoing transition (not acquirable, start offset not moved) until
        :meth:`commit_pending` or :meth:`rollback_pending`, which is how a real broker answers
        a ShareFetch whose acknowledgement write is still in flight.
        """
        changes: list[tuple[_Slot, int, int, DeliveryState]] = []
        written: list[StateBatch] = []
        error = ErrorCode.none
        for ack in batches:
            error = self._validate_acknowledgement(ack)
            if error is not ErrorCode.none:
                break
            if ack.last_offset < self._start:
                continue
            overlapping, error = self._batches_for_acknowledgement(ack)
            if error is not ErrorCode.none:
                break
            error = self._acknowledge_batches(member_id, ack, overlapping, now_ms, changes, written)
            if error is not ErrorCode.none:
                break
        if error is not ErrorCode.none:
            self._rollback(changes, now_ms)
            return AcknowledgeResult(int(error), None)
        if not written:
            return AcknowledgeResult(int(ErrorCode.none), None)
        write = self._state_write(written)
        if defer_commit:
            self._pending.extend(changes)
        else:
            self._commit(changes)
        return AcknowledgeResult(int(ErrorCode.none), write)

    def commit_pending(self) -> None:
        """The deferred writes succeeded: finish the transitions and move the start offset."""
        pending, self._pending = self._pending, []
        self._commit(pending)

    def rollback_pending(self, now_ms: int) -> None:
        """The deferred writes failed: return the records to their holders, or to the queue if
        their lock expired meanwhile (Kafka's rule for a failed write)."""
        pending, self._pending = self._pending, []
        self._rollback(pending, now_ms)

    # ----------------------------------------------------------------- release

    def release_member(self, member_id: str, now_ms: int) -> StateWrite | None:
        """A member's share session ended: everything it holds goes back (delivery count kept).

        Kafka 4.2.0 keeps the count (it no longer decrements it, KAFKA-19972), so a record at
        the delivery limit is archived, and one before the start offset is archived too.
        """
        del now_ms  # the release does not depend on the time; kept for a uniform call shape
        changes: list[tuple[_Slot, int, int, DeliveryState]] = []
        written: list[StateBatch] = []
        for key in list(self._keys):
            batch = self._cache[key]
            whole = batch.whole
            if (
                whole is not None
                and whole.state is DeliveryState.ACQUIRED
                and whole.member_id == member_id
                and batch.first_offset < self._start <= batch.last_offset
            ):
                batch.split()
            for first, last, slot in batch.units():
                if slot.member_id != member_id or slot.state is not DeliveryState.ACQUIRED:
                    continue
                target = DeliveryState.ARCHIVED if last < self._start else DeliveryState.AVAILABLE
                self._transition(slot, first, last, target, changes, written)
        if not written:
            return None
        write = self._state_write(written)
        self._commit(changes)
        return write

    def release_expired_locks(self, now_ms: int) -> list[StateWrite]:
        """Release every acquisition lock that expired by ``now_ms``, one write per lock.

        Kafka runs one timer per acquired batch (or per offset once a batch is split) and each
        expiry writes on its own, so the writes come oldest lock first.
        """
        expired: list[tuple[int, int, int, _Slot]] = []
        for key in self._keys:
            for first, last, slot in self._cache[key].units():
                if (
                    slot.state is DeliveryState.ACQUIRED
                    and slot.rollback is None
                    and slot.lock_expires_ms is not None
                    and slot.lock_expires_ms <= now_ms
                ):
                    expired.append((slot.lock_expires_ms, first, last, slot))
        expired.sort(key=lambda unit: (unit[0], unit[1]))
        writes: list[StateWrite] = []
        for _expiry, first, last, slot in expired:
            if slot.state is not DeliveryState.ACQUIRED:
                continue
            changes: list[tuple[_Slot, int, int, DeliveryState]] = []
            written: list[StateBatch] = []
            units = [(first, last, slot)]
            batch = self._floor(first)
            if (
                batch is not None
                and batch.offsets is None
                and batch.first_offset < self._start <= batch.last_offset
            ):
                # The start offset moved into this batch: its head must be archived, its tail not.
                units = [(offset, offset, unit) for offset, unit in batch.split().items()]
            for unit_first, unit_last, unit in units:
                if unit.state is not DeliveryState.ACQUIRED:
                    continue
                target = (
                    DeliveryState.ARCHIVED if unit_last < self._start else DeliveryState.AVAILABLE
                )
                self._transition(unit, unit_first, unit_last, target, changes, written)
            if written:
                writes.append(self._state_write(written))
                self._commit(changes)
        return writes

    def reset(self, start_offset: int) -> None:
        """Forget the window and start again at ``start_offset`` (AlterShareGroupOffsets).

        Only valid for an empty group, as Kafka requires; the new state epoch is the caller's.
        """
        if start_offset < 0:
            raise ValueError(f"invalid start offset {start_offset}")
        self._keys.clear()
        self._cache.clear()
        self._pending.clear()
        self._dead_letters.clear()
        self._start = start_offset
        self._end = start_offset
        self._delivery_complete_count = 0
        self._find_next_fetch_offset = False
        self._gap_start = None
        self._gap_window_end = -1

    # ----------------------------------------------------------------- cache helpers

    def _insert(self, batch: _Batch) -> None:
        bisect.insort(self._keys, batch.first_offset)
        self._cache[batch.first_offset] = batch

    def _floor(self, offset: int) -> _Batch | None:
        index = bisect.bisect_right(self._keys, offset) - 1
        if index < 0:
            return None
        return self._cache[self._keys[index]]

    def _batches_keyed_between(self, low: int, high: int) -> list[_Batch]:
        start = bisect.bisect_left(self._keys, low)
        stop = bisect.bisect_right(self._keys, high)
        return [self._cache[key] for key in self._keys[start:stop]]

    def _last_cached_offset(self) -> int:
        return self._cache[self._keys[-1]].last_offset

    def _in_flight_count(self) -> int:
        if not self._keys:
            return 0
        return self._end - self._start + 1

    def _records_in_window(self, first: int, last: int) -> int:
        if last < self._start:
            return 0
        return last - max(self._start, first) + 1

    def _gap_window_active(self) -> bool:
        return self._gap_start is not None and self._gap_window_end == self._end

    def _shrink_gap_window(self, offset: int) -> None:
        if self._gap_start is None:
            return
        if self._gap_window_end == self._end and offset <= self._gap_window_end:
            self._gap_start = offset
        else:
            self._gap_start = None
            self._gap_window_end = -1

    # ----------------------------------------------------------------- acquisition helpers

    def _fetched_batches(
        self,
        fetch_offset: int,
        log_end_offset: int,
        record_batches: Sequence[tuple[int, int]] | None,
    ) -> list[tuple[int, int]]:
        """The log batches a fetch from ``fetch_offset`` returns.

        Without explicit batches, one batch per offset, bounded like a real fetch is bounded
        by bytes: no further than the window could ever hold.
        """
        if record_batches is None:
            stop = min(log_end_offset, fetch_offset + 2 * self.config.max_in_flight_records)
            return [(offset, offset) for offset in range(fetch_offset, stop)]
        return [
            (base, min(last, log_end_offset - 1))
            for base, last in sorted(record_batches)
            if last >= fetch_offset and base < log_end_offset
        ]

    def _acquisition_bounds(
        self, fetch_offset: int, max_records: int, fetched_last: int
    ) -> tuple[int, int]:
        """Cap acquisition at the record-lock limit, except re-acquisition inside the window."""
        max_to_acquire = min(
            max_records, self.config.max_in_flight_records - self._in_flight_count()
        )
        last_to_acquire = fetched_last
        if max_to_acquire <= 0 and fetch_offset <= self._end:
            max_to_acquire = min(max_records, self._end - fetch_offset + 1)
            last_to_acquire = min(fetched_last, self._end)
        return last_to_acquire, max_to_acquire

    def _archive_stale_batches(self, fetch_offset: int, first_base: int) -> None:
        """Archive available records the log no longer returns (compaction removed them)."""
        if not self._keys or fetch_offset >= first_base:
            return
        floor_offset = fetch_offset
        floor = self._floor(fetch_offset)
        if floor is not None and floor.last_offset >= fetch_offset:
            floor_offset = floor.first_offset
        archived = False
        for batch in self._batches_keyed_between(floor_offset, first_base - 1):
            full_match = batch.first_offset >= fetch_offset and batch.last_offset <= first_base - 1
            if not full_match or batch.offsets is not None:
                if batch.offsets is None:
                    assert batch.whole is not None
                    if batch.whole.state is not DeliveryState.AVAILABLE:
                        continue
                for offset, slot in batch.split().items():
                    if fetch_offset <= offset < first_base and (
                        slot.state is DeliveryState.AVAILABLE
                    ):
                        self._archive_in_place(slot)
                        self._delivery_complete_count += 1
                        archived = True
                continue
            whole = batch.whole
            assert whole is not None
            if whole.state is DeliveryState.AVAILABLE:
                self._archive_in_place(whole)
                self._delivery_complete_count += batch.last_offset - batch.first_offset + 1
                archived = True
        if archived:
            self._find_next_fetch_offset = True

    @staticmethod
    def _archive_in_place(slot: _Slot) -> None:
        slot.state = DeliveryState.ARCHIVED
        slot.member_id = ""
        slot.lock_expires_ms = None
        slot.rollback = None

    def _should_throttle(self, batch: _Batch, first: int, last: int) -> bool:
        """Whether re-available records here have been redelivered often enough to go out in small
        groups."""
        if batch.offsets is None:
            whole = batch.whole
            assert whole is not None
            return (
                whole.state is DeliveryState.AVAILABLE
                and whole.rollback is None
                and whole.delivery_count >= self._throttle_delivery_limit
            )
        highest = 0
        for offset, slot in batch.offsets.items():
            if first <= offset <= last and (
                slot.state is DeliveryState.AVAILABLE and slot.rollback is None
            ):
                highest = max(highest, slot.delivery_count)
        return highest >= self._throttle_delivery_limit

    def _lock(self, slot: _Slot, member_id: str, lock_until: int) -> None:
        slot.state = DeliveryState.ACQUIRED
        slot.delivery_count += 1
        slot.member_id = member_id
        slot.lock_expires_ms = lock_until

    def _acquire_offsets(
        self,
        member_id: str,
        batch: _Batch,
        first: int,
        last: int,
        lock_until: int,
        result: list[AcquiredRecords],
    ) -> int:
        """Acquire the available offsets of a split batch, grouped into contiguous ranges."""
        offsets = batch.offsets
        assert offsets is not None
        limit = self.config.delivery_count_limit
        picked: list[tuple[int, int]] = []
        throttled_cap = -1
        for offset, slot in offsets.items():
            if offset < first:
                continue
            if offset > last:
                break
            if slot.state is not DeliveryState.AVAILABLE or slot.rollback is not None:
                continue
            count = slot.delivery_count
            # A record on its last attempt goes out alone, so a poison record fails alone.
            if limit > 2 and count == limit - 1 and picked:
                break
            if count >= self._throttle_delivery_limit and throttled_cap < 0:
                throttled_cap = max(1, len(offsets) >> (count - self._throttle_delivery_limit + 1))
            self._lock(slot, member_id, lock_until)
            picked.append((offset, slot.delivery_count))
            if slot.delivery_count == limit and limit > 2:
                break
            if throttled_cap > 0 and len(picked) == throttled_cap:
                break
        ranges: list[AcquiredRecords] = []
        for offset, count in picked:
            if (
                ranges
                and ranges[-1].last_offset + 1 == offset
                and (ranges[-1].delivery_count == count)
            ):
                ranges[-1] = AcquiredRecords(ranges[-1].first_offset, offset, count)
            else:
                ranges.append(AcquiredRecords(offset, offset, count))
        result.extend(ranges)
        return len(picked)

    def _acquire_new(
        self,
        member_id: str,
        fetched: list[tuple[int, int]],
        first: int,
        last: int,
        batch_size: int,
        max_records: int,
        lock_until: int,
    ) -> tuple[list[AcquiredRecords], int]:
        """Acquire records never delivered before, whole log batches at a time."""
        first_acquired = first
        if not self._keys and self._end > first_acquired:
            first_acquired = self._end
        last_acquired = last
        if max_records < last_acquired - first_acquired + 1:
            wanted = first_acquired + max_records - 1
            last_acquired = wanted
            for base, batch_last in fetched:
                if base > wanted:
                    break
                if wanted <= batch_last:
                    last_acquired = batch_last
            if self._gap_window_active() and last_acquired > last:
                last_acquired = last
        if last_acquired < first_acquired:
            return [], 0

        ranges: list[tuple[int, int]] = []
        current = first_acquired
        if last_acquired - first_acquired + 1 > batch_size:
            for base, _batch_last in fetched:
                if base > last_acquired:
                    break
                if base - current >= batch_size:
                    ranges.append((current, base - 1))
                    current = base
        ranges.append((current, last_acquired))

        acquired: list[AcquiredRecords] = []
        for range_first, range_last in ranges:
            self._insert(
                _Batch(
                    range_first,
                    range_last,
                    _Slot(DeliveryState.ACQUIRED, 1, member_id, lock_until),
                )
            )
            acquired.append(AcquiredRecords(range_first, range_last, 1))
        if self._keys[0] == first_acquired:
            self._start = first_acquired
        if last_acquired > self._end:
            self._end = last_acquired
        self._shrink_gap_window(last_acquired + 1)
        return acquired, last_acquired - first_acquired + 1

    # ----------------------------------------------------------------- acknowledgement helpers

    @staticmethod
    def _validate_acknowledgement(ack: AcknowledgementBatch) -> ErrorCode:
        size = ack.last_offset - ack.first_offset + 1
        types = ack.acknowledge_types
        if ack.first_offset < 0 or size <= 0 or not types:
            return ErrorCode.invalid_request
        if len(types) != 1 and len(types) != size:
            return ErrorCode.invalid_request
        if any(t not in _VALID_ACKNOWLEDGE_TYPES for t in types):
            return ErrorCode.invalid_request
        return ErrorCode.none

    def _batches_for_acknowledgement(
        self, ack: AcknowledgementBatch
    ) -> tuple[list[_Batch], ErrorCode]:
        floor = self._floor(ack.first_offset)
        if floor is None:
            if ack.first_offset < self._start <= ack.last_offset:
                floor = self._floor(self._start)
            if floor is None:
                return [], ErrorCode.invalid_record_state
        overlapping = self._batches_keyed_between(floor.first_offset, ack.last_offset)
        last_cached = overlapping[-1].last_offset
        if last_cached < ack.first_offset or ack.last_offset > last_cached:
            return [], ErrorCode.invalid_request
        return overlapping, ErrorCode.none

    def _acknowledge_batches(
        self,
        member_id: str,
        ack: AcknowledgementBatch,
        overlapping: list[_Batch],
        now_ms: int,
        changes: list[tuple[_Slot, int, int, DeliveryState]],
        written: list[StateBatch],
    ) -> ErrorCode:
        types = ack.acknowledge_types
        per_offset_types = len(types) > 1
        renewed_lock = now_ms + self.config.record_lock_duration_ms
        for batch in overlapping:
            if batch.last_offset < self._start:
                continue
            whole = batch.whole
            if whole is not None:
                if not whole.member_id or whole.member_id != member_id:
                    return ErrorCode.invalid_record_state
                if whole.rollback is not None:
                    return ErrorCode.invalid_record_state
            full_match = (
                batch.first_offset >= ack.first_offset and batch.last_offset <= ack.last_offset
            )
            start_inside = batch.first_offset < self._start <= batch.last_offset
            if not full_match or batch.offsets is not None or per_offset_types or start_inside:
                if whole is not None and whole.state is not DeliveryState.ACQUIRED:
                    return ErrorCode.invalid_record_state
                for offset, slot in batch.split().items():
                    if offset < ack.first_offset or offset < self._start:
                        continue
                    if offset > ack.last_offset:
                        break
                    if slot.state is not DeliveryState.ACQUIRED or slot.rollback is not None:
                        return ErrorCode.invalid_record_state
                    if slot.member_id != member_id:
                        return ErrorCode.invalid_record_state
                    ack_type = types[offset - ack.first_offset] if per_offset_types else types[0]
                    if ack_type == AcknowledgeType.RENEW:
                        slot.lock_expires_ms = renewed_lock
                        continue
                    self._transition(
                        slot, offset, offset, self._ack_target(ack_type), changes, written
                    )
                continue
            assert whole is not None
            if whole.state is not DeliveryState.ACQUIRED:
                return ErrorCode.invalid_record_state
            if types[0] == AcknowledgeType.RENEW:
                whole.lock_expires_ms = renewed_lock
                continue
            self._transition(
                whole,
                batch.first_offset,
                batch.last_offset,
                self._ack_target(types[0]),
                changes,
                written,
            )
        return ErrorCode.none

    # ----------------------------------------------------------------- dead-letter queue

    @property
    def has_dead_letters(self) -> bool:
        """True while ARCHIVING records wait for :meth:`take_dead_letters`."""
        return bool(self._dead_letters)

    def take_dead_letters(self) -> list[DeadLetter]:
        """The ARCHIVING ranges whose write completed, for the caller's DLQ writes (oldest first).

        Each must be finished with :meth:`archive_dead_letter`, whether the DLQ write
        succeeded or not: Kafka archives regardless, or the start offset would stall.
        """
        taken, self._dead_letters = self._dead_letters, []
        letters: list[DeadLetter] = []
        for slot, first, last in taken:
            if slot.state is DeliveryState.ARCHIVING and slot.reason is not None:
                letters.append(DeadLetter(first, last, slot.delivery_count, slot.reason))
        return letters

    def archive_dead_letter(self, letter: DeadLetter) -> StateWrite | None:
        """ARCHIVING → ARCHIVED after the DLQ write: the write Kafka persists, then the start
        offset moves (None when a reset dropped the range meanwhile)."""
        written: list[StateBatch] = []
        floor = self._floor(letter.first_offset)
        low = letter.first_offset if floor is None else floor.first_offset
        for batch in self._batches_keyed_between(low, letter.last_offset):
            for first, last, slot in batch.units():
                if first < letter.first_offset or last > letter.last_offset:
                    continue
                if slot.state is not DeliveryState.ARCHIVING:
                    continue
                self._archive_in_place(slot)
                slot.reason = None
                self._delivery_complete_count += self._records_in_window(first, last)
                written.append(
                    StateBatch(first, last, int(DeliveryState.ARCHIVED), slot.delivery_count)
                )
        if not written:
            return None
        write = self._state_write(written)
        self._advance_start_offset()
        return write

    def _ack_target(self, ack_type: int) -> DeliveryState:
        if ack_type == AcknowledgeType.REJECT and self.config.dead_letter_queue:
            return DeliveryState.ARCHIVING
        return _ACK_TARGET[ack_type]

    # ----------------------------------------------------------------- transitions and writes

    def _transition(
        self,
        slot: _Slot,
        first: int,
        last: int,
        target: DeliveryState,
        changes: list[tuple[_Slot, int, int, DeliveryState]],
        written: list[StateBatch],
    ) -> None:
        """Move an acquired unit out of Acquired, remembering how to undo it."""
        dead_letter = self.config.dead_letter_queue
        if target is DeliveryState.AVAILABLE and (
            slot.delivery_count >= self.config.delivery_count_limit
        ):
            target = DeliveryState.ARCHIVING if dead_letter else DeliveryState.ARCHIVED
            slot.reason = DeadLetterReason.DELIVERY_LIMIT
        elif target is DeliveryState.ARCHIVING:
            slot.reason = DeadLetterReason.REJECTED
        slot.rollback = (slot.state, slot.member_id)
        slot.state = target
        slot.member_id = ""
        changes.append((slot, first, last, target))
        written.append(StateBatch(first, last, int(target), slot.delivery_count))
        if target.is_terminal:
            self._delivery_complete_count += self._records_in_window(first, last)

    def _commit(self, changes: list[tuple[_Slot, int, int, DeliveryState]]) -> None:
        for slot, first, last, _target in changes:
            slot.rollback = None
            slot.lock_expires_ms = None
            if slot.state is DeliveryState.AVAILABLE:
                self._find_next_fetch_offset = True
            elif slot.state is DeliveryState.ARCHIVING:
                self._dead_letters.append((slot, first, last))
        if changes:
            self._advance_start_offset()

    def _rollback(self, changes: list[tuple[_Slot, int, int, DeliveryState]], now_ms: int) -> None:
        for slot, first, last, target in reversed(changes):
            if slot.rollback is None:
                continue
            previous_state, previous_member = slot.rollback
            slot.rollback = None
            slot.reason = None
            if slot.lock_expires_ms is not None and slot.lock_expires_ms <= now_ms:
                slot.state = (
                    DeliveryState.ARCHIVED
                    if slot.delivery_count >= self.config.delivery_count_limit
                    else DeliveryState.AVAILABLE
                )
                slot.member_id = ""
                slot.lock_expires_ms = None
            else:
                slot.state = previous_state
                slot.member_id = previous_member
            if target.is_terminal and not slot.state.is_terminal:
                self._delivery_complete_count -= self._records_in_window(first, last)
            elif not target.is_terminal and slot.state.is_terminal:
                self._delivery_complete_count += self._records_in_window(first, last)
            if slot.state is DeliveryState.AVAILABLE:
                self._find_next_fetch_offset = True

    def _state_write(self, written: list[StateBatch]) -> StateWrite:
        """The write Kafka sends: the start offset as it stands *before* this change moves it."""
        return StateWrite(
            start_offset=self._start,
            delivery_complete_count=self._delivery_complete_count,
            leader_epoch=self.leader_epoch,
            state_epoch=self.state_epoch,
            state_batches=tuple(written),
        )

    def _advance_start_offset(self) -> None:
        """Move the start offset past the contiguous terminal prefix; drop finished batches."""
        if not self._keys:
            return
        floor = self._floor(self._start)
        if floor is None or self._start > floor.last_offset:
            return
        head = floor.slot_at(self._start)
        if head is None or head.rollback is not None or not head.state.is_terminal:
            return

        last_done = -1
        terminal_in_window = 0
        gap_active = self._gap_window_active()
        for key in self._keys:
            batch = self._cache[key]
            if gap_active and self._gap_start is not None and batch.last_offset >= self._gap_start:
                break
            stopped = False
            for first, last, slot in batch.units():
                if slot.rollback is not None or not slot.state.is_terminal:
                    stopped = True
                    break
                last_done = last
                terminal_in_window += self._records_in_window(first, last)
            if stopped:
                break
        if last_done == -1:
            return

        if last_done == self._last_cached_offset():
            self._start = last_done + 1
            self._end = last_done + 1
            self._keys.clear()
            self._cache.clear()
            self._delivery_complete_count = 0
            return

        entry = self._floor(last_done)
        assert entry is not None
        entry_index = bisect.bisect_left(self._keys, entry.first_offset)
        if last_done == entry.last_offset:
            next_key = self._keys[entry_index + 1]
            if next_key > self._start:
                self._start = next_key
            if gap_active and self._gap_start is not None:
                self._start = min(self._gap_start, self._start)
            remove_through = entry_index
        else:
            if last_done + 1 > self._start:
                self._start = last_done + 1
            remove_through = entry_index - 1
        self._delivery_complete_count -= terminal_in_window
        if remove_through >= 0:
            for key in self._keys[: remove_through + 1]:
                del self._cache[key]
            del self._keys[: remove_through + 1]
