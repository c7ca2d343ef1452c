"""``-o``: the output formats every command and every renderer share, declared once.

A top-level module, like ``errors.py``: the commands declare ``-o`` with it while
building ``--help``, which must not import the renderers (tests/cli/test_startup.py),
and the renderers dispatch on it. One enum, so no option can offer a format that no
renderer knows.
"""

from __future__ import annotations

import enum

__all__ = ["OutputFormat"]


class OutputFormat(enum.StrEnum):
    """``-o``: ``plain`` is Kafka's own text layout, for scripts written against it; the rest
    are kshare's."""

    table = "table"
    plain = "plain"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    yaml = "yaml"
