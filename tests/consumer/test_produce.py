"""The produce engine: lines in, records out, read back with confluent-kafka's own consumer.

Record content and order are checked on the sandbox (or a real cluster, with
``KSHARE_TEST_BOOTSTRAP``); faults the sandbox cannot stage -- a broker refusing a
Produce request, a broker going away -- on librdkafka's mock cluster.
"""

from __future__ import annotations

import io
import itertools
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping

import pytest
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from kshare_cli.consumer.produce import (
    DEFAULT_PRODUCER_CONFIG,
    DeliveryFailure,
    MalformedLine,
    TokenBucket,
    parse_headers,
    parse_key_separator,
    produce_lines,
)
from kshare_cli.errors import ConnectionFailed, NotFound, UsageError
from kshare_cli.kafka.api_keys import PRODUCE
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.records import create_topic
from tests.support.sandbox import Cluster


def read_back(
    config: Mapping[str, object], topic: str, partitions: Iterable[int], expected: int
) -> list[Message]:
    """Every record of ``partitions`` from offset 0, in partition order, once ``expected`` came."""
    consumer = Consumer(
        {**config, "group.id": f"read-back-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, partition, 0) for partition in partitions])
    seen: list[Message] = []
    deadline = time.monotonic() + 20
    try:
        while len(seen) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            seen.append(message)
    finally:
        consumer.close()
    return seen


def end_offsets(config: Mapping[str, object], topic: str, partitions: int) -> list[int]:
    consumer = Consumer({**config, "group.id": f"ends-{uuid.uuid4().hex}"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
            for partition in range(partitions)
        ]
    finally:
        consumer.close()


class Untouched:
    """An input that fails the test if anyone reads it: the checks come before reading."""

    def __iter__(self) -> Iterator[bytes]:
        raise AssertionError("the input was read")


# --------------------------------------------------------------------------- on the sandbox


def test_lines_become_records_with_keys_values_headers_in_order(
    cluster: Cluster, unique: str
) -> None:
    topic = f"produce-{unique}"
    create_topic(cluster, topic, 2)
    data = (
        b"k1\tv1\n"
        b"k2\tv2 with\ttab\r\n"  # only the first separator splits; CRLF loses its CR
        b"\tempty key\n"
        b"k4\t\n"  # empty value
        b"\xff\xfe\tnot utf-8 \x00\n"  # bytes pass unchanged
        b"k6\tlast line, no newline"
    )
    failures: list[DeliveryFailure] = []
    result = produce_lines(
        cluster.config(),
        topic,
        io.BytesIO(data),
        key_separator=b"\t",
        headers=[("source", b"kshare"), ("source", b"again"), ("empty", b"")],
        partition=1,
        on_failure=failures.append,
    )
    assert (result.lines, result.delivered, result.failed, result.stopped_by) == (6, 6, 0, "eof")
    assert result.complete and failures == []
    records = read_back(cluster.config(), topic, [1], 6)
    assert [(m.key(), m.value()) for m in records] == [
        (b"k1", b"v1"),
        (b"k2", b"v2 with\ttab"),
        (b"", b"empty key"),
        (b"k4", b""),
        (b"\xff\xfe", b"not utf-8 \x00"),
        (b"k6", b"last line, no newline"),
    ]
    assert [m.offset() for m in records] == list(range(6))
    for record in records:
        assert record.headers() == [("source", b"kshare"), ("source", b"again"), ("empty", b"")]
    assert end_offsets(cluster.config(), topic, 2) == [0, 6]


def test_without_a_separator_the_line_is_the_value(cluster: Cluster, unique: str) -> None:
    topic = f"produce-plain-{unique}"
    create_topic(cluster, topic, 1)
    result = produce_lines(cluster.config(), topic, io.BytesIO(b"a:b\n\n  spaced  \n"))
    assert result.delivered == 3
    records = read_back(cluster.config(), topic, [0], 3)
    assert [(m.key(), m.value(), m.headers()) for m in records] == [
        (None, b"a:b", None),
        (None, b"", None),  # an empty line is an empty record, as in Kafka's producer
        (None, b"  spaced  ", None),
    ]


def java_murmur2(data: bytes) -> int:
    """``org.apache.kafka.common.utils.Utils.murmur2``, as an unsigned 32-bit value."""
    m, seed = 0x5BD1E995, 0x9747B28C
    length = len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4 : i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length & ~3
    remaining = length % 4
    if remaining == 3:
        h ^= data[tail + 2] << 16
    if remaining >= 2:
        h ^= data[tail + 1] << 8
    if remaining >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def test_java_murmur2_matches_kafkas_own_test_vectors() -> None:
    # UtilsTest.testMurmur2 in Apache Kafka (signed ints there).
    for text, signed in (("21", -973932308), ("foobar", -790332482), ("abc", 479470107)):
        assert java_murmur2(text.encode()) == signed & 0xFFFFFFFF


def test_keyed_records_go_where_the_java_producer_puts_them(cluster: Cluster, unique: str) -> None:
    topic = f"produce-keys-{unique}"
    create_topic(cluster, topic, 5)
    keys = [f"customer-{i}".encode() for i in range(40)]
    lines = b"".join(key + b"=" + str(i).encode() + b"\n" for i, key in enumerate(keys))
    result = produce_lines(cluster.config(), topic, io.BytesIO(lines), key_separator=b"=")
    assert result.delivered == 40
    records = read_back(cluster.config(), topic, range(5), 40)
    placed = {m.key(): m.partition() for m in records}
    assert placed == {key: (java_murmur2(key) & 0x7FFFFFFF) % 5 for key in keys}
    assert len(set(placed.values())) > 1  # the keys really spread


def test_rate_paces_records_as_their_timestamps_show(cluster: Cluster, unique: str) -> None:
    topic = f"produce-rate-{unique}"
    create_topic(cluster, topic, 1)
    count, rate = 40, 100.0
    lines = b"".join(b"%d\n" % i for i in range(count))
    result = produce_lines(cluster.config(), topic, io.BytesIO(lines), rate=rate)
    assert result.delivered == count
    records = read_back(cluster.config(), topic, [0], count)
    assert [(m.offset(), m.value()) for m in records] == [(i, b"%d" % i) for i in range(count)]
    # CreateTime is stamped by librdkafka at produce(), in whole milliseconds: the pacing
    # itself, without the connection set-up or the final flush. A loaded machine only
    # makes records later than their token, so what is asserted is what the timestamps
    # show, not how long the machine took.
    stamps = [m.timestamp()[1] for m in records]
    gaps = sorted(later - earlier for earlier, later in itertools.pairwise(stamps))
    interval_ms = 1000 / rate
    # Never faster than the rate: one token at the start, then one per interval (the
    # slack is a first record's produce() delayed after its token, and truncation).
    assert stamps[-1] - stamps[0] >= 0.85 * (count - 1) * interval_ms, stamps
    assert gaps[0] >= 0, stamps  # in order
    # Paced at the rate, not slower: most records waited one interval, not two (a machine
    # that overslept a few sleeps lengthens a few gaps; the median is the pacer's).
    assert interval_ms - 1 <= gaps[len(gaps) // 2] < 2 * interval_ms, gaps


def test_unknown_topic_and_partition_are_refused_before_reading(
    cluster: Cluster, unique: str
) -> None:
    topic = f"produce-checked-{unique}"
    with pytest.raises(NotFound, match=f"topic '{topic}' does not exist"):
        produce_lines(cluster.config(), topic, Untouched(), timeout_s=10)
    # Checking did not create it (the sandbox, like Kafka, auto-creates on request).
    metadata = AdminClient(cluster.config()).list_topics(timeout=10)
    assert topic not in metadata.topics
    create_topic(cluster, topic, 2)
    with pytest.raises(NotFound, match="has 2 partitions .0-1.; there is no partition 2"):
        produce_lines(cluster.config(), topic, Untouched(), partition=2, timeout_s=10)


# --------------------------------------------------------------------------- no broker needed


def test_an_unreachable_cluster_is_a_connection_failure() -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match="cannot connect to 127.0.0.1:1: .*refused"):
        produce_lines({"bootstrap.servers": "127.0.0.1:1"}, "t", Untouched(), timeout_s=1)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"no.such.property": "1"}, 'No such configuration property: "no.such.property"'),
        ({"acks": "sometimes"}, 'Invalid value for configuration property "request.required.acks"'),
    ],
)
def test_a_bad_producer_property_is_a_usage_error_before_connecting(
    properties: dict[str, str], message: str
) -> None:
    config = {"bootstrap.servers": "127.0.0.1:1", **properties}
    with pytest.raises(UsageError, match=message):
        produce_lines(config, "t", Untouched(), timeout_s=30)


def test_the_defaults_yield_to_the_callers_properties(rdkafka_mock: RdkafkaMockCluster) -> None:
    # With auto-creation asked for, the check no longer refuses: the mock creates the topic.
    assert DEFAULT_PRODUCER_CONFIG["allow.auto.create.topics"] == "false"
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers}
    with pytest.raises(NotFound):
        produce_lines(config, "created-on-demand", Untouched(), timeout_s=10)
    config["allow.auto.create.topics"] = "true"
    result = produce_lines(config, "created-on-demand", io.BytesIO(b"x\n"), timeout_s=10)
    assert result.delivered == 1


def test_token_bucket_bursts_then_paces() -> None:
    now = [100.0]
    bucket = TokenBucket(rate=10.0, burst=2.0, clock=lambda: now[0])
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]  # starts full
    assert bucket.take() == pytest.approx(0.1)  # one token every 1/rate s
    now[0] += 0.05
    assert bucket.take() == pytest.approx(0.05)
    now[0] += 0.05
    assert bucket.take() == 0.0
    now[0] += 10  # idle: refills only up to the burst
    assert [bucket.take(), bucket.take(), bucket.take() > 0] == [0.0, 0.0, True]
    assert TokenBucket(rate=1000.0).capacity == 10.0  # default burst: 10 ms worth
    assert TokenBucket(rate=5.0).capacity == 1.0
    with pytest.raises(ValueError, match="greater than zero"):
        TokenBucket(rate=0)


@pytest.mark.parametrize(
    ("text", "separator"),
    [
        ("\\t", b"\t"),
        (":", b":"),
        ("::", b"::"),
        ("\\\\", b"\\"),
        ("a\\b", b"a\\b"),
        ("é", "é".encode()),
    ],
)
def test_key_separator_escapes(text: str, separator: bytes) -> None:
    assert parse_key_separator(text) == separator


@pytest.mark.parametrize(
    ("function", "argument", "message"),
    [
        (parse_key_separator, "", "--key-separator cannot be empty"),
        (parse_headers, ["novalue"], "expected KEY=VALUE"),
        (parse_headers, ["=v"], "header key cannot be empty"),
    ],
)
def test_bad_options_are_usage_errors(function: object, argument: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        function(argument)  # type: ignore[operator]


def test_a_long_malformed_line_is_shown_cut() -> None:
    line = MalformedLine(7, b"\t", b"x" * 60, truncated=True)
    assert str(line) == f"line 7: no key separator '\\t' found in '{'x' * 60}'..."
    assert "..." not in str(MalformedLine(7, b":", b"short"))


def test_headers_keep_order_repeats_and_empty_values() -> None:
    assert parse_headers(["a=1", "a=2", "b=", "c=x=y"]) == (
        ("a", b"1"),
        ("a", b"2"),
        ("b", b""),
        ("c", b"x=y"),
    )


# --------------------------------------------------------------------------- faults, on the mock


def test_a_line_without_the_separator_stops_the_run_after_flushing_the_rest(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    rdkafka_mock.create_topic("t", 1)
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers}
    source = io.BytesIO(b"a:1\nb:2\nno separator here\nc:3\n")
    result = produce_lines(config, "t", source, key_separator=b":")
    assert result.stopped_by == "malformed" and not result.complete
    assert (result.lines, result.delivered, result.failed) == (2, 2, 0)
    assert result.malformed is not None and result.malformed.line_number == 3
    assert str(result.malformed) == "line 3: no key separator ':' found in 'no separator here'"
    assert source.read() == b"c:3\n"  # nothing after the bad line was read
    records = read_back(config, "t", [0], 2)
    assert [(m.key(), m.value()) for m in records] == [(b"a", b"1"), (b"b", b"2")]


def test_records_the_broker_refuses_are_reported_by_line(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    rdkafka_mock.create_topic("t", 1)
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers, "linger.ms": "0"}
    rdkafka_mock.push_request_errors(PRODUCE, [KafkaError.TOPIC_AUTHORIZATION_FAILED])
    failures: list[DeliveryFailure] = []
    lines = b"".join(b"%d\n" % number for number in range(1, 51))
    result = produce_lines(config, "t", io.BytesIO(lines), on_failure=failures.append)
    assert result.lines == 50 and result.failed == len(failures) >= 1
    assert result.delivered + result.failed == 50
    assert {f.error_name for f in failures} == {"TOPIC_AUTHORIZATION_FAILED"}
    assert str(failures[0]).startswith(f"line {failures[0].line_number}: not produced: ")
    records = read_back(config, "t", [0], result.delivered)
    produced = {int(m.value()) for m in records}  # type: ignore[arg-type]
    refused = {f.line_number for f in failures}
    assert produced | refused == set(range(1, 51)) and not produced & refused
    assert end_offsets(config, "t", 1) == [result.delivered]


def test_a_record_too_large_is_reported_and_the_rest_produced(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    rdkafka_mock.create_topic("t", 1)
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers, "message.max.bytes": "1000"}
    failures: list[DeliveryFailure] = []
    source = io.BytesIO(b"small\n" + b"x" * 2000 + b"\nsmall again\n")
    result = produce_lines(config, "t", source, on_failure=failures.append)
    assert (result.lines, result.delivered, result.failed) == (3, 2, 1)
    assert [(f.line_number, f.error_name) for f in failures] == [(2, "MSG_SIZE_TOO_LARGE")]
    records = read_back(config, "t", [0], 2)
    assert [m.value() for m in records] == [b"small", b"small again"]


def test_a_full_queue_waits_instead_of_dropping(rdkafka_mock: RdkafkaMockCluster) -> None:
    rdkafka_mock.create_topic("t", 1)
    config = {
        "bootstrap.servers": rdkafka_mock.bootstrap_servers,
        "queue.buffering.max.messages": "5",
    }
    lines = b"".join(b"%d\n" % i for i in range(300))
    result = produce_lines(config, "t", io.BytesIO(lines))
    assert (result.delivered, result.failed) == (300, 0)
    assert [int(m.value()) for m in read_back(config, "t", [0], 300)] == list(range(300))  # type: ignore[arg-type]


def test_failures_are_reported_while_the_input_is_idle(rdkafka_mock: RdkafkaMockCluster) -> None:
    """A run waiting for its next line (a prompt, a slow pipe) still reports failures."""
    rdkafka_mock.create_topic("t", 1)
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers, "linger.ms": "0"}
    # A record's own error, not a topic's: after TOPIC_AUTHORIZATION_FAILED librdkafka
    # refuses the topic's next produce() at once until its next metadata refresh, so
    # line 2 would fail too whenever it came before that refresh (a loaded machine).
    rdkafka_mock.push_request_errors(PRODUCE, [KafkaError.INVALID_RECORD])
    reported = threading.Event()

    def slow_input() -> Iterator[bytes]:
        yield b"first\n"
        # Until the failure of line 1 is reported, the next line does not come.
        assert reported.wait(10), "line 1's failure was not reported while input was idle"
        yield b"second\n"

    failures: list[DeliveryFailure] = []

    def on_failure(failure: DeliveryFailure) -> None:
        failures.append(failure)
        reported.set()

    result = produce_lines(config, "t", slow_input(), on_failure=on_failure)
    assert [f.line_number for f in failures] == [1]
    assert (result.delivered, result.failed) == (1, 1)


def test_a_broker_gone_mid_run_fails_the_records_it_never_took(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    rdkafka_mock.create_topic("t", 1)
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers}
    failures: list[DeliveryFailure] = []

    def input_then_outage() -> Iterator[bytes]:
        yield b"before\n"
        # Wait for line 1 to be in the log, then take the broker down.
        deadline = time.monotonic() + 10
        while end_offsets(config, "t", 1) != [1] and time.monotonic() < deadline:
            time.sleep(0.02)
        rdkafka_mock.broker_set_down(1)
        yield b"during\n"
        yield b"outage\n"

    result = produce_lines(
        config, "t", input_then_outage(), timeout_s=1, on_failure=failures.append
    )
    assert (result.lines, result.delivered, result.failed) == (3, 1, 2)
    assert [(f.line_number, f.error_name) for f in failures] == [
        (2, "_MSG_TIMED_OUT"),
        (3, "_MSG_TIMED_OUT"),
    ]


def test_an_interrupt_stops_reading_and_flushes_what_was_read(
    rdkafka_mock: RdkafkaMockCluster,
) -> None:
    rdkafka_mock.create_topic("t", 1)
    config = {"bootstrap.servers": rdkafka_mock.bootstrap_servers, "linger.ms": "200"}

    def interrupted_input() -> Iterator[bytes]:
        yield from (b"1\n", b"2\n", b"3\n")
        raise KeyboardInterrupt

    result = produce_lines(config, "t", interrupted_input())
    # linger.ms=200: the three records were still queued when the interrupt came.
    assert (result.stopped_by, result.lines, result.delivered, result.unconfirmed) == (
        "interrupted",
        3,
        3,
        0,
    )
    assert [m.value() for m in read_back(config, "t", [0], 3)] == [b"1", b"2", b"3"]
    assert "kshare-produce-poll" not in {thread.name for thread in threading.enumerate()}
