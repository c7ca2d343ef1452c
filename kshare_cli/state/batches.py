"""How the share coordinator combines state batches, offset for offset as Kafka 4.2 does.

Every state the coordinator persists has been through one combining step:
the batches it already holds plus the batches of a write, cut at the start
offset, made non-overlapping. The sandbox must write the same batches a real
broker would (a reader diffing the two would otherwise see phantom changes),
so this reproduces the behaviour of Kafka's `PersisterStateBatchCombiner`,
including the parts an operator would not guess:

* Pruning happens first, and only when the start offset is known (not -1):
  batches wholly below it go, a batch straddling it is cut to start there.
* Where batches overlap, the one with the higher delivery count wins, and on
  equal counts the higher delivery state (Archived 4 > Acknowledged 2 >
  Available 0). Recency does not matter: an old Acknowledged batch beats a
  newer Available one with the same delivery count.
* Batches that overlap or touch and carry the same state and count become one.
* Work proceeds from the lowest offset upwards and what is settled is never
  revisited, so two touching batches with the same state can survive unmerged
  when the second one only took its final shape after the first was settled.
  Kafka writes exactly that, so this does too.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from operator import attrgetter
from typing import Final

from kshare_cli.state.records import StateBatch

__all__ = ["combine_state_batches", "prune_state_batches"]

_UNKNOWN_START_OFFSET: Final = -1

# Kafka orders batches by first offset, last offset, delivery count, delivery
# state; an ordered set of them is its work queue, so equal batches collapse.
_order = attrgetter("first_offset", "last_offset", "delivery_count", "delivery_state")

# (first_offset, last_offset, delivery_count, delivery_state): tuples compare in Kafka's order.
_Entry = tuple[int, int, int, int]


def prune_state_batches(batches: Sequence[StateBatch], start_offset: int) -> list[StateBatch]:
    """Drop what lies before the start offset; -1 means "start offset unknown", keep all."""
    if start_offset == _UNKNOWN_START_OFFSET:
        return list(batches)
    kept: list[StateBatch] = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset >= start_offset:
            kept.append(batch)
        else:
            kept.append(
                StateBatch(
                    start_offset, batch.last_offset, batch.delivery_state, batch.delivery_count
                )
            )
    return kept


def combine_state_batches(
    current: Sequence[StateBatch],
    new: Sequence[StateBatch],
    start_offset: int,
) -> tuple[StateBatch, ...]:
    """Combine the batches held so far with a write's batches, as the share coordinator does."""
    combined = prune_state_batches([*current, *new], start_offset)
    if len(combined) < 2:
        return tuple(combined)
    disjoint = _coalesced_if_disjoint(combined)
    if disjoint is not None:
        return disjoint
    combined.sort(key=_order)

    # Everything before the first pair that needs work is settled as it is.
    first_pair = _first_mergeable_pair(combined)
    if first_pair < 0:
        return tuple(combined)
    settled = combined[:first_pair]
    settled.extend(_resolve(combined[first_pair:]))
    return tuple(settled)


def _coalesced_if_disjoint(batches: list[StateBatch]) -> tuple[StateBatch, ...] | None:
    """The combined batches when no two overlap and they come in offset order; else None.

    This is the common write (an acknowledgement or release beyond what is held)
    and replay must keep up with 100,000 records a second. Without overlaps
    Kafka's combiner only joins touching neighbours of equal delivery count and
    state, chaining left to right, which is what this does in one pass; any
    overlap or disorder falls back to the full algorithm.
    """
    previous = batches[0]
    previous_last = previous.last_offset
    if previous_last < previous.first_offset:
        return None
    result: list[StateBatch] = []
    for batch in batches[1:]:
        first = batch.first_offset
        last = batch.last_offset
        if first <= previous_last or last < first:
            return None
        if (
            first == previous_last + 1
            and batch.delivery_count == previous.delivery_count
            and batch.delivery_state == previous.delivery_state
        ):
            previous = StateBatch(
                previous.first_offset, last, previous.delivery_state, previous.delivery_count
            )
        else:
            result.append(previous)
            previous = batch
        previous_last = last
    result.append(previous)
    return tuple(result)


def _mergeable(earlier: StateBatch, later: StateBatch) -> bool:
    if later.first_offset <= earlier.last_offset:
        return True
    return (
        later.first_offset == earlier.last_offset + 1
        and later.delivery_count == earlier.delivery_count
        and later.delivery_state == earlier.delivery_state
    )


def _first_mergeable_pair(batches: list[StateBatch]) -> int:
    earlier = batches[0]
    for index in range(1, len(batches)):
        later = batches[index]
        if _mergeable(earlier, later):
            return index - 1
        earlier = later
    return -1


def _resolve(batches: list[StateBatch]) -> list[StateBatch]:
    """Settle sorted batches from the lowest up, as Kafka's combiner does.

    Kafka keeps its work queue in an ordered set: it takes the two smallest
    batches, settles the first if they need no work, and otherwise replaces
    both with the pieces their overlap leaves. Here the untouched input is a
    sorted stream and only the pieces go to a heap; equal entries are one
    set member, so taking a batch out also drops every copy of it.
    """
    settled: list[StateBatch] = []
    pieces: list[_Entry] = []
    stream = iter(batches)
    head_batch: StateBatch | None = next(stream)
    head: _Entry | None = _entry(batches[0])
    heappop = heapq.heappop
    heappush = heapq.heappush

    while True:
        # Take the smallest member.
        earlier_batch: StateBatch | None
        if pieces and (head is None or pieces[0] <= head):
            earlier = heappop(pieces)
            earlier_batch = None
        elif head is not None:
            earlier, earlier_batch = head, head_batch
            head_batch = next(stream, None)
            head = None if head_batch is None else _entry(head_batch)
        else:
            break
        while pieces and pieces[0] == earlier:
            heappop(pieces)
        while head is not None and head == earlier:
            head_batch = next(stream, None)
            head = None if head_batch is None else _entry(head_batch)

        # Look at the next one.
        later_is_piece = bool(pieces) and (head is None or pieces[0] <= head)
        if later_is_piece:
            later = pieces[0]
        elif head is not None:
            later = head
        else:
            settled.append(earlier_batch or _batch(earlier))
            break
        first, last, count, state = earlier
        later_first, later_last, later_count, later_state = later
        same_delivery = count == later_count and state == later_state
        if not (later_first <= last or (later_first == last + 1 and same_delivery)):
            settled.append(earlier_batch or _batch(earlier))
            continue

        # Take the next one out too (with its copies), then queue what is left of the pair.
        while pieces and pieces[0] == later:
            heappop(pieces)
        while head is not None and head == later:
            head_batch = next(stream, None)
            head = None if head_batch is None else _entry(head_batch)
        if same_delivery:
            heappush(pieces, (first, max(last, later_last), count, state))
        else:
            _queue_overlap(pieces, earlier, later)
    return settled


def _queue_overlap(pieces: list[_Entry], earlier: _Entry, later: _Entry) -> None:
    """Queue the pieces an overlapping pair with different delivery information leaves,
    split as Kafka's combiner splits them (the higher delivery count and state keeps the
    overlap); ``earlier`` sorts first. Apart from ``_resolve`` because only overlapping
    pairs, not the sorted stream's every batch, come this way."""
    heappush = heapq.heappush
    first, last, count, state = earlier
    later_first, later_last, later_count, later_state = later
    later_wins = (later_count, later_state) > (count, state)
    if later_first == first:
        if later_last == last or later_wins:
            heappush(pieces, later)
        else:
            heappush(pieces, earlier)
            heappush(pieces, (last + 1, later_last, later_count, later_state))
    elif not later_wins:
        heappush(pieces, earlier)
        if later_last > last:
            heappush(pieces, (last + 1, later_last, later_count, later_state))
    else:
        heappush(pieces, (first, later_first - 1, count, state))
        heappush(pieces, later)
        if later_last < last:
            heappush(pieces, (later_last + 1, last, count, state))


def _entry(batch: StateBatch) -> _Entry:
    return (batch.first_offset, batch.last_offset, batch.delivery_count, batch.delivery_state)


def _batch(entry: _Entry) -> StateBatch:
    first, last, count, state = entry
    return StateBatch(first, last, state, count)
