"""The time grammar, in one place: every date-time and every duration an option takes.

Durations are one grammar for every option that takes one (``--timeout``, ``--refresh``,
``--interval``, ``--stall-after``, ``--timeout-ms``, ``--by-duration``): a number with a
unit (``500ms``, ``30s``, ``2m``, ``1h``, ``1d12h``) or an ISO-8601 duration
(``PT30S``), Kafka's own form. What a bare number means is the option's business
(``kshare_cli/cli/durations.py``): milliseconds where Kafka's tools take milliseconds,
seconds (with a warning) where kshare once took seconds.

``--reset-offsets``' values are epoch milliseconds. Kafka's tool reads ``--to-datetime``
with ``Utils.getDateTime`` (``yyyy-MM-dd'T'HH:mm:ss.SSS``, UTC unless the text carries a
zone) and ``--by-duration`` with ``java.time.Duration.parse`` (``PnDTnHnMn.nS``). Every
value Kafka accepts means the same instant here; on top of that an operator can write
what they would say aloud at 3 a.m.: ``yesterday 09:00``, ``2h ago``, ``1d12h``.

Parsing and calendar arithmetic are pendulum's, imported only when a date-time or an
ISO-8601 duration is read: ``--help`` and a ``--timeout 30s`` must not pay for it.
Everything is UTC unless the text says otherwise, as in Kafka and on the clusters
operators run: an ISO offset (``Z``, ``+02:00``, ``+0200``) or a trailing IANA zone name
(``yesterday 09:00 Europe/Paris``, ``2026-01-01T09:00 America/New_York``) sets the wall
clock that dates, times and ``today``/``yesterday``/``tomorrow`` are read on. A
wall-clock time that a daylight-saving change skips is moved forward, one it repeats
takes the later instant (pendulum's rule).

Instants before 1970 are refused: Kafka's ListOffsets reads negative timestamps as
"earliest"/"latest" markers, so one would silently mean something else. Instants in the
future are fine (the broker then answers the log end, as Kafka's tool does).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from kshare_cli.errors import UsageError

if TYPE_CHECKING:
    from fractions import Fraction

    import pendulum
    from pendulum.tz.timezone import Timezone

__all__ = [
    "DURATION_EXAMPLES",
    "parse_datetime",
    "parse_duration",
    "parse_exact_duration",
    "timestamp_before",
]

DATETIME_FORMS: Final = (
    "expected an ISO-8601 date-time such as 2026-01-01T09:00:00.000 (UTC unless it ends in Z"
    " or an offset such as +02:00), a date such as 2026-01-01, now, today, yesterday 09:00"
    " (a zone such as Europe/Paris may follow), or a time ago such as 2h, 1d12h, 2h ago, PT2H"
)
DURATION_FORMS: Final = (
    "expected an ISO-8601 duration such as PT2H, P1DT12H or PT0.5S, or amounts with units"
    " w, d, h, m, s, ms such as 2h, 30m, 1d12h, 500ms, 1w"
)
#: The grammar as every duration option's help says it.
DURATION_EXAMPLES: Final = "500ms, 30s, 2m, 1h, 1d12h or ISO-8601 PT30S"

_ONE_MILLISECOND: Final = timedelta(milliseconds=1)
_MAX_LONG: Final = 2**63 - 1
# What pendulum.parse raises on text it cannot read; TypeError too, for input such as
# "0:" that reaches int(None) inside pendulum 3.3's fallback parser.
_PARSE_ERRORS: Final = (ValueError, OverflowError, TypeError)

# Short forms: amounts with units, in any order; units are lower case so that "1M" is
# never taken for a month.
_MILLIS_PER_UNIT: Final[dict[str, int]] = {
    "weeks": 7 * 86_400_000,
    "days": 86_400_000,
    "hours": 3_600_000,
    "minutes": 60_000,
    "seconds": 1000,
    "milliseconds": 1,
}
_UNIT_NAMES: Final[dict[str, str]] = {
    **dict.fromkeys(("w", "wk", "week", "weeks"), "weeks"),
    **dict.fromkeys(("d", "day", "days"), "days"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), "hours"),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), "minutes"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "seconds"),
    **dict.fromkeys(("ms", "millis", "millisecond", "milliseconds"), "milliseconds"),
}
# Patterns as strings: re compiles (and caches) one when it is first used, so importing
# this module for a --help costs no compilation.
_AMOUNT: Final = r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*"
_SHORT_FORM: Final = r"(?:\s*\d+(?:\.\d+)?\s*[a-z]+\s*)+"
_ISO_DURATION: Final = r"[+-]?[Pp]"
_ISO_WHOLE_NUMBER: Final = r"(?<![.,\d])\d+"
_MAX_ISO_NUMBER: Final = 2**32 - 1
# Digits in one amount: enough for any Java long of milliseconds and a fine fraction,
# and far below Python's limit on converting digits to an int.
_MAX_AMOUNT_LENGTH: Final = 40
_DAY_WORDS: Final[dict[str, int]] = {"today": 0, "yesterday": -1, "tomorrow": 1}
_DAY_FORM: Final = r"(?i)(today|yesterday|tomorrow)(?:\s+(?:at\s+)?(\S.*))?"
_AGO: Final = r"(?i)(.*\S)\s+ago"
# What an IANA zone name looks like ("UTC", "Europe/Paris", "Etc/GMT+2"); only such a
# last word is looked up, and one with a "/" that is not a zone is reported as misspelt.
_ZONE_NAME: Final = r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*"


def parse_duration(text: str) -> int:
    """A ``--by-duration`` value in milliseconds (zero or more).

    Accepts Kafka's ISO-8601 form (``PT0.5S``, ``P1DT2H``, ``pt2h``; also ``P2W``),
    and amounts with units, in any combination: ``2h``, ``30m``, ``1d12h``,
    ``1h 30m``, ``1.5h``, ``500ms``, ``1w``, ``2 hours``. ``PT0S`` (zero) is allowed as
    in Kafka. Negative durations are refused (``-PT1H``: Kafka would reset into the
    future), and so are months and years, which have no fixed length. Sub-millisecond
    parts are dropped, as ``Instant.toEpochMilli`` does.

    Raises UsageError with a one-line message listing the accepted forms.
    """
    return _duration_millis(text, text)


def parse_exact_duration(text: str) -> Fraction:
    """:func:`parse_duration`'s grammar, in exact milliseconds: sub-millisecond parts kept.

    For options whose values are seconds (``--timeout 0.5ms``, ``--refresh 1.0005s``),
    where dropping them would change the value reaching the command. Raises UsageError
    as :func:`parse_duration` does.
    """
    return _duration_exact(text, text)


def parse_datetime(text: str, *, now: pendulum.DateTime | None = None) -> int:
    """A ``--to-datetime`` value as epoch milliseconds.

    Accepts, case-insensitively for the words:

    - ISO-8601 as Kafka writes it, ``2026-01-01T00:00:10.000``, and its relatives: no
      fraction or any fraction (``.5`` is half a second, where Kafka's
      ``SimpleDateFormat`` would read 5 ms), minutes only, a space for the ``T``,
      a zone ``Z``, ``+02:00``, ``+0200`` or ``+02``; no zone means UTC, as in Kafka;
    - a date, ``2026-01-01`` (its midnight), or a time, ``09:00`` (today);
    - ``now``; ``today``, ``yesterday``, ``tomorrow`` (midnight) optionally with a time,
      ``yesterday 09:00``, ``today 09:30:15``;
    - a time ago: ``2h``, ``30m``, ``1d12h``, ``90s``, ``1w``, ``2h ago``, ``PT2H``
      (any form :func:`parse_duration` accepts; non-negative);
    - any of the wall-clock forms followed by an IANA zone name,
      ``yesterday 09:00 Europe/Paris``, in which the date and time are read.

    ``now`` (an aware DateTime; UTC is assumed for a naive one) stands for the
    current time so that relative forms are testable; by default it is the clock.

    Raises UsageError with a one-line message listing the accepted forms, or saying
    what is wrong: an unknown zone, an offset and a zone both given, a negative
    duration, an instant before 1970.
    """
    import pendulum

    spec = text.strip()
    if not spec:
        raise UsageError(f"invalid date-time {_shown(text)}: {DATETIME_FORMS}")
    spec, zone = _split_zone(spec, text)
    clock = _clock(now)

    if spec.lower() == "now":
        return _checked_millis(clock, text)
    ago = re.fullmatch(_AGO, spec)
    if ago is not None:
        return timestamp_before(_duration_millis(ago.group(1), text), now=clock, what=text)
    if re.match(_ISO_DURATION, spec) or _is_short_form(spec.lstrip("+-")):
        return timestamp_before(_duration_millis(spec, text), now=clock, what=text)

    local_now = clock.in_timezone(zone or pendulum.UTC)
    day_form = re.fullmatch(_DAY_FORM, spec)
    if day_form is not None:
        try:
            day = local_now.date().add(days=_DAY_WORDS[day_form.group(1).lower()])
        except OverflowError:  # tomorrow, on 9999-12-31
            raise UsageError(f"invalid date-time {_shown(text)}: {DATETIME_FORMS}") from None
        clock_time = pendulum.Time(0, 0)
        if day_form.group(2) is not None:
            clock_time = _parse_time(day_form.group(2), text)
        return _wall_clock(day, clock_time, zone, text)

    try:
        parsed = pendulum.parse(spec, exact=True, tz=None)
    except _PARSE_ERRORS:
        raise UsageError(f"invalid date-time {_shown(text)}: {DATETIME_FORMS}") from None
    if isinstance(parsed, pendulum.DateTime):
        if parsed.tzinfo is None:
            return _wall_clock(parsed.date(), parsed.time(), zone, text)
        if zone is not None:
            raise UsageError(
                f"invalid date-time {_shown(text)}: give an offset or a time zone name, not both"
            )
        return _checked_millis(parsed, text)
    if isinstance(parsed, pendulum.Date):
        return _wall_clock(parsed, pendulum.Time(0, 0), zone, text)
    if isinstance(parsed, pendulum.Time):
        return _wall_clock(local_now.date(), parsed, zone, text)
    # An interval ("2026-01-01/2026-02-01") is not an instant.
    raise UsageError(f"invalid date-time {_shown(text)}: {DATETIME_FORMS}")


def timestamp_before(
    duration_millis: int, *, now: pendulum.DateTime | None = None, what: str | None = None
) -> int:
    """Epoch milliseconds ``duration_millis`` before ``now`` (the clock by default):
    what ``--by-duration`` asks ListOffsets for, computed as Kafka does
    (``Instant.now().minus(duration).toEpochMilli()``).

    Raises UsageError when that is before 1970, where a ListOffsets timestamp would
    turn into one of Kafka's negative markers; ``what`` is the operator's input, for
    the message.
    """
    named = _shown(what) if what is not None else f"{duration_millis} ms ago"
    if duration_millis < 0:
        raise UsageError(f"invalid duration {named}: must not be negative")
    millis = _epoch_millis(_clock(now)) - duration_millis
    if millis < 0:
        raise UsageError(
            f"{named} is before 1970-01-01T00:00:00Z; Kafka has no record timestamps that early"
        )
    return millis


def _duration_millis(spec: str, text: str) -> int:
    """Milliseconds for one duration; ``text`` is the operator's whole input, for messages."""
    return int(_duration_exact(spec, text))  # drops sub-millisecond parts, as Kafka does


def _duration_exact(spec: str, text: str) -> Fraction:
    from fractions import Fraction  # decimal's import is not for --help to pay

    body = spec.strip()
    if body.startswith("-") or (re.match(_ISO_DURATION, body) and "-" in body):
        raise UsageError(f"invalid duration {_shown(text)}: must not be negative")
    # java.time.Duration.parse takes a leading '+'.
    body = body.removeprefix("+")
    millis: Fraction
    if re.match(_ISO_DURATION, body):
        millis = Fraction(_iso_duration_millis(body, text))
    elif re.fullmatch(_SHORT_FORM, body):
        millis = _short_duration_exact(body, text)
    else:
        raise UsageError(f"invalid duration {_shown(text)}: {DURATION_FORMS}")
    if not 0 <= int(millis) <= _MAX_LONG:  # as parse_duration, which drops the fraction
        raise UsageError(f"invalid duration {_shown(text)}: too long")
    return millis


def _iso_duration_millis(body: str, text: str) -> int:
    import pendulum

    # pendulum keeps each number in 32 bits and would wrap a larger one silently.
    if any(
        len(digits) > 20 or int(digits) > _MAX_ISO_NUMBER
        for digits in re.findall(_ISO_WHOLE_NUMBER, body)
    ):
        raise UsageError(f"invalid duration {_shown(text)}: too long")
    try:
        # java.time.Duration.parse is case-insensitive.
        parsed = pendulum.parse(body.upper(), exact=True)
    except OverflowError:
        raise UsageError(f"invalid duration {_shown(text)}: too long") from None
    except (ValueError, TypeError):
        raise UsageError(f"invalid duration {_shown(text)}: {DURATION_FORMS}") from None
    if not isinstance(parsed, pendulum.Duration):
        raise UsageError(f"invalid duration {_shown(text)}: {DURATION_FORMS}")
    if parsed.years or parsed.months:
        raise UsageError(
            f"invalid duration {_shown(text)}: months and years have no fixed length;"
            " use days (P30D)"
        )
    # pendulum's own accessors go through a float total and lose the milliseconds of
    # long durations; the timedelta underneath is exact.
    return timedelta.__floordiv__(parsed, _ONE_MILLISECOND)


def _short_duration_exact(body: str, text: str) -> Fraction:
    from fractions import Fraction

    # Exact arithmetic: pendulum.duration() goes through floats, which would turn
    # "12345678901234567ms" into 12345678901234566.
    total = Fraction(0)
    seen: set[str] = set()
    for number, word in re.findall(_AMOUNT, body):
        if len(number) > _MAX_AMOUNT_LENGTH:
            raise UsageError(f"invalid duration {_shown(text)}: too long")
        unit = _UNIT_NAMES.get(word)
        if unit is None:
            raise UsageError(
                f"invalid duration {_shown(text)}: unknown unit {word!r}; {DURATION_FORMS}"
            )
        if unit in seen:
            raise UsageError(f"invalid duration {_shown(text)}: {unit} are given twice")
        seen.add(unit)
        total += Fraction(number) * _MILLIS_PER_UNIT[unit]
    return total


def _is_short_form(spec: str) -> bool:
    return re.fullmatch(_SHORT_FORM, spec) is not None and all(
        unit in _UNIT_NAMES for _, unit in re.findall(_AMOUNT, spec)
    )


def _split_zone(spec: str, text: str) -> tuple[str, Timezone | None]:
    """The text without a trailing IANA zone name, and that zone (None when absent)."""
    import pendulum
    from pendulum.tz.timezone import Timezone

    head, _, last = spec.rpartition(" ")
    if not head.strip() or not re.fullmatch(_ZONE_NAME, last):
        return spec, None
    try:
        zone = pendulum.timezone(last)
    except (ValueError, OSError):
        if "/" in last:
            raise UsageError(
                f"invalid date-time {_shown(text)}: unknown time zone {last!r}"
                " (use an IANA name such as Europe/Paris or UTC)"
            ) from None
        return spec, None
    if not isinstance(zone, Timezone):
        return spec, None
    return head.strip(), zone


def _clock(now: pendulum.DateTime | None) -> pendulum.DateTime:
    import pendulum

    if now is None:
        return pendulum.now(pendulum.UTC)
    if now.tzinfo is None:
        return now.replace(tzinfo=pendulum.UTC)
    return now


def _parse_time(spec: str, text: str) -> pendulum.Time:
    import pendulum

    try:
        parsed = pendulum.parse(spec, exact=True, tz=None)
    except _PARSE_ERRORS:
        parsed = None
    if not isinstance(parsed, pendulum.Time):
        raise UsageError(
            f"invalid date-time {_shown(text)}: {_shown(spec)} is not a time of day"
            " such as 09:00 or 09:30:15"
        )
    return parsed


def _wall_clock(
    day: pendulum.Date, clock_time: pendulum.Time, zone: Timezone | None, text: str
) -> int:
    """The instant a wall clock in ``zone`` (UTC when None) shows ``day`` ``clock_time``."""
    import pendulum

    try:
        moment = pendulum.datetime(
            day.year,
            day.month,
            day.day,
            clock_time.hour,
            clock_time.minute,
            clock_time.second,
            clock_time.microsecond,
            tz=zone or pendulum.UTC,
        )
    except (ValueError, OverflowError):
        raise UsageError(f"invalid date-time {_shown(text)}: {DATETIME_FORMS}") from None
    return _checked_millis(moment, text)


def _checked_millis(moment: pendulum.DateTime, text: str) -> int:
    millis = _epoch_millis(moment)
    if millis < 0:
        raise UsageError(
            f"date-time {_shown(text)} is before 1970-01-01T00:00:00Z;"
            " Kafka has no record timestamps that early"
        )
    return millis


def _epoch_millis(moment: pendulum.DateTime) -> int:
    # int_timestamp is exact (no float) and floors; microseconds do not depend on the zone.
    return moment.int_timestamp * 1000 + moment.microsecond // 1000


def _shown(text: str) -> str:
    """The operator's input as a message quotes it: repr'd and cut short."""
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."
