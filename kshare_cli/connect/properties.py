"""Java ``.properties`` files and ``sasl.jaas.config`` strings, read the way Java reads them.

``kshare --command-config`` takes the very file an operator already passes to
``kafka-share-groups.sh --command-config``. A file that works with Kafka's tools
must mean the same thing here, quirks included: Kafka loads it with
``Properties.load(InputStream)`` (ISO-8859-1, ``\\uXXXX`` escapes, continuation
lines, three separators), and parses ``sasl.jaas.config`` with a
``java.io.StreamTokenizer`` (C-style escapes in quoted values, ``//`` and ``/* */``
comments, and a bare ``/`` that starts a comment too). The two parsers below
follow those algorithms step by step rather than approximating them with regular
expressions; the tests hold them to what Java 17 printed for the same input.

Error messages never quote a value: a property's value may be a password.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kshare_cli.connect.client_keys import is_client_key
from kshare_cli.connect.settings import (
    DEFAULT_CLIENT_ID,
    DEFAULT_REQUEST_TIMEOUT_MS,
    REDACTED,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    ClaimValue,
    ConnectionSettings,
    SaslSettings,
    Secret,
    TlsSettings,
    UnsecuredJwt,
)
from kshare_cli.errors import UsageError

# --- java.util.Properties -------------------------------------------------------------------

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


# --- sasl.jaas.config (java.io.StreamTokenizer as JaasConfig configures it) ------------------

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

    def peek(at: int) -> str | None:
        return text[at] if at < end else None

    while True:
        while index < end and _char_class(text[index]) == "blank":
            index += 1
        if index >= end:
            yield _Token(_EOF, None)
            return
        char = text[index]
        kind = _char_class(char)
        if kind == "digit":
            if char == "-":
                following = peek(index + 1)
                if following is None or not (following == "." or "0" <= following <= "9"):
                    index += 1
                    yield _Token(ord("-"), None)
                    continue
                index += 1
            seen_dot = False
            while index < end:
                char = text[index]
                if char == "." and not seen_dot:
                    seen_dot = True
                elif not "0" <= char <= "9":
                    break
                index += 1
            yield _Token(_NUMBER, None)
            continue
        if kind == "word":
            start = index
            index += 1
            while index < end and _char_class(text[index]) in ("word", "digit"):
                index += 1
            yield _Token(_WORD, text[start:index])
            continue
        if kind == "quote":
            quote = char
            index += 1
            out: list[str] = []
            while index < end and text[index] not in (quote, "\n", "\r"):
                char = text[index]
                index += 1
                if char != "\\":
                    out.append(char)
                    continue
                escaped = peek(index)
                index += 1
                if escaped is None:
                    out.append("\uffff")  # Java casts read()'s -1 to a char
                elif "0" <= escaped <= "7":
                    value = int(escaped)
                    if (second := peek(index)) is not None and "0" <= second <= "7":
                        value = value * 8 + int(second)
                        index += 1
                        third = peek(index)
                        if third is not None and "0" <= third <= "7" and escaped <= "3":
                            value = value * 8 + int(third)
                            index += 1
                    out.append(chr(value))
                else:
                    out.append(_C_ESCAPES.get(escaped, escaped))
            if index < end and text[index] == quote:
                index += 1
            yield _Token(_QUOTED, "".join(out))
            continue
        if kind == "comment":
            following = peek(index + 1)
            if following == "*":
                close = text.find("*/", index + 2)
                if close < 0:
                    yield _Token(_EOF, None)
                    return
                index = close + 2
                continue
            # '//', and (as '/' is StreamTokenizer's default comment character) a lone '/'. For
            # the lone one Java has already read the next character, even a line end, so the
            # comment runs to the end of the *following* line in that case.
            index += 2
            while index < end and text[index] not in "\r\n":
                index += 1
            continue
        index += 1
        yield _Token(ord(char), None)


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


# --- librdkafka's sasl.oauthbearer.config ----------------------------------------------------

_OAUTHBEARER_CONFIG_KEYS = (
    "principalClaimName",
    "principal",
    "scopeClaimName",
    "scope",
    "lifeSeconds",
)


def parse_oauthbearer_config(value: str) -> tuple[dict[str, str], dict[str, str]]:
    """librdkafka's unsecured-JWT settings: ``principal=alice scope=a,b extension_x=y``.

    Returns (settings, SASL extensions). Values end at a space, as in librdkafka.
    """
    settings: dict[str, str] = {}
    extensions: dict[str, str] = {}
    for item in value.split(" "):
        if not item:
            continue
        name, separator, item_value = item.partition("=")
        if name.startswith("extension_") and separator:
            extension = name.removeprefix("extension_")
            if not extension:
                raise UsageError("sasl.oauthbearer.config: empty 'extension_' key")
            extensions[extension] = item_value
        elif name in _OAUTHBEARER_CONFIG_KEYS and separator:
            if not item_value:
                raise UsageError(f"sasl.oauthbearer.config: empty '{name}='")
            settings[name] = item_value
        else:
            shown = name if name.replace("_", "").isalnum() and separator else "?"
            raise UsageError(f"sasl.oauthbearer.config: unrecognized item '{shown}'")
    return settings, extensions


# --- redaction --------------------------------------------------------------------------------

_SECRET_WORDS = ("password", "secret", "token", "credential")
_SECRET_KEYS = frozenset({"ssl.keystore.key", "ssl.key.pem", "sasl.oauthbearer.config"})
_NOT_SECRET = re.compile(r"(\.file|\.location|\.type|\.url|\.method|\.name)$", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a property or JAAS option name probably holds a secret (err towards hiding)."""
    lowered = name.lower()
    if name in _SECRET_KEYS:
        return True
    if _NOT_SECRET.search(lowered):
        return False
    return any(word in lowered for word in _SECRET_WORDS)


def redact_property(key: str, value: str) -> str:
    """A property's value as ``kshare profile show`` and ``--debug`` may print it."""
    if key == "sasl.jaas.config":
        return redact_jaas(value)
    return REDACTED if is_secret_name(key) else value


# --- properties -> settings --------------------------------------------------------------------

_KNOWN_KEYS = frozenset(
    {
        "bootstrap.servers",
        "security.protocol",
        "client.id",
        "request.timeout.ms",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
        "sasl.oauthbearer.config",
        "enable.sasl.oauthbearer.unsecure.jwt",
        "kshare.oauthbearer.token",
        "kshare.oauthbearer.token.file",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.key.location",
        "ssl.key.pem",
    }
)
# One setting said in more than one way (two spellings, or Java's and librdkafka's
# vocabularies): when a later source says it one way, the earlier sources' other ways are
# dropped, so a profile's --property overriding its file's librdkafka spelling replaces it
# instead of leaving it behind to be reported as "not used".
_ALTERNATIVES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("sasl.mechanism",), ("sasl.mechanisms",)),
    (
        ("sasl.jaas.config",),
        (
            "sasl.username",
            "sasl.password",
            "sasl.oauthbearer.config",
            "enable.sasl.oauthbearer.unsecure.jwt",
        ),
    ),
    (("kshare.oauthbearer.token",), ("kshare.oauthbearer.token.file",)),
    (
        ("ssl.truststore.location", "ssl.truststore.password"),
        ("ssl.truststore.certificates",),
        ("ssl.ca.location",),
        ("ssl.ca.pem",),
    ),
    (
        ("ssl.keystore.location", "ssl.keystore.password"),
        ("ssl.keystore.key", "ssl.keystore.certificate.chain"),
        ("ssl.certificate.location", "ssl.key.location"),
        ("ssl.certificate.pem", "ssl.key.pem"),
    ),
)
_SETTING_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+")


class PropertySources:
    """Client properties gathered from files, a profile and flags, later sources winning.

    The one place sources are merged (commands and ``kshare profile add`` alike), so a
    profile means the same thing when it is saved as when it is used. ``origins``
    names each key's source for error messages; ``notes`` are warnings about the
    sources themselves (an empty file).
    """

    def __init__(self) -> None:
        self.properties: dict[str, str] = {}
        self.origins: dict[str, str] = {}
        self.notes: list[str] = []

    def add(self, values: Mapping[str, str], origin: str) -> None:
        for ways in _ALTERNATIVES:
            said = [way for way in ways if any(key in values for key in way)]
            for way in ways:
                if said and way not in said:
                    for key in way:
                        self.properties.pop(key, None)
                        self.origins.pop(key, None)
        for key, value in values.items():
            self.properties[key] = value
            self.origins[key] = origin

    def add_file(self, path: Path, *, label: str = "--command-config") -> None:
        values = load_properties(path, label=label)
        if not values:
            self.notes.append(f"{label} {path} has no properties")
        self.add(values, str(path))


def _unknown_key_warning(key: str, origin: str | None) -> str:
    """One line for a name no client defines, with the nearest name kshare reads.

    The name is repeated only when it looks like a setting's name: a lone word on a
    line of its own could be a password pasted without its key.
    """
    where = f"{origin}: " if origin else ""
    if not _SETTING_NAME.fullmatch(key):
        return f"{where}ignored a line that is not a client setting (its text is not shown)"
    close = difflib.get_close_matches(key, sorted(_KNOWN_KEYS), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where}unknown property {key}{hint}; ignored"


#: The mechanisms a Java client logs in with under each login module. A login module
#: registers the SASL client of its own mechanisms (ScramLoginModule and
#: OAuthBearerLoginModule do so when loaded; PLAIN's client is the JDK's own), so a
#: Java client with PlainLoginModule and SCRAM or OAUTHBEARER finds no SASL client:
#: ``SaslClientAuthenticator.createSaslClient`` fails.
_LOGIN_MODULE_MECHANISMS = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    "OAuthBearerLoginModule": ("OAUTHBEARER",),
}
#: The login module each mechanism needs, for the fix the refusal names.
_MECHANISM_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
_UNSECURED_PREFIX = "unsecuredLogin"
_JAVA_TRIM = "".join(map(chr, range(0x21)))  # String.trim(): every char <= U+0020
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*")


class _Reader:
    """Typed access to the merged properties, with errors that say where a key came from."""

    def __init__(self, properties: Mapping[str, str], origins: Mapping[str, str]) -> None:
        self.properties = properties
        self.origins = origins
        self.used: set[str] = set()

    def where(self, key: str) -> str:
        origin = self.origins.get(key)
        return f"{key} (from {origin})" if origin else key

    def error(self, key: str, problem: str) -> UsageError:
        return UsageError(f"{self.where(key)}: {problem}")

    def get(self, key: str) -> str | None:
        """The value trimmed as Kafka's ``ConfigDef`` trims every value, passwords included."""
        self.used.add(key)
        value = self.properties.get(key)
        return None if value is None else value.strip(_JAVA_TRIM)

    def has(self, key: str) -> bool:
        return key in self.properties

    def secret(self, key: str) -> Secret | None:
        value = self.get(key)
        return None if value is None else Secret(value)

    def path(self, key: str) -> Path | None:
        value = self.get(key)
        if value is None:
            return None
        if not value.strip():
            raise self.error(key, "empty path")
        return Path(value.strip()).expanduser()

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise self.error(key, "expected true or false")

    def first(self, *keys: str) -> str | None:
        """The value of the first key present (Java and librdkafka spellings of one setting)."""
        for key in keys:
            value = self.get(key)
            if value is not None:
                return value
        return None

    def only_one(self, groups: Mapping[str, tuple[str, ...]]) -> str | None:
        """Which of several mutually exclusive ways to say one thing was used, if any."""
        present = [name for name, keys in groups.items() if any(self.has(k) for k in keys)]
        if len(present) > 1:
            listed = " and ".join(", ".join(groups[name]) for name in present)
            raise UsageError(f"set only one of {listed}")
        return present[0] if present else None


def _protocol(reader: _Reader) -> str:
    value = reader.get("security.protocol")
    if value is None:
        return "PLAINTEXT"
    protocol = value.strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise reader.error(
            "security.protocol", f"{value!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    return protocol


def _store_type(reader: _Reader, key: str) -> str:
    value = reader.get(key)
    kind = (value or "JKS").strip().upper()  # Kafka's default; a PKCS12 file loads as JKS too
    if kind not in ("JKS", "PKCS12", "PEM"):
        raise reader.error(key, f"{value!r} is not supported (use PKCS12 or PEM)")
    return kind


def _tls_settings(reader: _Reader) -> TlsSettings:
    truststore_type = _store_type(reader, "ssl.truststore.type")
    keystore_type = _store_type(reader, "ssl.keystore.type")
    trust = reader.only_one(
        {
            "truststore": ("ssl.truststore.location",),
            "inline": ("ssl.truststore.certificates",),
            "ca_location": ("ssl.ca.location",),
            "ca_pem": ("ssl.ca.pem",),
        }
    )
    ca_file = ca_pem = truststore_file = None
    truststore_password = reader.secret("ssl.truststore.password")
    if trust == "truststore":
        if truststore_type == "PEM":
            ca_file = reader.path("ssl.truststore.location")
        else:
            truststore_file = reader.path("ssl.truststore.location")
    elif trust == "inline":
        if truststore_type != "PEM":
            raise reader.error(
                "ssl.truststore.certificates", "needs ssl.truststore.type=PEM (Kafka's rule)"
            )
        ca_pem = reader.get("ssl.truststore.certificates")
    elif trust == "ca_location":
        location = reader.get("ssl.ca.location") or ""
        if location.strip() != "probe":  # librdkafka: probe the system's CA paths
            ca_file = reader.path("ssl.ca.location")
    elif trust == "ca_pem":
        ca_pem = reader.get("ssl.ca.pem")
    elif truststore_password is not None:
        raise reader.error("ssl.truststore.password", "is set, but ssl.truststore.location is not")

    identity = reader.only_one(
        {
            "keystore": ("ssl.keystore.location",),
            "inline": ("ssl.keystore.key", "ssl.keystore.certificate.chain"),
            "files": ("ssl.certificate.location", "ssl.key.location"),
            "pem": ("ssl.certificate.pem", "ssl.key.pem"),
        }
    )
    key_password = reader.secret("ssl.key.password")
    keystore_password = reader.secret("ssl.keystore.password")
    settings: dict[str, Any] = {}
    if identity == "keystore":
        settings["keystore_file"] = reader.path("ssl.keystore.location")
        if keystore_type == "PEM" and keystore_password is not None:
            raise reader.error(
                "ssl.keystore.password",
                "cannot be used with ssl.keystore.type=PEM; set ssl.key.password instead",
            )
    elif identity == "inline":
        chain = reader.get("ssl.keystore.certificate.chain")
        key = reader.secret("ssl.keystore.key")
        if chain is None or key is None:
            missing = "ssl.keystore.key" if key is None else "ssl.keystore.certificate.chain"
            raise UsageError(f"{missing} is missing: the key and its chain go together")
        if keystore_type != "PEM":
            raise reader.error("ssl.keystore.key", "needs ssl.keystore.type=PEM (Kafka's rule)")
        settings["cert_pem"], settings["key_pem"] = chain, key
    elif identity == "files":
        settings["cert_file"] = reader.path("ssl.certificate.location")
        settings["key_file"] = reader.path("ssl.key.location")
        if settings["cert_file"] is None:
            raise UsageError("ssl.key.location is set, but ssl.certificate.location is not")
    elif identity == "pem":
        chain = reader.get("ssl.certificate.pem")
        key = reader.secret("ssl.key.pem")
        if chain is None or key is None:
            missing = "ssl.key.pem" if key is None else "ssl.certificate.pem"
            raise UsageError(f"{missing} is missing: the key and its certificate go together")
        settings["cert_pem"], settings["key_pem"] = chain, key
    elif keystore_password is not None:
        raise reader.error("ssl.keystore.password", "is set, but ssl.keystore.location is not")

    algorithm = reader.get("ssl.endpoint.identification.algorithm")
    if algorithm is None or algorithm.strip().lower() == "https":
        check_hostname = True
    elif algorithm.strip().lower() in ("", "none"):
        check_hostname = False
    else:
        raise reader.error(
            "ssl.endpoint.identification.algorithm",
            f"{algorithm!r} is not supported (https, or empty/none to turn it off)",
        )
    return TlsSettings(
        ca_file=ca_file,
        ca_pem=ca_pem,
        truststore_file=truststore_file,
        truststore_password=truststore_password if truststore_file is not None else None,
        key_password=key_password,
        keystore_password=keystore_password if "keystore_file" in settings else None,
        check_hostname=check_hostname,
        verify_certificates=reader.flag("enable.ssl.certificate.verification", True),
        **settings,
    )


def _jaas(reader: _Reader) -> JaasEntry | None:
    value = reader.get("sasl.jaas.config")
    if value is None:
        return None
    try:
        return parse_jaas(value)
    except JaasSyntaxError as error:
        raise reader.error("sasl.jaas.config", str(error)) from None


def _unsecured_from_jaas(reader: _Reader, entry: JaasEntry) -> UnsecuredJwt | None:
    """``unsecuredLogin*`` options, read as ``OAuthBearerUnsecuredLoginCallbackHandler`` does."""
    options = entry.options
    claims: list[tuple[str, ClaimValue]] = []
    for key, value in options.items():
        for prefix in ("StringClaim_", "NumberClaim_", "ListClaim_"):
            full = _UNSECURED_PREFIX + prefix
            if not key.startswith(full) or len(key) == len(full):
                continue
            name = key.removeprefix(full)
            if name in ("iat", "exp"):
                raise reader.error("sasl.jaas.config", f"cannot explicitly set the '{name}' claim")
            if prefix == "StringClaim_":
                claims.append((name, value))
            elif prefix == "NumberClaim_":
                try:
                    number = float(value)
                except ValueError:
                    number = math.nan
                if not math.isfinite(number):
                    raise reader.error("sasl.jaas.config", f"{key} is not a number")
                claims.append((name, number))
            else:
                claims.append((name, _java_list_claim(value)))
    if not claims:
        return None
    principal_name = (options.get(_UNSECURED_PREFIX + "PrincipalClaimName") or "").strip() or "sub"
    scope_name = (options.get(_UNSECURED_PREFIX + "ScopeClaimName") or "").strip() or "scope"
    lifetime_text = options.get(_UNSECURED_PREFIX + "LifetimeSeconds", "3600")
    try:
        lifetime = int(lifetime_text)
    except ValueError:
        raise reader.error(
            "sasl.jaas.config", "unsecuredLoginLifetimeSeconds is not an integer"
        ) from None
    jwt = UnsecuredJwt(tuple(claims), principal_name, scope_name, lifetime)
    if not jwt.principal.strip():
        raise reader.error(
            "sasl.jaas.config",
            f"the unsecured token has no '{principal_name}' claim "
            f'(set unsecuredLoginStringClaim_{principal_name}="...")',
        )
    return jwt


def _java_list_claim(value: str) -> tuple[str, ...]:
    """``unsecuredLoginListClaim_x=",a,b"``: the first character is the delimiter."""
    if len(value) <= 1:
        return ()
    delimiter, text = value[0], value[1:]
    elements = text.split(delimiter)
    # Java's String.split drops trailing empty strings but the handler adds one "" back.
    while elements and elements[-1] == "":
        elements.pop()
    if text.startswith(delimiter) or text.endswith(delimiter) or delimiter * 2 in text:
        elements.append("")
    return tuple(elements) if elements else ("",)


def _unsecured_from_librdkafka(reader: _Reader) -> tuple[UnsecuredJwt | None, dict[str, str]]:
    value = reader.get("sasl.oauthbearer.config")
    if value is None:
        return None, {}
    try:
        options, extensions = parse_oauthbearer_config(value)
    except UsageError as error:
        raise UsageError(f"{reader.where('sasl.oauthbearer.config')}: {error}") from None
    principal = options.get("principal")
    if principal is None:
        return None, extensions
    claims: list[tuple[str, ClaimValue]] = [(options.get("principalClaimName", "sub"), principal)]
    if "scope" in options:
        claims.append((options.get("scopeClaimName", "scope"), tuple(options["scope"].split(","))))
    lifetime_text = options.get("lifeSeconds", "3600")
    if not _is_number(lifetime_text) or int(lifetime_text) <= 0:
        raise reader.error("sasl.oauthbearer.config", "lifeSeconds must be a positive integer")
    jwt = UnsecuredJwt(
        tuple(claims),
        options.get("principalClaimName", "sub"),
        options.get("scopeClaimName", "scope"),
        int(lifetime_text),
    )
    return jwt, extensions


def _check_extensions(reader: _Reader, extensions: Mapping[str, str]) -> None:
    for name, value in extensions.items():
        if name == "auth" or not _EXTENSION_KEY.fullmatch(name):
            raise reader.error(
                "sasl.jaas.config", f"invalid SASL extension name {name!r} (letters, not 'auth')"
            )
        if not _EXTENSION_VALUE.fullmatch(value):
            raise reader.error("sasl.jaas.config", f"SASL extension {name!r} has an invalid value")


def _sasl_settings(reader: _Reader, warnings: list[str]) -> SaslSettings:
    mechanism_value = reader.first("sasl.mechanism", "sasl.mechanisms")
    mechanism_key = "sasl.mechanism" if reader.has("sasl.mechanism") else "sasl.mechanisms"
    mechanism = (mechanism_value or "GSSAPI").strip().upper()
    if mechanism == "GSSAPI":
        where = reader.where(mechanism_key) if mechanism_value else "sasl.mechanism"
        default = "" if mechanism_value else " (Kafka's default when it is not set)"
        raise UsageError(
            f"{where}: GSSAPI (Kerberos){default} is not supported; "
            f"set sasl.mechanism to one of {', '.join(SASL_MECHANISMS)}"
        )
    if mechanism not in SASL_MECHANISMS:
        raise reader.error(
            mechanism_key,
            f"{mechanism_value!r} is not supported; use one of {', '.join(SASL_MECHANISMS)}",
        )
    entry = _jaas(reader)
    if entry is not None:
        allowed = _LOGIN_MODULE_MECHANISMS.get(entry.module_name)
        if allowed is None:
            raise reader.error(
                "sasl.jaas.config",
                f"login module {entry.login_module} is not supported "
                "(PlainLoginModule, ScramLoginModule or OAuthBearerLoginModule)",
            )
        if mechanism not in allowed:
            # Java's words (SaslAuthenticationException), and both ways out.
            raise reader.error(
                "sasl.jaas.config",
                f"{entry.module_name} does not log in with sasl.mechanism={mechanism}; "
                f'Java clients refuse it ("Failed to create SaslClient with mechanism '
                f'{mechanism}"): use {_MECHANISM_LOGIN_MODULES[mechanism]}, or set '
                f"sasl.mechanism={allowed[0]}",
            )
    if mechanism == "OAUTHBEARER":
        return _oauthbearer_settings(reader, entry, warnings)

    if entry is not None:
        if entry.options.get("tokenauth", "false").lower() == "true":
            raise reader.error(
                "sasl.jaas.config", "delegation tokens (tokenauth) are not supported"
            )
        username = entry.options.get("username")
        jaas_password = entry.options.get("password")
        password = None if jaas_password is None else Secret(jaas_password)
        if username is None or password is None:
            missing = "username" if username is None else "password"
            raise reader.error("sasl.jaas.config", f"{entry.module_name} has no {missing} option")
        return SaslSettings(mechanism=mechanism, username=username, password=password)
    username = reader.get("sasl.username")
    password = reader.secret("sasl.password")
    if username is None or password is None:
        raise UsageError(
            f"SASL/{mechanism} needs a username and password: set sasl.jaas.config "
            '(org.apache.kafka.common.security.plain.PlainLoginModule required username="..." '
            'password="...";) or sasl.username and sasl.password'
        )
    return SaslSettings(mechanism=mechanism, username=username, password=password)


def _oauthbearer_settings(
    reader: _Reader, entry: JaasEntry | None, warnings: list[str]
) -> SaslSettings:
    token = reader.secret("kshare.oauthbearer.token")
    token_file = reader.path("kshare.oauthbearer.token.file")
    if token is not None and token_file is not None:
        raise UsageError("set only one of kshare.oauthbearer.token, kshare.oauthbearer.token.file")
    if token is not None and not token.reveal().strip():
        raise reader.error("kshare.oauthbearer.token", "empty token")
    jwt: UnsecuredJwt | None = None
    extensions: dict[str, str] = {}
    if entry is not None:
        jwt = _unsecured_from_jaas(reader, entry)
        extensions = {
            key.removeprefix(_UNSECURED_PREFIX + "Extension_"): value
            for key, value in entry.options.items()
            if key.startswith(_UNSECURED_PREFIX + "Extension_")
        }
    else:
        jwt, extensions = _unsecured_from_librdkafka(reader)
        reader.get("enable.sasl.oauthbearer.unsecure.jwt")
    _check_extensions(reader, extensions)
    if token is None and token_file is None and jwt is None:
        raise UsageError(
            "SASL/OAUTHBEARER needs a token: set kshare.oauthbearer.token.file (a file that "
            "something else keeps fresh) or kshare.oauthbearer.token; for a test cluster with "
            "unsecured tokens, sasl.jaas.config=...OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="<principal>"; (kshare does not fetch tokens from '
            "sasl.oauthbearer.token.endpoint.url)"
        )
    if jwt is not None and (token is not None or token_file is not None):
        warnings.append("unsecured JWT options ignored: a kshare.oauthbearer token is set")
        jwt = None
    return SaslSettings(
        mechanism="OAUTHBEARER",
        token=token,
        token_file=token_file,
        unsecured_jwt=jwt,
        extensions=tuple(extensions.items()),
    )


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _is_sasl_key(key: str) -> bool:
    return "sasl." in key or key.startswith("kshare.oauthbearer")


def settings_from_properties(
    properties: Mapping[str, str],
    *,
    bootstrap_servers: tuple[str, ...],
    origins: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    quiet_origins: Collection[str] = (),
) -> ConnectionSettings:
    """Map Java or librdkafka client properties onto :class:`ConnectionSettings`.

    ``origins`` names where each key came from (a file, a profile, ``--property``),
    so an error can say which file to fix. Keys kshare does not read become
    ``warnings``, not refusals: a file written for Kafka's tools may carry consumer
    or producer settings that mean nothing to kshare (listed together), while a
    name no Kafka client defines is most likely a typo (one warning each, with the
    nearest name kshare reads). ``notes`` come first; keys whose origin is in
    ``quiet_origins`` (a saved profile, warned about when it was saved) get none.
    """
    origins = origins or {}
    reader = _Reader(properties, origins)
    warnings: list[str] = list(notes)
    protocol = _protocol(reader)
    tls = _tls_settings(reader) if protocol in ("SSL", "SASL_SSL") else None
    sasl = _sasl_settings(reader, warnings) if protocol.startswith("SASL_") else None
    client_id = reader.get("client.id")
    timeout_text = reader.get("request.timeout.ms")
    timeout = DEFAULT_REQUEST_TIMEOUT_MS
    if timeout_text is not None:
        if not _is_number(timeout_text) or int(timeout_text) <= 0:
            raise reader.error("request.timeout.ms", "expected a positive number of milliseconds")
        timeout = int(timeout_text)
    reader.get("bootstrap.servers")

    loud = sorted(key for key in properties if origins.get(key) not in quiet_origins)
    unused = [key for key in loud if key in _KNOWN_KEYS and key not in reader.used]
    off_plane = [
        key
        for key in unused
        if (tls is None and "ssl." in key) or (sasl is None and _is_sasl_key(key))
    ]
    if off_plane:
        warnings.append(f"ignored as security.protocol is {protocol}: {', '.join(off_plane)}")
    if rest := [key for key in unused if key not in off_plane]:
        warnings.append(f"ignored as not used with these settings: {', '.join(rest)}")
    foreign = [key for key in loud if key not in _KNOWN_KEYS and is_client_key(key)]
    if foreign:
        warnings.append(f"ignored properties kshare does not use: {', '.join(foreign)}")
    warnings.extend(
        _unknown_key_warning(key, origins.get(key))
        for key in loud
        if key not in _KNOWN_KEYS and not is_client_key(key)
    )
    return ConnectionSettings(
        bootstrap_servers=bootstrap_servers,
        security_protocol=protocol,
        tls=tls,
        sasl=sasl,
        client_id=client_id.strip() if client_id and client_id.strip() else DEFAULT_CLIENT_ID,
        request_timeout_ms=timeout,
        warnings=tuple(warnings),
    )
