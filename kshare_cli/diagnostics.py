"""The one writer of stderr: errors, warnings, progress and ``--debug`` tracebacks.

stdout carries data and nothing else; everything meant for the operator comes
through here, and every write passes ``_write``, which replaces each secret the
settings hold (a SASL password, an SSL key password, an OAuth client secret) by
``***``. Redacting in the writer rather than at each call site is what makes
"kshare never prints a secret" a property of the program instead of a habit of
its authors: a new message cannot forget it.

Secrets are remembered by the command edge as soon as the settings are read
(``remember_secrets``); the edge forgets them when a command starts, so one
process that runs several commands (a test run) does not carry one command's
secrets into another's output. This module imports nothing but the standard
library: every layer may use it, and ``kshare --help`` pays nothing for it.
"""

from __future__ import annotations

import re
import sys
import threading
import traceback
from collections.abc import Iterable

__all__ = [
    "debug_traceback",
    "error",
    "forget_secrets",
    "is_debug",
    "progress",
    "redact",
    "remember_secrets",
    "set_debug",
    "warning",
]

#: Secrets shorter than this are replaced only where they stand alone: a one-letter test
#: password replaced everywhere turned "bootstrap" into "***ootstrap" in error lines.
_SHORT_SECRET = 8
_REDACTED = "***"

_secrets: set[str] = set()
_debug = False
# Progress lines come from worker threads too (the exporter, librdkafka's logger): one
# write at a time keeps each line whole.
_lock = threading.Lock()


def remember_secrets(values: Iterable[str]) -> None:
    """Add secret values to hide from every later write (empty ones are ignored)."""
    _secrets.update(value for value in values if value)


def forget_secrets() -> None:
    """Hide nothing any more: a new command starts with its own settings' secrets."""
    _secrets.clear()


def set_debug(on: bool) -> None:
    """``--debug``: tracebacks are written (redacted) beside the one-line errors."""
    global _debug
    _debug = on


def is_debug() -> bool:
    """Whether ``--debug`` is on for the running command."""
    return _debug


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret (by default, every remembered one) replaced by ``***``.

    A long secret is replaced wherever it occurs. A short one only where no letter or
    digit touches it, so ordinary words survive while ``password='b'`` is still hidden.
    """
    known = _secrets if secrets is None else secrets
    for secret in sorted(known, key=len, reverse=True):
        if not secret:
            continue
        if len(secret) >= _SHORT_SECRET:
            text = text.replace(secret, _REDACTED)
        else:
            alone = rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])"
            text = re.sub(alone, _REDACTED, text)
    return text


def error(message: str) -> None:
    """One ``kshare: error:`` line: a failure, of the command or of one group or partition."""
    _write(f"kshare: error: {message}\n")


def warning(message: str) -> None:
    """One ``kshare: warning:`` line: something the operator should know; the command goes on."""
    _write(f"kshare: warning: {message}\n")


def progress(text: str) -> None:
    """``text`` exactly as given: a note with its own prefix, or a progress line that may
    end without a newline (to be rewritten in place)."""
    _write(text)


def debug_traceback(failure: BaseException) -> None:
    """With ``--debug``, the failure's traceback; without, nothing."""
    if _debug:
        _write("".join(traceback.format_exception(failure)))


def _write(text: str) -> None:
    """The only place kshare writes to stderr. ``sys.stderr`` is looked up at each write,
    so a test harness that swaps it sees every line."""
    redacted = redact(text)
    with _lock:
        stream = sys.stderr
        stream.write(redacted)
        stream.flush()
