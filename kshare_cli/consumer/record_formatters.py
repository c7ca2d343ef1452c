"""How ``kshare consume`` writes a record: Kafka's text layout, JSON lines, or the raw value.

``text`` is Kafka 4.2's ``DefaultMessageFormatter`` (tools/.../consumer/
DefaultMessageFormatter.java), byte for byte, with its properties and defaults:

* fields in a fixed order, whatever the order of the properties: timestamp,
  partition, offset, delivery, epoch, headers, key, value; each followed by
  ``key.separator`` (TAB) when a later field is printed, else by ``line.separator``
  (LF). A record with every field turned off prints nothing at all.
* ``CreateTime:<ms>`` / ``LogAppendTime:<ms>`` / ``NO_TIMESTAMP``; ``Partition:N``;
  ``Offset:N``; ``Delivery:N`` (``NOT_PRESENT`` without a count); ``Epoch:NOT_PRESENT``
  always, because Kafka's console share consumer never passes a leader epoch on;
  headers as ``key:value`` joined by ``headers.separator`` (``,``), or ``NO_HEADERS``.
* a null key, value or header value prints ``null.literal`` (``null``).
* separators and the null literal are taken literally, as Kafka takes them from
  ``--formatter-property``: ``key.separator=\\t`` is a backslash and a ``t``. (Only a
  properties *file* turns ``\\t`` into a TAB, because java.util.Properties does.)

Where kshare parts from Kafka it says so: a property Kafka would ignore (unknown, or
a boolean that is neither true nor false) is a usage error here, and a null goes to
the null literal without passing through the deserializer (Kafka hands the literal's
bytes to the deserializer: the same for strings and bytes, an error for an int).

``jsonl`` is one JSON object per record (docs/schemas/consume-record.schema.json);
``raw`` is the value's bytes and nothing else, for piping binary payloads.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from kshare_cli.consumer.deserializers import (
    NAMES,
    REGISTRY_NAMES,
    DeserializationError,
    Deserializer,
    canonical_name,
    deserialize_bytes,
    make_deserializer,
)
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.errors import UsageError


class Formatter(Protocol):
    """Turns a record into one complete unit of output, its line separator included."""

    def format(self, record: ConsumedRecord) -> bytes: ...


FormatKind = Literal["text", "jsonl", "raw"]
FORMAT_KINDS: Final = ("text", "jsonl", "raw")

# DefaultMessageFormatter's properties and defaults, in the order of its configure().
BOOLEAN_PROPERTIES: Final = {
    "print.timestamp": False,
    "print.key": False,
    "print.offset": False,
    "print.delivery": False,
    "print.epoch": False,
    "print.partition": False,
    "print.headers": False,
    "print.value": True,
}
STRING_PROPERTIES: Final = {
    "key.separator": "\t",
    "line.separator": "\n",
    "headers.separator": ",",
    "null.literal": "null",
}
HEADERS_DESERIALIZER: Final = "headers.deserializer"
TEXT_PROPERTIES: Final = (*BOOLEAN_PROPERTIES, *STRING_PROPERTIES, HEADERS_DESERIALIZER)


@dataclass(frozen=True, slots=True)
class TextSettings:
    """DefaultMessageFormatter's configuration, validated."""

    print_timestamp: bool = False
    print_key: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_partition: bool = False
    print_headers: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"
    headers_deserializer: str | None = None


def parse_text_properties(properties: Mapping[str, str]) -> TextSettings:
    """Kafka's formatter properties as settings; UsageError for anything Kafka would ignore."""
    values: dict[str, object] = {}
    for name, value in properties.items():
        field = name.replace(".", "_")
        if name in BOOLEAN_PROPERTIES:
            values[field] = _boolean(name, value)
        elif name in STRING_PROPERTIES:
            values[field] = value.encode("utf-8")
        elif name == HEADERS_DESERIALIZER:
            values[field] = _headers_deserializer(value)
        else:
            raise UsageError(_unknown_property(name))
    return TextSettings(**values)  # type: ignore[arg-type]


def _boolean(name: str, value: str) -> bool:
    # Kafka: value.trim().equalsIgnoreCase("true"), anything else false.
    word = value.strip().lower()
    if word not in ("true", "false"):
        raise UsageError(f"formatter property {name} must be true or false, not {value!r}")
    return word == "true"


def _headers_deserializer(name: str) -> str:
    canonical = canonical_name(name)
    if canonical in REGISTRY_NAMES:
        fixed = ", ".join(n for n in NAMES if n not in REGISTRY_NAMES)
        raise UsageError(f"headers.deserializer cannot be {canonical}: choose one of {fixed}")
    return canonical


def _unknown_property(name: str) -> str:
    if name in ("key.deserializer", "value.deserializer"):
        option = name.split(".")[0]
        return (
            f"formatter property {name}: choose the {option} deserializer "
            f"with --{option}-deserializer"
        )
    if name == "header.deserializer":
        return (
            "unknown formatter property header.deserializer "
            "(Kafka's formatter reads headers.deserializer)"
        )
    return f"unknown formatter property {name!r}: known are {', '.join(TEXT_PROPERTIES)}"


def make_formatter(
    kind: FormatKind,
    properties: Mapping[str, str],
    key_deserializer: Deserializer,
    value_deserializer: Deserializer,
) -> Formatter:
    """The formatter for ``--format kind``; formatter properties apply to ``text`` only.

    ``raw`` writes the value's bytes as they are: the deserializers are not applied, and
    a null value writes nothing.
    """
    if kind == "text":
        settings = parse_text_properties(properties)
        if (
            settings.print_value
            and not any(
                (
                    settings.print_timestamp,
                    settings.print_key,
                    settings.print_offset,
                    settings.print_delivery,
                    settings.print_epoch,
                    settings.print_partition,
                    settings.print_headers,
                )
            )
            and value_deserializer is deserialize_bytes
        ):
            return RawValueLines(settings.null_literal, settings.line_separator)
        return TextFormatter(settings, key_deserializer, value_deserializer)
    if kind not in FORMAT_KINDS:
        raise UsageError(f"unknown format {kind!r}: choose one of {', '.join(FORMAT_KINDS)}")
    if properties:
        names = ", ".join(sorted(properties))
        raise UsageError(f"formatter properties ({names}) apply to -o text only, not {kind}")
    if kind == "jsonl":
        return JsonLinesFormatter(key_deserializer, value_deserializer)
    return RawFormatter()


# ---------------------------------------------------------------------------------------
# text


class RawValueLines:
    """Kafka's default layout (the value and a line separator) without any deserializer.

    The common case of a console consumer, kept to one branch a record.
    """

    __slots__ = ("_line_separator", "_null_line")

    def __init__(self, null_literal: bytes, line_separator: bytes) -> None:
        self._null_line = null_literal + line_separator
        self._line_separator = line_separator

    def format(self, record: ConsumedRecord) -> bytes:
        value = record.value
        if value is None:
            return self._null_line
        return value + self._line_separator


class TextFormatter:
    """Kafka's DefaultMessageFormatter."""

    __slots__ = ("_headers", "_key", "_settings", "_value")

    def __init__(
        self,
        settings: TextSettings,
        key_deserializer: Deserializer,
        value_deserializer: Deserializer,
    ) -> None:
        self._settings = settings
        self._key = key_deserializer
        self._value = value_deserializer
        self._headers = (
            make_deserializer(settings.headers_deserializer)
            if settings.headers_deserializer is not None
            else deserialize_bytes
        )

    def format(self, record: ConsumedRecord) -> bytes:
        settings = self._settings
        fields: list[bytes] = []
        if settings.print_timestamp:
            type_name = record.timestamp_type_name
            if type_name is None:
                fields.append(b"NO_TIMESTAMP")
            else:
                fields.append(f"{type_name}:{record.timestamp}".encode())
        if settings.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if settings.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if settings.print_delivery:
            if record.delivery_count is None:
                fields.append(b"Delivery:NOT_PRESENT")
            else:
                fields.append(b"Delivery:%d" % record.delivery_count)
        if settings.print_epoch:
            fields.append(b"Epoch:NOT_PRESENT")
        if settings.print_headers:
            fields.append(self._format_headers(record))
        if settings.print_key:
            fields.append(self._text(_read(self._key, record, record.key, True)))
        if settings.print_value:
            fields.append(self._text(_read(self._value, record, record.value, False)))
        if not fields:
            return b""
        return settings.key_separator.join(fields) + settings.line_separator

    def _format_headers(self, record: ConsumedRecord) -> bytes:
        if not record.headers:
            return b"NO_HEADERS"
        return self._settings.headers_separator.join(
            key.encode("utf-8", "replace")
            + b":"
            + self._text(_read(self._headers, record, value, False, header=key))
            for key, value in record.headers
        )

    def _text(self, value: object) -> bytes:
        """A deserialized value as Kafka prints an object: its toString() in UTF-8."""
        if value is None:
            return self._settings.null_literal
        return text_bytes(value)


def text_bytes(value: object) -> bytes:
    """What Java's ``toString()`` would print for a deserialized non-null value, in UTF-8.

    Bytes as they are; strings in UTF-8 (an unpaired surrogate as ``?``, as Java's
    encoder writes it); booleans ``true``/``false``; doubles as Java's
    ``Double.toString``; anything structured (JSON, Avro, Protobuf) as compact JSON.
    """
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, int):
        return b"%d" % value
    if isinstance(value, float):
        return java_double_to_string(value).encode("ascii")
    converted = json_value(value)
    if isinstance(converted, str):
        return converted.encode("utf-8", "replace")
    return compact_json(converted).encode("utf-8", "replace")


def java_double_to_string(number: float) -> str:
    """Java's ``Double.toString`` (JDK 19+): shortest round-trip digits, at least two.

    Plain notation for magnitudes in [10^-3, 10^7), ``d.dddE±n`` otherwise, always with
    a digit after the point: 1.0, 0.001, 1234567.0, 1.0E7, 4.9E-324, NaN, -Infinity.
    """
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    sign = "-" if number < 0 else ""
    magnitude = abs(number)
    digits, exponent = _shortest_digits(repr(magnitude))
    if len(digits) == 1:
        # Java picks the closest decimal of length 2 when one digit would do
        # (Double.MIN_VALUE is 4.9E-324, not 5.0E-324).
        two_digits, two_exponent = _shortest_digits(format(magnitude, ".1e"))
        if float(format(magnitude, ".1e")) == magnitude:
            digits, exponent = two_digits, two_exponent
    # exponent: the power of ten of the first digit.
    if 1e-3 <= magnitude < 1e7:
        if exponent >= 0:
            integer = digits[: exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1 :] or "0"
        else:
            integer = "0"
            fraction = "0" * (-exponent - 1) + digits
        return f"{sign}{integer}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(text: str) -> tuple[str, int]:
    """Significant digits (no trailing zeros) and the power of ten of the first one."""
    sign, digit_tuple, exponent = decimal.Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    return digits, exponent + len(digits) - 1


# ---------------------------------------------------------------------------------------
# jsonl


class JsonLinesFormatter:
    """One compact JSON object a record, newline-terminated (consume-record.schema.json).

    :meth:`document` is the record as a dict; :meth:`format` writes the same JSON
    without building it (a third of the time: this runs once per record), and the
    tests hold the two equal.
    """

    __slots__ = ("_key", "_topics", "_value")

    def __init__(self, key_deserializer: Deserializer, value_deserializer: Deserializer) -> None:
        self._key = key_deserializer
        self._value = value_deserializer
        self._topics: dict[str, str] = {}

    def document(self, record: ConsumedRecord) -> dict[str, object]:
        """The record as the JSON object this formatter writes."""
        type_name = record.timestamp_type_name
        document: dict[str, object] = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "delivery_count": record.delivery_count,
            "timestamp": None if type_name is None else record.timestamp,
            "timestamp_type": type_name,
        }
        _put(document, "key", _read(self._key, record, record.key, True))
        _put(document, "value", _read(self._value, record, record.value, False))
        document["headers"] = [_header(key, value) for key, value in record.headers]
        return document

    def format(self, record: ConsumedRecord) -> bytes:
        topic = self._topics.get(record.topic)
        if topic is None:
            topic = self._topics[record.topic] = _json_string(record.topic)
        key = _read(self._key, record, record.key, True)
        value = _read(self._value, record, record.value, False)
        delivery_count = record.delivery_count
        type_name = record.timestamp_type_name
        if type_name is None:
            timestamp = '"timestamp":null,"timestamp_type":null'
        else:
            timestamp = f'"timestamp":{record.timestamp},"timestamp_type":"{type_name}"'
        headers = (
            ",".join(
                f'{{"key":{_json_string(name)},{_field("value", header_value)}}}'
                for name, header_value in record.headers
            )
            if record.headers
            else ""
        )
        line = (
            f'{{"topic":{topic},"partition":{record.partition},"offset":{record.offset},'
            f'"delivery_count":{"null" if delivery_count is None else delivery_count},'
            f'{timestamp},{_field("key", key)},{_field("value", value)},"headers":[{headers}]}}\n'
        )
        try:
            return line.encode("utf-8")
        except UnicodeEncodeError:
            # An unpaired surrogate (from a JSON value) survives only as a JSON escape.
            return (_COMPACT_ASCII.encode(self.document(record)) + "\n").encode()


_json_string: Final = json.encoder.encode_basestring


def _field(name: str, value: object) -> str:
    """``"name":<JSON>`` for a key, value or header value, as :func:`_put` has it."""
    if value is None:
        return f'"{name}":null'
    if type(value) is str:
        return f'"{name}":{_json_string(value)}'
    if type(value) is bytes:
        try:
            return f'"{name}":{_json_string(value.decode("utf-8"))}'
        except UnicodeDecodeError:
            encoded = base64.b64encode(value).decode("ascii")
            return f'"{name}":"{encoded}","{name}_encoding":"base64"'
    return f'"{name}":{_COMPACT.encode(json_value(value))}'


def _put(document: dict[str, object], field: str, value: object) -> None:
    """A top-level key or value: bytes that are not UTF-8 become base64, and say so."""
    if isinstance(value, bytes):
        try:
            document[field] = value.decode("utf-8")
        except UnicodeDecodeError:
            document[field] = base64.b64encode(value).decode("ascii")
            document[f"{field}_encoding"] = "base64"
        return
    document[field] = json_value(value)


def _header(key: str, value: bytes | None) -> dict[str, object]:
    header: dict[str, object] = {"key": key}
    _put(header, "value", value)
    return header


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def compact_json(value: object) -> str:
    return _COMPACT.encode(value)


_NON_FINITE: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}


def json_value(value: object) -> object:
    """A deserialized value in JSON's types.

    Inside a structure bytes are base64 (as protobuf's JSON mapping has them), decimals
    exact strings, dates and times ISO 8601, UUIDs their canonical text; a double that
    JSON cannot hold is the string ``NaN``, ``Infinity`` or ``-Infinity``.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else _NON_FINITE[value]
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)


# ---------------------------------------------------------------------------------------
# raw


class RawFormatter:
    """The value's bytes and nothing else; a null value writes nothing."""

    __slots__ = ()

    def format(self, record: ConsumedRecord) -> bytes:
        return record.value or b""


def _read(
    deserializer: Deserializer,
    record: ConsumedRecord,
    data: bytes | None,
    is_key: bool,
    header: str | None = None,
) -> object:
    try:
        return deserializer(data, record.topic, is_key)
    except DeserializationError as error:
        raise error.at(record.partition, record.offset, header) from error
