"""librdkafka's log lines: silenced for every client, or on stderr with ``--debug``.

librdkafka logs to stderr by default, which would break "one stderr line per
error" for the commands and fill Spark's task logs with noise, while every
error that matters comes back through the API. Each client gets the quiet
logger unless its caller passes another (``--debug`` passes :func:`debug_logger`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from kshare_cli import diagnostics

__all__ = [
    "DEBUG_LOGGER",
    "QUIET_LOGGER",
    "debug_logger",
    "quiet_logger",
    "with_debug_logger",
]

QUIET_LOGGER: Final = "kshare_cli.librdkafka"
DEBUG_LOGGER: Final = "kshare_cli.librdkafka.debug"


def quiet_logger() -> logging.Logger:
    """A logger that drops librdkafka's lines (configuration key ``logger``)."""
    logger = logging.getLogger(QUIET_LOGGER)
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger


class _StderrHandler(logging.Handler):
    """Log lines through kshare's one stderr writer, which hides every secret it knows."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 -- logging's contract: a bad record is reported, not raised
            self.handleError(record)
            return
        diagnostics.progress(f"{line}\n")


def debug_logger() -> logging.Logger:
    """With --debug, librdkafka's log lines go to stderr, through the writer that redacts
    (they name brokers and should never hold a secret; the writer makes sure)."""
    logger = logging.getLogger(DEBUG_LOGGER)
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("librdkafka: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
    return logger


def with_debug_logger(config: Mapping[str, object], debug: bool) -> dict[str, object]:
    """A copy of a client's ``config``; with ``debug`` (--debug) it logs to :func:`debug_logger`."""
    effective = dict(config)
    if debug:
        effective["logger"] = debug_logger()
    return effective
