"""Time lag: how old the oldest record a share group has not yet acknowledged is.

A lag in records says how much is waiting, not for how long; an operator (and an
alert) wants "the oldest unprocessed record is 4 minutes old". Kafka reports no
such figure for share groups, so kshare reads it: the record at the first offset
not yet acknowledged (the share-partition start offset, or the first offset an
in-flight window says is not done, when the caller knows the window) is read
with ``consumer.peek`` (a plain consumer, assign and seek, no group), so nothing
is acquired and the group's delivery counts and lag stay as they were. Its age is
now minus its timestamp (CreateTime or LogAppendTime, as the topic keeps it).

One fetch per share-partition with lag, so commands ask for it explicitly
(``kshare describe --time-lag``). This is the one place that lookup lives.

The dashboard asks for the record's timestamp instead of its age
(``oldest_unacknowledged_timestamps``): it ages it with its own clock once a
second, as it does every other age on screen, between lookups.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from kshare_cli.admin.inflight import GroupInflight
from kshare_cli.admin.models import ShareGroupOffsets, SharePartitionOffset
from kshare_cli.consumer.peek import peek_records
from kshare_cli.consumer.records import NO_TIMESTAMP, ConsumedRecord
from kshare_cli.errors import KshareError
from kshare_cli.services.health import HealthReport

__all__ = [
    "TimeLagKey",
    "ages_at",
    "first_unacknowledged_offset",
    "group_first_unacknowledged",
    "health_time_lags",
    "oldest_unacknowledged_timestamps",
    "record_age_s",
    "time_lags",
]

#: (group id, topic, partition): a share-partition of a group.
TimeLagKey = tuple[str, str, int]

#: Lookups run side by side (each is one blocking consumer), at most this many at once.
_PARALLEL: Final = 8

#: A peek that reads one record: the function ``time_lags`` calls (tests replace it).
Peek = Callable[[Mapping[str, object], str, int, int, int, float], tuple[ConsumedRecord, ...]]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class _Lookup:
    key: TimeLagKey
    offset: int


def first_unacknowledged_offset(
    offset: SharePartitionOffset, first_not_done: int | None = None
) -> int | None:
    """Where the oldest record not yet acknowledged sits; None when nothing waits.

    ``first_not_done`` is what an in-flight window says (the start offset can trail
    records already acknowledged, so the window, when known, is nearer the truth).
    Nothing waits when the lag is 0, when the share-partition is not initialised,
    failed, or when that offset is at the log end.
    """
    if offset.error is not None:
        return None
    return _first_waiting(offset.start_offset, offset.end_offset, offset.lag, first_not_done)


def _first_waiting(
    start_offset: int | None, end_offset: int | None, lag: int | None, first_not_done: int | None
) -> int | None:
    if start_offset is None or lag == 0:
        return None
    first = start_offset if first_not_done is None else first_not_done
    if end_offset is not None and first >= end_offset:
        return None
    return first


def record_age_s(record: ConsumedRecord, now_ms: int) -> float | None:
    """``now_ms`` minus the record's timestamp in seconds (0 if ahead); None without one."""
    if record.timestamp_type == NO_TIMESTAMP or record.timestamp < 0:
        return None
    return max(0, now_ms - record.timestamp) / 1000.0


def time_lags(
    offsets: ShareGroupOffsets,
    config: Mapping[str, object],
    timeout_s: float,
    *,
    first_not_done: Mapping[TimeLagKey, int] | None = None,
    now_ms: Callable[[], int] = _now_ms,
    peek: Peek = peek_records,
) -> dict[TimeLagKey, float | None]:
    """The age in seconds of each share-partition's oldest unacknowledged record.

    Every share-partition of every described group has a key; its value is None when
    nothing waits (lag 0) or the record cannot be read (deleted by retention past
    the end, no timestamp, the leader down, the deadline passed): a time lag is an
    extra, so a failed read leaves it unknown rather than failing the command.
    ``config`` is a librdkafka configuration (``ConnectionSettings.confluent_config()``);
    blocking, run it in a thread from async code.
    """
    firsts: dict[TimeLagKey, int | None] = {}
    for group in offsets.succeeded():
        for offset in group.partitions:
            key = (group.group_id, offset.topic, offset.partition)
            firsts[key] = first_unacknowledged_offset(offset, (first_not_done or {}).get(key))
    return ages_at(firsts, config, timeout_s, now_ms=now_ms, peek=peek)


def health_time_lags(
    report: HealthReport,
    config: Mapping[str, object],
    timeout_s: float,
    *,
    now_ms: Callable[[], int] = _now_ms,
    peek: Peek = peek_records,
) -> dict[TimeLagKey, float | None]:
    """``time_lags`` for the share-partitions ``kshare health`` evaluated.

    Health reads the in-flight windows, so the lookup starts at the first offset
    neither acknowledged nor archived, not at the start offset that trails them.
    """
    firsts: dict[TimeLagKey, int | None] = {}
    for group in report.groups:
        for row in group.partitions:
            # A window read before the start offset last moved would point behind it.
            first_not_done = (
                None
                if row.first_not_done is None or row.start_offset is None
                else max(row.first_not_done, row.start_offset)
            )
            firsts[(group.group_id, row.topic, row.partition)] = _first_waiting(
                row.start_offset, row.end_offset, row.lag, first_not_done
            )
    return ages_at(firsts, config, timeout_s, now_ms=now_ms, peek=peek)


def group_first_unacknowledged(group: GroupInflight) -> dict[TimeLagKey, int | None]:
    """Where each share-partition of a dashboard's group answer has its oldest record
    not yet acknowledged: the window's first offset neither acknowledged nor archived
    when the window was read (never behind the start offset, as ``health_time_lags``),
    else the start offset; None where nothing waits or the share-partition failed."""
    firsts: dict[TimeLagKey, int | None] = {}
    for partition in group.partitions:
        key = (group.group_id, partition.topic, partition.partition)
        window = partition.window
        if partition.error is not None:
            firsts[key] = None
            continue
        first_not_done = (
            None
            if window is None or window.start_offset < 0 or partition.start_offset is None
            else max(window.first_not_done(), partition.start_offset)
        )
        firsts[key] = _first_waiting(
            partition.start_offset, partition.end_offset, partition.lag, first_not_done
        )
    return firsts


def oldest_unacknowledged_timestamps(
    group: GroupInflight,
    config: Mapping[str, object],
    timeout_s: float,
    *,
    peek: Peek = peek_records,
) -> dict[TimeLagKey, int | None]:
    """The timestamp (epoch milliseconds) of each share-partition's oldest unacknowledged
    record, for the dashboard to age with its own clock; None where nothing waits or the
    record could not be read within ``timeout_s``. Blocking: run it in a thread."""
    records = _records_at(group_first_unacknowledged(group), config, timeout_s, peek)
    return {
        key: None
        if record is None or record.timestamp_type == NO_TIMESTAMP or record.timestamp < 0
        else record.timestamp
        for key, record in records.items()
    }


def ages_at(
    firsts: Mapping[TimeLagKey, int | None],
    config: Mapping[str, object],
    timeout_s: float,
    *,
    now_ms: Callable[[], int] = _now_ms,
    peek: Peek = peek_records,
) -> dict[TimeLagKey, float | None]:
    """The age of the record at each share-partition's offset; None where it is None or unread."""
    records = _records_at(firsts, config, timeout_s, peek)
    return {
        key: None if record is None else record_age_s(record, now_ms())
        for key, record in records.items()
    }


def _records_at(
    firsts: Mapping[TimeLagKey, int | None],
    config: Mapping[str, object],
    timeout_s: float,
    peek: Peek,
) -> dict[TimeLagKey, ConsumedRecord | None]:
    """The record at each share-partition's offset; None where it is None or unread."""
    found: dict[TimeLagKey, ConsumedRecord | None] = dict.fromkeys(firsts)
    lookups = [_Lookup(key, first) for key, first in firsts.items() if first is not None]
    if not lookups:
        return found
    deadline = time.monotonic() + timeout_s

    def read(lookup: _Lookup) -> tuple[TimeLagKey, ConsumedRecord | None]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return lookup.key, None
        _, topic, partition = lookup.key
        try:
            records = peek(config, topic, partition, lookup.offset, 1, remaining)
        except KshareError:
            # Unknown, not an error of the command: the row shows "-" / null.
            return lookup.key, None
        return lookup.key, records[0] if records else None

    with ThreadPoolExecutor(max_workers=min(_PARALLEL, len(lookups))) as pool:
        found.update(pool.map(read, lookups))
    return found
