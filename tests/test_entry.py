"""The console script's entry: a Ctrl-C while kshare starts is one line and exit 130."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Sends the process a real SIGINT at the moment Python looks for the command tree's first
#: module: the window in which an operator's Ctrl-C once produced an import traceback.
_INTERRUPT_DURING_IMPORT = textwrap.dedent(
    """
    import signal, sys

    class SigintOnImport:
        def find_spec(self, name, path=None, target=None):
            if name == "kshare_cli.cli.app":
                sys.meta_path.remove(self)
                signal.raise_signal(signal.SIGINT)
            return None

    sys.meta_path.insert(0, SigintOnImport())
    sys.argv = ["kshare", "list"]
    from kshare_cli.entry import main
    main()
    """
)


def test_ctrl_c_while_the_commands_load_is_one_line_and_exit_130() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_DURING_IMPORT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "kshare: interrupted\n")


def test_the_installed_script_enters_through_the_entry_module() -> None:
    script = Path(sys.executable).with_name("kshare").read_text()
    assert "from kshare_cli.entry import main" in script
