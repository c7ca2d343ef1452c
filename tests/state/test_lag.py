"""KIP-1226 lag: the seed's worked example and every lag the recorded Kafka 4.2.0 tools printed."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.records import ShareSnapshotValue, StateBatch, StateRecord, decode_record
from kshare_cli.state.replay import (
    SharePartitionKey,
    SharePartitionState,
    ShareStateReplayer,
)
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState
from tests.support.golden import GOLDEN, kafka_uuid, read_jsonl

AVAILABLE, ACKED, ARCHIVED = 0, 2, 4


# --------------------------------------------------------------------------- the seed


def test_the_kip_1226_worked_example() -> None:
    # Seed 002: highest offset 10 (so log end offset 11), SPSO 2, offsets 5 and 6 already
    # processed: "share-partition lag = 10 - 2 + 1 - 2 = 7".
    assert share_partition_lag(11, 2, 2) == 7


def test_the_kip_1226_worked_example_as_a_persisted_window() -> None:
    # What the share coordinator holds for the example: offsets 2 and 4 are acquired (never
    # persisted), 3 was released after delivery 2, 5 acknowledged, 6 archived; 7-10 were
    # not delivered yet.
    state = SharePartitionState(
        snapshot_epoch=0,
        state_epoch=1,
        leader_epoch=0,
        start_offset=2,
        delivery_complete_count=2,
        create_timestamp=0,
        write_timestamp=0,
        state_batches=(
            StateBatch(3, 3, AVAILABLE, 2),
            StateBatch(5, 5, ACKED, 1),
            StateBatch(6, 6, ARCHIVED, 1),
        ),
    )

    window = InFlightWindow.from_state(state)
    lag = share_partition_lag(11, window.start_offset, window.delivery_complete_count)

    assert window.runs == (
        WindowRun(2, 2, WindowState.UNRECORDED, 0),
        WindowRun(3, 3, WindowState.AVAILABLE, 2),
        WindowRun(4, 4, WindowState.UNRECORDED, 0),
        WindowRun(5, 5, WindowState.ACKNOWLEDGED, 1),
        WindowRun(6, 6, WindowState.ARCHIVED, 1),
    )
    assert (window.available, window.acknowledged, window.archived, window.unrecorded) == (
        1,
        1,
        1,
        2,
    )
    assert window.queued(11) == 4
    # "The records to be consumed are offsets 2, 3, 4, 7, 8 and 9 ... and then offset 10".
    assert window.delivery_complete_count == window.acknowledged + window.archived
    assert lag == window.available + window.unrecorded + window.queued(11) == 7


# --------------------------------------------------------------------------- unknowns


@pytest.mark.parametrize(
    ("log_end_offset", "start_offset", "delivery_complete_count"),
    [(15, -1, 0), (15, 5, -1), (15, -1, -1), (0, -1, -1)],
)
def test_lag_is_unknown_when_the_start_offset_or_the_count_is(
    log_end_offset: int, start_offset: int, delivery_complete_count: int
) -> None:
    assert share_partition_lag(log_end_offset, start_offset, delivery_complete_count) is None


@pytest.mark.parametrize(
    ("log_end_offset", "start_offset", "delivery_complete_count", "lag"),
    [(15, 2, 13, 0), (15, 5, 10, 0), (20, 5, 3, 12), (6, 0, 0, 6), (50000, 46685, 0, 3315)],
)
def test_lag_is_the_log_end_offset_less_the_start_and_the_completed(
    log_end_offset: int, start_offset: int, delivery_complete_count: int, lag: int
) -> None:
    assert share_partition_lag(log_end_offset, start_offset, delivery_complete_count) == lag


# --------------------------------------------------------------------------- golden corpus


@dataclass(frozen=True)
class DescribedLag:
    group_id: str
    topic: str
    partition: int
    start_offset: int
    lag: int | None


def _described(relative: str) -> list[DescribedLag]:
    """The rows of a recorded `kafka-share-groups --describe` (LAG "-" is unknown)."""
    rows = []
    for line in (GOLDEN / "tool-output" / relative).read_text().splitlines():
        fields = line.split()
        if len(fields) != 5 or fields[0] == "GROUP":
            continue
        group_id, topic, partition, start_offset, lag = fields
        rows.append(
            DescribedLag(
                group_id, topic, int(partition), int(start_offset), None if lag == "-" else int(lag)
            )
        )
    assert rows, relative
    return rows


def _log_end_offsets() -> dict[tuple[str, int], int]:
    """The log end offsets the broker itself looked up (ListOffsets latest) to compute lags.

    golden-a's 15 and golden-fmt's 6 are also in the corpus README; the topics that were
    already on the broker (perf-t, perf-big, share-e2e) are known only from these calls.
    """
    ends: dict[tuple[str, int], int] = {}
    for capture in ("scenario-a", "console-share-consumer"):
        for row in read_jsonl(f"decoded/{capture}.wire.jsonl"):
            if row["api_key"] != 2:
                continue
            if not row["request_header"]["clientId"].startswith("NetworkPartitionMetadataClient"):
                continue
            for topic in row["response"]["topics"]:
                for partition in topic["partitions"]:
                    key = (topic["name"], partition["partitionIndex"])
                    assert ends.setdefault(key, partition["offset"]) == partition["offset"]
    return ends


LOG_END_OFFSETS = _log_end_offsets()


def test_log_end_offsets_agree_with_the_readme() -> None:
    assert LOG_END_OFFSETS[("golden-a", 0)] == LOG_END_OFFSETS[("golden-a", 1)] == 15
    assert LOG_END_OFFSETS[("golden-fmt", 0)] == 6


def _state_log() -> list[tuple[int, StateRecord]]:
    """(write timestamp, record) for the whole state topic, partition by partition in log order."""
    rows = sorted(
        read_jsonl("state/share-group-state.jsonl"),
        key=lambda row: (row["partition"], row["offset"]),
    )
    return [
        (
            row["timestamp"],
            decode_record(
                base64.b64decode(row["key_b64"]),
                None if row["value_b64"] is None else base64.b64decode(row["value_b64"]),
            ),
        )
        for row in rows
    ]


STATE_LOG = _state_log()


def _reset_snapshots() -> list[tuple[int, ShareSnapshotValue]]:
    return sorted(
        (timestamp, record.value)
        for timestamp, record in STATE_LOG
        if isinstance(record.value, ShareSnapshotValue) and record.value.state_epoch == 3
    )


def _states_before(cutoff_ms: int) -> dict[tuple[str, int], SharePartitionState]:
    """Every share-partition's state as of a moment: replay what was written before it."""
    replayer = ShareStateReplayer()
    replayer.apply_all(record for timestamp, record in STATE_LOG if timestamp < cutoff_ms)
    states: dict[tuple[str, int], SharePartitionState] = {}
    for key, state in replayer.states().items():
        assert (key.group_id, key.partition) not in states  # one topic per group in the corpus
        states[key.group_id, key.partition] = state
    return states


def _check(rows: Iterable[DescribedLag], states: dict[tuple[str, int], SharePartitionState]) -> int:
    checked = 0
    for row in rows:
        state = states[row.group_id, row.partition]
        log_end_offset = LOG_END_OFFSETS[row.topic, row.partition]
        assert state.start_offset == row.start_offset, row
        assert (
            share_partition_lag(log_end_offset, state.start_offset, state.delivery_complete_count)
            == row.lag
        ), row
        checked += 1
    return checked


@pytest.mark.parametrize(
    "relative",
    [
        "kafka-share-groups/04-describe.out",
        "kafka-share-groups/10-describe-all-groups.out",
        "kafka-share-groups/14-describe-after-close.out",
    ],
)
def test_golden_describe_lags_before_the_resets(relative: str) -> None:
    # The first reset's snapshots mark the end of the consumption the describes saw.
    first_reset_ms = _reset_snapshots()[0][0]

    assert _check(_described(relative), _states_before(first_reset_ms)) >= 2


def test_golden_describe_all_groups_covers_every_share_partition_of_the_state_topic() -> None:
    rows = _described("kafka-share-groups/10-describe-all-groups.out")
    states = _states_before(_reset_snapshots()[0][0])

    assert {(row.group_id, row.partition) for row in rows} == set(states)
    assert len(rows) == 12
    assert {row.lag for row in rows} == {0, 3315}  # perf3-implicit never acknowledged


def test_golden_describe_after_a_reset_has_an_unknown_lag() -> None:
    # Describe 17 ran after the reset to earliest and before golden-a:1 was reset by datetime
    # (the second snapshot of partition 1 in state epoch 3).
    resets = _reset_snapshots()
    by_datetime_ms = next(timestamp for timestamp, value in resets if value.snapshot_epoch == 2)
    rows = _described("kafka-share-groups/17-describe-after-reset-earliest.out")

    assert _check(rows, _states_before(by_datetime_ms)) == 2
    assert {row.lag for row in rows} == {None}


@pytest.mark.parametrize(
    ("relative", "state", "lag"),
    [
        ("console-share-consumer/11-describe-release-group.out", WindowState.AVAILABLE, 6),
        ("console-share-consumer/12-describe-reject-group.out", WindowState.ARCHIVED, 0),
        ("console-share-consumer/13-describe-default-group.out", WindowState.ACKNOWLEDGED, 0),
    ],
)
def test_golden_console_consumer_describe_lags(relative: str, state: WindowState, lag: int) -> None:
    # These groups' state is not in the state dump; rebuild it from the broker's own
    # WriteShareGroupState calls, through the coordinator the sandbox uses.
    (row,) = _described(relative)
    coordinator = ShareCoordinatorState()
    for call in read_jsonl("decoded/console-share-consumer.wire.jsonl"):
        if call["api_key"] != 85 or call["request"]["groupId"] != row.group_id:
            continue
        for topic in call["request"]["topics"]:
            for partition in topic["partitions"]:
                key = SharePartitionKey(
                    row.group_id, kafka_uuid(topic["topicId"]), partition["partition"]
                )
                if coordinator.state(key) is None:
                    coordinator.apply(
                        coordinator.initialize(
                            key, state_epoch=partition["stateEpoch"], start_offset=-1
                        )
                    )
                coordinator.apply(
                    coordinator.write(
                        key,
                        start_offset=partition["startOffset"],
                        delivery_complete_count=partition["deliveryCompleteCount"],
                        leader_epoch=partition["leaderEpoch"],
                        state_epoch=partition["stateEpoch"],
                        state_batches=[
                            StateBatch(
                                batch["firstOffset"],
                                batch["lastOffset"],
                                batch["deliveryState"],
                                batch["deliveryCount"],
                            )
                            for batch in partition["stateBatches"]
                        ],
                    )
                )
    (persisted,) = coordinator.states().values()
    window = InFlightWindow.from_state(persisted)
    log_end_offset = LOG_END_OFFSETS[row.topic, row.partition]

    assert _check([row], {(row.group_id, row.partition): persisted}) == 1
    assert row.lag == lag
    assert window.count(state) == 6
    assert lag == window.available + window.unrecorded + window.queued(log_end_offset)
