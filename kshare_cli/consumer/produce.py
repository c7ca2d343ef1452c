"""Lines from a byte stream to one Kafka topic through librdkafka: the engine of ``kshare produce``.

It exists to feed share groups in tests and demos, so it is a line reader with
Kafka's console-producer semantics where they matter (one record per line, the
key before the first separator, a line without one stops the run) and safe
defaults where Kafka's tool has surprising ones:

- The topic must exist: ``allow.auto.create.topics`` is off, and the topic and
  partition are checked in the metadata before the first line is read, so a
  typo is one error instead of a new topic.
- Keyed records go where Kafka's Java producer would put them: the
  ``murmur2_random`` partitioner instead of librdkafka's CRC32 default.
- Every record's delivery is confirmed or reported with the input line it came
  from; an interrupted run still flushes what was handed to the producer.

Values and keys are the line's bytes, unchanged (no charset decoding): ``\\n``
ends a line and a ``\\r`` before it is dropped; a last line without ``\\n`` is a
record; an empty line is a record with an empty value.

Nothing here prints: failures go to the ``on_failure`` callback, the counts come
back in :class:`ProduceResult`, and the command turns them into stderr lines.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from kshare_cli.consumer.preflight import topic_partitions
from kshare_cli.dataplane.clients import new_producer
from kshare_cli.dataplane.errors import error_text
from kshare_cli.errors import AUTHORIZATION_ERROR_CODES, NotFound, UsageError

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message, Producer

    from kshare_cli.wire.diagnose import Diagnose

__all__ = [
    "DEFAULT_PRODUCER_CONFIG",
    "DeliveryFailure",
    "MalformedLine",
    "ProduceResult",
    "TokenBucket",
    "parse_headers",
    "parse_key_separator",
    "produce_lines",
]

#: What kshare sets unless the caller's config says otherwise (see the module docstring).
DEFAULT_PRODUCER_CONFIG: Final[Mapping[str, str]] = {
    "allow.auto.create.topics": "false",
    "partitioner": "murmur2_random",
}

_SHOWN_LINE_BYTES = 60
_POLL_INTERVAL_S = 0.1
_POLL_EVERY = 1000
_QUEUE_FULL_WAIT_S = 0.005
_FLUSH_SLICE_S = 0.2

StopReason = Literal["eof", "interrupted", "malformed"]


@dataclass(frozen=True, slots=True)
class DeliveryFailure:
    """A record the cluster (or librdkafka) did not take, by the input line it came from."""

    line_number: int
    error_name: str  # librdkafka's name, e.g. MSG_SIZE_TOO_LARGE
    reason: str

    def __str__(self) -> str:
        return f"line {self.line_number}: not produced: {self.reason} ({self.error_name})"


@dataclass(frozen=True, slots=True)
class MalformedLine:
    """The input line that stopped the run: it has no key separator."""

    line_number: int
    separator: bytes
    excerpt: bytes  # the line's first bytes
    truncated: bool = False  # the line is longer than the excerpt

    def __str__(self) -> str:
        shown = self.excerpt.decode("utf-8", "backslashreplace")
        more = "..." if self.truncated else ""
        separator = self.separator.decode("utf-8", "backslashreplace")
        return f"line {self.line_number}: no key separator {separator!r} found in {shown!r}{more}"


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """What happened to every line read, once the producer was flushed."""

    lines: int  # lines read and handed to the producer
    delivered: int  # acknowledged by the cluster
    failed: int  # reported through on_failure
    unconfirmed: int  # still in flight when waiting was given up (a second interrupt)
    stopped_by: StopReason
    malformed: MalformedLine | None = None
    not_authorized: int = 0  # of the failed, refused by the cluster's ACLs (no WRITE)

    @property
    def complete(self) -> bool:
        """Every line of the input was read and delivered."""
        return self.stopped_by == "eof" and self.failed == 0 and self.unconfirmed == 0


class TokenBucket:
    """Paces records to ``rate`` per second, with bursts of at most ``burst`` records.

    The default burst is a hundredth of a second's worth (at least one record): fine
    enough that a measured rate matches the asked one, coarse enough that a high rate
    does not turn into one sub-millisecond sleep per record. The bucket starts full.
    """

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be greater than zero: {rate}")
        self.rate = rate
        self.capacity = burst if burst is not None else max(1.0, rate / 100)
        self._clock = clock
        self._tokens = self.capacity
        self._updated = clock()

    def take(self) -> float:
        """Take one token and return 0, or return how long to wait until one is there."""
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now
        if self._tokens >= 1 - 1e-9:  # float steps must not leave a femtosecond to wait
            self._tokens = max(0.0, self._tokens - 1)
            return 0.0
        return (1 - self._tokens) / self.rate


def parse_key_separator(text: str) -> bytes:
    """``--key-separator``: UTF-8 bytes; ``\\t`` is a tab and ``\\\\`` a backslash.

    A tab is Kafka's default separator and awkward to type at a prompt, hence the
    escape; nothing else is unescaped.
    """
    if not text:
        raise UsageError("--key-separator cannot be empty")
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in "t\\":
            out.append("\t" if text[index + 1] == "t" else "\\")
            index += 2
            continue
        out.append(char)
        index += 1
    separator = "".join(out)
    if "\n" in separator:
        raise UsageError("--key-separator cannot contain a newline: lines end there")
    return separator.encode("utf-8")


def parse_headers(pairs: Iterable[str]) -> tuple[tuple[str, bytes], ...]:
    """``--header KEY=VALUE``, in order (Kafka allows repeated keys); the value may be empty."""
    headers: list[tuple[str, bytes]] = []
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals:
            raise UsageError(f"--header {pair!r}: expected KEY=VALUE")
        if not key:
            raise UsageError(f"--header {pair!r}: the header key cannot be empty")
        headers.append((key, value.encode("utf-8")))
    return tuple(headers)


class _Deliveries:
    """Delivery reports from librdkafka's callbacks, counted under a lock.

    Callbacks run in whichever thread polls (the poller while reading, the main
    thread while flushing), and a produce() that fails synchronously is counted
    from the main thread.
    """

    def __init__(self, on_failure: Callable[[DeliveryFailure], None] | None) -> None:
        self._lock = threading.Lock()
        self._on_failure = on_failure
        self.delivered = 0
        self.failed = 0
        self.not_authorized = 0
        self.client_errors: list[KafkaError] = []

    def report(self, line_number: int) -> Callable[[KafkaError | None, Message], None]:
        def delivered(error: KafkaError | None, _message: Message) -> None:
            if error is None:
                with self._lock:
                    self.delivered += 1
            else:
                refused = error.code() in AUTHORIZATION_ERROR_CODES
                self.fail(DeliveryFailure(line_number, error.name(), error.str()), refused)

        return delivered

    def fail(self, failure: DeliveryFailure, not_authorized: bool = False) -> None:
        with self._lock:
            self.failed += 1
            self.not_authorized += not_authorized
        if self._on_failure is not None:
            self._on_failure(failure)

    def client_error(self, error: KafkaError) -> None:
        """librdkafka's ``error_cb``: kept to explain a metadata failure (see preflight)."""
        self.client_errors.append(error)


class _IdlePoller:
    """Serves delivery reports whenever the main thread stops doing so.

    The read loop polls librdkafka itself every :data:`_POLL_EVERY` lines, which
    costs nothing measurable; while it waits for input (an interactive run, a slow
    pipe) or for the rate limit, this thread polls instead, so a failed record is
    reported when it fails, not when the next line arrives. It stays out of the way
    of a busy loop: a thread polling all the time costs a fifth of the throughput in
    GIL hand-offs.
    """

    def __init__(self, producer: Producer) -> None:
        self._producer = producer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kshare-produce-poll", daemon=True)
        self.activity = 0  # bumped by the read loop each time it polls

    def _run(self) -> None:
        seen = -1
        while not self._stop.wait(_POLL_INTERVAL_S):
            if self.activity == seen:
                self._producer.poll(0)
            seen = self.activity

    def __enter__(self) -> _IdlePoller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _new_producer(config: Mapping[str, object], deliveries: _Deliveries) -> Producer:
    """The producer on ``config`` (over :data:`DEFAULT_PRODUCER_CONFIG`); UsageError for a
    property librdkafka refuses, found before any connection was attempted."""
    effective: dict[str, object] = {**DEFAULT_PRODUCER_CONFIG, **config}
    effective.setdefault("error_cb", deliveries.client_error)
    return new_producer(effective)


def _check_destination(
    producer: Producer,
    topic: str,
    partition: int | None,
    timeout_s: float,
    deliveries: _Deliveries,
    bootstrap: str,
    diagnose: Diagnose | None = None,
) -> None:
    """Fail before reading a line if the cluster, the topic or the partition cannot take records.

    The consumer's preflight does the asking (one home for the metadata check and
    for reading librdkafka's errors): a refused connection or credentials fail at
    once, a cluster that never answers after ``timeout_s``.
    """
    partitions = topic_partitions(
        producer,
        topic,
        deliveries.client_errors,
        deadline=time.monotonic() + timeout_s,
        bootstrap=bootstrap,
        timeout_s=timeout_s,
        access="write to",
        diagnose=diagnose,
    )
    if partition is not None and partition not in partitions:
        count = len(partitions)
        raise NotFound(
            f"topic {topic!r} has {count} partition{'s' if count != 1 else ''} "
            f"(0-{count - 1}); there is no partition {partition}"
        )


def produce_lines(
    config: Mapping[str, object],
    topic: str,
    source: Iterable[bytes],
    *,
    key_separator: bytes | None = None,
    headers: Sequence[tuple[str, bytes]] = (),
    rate: float | None = None,
    partition: int | None = None,
    timeout_s: float = 30.0,
    on_failure: Callable[[DeliveryFailure], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    diagnose: Diagnose | None = None,
) -> ProduceResult:
    """Produce one record per line of ``source`` to ``topic``; flush; count the outcome.

    ``config`` is a confluent-kafka configuration (connection settings plus the
    caller's producer properties, which win over :data:`DEFAULT_PRODUCER_CONFIG`).
    ``timeout_s`` bounds the metadata check and, unless ``config`` says otherwise,
    each record's delivery (``message.timeout.ms``).

    Raises UsageError for a configuration librdkafka refuses, ConnectionFailed (or
    AuthenticationFailed, TimedOut) when no metadata comes back, NotFound for an
    unknown topic or partition -- all before the first line is read. After that
    nothing raises: a KeyboardInterrupt stops reading, and a second one stops
    waiting for the deliveries still in flight. ``diagnose`` words a TLS or SASL
    failure as the control plane does (``wire.diagnose``).
    """
    deliveries = _Deliveries(on_failure)
    settings: dict[str, object] = dict(config)
    if "message.timeout.ms" not in settings and "delivery.timeout.ms" not in settings:
        settings["message.timeout.ms"] = str(max(1, round(timeout_s * 1000)))
    producer = _new_producer(settings, deliveries)
    bootstrap = str(settings.get("bootstrap.servers", ""))
    _check_destination(producer, topic, partition, timeout_s, deliveries, bootstrap, diagnose)
    sent = _send_lines(
        producer,
        topic,
        source,
        deliveries,
        key_separator=key_separator,
        headers=headers,
        bucket=TokenBucket(rate) if rate is not None else None,
        partition=partition,
        sleep=sleep,
    )
    unconfirmed = _flush(producer)
    return ProduceResult(
        lines=sent.lines,
        delivered=deliveries.delivered,
        failed=deliveries.failed,
        not_authorized=deliveries.not_authorized,
        unconfirmed=unconfirmed,
        stopped_by=sent.stopped_by,
        malformed=sent.malformed,
    )


@dataclass(frozen=True, slots=True)
class _Sent:
    """How the read loop ended: the lines handed to the producer, and why it stopped."""

    lines: int
    stopped_by: StopReason
    malformed: MalformedLine | None = None


def _send_lines(
    producer: Producer,
    topic: str,
    source: Iterable[bytes],
    deliveries: _Deliveries,
    *,
    key_separator: bytes | None,
    headers: Sequence[tuple[str, bytes]],
    bucket: TokenBucket | None,
    partition: int | None,
    sleep: Callable[[float], None],
) -> _Sent:
    """Hand each line to the producer until the input ends, a line has no key separator,
    or a KeyboardInterrupt. One loop with its names bound locally: it is the command's
    hot path (a function call per line costs a measurable share of the throughput)."""
    from confluent_kafka import KafkaException

    line_number = sent = 0
    record_headers: list[tuple[str, str | bytes | None]] | None = list(headers) or None
    target = -1 if partition is None else partition  # -1: librdkafka's partitioner decides
    produce = producer.produce
    try:
        with _IdlePoller(producer) as poller:
            for raw in source:
                line_number += 1
                line = raw[:-1] if raw.endswith(b"\n") else raw
                if line.endswith(b"\r"):
                    line = line[:-1]
                key: bytes | None = None
                if key_separator is not None:
                    index = line.find(key_separator)
                    if index < 0:
                        excerpt = line[:_SHOWN_LINE_BYTES]
                        malformed = MalformedLine(
                            line_number, key_separator, excerpt, len(line) > len(excerpt)
                        )
                        return _Sent(sent, "malformed", malformed)
                    key, line = line[:index], line[index + len(key_separator) :]
                if bucket is not None:
                    while (wait := bucket.take()) > 0:
                        sleep(wait)
                report = deliveries.report(line_number)
                try:
                    produce(
                        topic,
                        line,
                        key,
                        partition=target,
                        headers=record_headers,
                        on_delivery=report,
                    )
                except (BufferError, KafkaException) as error:
                    retry = functools.partial(
                        produce,
                        topic,
                        line,
                        key,
                        partition=target,
                        headers=record_headers,
                        on_delivery=report,
                    )
                    _send_slowly(retry, error, line_number, deliveries, producer.poll)
                sent += 1
                if not sent % _POLL_EVERY:
                    producer.poll(0)
                    poller.activity += 1
    except KeyboardInterrupt:
        return _Sent(sent, "interrupted")
    return _Sent(sent, "eof")


def _send_slowly(
    retry: Callable[[], None],
    error: Exception,
    line_number: int,
    deliveries: _Deliveries,
    poll: Callable[[float], object],
) -> None:
    """The path for a produce() that raised: wait out a full queue, or report a refusal."""
    from confluent_kafka import KafkaError, KafkaException

    refusal = error
    while isinstance(refusal, BufferError):
        # librdkafka's queue is full until delivery reports are served: serve some.
        poll(_QUEUE_FULL_WAIT_S)
        try:
            retry()
        except (BufferError, KafkaException) as again:
            refusal = again
        else:
            return
    # Refused before it was queued (larger than message.max.bytes, ...).
    detail = refusal.args[0] if refusal.args else None
    if isinstance(detail, KafkaError):
        deliveries.fail(DeliveryFailure(line_number, detail.name(), error_text(detail)))
    else:
        deliveries.fail(DeliveryFailure(line_number, type(refusal).__name__, str(refusal)))


def _flush(producer: Producer) -> int:
    """Wait for every delivery report; a second interrupt gives up. Returns those left."""
    try:
        while (left := producer.flush(_FLUSH_SLICE_S)) > 0:
            pass
    except KeyboardInterrupt:
        return len(producer)
    return left
