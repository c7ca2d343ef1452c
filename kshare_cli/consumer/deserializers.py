"""Deserializers for ``kshare consume --key-deserializer/--value-deserializer``.

A deserializer turns a record's key or value bytes into the value the formatters print:
``(data, topic, is_key) -> str | bytes | int | float | bool | dict | list | None``. None
always stays None, so every formatter prints a null the same way whatever the
deserializer.

The fixed-width ones are Kafka's, to the byte: ``int``, ``long`` and ``double`` read
exactly 4, 8 and 8 big-endian bytes (``IntegerDeserializer``, ``LongDeserializer``,
``DoubleDeserializer``) and any other length is an error, never a silent truncation.
``string`` is Kafka's ``StringDeserializer``: UTF-8, malformed bytes replaced with U+FFFD.
``bytes`` hands the bytes over untouched; it is what Kafka's console consumer does when
no deserializer is given.

``avro``, ``jsonschema`` and ``protobuf`` read Confluent's wire format (magic byte, schema
id, payload) through confluent-kafka's own serde and a schema registry. Their packages
are the ``registry`` extra and are imported only when such a deserializer is made, so
``kshare consume`` without them loads nothing of the kind.

A record that cannot be read raises :class:`DeserializationError` (the record is at
fault: ``--reject-on-error`` may reject it). A schema registry that cannot be reached,
refuses our credentials or fails raises :class:`SchemaRegistryFailed`, a connection
error: the record is not at fault, and rejecting it would lose it.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

from kshare_cli.errors import ConnectionFailed, UsageError

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

Deserializer = Callable[[bytes | None, str, bool], object]


class DeserializationError(Exception):
    """A record's key or value that its deserializer cannot read.

    Raised by a deserializer with the topic and the field it knows; the formatter adds
    the partition and offset (:meth:`at`) so the operator can find the record.
    """

    def __init__(
        self,
        reason: str,
        *,
        deserializer: str,
        topic: str | None = None,
        is_key: bool | None = None,
        partition: int | None = None,
        offset: int | None = None,
        header: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.deserializer = deserializer
        self.topic = topic
        self.is_key = is_key
        self.partition = partition
        self.offset = offset
        self.header = header

    def at(self, partition: int, offset: int, header: str | None = None) -> DeserializationError:
        """The same error, placed at a record's partition and offset (and header)."""
        return DeserializationError(
            self.reason,
            deserializer=self.deserializer,
            topic=self.topic,
            is_key=self.is_key,
            partition=partition,
            offset=offset,
            header=header if header is not None else self.header,
        )

    def __str__(self) -> str:
        if self.header is not None:
            field = f"header {self.header!r}"
        else:
            field = {True: "key", False: "value", None: "data"}[self.is_key]
        where = ""
        if self.topic is not None:
            where = f" of {self.topic}"
            if self.partition is not None:
                where += f"-{self.partition}"
            if self.offset is not None:
                where += f" at offset {self.offset}"
        reader = f"the {self.deserializer} deserializer"
        return f"cannot read the {field}{where} with {reader}: {self.reason}"


class SchemaRegistryFailed(ConnectionFailed):
    """The schema registry could not be reached, refused us, or failed (not the record's fault)."""


# ---------------------------------------------------------------------------------------
# Kafka's fixed deserializers


def deserialize_bytes(data: bytes | None, topic: str, is_key: bool) -> bytes | None:
    """The bytes as they are (Kafka's console consumer without a deserializer)."""
    return data


def deserialize_string(data: bytes | None, topic: str, is_key: bool) -> str | None:
    """Kafka's StringDeserializer: UTF-8, malformed sequences become U+FFFD."""
    return None if data is None else data.decode("utf-8", errors="replace")


def deserialize_base64(data: bytes | None, topic: str, is_key: bool) -> str | None:
    """Standard base64 with padding (RFC 4648 section 4), for binary keys and values."""
    return None if data is None else base64.b64encode(data).decode("ascii")


def deserialize_hex(data: bytes | None, topic: str, is_key: bool) -> str | None:
    """Lower-case hexadecimal, two digits a byte."""
    return None if data is None else data.hex()


def _reject_constant(token: str) -> object:
    raise ValueError(f"{token} is not JSON")


def _finite_float(token: str) -> float:
    number = float(token)
    if math.isinf(number):
        raise ValueError(f"number {token} is out of the range of a double")
    return number


def deserialize_json(data: bytes | None, topic: str, is_key: bool) -> object:
    """A JSON document (RFC 8259, UTF-8/16/32): NaN, Infinity and overflowing numbers refused.

    Refused because the formatters print JSON again, and those have no JSON spelling.
    """
    if data is None:
        return None
    try:
        return json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, UnicodeDecodeError) as error:
        raise DeserializationError(
            str(error), deserializer="json", topic=topic, is_key=is_key
        ) from error


def _fixed_width(
    name: str, java_name: str, layout: struct.Struct
) -> Callable[[bytes | None, str, bool], Any]:
    size = layout.size

    def deserialize(data: bytes | None, topic: str, is_key: bool) -> Any:
        if data is None:
            return None
        if len(data) != size:
            raise DeserializationError(
                f"Size of data received by {java_name} is not {size} (it is {len(data)})",
                deserializer=name,
                topic=topic,
                is_key=is_key,
            )
        return layout.unpack(data)[0]

    deserialize.__name__ = f"deserialize_{name}"
    deserialize.__doc__ = f"Kafka's {java_name}: exactly {size} big-endian bytes."
    return deserialize


deserialize_int = _fixed_width("int", "IntegerDeserializer", struct.Struct(">i"))
deserialize_long = _fixed_width("long", "LongDeserializer", struct.Struct(">q"))
deserialize_double = _fixed_width("double", "DoubleDeserializer", struct.Struct(">d"))


_FIXED: Final[dict[str, Deserializer]] = {
    "string": deserialize_string,
    "bytes": deserialize_bytes,
    "base64": deserialize_base64,
    "hex": deserialize_hex,
    "json": deserialize_json,
    "int": deserialize_int,
    "long": deserialize_long,
    "double": deserialize_double,
}

REGISTRY_NAMES: Final = ("avro", "jsonschema", "protobuf")
NAMES: Final = (*_FIXED, *REGISTRY_NAMES)

# Kafka's and Confluent's class names, as a kafka-console-share-consumer.sh command line
# or a formatter-config file names them, so such commands work unchanged. Kafka's
# ByteArrayDeserializer would print "[B@1b6d3586" (a Java array's toString()); kshare
# prints the bytes, as Kafka does with no deserializer at all.
JAVA_CLASS_NAMES: Final = {
    "org.apache.kafka.common.serialization.StringDeserializer": "string",
    "org.apache.kafka.common.serialization.ByteArrayDeserializer": "bytes",
    "org.apache.kafka.common.serialization.IntegerDeserializer": "int",
    "org.apache.kafka.common.serialization.LongDeserializer": "long",
    "org.apache.kafka.common.serialization.DoubleDeserializer": "double",
    "io.confluent.kafka.serializers.KafkaAvroDeserializer": "avro",
    "io.confluent.kafka.serializers.json.KafkaJsonSchemaDeserializer": "jsonschema",
    "io.confluent.kafka.serializers.protobuf.KafkaProtobufDeserializer": "protobuf",
}


def canonical_name(name: str) -> str:
    """kshare's name for a deserializer given by kshare's name or a Java class name."""
    stripped = name.strip()
    if stripped in JAVA_CLASS_NAMES:
        return JAVA_CLASS_NAMES[stripped]
    if stripped.lower() in NAMES:
        return stripped.lower()
    raise UsageError(f"unknown deserializer {name!r}: choose one of {', '.join(NAMES)}")


def make_deserializer(
    name: str, *, schema_registry: Mapping[str, str] | None = None
) -> Deserializer:
    """The deserializer called ``name`` (kshare's name or Kafka's class name).

    ``schema_registry`` configures confluent-kafka's SchemaRegistryClient (``url``, and
    ``basic.auth.user.info``, ``ssl.ca.location``, ``timeout``, ... with or without a
    ``schema.registry.`` prefix); only avro, jsonschema and protobuf use it, the others
    ignore it so one registry setting can serve a string key and an Avro value.
    """
    canonical = canonical_name(name)
    if canonical in _FIXED:
        return _FIXED[canonical]
    if not schema_registry:
        raise UsageError(f"the {canonical} deserializer needs a schema registry URL")
    return _RegistryDeserializer(canonical, schema_registry)


# ---------------------------------------------------------------------------------------
# Schema registry formats

_NUMERIC_REGISTRY_SETTINGS: Final = frozenset(
    {
        "timeout",
        "cache.capacity",
        "cache.latest.ttl.sec",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
    }
)


def registry_client_config(settings: Mapping[str, str]) -> dict[str, object]:
    """SchemaRegistryClient's configuration from string settings (a properties file, flags)."""
    config: dict[str, object] = {}
    for raw_key, value in settings.items():
        key = raw_key.removeprefix("schema.registry.")
        if key in _NUMERIC_REGISTRY_SETTINGS:
            try:
                config[key] = float(value) if key == "timeout" else int(value)
            except ValueError:
                raise UsageError(
                    f"schema registry setting {raw_key} must be a number, not {value!r}"
                ) from None
        elif key == "ssl.ca.location" and value.strip().lower() == "false":
            config[key] = False  # confluent's spelling of "do not verify the certificate"
        else:
            config[key] = value
    if not str(config.get("url", "")).strip():
        raise UsageError("the schema registry needs a URL")
    return config


def _without_credentials(urls: str) -> str:
    """The registry URL(s) for an error message, any ``user:password@`` taken out."""
    shown = []
    for url in urls.split(","):
        parts = urlsplit(url.strip())
        if parts.username is not None or parts.password is not None:
            host = parts.hostname or ""
            if ":" in host:
                host = f"[{host}]"
            if parts.port is not None:
                host = f"{host}:{parts.port}"
            parts = parts._replace(netloc=host)
        shown.append(urlunsplit(parts))
    return ",".join(shown)


def _missing_registry_packages(name: str, error: ImportError) -> UsageError:
    return UsageError(
        f"the {name} deserializer needs the schema registry packages, which are not installed "
        f"(no module {error.name}): pip install 'kshare-cli[registry]'"
    )


class _RegistryDeserializer:
    """Avro, JSON Schema or Protobuf through confluent-kafka's serde and a schema registry."""

    def __init__(self, name: str, settings: Mapping[str, str]) -> None:
        self.name = name
        config = registry_client_config(settings)
        try:
            # confluent-kafka's HTTP client on Python 3.10+ (it falls back to httpx only before).
            import httpx2
            from confluent_kafka.schema_registry import SchemaRegistryClient, SchemaRegistryError
            from confluent_kafka.serialization import (
                MessageField,
                SerializationContext,
                SerializationError,
            )
        except ImportError as error:
            raise _missing_registry_packages(name, error) from None
        try:
            client = SchemaRegistryClient(config)
        except (ValueError, TypeError) as error:
            message = str(error)
            for url in str(config["url"]).split(","):
                message = message.replace(url.strip(), _without_credentials(url))
            raise UsageError(f"schema registry: {message}") from None
        self._context = SerializationContext
        self._fields = {True: MessageField.KEY, False: MessageField.VALUE}
        self._registry_error = SchemaRegistryError
        self._serialization_error = SerializationError
        self._transport_error: type[Exception] = httpx2.TransportError
        self._url = _without_credentials(str(config["url"]))
        # Subjects are only needed to look up a reader schema (use.latest.version), which a
        # console consumer does not do: TOPIC spares a registry call per topic that the
        # default (ASSOCIATED) strategy makes.
        serde_config: dict[str, object] = {"subject.name.strategy.type": "TOPIC"}
        try:
            self._read = _make_reader(name, client, serde_config)
        except ImportError as error:
            raise _missing_registry_packages(name, error) from None

    def __call__(self, data: bytes | None, topic: str, is_key: bool) -> object:
        if data is None:
            return None
        try:
            return self._read(data, self._context(topic, self._fields[is_key]))
        except self._registry_error as error:
            if error.http_status_code == 404 and error.error_code in _SCHEMA_NOT_FOUND:
                raise DeserializationError(
                    f"the schema registry has no such schema ({error.error_message})",
                    deserializer=self.name,
                    topic=topic,
                    is_key=is_key,
                ) from error
            raise SchemaRegistryFailed(f"schema registry {self._url}: {error}") from error
        except self._transport_error as error:
            raise SchemaRegistryFailed(
                f"schema registry {self._url} unreachable: {error}"
            ) from error
        except (
            self._serialization_error,
            # What fastavro, the JSON decoder and protobuf raise on a corrupt payload
            # that confluent's serde lets through.
            ValueError,
            EOFError,
            IndexError,
            struct.error,
        ) as error:
            raise DeserializationError(
                str(error) or type(error).__name__,
                deserializer=self.name,
                topic=topic,
                is_key=is_key,
            ) from error


# 40403 schema not found, 40401 subject not found, 40402 version not found: the record
# names a schema this registry does not have. Any other 404 (a wrong URL path) is ours.
_SCHEMA_NOT_FOUND: Final = frozenset({40401, 40402, 40403})


def _make_reader(
    name: str, client: SchemaRegistryClient, serde_config: dict[str, object]
) -> Callable[[bytes, Any], object]:
    if name == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        avro: Callable[[bytes, Any], object] = AvroDeserializer(client, conf=serde_config)
        return avro
    if name == "jsonschema":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        json_schema: Callable[[bytes, Any], object] = JSONDeserializer(
            None, schema_registry_client=client, conf=serde_config
        )
        return json_schema
    return _ProtobufReader(client, serde_config)


class _ProtobufReader:
    """Protobuf without generated classes: the writer's message type, built from the registry.

    confluent-kafka's ProtobufDeserializer parses into a message class fixed when it is
    made, which a console consumer does not have. So for each writer schema (schema id
    and message index path in the record's framing) this builds the class from the
    registered file descriptor, its references resolved through the registry, and keeps
    one ProtobufDeserializer for it. The message comes back as proto3's JSON mapping
    (field names as in the .proto, fields with default values included).
    """

    def __init__(self, client: SchemaRegistryClient, serde_config: dict[str, object]) -> None:
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        self._client = client
        self._serde_config = serde_config
        self._deserializer_class = ProtobufDeserializer
        self._by_writer: dict[tuple[object, tuple[int, ...]], Callable[[bytes, Any], Any]] = {}

    def __call__(self, data: bytes, context: Any) -> object:
        from confluent_kafka.schema_registry import dual_schema_id_deserializer
        from confluent_kafka.schema_registry.serde import SchemaId
        from google.protobuf import json_format  # type: ignore[import-untyped]

        schema_id = SchemaId("PROTOBUF")
        dual_schema_id_deserializer(data, context, schema_id)
        indexes = tuple(schema_id.message_indexes or [0])
        writer = (schema_id.id if schema_id.id is not None else schema_id.guid, indexes)
        deserializer = self._by_writer.get(writer)
        if deserializer is None:
            message_class = self._message_class(schema_id.id, schema_id.guid, indexes)
            deserializer = self._deserializer_class(message_class, self._serde_config, self._client)
            self._by_writer[writer] = deserializer
        message = deserializer(data, context)
        result: object = json_format.MessageToDict(
            message,
            always_print_fields_with_no_presence=True,
            preserving_proto_field_name=True,
        )
        return result

    def _message_class(self, schema_id: int | None, guid: object, indexes: tuple[int, ...]) -> Any:
        # confluent-kafka's own, private: the references' resolution, the pool of
        # well-known types and the descriptor's decoding that ProtobufDeserializer uses,
        # so kshare builds the same classes it would. Held by pyproject.toml's minor pin on
        # confluent-kafka and tests/test_third_party_bounds.py.
        from confluent_kafka.schema_registry._sync.protobuf import _resolve_named_schema
        from confluent_kafka.schema_registry.common.protobuf import _init_pool, _str_to_proto
        from google.protobuf.descriptor_pool import DescriptorPool  # type: ignore[import-untyped]
        from google.protobuf.message_factory import GetMessageClass  # type: ignore[import-untyped]

        if schema_id is not None:
            schema = self._client.get_schema(schema_id, None, "serialized")
        else:
            schema = self._client.get_schema_by_guid(str(guid), "serialized")
        if schema.schema_str is None:
            raise ValueError("the registry returned an empty schema")
        pool = DescriptorPool()
        _init_pool(pool)
        _resolve_named_schema(schema, self._client, pool)
        file_proto = _str_to_proto("default", schema.schema_str)
        pool.Add(file_proto)
        return GetMessageClass(pool.FindMessageTypeByName(_message_name(file_proto, indexes)))


def _message_name(file_proto: Any, indexes: tuple[int, ...]) -> str:
    """The full name of the message a framing's index path points at (0 = first message)."""
    names = [file_proto.package] if file_proto.package else []
    messages = file_proto.message_type
    for index in indexes:
        if not 0 <= index < len(messages):
            raise ValueError(f"message index {index} out of range ({len(messages)} messages)")
        names.append(messages[index].name)
        messages = messages[index].nested_type
    return ".".join(names)
