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

from kshare_cli.cli import common
from kshare_cli.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from kshare_cli.services.produce import DeliveryFailure, MalformedLine, ProduceResult


#: Properties that configure the connection: they go through the settings parser
#: (Java names, JAAS, keystores) exactly as in a --command-config file.
_CONNECTION_PREFIXES = ("security.protocol", "ssl.", "sasl.", "kshare.")


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
        if key.startswith(_CONNECTION_PREFIXES):
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


def produce(
    topic: Annotated[
        str,
        typer.Option(
            "--topic", "-t", metavar="TOPIC", help="The topic to produce to (must exist)."
        ),
    ],
    key_separator: Annotated[
        str | None,
        typer.Option(
            "--key-separator",
            metavar="SEP",
            help=(
                "Split each line at the first SEP: key before, value after ('\\t' is a tab). "
                "A line without SEP stops the run. Default: no key."
            ),
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            "-H",
            metavar="KEY=VALUE",
            help="A header on every record (repeatable, in order).",
            show_default=False,
        ),
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate", metavar="RECORDS/S", help="At most this many records per second (e.g. 50)."
        ),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option(
            "--partition",
            metavar="N",
            help="Every record to this partition (default: by key, Java's murmur2; else sticky).",
        ),
    ] = None,
    command_property: Annotated[
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
    ] = None,
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
    invocation = common.Invocation(debug=debug)
    from kshare_cli.services.produce import parse_headers, parse_key_separator
    from kshare_cli.topic_names import check_topic_name

    common.usage_guard(lambda: check_topic_name(topic), invocation)
    separator = (
        common.usage_guard(lambda: parse_key_separator(key_separator), invocation)
        if key_separator is not None
        else None
    )
    headers = common.usage_guard(lambda: parse_headers(header or []), invocation)
    records_per_second = common.usage_guard(lambda: parse_rate(rate), invocation)
    common.usage_guard(lambda: check_partition(partition), invocation)
    timeout_s = common.usage_guard(lambda: common.parse_timeout(timeout), invocation)
    properties = common.usage_guard(
        lambda: parse_command_properties(command_property or []), invocation
    )

    from kshare_cli.connect.resolve import resolve_settings
    from kshare_cli.connect.secret import is_secret_name

    settings = common.usage_guard(
        lambda: resolve_settings(
            bootstrap=bootstrap_server,
            command_config=command_config,
            profile=profile,
            overrides=properties.connection,
        ),
        invocation,
    )
    property_secrets = tuple(
        value for key, value in properties.producer.items() if value and is_secret_name(key)
    )
    invocation = common.Invocation(
        debug=debug, secrets=(*common.secrets_of(settings), *property_secrets)
    )
    for warning in settings.warnings:
        common.warn(warning)
    config = common.usage_guard(settings.confluent_config, invocation)
    config.update(properties.producer)

    from kshare_cli.services.produce import produce as produce_lines

    def report(failure: DeliveryFailure) -> None:
        common.report_failure(str(failure))

    with _sigterm_interrupts():
        result = common.edge(
            lambda: produce_lines(
                settings,
                config,
                topic,
                sys.stdin.buffer,
                key_separator=separator,
                headers=headers,
                rate=records_per_second,
                partition=partition,
                timeout_s=timeout_s,
                on_failure=report,
                debug=debug,
            ),
            invocation,
        )
    if result.malformed is not None:
        common.report_failure(malformed_report(result, result.malformed))
    else:
        typer.echo(summary(result), err=True)
    code = exit_code(result)
    if code != ExitCode.OK:
        raise typer.Exit(int(code))
