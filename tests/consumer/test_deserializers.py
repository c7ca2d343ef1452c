"""Deserializers: Kafka's fixed-width ones to the byte, and Avro, JSON Schema and Protobuf
through a schema registry.

The registry formats are tested end to end against a real HTTP server in this process
that answers the part of Confluent Schema Registry's REST API the serde uses
(register, look up, fetch by id, fetch a subject version). The records are written
by confluent-kafka's own AvroSerializer, JSONSerializer and ProtobufSerializer, so
what kshare reads is what a Confluent producer writes.
"""

from __future__ import annotations

import base64
import json
import math
import re
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.consumer.deserializers import (
    JAVA_CLASS_NAMES,
    NAMES,
    REGISTRY_NAMES,
    DeserializationError,
    SchemaRegistryFailed,
    deserialize_double,
    deserialize_int,
    deserialize_long,
    make_deserializer,
    registry_client_config,
)
from kshare_cli.consumer.record_formatters import make_formatter
from kshare_cli.consumer.records import CREATE_TIME, ConsumedRecord
from kshare_cli.errors import ConnectionFailed, UsageError

ROOT = Path(__file__).resolve().parents[2]
FIXED_NAMES = [name for name in NAMES if name not in REGISTRY_NAMES]

# ------------------------------------------------------ Kafka's fixed-width deserializers


@pytest.mark.parametrize(
    ("data", "number"),
    [
        (b"\x00\x00\x00\x00", 0),
        (b"\x00\x00\x00\x01", 1),
        (b"\xff\xff\xff\xff", -1),
        (b"\x7f\xff\xff\xff", 2**31 - 1),
        (b"\x80\x00\x00\x00", -(2**31)),
        (b"\x01\x02\x03\x04", 0x01020304),
    ],
)
def test_int_is_four_big_endian_signed_bytes(data: bytes, number: int) -> None:
    assert deserialize_int(data, "t", False) == number


@pytest.mark.parametrize(
    ("data", "number"),
    [
        (b"\x00" * 8, 0),
        (b"\xff" * 8, -1),
        (b"\x7f" + b"\xff" * 7, 2**63 - 1),
        (b"\x80" + b"\x00" * 7, -(2**63)),
        (b"\x00\x00\x01\x9b\x7c\x01\x04\x00", 1767312000000),
    ],
)
def test_long_is_eight_big_endian_signed_bytes(data: bytes, number: int) -> None:
    assert deserialize_long(data, "t", True) == number


@pytest.mark.parametrize(
    ("data", "number"),
    [
        (b"\x3f\xf0\x00\x00\x00\x00\x00\x00", 1.0),
        (b"\xc0\x00\x00\x00\x00\x00\x00\x00", -2.0),
        (b"\x00\x00\x00\x00\x00\x00\x00\x01", 5e-324),
        (b"\x7f\xf0\x00\x00\x00\x00\x00\x00", math.inf),
    ],
)
def test_double_is_eight_big_endian_ieee754_bytes(data: bytes, number: float) -> None:
    assert deserialize_double(data, "t", False) == number


def test_double_nan_and_negative_zero() -> None:
    assert math.isnan(deserialize_double(b"\x7f\xf8" + b"\x00" * 6, "t", False))
    negative_zero = deserialize_double(b"\x80" + b"\x00" * 7, "t", False)
    assert negative_zero == 0 and math.copysign(1, negative_zero) == -1


@given(st.integers(-(2**31), 2**31 - 1))
def test_int_reads_what_kafkas_integer_serializer_writes(number: int) -> None:
    assert deserialize_int(number.to_bytes(4, "big", signed=True), "t", False) == number


@given(st.integers(-(2**63), 2**63 - 1))
def test_long_reads_what_kafkas_long_serializer_writes(number: int) -> None:
    assert deserialize_long(number.to_bytes(8, "big", signed=True), "t", False) == number


@given(st.floats(allow_nan=False))
def test_double_reads_what_kafkas_double_serializer_writes(number: float) -> None:
    assert deserialize_double(struct.pack(">d", number), "t", False) == number


@pytest.mark.parametrize(
    ("name", "java", "size"),
    [
        ("int", "IntegerDeserializer", 4),
        ("long", "LongDeserializer", 8),
        ("double", "DoubleDeserializer", 8),
    ],
)
@given(data=st.binary(max_size=16))
def test_any_other_length_is_kafkas_error(name: str, java: str, size: int, data: bytes) -> None:
    deserializer = make_deserializer(name)
    if len(data) == size:
        deserializer(data, "t", False)
        return
    with pytest.raises(DeserializationError) as caught:
        deserializer(data, "orders", True)
    assert (
        caught.value.reason == f"Size of data received by {java} is not {size} (it is {len(data)})"
    )
    assert (caught.value.topic, caught.value.is_key, caught.value.deserializer) == (
        "orders",
        True,
        name,
    )


# ------------------------------------------------------------------ text deserializers


@given(st.text())
def test_string_reads_utf8(text: str) -> None:
    assert make_deserializer("string")(text.encode("utf-8", "surrogatepass"), "t", False) == text


def test_string_replaces_malformed_utf8_as_kafkas_string_deserializer() -> None:
    string = make_deserializer("string")
    assert string(b"a\xffb", "t", False) == "a\ufffdb"
    assert string(b"\xc3", "t", False) == "\ufffd"


@given(st.binary())
def test_base64_and_hex_encode_every_byte(data: bytes) -> None:
    encoded = make_deserializer("base64")(data, "t", False)
    assert isinstance(encoded, str)
    assert base64.b64decode(encoded, validate=True) == data
    assert make_deserializer("hex")(data, "t", False) == data.hex()


@pytest.mark.parametrize(
    ("data", "document"),
    [
        (b'{"a": 1, "b": [true, null, 2.5]}', {"a": 1, "b": [True, None, 2.5]}),
        (b"[]", []),
        (b'"text"', "text"),
        (b"12345678901234567890", 12345678901234567890),
        ('{"ü": "ß"}'.encode("utf-16"), {"ü": "ß"}),
    ],
)
def test_json_reads_a_document(data: bytes, document: object) -> None:
    assert make_deserializer("json")(data, "t", False) == document


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"{'a': 1}", b"NaN", b"[Infinity]", b"-Infinity", b"1e400", b"\xff", b"1 2"],
)
def test_json_refuses_what_is_not_json_or_has_no_json_spelling(data: bytes) -> None:
    with pytest.raises(DeserializationError) as caught:
        make_deserializer("json")(data, "orders", False)
    assert caught.value.deserializer == "json"


@pytest.mark.parametrize("name", FIXED_NAMES)
def test_null_stays_null(name: str) -> None:
    assert make_deserializer(name)(None, "t", False) is None
    assert make_deserializer(name)(None, "t", True) is None


def test_bytes_are_handed_over_untouched() -> None:
    data = bytes(range(256))
    assert make_deserializer("bytes")(data, "t", False) is data


# ------------------------------------------------------------------ names


@pytest.mark.parametrize("java_name", sorted(JAVA_CLASS_NAMES))
def test_kafkas_class_names_are_accepted(java_name: str) -> None:
    name = JAVA_CLASS_NAMES[java_name]
    if name in REGISTRY_NAMES:
        with pytest.raises(UsageError, match=f"the {name} deserializer needs a schema registry"):
            make_deserializer(java_name)
    else:
        assert make_deserializer(java_name) is make_deserializer(name)


def test_names_are_case_insensitive_and_trimmed() -> None:
    assert make_deserializer(" Int ") is make_deserializer("int")


def test_an_unknown_name_is_a_usage_error_listing_the_choices() -> None:
    with pytest.raises(
        UsageError, match="unknown deserializer 'utf8': choose one of string, bytes"
    ):
        make_deserializer("utf8")


@pytest.mark.parametrize("name", REGISTRY_NAMES)
def test_schema_formats_need_a_registry(name: str) -> None:
    with pytest.raises(UsageError, match="needs a schema registry URL"):
        make_deserializer(name)


def test_fixed_formats_ignore_a_registry() -> None:
    assert make_deserializer("string", schema_registry={"url": "http://x"})(b"a", "t", False) == "a"


# ------------------------------------------------------------------ registry settings


def test_registry_settings_are_confluents_with_types() -> None:
    assert registry_client_config(
        {
            "schema.registry.url": "http://r:8081",
            "basic.auth.user.info": "u:p",
            "timeout": "2.5",
            "max.retries": "0",
            "cache.capacity": "10",
            "ssl.ca.location": "false",
        }
    ) == {
        "url": "http://r:8081",
        "basic.auth.user.info": "u:p",
        "timeout": 2.5,
        "max.retries": 0,
        "cache.capacity": 10,
        "ssl.ca.location": False,
    }


def test_a_non_numeric_registry_setting_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="max.retries must be a number"):
        registry_client_config({"url": "http://r", "max.retries": "many"})


def test_a_registry_without_url_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs a URL"):
        make_deserializer("avro", schema_registry={"basic.auth.user.info": "u:p"})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"url": "http://r", "colour": "blue"}, "Unrecognized properties: colour"),
        ({"url": "ftp://r"}, "Invalid url"),
        ({"url": "http://r", "basic.auth.user.info": "no-colon"}, "basic.auth.user.info"),
    ],
)
def test_settings_confluent_refuses_are_usage_errors(
    settings: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        make_deserializer("avro", schema_registry=settings)


def test_a_refused_url_is_shown_without_its_password() -> None:
    with pytest.raises(UsageError, match="Invalid url ftp://r:8081$") as caught:
        make_deserializer("avro", schema_registry={"url": "ftp://reader:s3cret@r:8081"})
    assert "s3cret" not in str(caught.value)


def test_without_the_registry_packages_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "httpx2", None)
    with pytest.raises(UsageError, match=re.escape("pip install 'kshare-cli[registry]'")):
        make_deserializer("protobuf", schema_registry={"url": "http://r"})


def test_the_base_install_loads_no_registry_package() -> None:
    code = (
        "import sys\n"
        "from kshare_cli.consumer.deserializers import make_deserializer\n"
        "from kshare_cli.consumer.record_formatters import make_formatter\n"
        "from kshare_cli.consumer.records import ConsumedRecord\n"
        "for kind in ('text', 'jsonl', 'raw'):\n"
        "    make_formatter(kind, {}, make_deserializer('json'), make_deserializer('double'))\n"
        "heavy = ('confluent_kafka', 'httpx2', 'httpx', 'fastavro', 'google', 'jsonschema',\n"
        "         'authlib')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ------------------------------------------------------------------ a schema registry over HTTP


@dataclass
class RegistryState:
    """What the in-process registry holds and saw."""

    schemas: dict[int, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, list[int]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    credentials: str | None = None  # "user:password" required when set
    fail_with: int | None = None  # answer every request with this status
    lock: threading.Lock = field(default_factory=threading.Lock)


class RegistryHandler(BaseHTTPRequestHandler):
    """Confluent Schema Registry's REST API, the part confluent-kafka's serde calls."""

    server: RegistryServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self, code: int, message: str) -> None:
        self._answer(404, {"error_code": code, "message": message})

    def _refused(self) -> bool:
        state = self.server.state
        state.requests.append(f"{self.command} {self.path}")
        if state.fail_with is not None:
            self._answer(state.fail_with, {"error_code": 50001, "message": "Error in the backend"})
            return True
        if state.credentials is not None:
            expected = "Basic " + base64.b64encode(state.credentials.encode()).decode()
            if self.headers.get("Authorization") != expected:
                self._answer(401, {"error_code": 401, "message": "Unauthorized"})
                return True
        return False

    def _entry(self, schema_id: int) -> dict[str, Any]:
        return self.server.state.schemas[schema_id]

    def do_GET(self) -> None:
        if self._refused():
            return
        state = self.server.state
        path = urlsplit(self.path).path
        if match := re.fullmatch(r"/schemas/ids/(\d+)", path):
            schema_id = int(match[1])
            if schema_id in state.schemas:
                self._answer(200, self._entry(schema_id))
            else:
                self._not_found(40403, f"Schema {schema_id} not found")
        elif match := re.fullmatch(r"/subjects/([^/]+)/versions/(\d+|latest)", path):
            subject, version = unquote(match[1]), match[2]
            ids = state.versions.get(subject)
            if not ids:
                self._not_found(40401, f"Subject '{subject}' not found.")
                return
            number = len(ids) if version == "latest" else int(version)
            if not 1 <= number <= len(ids):
                self._not_found(40402, f"Version {version} not found.")
                return
            schema_id = ids[number - 1]
            self._answer(
                200,
                {"subject": subject, "version": number, "id": schema_id, **self._entry(schema_id)},
            )
        else:
            self._not_found(404, "HTTP 404 Not Found")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self._refused():
            return
        state = self.server.state
        path = urlsplit(self.path).path
        entry = {
            "schema": body["schema"],
            "schemaType": body.get("schemaType", "AVRO"),
            "references": body.get("references") or [],
        }
        if match := re.fullmatch(r"/subjects/([^/]+)/versions", path):
            with state.lock:
                schema_id = next((i for i, e in state.schemas.items() if e == entry), None)
                if schema_id is None:
                    schema_id = len(state.schemas) + 1
                    state.schemas[schema_id] = entry
                ids = state.versions.setdefault(unquote(match[1]), [])
                if schema_id not in ids:
                    ids.append(schema_id)
            self._answer(200, {"id": schema_id})
        elif match := re.fullmatch(r"/subjects/([^/]+)", path):
            subject = unquote(match[1])
            for number, schema_id in enumerate(state.versions.get(subject, []), start=1):
                if self._entry(schema_id) == entry:
                    self._answer(
                        200, {"subject": subject, "version": number, "id": schema_id, **entry}
                    )
                    return
            self._not_found(40403, "Schema not found")
        else:
            self._not_found(404, "HTTP 404 Not Found")


class RegistryServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), RegistryHandler)
        self.state = RegistryState()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def registry() -> Iterator[RegistryServer]:
    server = RegistryServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def registry_client(server: RegistryServer, **settings: object) -> Any:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": server.url, **settings})


def context(topic: str, is_key: bool = False) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)


def consumed(
    value: bytes | None, key: bytes | None = None, topic: str = "orders"
) -> ConsumedRecord:
    return ConsumedRecord(
        topic=topic,
        partition=0,
        offset=7,
        delivery_count=1,
        timestamp_type=CREATE_TIME,
        timestamp=1767312000000,
        key=key,
        value=value,
    )


# Serializers of the test side use the TOPIC strategy too, so the subjects are
# "<topic>-key" / "<topic>-value" as with Confluent's defaults before associations.
SERIALIZER_CONFIG = {"subject.name.strategy.type": "TOPIC"}


# ------------------------------------------------------------------ Avro

ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "kshare.test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "blob", "type": "bytes"},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attributes", "type": {"type": "map", "values": "int"}},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "buyer",
            "type": {
                "type": "record",
                "name": "Buyer",
                "fields": [{"name": "name", "type": "string"}, {"name": "score", "type": "double"}],
            },
        },
    ],
}


def avro_order() -> dict[str, Any]:
    import datetime
    import decimal

    return {
        "id": 2**40,
        "item": "żółw",
        "note": None,
        "blob": b"\x00\xff",
        "state": "PAID",
        "tags": ["a", "b"],
        "attributes": {"size": 3},
        "price": decimal.Decimal("12.30"),
        "placed": datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC),
        "buyer": {"name": "ann", "score": 0.5},
    }


AVRO_ORDER_JSON = {
    "id": 2**40,
    "item": "żółw",
    "note": None,
    "blob": "AP8=",
    "state": "PAID",
    "tags": ["a", "b"],
    "attributes": {"size": 3},
    "price": "12.30",
    "placed": "2026-01-02T00:00:00+00:00",
    "buyer": {"name": "ann", "score": 0.5},
}


def test_avro_reads_what_confluents_avro_serializer_writes(registry: RegistryServer) -> None:
    from confluent_kafka.schema_registry.avro import AvroSerializer

    serializer = AvroSerializer(
        registry_client(registry), json.dumps(ORDER_AVRO), conf=SERIALIZER_CONFIG
    )
    data = serializer(avro_order(), context("orders"))
    assert data[0] == 0  # Confluent framing: magic byte, then the schema id

    avro = make_deserializer("avro", schema_registry={"url": registry.url})
    value = avro(data, "orders", False)
    assert isinstance(value, dict)
    assert value["blob"] == b"\x00\xff"  # fastavro's types come through to the formatter

    jsonl = make_formatter("jsonl", {}, make_deserializer("string"), avro)
    document = json.loads(jsonl.format(consumed(data, b"order-1")))
    assert document["value"] == AVRO_ORDER_JSON
    assert document["key"] == "order-1"

    text = make_formatter("text", {"print.key": "true"}, make_deserializer("string"), avro)
    line = text.format(consumed(data, b"order-1"))
    key, _, rest = line.partition(b"\t")
    assert key == b"order-1"
    assert rest.endswith(b"\n")
    assert json.loads(rest) == AVRO_ORDER_JSON
    assert b" " not in rest.replace("żółw".encode(), b"")  # compact JSON, UTF-8 unescaped
    assert "żółw".encode() in rest


def test_avro_keys_are_read_from_the_key_subject(registry: RegistryServer) -> None:
    from confluent_kafka.schema_registry.avro import AvroSerializer

    client = registry_client(registry)
    key_serializer = AvroSerializer(client, '"string"', conf=SERIALIZER_CONFIG)
    value_serializer = AvroSerializer(client, '"long"', conf=SERIALIZER_CONFIG)
    key = key_serializer("customer-9", context("orders", is_key=True))
    value = value_serializer(41, context("orders"))
    assert registry.state.versions.keys() == {"orders-key", "orders-value"}

    settings = {"url": registry.url}
    formatter = make_formatter(
        "text",
        {"print.key": "true"},
        make_deserializer("avro", schema_registry=settings),
        make_deserializer(
            "io.confluent.kafka.serializers.KafkaAvroDeserializer", schema_registry=settings
        ),
    )
    # Primitive schemas print as Kafka prints a String or a Long: no JSON quotes.
    assert formatter.format(consumed(value, key)) == b"customer-9\t41\n"


def test_avro_asks_the_registry_once_per_schema(registry: RegistryServer) -> None:
    from confluent_kafka.schema_registry.avro import AvroSerializer

    serializer = AvroSerializer(registry_client(registry), '"string"', conf=SERIALIZER_CONFIG)
    payloads = [serializer(f"v{n}", context("orders")) for n in range(20)]
    before = len(registry.state.requests)
    avro = make_deserializer("avro", schema_registry={"url": registry.url})
    assert [avro(p, "orders", False) for p in payloads] == [f"v{n}" for n in range(20)]
    fetches = registry.state.requests[before:]
    assert fetches == ["GET /schemas/ids/1?subject=orders-value"]


def test_a_null_is_not_sent_to_the_registry(registry: RegistryServer) -> None:
    avro = make_deserializer("avro", schema_registry={"url": registry.url})
    assert avro(None, "orders", False) is None
    assert registry.state.requests == []


# ------------------------------------------------------------------ JSON Schema

ORDER_JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id"],
}


def test_jsonschema_reads_what_confluents_json_serializer_writes(registry: RegistryServer) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    serializer = JSONSerializer(
        json.dumps(ORDER_JSON_SCHEMA), registry_client(registry), conf=SERIALIZER_CONFIG
    )
    order = {"id": 5, "items": ["pen", "ink"]}
    data = serializer(order, context("orders"))

    deserializer = make_deserializer(
        "jsonschema", schema_registry={"schema.registry.url": registry.url}
    )
    assert deserializer(data, "orders", False) == order
    text = make_formatter("text", {}, make_deserializer("bytes"), deserializer)
    assert text.format(consumed(data)) == b'{"id":5,"items":["pen","ink"]}\n'
    jsonl = make_formatter("jsonl", {}, make_deserializer("bytes"), deserializer)
    assert json.loads(jsonl.format(consumed(data)))["value"] == order


def test_jsonschema_refuses_a_payload_its_schema_does_not_allow(registry: RegistryServer) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    serializer = JSONSerializer(
        json.dumps(ORDER_JSON_SCHEMA), registry_client(registry), conf=SERIALIZER_CONFIG
    )
    framing = serializer({"id": 1}, context("orders"))[:5]
    deserializer = make_deserializer("jsonschema", schema_registry={"url": registry.url})
    with pytest.raises(DeserializationError, match="jsonschema deserializer") as caught:
        deserializer(framing + b'{"id": "one"}', "orders", False)
    assert not isinstance(caught.value, ConnectionFailed)


# ------------------------------------------------------------------ Protobuf


def protobuf_classes() -> dict[str, Any]:
    """Message classes built at run time (no protoc): a file that imports another."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field_type = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()

    common = descriptor_pb2.FileDescriptorProto(
        name="kshare/common.proto", package="kshare.common", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="currency", number=1, type=field_type.TYPE_STRING, label=1)
    money.field.add(name="cents", number=2, type=field_type.TYPE_INT64, label=1)
    pool.Add(common)

    orders = descriptor_pb2.FileDescriptorProto(
        name="kshare/orders.proto",
        package="kshare.orders",
        syntax="proto3",
        dependency=["kshare/common.proto"],
    )
    status = orders.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    order = orders.message_type.add(name="Order")
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=field_type.TYPE_STRING, label=1)
    line.field.add(name="quantity", number=2, type=field_type.TYPE_INT32, label=1)
    order.field.add(name="id", number=1, type=field_type.TYPE_INT64, label=1)
    order.field.add(
        name="lines",
        number=2,
        type=field_type.TYPE_MESSAGE,
        label=3,
        type_name=".kshare.orders.Order.Line",
    )
    order.field.add(
        name="total",
        number=3,
        type=field_type.TYPE_MESSAGE,
        label=1,
        type_name=".kshare.common.Money",
    )
    order.field.add(
        name="status",
        number=4,
        type=field_type.TYPE_ENUM,
        label=1,
        type_name=".kshare.orders.Status",
    )
    order.field.add(name="signature", number=5, type=field_type.TYPE_BYTES, label=1)
    order.field.add(name="gift", number=6, type=field_type.TYPE_BOOL, label=1)
    refund = orders.message_type.add(name="Refund")
    refund.field.add(name="order_id", number=1, type=field_type.TYPE_INT64, label=1)
    refund.field.add(name="reason", number=2, type=field_type.TYPE_STRING, label=1)
    pool.Add(orders)

    def message(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))

    return {
        "Order": message("kshare.orders.Order"),
        "Line": message("kshare.orders.Order.Line"),
        "Refund": message("kshare.orders.Refund"),
        "Money": message("kshare.common.Money"),
    }


def protobuf_serializer(server: RegistryServer, message_class: Any) -> Any:
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    return ProtobufSerializer(
        message_class,
        registry_client(server),
        {"use.deprecated.format": False, **SERIALIZER_CONFIG},
    )


def test_protobuf_reads_a_message_without_generated_classes(registry: RegistryServer) -> None:
    classes = protobuf_classes()
    order = classes["Order"](
        id=2**40,
        lines=[classes["Line"](sku="pen", quantity=2)],
        total=classes["Money"](currency="EUR", cents=1250),
        status=1,
        signature=b"\x00\xff",
    )
    data = protobuf_serializer(registry, classes["Order"])(order, context("orders"))
    # The import travelled as a schema reference, registered under its own subject.
    assert "kshare/common.proto" in registry.state.versions

    protobuf = make_deserializer("protobuf", schema_registry={"url": registry.url})
    expected = {
        "id": str(2**40),  # proto3's JSON mapping writes 64-bit integers as strings
        "lines": [{"sku": "pen", "quantity": 2}],
        "total": {"currency": "EUR", "cents": "1250"},
        "status": "PAID",
        "signature": "AP8=",
        "gift": False,  # fields at their default are shown
    }
    assert protobuf(data, "orders", False) == expected
    jsonl = make_formatter("jsonl", {}, make_deserializer("bytes"), protobuf)
    assert json.loads(jsonl.format(consumed(data)))["value"] == expected
    text = make_formatter("text", {}, make_deserializer("bytes"), protobuf)
    assert json.loads(text.format(consumed(data))) == expected


@pytest.mark.parametrize(
    ("message", "fields", "expected"),
    [
        ("Refund", {"order_id": 3, "reason": "late"}, {"order_id": "3", "reason": "late"}),
        ("Line", {"sku": "ink", "quantity": 1}, {"sku": "ink", "quantity": 1}),
    ],
)
def test_protobuf_finds_the_message_the_framing_names(
    registry: RegistryServer, message: str, fields: dict[str, object], expected: dict[str, object]
) -> None:
    # Refund is the file's second message (index [1]), Line is nested in Order ([0, 0]).
    classes = protobuf_classes()
    data = protobuf_serializer(registry, classes[message])(classes[message](**fields), context("t"))
    protobuf = make_deserializer("protobuf", schema_registry={"url": registry.url})
    assert protobuf(data, "t", False) == expected


def test_protobuf_reads_several_writer_types_on_one_topic(registry: RegistryServer) -> None:
    classes = protobuf_classes()
    refund = protobuf_serializer(registry, classes["Refund"])(
        classes["Refund"](order_id=1), context("t")
    )
    money = protobuf_serializer(registry, classes["Money"])(
        classes["Money"](currency="PLN"), context("t")
    )
    protobuf = make_deserializer("protobuf", schema_registry={"url": registry.url})
    assert protobuf(money, "t", False) == {"currency": "PLN", "cents": "0"}
    assert protobuf(refund, "t", False) == {"order_id": "1", "reason": ""}
    assert protobuf(money, "t", False) == {"currency": "PLN", "cents": "0"}


def test_protobuf_refuses_a_payload_that_is_not_its_message(registry: RegistryServer) -> None:
    classes = protobuf_classes()
    data = protobuf_serializer(registry, classes["Money"])(classes["Money"](cents=1), context("t"))
    protobuf = make_deserializer("protobuf", schema_registry={"url": registry.url})
    with pytest.raises(DeserializationError, match="protobuf deserializer"):
        protobuf(data[:6] + b"\x0a\xff", "t", False)  # a string field longer than the record


# ------------------------------------------------------------------ records that are not readable


@pytest.mark.parametrize("name", REGISTRY_NAMES)
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"plain text, no framing", "magic byte|framing|Invalid"),
        (b"\x00\x00", "framing|unpack|Invalid|EOF|buffer"),
        (b"\x00\x00\x00\x03\xe7\x00", "no such schema"),  # schema id 999
    ],
)
def test_records_the_registry_formats_cannot_read(
    registry: RegistryServer, name: str, data: bytes, reason: str
) -> None:
    deserializer = make_deserializer(name, schema_registry={"url": registry.url})
    with pytest.raises(DeserializationError, match=reason) as caught:
        deserializer(data, "orders", True)
    assert (caught.value.topic, caught.value.is_key, caught.value.deserializer) == (
        "orders",
        True,
        name,
    )


def test_an_unreadable_record_names_its_offset_through_the_formatter(
    registry: RegistryServer,
) -> None:
    avro = make_deserializer("avro", schema_registry={"url": registry.url})
    formatter = make_formatter("jsonl", {}, make_deserializer("bytes"), avro)
    with pytest.raises(DeserializationError, match="of orders-0 at offset 7 with the avro"):
        formatter.format(consumed(b"\x00\x00\x00\x03\xe7\x00"))


# ------------------------------------------------------ registry failures: not the record's


def test_a_failing_registry_is_a_connection_failure(registry: RegistryServer) -> None:
    registry.state.fail_with = 500
    avro = make_deserializer("avro", schema_registry={"url": registry.url, "max.retries": "0"})
    with pytest.raises(SchemaRegistryFailed, match="Error in the backend") as caught:
        avro(b"\x00\x00\x00\x00\x01\x02", "orders", False)
    assert isinstance(caught.value, ConnectionFailed)
    assert not isinstance(caught.value, DeserializationError)


def test_an_unreachable_registry_is_a_connection_failure() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = {"url": f"http://127.0.0.1:{port}", "max.retries": "0", "timeout": "5"}
    avro = make_deserializer("avro", schema_registry=settings)
    with pytest.raises(SchemaRegistryFailed, match="unreachable"):
        avro(b"\x00\x00\x00\x00\x01\x02", "orders", False)


def test_basic_auth_reaches_the_registry(registry: RegistryServer) -> None:
    from confluent_kafka.schema_registry.avro import AvroSerializer

    registry.state.credentials = "reader:s3cret"
    serializer = AvroSerializer(
        registry_client(registry, **{"basic.auth.user.info": "reader:s3cret"}),
        '"string"',
        conf=SERIALIZER_CONFIG,
    )
    data = serializer("hello", context("orders"))
    settings = {"url": registry.url, "basic.auth.user.info": "reader:s3cret"}
    assert make_deserializer("avro", schema_registry=settings)(data, "orders", False) == "hello"


def test_refused_credentials_are_a_connection_failure_that_hides_them(
    registry: RegistryServer,
) -> None:
    registry.state.credentials = "reader:s3cret"
    url = registry.url.replace("http://", "http://reader:wrong-password@")
    avro = make_deserializer("avro", schema_registry={"url": url, "max.retries": "0"})
    with pytest.raises(SchemaRegistryFailed, match="Unauthorized") as caught:
        avro(b"\x00\x00\x00\x00\x01\x02", "orders", False)
    assert "wrong-password" not in str(caught.value)
    assert registry.url in str(caught.value)
