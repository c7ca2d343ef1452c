"""``sasl.jaas.config`` strings, tokenized the way Kafka's ``JaasConfig`` tokenizes them.

Kafka parses ``sasl.jaas.config`` with a ``java.io.StreamTokenizer`` (C-style escapes
in quoted values, ``//`` and ``/* */`` comments, and a bare ``/`` that starts a
comment too). The tokenizer below follows that algorithm step by step; the tests
hold it to what Java 17 printed for the same input. Error messages never quote a
value: an option's value may be a password.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from kshare_cli.connect.secret import REDACTED, is_secret_name

__all__ = ["JaasEntry", "JaasSyntaxError", "parse_jaas", "parse_jaas_entries", "redact_jaas"]

_WORD = -3
_QUOTED = -4  # Java reports the quote character itself; one code is enough here.
_NUMBER = -2
_EOF = -1


def _char_class(char: str) -> str:
    """StreamTokenizer's character table after ``JaasConfig``'s ``wordChars('-', '_', '$')``."""
    code = ord(char)
    if code <= 0x20:
        return "blank"
    if "0" <= char <= "9" or char in ".-":
        return "digit"  # '-' is a word character too, but the number check comes first
    if char.isascii() and char.isalpha() or char in "_$" or 160 <= code:
        return "word"
    if char in "\"'":
        return "quote"
    if char == "/":
        return "comment"
    return "ordinary"


@dataclass(frozen=True, slots=True)
class _Token:
    kind: int  # _WORD, _QUOTED, _NUMBER, _EOF, or ord() of an ordinary character
    text: str | None  # StreamTokenizer.sval: set for words and quoted strings only


_C_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}


def _jaas_tokens(text: str) -> Iterator[_Token]:
    """Tokens as ``java.io.StreamTokenizer`` yields them for ``JaasConfig``.

    Quoted strings end at the matching quote or at the end of the line (Java does
    not complain about a missing closing quote), and take the C escapes plus octal
    ``\\0``..``\\377``.
    """
    index = 0
    end = len(text)
    while True:
        while index < end and _char_class(text[index]) == "blank":
            index += 1
        if index >= end:
            yield _Token(_EOF, None)
            return
        kind = _char_class(text[index])
        if kind == "comment":
            after = _after_comment(text, index)
            if after is None:
                yield _Token(_EOF, None)
                return
            index = after
            continue
        scan = _SCANNERS.get(kind, _ordinary)
        token, index = scan(text, index)
        yield token


def _peek(text: str, at: int) -> str | None:
    return text[at] if at < len(text) else None


def _number(text: str, index: int) -> tuple[_Token, int]:
    """A number (its value unused: ``JaasConfig`` refuses it), or a lone ``-``."""
    if text[index] == "-":
        following = _peek(text, index + 1)
        if following is None or not (following == "." or "0" <= following <= "9"):
            return _Token(ord("-"), None), index + 1
        index += 1
    seen_dot = False
    while index < len(text):
        char = text[index]
        if char == "." and not seen_dot:
            seen_dot = True
        elif not "0" <= char <= "9":
            break
        index += 1
    return _Token(_NUMBER, None), index


def _word(text: str, index: int) -> tuple[_Token, int]:
    start = index
    index += 1
    while index < len(text) and _char_class(text[index]) in ("word", "digit"):
        index += 1
    return _Token(_WORD, text[start:index]), index


def _quoted(text: str, index: int) -> tuple[_Token, int]:
    """A quoted string, to its quote or the end of the line, its escapes decoded."""
    end = len(text)
    quote = text[index]
    index += 1
    out: list[str] = []
    while index < end and text[index] not in (quote, "\n", "\r"):
        char = text[index]
        index += 1
        if char != "\\":
            out.append(char)
            continue
        decoded, index = _escape(text, index)
        out.append(decoded)
    if index < end and text[index] == quote:
        index += 1
    return _Token(_QUOTED, "".join(out)), index


def _escape(text: str, index: int) -> tuple[str, int]:
    """The character a backslash at ``index - 1`` stands for: a C escape or octal."""
    escaped = _peek(text, index)
    index += 1
    if escaped is None:
        return "\uffff", index  # Java casts read()'s -1 to a char
    if not "0" <= escaped <= "7":
        return _C_ESCAPES.get(escaped, escaped), index
    value = int(escaped)
    if (second := _peek(text, index)) is not None and "0" <= second <= "7":
        value = value * 8 + int(second)
        index += 1
        third = _peek(text, index)
        if third is not None and "0" <= third <= "7" and escaped <= "3":
            value = value * 8 + int(third)
            index += 1
    return chr(value), index


def _after_comment(text: str, index: int) -> int | None:
    """Where the comment starting at ``index`` ends; None for a ``/*`` never closed."""
    end = len(text)
    if _peek(text, index + 1) == "*":
        close = text.find("*/", index + 2)
        return None if close < 0 else close + 2
    # '//', and (as '/' is StreamTokenizer's default comment character) a lone '/'. For
    # the lone one Java has already read the next character, even a line end, so the
    # comment runs to the end of the *following* line in that case.
    index += 2
    while index < end and text[index] not in "\r\n":
        index += 1
    return index


def _ordinary(text: str, index: int) -> tuple[_Token, int]:
    return _Token(ord(text[index]), None), index + 1


_SCANNERS: dict[str, Callable[[str, int], tuple[_Token, int]]] = {
    "digit": _number,
    "word": _word,
    "quote": _quoted,
}


class JaasSyntaxError(ValueError):
    """A ``sasl.jaas.config`` Kafka would reject; the message never contains a value."""


# Option names an error message may repeat. Anything else might be a misplaced password.
_NAMEABLE_OPTIONS = frozenset(
    {"username", "password", "tokenauth", "clientId", "clientSecret", "scope", "serviceName"}
)


def _nameable(key: str | None) -> str:
    if key is not None and (key in _NAMEABLE_OPTIONS or key.startswith("unsecuredLogin")):
        return f"key '{key}'"
    return "an option"


@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One ``<LoginModule> <flag> (name=value)* ;`` entry of ``sasl.jaas.config``."""

    login_module: str
    control_flag: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"JaasEntry(login_module={self.login_module!r}, control_flag={self.control_flag!r}, "
            f"options=[{', '.join(map(repr, self.options))}])"
        )

    @property
    def module_name(self) -> str:
        """The class's simple name: shaded or relocated copies of Kafka's modules still match."""
        return self.login_module.rsplit(".", 1)[-1]


_CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")


def parse_jaas_entries(value: str) -> list[JaasEntry]:
    """Every entry of a JAAS configuration string, following Kafka's ``JaasConfig`` parser."""
    tokens = _jaas_tokens(value)
    entries: list[JaasEntry] = []
    token = next(tokens)
    while token.kind != _EOF:
        login_module = token.text
        token = next(tokens)
        if token.kind == _EOF:
            raise JaasSyntaxError("login module control flag not specified")
        if token.text is None:
            raise JaasSyntaxError("login module control flag is not available")
        if token.text.upper() not in _CONTROL_FLAGS:
            flag = token.text if token.kind == _WORD and token.text.isidentifier() else "?"
            raise JaasSyntaxError(
                f"invalid login module control flag '{flag}' "
                "(required, requisite, sufficient or optional)"
            )
        control_flag = token.text
        options: dict[str, str] = {}
        token = next(tokens)
        while token.kind not in (_EOF, ord(";")):
            key = token.text
            equals = next(tokens)
            option_value = next(tokens) if equals.kind == ord("=") else equals
            if equals.kind != ord("=") or option_value.kind == _EOF or option_value.text is None:
                raise JaasSyntaxError(f"value not specified for {_nameable(key)}")
            if key is not None:  # Java keeps a null key, which no login module reads
                options[key] = option_value.text
            token = next(tokens)
        if token.kind != ord(";"):
            raise JaasSyntaxError("JAAS config entry not terminated by semi-colon")
        if not login_module:
            raise JaasSyntaxError("login module not specified")
        entries.append(JaasEntry(login_module, control_flag, options))
        token = next(tokens)
    return entries


def parse_jaas(value: str) -> JaasEntry:
    """The single login module a client's ``sasl.jaas.config`` must name (``JaasContext``)."""
    entries = parse_jaas_entries(value)
    if not entries:
        raise JaasSyntaxError("login module not specified")
    if len(entries) != 1:
        raise JaasSyntaxError(f"contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def _quote_jaas(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(13), chr(92) + "r")}"'


def redact_jaas(value: str) -> str:
    """``sasl.jaas.config`` for display: module, flag and option names kept, secrets replaced.

    Usernames and unsecured-JWT claims stay visible (they are what an operator
    checks); options whose names suggest a secret become ``***``. Text that does
    not parse is replaced entirely: it cannot be redacted piecewise with confidence.
    """
    try:
        entries = parse_jaas_entries(value)
    except JaasSyntaxError:
        return REDACTED
    rendered = []
    for entry in entries:
        parts = [entry.login_module, entry.control_flag]
        for key, option in entry.options.items():
            shown = REDACTED if is_secret_name(key) else option
            parts.append(f"{key}={_quote_jaas(shown)}")
        rendered.append(" ".join(parts) + ";")
    return " ".join(rendered)
