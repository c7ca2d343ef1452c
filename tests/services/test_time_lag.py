"""The time-lag lookup: which offset it reads, the age it computes, what stays unknown.

The peek is replaced by a recorder, so these tests see exactly which offsets
would be fetched (a fetch per share-partition is the option's cost) and what a
failed read turns into. The read itself is exercised against the sandbox in
``tests/cli/test_describe_time_lag.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kshare_cli.admin.models import GroupOffsets, ShareGroupOffsets, SharePartitionOffset
from kshare_cli.consumer.records import NO_TIMESTAMP, ConsumedRecord
from kshare_cli.errors import TimedOut
from kshare_cli.render.ages import format_age
from kshare_cli.services.health import (
    GroupHealth,
    HealthReport,
    PartitionHealth,
    Sample,
    Status,
    evaluate,
)
from kshare_cli.services.time_lag import (
    first_unacknowledged_offset,
    health_time_lags,
    record_age_s,
    time_lags,
)
from kshare_cli.state.window import WindowState
from tests.services.test_health import _group, _partition, _run

NOW_MS = 1_767_225_600_000
CREATE_TIME = 1


def record(offset: int, timestamp: int, timestamp_type: int = CREATE_TIME) -> ConsumedRecord:
    return ConsumedRecord("t", 0, offset, None, timestamp_type, timestamp, None, b"v")


def test_the_first_unacknowledged_offset_is_the_start_or_what_the_window_says() -> None:
    waiting = SharePartitionOffset("t", 0, start_offset=4, lag=3, end_offset=9)
    assert first_unacknowledged_offset(waiting) == 4
    assert first_unacknowledged_offset(waiting, first_not_done=6) == 6
    assert first_unacknowledged_offset(waiting, first_not_done=9) is None  # at the log end
    lag_unknown = SharePartitionOffset("t", 0, start_offset=4, lag=None, end_offset=None)
    assert first_unacknowledged_offset(lag_unknown) == 4
    assert first_unacknowledged_offset(SharePartitionOffset("t", 0, 9, lag=0)) is None
    assert first_unacknowledged_offset(SharePartitionOffset("t", 0, None, lag=None)) is None


def test_the_age_is_now_minus_the_timestamp_and_unknown_without_one() -> None:
    assert record_age_s(record(0, NOW_MS - 252_500), NOW_MS) == 252.5
    assert record_age_s(record(0, NOW_MS + 5_000), NOW_MS) == 0.0  # a producer's clock ahead
    assert record_age_s(record(0, -1, NO_TIMESTAMP), NOW_MS) is None


def test_one_fetch_per_waiting_share_partition_and_failures_leave_the_age_unknown() -> None:
    offsets = ShareGroupOffsets(
        (
            GroupOffsets(
                "g",
                (
                    SharePartitionOffset("t", 0, start_offset=2, lag=5, end_offset=7),
                    SharePartitionOffset("t", 1, start_offset=7, lag=0, end_offset=7),
                    SharePartitionOffset("t", 2, start_offset=0, lag=1, end_offset=1),
                    SharePartitionOffset("t", 3, start_offset=3, lag=2, end_offset=5),
                ),
            ),
        )
    )
    fetched: list[tuple[int, int, int]] = []

    def peek(
        config: Mapping[str, object],
        topic: str,
        partition: int,
        offset: int,
        limit: int,
        timeout_s: float,
    ) -> tuple[ConsumedRecord, ...]:
        fetched.append((partition, offset, limit))
        if partition == 2:
            raise TimedOut("leader silent")
        if partition == 3:
            return ()  # deleted past the end
        return (record(offset, NOW_MS - 120_000),)

    ages = time_lags(
        offsets,
        {"bootstrap.servers": "x:9092"},
        5.0,
        first_not_done={("g", "t", 0): 3},
        now_ms=lambda: NOW_MS,
        peek=peek,
    )
    assert sorted(fetched) == [(0, 3, 1), (2, 0, 1), (3, 3, 1)]
    assert ages == {
        ("g", "t", 0): 120.0,
        ("g", "t", 1): None,
        ("g", "t", 2): None,
        ("g", "t", 3): None,
    }


def test_ages_read_in_two_units() -> None:
    assert [format_age(s) for s in (None, 0, 42.9, 60, 252, 3600 + 300, 2 * 86400 + 4 * 3600)] == [
        "-",
        "0s",
        "42s",
        "1m00s",
        "4m12s",
        "1h05m",
        "2d04h",
    ]


def test_health_rows_are_looked_up_at_their_start_offsets() -> None:
    report = HealthReport(
        (
            GroupHealth(
                "g",
                Status.STOP,
                (),
                "Empty",
                0,
                3,
                (
                    PartitionHealth("t", 0, Status.STOP, (), 5, 8, 3),
                    PartitionHealth("t", 1, Status.OK, (), 8, 8, 0),
                ),
            ),
        )
    )
    fetched: list[tuple[int, int]] = []

    def peek(
        config: Mapping[str, object],
        topic: str,
        partition: int,
        offset: int,
        limit: int,
        timeout_s: float,
    ) -> tuple[ConsumedRecord, ...]:
        fetched.append((partition, offset))
        return (record(offset, NOW_MS - 30_000),)

    ages = health_time_lags(report, {}, 5.0, now_ms=lambda: NOW_MS, peek=peek)
    assert fetched == [(0, 5)]
    assert ages == {("g", "t", 0): 30.0, ("g", "t", 1): None}


def test_health_reads_where_the_window_says_the_group_resumes_not_the_trailing_start() -> None:
    acknowledged_head = _partition(
        10, 15, _run(10, 12, WindowState.ACKNOWLEDGED), _run(13, 13, WindowState.AVAILABLE)
    )
    stale_window = _partition(10, 15, _run(4, 6, WindowState.AVAILABLE), partition=1)
    report = HealthReport((evaluate(Sample(_group(acknowledged_head, stale_window), 0.0)),))
    assert [row.resume_offset for row in report.groups[0].partitions] == [13, 10]
    fetched: list[tuple[int, int]] = []

    def peek(
        config: Mapping[str, object],
        topic: str,
        partition: int,
        offset: int,
        limit: int,
        timeout_s: float,
    ) -> tuple[ConsumedRecord, ...]:
        fetched.append((partition, offset))
        return (record(offset, NOW_MS - 1_000),)

    health_time_lags(report, {}, 5.0, now_ms=lambda: NOW_MS, peek=peek)
    # A window behind the described start offset cannot point before it.
    assert sorted(fetched) == [(0, 13), (1, 10)]
