"""Ages for people, one format for every table that shows how old something is.

``kshare describe --time-lag`` (LAG-AGE) and ``kshare health`` show the age of the
oldest unacknowledged record; the JSON carries seconds, the tables this. The
dashboard's narrow cells (``tui.humanize.short``) write durations the same way.
"""

from __future__ import annotations

__all__ = ["format_age"]


def format_age(seconds: float | None, *, days_from_hours: int = 24) -> str:
    """``42s``, ``4m12s``, ``3h05m``, ``2d04h``: two units compare rows; ``-`` unknown.

    ``days_from_hours``: the hours from which days are counted (the dashboard writes
    ``47h59m`` before ``2d00h``).
    """
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < days_from_hours:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"
