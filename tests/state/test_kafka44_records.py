"""The state codec, replay and windows against a Kafka 4.4 broker's ``__share_group_state``.

Kafka 4.4 persists a record bound for the group's dead-letter queue twice: ARCHIVING (3)
before the DLQ write, ARCHIVED (4) after it (``tests/golden/kafka-4.4/README.md``). Every
recorded record must decode to what Kafka's own ``ShareCoordinatorRecordSerde`` made of it
(``decoded/``), re-encode byte for byte, and replay to the states the README states.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.state.records import (
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    decode_record,
    encode_record,
)
from kshare_cli.state.replay import SharePartitionKey, ShareStateReplayer
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState, window_counts
from tests.state.test_records import _record_as_kafka_decoded_it

GOLDEN_44 = Path(__file__).resolve().parents[1] / "golden" / "kafka-4.4"
TOPIC_ID = uuid.UUID(bytes=base64.urlsafe_b64decode("tXs4w6sZTYyPfT9kGSFB7g=="))  # golden-d
P0 = SharePartitionKey("golden-dg", TOPIC_ID, 0)
P1 = SharePartitionKey("golden-dg", TOPIC_ID, 1)
ARCHIVING = int(DeliveryState.ARCHIVING)


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _pairs(name: str, count: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    raw = _load_jsonl(GOLDEN_44 / "state" / name)
    decoded = _load_jsonl(GOLDEN_44 / "decoded" / name)
    assert len(raw) == len(decoded) == count
    for raw_row, decoded_row in zip(raw, decoded, strict=True):
        assert (raw_row["partition"], raw_row["offset"]) == (
            decoded_row["partition"],
            decoded_row["offset"],
        )
    return list(zip(raw, decoded, strict=True))


PAIRS = _pairs("share-group-state.jsonl", 24) + _pairs("share-group-state-end.jsonl", 41)


def _bytes_of(row: dict[str, Any]) -> tuple[bytes, bytes | None]:
    value = row["value_b64"]
    return base64.b64decode(row["key_b64"]), None if value is None else base64.b64decode(value)


def _log(name: str) -> list[StateRecord]:
    rows = sorted(
        _load_jsonl(GOLDEN_44 / "state" / name), key=lambda row: (row["partition"], row["offset"])
    )
    return [decode_record(*_bytes_of(row)) for row in rows]


def _golden_dg(records: list[StateRecord]) -> list[StateRecord]:
    return [record for record in records if record.key.group_id == "golden-dg"]


def _of(key: SharePartitionKey) -> list[StateRecord]:
    """One share-partition's records after scenario D, in log order."""
    return [
        record
        for record in _log("share-group-state.jsonl")
        if SharePartitionKey.of(record.key) == key
    ]


@pytest.mark.parametrize(
    ("raw", "decoded"),
    PAIRS,
    ids=[f"{i}-p{raw['partition']}-o{raw['offset']}" for i, (raw, _) in enumerate(PAIRS)],
)
def test_kafka44_record_decodes_as_kafka_decoded_it_and_reencodes(
    raw: dict[str, Any], decoded: dict[str, Any]
) -> None:
    key_bytes, value_bytes = _bytes_of(raw)

    record = decode_record(key_bytes, value_bytes)

    assert record == _record_as_kafka_decoded_it(decoded)
    assert encode_record(record) == (key_bytes, value_bytes)


def test_kafka44_records_carry_archiving_then_archived_for_each_dead_letter() -> None:
    # Both groups' three dead letters (read right after scenario D, before the coordinator
    # pruned golden-dg p0's), and golden-dcr's 30 rejects (two ranges of 15), read at the end.
    seen: list[tuple[str, int, int, int, int]] = []
    scenario_d = _log("share-group-state.jsonl")
    end = [r for r in _log("share-group-state-end.jsonl") if r.key.group_id == "golden-dcr"]
    for record in scenario_d + end:
        assert record.value is not None
        for batch in record.value.state_batches:
            if batch.delivery_state in (ARCHIVING, DeliveryState.ARCHIVED):
                seen.append(
                    (
                        record.key.group_id,
                        record.key.partition,
                        batch.first_offset,
                        batch.delivery_state,
                        batch.delivery_count,
                    )
                )
    for group in ("golden-dg", "golden-dg2"):
        # By source partition (a stable sort keeps each share-partition's log order).
        assert sorted((s[1:] for s in seen if s[0] == group), key=lambda s: s[0]) == [
            (0, 4, ARCHIVING, 1),
            (0, 4, DeliveryState.ARCHIVED, 1),
            (1, 3, ARCHIVING, 1),
            (1, 3, DeliveryState.ARCHIVED, 1),
            (1, 5, ARCHIVING, 5),
            (1, 5, DeliveryState.ARCHIVED, 5),
        ]
    assert sorted((s[1:] for s in seen if s[0] == "golden-dcr"), key=lambda s: s[0]) == [
        (0, 0, ARCHIVING, 1),
        (0, 0, DeliveryState.ARCHIVED, 1),
        (1, 0, ARCHIVING, 1),
        (1, 0, DeliveryState.ARCHIVED, 1),
    ]


def test_kafka44_snapshots_initial_state_epoch_2_and_reset_count_0() -> None:
    snapshots = [
        record.value
        for record in _log("share-group-state-end.jsonl")
        if isinstance(record.value, ShareSnapshotValue)
    ]
    initial = [s for s in snapshots if s.start_offset == -1]
    resets = [s for s in snapshots if s.start_offset >= 0]
    assert {(s.state_epoch, s.delivery_complete_count) for s in initial} == {(2, -1)}
    assert {(s.state_epoch, s.delivery_complete_count) for s in resets} == {(6, 0)}


def test_kafka44_archiving_is_in_the_window_and_not_delivery_complete() -> None:
    # golden-dg p1 after its first update: o3 rejected (ARCHIVING), o5 released.
    replayer = ShareStateReplayer()
    replayer.apply_all(_of(P1)[:2])

    state = replayer.state(P1)
    assert state is not None
    assert (state.start_offset, state.delivery_complete_count) == (0, 13)
    window = InFlightWindow.from_state(state)
    assert window.runs == (
        WindowRun(0, 2, WindowState.ACKNOWLEDGED, 1),
        WindowRun(3, 3, WindowState.ARCHIVING, 1),
        WindowRun(4, 4, WindowState.ACKNOWLEDGED, 1),
        WindowRun(5, 5, WindowState.AVAILABLE, 1),
        WindowRun(6, 14, WindowState.ACKNOWLEDGED, 1),
    )
    assert (window.archiving, window.archived, window.available) == (1, 0, 1)
    # Kafka's count leaves ARCHIVING out: the terminal records are the acknowledged ones.
    assert window.delivery_complete_count == window.acknowledged == 13
    # Not delivered again: the group resumes at the released o5.
    assert window.first_not_done() == 5
    assert window.done_between(0, 15) == 14
    counts = window_counts(state)
    assert (counts.archiving, counts.archived, counts.acknowledged) == (1, 0, 13)
    assert window.cells(15)[3].state is WindowState.ARCHIVING


def test_kafka44_golden_dg_after_scenario_d() -> None:
    replayer = ShareStateReplayer()
    replayer.apply_all(_golden_dg(_log("share-group-state.jsonl")))

    p0, p1 = replayer.state(P0), replayer.state(P1)
    assert p0 is not None and p1 is not None
    # README: p0 startOffset 2 / deliveryCompleteCount 13, p1 5 / 10: LAG 0 of 15 records.
    assert (p0.start_offset, p0.delivery_complete_count, p0.state_epoch) == (2, 13, 2)
    assert (p1.start_offset, p1.delivery_complete_count, p1.state_epoch) == (5, 10, 2)
    assert ARCHIVING not in {b.delivery_state for b in p0.state_batches + p1.state_batches}
    assert p1.state_batches[0] == StateBatch(5, 5, DeliveryState.ARCHIVED, 5)
    assert sum(isinstance(r.value, ShareUpdateValue) for r in _of(P1)) == 7
