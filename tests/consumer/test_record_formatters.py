"""The formatters of ``kshare consume``: Kafka's text layout, JSON lines and raw values.

The text layout is checked against an oracle that is a line-by-line port of Kafka
4.2's ``DefaultMessageFormatter.writeTo`` (each field, then ``writeSeparator`` with
"is anything printed after me?"), over generated records and settings; kshare's
implementation joins the printed fields instead, so the two cannot share a mistake.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

import confluent_kafka
import jsonschema
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kshare_cli.consumer.deserializers import (
    DeserializationError,
    Deserializer,
    deserialize_bytes,
    make_deserializer,
)
from kshare_cli.consumer.record_formatters import (
    BOOLEAN_PROPERTIES,
    JsonLinesFormatter,
    RawFormatter,
    RawValueLines,
    TextFormatter,
    TextSettings,
    java_double_to_string,
    json_value,
    make_formatter,
    parse_text_properties,
)
from kshare_cli.consumer.records import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    ConsumedRecord,
)
from kshare_cli.errors import UsageError

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "docs" / "schemas" / "consume-record.schema.json"
    ).read_text()
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

BYTES = make_deserializer("bytes")


def record(
    value: bytes | None = b"v",
    key: bytes | None = b"k",
    *,
    topic: str = "orders",
    partition: int = 0,
    offset: int = 0,
    delivery_count: int | None = 1,
    timestamp_type: int = CREATE_TIME,
    timestamp: int = 1767312000000,
    headers: tuple[tuple[str, bytes | None], ...] = (),
) -> ConsumedRecord:
    return ConsumedRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        delivery_count=delivery_count,
        timestamp_type=timestamp_type,
        timestamp=timestamp if timestamp_type != NO_TIMESTAMP else -1,
        key=key,
        value=value,
        headers=headers,
    )


def text(
    properties: dict[str, str],
    *records: ConsumedRecord,
    key: Deserializer = BYTES,
    value: Deserializer = BYTES,
) -> bytes:
    formatter = make_formatter("text", properties, key, value)
    return b"".join(formatter.format(one) for one in records)


# ------------------------------------------------------------------ a port of Kafka's writeTo


def kafka_write_to(settings: TextSettings, consumed: ConsumedRecord) -> bytes:
    """DefaultMessageFormatter.writeTo (Kafka 4.2), statement for statement, no deserializers."""
    out = bytearray()
    s = settings

    def write_separator(column_separator: bool) -> None:
        out.extend(s.key_separator if column_separator else s.line_separator)

    def deserialize(source: bytes | None) -> bytes:
        return source if source is not None else s.null_literal

    if s.print_timestamp:
        if consumed.timestamp_type != NO_TIMESTAMP:
            name = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}
            out.extend(f"{name[consumed.timestamp_type]}:{consumed.timestamp}".encode())
        else:
            out.extend(b"NO_TIMESTAMP")
        write_separator(
            s.print_partition
            or s.print_offset
            or s.print_delivery
            or s.print_epoch
            or s.print_headers
            or s.print_key
            or s.print_value
        )
    if s.print_partition:
        out.extend(b"Partition:" + str(consumed.partition).encode())
        write_separator(
            s.print_offset
            or s.print_delivery
            or s.print_epoch
            or s.print_headers
            or s.print_key
            or s.print_value
        )
    if s.print_offset:
        out.extend(b"Offset:" + str(consumed.offset).encode())
        write_separator(
            s.print_delivery or s.print_epoch or s.print_headers or s.print_key or s.print_value
        )
    if s.print_delivery:
        count = consumed.delivery_count
        out.extend(b"Delivery:" + (b"NOT_PRESENT" if count is None else str(count).encode()))
        write_separator(s.print_epoch or s.print_headers or s.print_key or s.print_value)
    if s.print_epoch:
        out.extend(b"Epoch:NOT_PRESENT")
        write_separator(s.print_headers or s.print_key or s.print_value)
    if s.print_headers:
        if not consumed.headers:
            out.extend(b"NO_HEADERS")
        else:
            for index, (name, header_value) in enumerate(consumed.headers):
                out.extend(name.encode() + b":")
                out.extend(deserialize(header_value))
                if index < len(consumed.headers) - 1:
                    out.extend(s.headers_separator)
        write_separator(s.print_key or s.print_value)
    if s.print_key:
        out.extend(deserialize(consumed.key))
        write_separator(s.print_value)
    if s.print_value:
        out.extend(deserialize(consumed.value))
        out.extend(s.line_separator)
    return bytes(out)


small_bytes = st.binary(max_size=12)
header_names = st.text(st.characters(codec="utf-8", exclude_characters=":"), max_size=6)
records = st.builds(
    record,
    value=st.none() | small_bytes,
    key=st.none() | small_bytes,
    topic=st.text(min_size=1, max_size=10),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**63 - 1),
    delivery_count=st.none() | st.integers(1, 2**15 - 1),
    timestamp_type=st.sampled_from([NO_TIMESTAMP, CREATE_TIME, LOG_APPEND_TIME]),
    timestamp=st.integers(0, 2**53),
    headers=st.lists(st.tuples(header_names, st.none() | small_bytes), max_size=3).map(tuple),
)
separators = st.text(max_size=3)
property_sets = st.fixed_dictionaries(
    {},
    optional={
        **{
            name: st.sampled_from(["true", "false", " TRUE ", "False"])
            for name in BOOLEAN_PROPERTIES
        },
        "key.separator": separators,
        "line.separator": separators,
        "headers.separator": separators,
        "null.literal": separators,
    },
)


@settings(max_examples=300)
@given(properties=property_sets, consumed=records)
def test_text_is_kafkas_write_to(properties: dict[str, str], consumed: ConsumedRecord) -> None:
    expected = kafka_write_to(parse_text_properties(properties), consumed)
    assert text(properties, consumed) == expected


@given(consumed=records, null_literal=separators, line_separator=separators)
def test_the_fast_default_layout_is_the_general_one(
    consumed: ConsumedRecord, null_literal: str, line_separator: str
) -> None:
    properties = {"null.literal": null_literal, "line.separator": line_separator}
    fast = make_formatter("text", properties, BYTES, BYTES)
    assert isinstance(fast, RawValueLines)
    general = TextFormatter(parse_text_properties(properties), BYTES, BYTES)
    assert fast.format(consumed) == general.format(consumed)


# ------------------------------------------------------------------ text: Kafka's fields


def test_defaults_print_the_value_and_a_newline() -> None:
    assert text({}, record(b"hello"), record(None)) == b"hello\nnull\n"


def test_every_field_in_kafkas_order() -> None:
    properties = {name: "true" for name in BOOLEAN_PROPERTIES}
    consumed = record(
        b"v3",
        b"k3",
        partition=2,
        offset=41,
        delivery_count=3,
        headers=(("a", b"1"), ("a", b"2"), ("n", None)),
    )
    assert text(properties, consumed) == (
        b"CreateTime:1767312000000\tPartition:2\tOffset:41\tDelivery:3\tEpoch:NOT_PRESENT"
        b"\ta:1,a:2,n:null\tk3\tv3\n"
    )


@pytest.mark.parametrize(
    ("timestamp_type", "expected"),
    [
        (CREATE_TIME, b"CreateTime:1767312000000\tv\n"),
        (LOG_APPEND_TIME, b"LogAppendTime:1767312000000\tv\n"),
        (NO_TIMESTAMP, b"NO_TIMESTAMP\tv\n"),
    ],
)
def test_timestamp_types(timestamp_type: int, expected: bytes) -> None:
    consumed = record(timestamp_type=timestamp_type)
    assert text({"print.timestamp": "true"}, consumed) == expected


def test_an_unknown_delivery_count_is_not_present() -> None:
    consumed = record(delivery_count=None)
    assert text({"print.delivery": "true"}, consumed) == b"Delivery:NOT_PRESENT\tv\n"


def test_without_the_value_the_last_field_ends_the_line() -> None:
    properties = {"print.value": "false", "print.offset": "true", "print.key": "true"}
    assert text(properties, record(offset=7)) == b"Offset:7\tk\n"


def test_nothing_printed_means_no_line_at_all() -> None:
    assert text({"print.value": "false"}, record(), record()) == b""


def test_separators_are_taken_literally_as_kafka_does() -> None:
    # kafka-console-share-consumer.sh --formatter-property 'key.separator=\t' prints a
    # backslash and a t: only a properties file would turn \t into a TAB.
    properties = {"print.key": "true", "key.separator": "\\t", "line.separator": "\\n"}
    assert text(properties, record()) == b"k\\tv\\n"


def test_separators_and_null_literal_are_utf8() -> None:
    properties = {
        "print.key": "true",
        "print.headers": "true",
        "key.separator": " → ",
        "headers.separator": "·",
        "null.literal": "∅",
        "line.separator": "\r\n",
    }
    consumed = record(None, headers=(("h", b"1"), ("i", None)))
    assert text(properties, consumed) == "h:1·i:∅ → k → ∅\r\n".encode()


def test_an_empty_line_separator_runs_records_together() -> None:
    assert text({"line.separator": ""}, record(b"a"), record(b"b")) == b"ab"


def test_bytes_are_printed_as_they_are() -> None:
    raw = bytes(range(256))
    assert text({"print.key": "true"}, record(raw, raw)) == raw + b"\t" + raw + b"\n"


# ------------------------------------------------------------------ text: properties


@pytest.mark.parametrize("word", ["true", "TRUE", " True ", "tRuE\t"])
def test_booleans_are_kafkas_case_insensitive_trimmed_true(word: str) -> None:
    assert parse_text_properties({"print.key": word}).print_key is True


@pytest.mark.parametrize("word", ["false", "FALSE", " False "])
def test_false_is_false(word: str) -> None:
    assert parse_text_properties({"print.value": word}).print_value is False


@pytest.mark.parametrize("word", ["yes", "1", "", "on", "truee"])
def test_a_boolean_kafka_would_read_as_false_is_a_usage_error(word: str) -> None:
    with pytest.raises(UsageError, match="print.key must be true or false"):
        make_formatter("text", {"print.key": word}, BYTES, BYTES)


def test_an_unknown_property_is_a_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown formatter property 'print.keys'.*print\.key"):
        make_formatter("text", {"print.keys": "true"}, BYTES, BYTES)


@pytest.mark.parametrize(
    ("name", "option"),
    [("key.deserializer", "--key-deserializer"), ("value.deserializer", "--value-deserializer")],
)
def test_deserializer_properties_point_at_the_options(name: str, option: str) -> None:
    with pytest.raises(UsageError, match=option):
        make_formatter("text", {name: "x"}, BYTES, BYTES)


def test_kafkas_misdocumented_header_deserializer_gets_a_hint() -> None:
    with pytest.raises(UsageError, match="headers.deserializer"):
        make_formatter("text", {"header.deserializer": "string"}, BYTES, BYTES)


def test_headers_deserializer_applies_to_header_values() -> None:
    properties = {"print.headers": "true", "headers.deserializer": "hex"}
    consumed = record(headers=(("h", b"\x00\xff"), ("n", None)))
    assert text(properties, consumed) == b"h:00ff,n:null\tv\n"


def test_headers_deserializer_takes_kafkas_class_names() -> None:
    properties = {
        "print.headers": "true",
        "headers.deserializer": "org.apache.kafka.common.serialization.IntegerDeserializer",
    }
    assert text(properties, record(headers=(("n", b"\x00\x00\x01\x00"),))) == b"n:256\tv\n"


def test_an_unknown_headers_deserializer_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown deserializer"):
        make_formatter("text", {"headers.deserializer": "morse"}, BYTES, BYTES)


def test_a_schema_registry_headers_deserializer_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="headers.deserializer cannot be avro"):
        make_formatter("text", {"headers.deserializer": "avro"}, BYTES, BYTES)


def test_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown format"):
        make_formatter("csv", {}, BYTES, BYTES)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["jsonl", "raw"])
def test_formatter_properties_are_for_text_only(kind: str) -> None:
    with pytest.raises(UsageError, match="apply to -o text only"):
        make_formatter(kind, {"print.key": "true"}, BYTES, BYTES)  # type: ignore[arg-type]


# ------------------------------------------------------------------ text: deserialized values


@pytest.mark.parametrize(
    ("name", "data", "printed"),
    [
        ("string", "żółw".encode(), "żółw".encode()),
        ("string", b"\xff", "\ufffd".encode()),
        ("int", b"\xff\xff\xff\xfe", b"-2"),
        ("long", struct.pack(">q", 2**62), str(2**62).encode()),
        ("double", struct.pack(">d", 1e7), b"1.0E7"),
        ("double", struct.pack(">d", 0.5), b"0.5"),
        ("double", struct.pack(">d", math.nan), b"NaN"),
        ("base64", b"\x00\xff", b"AP8="),
        ("hex", b"\x00\xff", b"00ff"),
        (
            "json",
            b'{ "a" : [1, 2.5, true, null, "\\u00e9"] }',
            '{"a":[1,2.5,true,null,"é"]}'.encode(),
        ),
        ("json", b'"just text"', b"just text"),
        ("json", b"false", b"false"),
    ],
)
def test_values_print_as_javas_to_string(name: str, data: bytes, printed: bytes) -> None:
    deserializer = make_deserializer(name)
    assert text({}, record(data), value=deserializer) == printed + b"\n"


def test_a_null_never_reaches_the_deserializer() -> None:
    # Kafka would hand the bytes of "null" to IntegerDeserializer and fail; kshare prints it.
    properties = {"print.key": "true", "null.literal": "-"}
    int_ = make_deserializer("int")
    assert text(properties, record(None, None), key=int_, value=int_) == b"-\t-\n"


def test_a_lone_surrogate_prints_as_javas_question_mark() -> None:
    output = text({}, record(b'"a\\ud800b"'), value=make_deserializer("json"))
    assert output == b"a?b\n"


def test_an_unreadable_value_names_the_record() -> None:
    with pytest.raises(DeserializationError) as caught:
        text(
            {},
            record(b"abc", topic="orders", partition=3, offset=17),
            value=make_deserializer("int"),
        )
    error = caught.value
    assert (error.topic, error.partition, error.offset, error.is_key) == ("orders", 3, 17, False)
    assert str(error) == (
        "cannot read the value of orders-3 at offset 17 with the int deserializer: "
        "Size of data received by IntegerDeserializer is not 4 (it is 3)"
    )


def test_an_unreadable_key_says_key() -> None:
    with pytest.raises(DeserializationError, match="cannot read the key of orders-0 at offset 0"):
        text({"print.key": "true"}, record(key=b"{"), key=make_deserializer("json"))


def test_an_unreadable_header_names_the_header() -> None:
    properties = {"print.headers": "true", "headers.deserializer": "long"}
    with pytest.raises(DeserializationError, match="cannot read the header 'trace' of orders-0"):
        text(properties, record(headers=(("trace", b"12"),)))


def test_a_key_that_is_not_printed_is_not_deserialized() -> None:
    # Kafka only deserializes what it prints; an unreadable key must not stop a value-only run.
    assert text({}, record(b"v", b"not an int"), key=make_deserializer("int")) == b"v\n"


# ------------------------------------------------------------------ Java's Double.toString


@pytest.mark.parametrize(
    ("number", "java"),
    [
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (0.00099, "9.9E-4"),
        (1234567.0, "1234567.0"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e21, "1.0E21"),
        (1e23, "1.0E23"),
        (1e-5, "1.0E-5"),
        (123.456, "123.456"),
        (2.0**-1074, "4.9E-324"),  # Double.MIN_VALUE
        (2.2250738585072014e-308, "2.2250738585072014E-308"),  # Double.MIN_NORMAL
        (1.7976931348623157e308, "1.7976931348623157E308"),  # Double.MAX_VALUE
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_java_double_to_string_vectors(number: float, java: str) -> None:
    assert java_double_to_string(number) == java


JAVA_DOUBLE = re.compile(r"-?(\d+\.\d+|\d\.\d+E-?\d+)")


@given(st.floats(allow_nan=False, allow_infinity=False))
@example(5e-324)
@example(9.999999999999999e-4)
def test_java_double_to_string_round_trips_in_javas_shape(number: float) -> None:
    printed = java_double_to_string(number)
    assert JAVA_DOUBLE.fullmatch(printed), printed
    assert float(printed) == number
    assert math.copysign(1.0, float(printed)) == math.copysign(1.0, number)
    plain = "E" not in printed
    assert plain == (number == 0 or 1e-3 <= abs(number) < 1e7)
    mantissa = printed.lstrip("-").split("E")[0]
    if not plain:
        # Scientific: one digit before the point, no trailing zeros after the first.
        fraction = mantissa.split(".")[1]
        assert mantissa[0] != "0"
        assert fraction == "0" or not fraction.endswith("0")


# ------------------------------------------------------------------ jsonl


def jsonl(consumed: ConsumedRecord, key: Deserializer = BYTES, value: Deserializer = BYTES) -> dict:  # type: ignore[type-arg]
    line = JsonLinesFormatter(key, value).format(consumed)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    document = json.loads(line)
    VALIDATOR.validate(document)
    assert isinstance(document, dict)
    return document


def test_jsonl_fields_in_order() -> None:
    consumed = record(b"v0", b"k0", offset=5, delivery_count=2, headers=(("h", b"x"), ("n", None)))
    line = JsonLinesFormatter(BYTES, BYTES).format(consumed)
    assert line == (
        b'{"topic":"orders","partition":0,"offset":5,"delivery_count":2,'
        b'"timestamp":1767312000000,"timestamp_type":"CreateTime","key":"k0","value":"v0",'
        b'"headers":[{"key":"h","value":"x"},{"key":"n","value":null}]}\n'
    )


def test_jsonl_without_timestamp_or_delivery_count_has_nulls() -> None:
    document = jsonl(record(timestamp_type=NO_TIMESTAMP, delivery_count=None))
    assert document["timestamp"] is None
    assert document["timestamp_type"] is None
    assert document["delivery_count"] is None


def test_jsonl_log_append_time() -> None:
    assert jsonl(record(timestamp_type=LOG_APPEND_TIME))["timestamp_type"] == "LogAppendTime"


def test_jsonl_bytes_that_are_not_utf8_are_base64_and_say_so() -> None:
    document = jsonl(record(b"\xff\x00", b"text", headers=(("bin", b"\x80"), ("t", b"ok"))))
    assert document["value"] == "/wA="
    assert document["value_encoding"] == "base64"
    assert document["key"] == "text"
    assert "key_encoding" not in document
    assert document["headers"] == [
        {"key": "bin", "value": "gA==", "value_encoding": "base64"},
        {"key": "t", "value": "ok"},
    ]


def test_jsonl_nulls() -> None:
    document = jsonl(record(None, None))
    assert document["key"] is None and document["value"] is None


def test_jsonl_carries_deserialized_json_types() -> None:
    document = jsonl(
        record(b'{"n": [1, 2.5, "x", null, {"b": false}]}', b"\x00\x00\x00\x2a"),
        key=make_deserializer("int"),
        value=make_deserializer("json"),
    )
    assert document["key"] == 42
    assert document["value"] == {"n": [1, 2.5, "x", None, {"b": False}]}


@pytest.mark.parametrize(
    ("number", "written"),
    [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"), (0.25, 0.25)],
)
def test_jsonl_doubles_json_cannot_hold_are_strings(number: float, written: object) -> None:
    document = jsonl(record(struct.pack(">d", number)), value=make_deserializer("double"))
    assert document["value"] == written


def test_jsonl_keeps_a_lone_surrogate_as_an_escape() -> None:
    line = JsonLinesFormatter(BYTES, make_deserializer("json")).format(record(b'"a\\ud800"'))
    assert b'"value":"a\\ud800"' in line
    assert json.loads(line)["value"] == "a\ud800"


def test_jsonl_writes_utf8_not_escapes() -> None:
    line = JsonLinesFormatter(BYTES, BYTES).format(record("żółw".encode()))
    assert '"value":"żółw"'.encode() in line


@settings(max_examples=200)
@given(consumed=records)
def test_jsonl_lines_are_valid_against_the_schema_and_lose_nothing(
    consumed: ConsumedRecord,
) -> None:
    document = jsonl(consumed)
    assert document["offset"] == consumed.offset
    assert document["partition"] == consumed.partition
    assert document["topic"] == consumed.topic
    for field in ("key", "value"):
        original = getattr(consumed, field)
        if document.get(f"{field}_encoding") == "base64":
            import base64

            assert base64.b64decode(document[field]) == original
        else:
            assert (None if document[field] is None else document[field].encode()) == original
    assert [header["key"] for header in document["headers"]] == [k for k, _ in consumed.headers]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters())
    | st.binary(max_size=6)
    | st.decimals(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300)
@given(consumed=records, key=json_values, value=json_values)
def test_jsonl_lines_are_the_documents_compact_json(
    consumed: ConsumedRecord, key: object, value: object
) -> None:
    # format() assembles the line by hand for speed; it must be document() as JSON.
    def constant(result: object) -> Deserializer:
        return lambda data, topic, is_key: result

    formatter = JsonLinesFormatter(constant(key), constant(value))
    document = formatter.document(consumed)
    expected = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        expected_line = (expected + "\n").encode("utf-8")
    except UnicodeEncodeError:
        expected_line = (json.dumps(document, separators=(",", ":")) + "\n").encode()
    assert formatter.format(consumed) == expected_line
    VALIDATOR.validate(json.loads(expected_line))


def test_json_value_converts_what_avro_decodes() -> None:
    import datetime
    import decimal
    import uuid

    converted = json_value(
        {
            "when": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC),
            "day": datetime.date(2026, 1, 2),
            "time": datetime.time(3, 4, 5),
            "price": decimal.Decimal("12.30"),
            "id": uuid.UUID(int=1),
            "blob": b"\x00\xff",
            "pair": ("a", 1),
            1: "int key",
        }
    )
    assert converted == {
        "when": "2026-01-02T03:04:05.006000+00:00",
        "day": "2026-01-02",
        "time": "03:04:05",
        "price": "12.30",
        "id": "00000000-0000-0000-0000-000000000001",
        "blob": "AP8=",
        "pair": ["a", 1],
        "1": "int key",
    }


# ------------------------------------------------------------------ raw


def test_raw_is_the_value_bytes_alone() -> None:
    formatter = make_formatter("raw", {}, BYTES, BYTES)
    assert isinstance(formatter, RawFormatter)
    payload = bytes(range(256))
    assert formatter.format(record(payload, b"key", headers=(("h", b"1"),))) == payload


def test_raw_writes_nothing_for_a_null_value() -> None:
    assert make_formatter("raw", {}, BYTES, BYTES).format(record(None)) == b""


def test_raw_ignores_the_deserializers() -> None:
    formatter = make_formatter("raw", {}, make_deserializer("int"), make_deserializer("int"))
    assert formatter.format(record(b"not an int")) == b"not an int"


# ------------------------------------------------------------------ ConsumedRecord.from_message


def test_from_message_copies_a_consumed_message() -> None:
    message = confluent_kafka.Message(
        topic="orders",
        partition=4,
        offset=99,
        key=b"k",
        value=b"v",
        headers=[("a", b"1"), ("a", None)],
        timestamp=(confluent_kafka.TIMESTAMP_LOG_APPEND_TIME, 1767312000123),
        delivery_count=2,
    )
    assert ConsumedRecord.from_message(message) == ConsumedRecord(
        topic="orders",
        partition=4,
        offset=99,
        delivery_count=2,
        timestamp_type=LOG_APPEND_TIME,
        timestamp=1767312000123,
        key=b"k",
        value=b"v",
        headers=(("a", b"1"), ("a", None)),
    )


def test_from_message_builds_a_real_frozen_record() -> None:
    import dataclasses

    from kshare_cli.consumer import records as records_module

    # from_message builds through a mutable twin of ConsumedRecord; their slots must match.
    twin = records_module._Unfrozen
    assert twin.__slots__ == tuple(f.name for f in dataclasses.fields(ConsumedRecord))
    assert twin.__slots__ == ConsumedRecord.__slots__
    message = confluent_kafka.Message(topic="t", partition=1, offset=2, key=b"k", value=b"v")
    built = ConsumedRecord.from_message(message)
    assert type(built) is ConsumedRecord
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.offset = 3  # type: ignore[misc]
    assert hash(built) == hash(dataclasses.replace(built))
    assert repr(built).startswith("ConsumedRecord(topic='t', partition=1, offset=2")


def test_from_message_without_timestamp_headers_or_count() -> None:
    message = confluent_kafka.Message(
        topic="t",
        partition=0,
        offset=0,
        key=None,
        value=None,
        headers=None,
        timestamp=(confluent_kafka.TIMESTAMP_NOT_AVAILABLE, 0),
    )
    consumed = ConsumedRecord.from_message(message)
    assert (consumed.timestamp_type, consumed.timestamp) == (NO_TIMESTAMP, -1)
    assert consumed.headers == ()
    assert consumed.delivery_count is None
    assert consumed.key is None and consumed.value is None


def test_from_message_takes_dict_headers_and_str_payloads() -> None:
    message = confluent_kafka.Message(
        topic="t", partition=0, offset=0, key="ключ", value="v", headers={"h": "x"}
    )
    consumed = ConsumedRecord.from_message(message)
    assert consumed.key == "ключ".encode()
    assert consumed.headers == (("h", b"x"),)


def test_from_message_refuses_an_error_event() -> None:
    message = confluent_kafka.Message(
        topic="t",
        partition=0,
        offset=0,
        error=confluent_kafka.KafkaError(confluent_kafka.KafkaError._PARTITION_EOF),
    )
    with pytest.raises(ValueError, match="carries an error"):
        ConsumedRecord.from_message(message)


def test_the_timestamp_constants_are_confluents() -> None:
    assert (NO_TIMESTAMP, CREATE_TIME, LOG_APPEND_TIME) == (
        confluent_kafka.TIMESTAMP_NOT_AVAILABLE,
        confluent_kafka.TIMESTAMP_CREATE_TIME,
        confluent_kafka.TIMESTAMP_LOG_APPEND_TIME,
    )


def test_the_bytes_deserializer_is_the_identity_the_fast_path_checks_for() -> None:
    assert make_deserializer("bytes") is deserialize_bytes
