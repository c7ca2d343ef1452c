"""The console script's edge: usage errors are one line and exit 2, like every other failure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

KSHARE = Path(sys.executable).with_name("kshare")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["list", "-o", "xml"], "kshare: error: Invalid value for '--output' / '-o': 'xml'"),
        (["lisst"], "kshare: error: No such command 'lisst'."),
        (["describe", "--bogus"], "kshare: error: No such option: --bogus"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], expected: str) -> None:
    result = subprocess.run([str(KSHARE), *argv], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(expected)
    assert lines[0].endswith("--help')")


def test_bare_kshare_shows_help_on_stderr_and_exits_2() -> None:
    result = subprocess.run([str(KSHARE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith("Usage: kshare [OPTIONS] COMMAND [ARGS]...")
    assert "describe" in result.stderr


def test_help_and_version_exit_0_on_stdout() -> None:
    helped = subprocess.run([str(KSHARE), "describe", "-h"], capture_output=True, text=True)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: kshare describe")
    version = subprocess.run([str(KSHARE), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("kshare ")
