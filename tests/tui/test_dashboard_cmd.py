"""``kshare dashboard`` as a command: its options, and failures reported before the screen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kshare_cli.cli.app import app
from kshare_cli.cli.dashboard_cmd import parse_seconds
from kshare_cli.errors import UsageError
from tests.tui.scenario import LiveGroup

ROOT = Path(__file__).resolve().parents[2]


def invoke(tmp_path: Path, *args: str) -> Result:
    environment = {
        "KSHARE_BOOTSTRAP_SERVERS": None,
        "KSHARE_COMMAND_CONFIG": None,
        "KSHARE_CONFIG": str(tmp_path / "config.toml"),
    }
    return CliRunner().invoke(app, ["dashboard", *args], env=environment)


def one_error_line(result: Result, *fragments: str) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kshare: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert result.stdout == ""
    return lines[0]


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--refresh", "abc", "--refresh: invalid duration 'abc': expected"),
        ("--refresh", "0", "between 0.5 and 3600 seconds"),
        ("--refresh", "nan", "between 0.5 and 3600 seconds"),
        ("--refresh", "7200", "between 0.5 and 3600 seconds"),
        ("--stall-after", "-5", "--stall-after must be between"),
        ("--timeout", "soon", "--timeout"),
    ],
)
def test_bad_values_are_one_line_and_exit_2_before_connecting(
    tmp_path: Path, option: str, value: str, fragment: str
) -> None:
    # Port 1 refuses connections: reaching it would be exit 3, so exit 2 proves no I/O.
    result = invoke(tmp_path, option, value, "-b", "127.0.0.1:1")
    assert result.exit_code == 2
    one_error_line(result, fragment)


def test_seconds_accept_a_unit_suffix() -> None:
    assert parse_seconds("--refresh", "2.5s", 0.5, 10) == 2.5
    with pytest.raises(UsageError):
        parse_seconds("--refresh", "2ms", 0.5, 10)


def test_an_unreachable_cluster_is_exit_3_before_the_screen(tmp_path: Path) -> None:
    result = invoke(tmp_path, "-b", "127.0.0.1:1", "--timeout", "5s")
    assert result.exit_code == 3
    one_error_line(result, "127.0.0.1:1")


def test_a_missing_group_is_exit_5_before_the_screen(tmp_path: Path, live_group: LiveGroup) -> None:
    missing = f"{live_group.group}-missing"
    args = ["-b", live_group.bootstrap]
    if live_group.command_config is not None:
        args += ["--command-config", str(live_group.command_config)]
    result = invoke(tmp_path, missing, *args)
    assert result.exit_code == 5
    one_error_line(result, missing, "not found")
    # The group that exists passes the check; without a terminal the command then stops.
    result = invoke(tmp_path, live_group.group, *args)
    assert result.exit_code == 2
    one_error_line(result, "needs a terminal")


def test_help_does_not_load_textual() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['kshare', 'dashboard', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'asyncio', 'confluent_kafka') or m.startswith('kshare_cli.tui'))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "--refresh DURATION" in result.stdout and "--stall-after" in result.stdout
    assert result.stderr == "[]"
