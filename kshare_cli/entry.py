"""The console script's entry point: a Ctrl-C during start-up is exit 130, not a traceback.

Importing the command tree takes a noticeable part of a second. A Ctrl-C in that window
(an operator changing their mind, a script's SIGINT, a test harness stopping a run that
has just begun) raised KeyboardInterrupt inside an import, which Python printed as a
traceback. This module imports nothing before it can catch that; the line goes through
the one stderr writer, :mod:`kshare_cli.diagnostics`.
"""

from __future__ import annotations


def main() -> None:
    """``kshare``: import the app and run it; an interrupt anywhere is one line, exit 130."""
    try:
        from kshare_cli.cli.app import main as run

        run()
    except KeyboardInterrupt:
        # Imported only now: the writer is small, but nothing may delay the first import.
        from kshare_cli import diagnostics

        diagnostics.progress("kshare: interrupted\n")
        raise SystemExit(130) from None
