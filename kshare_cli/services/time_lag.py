"""Time lag: how old the oldest record a share group has not yet acknowledged is.

A lag in records says how much is waiting, not for how long; an operator (and an
alert) wants "the oldest unprocessed record is 4 minutes old". Kafka reports no
such figure for share groups, so kshare reads it: the record where the group
resumes (``InFlightWindow.resume_offset``: the first offset at or above the start
offset that is neither acknowledged nor archived; the stored start offset alone
when the window cannot be read, which trails acknowledgements and so may age a
record already acknowledged) is read with ``consumer.peek`` (a plain consumer,
assign and seek, no group), so nothing is acquired and the group's delivery counts
and lag stay as they were. Its age is now minus its timestamp (CreateTime or
LogAppendTime, as the topic keeps it).

One fetch per share-partition with lag, so commands ask for it explicitly
(``kshare describe --time-lag``, ``kshare health --time-lag``, the exporter's
``--time-lag``). This is the one place that lookup lives, and every front end
starts it where the window says the group resumes: describe reads the windows
for it (``describe_time_lags``), health, the exporter and the dashboard have
them already.

The dashboard asks for the record's timestamp instead of its age
(``oldest_unacknowledged_timestamps``): it ages it with its own clock once a
second, as it does every other age on screen, between lookups.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kshare_cli import diagnostics
from kshare_cli.admin.inflight import GroupInflight
from kshare_cli.admin.models import ShareGroupOffsets, SharePartitionOffset
from kshare_cli.consumer.peek import peek_records
from kshare_cli.consumer.records import NO_TIMESTAMP, ConsumedRecord
from kshare_cli.errors import KshareError
from kshare_cli.services.health import HealthReport
from kshare_cli.state.window import InFlightWindow, resume_offset

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings

__all__ = [
    "TimeLagKey",
    "ages_at",
    "describe_time_lags",
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

    ``first_not_done`` is where an in-flight window says the group resumes
    (``InFlightWindow.resume_offset``: the start offset can trail records already
    acknowledged, so the window, when known, is nearer the truth); the start offset
    without it. Nothing waits when the lag is 0, when the share-partition is not
    initialised, failed, or when that offset is at the log end.
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

    Health reads the in-flight windows, so the lookup starts where each row says the
    group resumes (``PartitionHealth.resume_offset``), not at the start offset that
    trails the acknowledgements.
    """
    firsts: dict[TimeLagKey, int | None] = {}
    for group in report.groups:
        for row in group.partitions:
            firsts[(group.group_id, row.topic, row.partition)] = _first_waiting(
                row.start_offset, row.end_offset, row.lag, row.resume_offset
            )
    return ages_at(firsts, config, timeout_s, now_ms=now_ms, peek=peek)


def group_first_unacknowledged(group: GroupInflight) -> dict[TimeLagKey, int | None]:
    """Where each share-partition of a dashboard's group answer has its oldest record
    not yet acknowledged: where its window says the group resumes (``resume_offset``),
    the start offset without a window; None where nothing waits or the share-partition
    failed."""
    firsts: dict[TimeLagKey, int | None] = {}
    for partition in group.partitions:
        key = (group.group_id, partition.topic, partition.partition)
        start = partition.start_offset
        if partition.error is not None or start is None:
            firsts[key] = None
            continue
        firsts[key] = _first_waiting(
            start, partition.end_offset, partition.lag, resume_offset(partition.window, start)
        )
    return firsts


def describe_time_lags(
    offsets: ShareGroupOffsets,
    settings: ConnectionSettings,
    timeout_s: float,
    *,
    now_ms: Callable[[], int] = _now_ms,
    peek: Peek = peek_records,
) -> dict[TimeLagKey, float | None]:
    """``time_lags`` for ``kshare describe --time-lag``, starting each lookup where the
    share-partition's in-flight window says the group resumes, as health, the exporter
    and the dashboard do, not at the stored start offset, which trails acknowledgements
    (on Kafka 4.2 that said 152 s where the oldest unacknowledged record was 106 s old).

    Only the windows of share-partitions with something waiting are read (the state
    partitions that hold them), within ``timeout_s`` with the peeks. Where a window
    cannot be read (no READ on the state topic, its leader silent, the cluster not
    answering), that age is counted from the stored start offset and a warning on
    stderr says so: it may be the age of a record already acknowledged, too high.
    Blocking (it runs its own event loop for the window read): call it from a command,
    or in a thread from async code.
    """
    started = time.monotonic()
    waiting = {
        (group.group_id, offset.topic, offset.partition): offset
        for group in offsets.succeeded()
        for offset in group.partitions
        if first_unacknowledged_offset(offset) is not None
    }
    resumes: dict[TimeLagKey, int] = {}
    if waiting:
        windows, unread = _read_windows(settings, sorted(waiting), timeout_s)
        for key, offset in waiting.items():
            if key not in unread and offset.start_offset is not None:
                resumes[key] = resume_offset(windows.get(key), offset.start_offset)
        for line in _counted_from_start(unread, len(waiting)):
            diagnostics.warning(line)
    left = max(0.0, timeout_s - (time.monotonic() - started))
    config = settings.confluent_config()
    return time_lags(offsets, config, left, first_not_done=resumes, now_ms=now_ms, peek=peek)


def _read_windows(
    settings: ConnectionSettings, keys: list[TimeLagKey], timeout_s: float
) -> tuple[dict[TimeLagKey, InFlightWindow], dict[TimeLagKey, str]]:
    """The windows of ``keys`` that the state topic holds, and for each key whose window
    is unknown, why (a share-partition the state topic holds nothing for has no window and
    is not unknown: nothing was persisted, so its start offset is where it resumes)."""
    try:
        return asyncio.run(_windows_of(settings, keys, timeout_s))
    except KshareError as failure:
        return {}, dict.fromkeys(keys, str(failure))


async def _windows_of(
    settings: ConnectionSettings, keys: list[TimeLagKey], timeout_s: float
) -> tuple[dict[TimeLagKey, InFlightWindow], dict[TimeLagKey, str]]:
    """``_read_windows`` in one session: a Metadata for the topics' ids (the state topic
    names topics by id), then the state partitions that hold the keys (a placed read)."""
    from kshare_cli.services.session import Session
    from kshare_cli.state.replay import SharePartitionKey
    from kshare_cli.state.tailer import StateTopicUnavailable

    with Session(settings, timeout_s) as session:

        async def read() -> tuple[dict[TimeLagKey, InFlightWindow], dict[TimeLagKey, str]]:
            async with session.admin() as admin:
                metadata = await admin.client.metadata(sorted({topic for _, topic, _ in keys}))
            ids = {
                name: topic.topic_id
                for name, topic in metadata.topics.items()
                if topic.error_code == 0 and topic.topic_id.int != 0
            }
            unread = {
                key: f"topic '{key[1]}' has no id in the metadata"
                for key in keys
                if key[1] not in ids
            }
            placed = {
                SharePartitionKey(group, ids[topic], number): (group, topic, number)
                for group, topic, number in keys
                if topic in ids
            }
            source = session.placed_state({group for group, _, _ in keys})
            try:
                states, silent = await asyncio.to_thread(
                    source.read_placed,
                    list(placed),
                    min(session.state_timeout_s, session.time_left()),
                )
            except StateTopicUnavailable as unavailable:
                return {}, dict.fromkeys(keys, unavailable.reason)
            unread.update((placed[key], reason) for key, reason in silent.items())
            windows = {
                placed[key]: InFlightWindow.from_state(state) for key, state in states.items()
            }
            return windows, unread

        return await session.bounded(read(), "reading the in-flight windows for --time-lag")


def _counted_from_start(unread: Mapping[TimeLagKey, str], waiting: int) -> list[str]:
    """One warning per reason a window is unknown, naming the share-partitions unless it
    is every one the command looked up."""
    by_reason: dict[str, list[TimeLagKey]] = {}
    for key, reason in sorted(unread.items()):
        by_reason.setdefault(reason, []).append(key)
    lines = []
    for reason, keys in by_reason.items():
        which = (
            "time lag (LAG-AGE, lag_seconds)"
            if len(keys) == waiting
            else "time lag of "
            + ", ".join(f"{group}/{topic}:{number}" for group, topic, number in keys)
        )
        lines.append(
            f"{which} counted from the stored start offset, which can trail acknowledged "
            f"records, so an age may be too high: {reason}"
        )
    return lines


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
