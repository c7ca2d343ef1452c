"""Where the time lag lookups start: the windows' resume offsets, and the warning without them.

``describe --time-lag`` reads the windows itself; where some cannot be read, those ages
are counted from the stored start offset and one warning per reason says which. The
sandbox runs of every surface are ``tests/cli/test_time_lag_surfaces.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.services.time_lag import _counted_from_start, oldest_unacknowledged_timestamps
from kshare_cli.state.records import StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow

WHY = "not authorized to read __share_group_state (needs DESCRIBE and READ on the topic)"


def test_one_warning_when_no_window_could_be_read() -> None:
    unread = dict.fromkeys([("g", "t", 0), ("g", "t", 1)], WHY)
    assert _counted_from_start(unread, 2) == [
        "time lag (LAG-AGE, lag_seconds) counted from the stored start offset, which can "
        f"trail acknowledged records, so an age may be too high: {WHY}"
    ]
    assert _counted_from_start({}, 2) == []


def test_the_share_partitions_are_named_when_only_some_windows_are_unknown() -> None:
    silent = "state partition 7's leader broker 2 (h:9092) did not answer"
    unread = {("g", "t", 3): silent, ("g", "t", 1): silent, ("h", "u", 0): WHY}
    assert _counted_from_start(unread, 5) == [
        "time lag of g/t:1, g/t:3 counted from the stored start offset, which can trail "
        f"acknowledged records, so an age may be too high: {silent}",
        "time lag of h/u:0 counted from the stored start offset, which can trail "
        f"acknowledged records, so an age may be too high: {WHY}",
    ]


def test_the_dashboard_peeks_where_the_window_says_the_group_resumes() -> None:
    """Start offset 4 stored, 4-6 acknowledged, 7 available: the dashboard reads offset 7;
    a share-partition without a window is read at its start offset."""
    acknowledged = int(DeliveryState.ACKNOWLEDGED)
    state = SharePartitionState(
        0, 1, 0, 4, 3, 0, 0, (StateBatch(4, 6, acknowledged, 1), StateBatch(7, 7, 0, 2))
    )
    group = GroupInflight(
        "g",
        None,
        (
            PartitionInflight("t", 0, None, 4, 10, 3, "broker", InFlightWindow.from_state(state)),
            PartitionInflight("t", 1, None, 2, 5, 3, "broker", None),
        ),
        None,
    )
    peeked: list[tuple[int, int]] = []

    def peek(
        config: Mapping[str, object],
        topic: str,
        partition: int,
        offset: int,
        limit: int,
        timeout_s: float,
    ) -> tuple[ConsumedRecord, ...]:
        peeked.append((partition, offset))
        return (ConsumedRecord(topic, partition, offset, None, 1, 1_000 + offset, None, b"v"),)

    stamps = oldest_unacknowledged_timestamps(group, {}, 5.0, peek=peek)
    assert sorted(peeked) == [(0, 7), (1, 2)]
    assert stamps == {("g", "t", 0): 1_007, ("g", "t", 1): 1_002}
