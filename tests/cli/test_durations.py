"""Duration options: one grammar, and every old form still giving the value it gave.

The references below are the parsers these options had before the grammar was
unified (``--timeout``'s regular expression, Typer's ``float``/``int``, the
dashboard's ``float(text.removesuffix("s"))``): a bare number must reach the command
as the same float, so scripts written against them keep their meaning.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest
from typer.testing import CliRunner, Result

from kshare_cli.cli import durations
from kshare_cli.cli.common import parse_timeout
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.timespec import DURATION_EXAMPLES, DURATION_FORMS

_OLD_TIMEOUT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_OLD_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 0.001}


def old_timeout(text: str) -> float:
    """``--timeout`` as kshare read it until the grammar was unified."""
    match = _OLD_TIMEOUT.match(text)
    assert match is not None
    return float(match.group(1)) * _OLD_UNIT_SECONDS[match.group(2)]


@pytest.mark.parametrize(
    "text",
    ["30s", "5000", "1", "1.5", "1100", "0.5", "1m", "1.5m", "0.5h", "100ms", "300ms", " 30 s "],
)
def test_timeout_gives_the_value_it_gave(text: str) -> None:
    assert parse_timeout(text) == old_timeout(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("500ms", 0.5),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1m30s", 90.0),
        ("1d12h", 129_600.0),
        ("PT30S", 30.0),
        ("pt0.5s", 0.5),
        ("P1DT2H", 93_600.0),
        ("0.5ms", 0.0005),
        ("30000", 30.0),  # bare: milliseconds, Kafka's form
    ],
)
def test_timeout_takes_the_grammar(text: str, seconds: float) -> None:
    assert parse_timeout(text) == seconds


@pytest.mark.parametrize("text", ["2", "0.5", "60", "2.5", "-5", "nan", "1e3", "7200"])
def test_a_bare_number_of_seconds_is_the_float_it_was(text: str) -> None:
    # Typer's float options (--interval, --stall-after) called float(); the dashboard
    # float(text.strip().removesuffix("s")).
    assert_same(durations.seconds("--refresh", text, bare="s"), float(text))


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("2.5s", 2.5), (" 60s ", 60.0)])
def test_the_dashboards_old_seconds_suffix_means_the_same(text: str, seconds: float) -> None:
    assert durations.seconds("--refresh", text, bare="s") == seconds
    assert seconds == float(text.strip().removesuffix("s"))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("500ms", 0.5), ("30s", 30.0), ("2m", 120.0), ("1h", 3600.0), ("PT2M", 120.0)],
)
def test_seconds_options_take_the_grammar(text: str, seconds: float) -> None:
    assert durations.seconds("--interval", text, bare="s") == seconds


@pytest.mark.parametrize(
    ("text", "millis"),
    [("5000", 5000), ("-5", -5), ("0", 0), ("5s", 5000), ("1.5s", 1500), ("PT1S", 1000)],
)
def test_timeout_ms_takes_the_grammar_and_a_bare_integer_is_milliseconds(
    text: str, millis: int
) -> None:
    assert durations.milliseconds("--timeout-ms", text) == millis
    if text.lstrip("-").isdigit():
        assert millis == int(text)  # what Typer's int option gave


@pytest.mark.parametrize(
    ("option", "text"),
    [("--refresh", "abc"), ("--interval", "2x"), ("--stall-after", "1M"), ("--timeout", "soon")],
)
def test_a_bad_value_names_the_option_and_the_grammar(option: str, text: str) -> None:
    parse = parse_timeout if option == "--timeout" else _seconds(option)
    with pytest.raises(UsageError) as raised:
        parse(text)
    message = str(raised.value)
    assert message.startswith(f"{option}: invalid duration {text!r}")
    assert message.endswith(DURATION_FORMS)
    assert "\n" not in message
    assert raised.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize("text", ["nan", "inf", "0", "0s", "-5"])
def test_timeout_refuses_what_is_not_a_positive_finite_duration(text: str) -> None:
    with pytest.raises(UsageError, match="--timeout"):
        parse_timeout(text)


def test_a_fractional_bare_number_of_milliseconds_is_refused() -> None:
    with pytest.raises(UsageError, match=r"^--timeout-ms: invalid duration '5\.5'"):
        durations.milliseconds("--timeout-ms", "5.5")


def test_the_help_says_the_grammar_the_same_way() -> None:
    assert durations.duration_help("Give up after this long", bare="ms") == (
        f"Give up after this long ({DURATION_EXAMPLES}; a bare number is milliseconds,"
        " as in Kafka's tools)."
    )
    assert durations.duration_help("Time between refreshes", bare="s") == (
        f"Time between refreshes ({DURATION_EXAMPLES}; a bare number is still read as seconds)."
    )
    assert durations.duration_help("Now minus D") == f"Now minus D ({DURATION_EXAMPLES})."


def test_a_bare_number_of_seconds_warns_with_the_unit(capsys: pytest.CaptureFixture[str]) -> None:
    durations.warn_if_bare("--refresh", " 2 ")
    assert capsys.readouterr().err == (
        "kshare: warning: --refresh 2: a bare number is read as seconds; write --refresh 2s\n"
    )
    for text in ("2s", "500ms", "PT2S", None):
        durations.warn_if_bare("--refresh", text)
    assert capsys.readouterr().err == ""


def assert_same(got: float, expected: float) -> None:
    assert got == expected or (got != got and expected != expected)  # nan is nan


def _seconds(option: str) -> Callable[[str], float]:
    return lambda text: durations.seconds(option, text, bare="s")


# Through the commands: each duration option takes the grammar, a bare number still
# works (with the warning where it means seconds), and a bad value is one line, exit 2.
# common.resolve, the first step after every check, is replaced by a usage error, so
# "resolved" proves that every value was accepted and nothing connects.

RESOLVED = "kshare: error: resolved"


@pytest.fixture
def kshare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Result]:
    from kshare_cli.cli import common

    def resolved(*args: object, **kwargs: object) -> NoReturn:
        raise UsageError("resolved")

    monkeypatch.setattr(common, "resolve", resolved)
    environment = {
        "KSHARE_BOOTSTRAP_SERVERS": None,
        "KSHARE_COMMAND_CONFIG": None,
        "KSHARE_CONFIG": str(tmp_path / "config.toml"),
    }

    def run(*args: str) -> Result:
        from kshare_cli.cli.app import app

        return CliRunner().invoke(app, list(args), env=environment)

    return run


SECONDS_OPTIONS = [
    ("dashboard", "--refresh"),
    ("dashboard", "--stall-after"),
    ("health", "--stall-after"),
    ("exporter", "--interval"),
    ("exporter", "--stall-after"),
]
COMMAND_ARGS = {"dashboard": [], "health": ["g"], "exporter": [], "list": []}


@pytest.mark.parametrize(("command", "option"), SECONDS_OPTIONS)
@pytest.mark.parametrize("value", ["30s", "1500ms", "2m", "PT45S"])
def test_seconds_options_take_the_grammar_without_a_warning(
    kshare: Callable[..., Result], command: str, option: str, value: str
) -> None:
    result = kshare(command, *COMMAND_ARGS[command], option, value)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [RESOLVED]


@pytest.mark.parametrize(("command", "option"), SECONDS_OPTIONS)
def test_a_bare_number_of_seconds_still_works_with_one_warning(
    kshare: Callable[..., Result], command: str, option: str
) -> None:
    result = kshare(command, *COMMAND_ARGS[command], option, "30")
    assert result.stderr.splitlines() == [
        f"kshare: warning: {option} 30: a bare number is read as seconds; write {option} 30s",
        RESOLVED,
    ]


@pytest.mark.parametrize(("command", "option"), [*SECONDS_OPTIONS, ("list", "--timeout")])
def test_a_bad_duration_is_one_line_naming_the_option_and_the_grammar(
    kshare: Callable[..., Result], command: str, option: str
) -> None:
    result = kshare(command, *COMMAND_ARGS[command], option, "soon")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kshare: error: {option}: invalid duration 'soon': {DURATION_FORMS}"
    ]


@pytest.mark.parametrize("value", ["30s", "500ms", "PT1M", "30000", "1m30s"])
def test_timeout_takes_the_grammar_and_a_bare_number_of_milliseconds_silently(
    kshare: Callable[..., Result], value: str
) -> None:
    result = kshare("list", "--timeout", value)
    assert result.stderr.splitlines() == [RESOLVED]


def test_the_defaults_need_no_warning(kshare: Callable[..., Result]) -> None:
    for command in ("dashboard", "exporter", "health"):
        result = kshare(command, *COMMAND_ARGS[command])
        assert result.stderr.splitlines() == [RESOLVED], command


@pytest.mark.parametrize("value", ["5000", "5s", "PT5S", "500ms"])
def test_consume_timeout_ms_takes_the_grammar_and_a_bare_number_silently(
    kshare: Callable[..., Result], value: str
) -> None:
    # --max-messages 0 is refused by the check that comes after --timeout-ms is read.
    result = kshare("consume", "-t", "t", "--timeout-ms", value, "--max-messages", "0")
    assert result.stderr.splitlines() == ["kshare: error: --max-messages must be at least 1"]


def test_consume_timeout_ms_refuses_a_bad_duration(kshare: Callable[..., Result]) -> None:
    result = kshare("consume", "-t", "t", "--timeout-ms", "soon")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kshare: error: --timeout-ms: invalid duration 'soon': {DURATION_FORMS}"
    ]


@pytest.mark.parametrize("value", ["PT2H", "2h", "90m", "1d12h"])
def test_by_duration_takes_the_same_grammar(kshare: Callable[..., Result], value: str) -> None:
    result = kshare("reset-offsets", "g", "--topic", "t", "--by-duration", value)
    assert result.stderr.splitlines() == [RESOLVED]


def test_by_duration_keeps_kafkas_form_without_a_bare_number(
    kshare: Callable[..., Result],
) -> None:
    result = kshare("reset-offsets", "g", "--topic", "t", "--by-duration", "30")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kshare: error: --by-duration: invalid duration '30': {DURATION_FORMS}"
    ]


@pytest.mark.parametrize(
    ("command", "option"),
    [
        *SECONDS_OPTIONS,
        ("list", "--timeout"),
        ("consume", "--timeout-ms"),
        ("reset-offsets", "--by-duration"),
    ],
)
def test_every_duration_option_says_the_grammar_in_its_help(command: str, option: str) -> None:
    from kshare_cli.cli.app import app

    result = CliRunner().invoke(app, [command, "--help"])
    # The help is wrapped to the terminal, at spaces and after hyphens.
    text = " ".join(re.sub(r"-\n\s+", "-", result.stdout).split())
    start = text.index(f"{option} DURATION ")
    assert DURATION_EXAMPLES in text[start : text.find(" --", start + len(option))]


def test_reading_a_duration_with_a_unit_loads_neither_pendulum_nor_fractions_for_help() -> None:
    # Every command imports the grammar (its --timeout help); only ISO-8601 and
    # date-times need pendulum, only a duration with a unit needs fractions.
    code = (
        "import sys\n"
        "sys.argv = ['kshare', 'list', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from kshare_cli.cli.common import parse_timeout\n"
        "parse_timeout('30000')\n"
        "sys.stderr.write(repr(sorted(m for m in ('pendulum', 'fractions') if m in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stderr == "[]"
