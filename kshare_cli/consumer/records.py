"""One consumed record, copied out of librdkafka's message into a plain value.

The formatters, the interactive prompt and the tests work on this value rather than on
``confluent_kafka.Message``: a test can build one from the golden corpus without a
broker, and nothing downstream depends on how confluent-kafka spells its accessors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import confluent_kafka

# confluent-kafka's TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
# (librdkafka's RD_KAFKA_TIMESTAMP_*), repeated here so that this module needs no import of
# the C extension.
NO_TIMESTAMP = 0
CREATE_TIME = 1
LOG_APPEND_TIME = 2

# Kafka's TimestampType.toString(): what DefaultMessageFormatter prints before ':<ms>'.
TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """A record as a share consumer received it, key and value still raw bytes."""

    topic: str
    partition: int
    offset: int
    delivery_count: int | None
    timestamp_type: int
    """0 no timestamp, 1 CreateTime, 2 LogAppendTime (confluent's ``TIMESTAMP_*`` values)."""
    timestamp: int
    """Milliseconds since the epoch; -1 when ``timestamp_type`` is 0."""
    key: bytes | None
    value: bytes | None
    headers: Headers = ()

    @classmethod
    def from_message(cls, message: confluent_kafka.Message) -> ConsumedRecord:
        """Copy a consumed message; a message that carries an error is not a record."""
        error = message.error()
        if error is not None:
            raise ValueError(f"not a record: the message carries an error ({error})")
        topic = message.topic()
        partition = message.partition()
        offset = message.offset()
        if topic is None or partition is None or offset is None:
            raise ValueError("not a consumed record: no topic, partition or offset")
        timestamp_type, timestamp = message.timestamp()
        key = message.key()
        value = message.value()
        headers = message.headers()
        # librdkafka hands over bytes; str comes from a Message built by hand.
        if key is not None and type(key) is not bytes:
            key = _as_bytes(key)
        if value is not None and type(value) is not bytes:
            value = _as_bytes(value)
        return _Unfrozen(
            topic,
            partition,
            offset,
            message.delivery_count(),
            timestamp_type,
            timestamp if timestamp_type != NO_TIMESTAMP else -1,
            key,
            value,
            () if headers is None else headers_of(headers),
        )  # type: ignore[return-value]

    @property
    def timestamp_type_name(self) -> str | None:
        """``CreateTime`` or ``LogAppendTime`` as Kafka names them; None without a timestamp."""
        return TIMESTAMP_TYPE_NAMES.get(self.timestamp_type)


class _Unfrozen:
    """Builds a ConsumedRecord in a fifth of the time its frozen ``__init__`` takes.

    A frozen dataclass sets each field through ``object.__setattr__`` (about 2 us for a
    record), which a console consumer pays once per record: more than formatting and
    writing it. This class has the same slots, so it sets them directly, then becomes a
    ConsumedRecord (``__class__`` assignment between identical slot layouts), frozen from
    then on. tests/consumer/test_record_formatters.py holds the two layouts equal.
    """

    __slots__ = (
        "topic",
        "partition",
        "offset",
        "delivery_count",
        "timestamp_type",
        "timestamp",
        "key",
        "value",
        "headers",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        delivery_count: int | None,
        timestamp_type: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.delivery_count = delivery_count
        self.timestamp_type = timestamp_type
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.__class__ = ConsumedRecord  # type: ignore[assignment]


def headers_of(
    headers: Iterable[tuple[str, object]] | Mapping[str, object] | None,
) -> Headers:
    """Headers in the order they were sent (a key may repeat), values as bytes or None."""
    if not headers:
        return ()
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return tuple((str(key), _as_bytes(value)) for key, value in pairs)


def _as_bytes(data: object) -> bytes | None:
    # Messages from librdkafka carry bytes; a Message built by hand may carry str.
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"expected bytes, not {type(data).__name__}")
