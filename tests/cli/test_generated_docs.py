"""Completions and man pages are generated from the app; a stale checked-in copy fails here.

Regenerate with ``python scripts/generate_docs.py`` after changing a command.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_checked_in_completions_and_man_pages_match_the_app(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_docs.py"), "--root", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert generated, "the generator wrote nothing"
    checked_in = sorted(
        p.relative_to(ROOT)
        for folder in ("completions", "man")
        for p in (ROOT / folder).rglob("*")
        if p.is_file()
    )
    assert generated == checked_in, "regenerate: python scripts/generate_docs.py"
    for relative in generated:
        assert (tmp_path / relative).read_text() == (ROOT / relative).read_text(), (
            f"{relative} is stale: python scripts/generate_docs.py"
        )


def test_every_command_has_a_man_page_with_exit_codes() -> None:
    page = (ROOT / "man" / "kshare.1").read_text()
    assert ".SH EXIT STATUS" in page and ".B 130" in page
    assert (ROOT / "man" / "kshare-sandbox.1").exists()


def test_bash_completion_calls_kshare_back() -> None:
    script = (ROOT / "completions" / "kshare.bash").read_text()
    assert "_KSHARE_COMPLETE=complete_bash" in script
    assert "complete -o default -F _kshare_completion kshare" in script
