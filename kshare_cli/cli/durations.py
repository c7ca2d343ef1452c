"""Duration options on the command line: one grammar, one help sentence, one warning.

Every option that takes a duration (``--timeout``, ``--timeout-ms``, ``--refresh``,
``--interval``, ``--stall-after``) reads its value here, so they all take
``kshare_cli/timespec.py``'s grammar (``500ms``, ``30s``, ``2m``, ``1h``, ``1d12h``,
ISO-8601 ``PT30S``) and their help says it in the same words.

A bare number keeps the unit its option always had, because scripts use it:

* milliseconds for ``--timeout`` and ``--timeout-ms``, as in Kafka's own
  ``kafka-share-groups.sh`` and ``kafka-console-share-consumer.sh``, which kshare matches
  column for column: Kafka's documented form, so no warning;
* seconds for the options kshare introduced (``--refresh``, ``--interval``,
  ``--stall-after``), with a one-line warning suggesting the unit: next to Kafka's
  options a bare number is easily misread.

A bare number is what ``float()`` (or, for ``--timeout-ms``, ``int()``) accepted before,
and gives exactly the value it gave before; range checks stay with each command, so
the warning is printed only once a value was accepted (:func:`warn_if_bare`).

Imported to build ``--help``: it loads nothing heavy (pendulum only for ISO-8601).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final, Literal

from kshare_cli import diagnostics
from kshare_cli.errors import UsageError
from kshare_cli.timespec import DURATION_EXAMPLES, DURATION_FORMS, parse_exact_duration

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = [
    "BareUnit",
    "duration_help",
    "milliseconds",
    "optional_milliseconds",
    "optional_seconds",
    "seconds",
    "timeout_seconds",
    "warn_if_bare",
]

#: What a bare number means for an option: milliseconds (Kafka's options) or seconds.
BareUnit = Literal["ms", "s"]

_SECONDS_PER: Final[dict[str, float]] = {"ms": 0.001, "s": 1.0}
_BARE_MEANS: Final[dict[str, str]] = {
    "ms": "a bare number is milliseconds, as in Kafka's tools",
    "s": "a bare number is still read as seconds",
}


def duration_help(what: str, *, bare: BareUnit | None = None) -> str:
    """An option's help text followed by the grammar, worded alike for every duration option."""
    if bare is None:
        return f"{what} ({DURATION_EXAMPLES})."
    return f"{what} ({DURATION_EXAMPLES}; {_BARE_MEANS[bare]})."


def seconds(option: str, text: str, *, bare: BareUnit) -> float:
    """The option's value in seconds; a bare number is in the option's own unit.

    A bare number gives the very float it gave before the grammar was unified; a
    duration is exact to the float (``--timeout 0.5ms`` is 0.0005). Raises UsageError
    naming the option and the grammar.
    """
    number = _bare_number(text)
    if number is not None:
        return number * _SECONDS_PER[bare]
    return float(_exact_millis(option, text) / 1000)


def optional_seconds(option: str, text: str | None, *, bare: BareUnit) -> float | None:
    """:func:`seconds` for an option without a default: None when it was not given."""
    return None if text is None else seconds(option, text, bare=bare)


def optional_milliseconds(option: str, text: str | None) -> int | None:
    """:func:`milliseconds` for an option without a default: None when it was not given."""
    return None if text is None else milliseconds(option, text)


def timeout_seconds(text: str) -> float:
    """``--timeout`` in seconds: above zero and finite (a bare number is milliseconds)."""
    value = seconds("--timeout", text, bare="ms")
    if not math.isfinite(value):
        raise UsageError(f"--timeout: invalid duration {text!r}: {DURATION_FORMS}")
    if value <= 0:
        raise UsageError("--timeout must be greater than zero")
    return value


def milliseconds(option: str, text: str) -> int:
    """Whole milliseconds, for Kafka's ``*-ms`` options: a bare integer is milliseconds.

    A duration drops its sub-millisecond part, as Kafka does; a bare number that is not
    whole is refused, as it was when the option took an integer.
    """
    try:
        return int(text)
    except ValueError:
        pass
    if _bare_number(text) is not None:
        raise UsageError(
            f"{option}: invalid duration {text!r}: a bare number of milliseconds is whole;"
            f" {DURATION_FORMS}"
        )
    return int(_exact_millis(option, text))


def warn_if_bare(option: str, text: str | None) -> None:
    """One stderr line when a seconds option got a bare number: name the unit it needs.

    Called once the command accepted the value, so a refused value is one error line.
    """
    if text is None or _bare_number(text) is None:
        return
    value = text.strip()
    diagnostics.warning(
        f"{option} {value}: a bare number is read as seconds; write {option} {value}s"
    )


def _bare_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _exact_millis(option: str, text: str) -> Fraction:
    try:
        return parse_exact_duration(text)
    except UsageError as error:
        raise UsageError(f"{option}: {error}") from None
