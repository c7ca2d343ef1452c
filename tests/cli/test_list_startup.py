"""``kshare list`` must cost little CPU (issue 17: under 0.25 s), and most of it is imports.

As with ``--help`` (tests/cli/test_startup.py), timing in a shared CI machine is
noisy, so this asserts the cause: a ``kshare list`` that connects and prints loads
none of the modules it does not need. The CPU time itself is printed by
benchmarks/cli_startup.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from kshare_cli.cli.app import COMMANDS
from tests.cli.conftest import Kshare, process_env

ROOT = Path(__file__).resolve().parents[2]

#: Modules a listing never uses.
NOT_FOR_LIST = (
    # reset-offsets' planning; only the type of its plan is named by render/.
    "kshare_cli.admin.reset",
    # The dashboard and the Spark audit.
    "textual",
    "pyspark",
    # Every other command's module: the root group builds a command only when it runs.
    *(f"kshare_cli.cli.{module}" for name, module, _ in COMMANDS if module != "list_cmd"),
)
#: Only a SCRAM login needs scramp (and importlib.metadata and asn1crypto under it).
SCRAM_ONLY = ("scramp",)
#: Only a table with a non-ASCII cell (or one that must fold) needs Rich's cell widths.
NON_ASCII_ONLY = ("rich",)


def test_list_loads_only_what_a_listing_needs(kshare: Kshare) -> None:
    argv = ["kshare", "list", *kshare.connection_args()]
    avoided = NOT_FOR_LIST + NON_ASCII_ONLY
    if kshare.command_config is None:
        avoided += SCRAM_ONLY
    code = (
        "import sys\n"
        f"sys.argv = {argv!r}\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
        "else:\n    code = 0\n"
        f"avoided = {avoided!r}\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if any(m == a or m.startswith(a + '.') for a in avoided))\n"
        "requests = sorted(m for m in sys.modules\n"
        "                  if m.startswith('kio.schema.') and m.endswith('.request'))\n"
        "sys.stderr.write(repr((code, loaded, requests)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=process_env(kshare.environment()),
    )
    code, loaded, requests = ast.literal_eval(result.stderr.splitlines()[-1])
    assert code == 0, result.stderr
    assert "share group" in result.stdout
    # The rule under the header is the table's own; a group id may be anyone's.
    cells = [line for line in result.stdout.splitlines() if not line.startswith("\u2500")]
    if not all(line.isascii() for line in cells):
        loaded = [name for name in loaded if name.partition(".")[0] not in NON_ASCII_ONLY]
    assert loaded == []
    # One version of each request is built; a field no version at hand has would send
    # wire.build through every version of the message (tens of ms of imports).
    apis = [name.split(".")[2] for name in requests]
    assert sorted(set(apis)) == sorted(apis), requests
