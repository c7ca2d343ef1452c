"""The options ``kshare health`` and ``kshare exporter`` share: ``services/health.py``'s thresholds.

Both commands judge groups by the same rules, so they take the same thresholds:
each is declared once here (its flag, its value and metavar, the check made
before connecting). Each command keeps its own help sentence (health judges one
reading, the exporter every refresh), which the man pages print. ``--stall-after``
is the dashboard's and the exporter's: the same stall rule, the same default.

Imported to build ``--help``: nothing heavy.
"""

from __future__ import annotations

from typing import Any, Final

import typer

from kshare_cli.cli import durations
from kshare_cli.errors import UsageError

__all__ = [
    "DEFAULT_STALL_AFTER",
    "archived_above",
    "check_dlq_rate",
    "check_thresholds",
    "dlq_rate_above",
    "lag_above",
    "stall_after",
    "time_lag",
]

#: ``services.health.DEFAULT_STALL_AFTER_S`` as ``--stall-after`` shows it: help may not
#: import the services (tests/cli/test_threshold_options.py holds the two equal).
DEFAULT_STALL_AFTER: Final = "60s"


def lag_above(help_text: str) -> Any:
    """``--lag-above N``: WARN for a share-partition whose lag is above N (off: None)."""
    return typer.Option("--lag-above", metavar="N", help=help_text, show_default=False)


def archived_above(help_text: str) -> Any:
    """``--archived-above N``: WARN for more than N archived records in the window."""
    return typer.Option("--archived-above", metavar="N", help=help_text, show_default=False)


def dlq_rate_above(help_text: str) -> Any:
    """``--dlq-rate-above N``: WARN for a group whose dead-letter queue (Kafka 4.4) grew
    faster than N records a second (a flood from a poison deploy)."""
    return typer.Option("--dlq-rate-above", metavar="N", help=help_text, show_default=False)


def check_dlq_rate(dlq_rate_above: float | None) -> None:
    """A rate is 0 or more records/s (exit 2 before connecting); NaN is refused too."""
    if dlq_rate_above is not None and not dlq_rate_above >= 0:
        raise UsageError(f"--dlq-rate-above must be 0 or more records/s, not {dlq_rate_above:g}")


def time_lag(help_text: str) -> Any:
    """``--time-lag``: read each lagging share-partition's oldest unacknowledged record."""
    return typer.Option("--time-lag", help=help_text)


def stall_after(help_text: str) -> Any:
    """``--stall-after DURATION``: lag above 0 and a start offset unmoved this long: a stall."""
    return typer.Option(
        "--stall-after", metavar="DURATION", help=durations.duration_help(help_text, bare="s")
    )


def check_thresholds(lag_above: int | None, archived_above: int | None) -> None:
    """A count threshold is 0 or more (exit 2 before connecting)."""
    for name, value in (("--lag-above", lag_above), ("--archived-above", archived_above)):
        if value is not None and value < 0:
            raise UsageError(f"{name} must be 0 or more, not {value}")
