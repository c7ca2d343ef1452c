"""How the dashboard writes numbers, durations and rates: short, and the same on every screen.

A dashboard is read at a glance, so a value is never wider than its column
needs and an unknown value is always the same dash, as Kafka's tools print
it; these functions are pure so the snapshot tests and the unit tests agree.
"""

from __future__ import annotations

import math
from typing import Final

from kshare_cli.render.ages import format_age
from kshare_cli.tui.lag_history import Flow

__all__ = [
    "NEVER",
    "UNKNOWN",
    "duration",
    "empty_in",
    "flow",
    "interval",
    "number",
    "plural",
    "rate",
    "short",
    "since",
    "truncate",
]

UNKNOWN: Final = "-"
#: Time to empty while the lag grows or stands still.
NEVER: Final = "never"


def number(value: int | None) -> str:
    """An offset or a count, thousands separated; "-" when unknown."""
    return UNKNOWN if value is None else f"{value:,}"


def duration(seconds: float | None) -> str:
    """``12 s``, ``4 min 05 s``, ``1 min``, ``3 h 07 min``, ``2 d 4 h``; ``∞``; "-" unknown."""
    if seconds is None or math.isnan(seconds):
        return UNKNOWN
    if math.isinf(seconds):
        return "∞"
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole} s"
    minutes, second = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {second:02d} s" if second else f"{minutes} min"
    hours, minute = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minute:02d} min" if minute else f"{hours} h"
    days, hour = divmod(hours, 24)
    return f"{days} d {hour} h" if hour else f"{days} d"


def short(seconds: float | None) -> str:
    """A duration for a narrow cell: ``45s``, ``1m30s``, ``2h05m``, ``3d04h``; ``∞``; "-"."""
    if seconds is None or math.isnan(seconds):
        return UNKNOWN
    if math.isinf(seconds):
        return "∞"
    return format_age(max(seconds, 0.0), days_from_hours=48)


def interval(seconds: float) -> str:
    """A refresh interval as the user set it: ``0.5 s``, ``2 s``, ``1 min 30 s``."""
    return f"{seconds:g} s" if seconds < 60 else duration(seconds)


def since(seconds: float | None, *, lower_bound: bool = False, compact: bool = False) -> str:
    """A duration that may only be a lower bound (``≥12 s``; compact: ``≥12s``)."""
    text = short(seconds) if compact else duration(seconds)
    return f"≥{text}" if lower_bound and text != UNKNOWN else text


def plural(count: int, noun: str) -> str:
    """``1 member``, ``2 members``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def rate(per_second: float | None) -> str:
    """Records per second: ``0/s``, ``3.4/s``, ``1,250/s``, ``-4.0/s``; "-" when unknown."""
    if per_second is None:
        return UNKNOWN
    size = abs(per_second)
    text = f"{size:.1f}" if size < 10 else f"{round(size):,}"
    if text == "0.0":
        return "0/s"
    return f"-{text}/s" if per_second < 0 else f"{text}/s"


def empty_in(seconds: float | None, *, compact: bool = False) -> str:
    """A time to empty: a duration, ``never`` while the lag does not shrink, "-" unknown."""
    if seconds is not None and math.isinf(seconds):
        return NEVER
    return short(seconds) if compact else duration(seconds)


def flow(figures: Flow) -> str:
    """The flow line of the group and share-partition screens, the help's words for each figure.

    While the lag does not shrink, "never" says by how much it grows, so the
    reader sees why.
    """
    net = figures.net_drain_per_s
    empty = empty_in(figures.time_to_empty)
    if empty == NEVER and net is not None:
        growth = rate(-net) if net < 0 else rate(0)
        empty += " (lag not shrinking)" if growth == rate(0) else f" (lag grows {growth})"
    return " · ".join(
        (
            f"consumed {rate(figures.consumed_per_s)}",
            f"arriving {rate(figures.arriving_per_s)}",
            f"net drain {rate(net)}",
            f"empty in {empty}",
        )
    )


def truncate(text: str, width: int) -> str:
    """At most ``width`` characters, an ellipsis marking the cut."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"
