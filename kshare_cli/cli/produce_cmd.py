"""``kshare produce``: lines from stdin to a topic, to feed share groups in tests and demos.

Like ``kafka-console-producer.sh``, one line is one record. Its reader's
``--reader-property parse.key=true key.separator=S`` is ``--key-separator S``
here (a tab is ``\\t``), and a line without the separator stops the run as it
stops Kafka's; its per-line ``parse.headers`` is replaced by ``--header k=v``,
the same headers on every record. ``--command-property`` is Kafka's: producer
properties (librdkafka names: acks, linger.ms, compression.type...), and the
security ones (security.protocol, ssl.*, sasl.*) read as ``--command-config``
reads them.

Unlike Kafka's tool it never creates a topic by asking for it (the topic and
``--partition`` are checked before the first line is read), keys go to the
partition Kafka's Java producer would choose (murmur2), and every record's fate
is reported: one ``kshare: error: line N: ...`` per record the cluster did not
take, then ``Produced a total of N messages`` once all deliveries are known. A
line without the key separator ends the run with one line instead, saying how
many of the records before it were produced (they were flushed and confirmed
first).

Exit codes: 0 every line delivered; 1 a record was not delivered, or a line
without the key separator came after records were sent (those were produced);
2 bad options (nothing connected) or a first line without the key separator
(nothing was produced); 3 the cluster refused the connection, the certificate or the
credentials (as soon as librdkafka says so); 4 no answer within --timeout; 5 no
such topic or partition; 130 interrupted (SIGINT or SIGTERM: what was read is
flushed and counted first).
"""

from __future__ import annotations

import math
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.cli.client_config import CONNECTION_PREFIXES, client_config
from kshare_cli.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from kshare_cli.services.produce import DeliveryFailure, MalformedLine, ProduceResult


@dataclass(frozen=True, slots=True)
class CommandProperties:
    """``--command-property`` split into connection settings and producer properties."""

    connection: dict[str, str]
    producer: dict[str, str]


def parse_command_properties(pairs: list[str]) -> CommandProperties:
    connection: dict[str, str] = {}
    producer: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        key = key.strip()
        if not equals or not key:
            raise UsageError(f"--command-property expects KEY=VALUE, got {key or pair!r}")
        if key == "bootstrap.servers":
            raise UsageError("--command-property bootstrap.servers: use --bootstrap-server")
        if key.startswith(CONNECTION_PREFIXES):
            connection[key] = value
        else:
            producer[key] = value
    return CommandProperties(connection, producer)


def parse_rate(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        rate = float(text)
    except ValueError:
        raise UsageError(f"--rate: {text!r} is not a number of records per second") from None
    if not (rate > 0 and math.isfinite(rate)):
        raise UsageError("--rate must be a positive number of records per second")
    return rate


def check_partition(partition: int | None) -> None:
    if partition is not None and partition < 0:
        raise UsageError("--partition cannot be negative")


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the run as SIGINT does: flush what was read, count it, exit 130."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (an embedding test runner): leave SIGTERM be
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def summary(result: ProduceResult) -> str:
    """The last stderr line of every run that read input, as the console consumer ends."""
    line = f"Produced a total of {result.delivered} messages"
    if result.unconfirmed:
        line += f" ({result.unconfirmed} sent but not confirmed when waiting was given up)"
    return line


def malformed_report(result: ProduceResult, malformed: MalformedLine) -> str:
    """The one line that ends a run at a line without the key separator.

    It says what happened to the lines before the refused one, because exit 2
    promises that nothing was changed: true only when the refused line was the
    first.
    """
    if result.lines == 0:
        return f"{malformed}; nothing was produced"
    records = "record" if result.lines == 1 else "records"
    if result.delivered == result.lines:
        produced = f"the {result.lines} {records} before it"
    else:
        produced = f"{result.delivered} of the {result.lines} {records} before it"
    if result.unconfirmed:
        produced += f" ({result.unconfirmed} sent but not confirmed when waiting was given up)"
    return f"{malformed}; stopped there after producing {produced}"


def exit_code(result: ProduceResult) -> ExitCode:
    if result.stopped_by == "interrupted":
        return ExitCode.INTERRUPTED
    if result.stopped_by == "malformed":
        # Exit 2 means "nothing was changed": only if the refused line was the first.
        return ExitCode.USAGE if result.lines == 0 else ExitCode.PARTIAL
    if result.failed and result.not_authorized == result.failed and not result.delivered:
        return ExitCode.NOT_AUTHORIZED  # the refusal is the answer: nothing was produced
    if result.failed or result.unconfirmed:
        return ExitCode.PARTIAL
    return ExitCode.OK


Topic = Annotated[
    str,
    typer.Option("--topic", "-t", metavar="TOPIC", help="The topic to produce to (must exist)."),
]
KeySeparator = Annotated[
    str | None,
    typer.Option(
        "--key-separator",
        metavar="SEP",
        help=(
            "Split each line at the first SEP: key before, value after ('\\t' is a tab). "
            "A line without SEP stops the run. Default: no key."
        ),
    ),
]
Headers = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        "-H",
        metavar="KEY=VALUE",
        help="A header on every record (repeatable, in order).",
        show_default=False,
    ),
]
Rate = Annotated[
    str | None,
    typer.Option(
        "--rate", metavar="RECORDS/S", help="At most this many records per second (e.g. 50)."
    ),
]
Partition = Annotated[
    int | None,
    typer.Option(
        "--partition",
        metavar="N",
        help="Every record to this partition (default: by key, Java's murmur2; else sticky).",
    ),
]
CommandProperty = Annotated[
    list[str] | None,
    typer.Option(
        "--command-property",
        metavar="KEY=VALUE",
        help=(
            "Producer property, librdkafka's names (acks, linger.ms, compression.type, "
            "allow.auto.create.topics...); security.protocol/ssl.*/sasl.* as in "
            "--command-config. Repeatable; wins over --command-config."
        ),
        show_default=False,
    ),
]


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    """The options, checked before anything connects."""

    topic: str
    key_separator: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    rate: float | None
    partition: int | None
    timeout_s: float
    properties: CommandProperties


def parse_request(
    topic: str,
    key_separator: str | None,
    headers: list[str],
    rate: str | None,
    partition: int | None,
    timeout: str,
    command_properties: list[str],
) -> ProduceRequest:
    """The request, or the UsageError of the first option at fault, in that order."""
    from kshare_cli.services.produce import parse_headers, parse_key_separator
    from kshare_cli.topic_names import check_topic_name

    check_topic_name(topic)
    separator = parse_key_separator(key_separator) if key_separator is not None else None
    parsed_headers = parse_headers(headers)
    records_per_second = parse_rate(rate)
    check_partition(partition)
    timeout_s = common.parse_timeout(timeout)
    properties = parse_command_properties(command_properties)
    return ProduceRequest(
        topic, separator, parsed_headers, records_per_second, partition, timeout_s, properties
    )


@common.command_edge
def produce(
    topic: Topic,
    key_separator: KeySeparator = None,
    header: Headers = None,
    rate: Rate = None,
    partition: Partition = None,
    command_property: CommandProperty = None,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Produce lines from stdin to a topic, one record per line.

    For feeding share groups in tests and demos: `seq 100 | kshare produce -t jobs`.
    --timeout bounds the metadata check and each record's delivery.
    Ends with `Produced a total of N messages` on stderr; a line without the
    --key-separator stops the run with one line saying how many were produced.
    """
    request = parse_request(
        topic, key_separator, header or [], rate, partition, timeout, command_property or []
    )
    settings, config = client_config(
        bootstrap_server,
        command_config,
        profile,
        connection=request.properties.connection,
        client=request.properties.producer,
    )
    from kshare_cli.services.produce import produce as produce_lines

    with _sigterm_interrupts():
        result = produce_lines(
            settings,
            config,
            request.topic,
            sys.stdin.buffer,
            key_separator=request.key_separator,
            headers=request.headers,
            rate=request.rate,
            partition=request.partition,
            timeout_s=request.timeout_s,
            on_failure=_report_failure,
            debug=debug,
        )
    _report(result)


def _report_failure(failure: DeliveryFailure) -> None:
    common.report_failure(str(failure))


def _report(result: ProduceResult) -> None:
    """The run's last stderr line, then its exit code."""
    if result.malformed is not None:
        common.report_failure(malformed_report(result, result.malformed))
    else:
        diagnostics.progress(f"{summary(result)}\n")
    code = exit_code(result)
    if code != ExitCode.OK:
        raise typer.Exit(int(code))
