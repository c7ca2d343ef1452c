"""What the dashboard remembers between refreshes, and the arithmetic on it.

A single describe says where a share-partition is; an on-call engineer needs
where it is going: is the lag growing, how fast are records being completed,
when will the backlog be gone, and has the start offset stopped moving (a
poison record, a stuck consumer). Kafka answers none of that, so the
dashboard keeps a short history of readings per share-partition and per group
and derives it here, without I/O and without Textual, so every figure on
screen is a unit-tested function of the readings.

Definitions (the help screen shows them too), one word each, the same on
every screen:

* completed position = start offset + delivery-complete count: every record
  below the start offset is done, and the delivery-complete count (KIP-1226)
  counts the done records at or above it. It only grows, except after an
  offset reset.
* consumed/s = growth of the completed position per second over the last
  ``window_s`` seconds; a reset (the position going back) is not counted as
  negative progress. When the delivery-complete count is unknown on either
  side of a step (-1 after a reset, or no state), only the start offset's
  growth counts for that step. Unknown without start offsets (a group total
  from a listing).
* arriving/s = growth of the log end offset per second over the same window.
* net drain/s = the decrease of the lag per second over the window, -(d lag /
  dt): consumed/s - arriving/s, since lag = log end offset - completed
  position. Negative while the lag grows. Known from the lag alone, so the
  groups screen (which has no offsets) shows it too.
* time to empty = lag / net drain while the net drain is above 0; 0 without
  lag; infinite ("never") while the lag grows or stands still: dividing by the
  consumption rate alone would promise an end to a queue that fills faster
  than it drains.
* since moved = time since the start offset last changed: when
  ``__share_group_state``'s records say (``state.replay.StartOffsetMove``), or
  when the dashboard saw it change, whichever is later. A lower bound ("≥")
  only when neither knows a change: the records were pruned by Kafka since,
  and the dashboard has seen none; it then counts from the earliest time the
  start offset is known to have stood where it stands.
* stalled = lag above zero and the start offset unmoved for ``stall_after_s``.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from kshare_cli.services import health

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_RATE_WINDOW_S",
    "Flow",
    "History",
    "HistoryStore",
    "LagReading",
    "SinceMoved",
    "Trend",
    "arrival_rate",
    "completed_key",
    "consumption_rate",
    "flow",
    "group_key",
    "is_stalled",
    "lag_trend",
    "net_drain_rate",
    "partition_key",
    "sparkline",
    "time_to_empty",
]

#: Readings kept per series: two minutes at the default 2 s refresh, and the widest sparkline.
DEFAULT_CAPACITY: Final = 120
#: Rates and trends look this far back: long enough to smooth one slow refresh.
DEFAULT_RATE_WINDOW_S: Final = 60.0

_SPARK_BLOCKS: Final = "▁▂▃▄▅▆▇█"
#: A flat series above zero: the middle of the blocks.
_SPARK_FLAT: Final = _SPARK_BLOCKS[3]
#: An unknown figure in a ``History``'s columns (no offset, lag or count reaches it).
_UNKNOWN: Final = -(2**63)


@dataclass(frozen=True, slots=True)
class LagReading:
    """One observation of a share-partition (or a group's totals) at ``at`` (clock seconds).

    Unknown values are None; a delivery-complete count of -1 (Kafka's "unknown")
    is stored as None too.
    """

    at: float
    lag: int | None
    start_offset: int | None = None
    delivery_complete_count: int | None = None
    end_offset: int | None = None

    @classmethod
    def of(
        cls,
        at: float,
        lag: int | None,
        start_offset: int | None = None,
        delivery_complete_count: int | None = None,
        end_offset: int | None = None,
    ) -> LagReading:
        """A reading with Kafka's -1 sentinels turned into None."""
        return cls(
            at,
            lag,
            _known(start_offset),
            _known(delivery_complete_count),
            _known(end_offset),
        )


def _known(value: int | None) -> int | None:
    return None if value is None or value < 0 else value


class Trend(StrEnum):
    """Where the lag went over the trend window; the value is the arrow drawn."""

    UP = "↑"
    DOWN = "↓"
    FLAT = "→"


@dataclass(frozen=True, slots=True)
class SinceMoved:
    """How long the start offset has stood still; ``lower_bound`` until a move was seen."""

    seconds: float
    lower_bound: bool


def _recent(readings: Sequence[LagReading], window_s: float) -> Sequence[LagReading]:
    if not readings:
        return readings
    horizon = readings[-1].at - window_s
    first = len(readings) - 1
    while first > 0 and readings[first - 1].at >= horizon:
        first -= 1
    return readings[first:]


def lag_trend(
    readings: Sequence[LagReading], window_s: float = DEFAULT_RATE_WINDOW_S
) -> Trend | None:
    """Lag now against the oldest known lag in the window; None with fewer than two lags."""
    lags = [reading.lag for reading in _recent(readings, window_s) if reading.lag is not None]
    if len(lags) < 2:
        return None
    if lags[-1] > lags[0]:
        return Trend.UP
    if lags[-1] < lags[0]:
        return Trend.DOWN
    return Trend.FLAT


def _completed(reading: LagReading, other: LagReading) -> int | None:
    """The completed position, counting the delivery-complete count only if ``other`` has one."""
    if reading.start_offset is None:
        return None
    if reading.delivery_complete_count is None or other.delivery_complete_count is None:
        return reading.start_offset
    return reading.start_offset + reading.delivery_complete_count


def _growth_rate(
    readings: Sequence[LagReading],
    window_s: float,
    position: Callable[[LagReading, LagReading], int | None],
) -> float | None:
    """Growth of ``position(reading, neighbour)`` per second over the steps where it is known.

    A step backwards (an offset reset, a recreated topic) counts as no growth,
    not as negative growth. None with no known step or no time between them.
    """
    recent = _recent(readings, window_s)
    grown = 0
    span = 0.0
    known = False
    for older, newer in zip(recent, recent[1:], strict=False):
        before, after = position(older, newer), position(newer, older)
        if before is None or after is None:
            continue
        known = True
        grown += max(after - before, 0)
        span += newer.at - older.at
    if not known or span <= 0:
        return None
    return grown / span


def consumption_rate(
    readings: Sequence[LagReading], window_s: float = DEFAULT_RATE_WINDOW_S
) -> float | None:
    """consumed/s: records completed per second over the window (see the module docstring)."""
    return _growth_rate(readings, window_s, _completed)


def arrival_rate(
    readings: Sequence[LagReading], window_s: float = DEFAULT_RATE_WINDOW_S
) -> float | None:
    """arriving/s: records appended to the share-partitions per second (log end offset growth)."""
    return _growth_rate(readings, window_s, lambda reading, _: reading.end_offset)


def net_drain_rate(
    readings: Sequence[LagReading], window_s: float = DEFAULT_RATE_WINDOW_S
) -> float | None:
    """net drain/s: how fast the lag shrinks, -(d lag / dt); negative while it grows.

    From the oldest and newest known lag in the window; None with fewer than
    two or no time between them.
    """
    known = [reading for reading in _recent(readings, window_s) if reading.lag is not None]
    if len(known) < 2:
        return None
    first, last = known[0], known[-1]
    span = last.at - first.at
    if span <= 0:
        return None
    assert first.lag is not None and last.lag is not None
    return (first.lag - last.lag) / span


def time_to_empty(lag: int | None, net_drain: float | None) -> float | None:
    """Seconds until the lag is gone at this net drain rate.

    0 without lag; infinite ("never") while the lag grows or stands still;
    None when the lag or the rate is unknown.
    """
    if lag is None:
        return None
    if lag <= 0:
        return 0.0
    if net_drain is None:
        return None
    if net_drain <= 0:
        return math.inf
    return lag / net_drain


@dataclass(frozen=True, slots=True)
class Flow:
    """Where a backlog is going: the figures every screen shows, computed one way.

    ``consumed_per_s`` and ``arriving_per_s`` are None where the series has no
    offsets (a group total from the listing); ``net_drain_per_s`` needs only lags.
    """

    lag: int | None
    consumed_per_s: float | None
    arriving_per_s: float | None
    net_drain_per_s: float | None

    @property
    def time_to_empty(self) -> float | None:
        return time_to_empty(self.lag, self.net_drain_per_s)


def flow(readings: Sequence[LagReading], window_s: float = DEFAULT_RATE_WINDOW_S) -> Flow:
    """The flow of a series: its latest lag and its rates over the window."""
    return Flow(
        lag=readings[-1].lag if readings else None,
        consumed_per_s=consumption_rate(readings, window_s),
        arriving_per_s=arrival_rate(readings, window_s),
        net_drain_per_s=net_drain_rate(readings, window_s),
    )


def is_stalled(lag: int | None, since_moved: SinceMoved | None, stall_after_s: float) -> bool:
    """The dashboard's stall verdict, by the rule ``kshare health`` and the exporter use.

    One rule (``services.health.is_stalled``), so a share-partition the dashboard
    marks stalled is the one an alert names; this only unwraps ``since_moved``.
    """
    unmoved_s = since_moved.seconds if since_moved is not None else None
    return health.is_stalled(lag, unmoved_s, stall_after_s)


def sparkline(values: Sequence[int | None], width: int) -> str:
    """The last ``width`` values as block characters, scaled from 0 to their maximum.

    Unknown values are blanks; an all-zero series is a flat bottom line, so
    "no lag" and "no data" look different. A flat series above zero (every
    known value the same, a single one included) is a flat middle line: scaled
    to its own maximum it would fill every cell to the top, a wall that reads as
    a backlog at its peak.
    """
    if width <= 0:
        return ""
    shown = list(values[-width:])
    known = [value for value in shown if value is not None]
    top = max(known, default=0)
    flat = _SPARK_BLOCKS[0] if top <= 0 else _SPARK_FLAT if min(known) == top else None
    last = len(_SPARK_BLOCKS) - 1
    characters = []
    for value in shown:
        if value is None:
            characters.append(" ")
        elif flat is not None:
            characters.append(flat)
        else:
            characters.append(_SPARK_BLOCKS[min(last, round(max(value, 0) / top * last))])
    return "".join(characters)


def group_key(group_id: str) -> tuple[str, str]:
    """The key of a group's totals in a ``HistoryStore``."""
    return ("g", group_id)


def completed_key(group_id: str) -> tuple[str, str]:
    """The key of a group's summed share-partitions (start offsets, delivery-complete counts)."""
    return ("c", group_id)


def partition_key(group_id: str, topic: str, partition: int) -> tuple[str, str, str, int]:
    """The key of a share-partition's series in a ``HistoryStore``."""
    return ("p", group_id, topic, partition)


class History:
    """The bounded series of readings of one share-partition or group.

    Readings arrive in clock order; one taken at the same instant as the
    previous replaces it (a fixed clock, or two refreshes in one tick), so
    spans are never zero. The instant the start offset last changed is kept
    apart from the readings, so it survives their rotation.

    The readings are kept as columns of machine numbers (``array``), one per
    field, not as objects: at 10,000 share-partitions and 120 readings each, a
    million small objects made every full garbage collection of the dashboard's
    process walk them, and a refresh paid for it. ``LagReading`` objects are
    built only for what a figure reads (the rate window, ``readings``). The
    columns grow by a quarter of the capacity before the oldest readings are
    cut, so a refresh pays one cut every few dozen readings, not one per reading.
    """

    __slots__ = (
        "_at",
        "_capacity",
        "_complete",
        "_end",
        "_first_offset_at",
        "_known_lags",
        "_lag",
        "_limit",
        "_moved_at",
        "_recorded_at",
        "_recorded_exact",
        "_start",
    )

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = max(capacity, 2)
        self._limit = self._capacity + max(self._capacity // 4, 1)
        self._at = array("d")
        self._lag = array("q")
        self._start = array("q")
        self._complete = array("q")
        self._end = array("q")
        self._known_lags = 0
        self._first_offset_at: float | None = None
        self._moved_at: float | None = None
        self._recorded_at: float | None = None
        self._recorded_exact = False

    def add(self, reading: LagReading) -> None:
        self.record(
            reading.at,
            reading.lag,
            reading.start_offset,
            reading.delivery_complete_count,
            reading.end_offset,
        )

    def record(
        self,
        at: float,
        lag: int | None,
        start_offset: int | None = None,
        delivery_complete_count: int | None = None,
        end_offset: int | None = None,
    ) -> None:
        """Add a reading from its figures; Kafka's -1 sentinels (any offset below 0) are unknown.

        ``add`` without the ``LagReading``: a refresh of 10,000 share-partitions
        records without building 10,000 objects.
        """
        times = self._at
        if times and at <= times[-1]:
            if at < times[-1]:
                return  # a late answer from an older fetch: the newer one already counts
            self._drop_last()
        starts = self._start
        if start_offset is None or start_offset < 0:
            starts.append(_UNKNOWN)
        else:
            if self._first_offset_at is None:
                self._first_offset_at = at
            if starts and starts[-1] != start_offset and starts[-1] != _UNKNOWN:
                self._moved_at = at
            starts.append(start_offset)
        times.append(at)
        if lag is None:
            self._lag.append(_UNKNOWN)
            self._known_lags = 0
        else:
            self._lag.append(lag)
            self._known_lags += 1
        self._complete.append(
            _UNKNOWN
            if delivery_complete_count is None or delivery_complete_count < 0
            else delivery_complete_count
        )
        self._end.append(_UNKNOWN if end_offset is None or end_offset < 0 else end_offset)
        if len(times) > self._limit:
            cut = len(times) - self._capacity
            for column in self._columns():
                del column[:cut]

    def _columns(self) -> tuple[array[float], array[int], array[int], array[int], array[int]]:
        return self._at, self._lag, self._start, self._complete, self._end

    def _drop_last(self) -> None:
        for column in self._columns():
            del column[-1]
        self._known_lags = 0  # unknown how far the run of known lags reached: none, to be safe

    def recorded_move(self, at: float | None, *, exact: bool) -> None:
        """What the state topic's records say of the start offset's last change: at ``at``
        (clock seconds) if ``exact``, else at ``at`` or earlier (pruned before); None: nothing."""
        self._recorded_at = at
        self._recorded_exact = exact

    def __len__(self) -> int:
        return min(len(self._at), self._capacity)

    def _reading(self, index: int) -> LagReading:
        return LagReading(
            self._at[index],
            _value(self._lag[index]),
            _value(self._start[index]),
            _value(self._complete[index]),
            _value(self._end[index]),
        )

    def _readings(self, first: int) -> tuple[LagReading, ...]:
        """The readings from index ``first`` (of the columns) to the newest."""
        return tuple(self._reading(index) for index in range(first, len(self._at)))

    @property
    def readings(self) -> tuple[LagReading, ...]:
        return self._readings(len(self._at) - len(self))

    @property
    def latest(self) -> LagReading | None:
        return self._reading(-1) if self._at else None

    def lags(self) -> tuple[int | None, ...]:
        return self.recent_lags(len(self))

    def recent_lags(self, count: int) -> tuple[int | None, ...]:
        """The last ``count`` lags (a sparkline's worth, without reading the whole series).

        Every row of the group screen asks on every refresh: when none of them
        is unknown (``_known_lags`` counts the newest known lags in a row), the
        column's tail is the answer as it stands.
        """
        if count <= 0:
            return ()
        if count > self._capacity:
            count = self._capacity
        tail = self._lag[-count:]
        if self._known_lags >= count:
            return tuple(tail)
        return tuple(None if lag == _UNKNOWN else lag for lag in tail)

    def _window(self, window_s: float) -> tuple[LagReading, ...]:
        """The readings a figure over the last ``window_s`` seconds reads (see ``_recent``)."""
        times = self._at
        if not times:
            return ()
        horizon = times[-1] - window_s
        oldest = len(times) - len(self)
        first = len(times) - 1
        while first > oldest and times[first - 1] >= horizon:
            first -= 1
        return self._readings(first)

    def trend(self, window_s: float = DEFAULT_RATE_WINDOW_S) -> Trend | None:
        return lag_trend(self._window(window_s), window_s)

    def flow(self, window_s: float = DEFAULT_RATE_WINDOW_S) -> Flow:
        return flow(self._window(window_s), window_s)

    def since_moved(self, now: float) -> SinceMoved | None:
        """None before the first reading with a start offset and with no recorded move.

        The latest change known exactly (seen here, or recorded) wins; without one,
        a lower bound from the earliest time the start offset is known unmoved.
        """
        unmoved = self.unmoved(now)
        return None if unmoved is None else SinceMoved(*unmoved)

    def unmoved(self, now: float) -> tuple[float, bool] | None:
        """``since_moved`` as (seconds, lower bound): what a row compares and draws."""
        exact = self._moved_at
        unmoved_since = self._first_offset_at
        at = self._recorded_at
        if at is not None:
            if not self._recorded_exact:
                unmoved_since = at if unmoved_since is None or at < unmoved_since else unmoved_since
            elif exact is None or at > exact:
                exact = at
        if exact is not None:
            return (now - exact if now > exact else 0.0, False)
        if unmoved_since is None:
            return None
        return (now - unmoved_since if now > unmoved_since else 0.0, True)

    def stalled(self, now: float, stall_after_s: float) -> bool:
        if not self._at or self._start[-1] == _UNKNOWN:
            return False
        return is_stalled(_value(self._lag[-1]), self.since_moved(now), stall_after_s)


def _value(stored: int) -> int | None:
    return None if stored == _UNKNOWN else stored


class HistoryStore:
    """Every series the dashboard keeps, by key (a group id, or group, topic and partition).

    Series of share-partitions that disappear (offsets deleted, group gone)
    are dropped with ``retain``, so a long session's memory stays bounded by
    what the cluster holds.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._series: dict[Hashable, History] = {}

    def series(self, key: Hashable) -> History:
        found = self._series.get(key)
        if found is None:
            found = self._series[key] = History(self._capacity)
        return found

    def get(self, key: Hashable) -> History | None:
        return self._series.get(key)

    def add(self, key: Hashable, reading: LagReading) -> History:
        history = self.series(key)
        history.add(reading)
        return history

    def retain(self, keys: Iterable[Hashable], *, prefix: tuple[Hashable, ...]) -> None:
        """Forget the series whose (tuple) key starts with ``prefix`` and is not in ``keys``.

        The set difference runs in C: a refresh of 10,000 share-partitions that
        keeps them all compares its keys once, instead of slicing every key.
        """
        size = len(prefix)
        for key in [
            key
            for key in self._series.keys() - set(keys)
            if isinstance(key, tuple) and key[:size] == prefix
        ]:
            del self._series[key]

    def __len__(self) -> int:
        return len(self._series)
