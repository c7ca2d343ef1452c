"""``kshare --help`` must be quick (issue 3: under 0.2 s); what it imports decides that.

Timing in a shared CI machine is noisy, so the suite asserts the cause instead:
building the help of every command loads none of the heavy modules (asyncio,
kio, the client, the renderers, Rich, Textual, pydantic). The wall time itself
is printed by benchmarks/cli_startup.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "asyncio",
    "kio",
    "rich",
    "textual",
    "pydantic",
    "confluent_kafka",
    "kshare_cli.wire",
    "kshare_cli.admin",
    "kshare_cli.render",
    "kshare_cli.connect",
    "kshare_cli.sandbox",
    "kshare_cli.pipeline",
    "kshare_cli.tui",
    "kshare_cli.consumer",
    "kshare_cli.services",
    "kshare_cli.dataplane",
    "kshare_cli.state",
    "pyspark",
    "pyarrow",
)


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["list", "--help"],
        ["describe", "--help"],
        ["audit", "--help"],
        ["audit", "archived", "--help"],
        ["inflight", "--help"],
        ["dashboard", "--help"],
        ["consume", "--help"],
        ["reset-offsets", "--help"],
        ["sandbox", "--help"],
    ],
)
def test_help_loads_nothing_heavy(argv: list[str]) -> None:
    code = (
        "import sys\n"
        f"sys.argv = ['kshare', *{argv!r}]\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"heavy = {HEAVY!r}\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "Usage: kshare" in result.stdout
    assert result.stderr == "[]"
