"""Kafka's rule for topic names, checked once for every command that takes one.

Kafka's ``org.apache.kafka.common.internals.Topic.validate`` accepts 1 to 249
characters of ASCII letters, digits, ``.``, ``_`` and ``-``, and neither ``.`` nor
``..`` (249 because a partition directory appends ``-<partition>`` and file systems
cap a name at 255). A name that breaks it can never exist on a cluster, so every
command refuses it before connecting, in the same words, instead of letting a
broker answer INVALID_TOPIC_EXCEPTION, a timeout or a misleading "not found".

This module sits at the package's top level, beside ``errors``, because the
command line, the admin layer (plan files) and the data plane all check names
and none of them may import another.
"""

from __future__ import annotations

import re
from typing import Final

from kshare_cli.errors import UsageError

__all__ = ["MAX_TOPIC_NAME_LENGTH", "check_topic_name", "topic_name_problem"]

MAX_TOPIC_NAME_LENGTH: Final = 249
_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+")
_RULE: Final = f"1 to {MAX_TOPIC_NAME_LENGTH} of ASCII letters, digits, '.', '_' and '-'"
# Longer names are cut in messages: a 300-character name would make the one error line
# wrap across a terminal.
_SHOWN: Final = 40


def _shown(name: str) -> str:
    return repr(name) if len(name) <= _SHOWN else f"{name[:_SHOWN]!r}… ({len(name)} characters)"


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a Kafka topic, in an operator's words; None when it can."""
    if not name:
        return "a topic name cannot be empty"
    if name in (".", ".."):
        return f"{name!r} is not a topic name (Kafka reserves '.' and '..')"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"{_shown(name)} is not a topic name: {_RULE}"
    if not _LEGAL.fullmatch(name):
        bad = "".join(sorted(set(_LEGAL.sub("", name))))
        return f"{_shown(name)} is not a topic name: it has {bad!r}; {_RULE}"
    return None


def check_topic_name(name: str, option: str = "--topic") -> str:
    """``name`` when it can be a topic; else UsageError naming ``option`` (exit 2)."""
    problem = topic_name_problem(name)
    if problem is not None:
        raise UsageError(f"{option}: {problem}")
    return name
