"""Java ``.properties`` files, read the way ``java.util.Properties.load`` reads them.

``kshare --command-config`` takes the very file an operator already passes to
``kafka-share-groups.sh --command-config``. A file that works with Kafka's tools
must mean the same thing here, quirks included: Kafka loads it with
``Properties.load(InputStream)`` (ISO-8859-1, ``\\uXXXX`` escapes, continuation
lines, three separators). The parser follows that algorithm step by step rather than
approximating it with regular expressions; the tests hold it to what Java 17 printed
for the same input.

Error messages never quote a value: a property's value may be a password.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from kshare_cli.errors import UsageError

__all__ = ["load_properties", "parse_properties"]

_BLANK = " \t\f"
_LINE_ENDS = "\r\n"


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (natural line number, raw logical line) exactly as ``Properties.LineReader`` does.

    A logical line is a natural line plus every line a trailing odd run of
    backslashes continues it onto. Leading blanks of each natural line are
    dropped; a line whose first non-blank character is ``#`` or ``!`` is a comment,
    but only where the logical line is still empty (so a line holding only ``\\``
    followed by ``#x`` is a comment, while ``a=\\`` followed by ``#x`` is a value).
    An empty continuation line ends the logical line.
    """
    position = 0
    end = len(text)
    line_number = 1  # of the natural line being read; for error messages only
    while True:
        buffer: list[str] = []
        first_line = line_number
        skip_blank = True
        appended_line_begin = False
        preceding_backslash = False
        while True:
            if position >= end:
                if buffer:
                    if preceding_backslash:
                        buffer.pop()
                    yield first_line, "".join(buffer)
                return
            char = text[position]
            position += 1
            if char == "\n" or (char == "\r" and text[position : position + 1] != "\n"):
                line_number += 1
            if skip_blank:
                if char in _BLANK:
                    continue
                if not appended_line_begin and char in _LINE_ENDS:
                    continue
                skip_blank = False
                appended_line_begin = False
            if not buffer and char in "#!":
                while position < end and text[position] not in _LINE_ENDS:
                    position += 1
                skip_blank = True
                continue
            if char not in _LINE_ENDS:
                if not buffer:
                    first_line = line_number
                buffer.append(char)
                preceding_backslash = not preceding_backslash if char == "\\" else False
                continue
            if not buffer:
                skip_blank = True
                continue
            if position >= end:
                if preceding_backslash:
                    buffer.pop()
                yield first_line, "".join(buffer)
                return
            if not preceding_backslash:
                yield first_line, "".join(buffer)
                break
            buffer.pop()
            skip_blank = True
            appended_line_begin = True
            preceding_backslash = False
            if char == "\r" and text[position] == "\n":
                position += 1
                line_number += 1


def _unescape(raw: str, line_number: int) -> str:
    """``Properties.loadConvert``: ``\\uXXXX``, ``\\t \\r \\n \\f``, any other ``\\c`` is ``c``.

    Java strings are UTF-16, so ``\\uD83D\\uDE00`` is one character; Python needs
    the pair joined explicitly.
    """
    if "\\" not in raw:
        return raw
    out: list[str] = []
    index = 0
    end = len(raw)
    while index < end:
        char = raw[index]
        index += 1
        if char != "\\":
            out.append(char)
            continue
        # LineReader never leaves an unescaped backslash at the end of a logical line.
        char = raw[index]
        index += 1
        if char == "u":
            digits = raw[index : index + 4]
            if len(digits) < 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise UsageError(f"line {line_number}: malformed \\uxxxx escape")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append({"t": "\t", "r": "\r", "n": "\n", "f": "\f"}.get(char, char))
    joined = "".join(out)
    if any("\ud800" <= c <= "\udfff" for c in joined):
        joined = joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined


def _split_key_value(line: str) -> tuple[str, str]:
    """``Properties.load0``: the key ends at an unescaped ``=``, ``:`` or blank.

    After the key, blanks and at most one ``=``/``:`` are skipped; everything else
    is the value (``a = = b`` gives the value ``= b``).
    """
    limit = len(line)
    key_length = 0
    value_start = limit
    has_separator = False
    preceding_backslash = False
    while key_length < limit:
        char = line[key_length]
        if char in "=:" and not preceding_backslash:
            value_start = key_length + 1
            has_separator = True
            break
        if char in _BLANK and not preceding_backslash:
            value_start = key_length + 1
            break
        preceding_backslash = not preceding_backslash if char == "\\" else False
        key_length += 1
    while value_start < limit:
        char = line[value_start]
        if char not in _BLANK:
            if not has_separator and char in "=:":
                has_separator = True
            else:
                break
        value_start += 1
    return line[:key_length], line[value_start:]


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # not blanks, not line ends


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text as ``java.util.Properties.load`` does; the last duplicate wins.

    Raises UsageError (naming the line, never the value) on a malformed ``\\uXXXX``, and,
    unlike Java, on a line holding control characters: that is a binary file (a keystore,
    say) given by mistake, which Java would read as keys of junk. Anything else Java
    accepts is accepted (a line without a separator is a key with an empty value); the
    settings parser then warns about names that are not client settings.
    """
    properties: dict[str, str] = {}
    for line_number, line in _logical_lines(text):
        if _CONTROL.search(line):
            # Java would load it (as a key of binary junk); no client setting looks like this,
            # so it is a keystore or some other file passed by mistake.
            raise UsageError(
                f"line {line_number} is not a property: it holds binary or control characters "
                "(is this the right file?)"
            )
        raw_key, raw_value = _split_key_value(line)
        key = _unescape(raw_key, line_number)
        value = _unescape(raw_value, line_number)
        properties.pop(key, None)
        properties[key] = value
    return properties


def load_properties(path: Path, *, label: str = "--command-config") -> dict[str, str]:
    """Read a ``--command-config`` file as Kafka's ``Utils.loadProps`` does: ISO-8859-1 bytes.

    Kafka hands Java an InputStream, so a UTF-8 ``é`` reaches the client as two
    characters; kshare reads it the same way, so a password that works (or fails)
    with Kafka's tools works (or fails) here too. Non-ASCII text belongs in
    ``\\uXXXX`` escapes.
    """
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"cannot read {label} {path}: it is a directory") from None
    except OSError as error:
        raise UsageError(f"cannot read {label} {path}: {error.strerror or error}") from None
    try:
        return parse_properties(data.decode("iso-8859-1"))
    except UsageError as error:
        raise UsageError(f"{label} {path}: {error}") from None
