"""The dashboard at 10,000 share-partitions: state replay rate, and the CPU of one refresh.

Run: ``.venv/bin/python benchmarks/dashboard_refresh.py [--partitions 10000]
[--replay-partitions 1000] [--records-per-partition 300] [--refreshes 10] [--runs 3]
[--obvious-baselines]``.

Why: reading ``__share_group_state`` must keep up with at least 100,000
records a second (a busy cluster's state topic holds millions), and one
refresh of the group screen with 10,000 share-partitions must cost under
100 ms of CPU (median), or the dashboard would eat a core at a 2 s interval
and lag behind its own timer.

How, (a) replay: 1,000 share-partitions (10 topics x 100 partitions) of one
group get a snapshot and then updates that move the start offset forward and
persist acknowledged, available (delivery counts 1-4) and archived batches,
so each ends with a window of about 10 batches; the records are interleaved
as a coordinator writes them and encoded with ``state.records``. Timed, in CPU
time (``time.process_time``, as the refresh below; wall-clock time also counts
whatever else the machine runs, and is printed alongside): ``decode_record``
over every record (the baseline: decoding alone), then ``decode_record`` +
``ShareStateReplayer.apply``; the replay rate and its cost over decoding alone
are printed.

How, (b) refresh: a ``GroupInflight`` of 10,000 share-partitions (windows
from a short replay of the same records) is shown by the real
``DashboardApp`` in a headless terminal of 120x40 (``App.run_test``). The
app's history starts full, as after four minutes open at the default 2 s
refresh: 120 readings per share-partition (``DEFAULT_CAPACITY``), the
state the dashboard spends its life in. Each refresh brings every row a new
end offset and lag (so its END, LAG and LAG TREND cells change) and a new
window for a tenth of them, as a busy group does; the app applies it and
redraws. Each refresh's answer is built just before it is posted, and the
last one dropped, as a fetch does. ``time.process_time`` around that
(message, apply, render) is the refresh's CPU; the median and the maximum
are printed (the maximum is where a full garbage collection of the
process's objects lands).

Baseline in the same run: the same app whose history keeps one frozen
object per reading in a list per series (``ObjectHistory`` below: the
history's previous storage, kept here as the baseline). At 10,000
share-partitions that is 1.2 million objects that every full collection
walks. ``--obvious-baselines`` adds, for scale, a plain Textual
``DataTable`` of the same nine columns (strips from the same
``strip_text``) cleared and refilled with every row each refresh (three
refreshes: seconds each), and rendering the same rows once as a Rich
``Table`` to text.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import statistics
import time
import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from kshare_cli.admin.inflight import (
    GroupInflight,
    GroupsOverview,
    GroupSummary,
    PartitionInflight,
)
from kshare_cli.admin.models import GroupDescription
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.records import (
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    decode_record,
    encode_record,
)
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState, ShareStateReplayer
from kshare_cli.state.window import InFlightWindow
from kshare_cli.tui.lag_history import (
    DEFAULT_CAPACITY,
    DEFAULT_RATE_WINDOW_S,
    Flow,
    HistoryStore,
    LagReading,
    SinceMoved,
    Trend,
    flow,
    is_stalled,
    lag_trend,
)

GROUP = "orders-workers"
TOPICS = 10

# --------------------------------------------------------------------------- (a) replay


def _batches(step: int) -> tuple[StateBatch, ...]:
    """What one write persists: ten offsets, mostly acknowledged, one to redeliver, one archived."""
    first = 10 * step
    return (
        StateBatch(first, first + 5, DeliveryState.ACKNOWLEDGED, 1),
        StateBatch(first + 6, first + 6, DeliveryState.AVAILABLE, step % 4 + 1),
        StateBatch(first + 7, first + 7, DeliveryState.ARCHIVED, 5),
        StateBatch(first + 8, first + 9, DeliveryState.ACKNOWLEDGED, 1),
    )


def share_partitions(count: int) -> list[SharePartitionKey]:
    topic_ids = [uuid.UUID(int=topic + 1) for topic in range(TOPICS)]
    per_topic = max(count // TOPICS, 1)
    return [
        SharePartitionKey(GROUP, topic_ids[index // per_topic % TOPICS], index % per_topic)
        for index in range(count)
    ]


def state_records(keys: Sequence[SharePartitionKey], per_partition: int) -> list[StateRecord]:
    """Snapshot, then updates, interleaved across share-partitions as a coordinator writes them."""
    records = []
    for step in range(per_partition):
        for key in keys:
            if step == 0:
                value: ShareSnapshotValue | ShareUpdateValue = ShareSnapshotValue(
                    0, 1, 0, 0, 0, 1_767_225_600_000, 1_767_225_600_000, ()
                )
                kind = StateRecordKind.SNAPSHOT
            else:
                # The start offset trails the newest write by three: ~12 batches stay in flight.
                value = ShareUpdateValue(0, 0, max(10 * (step - 3), 0), 7 * step, _batches(step))
                kind = StateRecordKind.UPDATE
            records.append(StateRecord(ShareStateKey(kind, *_key_fields(key)), value))
    return records


def _key_fields(key: SharePartitionKey) -> tuple[str, uuid.UUID, int]:
    return key.group_id, key.topic_id, key.partition


def timed(action: Any, runs: int) -> tuple[float, float, float]:
    """Median and minimum CPU time of the runs, and their median wall-clock time."""
    samples = []
    walls = []
    for _ in range(runs):
        started_wall = time.perf_counter()
        started = time.process_time()
        action()
        samples.append(time.process_time() - started)
        walls.append(time.perf_counter() - started_wall)
    return statistics.median(samples), min(samples), statistics.median(walls)


def replay_benchmark(
    keys: Sequence[SharePartitionKey], per_partition: int, runs: int
) -> dict[SharePartitionKey, SharePartitionState]:
    records = state_records(keys, per_partition)
    encoded = [encode_record(record) for record in records]
    count = len(encoded)

    def decode_only() -> None:
        for key, value in encoded:
            decode_record(key, value)

    replayer = ShareStateReplayer()

    def decode_and_replay() -> None:
        nonlocal replayer
        replayer = ShareStateReplayer()
        apply = replayer.apply
        for key, value in encoded:
            apply(decode_record(key, value))

    decode_only()  # warm the key cache, as a tailer that has read a while has it
    decoding, decoding_min, decoding_wall = timed(decode_only, runs)
    replaying, replaying_min, replaying_wall = timed(decode_and_replay, runs)
    states = replayer.states()
    batches = statistics.mean(len(state.state_batches) for state in states.values())
    print(f"(a) state replay: {count:,} records of {len(keys):,} share-partitions")
    print(
        f"    {batches:.1f} state batches per share-partition at the end; "
        f"CPU (process_time), median (min) of {runs}"
    )
    print(
        f"    decode only (baseline)   {decoding * 1000:8.1f} ms ({decoding_min * 1000:.1f})"
        f"   {count / decoding:>11,.0f} records/s"
    )
    print(
        f"    decode + replay          {replaying * 1000:8.1f} ms ({replaying_min * 1000:.1f})"
        f"   {count / replaying:>11,.0f} records/s   target >= 100,000"
    )
    print(f"    decode + replay / decode only   {replaying / decoding:5.2f}x")
    print(
        f"    wall clock, median: decode only {count / decoding_wall:,.0f} records/s, "
        f"decode + replay {count / replaying_wall:,.0f} records/s"
    )
    return states


# --------------------------------------------------------------------------- (b) refresh


def group_model(
    keys: Sequence[SharePartitionKey],
    windows: Sequence[InFlightWindow],
    step: int,
) -> GroupInflight:
    partitions = []
    for index, (key, window) in enumerate(zip(keys, windows, strict=True)):
        end_offset = window.end_offset + 25 + 5 * step + index % 7
        partitions.append(
            PartitionInflight(
                topic=f"orders.events.{index * TOPICS // len(keys)}",
                partition=key.partition,
                topic_id=key.topic_id,
                start_offset=window.start_offset,
                end_offset=end_offset,
                lag=share_partition_lag(
                    end_offset, window.start_offset, window.delivery_complete_count
                ),
                lag_source="broker",
                window=window,
            )
        )
    description = GroupDescription(GROUP, "Stable", None, 3, 3, "simple", ())
    return GroupInflight(GROUP, description, tuple(partitions), None, 5)


@dataclass
class _Source:
    model: GroupInflight

    async def overview(self) -> GroupsOverview:
        model = self.model
        summary = GroupSummary(GROUP, "Stable", 0, len(model.partitions), model.total_lag)
        return GroupsOverview((summary,))

    async def group(self, group_id: str) -> GroupInflight:
        return self.model

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        return ()


class _Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


class ObjectHistory:
    """The baseline: the history's previous storage, one frozen ``LagReading`` per reading.

    The same figures as ``History`` (the screens call the same methods), from
    a list of objects: what every share-partition's series held before the
    readings went into columns of machine numbers.
    """

    __slots__ = ("_capacity", "_first_offset_at", "_moved_at", "_readings", "_recorded")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._readings: list[LagReading] = []
        self._capacity = max(capacity, 2)
        self._first_offset_at: float | None = None
        self._moved_at: float | None = None
        self._recorded: tuple[float, bool] | None = None

    def record(
        self,
        at: float,
        lag: int | None,
        start_offset: int | None = None,
        delivery_complete_count: int | None = None,
        end_offset: int | None = None,
    ) -> None:
        self.add(LagReading.of(at, lag, start_offset, delivery_complete_count, end_offset))

    def add(self, reading: LagReading) -> None:
        readings = self._readings
        if readings and reading.at < readings[-1].at:
            return
        previous = readings[-1] if readings else None
        if previous is not None and reading.at == previous.at:
            readings.pop()
            previous = readings[-1] if readings else None
        if self._first_offset_at is None and reading.start_offset is not None:
            self._first_offset_at = reading.at
        if (
            previous is not None
            and reading.start_offset is not None
            and previous.start_offset is not None
            and reading.start_offset != previous.start_offset
        ):
            self._moved_at = reading.at
        readings.append(reading)
        if len(readings) > self._capacity:
            del readings[0]

    def recorded_move(self, at: float | None, *, exact: bool) -> None:
        self._recorded = None if at is None else (at, exact)

    @property
    def readings(self) -> tuple[LagReading, ...]:
        return tuple(self._readings)

    @property
    def latest(self) -> LagReading | None:
        return self._readings[-1] if self._readings else None

    def recent_lags(self, count: int) -> tuple[int | None, ...]:
        return tuple(reading.lag for reading in self._readings[-count:]) if count > 0 else ()

    def trend(self, window_s: float = DEFAULT_RATE_WINDOW_S) -> Trend | None:
        return lag_trend(self._readings, window_s)

    def flow(self, window_s: float = DEFAULT_RATE_WINDOW_S) -> Flow:
        return flow(self._readings, window_s)

    def unmoved(self, now: float) -> tuple[float, bool] | None:
        exact = [] if self._moved_at is None else [self._moved_at]
        unmoved_since = [] if self._first_offset_at is None else [self._first_offset_at]
        recorded = self._recorded
        if recorded is not None:
            (exact if recorded[1] else unmoved_since).append(recorded[0])
        if exact:
            return (max(now - max(exact), 0.0), False)
        if not unmoved_since:
            return None
        return (max(now - min(unmoved_since), 0.0), True)

    def since_moved(self, now: float) -> SinceMoved | None:
        unmoved = self.unmoved(now)
        return None if unmoved is None else SinceMoved(*unmoved)

    def stalled(self, now: float, stall_after_s: float) -> bool:
        latest = self.latest
        if latest is None or latest.start_offset is None:
            return False
        return is_stalled(latest.lag, self.since_moved(now), stall_after_s)


class ObjectHistoryStore(HistoryStore):
    """A ``HistoryStore`` of ``ObjectHistory`` series: the baseline's history."""

    def series(self, key: Hashable) -> Any:
        found = self._series.get(key)
        if found is None:
            found = self._series[key] = ObjectHistory(self._capacity)  # type: ignore[assignment]
        return found


class Answers:
    """The group's answer at each refresh, built when asked, as a fetch builds it.

    Every row gets a new end offset and lag at each step; a tenth of the windows
    are one write later (their start offset and batches moved on).
    """

    def __init__(
        self,
        keys: Sequence[SharePartitionKey],
        windows: Sequence[InFlightWindow],
        later: Sequence[InFlightWindow],
    ) -> None:
        self.keys = keys
        self.windows = windows
        self.later = later

    def __call__(self, step: int) -> GroupInflight:
        windows, later = self.windows, self.later
        current = [
            later[index] if (index + step) % 10 == 0 and step else windows[index]
            for index in range(len(self.keys))
        ]
        return group_model(self.keys, current, step)


class FullCollections:
    """The CPU of each full garbage collection (generation 2) that runs while ``counting``."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.counting = False
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.process_time()
        elif self.counting:
            self.cpu.append(time.process_time() - self._started)

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self)


async def _refreshes(
    answers: Answers, refreshes: int, history: HistoryStore
) -> tuple[list[float], list[float]]:
    """The CPU of each refresh of the group screen, its history full before the first,
    and of each full garbage collection that ran in them."""
    from kshare_cli.tui.app import DashboardApp
    from kshare_cli.tui.group_screen import GroupScreen
    from kshare_cli.tui.live_screen import LiveScreen
    from kshare_cli.tui.widgets import RowsView

    clock = _Clock()
    filled = DEFAULT_CAPACITY
    first = answers(filled)
    source = _Source(first)
    # A long interval: only the refreshes this benchmark sends happen.
    app = DashboardApp(source, group=GROUP, refresh_s=3600.0, clock=clock, history=history)
    for step in range(filled):
        app.record_group(answers(step), clock.now - 2.0 * (filled - step))
    cpu: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        while screen.data is None:
            await pilot.pause(0.01)
        await pilot.pause()
        with FullCollections() as collections:
            for step in range(filled + 1, filled + 1 + refreshes):
                model = answers(step)
                clock.now += 2.0
                collections.counting = True
                started = time.process_time()
                screen.post_message(LiveScreen.Fetched(model, clock.now))
                while screen.data is not model:
                    await pilot.pause(0)
                await pilot.pause()  # the redraw
                cpu.append(time.process_time() - started)
                collections.counting = False
                del model
        assert screen.query_one("#partitions", RowsView).row_count == len(first.partitions)
    return cpu, collections.cpu


def _cells(partition: PartitionInflight, width: int) -> list[Any]:
    from kshare_cli.render.inflight import strip_text

    window = partition.window
    assert window is not None
    return [
        partition.topic,
        str(partition.partition),
        str(partition.start_offset),
        str(partition.end_offset),
        str(partition.lag),
        "",
        strip_text(window.cells(width, partition.end_offset), 5),
        str(window.archived),
        "",
    ]


async def _datatable_rebuilds(models: Sequence[GroupInflight]) -> list[float]:
    """The baseline: a plain DataTable of the same columns, cleared and refilled each refresh."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    class Baseline(App[None]):
        def compose(self) -> ComposeResult:
            yield DataTable()

    app = Baseline()
    cpu: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(DataTable)
        for label, width in (
            ("TOPIC", 16),
            ("PART", 4),
            ("START", 9),
            ("END", 9),
            ("LAG", 8),
            ("LAG TREND", 10),
            ("IN-FLIGHT WINDOW", 22),
            ("ARCHIVED", 8),
            ("SINCE MOVED", 11),
        ):
            table.add_column(label, width=width)
        for model in models:
            started = time.process_time()
            table.clear()
            table.add_rows(_cells(partition, 22) for partition in model.partitions)
            await pilot.pause()
            cpu.append(time.process_time() - started)
    return cpu[1:]


def rich_table_cpu(model: GroupInflight, runs: int) -> float:
    """The same rows as a Rich Table rendered to text: the whole table, every strip."""
    from rich.console import Console
    from rich.table import Table

    from kshare_cli.render.inflight import strip_text

    samples = []
    for _ in range(runs):
        started = time.process_time()
        table = Table("TOPIC", "PART", "START", "END", "LAG", "IN-FLIGHT WINDOW", "ARCHIVED")
        for partition in model.partitions:
            window = partition.window
            assert window is not None
            table.add_row(
                partition.topic,
                str(partition.partition),
                str(partition.start_offset),
                str(partition.end_offset),
                str(partition.lag),
                strip_text(window.cells(22, partition.end_offset), 5),
                str(window.archived),
            )
        console = Console(file=io.StringIO(), width=120, force_terminal=True)
        console.print(table)
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def refresh_benchmark(partitions: int, refreshes: int, runs: int, *, obvious: bool) -> None:
    keys = share_partitions(partitions)
    replayer = ShareStateReplayer()
    for record in state_records(keys, 20):
        replayer.apply(record)
    states = replayer.states()
    windows = [InFlightWindow.from_state(states[key]) for key in keys]
    # The same share-partition one write later: its start offset and batches moved on.
    later = [
        InFlightWindow.from_state(
            states[key].merged_with(
                ShareUpdateValue(0, -1, states[key].start_offset + 10, 3, _batches(400))
            )
        )
        for key in keys
    ]
    del states, replayer
    answers = Answers(keys, windows, later)
    ours: list[float] = []
    objects: list[float] = []
    our_collections: list[float] = []
    object_collections: list[float] = []
    for _ in range(runs):
        cpu, collections = asyncio.run(_refreshes(answers, refreshes, HistoryStore()))
        ours += cpu
        our_collections += collections
        cpu, collections = asyncio.run(_refreshes(answers, refreshes, ObjectHistoryStore()))
        objects += cpu
        object_collections += collections
    refresh = statistics.median(ours)
    baseline = statistics.median(objects)
    print(
        f"(b) group screen refresh, {partitions:,} share-partitions, 120x40 headless, "
        f"history full ({DEFAULT_CAPACITY} readings each); "
        f"CPU (process_time), median (max) of {len(ours)} refreshes"
    )
    print(
        f"    dashboard refresh                               {refresh * 1000:7.1f} ms "
        f"({max(ours) * 1000:.1f})   target < 100 ms"
    )
    print(
        f"    baseline: history of one object per reading     {baseline * 1000:7.1f} ms "
        f"({max(objects) * 1000:.1f})"
    )
    print(f"    baseline / refresh     {baseline / refresh:6.2f}x (medians)")
    for name, collections in (("refresh", our_collections), ("baseline", object_collections)):
        each = f", {statistics.median(collections) * 1000:.1f} ms each" if collections else ""
        print(f"    full garbage collections in the {name}'s refreshes: {len(collections)}{each}")
    if obvious:
        models = [answers(step) for step in range(4)]
        rebuilt = asyncio.run(_datatable_rebuilds(models))
        rich = rich_table_cpu(models[-1], 1)
        datatable = statistics.median(rebuilt)
        print(
            f"    for scale: DataTable cleared and refilled       {datatable * 1000:7.1f} ms "
            f"({max(rebuilt) * 1000:.1f}), {datatable / refresh:.1f}x"
        )
        print(
            f"    for scale: the rows as a Rich Table, to text    {rich * 1000:7.1f} ms, "
            f"{rich / refresh:.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--partitions", type=int, default=10_000, help="(b) share-partitions")
    parser.add_argument("--replay-partitions", type=int, default=1000, help="(a)")
    parser.add_argument("--records-per-partition", type=int, default=300, help="(a)")
    parser.add_argument("--refreshes", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--obvious-baselines",
        action="store_true",
        help="(b) also a DataTable refilled each refresh and a Rich Table (seconds each)",
    )
    parser.add_argument("--skip-replay", action="store_true", help="only (b)")
    args = parser.parse_args()
    if not args.skip_replay:
        keys = share_partitions(args.replay_partitions)
        replay_benchmark(keys, args.records_per_partition, args.runs)
    refresh_benchmark(args.partitions, args.refreshes, args.runs, obvious=args.obvious_baselines)


if __name__ == "__main__":
    main()
