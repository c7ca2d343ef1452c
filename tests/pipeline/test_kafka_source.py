"""The kshare-kafka Spark source against a broker: it returns exactly the records produced.

Records are produced with confluent-kafka (keys, values, a tombstone, headers,
explicit timestamps) into a 3-partition topic on the sandbox, or on a real
cluster with KSHARE_TEST_BOOTSTRAP, and read back through Spark: all of them,
an offset range, everything since a timestamp, and -- as a stream -- records
produced after the stream started.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row, SparkSession

from kshare_cli.pipeline.kafka_source import (
    KAFKA_SCHEMA,
    KafkaReadOptions,
    KafkaSourceError,
    _rate_limited,
    read_kafka,
    read_kafka_stream,
    spark_kafka_options,
)
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster
from tests.support.waiting import wait_for

PARTITIONS = 3
BASE_TIMESTAMP_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class Produced:
    """A record as the producer's delivery report saw it: where it landed, what it held."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] | None

    def row(self) -> tuple[object, ...]:
        return (
            self.key,
            self.value,
            self.topic,
            self.partition,
            self.offset,
            _utc(self.timestamp_ms),
            0,  # CreateTime
            None if self.headers is None else [list(header) for header in self.headers],
        )


def _utc(timestamp_ms: int) -> datetime.datetime:
    """How collect() shows a timestamp: naive, in the Python process's zone (UTC here)."""
    return datetime.datetime.fromtimestamp(timestamp_ms / 1000)


def _as_tuple(row: Row) -> tuple[object, ...]:
    headers = row["headers"]
    return (
        row["key"],
        row["value"],
        row["topic"],
        row["partition"],
        row["offset"],
        row["timestamp"],
        row["timestampType"],
        None if headers is None else [[header["key"], header["value"]] for header in headers],
    )


def _rows(frame: DataFrame) -> list[tuple[object, ...]]:
    return sorted((_as_tuple(row) for row in frame.collect()), key=lambda row: (row[3], row[4]))


def _expected(records: list[Produced]) -> list[tuple[object, ...]]:
    return sorted((record.row() for record in records), key=lambda row: (row[3], row[4]))


def _create_topic(cluster: Cluster, topic: str) -> None:
    """With retention off: a real broker would delete the January 2026 records at any moment."""
    admin = AdminClient(cluster.config())
    new = NewTopic(topic, PARTITIONS, 1, config=KEEP_OLD_RECORDS)
    for future in admin.create_topics([new]).values():
        future.result(15)


ProduceFn = Callable[[int, int], list[Produced]]


def _producer_for(cluster: Cluster, topic: str) -> ProduceFn:
    """produce(first, count): records number first.. first+count-1, spread over the partitions.

    Record n goes to partition n % 3 with timestamp BASE + n seconds; every
    seventh is a tombstone, every third has no key, every other one has headers.
    """
    producer = Producer(cluster.config(**{"linger.ms": 0}))

    def produce(first: int, count: int) -> list[Produced]:
        delivered: list[Produced] = []
        failures: list[str] = []

        for number in range(first, first + count):
            key = None if number % 3 == 0 else f"key-{number}".encode()
            value = None if number % 7 == 6 else f"value-{number}".encode()
            headers = (("n", str(number).encode()), ("empty", None)) if number % 2 == 0 else None
            timestamp_ms = BASE_TIMESTAMP_MS + number * 1000

            def report(
                error: object,
                message: Message,
                key: bytes | None = key,
                value: bytes | None = value,
                headers: tuple[tuple[str, bytes | None], ...] | None = headers,
                timestamp_ms: int = timestamp_ms,
            ) -> None:
                if error is not None:
                    failures.append(str(error))
                    return
                offset = message.offset()
                partition = message.partition()
                assert offset is not None and partition is not None
                delivered.append(
                    Produced(topic, partition, offset, key, value, timestamp_ms, headers)
                )

            producer.produce(
                topic,
                value=value,
                key=key,
                partition=number % PARTITIONS,
                timestamp=timestamp_ms,
                headers=list(headers) if headers is not None else None,
                on_delivery=report,
            )
        assert producer.flush(20) == 0
        assert failures == []
        assert len(delivered) == count
        return delivered

    return produce


@pytest.fixture
def topic(cluster: Cluster, unique: str) -> str:
    name = f"pipeline-source-{unique}"
    _create_topic(cluster, name)
    return name


@pytest.fixture
def produce(cluster: Cluster, topic: str) -> ProduceFn:
    return _producer_for(cluster, topic)


def _options(cluster: Cluster, topic: str, **fields: object) -> KafkaReadOptions:
    config = {key: str(value) for key, value in cluster.config().items()}
    return KafkaReadOptions(config=config, topics=(topic,), **fields)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- batch


def test_batch_read_returns_exactly_the_produced_records(
    spark: SparkSession, cluster: Cluster, topic: str, produce: ProduceFn
) -> None:
    records = produce(0, 30)

    frame = read_kafka(spark, _options(cluster, topic, max_records_per_partition=4))

    assert frame.schema == KAFKA_SCHEMA
    # 10 records per partition in chunks of 4: 3 input partitions each, read by separate tasks.
    assert frame.rdd.getNumPartitions() == 9
    assert _rows(frame) == _expected(records)
    tombstones = [row for row in _rows(frame) if row[1] is None]
    assert len(tombstones) == 4  # numbers 6, 13, 20, 27


def test_an_offset_range_reads_only_those_offsets(
    spark: SparkSession, cluster: Cluster, topic: str, produce: ProduceFn
) -> None:
    records = produce(0, 30)
    options = KafkaReadOptions(
        config=_options(cluster, topic).config,
        assign={topic: (1,)},
        starting_offsets={topic: {"1": 2}},
        ending_offsets={topic: {"1": 5}},
    )

    rows = _rows(read_kafka(spark, options))

    wanted = [record for record in records if record.partition == 1 and 2 <= record.offset < 5]
    assert [row[4] for row in rows] == [2, 3, 4]
    assert rows == _expected(wanted)


def test_since_a_timestamp_reads_the_records_from_then_on(
    spark: SparkSession, cluster: Cluster, topic: str, produce: ProduceFn
) -> None:
    records = produce(0, 30)
    since = BASE_TIMESTAMP_MS + 17 * 1000

    rows = _rows(read_kafka(spark, _options(cluster, topic, starting_timestamp=since)))

    assert rows == _expected([record for record in records if record.timestamp_ms >= since])
    assert len(rows) == 13


def test_a_missing_topic_fails_with_its_name(
    spark: SparkSession, cluster: Cluster, unique: str
) -> None:
    frame = read_kafka(spark, _options(cluster, f"pipeline-missing-{unique}"))
    with pytest.raises(Exception, match=f"topic pipeline-missing-{unique} cannot be read"):
        frame.collect()


# --------------------------------------------------------------------------- streaming


@pytest.fixture
def memory_query(spark: SparkSession) -> Iterator[list[object]]:
    """Streaming queries the test starts; stopped whatever happens."""
    queries: list[object] = []
    yield queries
    for query in queries:
        query.stop()  # type: ignore[attr-defined]


def test_the_stream_picks_up_records_produced_after_it_started(
    spark: SparkSession,
    cluster: Cluster,
    topic: str,
    produce: ProduceFn,
    unique: str,
    memory_query: list[object],
    tmp_path: object,
) -> None:
    before = produce(0, 6)
    stream = read_kafka_stream(spark, _options(cluster, topic, starting_offsets="earliest"))
    name = f"stream_{unique}"
    query = (
        stream.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    memory_query.append(query)
    wait_for(
        lambda: spark.table(name).count() >= 6,
        timeout=60,
        interval=0.2,
        what="the records produced before",
    )

    after = produce(6, 9)
    wait_for(
        lambda: spark.table(name).count() >= 15,
        timeout=60,
        interval=0.2,
        what="the records produced after",
    )

    assert _rows(spark.table(name)) == _expected(before + after)


def test_available_now_resumes_from_its_checkpoint_without_rereading(
    spark: SparkSession,
    cluster: Cluster,
    topic: str,
    produce: ProduceFn,
    unique: str,
    tmp_path: object,
) -> None:
    first = produce(0, 9)
    seen: list[tuple[object, ...]] = []
    batches: list[int] = []

    def collect(frame: DataFrame, batch_id: int) -> None:
        batches.append(batch_id)
        seen.extend(_as_tuple(row) for row in frame.collect())

    def run() -> None:
        # maxOffsetsPerTrigger splits the run into several micro-batches; availableNow
        # ends it at the offsets that existed when it started.
        stream = read_kafka_stream(
            spark,
            _options(cluster, topic, starting_offsets="earliest", max_offsets_per_trigger=4),
        )
        query = (
            stream.writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(60)
        assert not query.isActive

    run()
    assert sorted(seen, key=lambda row: (row[3], row[4])) == _expected(first)
    assert len(batches) >= 3

    second = produce(9, 6)
    seen.clear()
    run()
    assert sorted(seen, key=lambda row: (row[3], row[4])) == _expected(second)


# --------------------------------------------------------------------------- options


def test_options_survive_the_trip_through_spark_options() -> None:
    options = KafkaReadOptions(
        config={"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL"},
        assign={"orders": (0, 2)},
        starting_offsets={"orders": {"0": 5, "2": -2}},
        ending_offsets="latest",
        starting_timestamp=1_700_000_000_000,
        max_records_per_partition=1000,
        min_partitions=4,
        max_offsets_per_trigger=50,
        fail_on_data_loss=False,
        poll_timeout_ms=5000,
    )
    # Spark lower-cases option names before the source sees them.
    lowered = {key.lower(): value for key, value in options.as_options().items()}

    assert KafkaReadOptions.from_options(lowered) == options


def test_spark_style_kafka_options_feed_librdkafka() -> None:
    options = KafkaReadOptions.from_options(
        {
            "kafka.bootstrap.servers": "b:9092",
            "kafka.config": json.dumps({"security.protocol": "SSL", "client.id": "audit"}),
            "subscribe": "a, b",
            "startingoffsets": "earliest",
        }
    )

    assert options.config == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SSL",
        "client.id": "audit",
    }
    assert options.topics == ("a", "b")
    assert options.starting_offsets == "earliest"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kafka.bootstrap.servers": "b:1"}, "either subscribe or assign"),
        ({"subscribe": "t"}, "no bootstrap.servers"),
        ({"subscribe": "t", "kafka.bootstrap.servers": "b:1", "startingoffsets": "first"}, "JSON"),
        ({"assign": "[0]", "kafka.bootstrap.servers": "b:1"}, "assign must be"),
        ({"subscribe": "t", "kafka.bootstrap.servers": "b:1", "minpartitions": "x"}, "integer"),
    ],
)
def test_bad_options_are_refused_with_the_option_named(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(KafkaSourceError, match=message):
        KafkaReadOptions.from_options(options)


def test_spark_connector_options_translate_credentials_and_tls() -> None:
    options = KafkaReadOptions(
        config={
            "bootstrap.servers": "b:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": 'p"w',
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.endpoint.identification.algorithm": "https",
        },
        topics=("orders",),
        starting_offsets="earliest",
    )

    translated = spark_kafka_options(options)

    assert translated["kafka.bootstrap.servers"] == "b:9093"
    assert translated["kafka.security.protocol"] == "SASL_SSL"
    assert translated["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="p\\"w";'
    )
    assert translated["kafka.ssl.truststore.type"] == "PEM"
    assert translated["kafka.ssl.truststore.location"] == "/etc/ca.pem"
    assert translated["subscribe"] == "orders"
    assert translated["startingOffsets"] == "earliest"
    assert translated["includeHeaders"] == "true"
    assert "kafka.sasl.username" not in translated


def test_spark_connector_refuses_what_it_cannot_say() -> None:
    options = KafkaReadOptions(
        config={"bootstrap.servers": "b:1", "ssl.certificate.location": "/c.pem"},
        topics=("t",),
    )
    with pytest.raises(KafkaSourceError, match="ssl.certificate.location"):
        spark_kafka_options(options)


def test_a_rate_limit_shares_exactly_its_rows_and_never_stalls() -> None:
    """Fifty partitions with one record each and a limit of ten: proportional shares round
    down to zero everywhere, yet the micro-batch must still take ten records."""
    start = {"t": {str(p): 100 for p in range(50)}}
    latest = {("t", p): 101 for p in range(50)}

    limited = _rate_limited(start, latest, 10)

    assert sum(offset - 100 for offset in limited.values()) == 10
    assert all(offset in (100, 101) for offset in limited.values())


def test_a_rate_limit_follows_the_backlog() -> None:
    start = {"t": {"0": 0, "1": 0}}

    limited = _rate_limited(start, {("t", 0): 300, ("t", 1): 100}, 40)

    assert limited == {("t", 0): 30, ("t", 1): 10}


def test_the_spark_connector_switch_asks_spark_for_its_kafka_format(
    spark: SparkSession,
) -> None:
    """Without Spark's Kafka package on the class path, Spark itself refuses the format:
    proof that the switch hands the read to Spark's connector, not to kshare's."""
    options = KafkaReadOptions(config={"bootstrap.servers": "b:1"}, topics=("t",))
    with pytest.raises(AnalysisException, match="Failed to find data source: kafka"):
        read_kafka(spark, options, connector="spark")
