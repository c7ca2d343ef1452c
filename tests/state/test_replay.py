"""Replay of share-partition state, against what a Kafka 4.2.0 share coordinator did.

The writing side (the sandbox's share coordinator) is tested in
``tests/sandbox/test_share_coordinator_state.py``.
"""

from __future__ import annotations

import base64
import bisect
import dataclasses
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kshare_cli.state import replay
from kshare_cli.state.batches import combine_state_batches
from kshare_cli.state.records import (
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    decode_record,
    state_batches_from_fields,
)
from kshare_cli.state.replay import (
    SharePartitionKey,
    SharePartitionState,
    ShareStateReplayer,
    StartOffsetMove,
)
from tests.support.golden import GOLDEN

GOLDEN_TOPIC_ID = uuid.UUID("d1384e70-b203-4446-8f5e-1417096b3c51")  # golden-a
P0 = SharePartitionKey("golden-g", GOLDEN_TOPIC_ID, 0)
P1 = SharePartitionKey("golden-g", GOLDEN_TOPIC_ID, 1)
ACKED, AVAILABLE, ARCHIVED = 2, 0, 4


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _golden_state_log() -> list[StateRecord]:
    """The state topic in log order (partition by partition, offset by offset)."""
    rows = _load_jsonl(GOLDEN / "state" / "share-group-state.jsonl")
    rows.sort(key=lambda row: (row["partition"], row["offset"]))
    return [
        decode_record(
            base64.b64decode(row["key_b64"]),
            None if row["value_b64"] is None else base64.b64decode(row["value_b64"]),
        )
        for row in rows
    ]


GOLDEN_LOG = _golden_state_log()


def _golden_g(records: Sequence[StateRecord]) -> list[StateRecord]:
    return [record for record in records if record.key.group_id == "golden-g"]


def _kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _batches(*triples: tuple[int, int, int, int]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(*triple) for triple in triples)


# --------------------------------------------------------------------------- golden replay


def test_golden_g_topic_id_is_golden_a() -> None:
    assert {record.key.topic_id for record in _golden_g(GOLDEN_LOG)} == {GOLDEN_TOPIC_ID}


def test_golden_state_after_consumption() -> None:
    # Everything golden-g wrote before the offset resets (state epoch 1).
    consumption = [
        record
        for record in _golden_g(GOLDEN_LOG)
        if not (isinstance(record.value, ShareSnapshotValue) and record.value.state_epoch == 3)
        and record.value is not None
    ]
    replayer = ShareStateReplayer()

    replayer.apply_all(consumption)

    p0, p1 = replayer.state(P0), replayer.state(P1)
    assert p0 is not None and p1 is not None
    assert (p0.start_offset, p0.delivery_complete_count) == (2, 13)
    assert (p1.start_offset, p1.delivery_complete_count) == (5, 10)
    # 15 records per partition: lag = 15 - start - delivery_complete_count = 0.
    assert 15 - p0.start_offset - p0.delivery_complete_count == 0
    assert 15 - p1.start_offset - p1.delivery_complete_count == 0
    assert p0.state_batches == _batches(
        (2, 2, ACKED, 2),  # p0 o2: released once, accepted on delivery 2
        (3, 3, ACKED, 1),
        (4, 4, ARCHIVED, 1),  # p0 o4: rejected
        (5, 14, ACKED, 1),
    )
    assert p1.state_batches == _batches(
        (5, 5, ARCHIVED, 5),  # p1 o5: released 5 times, archived at the delivery limit
        (6, 14, ACKED, 1),
    )
    assert (p0.state_epoch, p0.snapshot_epoch, p1.state_epoch, p1.snapshot_epoch) == (1, 0, 1, 0)


def test_golden_resets_write_snapshots_with_state_epoch_3() -> None:
    before_tombstones = [record for record in _golden_g(GOLDEN_LOG) if record.value is not None]
    replayer = ShareStateReplayer()

    replayer.apply_all(before_tombstones)

    assert replayer.state(P0) == SharePartitionState(
        snapshot_epoch=1,
        state_epoch=3,
        leader_epoch=0,
        start_offset=0,
        delivery_complete_count=-1,
        create_timestamp=1795263323679,
        write_timestamp=1795263323679,
        state_batches=(),
    )
    p1 = replayer.state(P1)
    assert p1 is not None
    # Reset to earliest, then golden-a:1 to the offset of 2026-01-01T00:00:10Z.
    assert (p1.snapshot_epoch, p1.state_epoch, p1.start_offset) == (2, 3, 5)
    assert (p1.delivery_complete_count, p1.state_batches) == (-1, ())


def test_golden_delete_offsets_tombstones_remove_the_state() -> None:
    replayer = ShareStateReplayer()

    replayer.apply_all(GOLDEN_LOG)

    states = replayer.states()
    assert P0 not in states and P1 not in states
    assert not any(key.group_id == "golden-g" for key in states)
    all_keys = {SharePartitionKey.of(record.key) for record in GOLDEN_LOG}
    deleted = {SharePartitionKey.of(record.key) for record in GOLDEN_LOG if record.value is None}
    assert set(states) == all_keys - deleted
    assert len(states) == 10


def test_golden_perf_group_state_follows_its_last_update() -> None:
    replayer = ShareStateReplayer()
    replayer.apply_all(GOLDEN_LOG)
    last_update_by_key: dict[SharePartitionKey, ShareUpdateValue] = {}
    for record in GOLDEN_LOG:
        if isinstance(record.value, ShareUpdateValue):
            last_update_by_key[SharePartitionKey.of(record.key)] = record.value

    for share_partition, update in last_update_by_key.items():
        state = replayer.state(share_partition)
        if state is None:
            continue
        assert state.start_offset == update.start_offset
        assert state.delivery_complete_count == update.delivery_complete_count
        for batch in state.state_batches:
            assert batch.first_offset >= state.start_offset


def test_update_without_a_snapshot_becomes_the_state() -> None:
    replayer = ShareStateReplayer()
    key = ShareStateKey(StateRecordKind.UPDATE, "g", GOLDEN_TOPIC_ID, 0)

    replayer.apply(StateRecord(key, ShareUpdateValue(3, 1, 5, 2, _batches((6, 8, ACKED, 1)))))

    assert replayer.state(SharePartitionKey.of(key)) == SharePartitionState(
        3, 0, 1, 5, 2, 0, 0, _batches((6, 8, ACKED, 1))
    )


# --------------------------------------------------------------------------- batch combining

# The cases of Kafka's PersisterStateBatchCombinerTest (4.2): current batches, new batches,
# start offset, result; batches as (first, last, delivery state, delivery count). Kafka's
# test runs only one of them (shouldRun defaults to false); one listed result is wrong and
# is corrected here, marked below.
KAFKA_COMBINER_CASES = [
    ([(100, 130, 0, 1)], [], 120, [(120, 130, 0, 1)]),
    ([], [(100, 130, 0, 1)], 120, [(120, 130, 0, 1)]),
    ([], [], 120, []),
    ([(100, 110, 0, 1)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(100, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ([(100, 110, 0, 1)], [(105, 108, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(105, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ([(100, 110, 0, 1)], [(111, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    (
        [(100, 110, 0, 1), (121, 130, 0, 1)],
        [(111, 119, 2, 2), (116, 123, 2, 2)],
        -1,
        # Kafka lists [(100, 110, 0, 1), (111, 123, 2, 2)], losing offsets 124-130 of the
        # untouched current batch [121, 130]; its algorithm keeps them.
        [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)],
    ),
    (
        [(100, 110, 0, 1)],
        [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)],
        -1,
        [(100, 100, 0, 1), (101, 120, 3, 2)],
    ),
    (
        [(100, 110, 0, 1), (121, 130, 0, 1)],
        [(111, 119, 2, 2), (116, 123, 2, 2)],
        120,
        [(120, 123, 2, 2), (124, 130, 0, 1)],
    ),
    (
        [(111, 120, 0, 1)],
        [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)],
        -1,
        [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)],
    ),
    ([(100, 110, 0, 1)], [(100, 110, 0, 2)], -1, [(100, 110, 0, 2)]),
    ([(100, 110, 0, 3)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 3)]),
    ([(100, 110, 0, 1)], [(100, 105, 0, 2)], -1, [(100, 105, 0, 2), (106, 110, 0, 1)]),
    ([(100, 110, 0, 3)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 3)]),
    ([(100, 110, 0, 1)], [(100, 115, 0, 2)], -1, [(100, 115, 0, 2)]),
    ([(100, 110, 0, 3)], [(100, 115, 0, 1)], -1, [(100, 110, 0, 3), (111, 115, 0, 1)]),
    (
        [(100, 115, 0, 1)],
        [(105, 110, 1, 1)],
        -1,
        [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)],
    ),
    ([(100, 115, 1, 1)], [(105, 110, 0, 1)], -1, [(100, 115, 1, 1)]),
    ([(100, 110, 0, 1)], [(105, 110, 0, 2)], -1, [(100, 104, 0, 1), (105, 110, 0, 2)]),
    ([(100, 110, 0, 2)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 2)]),
    ([(100, 110, 0, 1)], [(105, 115, 0, 2)], -1, [(100, 104, 0, 1), (105, 115, 0, 2)]),
    ([(100, 110, 0, 2)], [(105, 115, 0, 1)], -1, [(100, 110, 0, 2), (111, 115, 0, 1)]),
]


@pytest.mark.parametrize(("current", "new", "start_offset", "expected"), KAFKA_COMBINER_CASES)
def test_combiner_matches_kafkas_own_expectations(
    current: list[tuple[int, int, int, int]],
    new: list[tuple[int, int, int, int]],
    start_offset: int,
    expected: list[tuple[int, int, int, int]],
) -> None:
    assert combine_state_batches(_batches(*current), _batches(*new), start_offset) == _batches(
        *expected
    )


def test_overlap_is_won_by_delivery_count_then_state_not_by_recency() -> None:
    acknowledged = _batches((0, 9, ACKED, 1))
    available_again = _batches((0, 9, AVAILABLE, 1))

    assert combine_state_batches(acknowledged, available_again, -1) == acknowledged
    assert combine_state_batches(available_again, acknowledged, -1) == acknowledged


def test_settled_batches_are_not_merged_again() -> None:
    # [0,4] is settled before [5,9] takes its final shape, so the two stay apart
    # although they touch and carry the same state and delivery count.
    result = combine_state_batches(
        _batches((0, 4, AVAILABLE, 2)), _batches((5, 7, ACKED, 1), (5, 9, AVAILABLE, 2)), -1
    )

    assert result == _batches((0, 4, AVAILABLE, 2), (5, 9, AVAILABLE, 2))


def _kafka_ordered_set_combiner(
    current: Sequence[StateBatch], new: Sequence[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """A literal, slow rendering of Kafka's ordered-set algorithm, to check the fast one."""
    Entry = tuple[int, int, int, int]  # first, last, count, state: Kafka's sort order
    entries: list[Entry] = []
    for batch in [*current, *new]:
        first = batch.first_offset
        if start_offset != -1:
            if batch.last_offset < start_offset:
                continue
            first = max(first, start_offset)
        entries.append((first, batch.last_offset, batch.delivery_count, batch.delivery_state))
    if len(entries) < 2:
        return tuple(StateBatch(f, last, s, c) for f, last, c, s in entries)
    ordered: list[Entry] = sorted(set(entries))
    final: list[Entry] = []

    def add(entry: Entry) -> None:
        index = bisect.bisect_left(ordered, entry)
        if index == len(ordered) or ordered[index] != entry:
            ordered.insert(index, entry)

    while True:
        pair = None
        skipped: list[Entry] = []
        for prev, candidate in zip(ordered, ordered[1:], strict=False):
            contiguous = prev[1] + 1 == candidate[0] and prev[2:] == candidate[2:]
            if candidate[0] <= prev[1] or contiguous:
                pair = (prev, candidate)
                break
            skipped.append(prev)
        for entry in skipped:
            ordered.remove(entry)
        final.extend(skipped)
        if pair is None:
            break
        prev, candidate = pair
        ordered.remove(prev)
        ordered.remove(candidate)
        (pf, pl, pc, ps), (cf, cl, cc, cs) = prev, candidate
        if (pc, ps) == (cc, cs):
            add((pf, max(pl, cl), pc, ps))
        elif cf == pf:
            if cl == pl or (cc, cs) > (pc, ps):
                add(candidate)
            else:
                add(prev)
                add((pl + 1, cl, cc, cs))
        elif (cc, cs) < (pc, ps):
            add(prev)
            if cl > pl:
                add((pl + 1, cl, cc, cs))
        else:
            add((pf, cf - 1, pc, ps))
            add(candidate)
            if cl < pl:
                add((cl + 1, pl, pc, ps))
    final.extend(ordered)
    return tuple(StateBatch(f, last, s, c) for f, last, c, s in final)


@st.composite
def _batch_lists(draw: st.DrawFn, max_size: int = 6) -> tuple[StateBatch, ...]:
    result = []
    for _ in range(draw(st.integers(0, max_size))):
        first = draw(st.integers(0, 40))
        length = draw(st.integers(1, 12))
        result.append(
            StateBatch(
                first,
                first + length - 1,
                draw(st.sampled_from([AVAILABLE, ACKED, ARCHIVED])),
                draw(st.integers(1, 3)),
            )
        )
    return tuple(result)


@settings(max_examples=400)
@given(_batch_lists(), _batch_lists(), st.one_of(st.just(-1), st.integers(0, 50)))
def test_combiner_is_kafkas_algorithm(
    current: tuple[StateBatch, ...], new: tuple[StateBatch, ...], start_offset: int
) -> None:
    assert combine_state_batches(current, new, start_offset) == _kafka_ordered_set_combiner(
        current, new, start_offset
    )


@st.composite
def _disjoint_ascending(draw: st.DrawFn) -> tuple[StateBatch, ...]:
    """Batches in offset order that never overlap, often touching: the combiner's fast path."""
    result = []
    next_first = draw(st.integers(0, 10))
    for _ in range(draw(st.integers(0, 8))):
        first = next_first + draw(st.sampled_from([0, 0, 1, 3]))
        length = draw(st.integers(1, 6))
        result.append(
            StateBatch(
                first,
                first + length - 1,
                draw(st.sampled_from([AVAILABLE, ACKED, ARCHIVED])),
                draw(st.integers(1, 2)),
            )
        )
        next_first = first + length
    return tuple(result)


@settings(max_examples=400)
@given(_disjoint_ascending(), st.integers(0, 6), st.one_of(st.just(-1), st.integers(0, 30)))
def test_combiner_fast_path_for_disjoint_batches_is_kafkas_algorithm(
    batches: tuple[StateBatch, ...], split: int, start_offset: int
) -> None:
    current, new = batches[:split], batches[split:]
    assert combine_state_batches(current, new, start_offset) == _kafka_ordered_set_combiner(
        current, new, start_offset
    )


# --------------------------------------------------------------------------- replay model

Operation = tuple[str, int, tuple[StateBatch, ...], int]


def _non_overlapping(batches: tuple[StateBatch, ...]) -> tuple[StateBatch, ...]:
    kept: list[StateBatch] = []
    for batch in sorted(batches, key=lambda b: b.first_offset):
        if not kept or batch.first_offset > kept[-1].last_offset:
            kept.append(batch)
    return tuple(kept)


@st.composite
def _operations(draw: st.DrawFn) -> list[Operation]:
    operations: list[Operation] = [
        ("snapshot", draw(st.integers(-1, 10)), _non_overlapping(draw(_batch_lists())), 0)
    ]
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 9)) == 0:
            batches = _non_overlapping(draw(_batch_lists()))
            operations.append(("snapshot", draw(st.integers(-1, 30)), batches, 0))
        else:
            start_offset = draw(st.one_of(st.just(-1), st.integers(0, 30)))
            count = draw(st.integers(-1, 50))
            operations.append(("update", start_offset, draw(_batch_lists()), count))
    return operations


@settings(max_examples=300)
@given(_operations())
def test_replay_matches_an_offset_by_offset_model(operations: list[Operation]) -> None:
    """Per offset, the highest (delivery count, state) written since the offset was pruned."""
    key_of = {kind: ShareStateKey(kind, "g", GOLDEN_TOPIC_ID, 0) for kind in StateRecordKind}
    replayer = ShareStateReplayer()
    model: dict[int, tuple[int, int]] = {}
    model_start = -1
    model_count = -1
    epoch = 0
    for kind, start_offset, batches, count in operations:
        if kind == "snapshot":
            epoch += 1
            value: ShareSnapshotValue | ShareUpdateValue = ShareSnapshotValue(
                epoch, 1, 0, start_offset, count, 0, 0, batches
            )
            record = StateRecord(key_of[StateRecordKind.SNAPSHOT], value)
            model = {
                offset: (batch.delivery_count, batch.delivery_state)
                for batch in batches
                for offset in range(batch.first_offset, batch.last_offset + 1)
            }
            model_start = start_offset
        else:
            value = ShareUpdateValue(epoch, -1, start_offset, count, batches)
            record = StateRecord(key_of[StateRecordKind.UPDATE], value)
            for batch in batches:
                for offset in range(batch.first_offset, batch.last_offset + 1):
                    delivery = (batch.delivery_count, batch.delivery_state)
                    model[offset] = max(model.get(offset, delivery), delivery)
            if start_offset != -1:
                model_start = start_offset
            if model_start != -1:
                model = {o: d for o, d in model.items() if o >= model_start}
        model_count = count
        replayer.apply(record)

        state = replayer.state(SharePartitionKey("g", GOLDEN_TOPIC_ID, 0))
        assert state is not None
        assert (state.start_offset, state.delivery_complete_count) == (model_start, model_count)
        assert state.snapshot_epoch == epoch
        replayed: dict[int, tuple[int, int]] = {}
        previous_last = None
        for batch in state.state_batches:
            assert batch.first_offset <= batch.last_offset
            if previous_last is not None:
                assert batch.first_offset > previous_last  # sorted, non-overlapping
            previous_last = batch.last_offset
            for offset in range(batch.first_offset, batch.last_offset + 1):
                replayed[offset] = (batch.delivery_count, batch.delivery_state)
        assert replayed == model


@st.composite
def _working_through(draw: st.DrawFn, max_operations: int = 25) -> list[Operation]:
    """Updates as a coordinator writes them while consumers work through a partition:
    batches past everything before, a start offset that only moves forward (mostly).
    Some operations break the pattern, so both ways of folding are exercised."""
    operations: list[Operation] = [("snapshot", draw(st.integers(-1, 3)), (), 0)]
    next_first = draw(st.integers(0, 5))
    start = -1
    for _ in range(draw(st.integers(1, max_operations))):
        roll = draw(st.integers(0, 19))
        if roll == 0:
            operations.append(("snapshot", draw(st.integers(-1, next_first)), (), 0))
            continue
        batches = []
        for _ in range(draw(st.integers(0, 3))):
            first = next_first + draw(st.sampled_from([0, 0, 2]))
            length = draw(st.integers(1, 4))
            batches.append(
                StateBatch(
                    first,
                    first + length - 1,
                    draw(st.sampled_from([AVAILABLE, ACKED, ARCHIVED])),
                    draw(st.integers(1, 2)),
                )
            )
            next_first = first + length
        if roll == 1:  # an overlapping rewrite of earlier offsets
            batches.append(StateBatch(max(next_first - 3, 0), next_first, ARCHIVED, 3))
            next_first += 1
        moved = draw(st.sampled_from([-1, -1, 0, 1, 2]))
        if roll == 2:
            # A start offset that moves back.
            start_offset = max(start - draw(st.integers(1, 2)), 0)
        elif moved == -1:
            start_offset = -1
        else:
            start_offset = min(max(start, 0) + moved, next_first)
        if start_offset != -1:
            start = start_offset
        operations.append(("update", start_offset, tuple(batches), draw(st.integers(-1, 9))))
    return operations


def _check_read_late_equals_read_after_every_record(
    operations: list[Operation], reads: list[int]
) -> None:
    key_of = {kind: ShareStateKey(kind, "g", GOLDEN_TOPIC_ID, 0) for kind in StateRecordKind}
    share_partition = SharePartitionKey("g", GOLDEN_TOPIC_ID, 0)
    lazy = ShareStateReplayer()
    expected: SharePartitionState | None = None  # merging each update in turn, by hand
    for index, (kind, start_offset, batches, count) in enumerate(operations):
        if kind == "snapshot":
            record = StateRecord(
                key_of[StateRecordKind.SNAPSHOT],
                ShareSnapshotValue(index, 1, 0, start_offset, count, 0, 0, batches),
            )
        else:
            record = StateRecord(
                key_of[StateRecordKind.UPDATE],
                ShareUpdateValue(0, index % 3 - 1, start_offset, count, batches),
            )
        value = record.value
        if isinstance(value, ShareSnapshotValue):
            expected = SharePartitionState.from_snapshot(value)
        else:
            assert isinstance(value, ShareUpdateValue)
            expected = (
                SharePartitionState.from_update(value)
                if expected is None
                else expected.merged_with(value)
            )
        lazy.apply(record)
        if index in reads:
            assert lazy.state(share_partition) == expected
    assert lazy.states() == {share_partition: expected}


@settings(max_examples=400)
@given(_working_through(), st.lists(st.integers(0, 30), max_size=4))
def test_state_read_late_equals_state_read_after_every_record(
    operations: list[Operation], reads: list[int]
) -> None:
    """Updates queued and folded when read give exactly the state of merging each in turn."""
    _check_read_late_equals_read_after_every_record(operations, reads)


@settings(max_examples=80)
@given(_working_through(max_operations=110), st.lists(st.integers(0, 110), max_size=3))
def test_long_runs_folded_on_the_way_equal_merging_each_in_turn(
    operations: list[Operation], reads: list[int]
) -> None:
    """Past _FOLD_EVERY queued updates the replayer folds on its own, mid-run."""
    _check_read_late_equals_read_after_every_record(operations, reads)


@st.composite
def _anything_goes(draw: st.DrawFn) -> list[Operation]:
    """Snapshots and updates with arbitrary batches (overlapping, out of order) and start
    offsets that jump back and forth: the fold must fall back to merging each in turn."""
    operations: list[Operation] = [("snapshot", draw(st.integers(-1, 10)), draw(_batch_lists()), 0)]
    for _ in range(draw(st.integers(1, 40))):
        if draw(st.integers(0, 14)) == 0:
            operations.append(("snapshot", draw(st.integers(-1, 30)), draw(_batch_lists()), 0))
        else:
            start_offset = draw(st.one_of(st.just(-1), st.integers(0, 40)))
            count = draw(st.integers(-1, 50))
            operations.append(("update", start_offset, draw(_batch_lists(max_size=4)), count))
    return operations


@settings(max_examples=150)
@given(_anything_goes(), st.lists(st.integers(0, 40), max_size=3))
def test_queued_updates_of_any_shape_fold_as_merging_each_in_turn(
    operations: list[Operation], reads: list[int]
) -> None:
    _check_read_late_equals_read_after_every_record(operations, reads)


@settings(max_examples=300)
@given(_disjoint_ascending(), st.integers(-1, 30))
def test_fold_prunes_and_joins_as_the_combiner(
    batches: tuple[StateBatch, ...], start_offset: int
) -> None:
    """The fold's own prune-and-join of queued batches against combine_state_batches."""
    fields = [
        field
        for batch in batches
        for field in (
            batch.first_offset,
            batch.last_offset,
            batch.delivery_state,
            batch.delivery_count,
        )
    ]

    joined = replay._pruned_and_joined(fields, fields[1::4], start_offset)

    assert state_batches_from_fields(joined) == combine_state_batches((), batches, start_offset)


# --------------------------------------------------------------------------- start offset moves


def _snapshot_at(epoch: int, start_offset: int, written: int) -> StateRecord:
    key = ShareStateKey(StateRecordKind.SNAPSHOT, P0.group_id, P0.topic_id, P0.partition)
    return StateRecord(key, ShareSnapshotValue(epoch, 1, 0, start_offset, -1, 1, written, ()))


def _update_to(start_offset: int) -> StateRecord:
    key = ShareStateKey(StateRecordKind.UPDATE, P0.group_id, P0.topic_id, P0.partition)
    return StateRecord(key, ShareUpdateValue(0, 0, start_offset, -1, ()))


def test_replay_dates_the_start_offsets_last_change_from_the_records() -> None:
    replayer = ShareStateReplayer()
    replayer.apply(_snapshot_at(0, -1, 1_000), 1_005)  # initialised: the history's beginning
    assert replayer.state(P0).start_offset_moved == StartOffsetMove(1_000, exact=True)
    replayer.apply(_update_to(0), 2_000)
    replayer.apply(_update_to(-1), 3_000)  # -1: unchanged
    replayer.apply(_update_to(0), 4_000)  # the same start offset again
    replayer.apply(_snapshot_at(1, 0, 5_000), 5_001)  # a cold share-partition's restatement
    state = replayer.state(P0)
    assert state is not None and state.start_offset == 0
    assert state.start_offset_moved == StartOffsetMove(2_000, exact=True)
    replayer.apply(_update_to(7), 6_000)
    assert replayer.state(P0).start_offset_moved == StartOffsetMove(6_000, exact=True)
    replayer.apply(_snapshot_at(2, 9, 7_000), 7_002)  # a reset's snapshot moves it too
    assert replayer.state(P0).start_offset_moved == StartOffsetMove(7_000, exact=True)
    # Left out of comparisons: it says nothing about the records.
    assert replayer.state(P0) == dataclasses.replace(
        state, start_offset=9, snapshot_epoch=2, write_timestamp=7_000
    )


def test_after_pruning_the_start_offset_is_known_unmoved_only_since_the_earliest_record() -> None:
    replayer = ShareStateReplayer()
    replayer.apply(_snapshot_at(4, 12, 9_000), 9_001)  # epoch 4 first: the rest was pruned
    assert replayer.state(P0).start_offset_moved == StartOffsetMove(9_000, exact=False)
    replayer.apply(_update_to(12), 10_000)
    assert replayer.state(P0).start_offset_moved == StartOffsetMove(9_000, exact=False)
    replayer.apply(_update_to(15), 11_000)
    assert replayer.state(P0).start_offset_moved == StartOffsetMove(11_000, exact=True)
    replayer.apply(_update_to(16))  # no timestamp: the change is not dated
    assert replayer.state(P0).start_offset_moved is None


def test_the_golden_state_topic_dates_each_start_offset_as_kafka_wrote_it() -> None:
    rows = _load_jsonl(GOLDEN / "state" / "share-group-state.jsonl")
    rows.sort(key=lambda row: (row["partition"], row["offset"]))
    replayer = ShareStateReplayer()
    last_change: dict[SharePartitionKey, int] = {}
    starts: dict[SharePartitionKey, int] = {}
    for row, record in zip(rows, GOLDEN_LOG, strict=True):
        replayer.apply(record, row["timestamp"])
        value = record.value
        key = SharePartitionKey.of(record.key)
        if value is None:  # deleted: nothing left to date
            starts.pop(key, None)
            last_change.pop(key, None)
            continue
        if value.start_offset == -1 and key in starts:
            continue
        if starts.get(key) != value.start_offset:
            starts[key] = value.start_offset
            last_change[key] = (
                value.write_timestamp if isinstance(value, ShareSnapshotValue) else row["timestamp"]
            )
    moved = {key: state.start_offset_moved for key, state in replayer.states().items()}
    assert moved == {key: StartOffsetMove(at, exact=True) for key, at in last_change.items()}
    assert len({at for at in last_change.values()}) > 3
