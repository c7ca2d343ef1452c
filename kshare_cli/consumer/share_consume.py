"""The console share consumer: poll, print, then acknowledge, and lose nothing when stopped.

confluent-kafka's ShareConsumer runs in explicit acknowledgement mode (Kafka's
console share consumer sets the same), so a record is acknowledged only by us,
only after its line was printed:

1. poll a batch (``max.poll.records``: 2,000 when streaming, at most 500 with
   ``--max-messages``; fewer when
   ``--max-messages`` needs fewer, one at a time with ``--interactive``, so no
   record waits under its acquisition lock while a person decides another);
2. format the records and write their lines to the sink in one write, flush;
3. acknowledge each printed record with the chosen type, and release every
   record that was polled but not printed (the surplus beyond
   ``--max-messages``, the rest of a batch after a stop or a failure);
4. the acknowledgements ride on the next poll's ShareFetch. Committing each
   batch separately (``commit_sync``) halved the rate on the sandbox and
   ``commit_async`` gained nothing over the piggy-back, so the only explicit
   commit is the one when the run stops, before ``close()`` leaves the group.

If the process dies between 3 and 4 the acknowledgements never leave it: the
records return when their locks expire and are printed again. At-least-once
printing, never an acceptance without a print.

"Printed" means the bytes reached whoever reads them; for a pipe that is the
reading process, not the kernel's buffer (see :mod:`kshare_cli.consumer.output`).

Joining: a new member's first ShareGroupHeartbeat is answered with an empty
assignment while the broker initialises the share-partitions; the assignment
comes with the second. librdkafka (2.16) sends that one only after
``share.heartbeat.interval.ms`` (5 s), Kafka's Java consumer at once (see
docs/first-record.md). Until the first assignment arrives the engine subscribes
again to the same topics every :data:`_RESUBSCRIBE_S`: librdkafka answers every
``subscribe()`` with an expedited heartbeat, so the assignment comes a round trip
after the broker has it. It learns of the assignment from librdkafka's
statistics (``cgrp.assignment_size``) or from the first record, and tells
``on_joining`` (False) then, so a terminal can show the wait meanwhile.

Stops (SIGINT, SIGTERM through ``stop``; a closed output; ``--max-messages``;
``--timeout-ms`` idle; a record that cannot be read; ``q`` at the interactive
prompt) all end the same way: what was printed is acknowledged, the rest
released, acknowledgements committed, the group left. ``processed`` counts what
Kafka's tool counts for ``Processed a total of N messages``: records handed to
the output (plus records rejected by ``--reject-on-error``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, Final, Literal

from kshare_cli.consumer.deserializers import DeserializationError
from kshare_cli.consumer.output import RecordSink
from kshare_cli.consumer.preflight import check_cluster
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.dataplane.clients import new_share_consumer
from kshare_cli.dataplane.errors import (
    ErrorKind,
    classify,
    error_text,
    is_authentication_error,
    is_authorization_error,
    not_authorized,
    raise_for_client_error,
    refused_by_broker,
)
from kshare_cli.dataplane.logs import quiet_logger
from kshare_cli.errors import ConnectionFailed, KshareError, NotAuthorized, Refused, UsageError

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message, ShareConsumer, TopicPartition

    from kshare_cli.consumer.record_formatters import Formatter
    from kshare_cli.wire.diagnose import Diagnose

__all__ = [
    "DEFAULT_GROUP",
    "AckMode",
    "AcknowledgementFailure",
    "ConsumeOptions",
    "ConsumeResult",
    "Decide",
    "DeliveryLimit",
    "OutputFailed",
    "RecordUnreadable",
    "StopReason",
    "consumer_config",
    "consume",
]

#: Kafka's console share consumer's default share group.
DEFAULT_GROUP: Final = "console-share-consumer"
#: librdkafka's default ``max.poll.records``: the cap when ``--max-messages`` is given.
_BATCH: Final = 500
#: ``max.poll.records`` when streaming: the next ShareFetch leaves only at the next poll,
#: so the per-batch Python work comes straight off the rate; 2,000 took the sandbox
#: from 0.66-0.82x to 1.29x a bare loop at librdkafka's 500 (benchmarks/consume_throughput.py).
_STREAM_BATCH: Final = 2000
#: Longest single poll: how soon SIGINT, SIGTERM or a closed pipe is noticed while idle.
_POLL_S: Final = 0.1
#: While no assignment has arrived: how often to subscribe again, each time one expedited
#: ShareGroupHeartbeat (the broker's first answer is empty; see the module docstring).
_RESUBSCRIBE_S: Final = 0.2
#: ... and for how long at most: past two default heartbeat intervals librdkafka's own
#: cadence is left alone (a broker that takes that long to assign is not helped by more).
_RESUBSCRIBE_FOR_S: Final = 10.0
#: ``statistics.interval.ms``: how soon the assignment is known when no record shows it.
_STATISTICS_MS: Final = 200

StopReason = Literal["max-messages", "idle", "interrupted", "output-closed", "quit", "error"]


class AckMode(enum.StrEnum):
    """How each printed record is acknowledged (``--ack``; ``--release``/``--reject``)."""

    accept = "accept"
    release = "release"
    reject = "reject"


@dataclass(frozen=True, slots=True)
class DeliveryLimit:
    """How many deliveries a record gets before the broker archives it, and whence we know.

    What ``--interactive`` shows beside each record's delivery count. The limit is
    the control plane's answer (``services.delivery_limits.stated_delivery_count_limit``);
    ``assumed`` when the cluster would not say and Kafka's default stands in.
    """

    limit: int
    source: str
    assumed: bool = False


#: The interactive prompt: (record, its printed line, the delivery limit) -> a type, or
#: None to stop (``q``, end of input, or a stop asked for while waiting).
Decide = Callable[[ConsumedRecord, bytes, DeliveryLimit], AckMode | None]


@dataclass(frozen=True, slots=True)
class ConsumeOptions:
    """What to consume and how to acknowledge it; validated by the command."""

    topics: tuple[str, ...]
    group_id: str = DEFAULT_GROUP
    ack: AckMode = AckMode.accept
    reject_on_error: bool = False
    max_messages: int | None = None
    idle_timeout_ms: int | None = None
    interactive: bool = False
    #: Bounds the cluster check before joining and the last commit before leaving.
    timeout_s: float = 30.0


@dataclass(frozen=True, slots=True)
class AcknowledgementFailure:
    """Acknowledgements that failed, and whether the records will come back.

    ``refused``: the broker answered with an error (an expired acquisition lock's
    INVALID_RECORD_STATE...), so it did not apply them and the records are
    delivered again (or archived, if that delivery was their last). Otherwise
    the answer never came (a lost connection, a timeout): the broker may have
    applied them -- a drain after such a failure on a real cluster found the
    records accepted -- so nothing is claimed either way.
    """

    topic: str
    partition: int
    records: int | None  # None: the commit said the partition failed, not how many records
    error: str
    refused: bool = False

    def __str__(self) -> str:
        if self.records is None:
            what = "records"
        else:
            what = f"{self.records} record{'s' if self.records != 1 else ''}"
        if self.refused:
            outcome = (
                "the broker did not apply them; they will be delivered again "
                "unless that was their last delivery"
            )
        else:
            outcome = "unknown whether applied; they may or may not be delivered again"
        where = f"{self.topic}-{self.partition}"
        return f"acknowledging {what} of {where} failed ({self.error}): {outcome}"


class RecordUnreadable(KshareError):
    """A record that could not be deserialized stopped the run (no --reject-on-error)."""


class OutputFailed(KshareError):
    """The output could not be written (not a closed pipe: a full disk, an I/O error)."""


@dataclass(frozen=True, slots=True)
class ConsumeResult:
    """What a run did; ``returned`` records were polled but not printed, and released."""

    processed: int
    accepted: int
    released: int
    rejected: int
    returned: int
    stopped_by: StopReason
    error: KshareError | None = None
    acknowledgement_failures: tuple[AcknowledgementFailure, ...] = ()
    #: The limit shown at the prompt (``--interactive`` only).
    delivery_limit: DeliveryLimit | None = None


def consumer_config(config: Mapping[str, object], options: ConsumeOptions) -> dict[str, object]:
    """The ShareConsumer's configuration: the caller's, plus what this engine depends on."""
    effective: dict[str, object] = dict(config)
    effective["group.id"] = options.group_id
    effective["share.acknowledgement.mode"] = "explicit"
    if "max.poll.records" not in effective:
        if options.interactive:
            effective["max.poll.records"] = 1
        elif options.max_messages is not None:
            effective["max.poll.records"] = max(1, min(options.max_messages, _BATCH))
        else:
            effective["max.poll.records"] = _STREAM_BATCH
    effective.setdefault("logger", quiet_logger())
    effective.setdefault("statistics.interval.ms", _STATISTICS_MS)
    return effective


def consume(
    config: Mapping[str, object],
    options: ConsumeOptions,
    formatter: Formatter,
    sink: BinaryIO,
    *,
    stop: threading.Event | None = None,
    decide: Decide | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_rejected: Callable[[str], None] | None = None,
    check: bool = True,
    diagnose: Diagnose | None = None,
    delivery_limit: Callable[[], DeliveryLimit] | None = None,
    on_joining: Callable[[bool], None] | None = None,
) -> ConsumeResult:
    """Consume ``options.topics`` into ``sink`` until a stop; see the module docstring.

    ``config`` is confluent-kafka configuration (connection settings and the
    caller's consumer properties). Raises UsageError for properties librdkafka
    refuses and, with ``check``, the preflight's errors (cluster unreachable,
    credentials refused, topic missing) -- all before joining the group. Once
    joined nothing raises but a second interrupt (KeyboardInterrupt): failures
    come back in the result, after the group was left. ``diagnose`` words a TLS or
    SASL failure as the control plane does (``wire.diagnose``). ``delivery_limit``
    (required with ``options.interactive``) is asked once, after the check and
    before joining, for the limit the prompt shows. ``on_joining`` is told True as
    the group is joined and False once, when the first assignment arrived (or the
    run ended before it did).
    """
    if options.interactive and decide is None:
        raise UsageError("interactive consumption needs a prompt")
    if options.interactive and delivery_limit is None:
        raise UsageError("interactive consumption needs the delivery limit")
    stop = stop if stop is not None else threading.Event()
    settings = consumer_config(config, options)
    client_errors = _ClientErrors()
    settings["error_cb"] = client_errors
    joining = _Joining(options.topics, on_joining or _ignore_joining, settings.get("stats_cb"))
    settings["stats_cb"] = joining.statistics

    def preflight() -> None:
        check_cluster(settings, options.topics, timeout_s=options.timeout_s, diagnose=diagnose)

    if check and "oauth_cb" in settings:
        consumer = _built_during(settings, preflight, on_warning or _ignore)
    else:
        consumer = new_share_consumer(settings)
    try:
        if check and "oauth_cb" not in settings:
            preflight()
        limit = delivery_limit() if options.interactive and delivery_limit is not None else None
        run = _Run(
            consumer=consumer,
            options=options,
            formatter=formatter,
            sink=RecordSink(sink),
            stop=stop,
            client_errors=client_errors,
            decide=decide,
            delivery_limit=limit,
            on_warning=on_warning or _ignore,
            on_rejected=on_rejected or _ignore,
            bootstrap=str(settings.get("bootstrap.servers", "")),
            diagnose=diagnose,
            joining=joining,
        )
        consumer.set_acknowledgement_commit_callback(run.committed)
        joining.start(consumer)
        return run.loop()
    finally:
        joining.done()
        _close(consumer, on_warning or _ignore)


def _ignore(_message: str) -> None:
    pass


def _ignore_joining(_joining: bool) -> None:
    pass


class _Joining:
    """Gets the first assignment a heartbeat round trip after the broker has it.

    librdkafka (2.16) takes the broker's first, empty assignment as no change and
    sends its next ShareGroupHeartbeat a whole ``share.heartbeat.interval.ms``
    later (``rd_kafka_cgrp_handle_ShareGroupHeartbeat`` in ``rdkafka_cgrp.c``);
    Kafka's Java consumer acknowledges it at once and so gets the assignment with
    its second heartbeat, ~30 ms in. ``subscribe()`` with the same topics makes
    librdkafka expedite a heartbeat (``rd_kafka_cgrp_consumer_apply_next_subscribe``)
    and changes nothing else, so it is repeated, paced, until the assignment
    arrives: docs/first-record.md.
    """

    def __init__(
        self,
        topics: Sequence[str],
        report: Callable[[bool], None],
        chained: object = None,
    ) -> None:
        self.topics = list(topics)
        self.report = report
        self.chained = chained if callable(chained) else None
        self.consumer: ShareConsumer | None = None
        self.assigned = False
        self.started = 0.0
        self.subscribed = 0.0

    def start(self, consumer: ShareConsumer) -> None:
        self.report(True)
        self.consumer = consumer
        self.started = self.subscribed = time.monotonic()
        consumer.subscribe(self.topics)

    def statistics(self, document: str) -> None:
        """librdkafka's ``stats_cb``, served during poll on the polling thread."""
        if self.chained is not None:
            self.chained(document)
        if self.assigned:
            return
        try:
            group = json.loads(document).get("cgrp") or {}
        except ValueError:
            return
        if group.get("assignment_size", 0) > 0:
            self.done()

    def waiting(self) -> None:
        """A poll returned nothing: while unassigned, ask for the next heartbeat now."""
        if self.assigned or self.consumer is None:
            return
        now = time.monotonic()
        if now - self.subscribed < _RESUBSCRIBE_S or now - self.started > _RESUBSCRIBE_FOR_S:
            return
        self.subscribed = now
        from confluent_kafka import KafkaException

        try:
            self.consumer.subscribe(self.topics)
        except KafkaException:
            # A fatal error or a closing consumer: the next poll says which; stop asking.
            self.started = -_RESUBSCRIBE_FOR_S

    def done(self) -> None:
        """The first assignment arrived (statistics, or a record), or the run ends."""
        if not self.assigned and self.consumer is not None:
            self.assigned = True
            self.report(False)


def _built_during(
    settings: Mapping[str, object], preflight: Callable[[], None], on_warning: Callable[[str], None]
) -> ShareConsumer:
    """The share consumer, built on a thread of its own while ``preflight`` runs.

    confluent-kafka (2.16) builds a client that has an ``oauth_cb`` by waiting for
    its first token in whole seconds: ``wait_for_oauth_token_set`` checks, then
    ``sleep(1)`` with the GIL released, and the callback (Python) cannot have run
    before that first check. So every such client costs a second: the consumer and
    the preflight's AdminClient, built one after the other, made a static
    OAUTHBEARER token's ``kshare consume`` start 2 s later than PLAIN's or SCRAM's.
    Built side by side, their waits overlap. The preflight's error wins over the
    consumer's, as when they ran in turn; a consumer built for nothing is closed.
    """
    built: list[ShareConsumer] = []
    failed: list[BaseException] = []

    def build() -> None:
        try:
            built.append(new_share_consumer(dict(settings)))
        except BaseException as error:  # noqa: BLE001 -- handed to the caller's thread
            failed.append(error)

    builder = threading.Thread(target=build, name="kshare-share-consumer", daemon=True)
    builder.start()
    try:
        preflight()
    except BaseException:
        builder.join()
        for consumer in built:
            _close(consumer, on_warning)
        raise
    builder.join()
    if failed:
        raise failed[0]
    return built[0]


def _close(consumer: ShareConsumer, on_warning: Callable[[str], None]) -> None:
    from confluent_kafka import KafkaException

    try:
        consumer.close()
    except KafkaException as error:
        on_warning(f"leaving the share group: {error_text(error)}")


class _ClientErrors:
    """librdkafka's client-level errors (``error_cb``), served during poll on this thread."""

    def __init__(self) -> None:
        self.pending: list[KafkaError] = []

    def __call__(self, error: KafkaError) -> None:
        self.pending.append(error)

    def take(self) -> list[KafkaError]:
        taken, self.pending = self.pending, []
        return taken


@dataclass(slots=True)
class _Run:
    """One run: the consumer, the counters, and the acknowledgements that failed."""

    consumer: ShareConsumer
    options: ConsumeOptions
    formatter: Formatter
    sink: RecordSink
    stop: threading.Event
    client_errors: _ClientErrors
    decide: Decide | None
    delivery_limit: DeliveryLimit | None
    on_warning: Callable[[str], None]
    on_rejected: Callable[[str], None]
    bootstrap: str
    diagnose: Diagnose | None = None
    joining: _Joining | None = None
    processed: int = 0
    accepted: int = 0
    released: int = 0
    rejected: int = 0
    returned: int = 0
    failures: list[AcknowledgementFailure] = field(default_factory=list)
    brokers_down: bool = False
    value_lines: tuple[bytes, bytes] | None = None

    def __post_init__(self) -> None:
        self.value_lines = value_only_lines(self.formatter)

    # -- the loop ----------------------------------------------------------------------

    def loop(self) -> ConsumeResult:
        from confluent_kafka import KafkaException

        idle_ms = self.options.idle_timeout_ms
        idle_limit = idle_ms / 1000 if idle_ms is not None else None
        waiting_since = time.monotonic()
        while True:
            if self.stop.is_set():
                return self.finish("interrupted")
            if self.sink.reader_gone():
                return self.finish("output-closed")
            timeout = _POLL_S
            if idle_limit is not None:
                timeout = min(timeout, max(0.0, waiting_since + idle_limit - time.monotonic()))
            try:
                messages = self.consumer.poll(timeout)
            except KafkaException as failure:
                if is_authorization_error(failure):  # no READ on the group or a topic
                    return self.finish("error", not_authorized(failure, self.bootstrap))
                return self.finish(
                    "error", ConnectionFailed(f"{self.bootstrap}: {error_text(failure)}")
                )
            records = [message for message in messages if message.error() is None]
            if len(records) != len(messages):
                for message in messages:
                    message_error = message.error()
                    if message_error is not None:
                        self.client_errors(message_error)
            problem = self.client_problem()
            if problem is not None:
                self.release(records)
                return self.finish("error", problem)
            if not records:
                # Kafka's ConsumerWrapper.receive(): the wait for the next record, the
                # join included, is what --timeout-ms bounds.
                if idle_limit is not None and time.monotonic() - waiting_since >= idle_limit:
                    return self.finish("idle")
                if self.joining is not None:
                    self.joining.waiting()
                continue
            if self.joining is not None:
                self.joining.done()
            self.brokers_down = False
            outcome = self.handle(records)
            if outcome is not None:
                reason, error = outcome
                return self.finish(reason, error)
            waiting_since = time.monotonic()

    def explain(self, librdkafka_error: str) -> KshareError | None:
        """The control plane's words for a TLS or SASL failure (``wire.diagnose``)."""
        from kshare_cli.wire.diagnose import CHECK_TIMEOUT_S

        if self.diagnose is None:
            return None
        return self.diagnose(librdkafka_error, CHECK_TIMEOUT_S)

    def client_problem(self) -> KshareError | None:
        """A client error that ends the run (credentials refused, a fatal error); None else."""
        for error in self.client_errors.take():
            try:
                # Mid-run only a TLS or SASL refusal is worth a check: brokers that are
                # down come back, and are waited for below.
                authentication = is_authentication_error(error)
                raise_for_client_error(
                    error, self.bootstrap, self.explain if authentication else None
                )
            except (NotAuthorized, Refused) as refusal:
                return refusal
            except ConnectionFailed as failure:
                if classify(error) is not ErrorKind.ALL_BROKERS_DOWN:
                    return failure
                # Brokers restart; librdkafka reconnects. Say so once, keep waiting.
                if not self.brokers_down:
                    self.brokers_down = True
                    self.on_warning(f"{failure}; retrying")
        return None

    # -- a batch -----------------------------------------------------------------------

    def handle(self, records: Sequence[Message]) -> tuple[StopReason, KshareError | None] | None:
        """Print, then acknowledge, one poll's records; a stop reason when the run must end."""
        quota = len(records)
        if self.options.max_messages is not None:
            quota = min(quota, self.options.max_messages - self.processed)
        taken, surplus = records[:quota], records[quota:]
        if self.options.interactive:
            outcome = self.handle_interactively(taken)
        else:
            outcome = self.handle_batch(taken)
        self.release(surplus)
        if outcome is None and self.options.max_messages is not None:
            if self.processed >= self.options.max_messages:
                return "max-messages", None
        return outcome

    def handle_batch(
        self, records: Sequence[Message]
    ) -> tuple[StopReason, KshareError | None] | None:
        failure: KshareError | None = None
        unread: Sequence[Message] = ()
        formatted: Sequence[Message] = records
        lines = self.format_all(records)
        if lines is None:  # a record could not be read: one by one, to know which
            lines, kept = [], []
            for index, message in enumerate(records):
                line = self.format(message, ConsumedRecord.from_message(message))
                if isinstance(line, KshareError):
                    failure, unread = line, records[index:]
                    break
                if line is not None:
                    lines.append(line)
                    kept.append(message)
            formatted = kept
        if self.stop.is_set():
            self.release(formatted)
            self.release(unread)
            return "interrupted", None
        printed, outcome = self.write(lines, formatted)
        self.acknowledge(printed, self.options.ack)
        self.release(formatted[len(printed) :])
        self.release(unread)
        if outcome is not None:
            return outcome
        if failure is not None:
            return "error", failure
        if self.stop.is_set():
            return "interrupted", None
        return None

    def handle_interactively(
        self, records: Sequence[Message]
    ) -> tuple[StopReason, KshareError | None] | None:
        assert self.decide is not None and self.delivery_limit is not None
        for index, message in enumerate(records):
            rest = records[index + 1 :]
            if self.stop.is_set():
                self.release(records[index:])
                return "interrupted", None
            record = ConsumedRecord.from_message(message)
            line = self.format(message, record)
            if isinstance(line, KshareError):
                self.release(records[index:])
                return "error", line
            if line is None:  # rejected by --reject-on-error
                continue
            printed, outcome = self.write([line], [message])
            if not printed:
                self.release(records[index:])
                return outcome
            choice = self.decide(record, line, self.delivery_limit)
            if choice is None:
                self.release(records[index:])
                return ("interrupted" if self.stop.is_set() else "quit"), None
            self.acknowledge(printed, choice)
            self.commit()  # a person waits for each answer: settle it now
            if outcome is not None:
                self.release(rest)
                return outcome
        return None

    def format_all(self, records: Sequence[Message]) -> list[bytes] | None:
        """Every record's line, or None if one cannot be read (then :meth:`format` them).

        This runs once per record at librdkafka's rate, so it is kept to comprehensions;
        for a formatter that writes the value alone (Kafka's default layout, ``raw``)
        no record object is built at all.
        """
        if self.value_lines is not None:
            null_line, separator = self.value_lines
            values = [message.value() for message in records]
            return [null_line if value is None else value + separator for value in values]
        format_record, from_message = self.formatter.format, ConsumedRecord.from_message
        try:
            return [format_record(from_message(message)) for message in records]
        except (DeserializationError, KshareError):
            return None

    def format(self, message: Message, record: ConsumedRecord) -> bytes | KshareError | None:
        """The record's line; None when --reject-on-error rejected it; an error to stop on."""
        try:
            return self.formatter.format(record)
        except DeserializationError as error:
            if not self.options.reject_on_error:
                return RecordUnreadable(
                    f"{error}; the record was released (--reject-on-error rejects such records)"
                )
            self.reject_unreadable(message, str(error))
            return None
        except KshareError as error:
            # Not the record's fault (a schema registry down...): rejecting would lose it.
            return error

    def reject_unreadable(self, message: Message, reason: str) -> None:
        from confluent_kafka import AcknowledgeType

        self.consumer.acknowledge(message, AcknowledgeType.REJECT)
        self.rejected += 1
        self.processed += 1
        self.on_rejected(f"rejected: {reason}")

    def write(
        self, lines: Sequence[bytes], messages: Sequence[Message]
    ) -> tuple[Sequence[Message], tuple[StopReason, KshareError | None] | None]:
        """Write the lines; the messages whose lines were printed, and why to stop if so."""
        if not lines:
            return (), None
        try:
            delivered = self.sink.write_lines(lines, self.stop)
        except OSError as error:
            return (), ("error", OutputFailed(f"cannot write the output: {error}"))
        printed = messages[: delivered.printed]
        self.processed += len(printed)
        if delivered.closed:
            return printed, ("output-closed", None)
        return printed, None

    # -- acknowledgements --------------------------------------------------------------

    def acknowledge(self, messages: Sequence[Message], mode: AckMode) -> None:
        from confluent_kafka import AcknowledgeType

        kind = {
            AckMode.accept: AcknowledgeType.ACCEPT,
            AckMode.release: AcknowledgeType.RELEASE,
            AckMode.reject: AcknowledgeType.REJECT,
        }[mode]
        acknowledge = self.consumer.acknowledge
        for message in messages:
            acknowledge(message, kind)
        if mode is AckMode.accept:
            self.accepted += len(messages)
        elif mode is AckMode.release:
            self.released += len(messages)
        else:
            self.rejected += len(messages)

    def release(self, messages: Sequence[Message]) -> None:
        """Give back records that were polled but not printed: they are delivered again."""
        from confluent_kafka import AcknowledgeType

        for message in messages:
            self.consumer.acknowledge(message, AcknowledgeType.RELEASE)
        self.returned += len(messages)

    def committed(self, offsets: Mapping[TopicPartition, set[int]], error: object) -> None:
        """The acknowledgement-commit callback: keep what failed, refused or unanswered."""
        for partition, acknowledged in offsets.items():
            problem = error if error is not None else getattr(partition, "error", None)
            if problem is None:
                continue
            self.failures.append(
                AcknowledgementFailure(
                    partition.topic,
                    partition.partition,
                    len(acknowledged),
                    error_text(problem),
                    refused=refused_by_broker(problem),
                )
            )

    def commit(self) -> None:
        from confluent_kafka import KafkaException

        try:
            results = self.consumer.commit_sync(self.options.timeout_s)
        except KafkaException as error:
            self.on_warning(f"committing acknowledgements: {error_text(error)}")
            return
        for partition, refused in results.items():
            if refused is not None and not any(
                failure.topic == partition.topic and failure.partition == partition.partition
                for failure in self.failures
            ):
                self.failures.append(
                    AcknowledgementFailure(
                        partition.topic,
                        partition.partition,
                        None,
                        error_text(refused),
                        refused=refused_by_broker(refused),
                    )
                )

    def finish(self, reason: StopReason, error: KshareError | None = None) -> ConsumeResult:
        """Every polled record is acknowledged by now: commit, and say what happened."""
        self.commit()
        return ConsumeResult(
            processed=self.processed,
            accepted=self.accepted,
            released=self.released,
            rejected=self.rejected,
            returned=self.returned,
            stopped_by=reason,
            error=error,
            acknowledgement_failures=tuple(self.failures),
            delivery_limit=self.delivery_limit,
        )


def value_only_lines(formatter: Formatter) -> tuple[bytes, bytes] | None:
    """(line for a null value, separator) when ``formatter`` writes the value and nothing else.

    Kafka's default layout and ``raw`` need no record object: the engine then writes
    the values straight from librdkafka's messages. What each writes is asked of the
    formatter itself (a null value, an empty one, a non-empty one), so the shortcut
    prints exactly what :meth:`Formatter.format` would.
    """
    from kshare_cli.consumer.record_formatters import RawFormatter, RawValueLines

    if not isinstance(formatter, RawValueLines | RawFormatter):
        return None
    probe = ConsumedRecord(
        topic="-",
        partition=0,
        offset=0,
        delivery_count=1,
        timestamp_type=0,
        timestamp=-1,
        key=b"key",
        value=None,
        headers=(("header", b"value"),),
    )
    null_line = formatter.format(probe)
    separator = formatter.format(dataclasses.replace(probe, value=b""))
    if formatter.format(dataclasses.replace(probe, value=b"value")) != b"value" + separator:
        return None
    return null_line, separator
