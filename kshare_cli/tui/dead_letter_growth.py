"""Which dead-letter queues grew in the last minute, from the groups screen's own readings.

At 3 a.m. the question is "is anything being dead-lettered right now?", not
how many dead letters a topic has held since it was made. Each refresh of the
groups screen reads the log end offsets of the listed groups' DLQ topics
(``DeadLetterEnds``: no records read), and a topic's growth in the last
``GROWTH_WINDOW_S`` is the sum, over its partitions, of the end offsets'
increases between consecutive readings, taken at the dashboard's clock. So the
figure is what the dashboard saw: one opened 10 s ago counts the growth of
those 10 s, and a DLQ that only holds old records never counts.

A step between two readings counts when it ends inside the window, so a record
it brought may be up to one refresh older than the window, but none is missed;
a step longer than the window (the groups screen was not shown meanwhile: only
the active screen refreshes) counts nothing, as its records may be older.
A topic read as missing counts as empty (a broker that creates DLQ topics makes
one with its first dead letter, and that letter counts); an end offset that
goes back (the topic deleted and made again, records deleted) adds nothing for
that step; a partition not read in one reading is compared with its last
reading. A DLQ topic shared by several groups grew for each of them: the end
offsets do not say whose dead letters they are (the group screen's DLQ line
reads the records and counts by group).

The memory is bounded, in the spirit of ``lag_history``: per topic, the last
end offset of each partition and at most ``MAX_STEPS`` steps of the window;
a topic that no listed group names any more is forgotten.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kshare_cli.services.dashboard import DeadLetterEnds

__all__ = [
    "GROWTH_WINDOW_S",
    "MAX_STEPS",
    "DeadLetterGrowth",
    "not_read_lines",
]

#: "In the last minute".
GROWTH_WINDOW_S: Final = 60.0
#: Growth steps kept per topic: a minute at the fastest refresh (0.5 s), twice over.
MAX_STEPS: Final = 240
#: The most lines the groups screen gives to DLQs it could not read.
NOT_READ_LINES: Final = 3


@dataclass(slots=True)
class _TopicSeries:
    """One DLQ topic's last end offset per partition (and when it was read), and its recent
    growth steps."""

    ends: dict[int, tuple[int, float]] = field(default_factory=dict)
    #: When the topic was last read as missing (its partitions then count from 0).
    missing_at: float | None = None
    #: (reading time, records added since the reading before), only steps that added.
    steps: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=MAX_STEPS))

    def read(self, ends: Mapping[int, int], at: float, window_s: float) -> None:
        """Count what each partition added since its last reading, unless that reading is
        older than the window (the groups screen was not shown meanwhile): what came over
        such a gap may be older than the window, so the reading is a new baseline."""
        added = 0
        missing_at = self.missing_at
        zero_base = None if missing_at is None or at - missing_at > window_s else (0, missing_at)
        last = self.ends
        for partition, end in ends.items():
            before = last.get(partition, zero_base)
            if before is not None and end > before[0] and at - before[1] <= window_s:
                added += end - before[0]
            last[partition] = (end, at)
        if added:
            self.steps.append((at, added))

    def gone(self, at: float) -> None:
        self.ends.clear()
        self.missing_at = at

    def prune(self, cutoff: float) -> None:
        steps = self.steps
        while steps and steps[0][0] <= cutoff:
            steps.popleft()

    def grown(self, cutoff: float) -> int:
        return sum(added for at, added in self.steps if at > cutoff)


class DeadLetterGrowth:
    """The DLQ topics' growth over the last ``window_s``, from readings at the dashboard clock."""

    def __init__(self, window_s: float = GROWTH_WINDOW_S) -> None:
        self.window_s = window_s
        self._series: dict[str, _TopicSeries] = {}
        self._topics: dict[str, str] = {}

    def record(self, reading: DeadLetterEnds, at: float) -> None:
        """Take one reading made at ``at``; a topic it could not read keeps its last ends."""
        self._topics = dict(reading.topics)
        named = set(self._topics.values())
        for forgotten in set(self._series) - named:
            del self._series[forgotten]
        cutoff = at - self.window_s
        for topic in named:
            series = self._series.get(topic)
            if series is None:
                series = self._series[topic] = _TopicSeries()
            if topic in reading.missing:
                series.gone(at)
            elif topic in reading.ends:
                series.read(reading.ends[topic], at, self.window_s)
            series.prune(cutoff)

    def topic_of(self, group_id: str) -> str | None:
        """The group's DLQ topic as the last reading found it."""
        return self._topics.get(group_id)

    def grown(self, group_id: str, now: float) -> int:
        """How many records the group's DLQ topic got in the window ending at ``now``."""
        topic = self._topics.get(group_id)
        series = None if topic is None else self._series.get(topic)
        return 0 if series is None else series.grown(now - self.window_s)

    def marked(self, now: float) -> dict[str, int]:
        """Every group whose DLQ topic grew in the window ending at ``now``, with by how much."""
        grown = {
            topic: count
            for topic, series in self._series.items()
            if (count := series.grown(now - self.window_s))
        }
        return {group: grown[topic] for group, topic in self._topics.items() if topic in grown}


def not_read_lines(reading: DeadLetterEnds, limit: int = NOT_READ_LINES) -> list[str]:
    """What a reading could not read, a line per DLQ topic or group (at most ``limit``)."""
    users: dict[str, list[str]] = {}
    for group, topic in sorted(reading.topics.items()):
        users.setdefault(topic, []).append(group)
    problems = {topic: "the topic does not exist" for topic in reading.missing}
    problems.update(reading.topic_failures)
    lines = [
        f"DLQ not read: {topic} (of {_names(users.get(topic, []))}): {why}"
        for topic, why in sorted(problems.items())
    ]
    lines.extend(
        f"DLQ not read: share group {group}: {why}"
        for group, why in sorted(reading.group_failures.items())
    )
    if len(lines) > limit:
        rest = len(lines) - (limit - 1)
        lines[limit - 1 :] = [f"DLQ not read: {rest} more"]
    return lines


def _names(groups: list[str]) -> str:
    if len(groups) <= 2:
        return ", ".join(groups)
    return f"{groups[0]} and {len(groups) - 1} more groups"
