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
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from kshare_cli.admin.models import ShareGroupOffsets, SharePartitionOffset
from kshare_cli.consumer.peek import peek_records
from kshare_cli.consumer.records import NO_TIMESTAMP, ConsumedRecord
from kshare_cli.errors import KshareError

__all__ = [
    "TimeLagKey",
    "first_unacknowledged_offset",
    "record_age_s",
    "time_lags",
]

#: (group id, topic, partition): a share-partition of a group.
TimeLagKey = tuple[str, str, int]

#: Lookups run side by side (each is one blocking consumer), at most this many at once.
_PARALLEL: Final = 8

#: A peek that reads one record: the function ``time_lags`` calls (tests replace it).
Peek = Callable[[Mapping[str, object], str, int, int, int, float], tuple[ConsumedRecord, ...]]


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
    if offset.error is not None or offset.start_offset is None or offset.lag == 0:
        return None
    first = offset.start_offset if first_not_done is None else first_not_done
    if offset.end_offset is not None and first >= offset.end_offset:
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
    now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
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
    ages: dict[TimeLagKey, float | None] = {}
    lookups: list[_Lookup] = []
    for group in offsets.succeeded():
        for offset in group.partitions:
            key = (group.group_id, offset.topic, offset.partition)
            ages[key] = None
            first = first_unacknowledged_offset(offset, (first_not_done or {}).get(key))
            if first is not None:
                lookups.append(_Lookup(key, first))
    if not lookups:
        return ages
    deadline = time.monotonic() + timeout_s

    def read(lookup: _Lookup) -> tuple[TimeLagKey, float | None]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return lookup.key, None
        _, topic, partition = lookup.key
        try:
            records = peek(config, topic, partition, lookup.offset, 1, remaining)
        except KshareError:
            # Unknown, not an error of the command: the row shows "-" / null.
            return lookup.key, None
        if not records:
            return lookup.key, None
        return lookup.key, record_age_s(records[0], now_ms())

    with ThreadPoolExecutor(max_workers=min(_PARALLEL, len(lookups))) as pool:
        ages.update(pool.map(read, lookups))
    return ages
