"""Reset plan files: the CSV that ``--export`` writes and ``--from-file`` reads.

The format is Kafka's (``GroupOffsetsResetter`` and ``CsvUtils`` in Kafka 4.4): one
partition per line, ``topic,partition,offset`` for one group or
``group,topic,partition,offset`` for several, no header. A plan kshare writes is read
by Kafka's tool and the other way round; in particular fields are quoted exactly as
Kafka's Jackson ``CsvMapper`` quotes them, so the bytes are the same as Kafka's
``--export`` output for the same plan.

kshare also reads, as its own extension, what people add to a CSV they edit by hand:
a header line (``topic,partition,offset`` or ``group,topic,partition,offset``), blank
lines, ``#`` comment lines and CRLF line ends. It writes none of them in ``--export``
plans, because Kafka's tool would not read them. The one exception is a rollback plan:
its ``#`` header says what applying it restores and what it delivers again (a start
offset, not per-record acknowledgements), which an operator must read before using it;
for Kafka's tool, strip it first (``grep -v '^#'``).

A rollback plan also records, in one ``# finished before the reset: {JSON}`` line per
share-partition (``write_rollback_history``, ``read_rollback_history``), which records
the group had finished (acknowledged or archived) when the reset it undoes was planned.
A reset clears those states, and Kafka prunes the state-topic records that held them
within minutes, so the file is the one durable place that still knows them: applying
the plan counts what it delivers again and skips from them, as its note does.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from kshare_cli.errors import UsageError

__all__ = [
    "PlanEntry",
    "RollbackHistory",
    "read_plan",
    "read_rollback_history",
    "write_plan",
    "write_rollback_history",
]

NO_GROUP_FIELDS: Final = ("topic", "partition", "offset")
WITH_GROUP_FIELDS: Final = ("group", "topic", "partition", "offset")

_MAX_PARTITION: Final = 2**31 - 1  # a Java int
_MAX_OFFSET: Final = 2**63 - 1  # a Java long
_NUMBER: Final = re.compile(r"[ \t]*[0-9]+[ \t]*")
# Kafka's Topic.validate: legal characters, at most 249 of them, not "." or "..".
_TOPIC: Final = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
HISTORY_PREFIX: Final = "# finished before the reset: "
"""How a rollback plan's line recording one share-partition's finished records starts."""

# Jackson's CsvEncoder with CsvMapper's defaults (STRICT_CHECK_FOR_QUOTING off) quotes a
# string longer than 24 UTF-16 units without looking at it, and a shorter one that
# holds a character below the first "safe" one (one past the largest of the column
# separator ',', the quote '"' and the line feed, so below '-') or a backslash.
_JACKSON_MAX_QUOTE_CHECK: Final = 24
_JACKSON_MIN_SAFE: Final = chr(max(ord(","), ord('"'), ord("\n")) + 1)


@dataclass(frozen=True, slots=True, order=True)
class PlanEntry:
    """One share partition's new start offset in a plan; orders as a plan file lists it."""

    group: str
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class RollbackHistory:
    """What a rollback plan records of one share-partition before the reset it undoes.

    Every offset below ``finished_below`` (the resume point the plan restores) was
    finished, that is acknowledged or archived; at or above it, the inclusive
    ``finished`` ranges were (None: unknown, the in-flight window could not be read).
    ``reset_to`` is the start offset that reset moved to: what the group finishes from
    there on is in the state topic again.
    """

    group: str
    topic: str
    partition: int
    reset_to: int
    finished_below: int
    finished: tuple[tuple[int, int], ...] | None


def write_plan(entries: Iterable[PlanEntry], *, with_group: bool) -> str:
    """The plan as Kafka 4.4's ``--from-file`` reads it and its ``--export`` writes it.

    One line per entry, sorted by group, topic and partition, ``\\n`` line ends, a final
    newline, no header. ``with_group=False`` writes ``topic,partition,offset`` (the
    only form Kafka's share-group tool exports); then every entry must belong to one
    group, or a ValueError says the caller mixed groups. Kafka's reader splits a plan
    on line feeds before it reads the CSV, so it cannot read back a group id that holds
    one; kshare can.
    """
    ordered = sorted(entries)
    if not with_group and len({entry.group for entry in ordered}) > 1:
        raise ValueError("a topic,partition,offset plan holds one group's entries only")
    lines: list[str] = []
    for entry in ordered:
        fields = [_jackson_field(entry.topic), str(entry.partition), str(entry.offset)]
        if with_group:
            fields.insert(0, _jackson_field(entry.group))
        lines.append(",".join(fields) + "\n")
    return "".join(lines)


def read_plan(text: str, *, group: str | None, source: str = "<plan>") -> tuple[PlanEntry, ...]:
    """The entries of a plan file, sorted by group, topic and partition.

    The format follows Kafka's rule, decided by the first entry: three fields
    (``topic,partition,offset``) are ``group``'s entries, and need ``group``; four
    (``group,topic,partition,offset``) name their group, and entries for groups other
    than ``group`` are kept (the caller chooses what to do with them). Every other line
    must have the same number of fields. A partition listed twice with the same offset
    is kept once.

    Raises UsageError naming ``source`` and the line: a wrong number of fields, a
    partition or offset that is not a non-negative integer, an empty or illegal topic
    name, an empty group, malformed quoting, a partition listed twice with different
    offsets, a three-field plan without ``group``, or a file with no entries.
    """
    expected: int | None = None
    offsets: dict[tuple[str, str, int], tuple[int, int]] = {}
    for line_number, fields in _records(text, source):
        if expected is None:
            if tuple(field.strip().lower() for field in fields) in (
                NO_GROUP_FIELDS,
                WITH_GROUP_FIELDS,
            ):
                expected = len(fields)
                continue
            if len(fields) not in (3, 4):
                raise _error(
                    source,
                    line_number,
                    f"expected {','.join(NO_GROUP_FIELDS)} or {','.join(WITH_GROUP_FIELDS)},"
                    f" found {_count(len(fields))}",
                )
            expected = len(fields)
        if len(fields) != expected:
            layout = NO_GROUP_FIELDS if expected == 3 else WITH_GROUP_FIELDS
            raise _error(
                source,
                line_number,
                f"expected {expected} fields ({','.join(layout)}) as on the first line,"
                f" found {_count(len(fields))}",
            )
        entry = _entry(fields, group, source, line_number)
        key = (entry.group, entry.topic, entry.partition)
        earlier = offsets.get(key)
        if earlier is not None and earlier[0] != entry.offset:
            raise _error(
                source,
                line_number,
                f"{entry.topic}:{entry.partition} of group {_shown(entry.group)} is listed again"
                f" with offset {entry.offset}; line {earlier[1]} says {earlier[0]}",
            )
        offsets.setdefault(key, (entry.offset, line_number))
    if not offsets:
        raise UsageError(
            f"{source}: no entries; expected lines of {','.join(NO_GROUP_FIELDS)}"
            f" or {','.join(WITH_GROUP_FIELDS)}"
        )
    return tuple(
        PlanEntry(group_id, topic, partition, offset)
        for (group_id, topic, partition), (offset, _) in sorted(offsets.items())
    )


def write_rollback_history(histories: Iterable[RollbackHistory]) -> str:
    """One ``# finished before the reset: {JSON}`` line per share-partition, sorted.

    JSON escapes line breaks, so any group id stays on its line, and a reader that
    skips ``#`` lines (kshare's plan reader) reads the plan as if they were not there.
    """
    lines = []
    for history in sorted(histories, key=lambda h: (h.group, h.topic, h.partition)):
        fields = {
            "group": history.group,
            "topic": history.topic,
            "partition": history.partition,
            "reset_to": history.reset_to,
            "finished_below": history.finished_below,
            "finished": None if history.finished is None else [list(r) for r in history.finished],
        }
        lines.append(HISTORY_PREFIX + json.dumps(fields) + "\n")
    return "".join(lines)


def read_rollback_history(
    text: str, *, group: str, source: str = "<plan>"
) -> dict[tuple[str, int], RollbackHistory]:
    """(topic, partition) -> what the rollback plan recorded for ``group``; empty for a
    plan that is not kshare's rollback plan (an export, Kafka's, one written by hand).

    Raises UsageError naming ``source`` and the line for a history line that does not
    read as one (a hand edit that went wrong): counting without it would be wrong.
    """
    comments: list[tuple[int, str]] = []
    for _ in _records(text, source, comments):
        pass
    found: dict[tuple[str, int], RollbackHistory] = {}
    for line_number, line in comments:
        stripped = line.strip()
        if not stripped.startswith(HISTORY_PREFIX.strip()):
            continue
        history = _history(stripped[len(HISTORY_PREFIX.strip()) :], source, line_number)
        if history.group == group:
            found[(history.topic, history.partition)] = history
    return found


def _history(text: str, source: str, line_number: int) -> RollbackHistory:
    try:
        fields: Any = json.loads(text)
        finished = fields["finished"]
        history = RollbackHistory(
            _text_of(fields["group"]),
            _text_of(fields["topic"]),
            _offset_of(fields["partition"]),
            _offset_of(fields["reset_to"]),
            _offset_of(fields["finished_below"]),
            None
            if finished is None
            else tuple((_offset_of(first), _offset_of(last)) for first, last in finished),
        )
    except (ValueError, TypeError, KeyError) as error:
        raise _error(
            source,
            line_number,
            f"a '{HISTORY_PREFIX.strip()}' line that does not read ({error}); "
            "restore it from the saved plan or delete the line",
        ) from None
    if history.finished is not None and any(
        last < first or first < history.finished_below for first, last in history.finished
    ):
        raise _error(
            source, line_number, "finished ranges must be first <= last, at or above finished_below"
        )
    return history


def _text_of(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {value!r}")
    return value


def _offset_of(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_OFFSET:
        raise ValueError(f"expected an offset, found {value!r}")
    return value


def _jackson_field(value: str) -> str:
    utf16_length = len(value.encode("utf-16-le")) // 2
    if utf16_length > _JACKSON_MAX_QUOTE_CHECK or any(
        character < _JACKSON_MIN_SAFE or character == "\\" for character in value
    ):
        return '"' + value.replace('"', '""') + '"'
    return value


def _records(
    text: str, source: str, comments: list[tuple[int, str]] | None = None
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each CSV record, skipping blank and ``#`` comment lines
    (appended, with their line numbers, to ``comments`` when given).

    A quoted field may span lines (a group id may hold a line feed), so records are
    read by the csv module from the physical lines; a line is only taken for a blank or
    a comment where a record would start.
    """
    lines = _LINE.findall(text)
    feed = iter(lines)
    reader = csv.reader(feed, strict=True)
    consumed = 0  # lines taken from `feed`, by us or by the reader
    taken_by_us = 0
    while consumed < len(lines):
        line = lines[consumed]
        if not line.strip() or line.lstrip().startswith("#"):
            if comments is not None and line.strip():
                comments.append((consumed + 1, line))
            next(feed)
            taken_by_us += 1
            consumed += 1
            continue
        line_number = consumed + 1
        try:
            fields = next(reader)
        except csv.Error as error:
            raise _error(source, line_number, f"malformed CSV: {error}") from None
        consumed = taken_by_us + reader.line_num
        yield line_number, fields


def _entry(fields: list[str], group: str | None, source: str, line_number: int) -> PlanEntry:
    if len(fields) == 3:
        if group is None:
            raise _error(
                source,
                line_number,
                "a topic,partition,offset plan names no group, and none was given",
            )
        group_id = group
        topic, partition, offset = fields
    else:
        group_id, topic, partition, offset = fields
        if not group_id:
            raise _error(source, line_number, "the group is empty")
    if not topic:
        raise _error(source, line_number, "the topic is empty")
    if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
        raise _error(
            source,
            line_number,
            f"{_shown(topic)} is not a topic name (at most 249 of a-z A-Z 0-9 . _ -)",
        )
    return PlanEntry(
        group_id,
        topic,
        _number(partition, "partition", _MAX_PARTITION, source, line_number),
        _number(offset, "offset", _MAX_OFFSET, source, line_number),
    )


def _number(field: str, what: str, largest: int, source: str, line_number: int) -> int:
    if not _NUMBER.fullmatch(field) or len(field) > 40 or int(field) > largest:
        raise _error(
            source,
            line_number,
            f"the {what} {_shown(field)} is not an integer from 0 to {largest}",
        )
    return int(field)


def _shown(field: str) -> str:
    """A field as an error message quotes it: repr'd, so a line feed stays on the line,
    and cut short, so one absurd field does not flood the terminal."""
    return repr(field) if len(field) <= 60 else repr(field[:57]) + "..."


def _count(fields: int) -> str:
    return "1 field" if fields == 1 else f"{fields} fields"


def _error(source: str, line_number: int, message: str) -> UsageError:
    return UsageError(f"{source}: line {line_number}: {message}")
