"""The layers of DESIGN.md, proven: import-linter's contracts hold, and heavy UI code stays out.

A command that answers in a fraction of a second cannot afford to import the
Textual dashboard; the subprocess test catches an accidental import the
contracts alone would allow.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_command_line_does_not_load_textual_or_the_sandbox() -> None:
    code = (
        "import sys, kshare_cli.cli.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual' "
        "or m.startswith('kshare_cli.sandbox.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
