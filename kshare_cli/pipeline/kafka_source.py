"""A Spark data source that reads Kafka topics through confluent-kafka, batch and streaming.

Spark's own Kafka connector is a JVM package that has to be downloaded for
the exact Spark and Scala version, which many operators' machines cannot do;
confluent-kafka is already installed with kshare, and the same librdkafka
configuration (`ConnectionSettings.librdkafka_config()`, TLS and SASL
included) that the console consumer uses then feeds the audit too. So this
is a Spark 4 Python data source ("kshare-kafka") whose DataFrame has exactly
the columns of Spark's own source with `includeHeaders=true`, and
`read_kafka(..., connector="spark")` switches to Spark's connector where the
user has it.

Where the work happens:

* Offsets are resolved once, on the driver (in Spark's planning worker):
  low/high watermarks, `offsets_for_times` for a starting or ending timestamp.
* Each (topic, partition, offset chunk) becomes one Spark input partition, so
  a long partition -- the state topic puts a busy group into one -- still
  spreads over every core.
* An executor reads its chunk with a plain Consumer and `assign()`: no group
  membership, no rebalances, and nothing committed, so an audit leaves no
  trace on the cluster beyond fetches. Records arrive as Arrow record
  batches, not Python rows, because row-by-row conversion would cost more
  than reading.

The options follow Spark's Kafka connector where it has one (`subscribe`,
`assign`, `startingOffsets`, `endingOffsets`, `startingTimestamp`,
`endingTimestamp`, `maxRecordsPerPartition`, `minPartitions`,
`maxOffsetsPerTrigger`, `failOnDataLoss`, `kafka.*`), so a job can move
between the two connectors by changing only the format; `kafka.config`
carries the whole librdkafka configuration as one JSON object.

An OAUTHBEARER token callback (`ConnectionSettings.confluent_config`) cannot
travel to executors as a string; such clusters need librdkafka's own OIDC
settings (`sasl.oauthbearer.method=oidc`) instead.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

import pyarrow as pa  # type: ignore[import-untyped]
from confluent_kafka import Consumer, KafkaException, Message, TopicPartition
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kshare_cli.dataplane.clients import new_reader
from kshare_cli.dataplane.errors import ErrorKind, classify, is_transient
from kshare_cli.dataplane.offsets import offsets_for_times
from kshare_cli.dataplane.offsets import watermark_offsets as leader_watermarks
from kshare_cli.errors import KshareError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamReader

__all__ = [
    "KAFKA_SCHEMA",
    "SOURCE_NAME",
    "Connector",
    "KafkaDataSource",
    "KafkaOffsetRange",
    "KafkaReadOptions",
    "KafkaSourceError",
    "Offsets",
    "read_kafka",
    "read_kafka_stream",
    "register",
    "spark_kafka_options",
    "watermark_offsets",
]

SOURCE_NAME: Final = "kshare-kafka"
"""The format name: `spark.read.format(SOURCE_NAME)` once `register(spark)` ran."""

KAFKA_SCHEMA: Final = StructType(
    [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
        StructField(
            "headers",
            ArrayType(
                StructType(
                    [
                        StructField("key", StringType(), True),
                        StructField("value", BinaryType(), True),
                    ]
                ),
                True,
            ),
            True,
        ),
    ]
)
"""Spark's Kafka source schema with `includeHeaders=true`, column for column.

value is null for a tombstone; headers is null when a record has none (as
Spark's); timestampType is Kafka's (0 CreateTime, 1 LogAppendTime).
"""

Offsets = dict[str, dict[str, int]]
"""topic -> partition (as a string: JSON object keys) -> offset; Spark's startingOffsets form."""

Connector = Literal["kshare", "spark"]

EARLIEST: Final = -2
"""In an offsets object, as in Spark's: the partition's first offset."""
LATEST: Final = -1
"""In an offsets object, as in Spark's: the partition's high watermark."""

DEFAULT_MAX_RECORDS_PER_PARTITION: Final = 250_000
DEFAULT_POLL_TIMEOUT_MS: Final = 120_000
_METADATA_TIMEOUT_S: Final = 30.0
_ARROW_BATCH: Final = 10_000
_CONSUME_WAIT_S: Final = 0.5

# librdkafka timestamp types -> Kafka's numbering, which Spark's timestampType uses.
_TIMESTAMP_TYPES: Final = {1: 0, 2: 1}


_ARROW_HEADERS: Final = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class KafkaSourceError(Exception):
    """A read the source cannot do: bad options, a missing topic, lost data, an unreachable
    cluster. The message names the topic and partition, because Spark shows it wrapped in a
    long Python traceback and it has to stand out there."""


# --------------------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class KafkaReadOptions:
    """What to read and how to connect, in one value for both connectors.

    config is librdkafka configuration (bootstrap and security), all strings,
    as `ConnectionSettings.librdkafka_config()` returns it. Exactly one of
    topics and assign names what to read. starting_offsets and ending_offsets
    are "earliest", "latest" or an `Offsets` object (-2 earliest, -1 latest);
    a starting or ending timestamp (milliseconds) overrides them for every
    partition. starting_offsets None means Spark's default: earliest for a
    batch read, latest for a stream.
    """

    config: Mapping[str, str]
    topics: tuple[str, ...] = ()
    assign: Mapping[str, tuple[int, ...]] | None = None
    starting_offsets: str | Offsets | None = None
    ending_offsets: str | Offsets = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION
    """Offsets per Spark input partition: what one task reads at most."""
    min_partitions: int | None = None
    """Split the offset ranges further until at least this many input partitions exist."""
    max_offsets_per_trigger: int | None = None
    """Streaming: offsets per micro-batch at most, over all partitions."""
    fail_on_data_loss: bool = True
    """Whether offsets that are gone (retention, deleteRecords) fail the read, as in Spark."""
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    """How long a task waits for records that the planning said exist."""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Options passed through unread (e.g. Spark-connector-only ones)."""

    def __post_init__(self) -> None:
        if bool(self.topics) == (self.assign is not None):
            raise KafkaSourceError("name the topics to read: either subscribe or assign, not both")
        if "bootstrap.servers" not in self.config:
            raise KafkaSourceError("the Kafka configuration has no bootstrap.servers")
        if self.max_records_per_partition < 1:
            raise KafkaSourceError("maxRecordsPerPartition must be at least 1")
        if self.min_partitions is not None and self.min_partitions < 1:
            raise KafkaSourceError("minPartitions must be at least 1")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger < 1:
            raise KafkaSourceError("maxOffsetsPerTrigger must be at least 1")
        for name, spec in (
            ("startingOffsets", self.starting_offsets),
            ("endingOffsets", self.ending_offsets),
        ):
            if isinstance(spec, str) and spec not in ("earliest", "latest"):
                raise KafkaSourceError(f"{name} must be earliest, latest or a JSON object")
        if self.ending_offsets == "earliest":
            raise KafkaSourceError("endingOffsets earliest would read nothing")

    # ------------------------------------------------------------------ Spark options

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaReadOptions:
        """Parse the options Spark hands a data source (keys arrive lower-cased)."""
        lowered = {key.lower(): value for key, value in options.items()}
        config: dict[str, str] = {}
        if "kafka.config" in lowered:
            try:
                loaded = json.loads(lowered.pop("kafka.config"))
            except json.JSONDecodeError as error:
                raise KafkaSourceError(f"kafka.config is not JSON: {error}") from None
            if not isinstance(loaded, dict):
                raise KafkaSourceError("kafka.config must be a JSON object")
            config.update({str(key): str(value) for key, value in loaded.items()})
        for key in [key for key in lowered if key.startswith("kafka.")]:
            config[key.removeprefix("kafka.")] = lowered.pop(key)

        topics: tuple[str, ...] = ()
        if "subscribe" in lowered:
            topics = tuple(
                topic.strip() for topic in lowered.pop("subscribe").split(",") if topic.strip()
            )
        assign = None
        if "assign" in lowered:
            assign = _parse_assign(lowered.pop("assign"))
        ending_offsets = _parse_offsets_spec(lowered.pop("endingoffsets", None))
        max_records = _parse_int(lowered, "maxrecordsperpartition")
        poll_timeout_ms = _parse_int(lowered, "kafkaconsumer.polltimeoutms")
        return cls(
            config=config,
            topics=topics,
            assign=assign,
            starting_offsets=_parse_offsets_spec(lowered.pop("startingoffsets", None)),
            ending_offsets="latest" if ending_offsets is None else ending_offsets,
            starting_timestamp=_parse_int(lowered, "startingtimestamp"),
            ending_timestamp=_parse_int(lowered, "endingtimestamp"),
            max_records_per_partition=(
                DEFAULT_MAX_RECORDS_PER_PARTITION if max_records is None else max_records
            ),
            min_partitions=_parse_int(lowered, "minpartitions"),
            max_offsets_per_trigger=_parse_int(lowered, "maxoffsetspertrigger"),
            fail_on_data_loss=_parse_bool(lowered.pop("failondataloss", "true")),
            poll_timeout_ms=DEFAULT_POLL_TIMEOUT_MS if poll_timeout_ms is None else poll_timeout_ms,
            extra=lowered,
        )

    def as_options(self) -> dict[str, str]:
        """The options for `spark.read.format(SOURCE_NAME)`; from_options reads them back."""
        options = {"kafka.config": json.dumps(dict(self.config), sort_keys=True)}
        options.update(self._common_options())
        options["maxRecordsPerPartition"] = str(self.max_records_per_partition)
        options["kafkaConsumer.pollTimeoutMs"] = str(self.poll_timeout_ms)
        return options

    def _common_options(self) -> dict[str, str]:
        """The options both connectors spell the same way."""
        options = dict(self.extra)
        if self.topics:
            options["subscribe"] = ",".join(self.topics)
        if self.assign is not None:
            options["assign"] = json.dumps(
                {topic: list(partitions) for topic, partitions in self.assign.items()}
            )
        if self.starting_offsets is not None:
            options["startingOffsets"] = _offsets_option(self.starting_offsets)
        options["endingOffsets"] = _offsets_option(self.ending_offsets)
        if self.starting_timestamp is not None:
            options["startingTimestamp"] = str(self.starting_timestamp)
        if self.ending_timestamp is not None:
            options["endingTimestamp"] = str(self.ending_timestamp)
        if self.min_partitions is not None:
            options["minPartitions"] = str(self.min_partitions)
        if self.max_offsets_per_trigger is not None:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        options["failOnDataLoss"] = str(self.fail_on_data_loss).lower()
        return options


def _parse_int(options: dict[str, str], key: str) -> int | None:
    raw = options.pop(key, None)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise KafkaSourceError(f"option {key} must be an integer, not {raw!r}") from None


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered not in ("true", "false"):
        raise KafkaSourceError(f"expected true or false, not {raw!r}")
    return lowered == "true"


def _parse_offsets_spec(raw: str | None) -> str | Offsets | None:
    if raw is None:
        return None
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError:
        raise KafkaSourceError(
            f"offsets must be earliest, latest or a JSON object, not {raw!r}"
        ) from None
    if not isinstance(loaded, dict):
        raise KafkaSourceError(f"offsets must be a JSON object of topics, not {raw!r}")
    offsets: Offsets = {}
    for topic, partitions in loaded.items():
        if not isinstance(partitions, dict):
            raise KafkaSourceError(f"offsets of topic {topic} must be a JSON object")
        offsets[str(topic)] = {str(int(p)): int(offset) for p, offset in partitions.items()}
    return offsets


def _parse_assign(raw: str) -> dict[str, tuple[int, ...]]:
    try:
        loaded = json.loads(raw)
    except json.JSONDecodeError:
        loaded = None
    if not isinstance(loaded, dict) or not all(
        isinstance(partitions, list) for partitions in loaded.values()
    ):
        raise KafkaSourceError(
            f'assign must be a JSON object like {{"topic": [0, 1]}}, not {raw!r}'
        )
    return {str(topic): tuple(int(p) for p in partitions) for topic, partitions in loaded.items()}


def _offsets_option(spec: str | Offsets) -> str:
    return spec if isinstance(spec, str) else json.dumps(spec, sort_keys=True)


# --------------------------------------------------------------------------- the other connector


def spark_kafka_options(options: KafkaReadOptions) -> dict[str, str]:
    """The same read for Spark's own "kafka" format (Java client property names).

    librdkafka and the Java client agree on most property names; TLS material
    and SASL credentials are said differently and are translated here (PEM
    files and inline PEM as PEM trust and key stores, PLAIN and SCRAM
    credentials as a JAAS line). A librdkafka-only property that the Java
    client cannot take raises KafkaSourceError rather than being dropped.
    """
    translated: dict[str, str] = {}
    config = dict(options.config)
    username = config.pop("sasl.username", None)
    password = config.pop("sasl.password", None)
    mechanism = config.get("sasl.mechanism", "")
    if username is not None or password is not None:
        module = {
            "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
            "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
            "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
        }.get(mechanism)
        if module is None:
            raise KafkaSourceError(f"cannot translate SASL {mechanism or '(none)'} credentials")
        translated["sasl.jaas.config"] = (
            f"{module} required username={json.dumps(username or '')} "
            f"password={json.dumps(password or '')};"
        )
    endpoint = config.pop("ssl.endpoint.identification.algorithm", None)
    if endpoint is not None:
        translated["ssl.endpoint.identification.algorithm"] = "" if endpoint == "none" else endpoint
    if (ca_location := config.pop("ssl.ca.location", None)) is not None:
        translated["ssl.truststore.type"] = "PEM"
        translated["ssl.truststore.location"] = ca_location
    if (ca_pem := config.pop("ssl.ca.pem", None)) is not None:
        translated["ssl.truststore.type"] = "PEM"
        translated["ssl.truststore.certificates"] = ca_pem
    certificate = config.pop("ssl.certificate.pem", None)
    key = config.pop("ssl.key.pem", None)
    if certificate is not None and key is not None:
        translated["ssl.keystore.type"] = "PEM"
        translated["ssl.keystore.certificate.chain"] = certificate
        translated["ssl.keystore.key"] = key
    unsupported = sorted(
        name
        for name in config
        if name.startswith(
            ("ssl.certificate", "ssl.key.location", "enable.ssl", "sasl.oauthbearer")
        )
        or name == "enable.sasl.oauthbearer.unsecure.jwt"
    )
    if unsupported:
        raise KafkaSourceError(
            "Spark's Kafka connector cannot take these librdkafka properties: "
            + ", ".join(unsupported)
            + " (use the kshare connector)"
        )
    translated.update(config)
    spark_options = {f"kafka.{name}": value for name, value in translated.items()}
    spark_options.update(options._common_options())
    spark_options["includeHeaders"] = "true"
    if options.max_records_per_partition != DEFAULT_MAX_RECORDS_PER_PARTITION:
        spark_options["maxRecordsPerPartition"] = str(options.max_records_per_partition)
    return spark_options


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class KafkaOffsetRange(InputPartition):
    """One Spark input partition: offsets [start_offset, end_offset) of one topic partition."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int

    @property
    def size(self) -> int:
        return self.end_offset - self.start_offset


def _consumer(config: Mapping[str, str], **extra: Any) -> Consumer:
    """The data plane's reader (assign(), a throwaway group id, nothing committed), its
    log lines silenced: they would land in Spark's task logs as noise, while every
    error that matters comes back through the API and is raised."""
    try:
        return new_reader(config, "spark", **extra)
    except KshareError as refused:
        raise KafkaSourceError(str(refused)) from None


class _ClusterView:
    """Driver-side questions about topic partitions and their offsets, one consumer for all."""

    def __init__(self, options: KafkaReadOptions) -> None:
        self._options = options
        self._consumer = _consumer(options.config)

    def close(self) -> None:
        self._consumer.close()

    def partitions(self) -> list[tuple[str, int]]:
        """Every (topic, partition) to read, sorted; a missing topic or partition raises."""
        options = self._options
        wanted: dict[str, tuple[int, ...] | None] = (
            dict(options.assign) if options.assign is not None else dict.fromkeys(options.topics)
        )
        found: list[tuple[str, int]] = []
        for topic, chosen in wanted.items():
            metadata = self._consumer.list_topics(topic, timeout=_METADATA_TIMEOUT_S)
            topic_metadata = metadata.topics.get(topic)
            if topic_metadata is None or topic_metadata.error is not None:
                reason = "" if topic_metadata is None else f": {topic_metadata.error.str()}"
                raise KafkaSourceError(f"topic {topic} cannot be read{reason}")
            existing = set(topic_metadata.partitions)
            if chosen is not None:
                missing = sorted(set(chosen) - existing)
                if missing:
                    raise KafkaSourceError(f"topic {topic} has no partition {missing}")
                existing = set(chosen)
            found.extend((topic, partition) for partition in sorted(existing))
        return found

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        try:
            low, high = leader_watermarks(
                self._consumer, topic, partition, time.monotonic() + _METADATA_TIMEOUT_S
            )
        except KafkaException as error:
            raise KafkaSourceError(
                f"offsets of {topic}-{partition} cannot be read: {error.args[0].str()}"
            ) from None
        return int(low), int(high)

    def offsets_for_time(self, partitions: Sequence[tuple[str, int]], timestamp: int) -> list[int]:
        """The first offset at or after timestamp per partition; -1 where there is none."""
        try:
            found = offsets_for_times(
                self._consumer,
                [TopicPartition(topic, partition, timestamp) for topic, partition in partitions],
                time.monotonic() + _METADATA_TIMEOUT_S,
            )
        except KafkaException as error:
            raise KafkaSourceError(
                f"offsets for timestamp {timestamp} cannot be read: {error.args[0].str()}"
            ) from None
        by_partition = {(each.topic, each.partition): each for each in found}
        offsets = []
        for topic, partition in partitions:
            answer = by_partition[(topic, partition)]
            if answer.error is not None:
                raise KafkaSourceError(
                    f"offset for timestamp {timestamp} of {topic}-{partition}: {answer.error.str()}"
                )
            offsets.append(int(answer.offset))
        return offsets

    def resolve(
        self,
        partitions: Sequence[tuple[str, int]],
        spec: str | Offsets,
        timestamp: int | None,
        *,
        what: str,
    ) -> dict[tuple[str, int], int]:
        """Concrete offsets for a starting or ending point, clamped into [low, high]."""
        watermarks = {each: self.watermarks(*each) for each in partitions}
        by_time = (
            dict(zip(partitions, self.offsets_for_time(partitions, timestamp), strict=True))
            if timestamp is not None
            else {}
        )
        resolved: dict[tuple[str, int], int] = {}
        for topic, partition in partitions:
            low, high = watermarks[(topic, partition)]
            if timestamp is not None:
                offset = by_time[(topic, partition)]
                wanted = high if offset < 0 else offset
            elif isinstance(spec, str):
                wanted = low if spec == "earliest" else high
            else:
                wanted = spec.get(topic, {}).get(
                    str(partition), EARLIEST if what == "start" else LATEST
                )
                if wanted == EARLIEST:
                    wanted = low
                elif wanted == LATEST:
                    wanted = high
                elif wanted < low and self._options.fail_on_data_loss and what == "start":
                    raise KafkaSourceError(
                        f"{topic}-{partition} starts at offset {low}; offsets from {wanted} are "
                        "gone (set failOnDataLoss=false to read what is left)"
                    )
            resolved[(topic, partition)] = min(max(wanted, low), high)
        return resolved


def watermark_offsets(
    config: Mapping[str, str], partitions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], tuple[int, int]]:
    """(low, high) watermarks of each (topic, partition), asked on the driver.

    What a job needs besides the records: the log end offsets as they are
    now, and where retention has left a log to start.
    """
    view = _ClusterView(KafkaReadOptions(config=config, topics=("-",)))
    try:
        return {each: view.watermarks(*each) for each in partitions}
    finally:
        view.close()


def _split(
    ranges: Sequence[tuple[str, int, int, int]], max_records: int, min_partitions: int | None
) -> list[KafkaOffsetRange]:
    """Cut each (topic, partition, start, end) into chunks so the work spreads over cores."""
    total = sum(max(end - start, 0) for _, _, start, end in ranges)
    chunk = max_records
    if min_partitions is not None and total > 0:
        chunk = min(chunk, max(1, math.ceil(total / min_partitions)))
    chunks: list[KafkaOffsetRange] = []
    for topic, partition, start, end in ranges:
        for first in range(start, end, chunk):
            chunks.append(KafkaOffsetRange(topic, partition, first, min(first + chunk, end)))
    return chunks


# --------------------------------------------------------------------------- reading


def read_offset_range(
    config: Mapping[str, str],
    offset_range: KafkaOffsetRange,
    *,
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS,
    fail_on_data_loss: bool = True,
) -> Iterator[Any]:
    """The records of one offset range as Arrow record batches in KAFKA_SCHEMA.

    Offsets may have holes (compaction, transaction markers), so the read
    ends at the first record at or past end_offset or at the partition's end,
    not after a count. A range whose records stop arriving for
    poll_timeout_ms raises instead of hanging the Spark task.
    """
    if offset_range.size <= 0:
        return
    consumer = _consumer(
        config,
        **{
            "enable.partition.eof": True,
            "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
        },
    )
    topic, partition = offset_range.topic, offset_range.partition
    end = offset_range.end_offset
    try:
        consumer.assign([TopicPartition(topic, partition, offset_range.start_offset)])
        pending: list[Message] = []
        last_progress = time.monotonic()
        last_error = ""
        done = False
        while not done:
            messages = consumer.consume(
                num_messages=_ARROW_BATCH - len(pending), timeout=_CONSUME_WAIT_S
            )
            if any(message.error() is None for message in messages):
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > poll_timeout_ms / 1000:
                raise KafkaSourceError(
                    f"{topic}-{partition}: no records for {poll_timeout_ms} ms while reading "
                    f"offsets {offset_range.start_offset}..{end - 1}{last_error}"
                )
            for message in messages:
                error = message.error()
                if error is not None:
                    if classify(error) is ErrorKind.PARTITION_EOF:
                        done = True
                        break
                    if is_transient(error):
                        # librdkafka reconnects and retries by itself; the poll timeout
                        # turns a problem that does not go away into an error.
                        last_error = f" (last: {error.str()})"
                        continue
                    raise KafkaSourceError(f"{topic}-{partition}: {error.str()}")
                offset = message.offset()
                if offset is not None and offset >= end:
                    done = True
                    break
                pending.append(message)
                if offset == end - 1:
                    done = True
                    break
            if len(pending) >= _ARROW_BATCH or (done and pending):
                yield _record_batch(pending)
                pending = []
    finally:
        consumer.close()


def _record_batch(messages: Sequence[Message]) -> Any:
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    topics: list[str | None] = []
    partitions: list[int | None] = []
    offsets: list[int | None] = []
    timestamps: list[int | None] = []
    timestamp_types: list[int] = []
    headers: list[list[tuple[str, bytes | None]] | None] = []
    for message in messages:
        keys.append(message.key())
        values.append(message.value())
        topics.append(message.topic())
        partitions.append(message.partition())
        offsets.append(message.offset())
        timestamp_type, timestamp = message.timestamp()
        if timestamp_type in _TIMESTAMP_TYPES:
            timestamps.append(timestamp * 1000)
            timestamp_types.append(_TIMESTAMP_TYPES[timestamp_type])
        else:
            timestamps.append(None)
            timestamp_types.append(-1)
        record_headers = message.headers()
        # A consumed message's headers are always a list of (name, value) pairs.
        headers.append(list(record_headers) if record_headers else None)  # type: ignore[arg-type]
    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(topics, pa.string()),
            pa.array(partitions, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(timestamps, pa.timestamp("us", tz="UTC")),
            pa.array(timestamp_types, pa.int32()),
            pa.array(headers, _ARROW_HEADERS),
        ],
        names=KAFKA_SCHEMA.fieldNames(),
    )


# --------------------------------------------------------------------------- batch


class KafkaBatchReader(DataSourceReader):
    """Plans offset-range chunks on the driver; reads one chunk per task."""

    def __init__(self, options: KafkaReadOptions) -> None:
        self._options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self._options
        view = _ClusterView(options)
        try:
            partitions = view.partitions()
            starts = view.resolve(
                partitions,
                options.starting_offsets or "earliest",
                options.starting_timestamp,
                what="start",
            )
            ends = view.resolve(
                partitions, options.ending_offsets, options.ending_timestamp, what="end"
            )
        finally:
            view.close()
        ranges = [
            (topic, partition, starts[(topic, partition)], ends[(topic, partition)])
            for topic, partition in partitions
        ]
        # A list (Spark checks); an empty one gets Spark's own placeholder partition.
        return list(_split(ranges, options.max_records_per_partition, options.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, KafkaOffsetRange):
            return iter(())  # Spark's placeholder when there is nothing to read
        return read_offset_range(
            self._options.config,
            partition,
            poll_timeout_ms=self._options.poll_timeout_ms,
            fail_on_data_loss=self._options.fail_on_data_loss,
        )


# --------------------------------------------------------------------------- streaming


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches between high watermarks; the offsets live in Spark's checkpoint.

    Offsets are `Offsets` objects (JSON-able, Spark's own startingOffsets
    form), so a checkpoint can be read by a person. Nothing is committed to
    Kafka: Spark's checkpoint is the only record of progress, as with Spark's
    connector. A partition that appears while the stream runs is read from
    its first offset.
    """

    def __init__(self, options: KafkaReadOptions) -> None:
        self._options = options
        self._view: _ClusterView | None = None
        self._available_now_target: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The driver-side consumer cannot (and need not) travel to the executors.
        return {"_options": self._options, "_view": None, "_available_now_target": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _cluster(self) -> _ClusterView:
        if self._view is None:
            self._view = _ClusterView(self._options)
        return self._view

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 - Spark's name
        options = self._options
        view = self._cluster()
        partitions = view.partitions()
        starts = view.resolve(
            partitions,
            options.starting_offsets or "latest",
            options.starting_timestamp,
            what="start",
        )
        return _as_offsets(starts)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802
        """The high watermarks now, cut to the read limit (maxOffsetsPerTrigger).

        Spark passes ReadAllAvailable when a trigger says so (availableNow,
        once), whatever the options; that is why the limit comes from the
        argument and not from the options.
        """
        view = self._cluster()
        latest = {each: view.watermarks(*each)[1] for each in view.partitions()}
        if self._available_now_target is not None:
            latest = {
                key: min(offset, _lookup(self._available_now_target, key, offset))
                for key, offset in latest.items()
            }
        if isinstance(limit, ReadMaxRows):
            latest = _rate_limited(start, latest, limit.max_rows)
        return _as_offsets(latest)

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - Spark's name
        if self._options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - Spark's name
        """Fix the end of a Trigger.AvailableNow run at the high watermarks of now."""
        view = self._cluster()
        self._available_now_target = _as_offsets(
            {each: view.watermarks(*each)[1] for each in view.partitions()}
        )

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = []
        for topic, by_partition in sorted(end.items()):
            for partition_text, end_offset in sorted(by_partition.items(), key=lambda p: int(p[0])):
                partition = int(partition_text)
                first = start.get(topic, {}).get(partition_text)
                if first is None:
                    first = self._cluster().watermarks(topic, partition)[0]
                if end_offset > first:
                    ranges.append((topic, partition, int(first), int(end_offset)))
        return list(_split(ranges, self._options.max_records_per_partition, None))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, KafkaOffsetRange):
            return iter(())
        return read_offset_range(
            self._options.config,
            partition,
            poll_timeout_ms=self._options.poll_timeout_ms,
            fail_on_data_loss=self._options.fail_on_data_loss,
        )

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: progress lives in Spark's checkpoint, never in a Kafka group."""

    def stop(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None


def _lookup(offsets: Mapping[str, Mapping[str, int]], key: tuple[str, int], default: int) -> int:
    return int(offsets.get(key[0], {}).get(str(key[1]), default))


def _as_offsets(resolved: Mapping[tuple[str, int], int]) -> Offsets:
    offsets: Offsets = {}
    for (topic, partition), offset in sorted(resolved.items()):
        offsets.setdefault(topic, {})[str(partition)] = int(offset)
    return offsets


def _rate_limited(
    start: Mapping[str, Mapping[str, int]], latest: Mapping[tuple[str, int], int], max_rows: int
) -> dict[tuple[str, int], int]:
    """Share exactly max_rows over the partitions in proportion to their backlog.

    Rounding down alone could give every partition 0 (fifty partitions, a
    limit of 10) and stall the stream, so what rounding leaves over goes one
    offset at a time to the partitions with the most left to read.
    """
    firsts = {key: _lookup(start, key, offset) for key, offset in latest.items()}
    backlog = {key: max(offset - firsts[key], 0) for key, offset in latest.items()}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    shares = {key: backlog[key] * max_rows // total for key in latest}
    leftover = max_rows - sum(shares.values())
    for key in sorted(latest, key=lambda each: (shares[each] - backlog[each], each))[:leftover]:
        shares[key] += 1
    return {
        key: firsts[key] + shares[key] if backlog[key] else offset for key, offset in latest.items()
    }


# --------------------------------------------------------------------------- the data source


class KafkaDataSource(DataSource):
    """`spark.read.format("kshare-kafka")` and `spark.readStream.format("kshare-kafka")`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return KAFKA_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(KafkaReadOptions.from_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return KafkaStreamReader(KafkaReadOptions.from_options(self.options))


def register(spark: SparkSession) -> None:
    """Make the "kshare-kafka" format known to this session (registering twice is harmless)."""
    spark.dataSource.register(KafkaDataSource)


def read_kafka(
    spark: SparkSession, options: KafkaReadOptions, *, connector: Connector = "kshare"
) -> DataFrame:
    """A batch DataFrame in KAFKA_SCHEMA, through kshare's source or Spark's own connector."""
    if connector == "spark":
        frame = spark.read.format("kafka").options(**spark_kafka_options(options)).load()
        return frame.select(*KAFKA_SCHEMA.fieldNames())
    register(spark)
    return spark.read.format(SOURCE_NAME).options(**options.as_options()).load()


def read_kafka_stream(
    spark: SparkSession, options: KafkaReadOptions, *, connector: Connector = "kshare"
) -> DataFrame:
    """A streaming DataFrame in KAFKA_SCHEMA; endingOffsets and endingTimestamp do not apply."""
    stream_options = spark_kafka_options(options) if connector == "spark" else options.as_options()
    for key in ("endingOffsets", "endingTimestamp"):
        stream_options.pop(key, None)
    reader: DataStreamReader
    if connector == "spark":
        reader = spark.readStream.format("kafka")
    else:
        register(spark)
        reader = spark.readStream.format(SOURCE_NAME)
    frame = reader.options(**stream_options).load()
    return frame.select(*KAFKA_SCHEMA.fieldNames())
