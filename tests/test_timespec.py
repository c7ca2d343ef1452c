"""--to-datetime and --by-duration values: Kafka's forms mean Kafka's instants, and more.

Expected instants are computed with the standard library (datetime, zoneinfo), not
with pendulum, so that a test checks the parser rather than repeating it. Relative
forms get a fixed ``now``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pendulum
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.timespec import (
    DATETIME_FORMS,
    DURATION_FORMS,
    parse_datetime,
    parse_duration,
    timestamp_before,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")
# A Sunday; Paris is on winter time (UTC+1), New York on summer time (UTC-4).
NOW = pendulum.datetime(2026, 3, 15, 12, 34, 56, 789_000, tz="UTC")
HOUR = 3_600_000
DAY = 24 * HOUR


def millis(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(milliseconds=1)


def utc(*fields: int) -> int:
    return millis(datetime(*fields, tzinfo=UTC))  # type: ignore[misc]


NOW_MS = utc(2026, 3, 15, 12, 34, 56, 789_000)


# --- absolute date-times -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Golden run 18: Kafka 4.2 reset golden-a:1 to this instant.
        ("2026-01-01T00:00:10.000", 1_767_225_610_000),
        # Kafka's documented pattern, with each zone form SimpleDateFormat's X/XXX take.
        ("2026-01-01T00:00:10.000Z", 1_767_225_610_000),
        ("2026-01-01T09:00:00.000+02:00", utc(2026, 1, 1, 7)),
        ("2026-01-01T09:00:00.000+0200", utc(2026, 1, 1, 7)),
        ("2026-01-01T09:00:00.000+02", utc(2026, 1, 1, 7)),
        ("2026-01-01T09:00:00.000-05:00", utc(2026, 1, 1, 14)),
        ("2026-01-01T09:00:00.000+05:30", utc(2026, 1, 1, 3, 30)),
        # Relatives of Kafka's pattern.
        ("2026-01-01T09:00:00", utc(2026, 1, 1, 9)),
        ("2026-01-01T09:00", utc(2026, 1, 1, 9)),
        ("2026-01-01 09:00:00", utc(2026, 1, 1, 9)),
        ("2026-01-01 09:00:00Z", utc(2026, 1, 1, 9)),
        ("2026-01-01T09:00:00.5", utc(2026, 1, 1, 9, 0, 0, 500_000)),
        ("2026-01-01T09:00:00.123456789Z", utc(2026, 1, 1, 9, 0, 0, 123_000)),
        ("2026-01-01T09:00:00.9999Z", utc(2026, 1, 1, 9, 0, 0, 999_000)),
        ("20260101T090000Z", utc(2026, 1, 1, 9)),
        ("  2026-01-01T09:00Z  ", utc(2026, 1, 1, 9)),
        ("2026-01-01", utc(2026, 1, 1)),
        ("2024-02-29", utc(2024, 2, 29)),
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:00.001Z", 1),
        ("1970-01-01T01:00:00+01:00", 0),
        # The future is allowed: the broker then answers the log end offset.
        ("2099-12-31T23:59:59.999Z", utc(2099, 12, 31, 23, 59, 59, 999_000)),
        ("9999-12-31T23:59:59.999Z", utc(9999, 12, 31, 23, 59, 59, 999_000)),
    ],
)
def test_absolute_datetimes(text: str, expected: int) -> None:
    assert parse_datetime(text, now=NOW) == expected
    # An absolute instant does not depend on the clock.
    assert parse_datetime(text) == expected


@given(
    st.datetimes(
        min_value=datetime(1971, 1, 1),
        max_value=datetime(9998, 12, 31),
        timezones=st.just(UTC),
    ),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_kafkas_pattern_with_any_offset_is_that_instant(moment: datetime, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    local = moment.astimezone(zone)
    sign = "-" if minutes < 0 else "+"
    offset = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    text = local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}" + offset
    expected = millis(moment.replace(microsecond=moment.microsecond // 1000 * 1000))
    assert parse_datetime(text) == expected
    assert parse_datetime(text.replace("T", " ")) == expected


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)))
def test_no_zone_means_utc_as_in_kafka(moment: datetime) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    expected = millis(moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=UTC))
    assert parse_datetime(text) == expected


# --- relative forms ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW_MS),
        ("NOW", NOW_MS),
        ("today", utc(2026, 3, 15)),
        ("yesterday", utc(2026, 3, 14)),
        ("tomorrow", utc(2026, 3, 16)),
        ("yesterday 09:00", utc(2026, 3, 14, 9)),
        ("Yesterday 9:00", utc(2026, 3, 14, 9)),
        ("yesterday at 09:00", utc(2026, 3, 14, 9)),
        ("today 09:30:15", utc(2026, 3, 15, 9, 30, 15)),
        ("today 09:30:15.250", utc(2026, 3, 15, 9, 30, 15, 250_000)),
        ("today 23:00", utc(2026, 3, 15, 23)),  # later today: in the future, allowed
        ("09:00", utc(2026, 3, 15, 9)),
        ("2h", NOW_MS - 2 * HOUR),
        ("30m", NOW_MS - 30 * 60_000),
        ("90s", NOW_MS - 90_000),
        ("1d12h", NOW_MS - DAY - 12 * HOUR),
        ("1w", NOW_MS - 7 * DAY),
        ("500ms", NOW_MS - 500),
        ("0s", NOW_MS),
        ("2h ago", NOW_MS - 2 * HOUR),
        ("2 hours ago", NOW_MS - 2 * HOUR),
        ("1h 30m ago", NOW_MS - 90 * 60_000),
        ("1d12h AGO", NOW_MS - DAY - 12 * HOUR),
        ("PT2H", NOW_MS - 2 * HOUR),
        ("PT2H ago", NOW_MS - 2 * HOUR),
        ("P1DT12H", NOW_MS - DAY - 12 * HOUR),
        ("pt0.5s", NOW_MS - 500),
        ("+PT1H", NOW_MS - HOUR),
    ],
)
def test_relative_forms_in_utc(text: str, expected: int) -> None:
    assert parse_datetime(text, now=NOW) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yesterday 09:00 Europe/Paris", datetime(2026, 3, 14, 9, tzinfo=PARIS)),
        ("today Europe/Paris", datetime(2026, 3, 15, tzinfo=PARIS)),
        ("tomorrow 00:30 America/New_York", datetime(2026, 3, 16, 0, 30, tzinfo=NEW_YORK)),
        ("09:00 Europe/Paris", datetime(2026, 3, 15, 9, tzinfo=PARIS)),
        ("2026-01-01T09:00 Europe/Paris", datetime(2026, 1, 1, 9, tzinfo=PARIS)),
        ("2026-07-01 09:00:00.250 Europe/Paris", datetime(2026, 7, 1, 9, 0, 0, 250_000, PARIS)),
        ("2026-01-01 America/New_York", datetime(2026, 1, 1, tzinfo=NEW_YORK)),
        ("today 12:00 UTC", datetime(2026, 3, 15, 12, tzinfo=UTC)),
        ("today 12:00 Etc/GMT-2", datetime(2026, 3, 15, 10, tzinfo=UTC)),  # POSIX sign
    ],
)
def test_a_zone_name_sets_the_wall_clock(text: str, expected: datetime) -> None:
    assert parse_datetime(text, now=NOW) == millis(expected)


def test_a_zone_name_also_decides_which_day_today_is() -> None:
    late = pendulum.datetime(2026, 3, 15, 23, 30, tz="UTC")  # already the 16th in Paris
    assert parse_datetime("today", now=late) == utc(2026, 3, 15)
    assert parse_datetime("today Europe/Paris", now=late) == millis(
        datetime(2026, 3, 16, tzinfo=PARIS)
    )
    assert parse_datetime("yesterday Europe/Paris", now=late) == millis(
        datetime(2026, 3, 15, tzinfo=PARIS)
    )


def test_a_zone_name_does_not_move_instants_that_are_not_wall_clock_times() -> None:
    assert parse_datetime("now Europe/Paris", now=NOW) == NOW_MS
    assert parse_datetime("2h ago Europe/Paris", now=NOW) == NOW_MS - 2 * HOUR


def test_daylight_saving_gaps_move_forward_and_repeats_take_the_later_instant() -> None:
    spring = pendulum.datetime(2026, 3, 29, 12, tz="UTC")  # Paris skips 02:00-03:00
    assert parse_datetime("today 02:30 Europe/Paris", now=spring) == utc(2026, 3, 29, 1, 30)
    assert parse_datetime("today 01:30 Europe/Paris", now=spring) == utc(2026, 3, 29, 0, 30)
    assert parse_datetime("today 03:30 Europe/Paris", now=spring) == utc(2026, 3, 29, 1, 30)
    # 02:30 happens twice on 2026-10-25 in Paris: first at 00:30Z, then at 01:30Z.
    assert parse_datetime("2026-10-25T02:30 Europe/Paris") == utc(2026, 10, 25, 1, 30)


def test_now_defaults_to_the_clock() -> None:
    before = int(time.time() * 1000) - 1
    parsed = parse_datetime("now")
    after = int(time.time() * 1000) + 1
    assert before <= parsed <= after
    assert before - 2 * HOUR <= parse_datetime("2h") <= after - 2 * HOUR


def test_a_naive_now_is_utc() -> None:
    naive = pendulum.naive(2026, 3, 15, 12, 34, 56, 789_000)
    assert parse_datetime("now", now=naive) == NOW_MS
    assert parse_datetime("today", now=naive) == utc(2026, 3, 15)


def test_now_in_another_zone_is_the_same_instant() -> None:
    paris_now = NOW.in_timezone("Europe/Paris")
    assert parse_datetime("2h", now=paris_now) == NOW_MS - 2 * HOUR
    # Day words are UTC unless the text names a zone, whatever zone `now` is in.
    assert parse_datetime("today", now=paris_now) == utc(2026, 3, 15)


@given(st.integers(min_value=0, max_value=NOW_MS))
def test_an_amount_ago_is_now_minus_that_amount(amount: int) -> None:
    assert parse_datetime(f"{amount}ms", now=NOW) == NOW_MS - amount
    assert parse_datetime(f"{amount}ms ago", now=NOW) == NOW_MS - amount
    assert parse_datetime(f"PT{amount // 1000}.{amount % 1000:03d}S", now=NOW) == NOW_MS - amount


@given(st.integers(min_value=NOW_MS + 1, max_value=2**63 - 1))
def test_an_amount_reaching_back_before_1970_is_refused(amount: int) -> None:
    with pytest.raises(UsageError, match="before 1970"):
        parse_datetime(f"{amount}ms", now=NOW)


# --- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "garbage",
        "2026-13-01",
        "2026-02-30T00:00",
        "2025-02-29",
        "2026-01-01T24:00:00",
        "2026-01-01T09:60",
        "2026-01-01T09:00:00 +02:00",
        "2026-01-01t09:00:00z",
        "9am",
        "yesterday noon",
        "yesterday 25:00",
        "today at",
        "2026-01-01/2026-02-01",
        "1767225610000",
        "last week",
        "2h from now",
        "2026-01-01 Europe",
        "0:",  # pendulum 3.3 raises TypeError on this one
        "yesterday 0:",
    ],
)
def test_malformed_datetimes_are_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_datetime(text, now=NOW)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"invalid date-time {text!r}")
    assert raised.value.exit_code == ExitCode.USAGE
    if "yesterday" in text or "today" in text:
        assert "is not a time of day" in message
    else:
        assert message.endswith(DATETIME_FORMS)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-2h", "must not be negative"),
        ("-PT1H", "must not be negative"),
        ("PT-1H", "must not be negative"),
        ("-1d ago", "must not be negative"),
        ("1969-12-31T23:59:59.999Z", "is before 1970-01-01T00:00:00Z"),
        ("1969-12-31", "is before 1970-01-01T00:00:00Z"),
        ("1970-01-01T00:30:00+01:00", "is before 1970-01-01T00:00:00Z"),
        ("P1M", "months and years have no fixed length"),
        ("2026-01-01T09:00Z Europe/Paris", "an offset or a time zone name, not both"),
        ("2026-01-01T09:00+01:00 Europe/Paris", "an offset or a time zone name, not both"),
        ("yesterday 09:00 Europe/Pariss", "unknown time zone 'Europe/Pariss'"),
        ("today Mars/Olympus_Mons", "unknown time zone 'Mars/Olympus_Mons'"),
    ],
)
def test_datetime_refusals_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason) as raised:
        parse_datetime(text, now=NOW)
    assert "\n" not in str(raised.value)
    assert repr(text) in str(raised.value)


# --- durations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # java.time.Duration.parse, as Kafka's --by-duration reads it.
        ("PT0.5S", 500),
        ("P1DT2H", DAY + 2 * HOUR),
        ("PT0S", 0),
        ("P0D", 0),
        ("PT15M", 15 * 60_000),
        ("P1D", DAY),
        ("PT1H30M", 90 * 60_000),
        ("P2DT3H4M5.006S", 2 * DAY + 3 * HOUR + 4 * 60_000 + 5_006),
        ("pt2h", 2 * HOUR),
        ("+PT1H", HOUR),
        ("PT0,5S", 500),
        ("PT0.123456789S", 123),
        ("PT0.0009S", 0),
        ("PT4294967295S", 4_294_967_295_000),
        # ISO weeks, which Java refuses but ISO-8601 allows.
        ("P2W", 14 * DAY),
        # Amounts with units.
        ("2h", 2 * HOUR),
        ("30m", 30 * 60_000),
        ("1d12h", DAY + 12 * HOUR),
        ("500ms", 500),
        ("1w", 7 * DAY),
        ("90s", 90_000),
        ("1m30s", 90_000),
        ("1h 30m", 90 * 60_000),
        ("30m1h", 90 * 60_000),
        ("1.5h", 90 * 60_000),
        ("0.0001s", 0),
        ("2 hours", 2 * HOUR),
        ("1 day 2 hrs 3 mins 4 secs 5 millis", DAY + 2 * HOUR + 3 * 60_000 + 4_005),
        ("1w2d3h4m5s6ms", 9 * DAY + 3 * HOUR + 4 * 60_000 + 5_006),
        (" 2h ", 2 * HOUR),
        ("+2h", 2 * HOUR),
        ("0ms", 0),
        ("9223372036854775807ms", 2**63 - 1),
    ],
)
def test_durations(text: str, expected: int) -> None:
    assert parse_duration(text) == expected


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_milliseconds_are_exact_up_to_a_java_long(amount: int) -> None:
    assert parse_duration(f"{amount}ms") == amount
    assert parse_duration(f"{amount} ms") == amount


@given(
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
)
def test_amounts_with_units_add_up(
    weeks: int, days: int, hours: int, minutes: int, seconds: int, milliseconds: int
) -> None:
    expected = (
        ((weeks * 7 + days) * 24 + hours) * HOUR + minutes * 60_000 + seconds * 1000 + milliseconds
    )
    assert parse_duration(f"{weeks}w{days}d{hours}h{minutes}m{seconds}s{milliseconds}ms") == (
        expected
    )
    assert parse_duration(f"{milliseconds}ms {seconds}s {hours}h {weeks}w {days}d {minutes}m") == (
        expected
    )


@given(
    st.integers(0, 1_000_000),
    st.integers(0, 1_000),
    st.integers(0, 100_000),
    st.integers(0, 10_000_000),
    st.integers(0, 999),
)
def test_iso_durations_add_up_as_java_reads_them(
    days: int, hours: int, minutes: int, seconds: int, milliseconds: int
) -> None:
    expected = (days * 24 + hours) * HOUR + minutes * 60_000 + seconds * 1000 + milliseconds
    text = f"P{days}DT{hours}H{minutes}M{seconds}.{milliseconds:03d}S"
    assert parse_duration(text) == expected
    assert parse_duration(text.lower()) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "2",
        "3600",
        "2H",
        "1M",
        "2 fortnights",
        "1h30",
        "h",
        "1.h",
        ".5h",
        "P",
        "P1W2D",
        "PT1Q",
        "P1DT1.5.5S",
        "two hours",
        "2h ago",
        "2026-01-01",
    ],
)
def test_malformed_durations_are_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_duration(text)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"invalid duration {text!r}")
    assert message.endswith(DURATION_FORMS)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-PT1H", "must not be negative"),
        ("-pt1h", "must not be negative"),
        ("PT-1H", "must not be negative"),
        ("PT1H-30M", "must not be negative"),
        ("-2h", "must not be negative"),
        ("-0s", "must not be negative"),
        ("P1M", "months and years have no fixed length; use days"),
        ("P1Y", "months and years have no fixed length; use days"),
        ("P1Y2M3D", "months and years have no fixed length; use days"),
        ("1h1h", "hours are given twice"),
        ("1m 2min", "minutes are given twice"),
        ("9223372036854775808ms", "too long"),
        ("15250284453w", "too long"),
        ("PT4294967296S", "too long"),
        ("P4294967295D", "too long"),
        ("PT1099511627776S", "too long"),
        ("P" + "9" * 5000 + "D", "too long"),
        ("9" * 5000 + "ms", "too long"),
        ("1." + "0" * 5000 + "1h", "too long"),
    ],
)
def test_duration_refusals_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason) as raised:
        parse_duration(text)
    assert "\n" not in str(raised.value)


def test_timestamp_before_is_kafkas_now_minus_duration() -> None:
    assert timestamp_before(0, now=NOW) == NOW_MS
    assert timestamp_before(2 * HOUR, now=NOW) == NOW_MS - 2 * HOUR
    assert timestamp_before(NOW_MS, now=NOW) == 0
    before = int(time.time() * 1000) - 1
    assert before - HOUR <= timestamp_before(HOUR) <= int(time.time() * 1000) - HOUR + 1


def test_timestamp_before_refuses_what_kafka_would_read_as_a_marker() -> None:
    with pytest.raises(UsageError, match=r"^'P30000D' is before 1970"):
        timestamp_before(parse_duration("P30000D"), now=NOW, what="P30000D")
    with pytest.raises(UsageError, match="before 1970"):
        timestamp_before(NOW_MS + 1, now=NOW)
    with pytest.raises(UsageError, match="must not be negative"):
        timestamp_before(-1, now=NOW)


TEXT_LIKE_INPUT = st.one_of(
    st.text(),
    st.text(alphabet="0123456789-+:.,TZPWDHMSmshdw /ago", max_size=30),
    st.from_regex(
        r"(today|yesterday|now|[0-9]{1,4}-[0-9]{1,2}-[0-9]{1,2}([T ][0-9:.]{1,15})?)"
        r"( [A-Za-z_/+-]{1,20})?",
        fullmatch=True,
    ),
)


@given(TEXT_LIKE_INPUT)
def test_any_input_gives_an_instant_or_a_usage_error(text: str) -> None:
    try:
        parsed = parse_datetime(text, now=NOW)
    except UsageError as error:
        assert "\n" not in str(error)
    else:
        assert 0 <= parsed < 2**63


@given(TEXT_LIKE_INPUT)
def test_any_input_gives_a_duration_or_a_usage_error(text: str) -> None:
    try:
        parsed = parse_duration(text)
    except UsageError as error:
        assert "\n" not in str(error)
    else:
        assert 0 <= parsed < 2**63
