"""``kshare consume``: Kafka's console share consumer, with acknowledgements you can trust.

Options are Kafka 4.2's ``kafka-console-share-consumer.sh`` options (``--topic``,
``--group``, ``--formatter-property``/``--property``, ``--release``,
``--reject``, ``--reject-message-on-error``, ``--max-messages``, ``--timeout-ms``,
``--command-property``/``--consumer-property``,
``--command-config``/``--consumer-config``, ``--key-deserializer``,
``--value-deserializer``, ``--formatter-config``) and the same output for the
same records; kshare adds ``--ack``, ``-o/--output jsonl|raw`` (``--format``
before), deserializers by
name (Avro, JSON Schema and Protobuf through ``--schema-registry``) and
``--interactive``.

Where it parts from Kafka's tool, on purpose:

- A record is acknowledged only after its line was printed -- for a pipe, once
  the reading process took it (``kshare consume | head`` releases what ``head``
  never read). On SIGINT, SIGTERM or a closed output the rest of the batch is
  released, the acknowledgements committed, the group left, and
  ``Processed a total of N messages`` printed, as Kafka prints it.
- The cluster and the topics are checked before joining: an unknown topic is
  exit 5 instead of a consumer waiting forever in a new group.
- ``--command-property auto.offset.reset`` (which Kafka's tool ignores and
  librdkafka refuses) is exit 2 with the ``kshare config set GROUP
  share.auto.offset.reset=...`` that does what was meant.
- A record that cannot be deserialized (without ``--reject-on-error``) stops
  the run with one error line and exit 1, released, not left to its lock.
- ``--timeout-ms`` reached is a normal end (exit 0, no error; Kafka logs an
  ERROR with a stack trace and exits 0 too). As in Kafka, the wait for the first
  record includes joining the group.

Exit codes: 0 stopped by --max-messages, --timeout-ms, a closed output or ``q``;
1 a record could not be read, the output failed or the broker refused
acknowledgements (those records come back); 6 reading the group or the topic
is not authorized; 2 bad options (nothing connected); 3 the cluster cannot be reached
or refused the credentials (or the schema registry failed); 4 no answer within
--timeout; 5 no such topic; 130 SIGINT or SIGTERM (as ``kshare produce``), or a
second one, which stops at once. Failures before the group was joined print one
error line and no ``Processed`` line.
"""

from __future__ import annotations

import enum
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common, durations
from kshare_cli.cli.client_config import CONNECTION_PREFIXES, client_config
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings
    from kshare_cli.services.consume import (
        AckMode,
        ConsumedRecord,
        ConsumeResult,
        Decide,
        DeliveryLimit,
        Formatter,
    )

DEFAULT_GROUP: Final = "console-share-consumer"
#: Formatter properties that configure the schema registry, as Confluent's console
#: consumers take them (``--property schema.registry.url=...``).
_REGISTRY_PREFIXES: Final = ("schema.registry.", "basic.auth.")


class Ack(enum.StrEnum):
    """``--ack``: what happens to each printed record."""

    accept = "accept"
    release = "release"
    reject = "reject"


class RecordFormat(enum.StrEnum):
    """``-o/--output``: Kafka's text layout, JSON lines, or the raw value bytes."""

    text = "text"
    jsonl = "jsonl"
    raw = "raw"


# --------------------------------------------------------------------------- validation


def parse_pairs(pairs: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments in order, the last of a key winning; the value may be empty."""
    parsed: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise UsageError(f"{option} expects KEY=VALUE, got {pair!r}")
        parsed[key.strip()] = value
    return parsed


@dataclass(frozen=True, slots=True)
class ConsumerProperties:
    """``--command-property`` split into connection settings and consumer properties."""

    connection: dict[str, str]
    consumer: dict[str, str]


def split_consumer_properties(properties: Mapping[str, str]) -> ConsumerProperties:
    connection: dict[str, str] = {}
    consumer: dict[str, str] = {}
    for key, value in properties.items():
        if key == "bootstrap.servers":
            raise UsageError("--command-property bootstrap.servers: use --bootstrap-server")
        if key == "share.acknowledgement.mode":
            raise UsageError(
                "--command-property share.acknowledgement.mode: kshare acknowledges each "
                "record explicitly, after printing it (use --ack or --interactive)"
            )
        if key.startswith(CONNECTION_PREFIXES):
            connection[key] = value
        else:
            consumer[key] = value
    return ConsumerProperties(connection, consumer)


#: librdkafka's spellings of auto.offset.reset values, as share.auto.offset.reset takes them.
_RESET_VALUES: Final = {
    "earliest": "earliest",
    "smallest": "earliest",
    "beginning": "earliest",
    "latest": "latest",
    "largest": "latest",
    "end": "latest",
}


def refuse_offset_reset(consumer: Mapping[str, str], group_id: str) -> None:
    """``auto.offset.reset`` means nothing to a share consumer: point to the group config.

    librdkafka refuses the property with "not applicable for share consumer", which
    leaves a new user with no way forward; where a share group starts reading is
    the group's ``share.auto.offset.reset``, set with ``kshare config set``.
    """
    for name in ("auto.offset.reset", "share.auto.offset.reset"):
        if name not in consumer:
            continue
        given = consumer[name].strip().lower()
        value = _RESET_VALUES.get(given, given if given.startswith("by_duration:") else "earliest")
        command = (
            f"kshare config set {shlex.quote(group_id)} "
            f"{shlex.quote(f'share.auto.offset.reset={value}')}"
        )
        what = (
            "share consumers have no auto.offset.reset"
            if name == "auto.offset.reset"
            else "that is a group config, not a consumer property"
        )
        raise UsageError(
            f"--command-property {name}: {what}; where share group {group_id!r} starts "
            f"reading is its group config share.auto.offset.reset: {command}"
        )


def choose_group(group: str | None, *others: tuple[str, str | None]) -> str:
    """Kafka's rule: the group may be given in several places, but they must agree."""
    given: dict[str, str] = {}
    if group is not None:
        given["--group"] = group
    for where, value in others:
        if value is not None:
            given[where] = value
    distinct = sorted(set(given.values()))
    if len(distinct) > 1:
        shown = ", ".join(f"'{value}'" for value in distinct)
        raise UsageError(
            "the group ids given in different places (--group, --command-property group.id, "
            f"--command-config) do not match: {shown}"
        )
    chosen = distinct[0] if distinct else DEFAULT_GROUP
    if not chosen.strip():
        raise UsageError("--group cannot be empty")
    return chosen


def choose_ack(ack: Ack | None, release: bool, reject: bool) -> Ack:
    if release and reject:
        raise UsageError("at most one of --reject and --release may be specified")
    shortcut = Ack.release if release else Ack.reject if reject else None
    if ack is not None and shortcut is not None and ack is not shortcut:
        flag = "--release" if release else "--reject"
        raise UsageError(f"--ack {ack.value} contradicts {flag}")
    return ack or shortcut or Ack.accept


def check_counts(max_messages: int | None, timeout_ms: int | None) -> None:
    if max_messages is not None and max_messages < 1:
        raise UsageError("--max-messages must be at least 1")
    if timeout_ms is not None and timeout_ms < 0:
        raise UsageError("--timeout-ms cannot be negative")


def check_topics(topics: list[str]) -> tuple[str, ...]:
    if not topics:
        raise UsageError("name the topic to consume with --topic")
    for topic in topics:
        check_topic_name(topic)
    if len(set(topics)) != len(topics):
        raise UsageError("a topic is named twice with --topic")
    return tuple(topics)


def terminal_for_prompt() -> None:
    """``--interactive`` asks on the terminal: stdin and stderr must be one."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError("--interactive needs a terminal (stdin and stderr)")


@dataclass(frozen=True, slots=True)
class FormatterChoice:
    """The formatter and the schema-registry settings it was built with."""

    formatter: Formatter
    registry_secrets: tuple[str, ...]


def build_formatter(
    kind: RecordFormat,
    properties: Mapping[str, str],
    key_deserializer: str | None,
    value_deserializer: str | None,
    schema_registry: str | None,
) -> FormatterChoice:
    """Deserializers and formatter from the options; UsageError before anything connects."""
    from kshare_cli.connect.secret import is_secret_name
    from kshare_cli.services.consume import make_deserializer, make_formatter

    registry = {
        key: value for key, value in properties.items() if key.startswith(_REGISTRY_PREFIXES)
    }
    formatter_properties = {key: value for key, value in properties.items() if key not in registry}
    if schema_registry is not None:
        if not schema_registry.strip():
            raise UsageError("--schema-registry cannot be empty")
        registry["url"] = schema_registry
    registry_settings = registry or None
    key = make_deserializer(key_deserializer or "bytes", schema_registry=registry_settings)
    value = make_deserializer(value_deserializer or "bytes", schema_registry=registry_settings)
    formatter = make_formatter(kind.value, formatter_properties, key, value)
    secrets = tuple(
        text
        for name, text in registry.items()
        if text and (is_secret_name(name) or name.endswith("user.info"))
    )
    return FormatterChoice(formatter, secrets)


# --------------------------------------------------------------------------- signals


@dataclass
class StopRequest:
    """SIGINT and SIGTERM ask the run to stop; a second one stops it at once."""

    event: threading.Event
    signal_number: int | None = None


#: How long a stopped run may take to commit and leave the group before the process exits
#: anyway (the command's ``--timeout`` when it has one). librdkafka's close runs in C:
#: neither a second Ctrl-C nor Python's handlers can interrupt it, and a broker that never
#: answers the leave would otherwise hold an operator's terminal (seen once in a thousand
#: stops under load).
STOP_GRACE_S: Final = 30.0


def _exit_if_stuck(grace_s: float) -> None:
    """After ``grace_s``, say so and exit 130 if the stopped run has not ended by itself.

    Records printed were acknowledged before the stop; what was not committed is released
    when the broker's acquisition locks expire, so nothing is lost by leaving this way.
    """

    def watchdog() -> None:
        # Straight to stderr, not through diagnostics: this is the way out when the run is
        # stuck, and it must not wait for a writer's lock a stuck thread may hold.
        sys.stderr.write(
            f"kshare: error: leaving the share group did not finish within {grace_s:g} s of "
            "the stop; exiting (records not yet acknowledged return to the group when their "
            "acquisition locks expire)\n"
        )
        sys.stderr.flush()
        os._exit(int(ExitCode.INTERRUPTED))

    timer = threading.Timer(grace_s, watchdog)
    timer.daemon = True  # a run that ends in time exits without waiting for it
    timer.start()


@contextmanager
def stop_on_signals(grace_s: float = STOP_GRACE_S) -> Iterator[StopRequest]:
    """First SIGINT/SIGTERM: finish the record at hand, release the rest, commit, leave.

    The handler only sets an event the consume loop checks (a poll lasts at most
    0.1 s), so a signal never lands between printing a record and acknowledging
    it. A second signal raises KeyboardInterrupt: the consumer is closed, and
    whatever was not acknowledged goes back to the group with it. A run still not over
    ``grace_s`` (``--timeout``, which bounds the last commit) after the first signal exits
    130 anyway, saying so: see :func:`_exit_if_stuck`.
    """
    request = StopRequest(threading.Event())

    def handler(signal_number: int, _frame: FrameType | None) -> None:
        if request.event.is_set():
            raise KeyboardInterrupt
        request.signal_number = signal_number
        request.event.set()
        _exit_if_stuck(grace_s)

    previous: list[tuple[signal.Signals, Callable[[int, FrameType | None], object] | int]] = []
    try:
        for number in (signal.SIGINT, signal.SIGTERM):
            old = signal.signal(number, handler)
            previous.append((number, old if old is not None else signal.SIG_DFL))
    except ValueError:  # not the main thread (an embedding test runner): leave them be
        pass
    try:
        yield request
    finally:
        for number, old in previous:
            signal.signal(number, old)


# --------------------------------------------------------------------------- the prompt


_KEYS: Final = {"a": "accept", "r": "release", "x": "reject"}
_LINE_SHOWN: Final = 400


def make_prompt(request: StopRequest, default: Ack, *, show_line: bool) -> Decide:
    """Ask on the terminal, for each record: accept, release or reject (a/r/x), q to stop.

    The answer is one key (no Enter needed; Enter takes ``default``). Delivery
    counts near the group's delivery limit are highlighted: at the limit a
    release archives the record instead of delivering it again.
    """
    from kshare_cli.services.consume import AckMode

    color = "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    announced: list[bool] = []

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    def decide(record: ConsumedRecord, line: bytes, limit: DeliveryLimit) -> AckMode | None:
        if not announced:
            assumed = " (assumed)" if limit.assumed else ""
            diagnostics.progress(f"Delivery limit {limit.limit}{assumed}: {limit.source}\n")
            announced.append(True)
        diagnostics.progress(_describe(record, limit, paint))
        if show_line:
            shown = line.decode("utf-8", "backslashreplace").rstrip("\n")
            if len(shown) > _LINE_SHOWN:
                shown = shown[:_LINE_SHOWN] + "..."
            diagnostics.progress(f"  {shown}\n")
        diagnostics.progress(f"[a]ccept [r]elease re[x]ect [q]uit (Enter: {default.value})? ")
        answer = _read_key(request.event)
        while answer is not None and answer not in _KEYS and answer not in ("\r", "\n", "q"):
            diagnostics.progress("\a")
            answer = _read_key(request.event)
        if answer is None or answer == "q":
            diagnostics.progress("quit\n")
            return None
        chosen = _KEYS.get(answer, default.value)
        diagnostics.progress(f"{chosen}\n")
        return AckMode(chosen)

    return decide


def _describe(
    record: ConsumedRecord, limit: DeliveryLimit, paint: Callable[[str, str], str]
) -> str:
    count = record.delivery_count
    where = f"{record.topic}-{record.partition} offset {record.offset}"
    if count is None:
        return f"{where}, delivery count unknown\n"
    delivery = f"delivery {count} of {limit.limit}"
    if count >= limit.limit:
        delivery = paint(f"{delivery}: last delivery, a release archives it", "1;31")
    elif count >= limit.limit - 1:
        delivery = paint(f"{delivery}: near the delivery limit", "1;33")
    return f"{where}, {delivery}\n"


def _read_key(stop: threading.Event) -> str | None:
    """One key from the terminal, without Enter; None at end of input or when a stop came."""
    import select
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)  # TCSAFLUSH would drop keys typed ahead
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            data = os.read(fd, 1)
            if not data or data == b"\x04":  # end of input, Ctrl-D
                return None
            return data.decode("latin-1").lower()
        return None
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


# --------------------------------------------------------------------------- options

Topics = Annotated[
    list[str] | None,
    typer.Option(
        "--topic",
        "-t",
        metavar="TOPIC",
        help="The topic to consume from (repeatable).",
        show_default=False,
    ),
]
Group = Annotated[
    str | None,
    typer.Option(
        "--group",
        "-g",
        metavar="GROUP",
        help=f"The share group to join (default: {DEFAULT_GROUP}, as Kafka's tool).",
        show_default=False,
    ),
]
AckOption = Annotated[
    Ack | None,
    typer.Option(
        "--ack",
        case_sensitive=False,
        help="How each printed record is acknowledged (default: accept).",
        show_default=False,
    ),
]
Release = Annotated[
    bool, typer.Option("--release", help="Release each record as it is consumed (Kafka's).")
]
Reject = Annotated[
    bool, typer.Option("--reject", help="Reject each record as it is consumed (Kafka's).")
]
RejectOnError = Annotated[
    bool,
    typer.Option(
        "--reject-on-error",
        "--reject-message-on-error",
        help=(
            "Reject a record that cannot be deserialized (one stderr line each) instead "
            "of stopping; without it such a record is released and the run ends (exit 1)."
        ),
    ),
]
MaxMessages = Annotated[
    int | None,
    typer.Option(
        "--max-messages",
        metavar="N",
        help="Stop after N records; the surplus of the last batch is released.",
        show_default=False,
    ),
]
TimeoutMs = Annotated[
    str | None,
    typer.Option(
        "--timeout-ms",
        metavar="DURATION",
        help=durations.duration_help(
            "Stop (exit 0) when no record arrived for this long; the first wait "
            "includes joining the group, as in Kafka's tool",
            bare="ms",
        ),
        show_default=False,
    ),
]
RecordOutput = Annotated[
    RecordFormat,
    typer.Option(
        # -o/--output as in every other command; --format/-f, its first spelling, stays.
        "--output",
        "-o",
        "--format",
        "-f",
        case_sensitive=False,
        help=(
            "text: Kafka's layout; jsonl: one JSON object a record; raw: value bytes only. "
            "(--format/-f: the old spelling.)"
        ),
    ),
]
FormatterProperty = Annotated[
    list[str] | None,
    typer.Option(
        "--property",
        "--formatter-property",
        metavar="KEY=VALUE",
        help=(
            "Kafka's formatter properties: print.key, print.timestamp, print.offset, "
            "print.partition, print.delivery, print.headers, print.value, print.epoch, "
            "key.separator, line.separator, headers.separator, null.literal, "
            "headers.deserializer; schema.registry.* for the registry. Repeatable."
        ),
        show_default=False,
    ),
]
FormatterConfig = Annotated[
    Path | None,
    typer.Option(
        "--formatter-config",
        metavar="FILE",
        help="Formatter properties from a file (--property wins).",
        show_default=False,
    ),
]
KeyDeserializer = Annotated[
    str | None,
    typer.Option(
        "--key-deserializer",
        metavar="NAME",
        help=(
            "string, bytes (default), base64, hex, json, int, long, double, avro, "
            "jsonschema, protobuf, or Kafka's class name."
        ),
        show_default=False,
    ),
]
ValueDeserializer = Annotated[
    str | None,
    typer.Option(
        "--value-deserializer",
        metavar="NAME",
        help="As --key-deserializer, for values.",
        show_default=False,
    ),
]
SchemaRegistry = Annotated[
    str | None,
    typer.Option(
        "--schema-registry",
        metavar="URL",
        help="Schema registry for the avro, jsonschema and protobuf deserializers.",
        show_default=False,
    ),
]
CommandProperty = Annotated[
    list[str] | None,
    typer.Option(
        "--command-property",
        "--consumer-property",
        metavar="KEY=VALUE",
        help=(
            "Consumer property, librdkafka's names (max.poll.records, client.id...); "
            "security.protocol/ssl.*/sasl.* as in --command-config. Repeatable; wins "
            "over --command-config."
        ),
        show_default=False,
    ),
]
Interactive = Annotated[
    bool,
    typer.Option(
        "--interactive",
        "-i",
        help=(
            "Ask for each record: accept, release or reject (a/r/x), q to stop. Needs a terminal."
        ),
    ),
]
CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        "--consumer-config",
        metavar="FILE",
        help=(
            "Client properties, as Kafka's tools take them (security.protocol, sasl.*, "
            "ssl.*; librdkafka names too) and group.id. Else $KSHARE_COMMAND_CONFIG."
        ),
        rich_help_panel="Connection",
        show_default=False,
    ),
]
Timeout = Annotated[
    str,
    typer.Option(
        "--timeout",
        metavar="DURATION",
        help=durations.duration_help(
            "Give up reaching the cluster after this long; bounds the last commit too",
            bare="ms",
        ),
        rich_help_panel="Connection",
    ),
]


# --------------------------------------------------------------------------- the request


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How the run goes and ends, as given."""

    ack: Ack | None = None
    release: bool = False
    reject: bool = False
    reject_on_error: bool = False
    max_messages: int | None = None
    timeout_ms: str | None = None
    timeout: str = common.DEFAULT_TIMEOUT
    interactive: bool = False


@dataclass(frozen=True, slots=True)
class FormatOptions:
    """How each record is printed, as given."""

    kind: RecordFormat = RecordFormat.text
    properties: tuple[str, ...] = ()
    config: Path | None = None
    key_deserializer: str | None = None
    value_deserializer: str | None = None
    schema_registry: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumeRequest:
    """What the operator asked for, checked before anything connects.

    ``group_in_file`` says the group id came from the ``--command-config`` file, whose
    ``group.id`` the settings parser would otherwise call unused.
    """

    topics: tuple[str, ...]
    group_id: str
    group_in_file: bool
    ack: Ack
    reject_on_error: bool
    max_messages: int | None
    idle_timeout_ms: int | None
    timeout_s: float
    interactive: bool
    properties: ConsumerProperties
    formatting: FormatterChoice


def parse_request(
    topics: list[str],
    group: str | None,
    run: RunOptions,
    formats: FormatOptions,
    command_properties: list[str],
    command_config: Path | None,
) -> ConsumeRequest:
    """The request, or the UsageError of the first option at fault: the run's options,
    then the consumer properties and the group, then the formatter."""
    checked_topics = check_topics(topics)
    ack = choose_ack(run.ack, run.release, run.reject)
    idle_timeout_ms = durations.optional_milliseconds("--timeout-ms", run.timeout_ms)
    check_counts(run.max_messages, idle_timeout_ms)
    timeout_s = common.parse_timeout(run.timeout)
    if run.interactive:
        terminal_for_prompt()
    properties = split_consumer_properties(parse_pairs(command_properties, "--command-property"))
    file_group = _file_group_id(command_config)
    group_id = choose_group(
        group,
        ("--command-property", properties.consumer.pop("group.id", None)),
        ("--command-config", file_group),
    )
    refuse_offset_reset(properties.consumer, group_id)
    formatter_properties = _formatter_properties(formats.config, list(formats.properties))
    formatting = build_formatter(
        formats.kind,
        formatter_properties,
        formats.key_deserializer,
        formats.value_deserializer,
        formats.schema_registry,
    )
    return ConsumeRequest(
        topics=checked_topics,
        group_id=group_id,
        group_in_file=file_group is not None,
        ack=ack,
        reject_on_error=run.reject_on_error,
        max_messages=run.max_messages,
        idle_timeout_ms=idle_timeout_ms,
        timeout_s=timeout_s,
        interactive=run.interactive,
        properties=properties,
        formatting=formatting,
    )


# --------------------------------------------------------------------------- the command


@common.command_edge
def consume(
    topic: Topics = None,
    group: Group = None,
    ack: AckOption = None,
    release: Release = False,
    reject: Reject = False,
    reject_on_error: RejectOnError = False,
    max_messages: MaxMessages = None,
    timeout_ms: TimeoutMs = None,
    output_format: RecordOutput = RecordFormat.text,
    formatter_property: FormatterProperty = None,
    formatter_config: FormatterConfig = None,
    key_deserializer: KeyDeserializer = None,
    value_deserializer: ValueDeserializer = None,
    schema_registry: SchemaRegistry = None,
    command_property: CommandProperty = None,
    interactive: Interactive = False,
    bootstrap_server: common.BootstrapServer = None,
    command_config: CommandConfig = None,
    profile: common.Profile = None,
    timeout: Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Consume records from a share group and print them, as kafka-console-share-consumer.sh.

    Each record is acknowledged (--ack accept|release|reject) only after its line
    was printed; Ctrl-C, SIGTERM or a closed pipe release what was not printed.
    Ends with `Processed a total of N messages` on stderr.
    """
    run = RunOptions(
        ack, release, reject, reject_on_error, max_messages, timeout_ms, timeout, interactive
    )
    formats = FormatOptions(
        output_format,
        tuple(formatter_property or ()),
        formatter_config,
        key_deserializer,
        value_deserializer,
        schema_registry,
    )
    request = parse_request(
        topic or [], group, run, formats, command_property or [], command_config
    )
    diagnostics.remember_secrets(request.formatting.registry_secrets)
    settings, config = client_config(
        bootstrap_server,
        command_config,
        profile,
        connection=request.properties.connection,
        client=request.properties.consumer,
        shown_warning=_without_group_id if request.group_in_file else None,
    )
    _report(_run(settings, config, request, debug=debug))


def _run(
    settings: ConnectionSettings, config: dict[str, Any], request: ConsumeRequest, *, debug: bool
) -> ConsumeResult:
    """Join, print and acknowledge until a stop; a signal asks the run to stop."""
    from kshare_cli.services.consume import AckMode, ConsumeOptions
    from kshare_cli.services.consume import consume as run_consumer

    options = ConsumeOptions(
        topics=request.topics,
        group_id=request.group_id,
        ack=AckMode(request.ack.value),
        reject_on_error=request.reject_on_error,
        max_messages=request.max_messages,
        idle_timeout_ms=request.idle_timeout_ms,
        interactive=request.interactive,
        timeout_s=request.timeout_s,
    )
    joining = JoiningLine(request.group_id) if _stderr_is_terminal() else None
    with stop_on_signals(grace_s=request.timeout_s) as stop:
        prompt = (
            make_prompt(stop, request.ack, show_line=not _same_terminal())
            if request.interactive
            else None
        )
        result = run_consumer(
            settings,
            config,
            options,
            request.formatting.formatter,
            sys.stdout.buffer,
            debug=debug,
            stop=stop.event,
            decide=prompt,
            on_warning=joining.warn if joining is not None else common.warn,
            on_rejected=common.report_failure,
            on_joining=joining,
        )
    if joining is not None:
        joining(False)
    return result


class JoiningLine:
    """Says "joining group G…" on the terminal until the first assignment arrives.

    A new member gets its share-partitions with its second heartbeat; the wait is
    usually a round trip, but a broker still initialising the share-partitions, or
    a coordinator loading, makes it longer, and nothing else on screen says why no
    record comes (docs/first-record.md). The line is erased, never left as history.
    """

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.shown = False

    def __call__(self, joining: bool) -> None:
        if joining and not self.shown:
            diagnostics.progress(f"joining group {self.group_id}\u2026")
            self.shown = True
        elif not joining and self.shown:
            diagnostics.progress("\r\x1b[K")
            self.shown = False

    def warn(self, message: str) -> None:
        """A warning while the line shows starts on a line of its own."""
        if self.shown:
            diagnostics.progress("\n")
            self.shown = False
        common.warn(message)


def _file_group_id(command_config: Path | None) -> str | None:
    """``group.id`` from the --command-config file: Kafka's tool reads its group there too."""
    if command_config is None:
        return None
    from kshare_cli.connect.java_properties import load_properties

    return load_properties(command_config).get("group.id")


def _without_group_id(warning: str) -> str:
    """The settings parser's warning, minus ``group.id`` (which this command does use)."""
    prefix = "ignored properties kshare does not use: "
    if not warning.startswith(prefix):
        return warning
    names = [name for name in warning[len(prefix) :].split(", ") if name != "group.id"]
    return prefix + ", ".join(names) if names else ""


def _formatter_properties(path: Path | None, pairs: list[str]) -> dict[str, str]:
    from kshare_cli.connect.java_properties import load_properties

    merged = dict(load_properties(path, label="--formatter-config")) if path is not None else {}
    merged.update(parse_pairs(pairs, "--property"))
    return merged


def _stderr_is_terminal() -> bool:
    try:
        return os.isatty(sys.stderr.fileno())
    except (OSError, ValueError):
        return False


def _same_terminal() -> bool:
    """Whether the records printed on stdout are already on the prompt's terminal."""
    try:
        return os.isatty(sys.stdout.fileno()) and os.isatty(sys.stderr.fileno())
    except (OSError, ValueError):
        return False


def exit_code(result: ConsumeResult) -> ExitCode:
    if result.stopped_by == "interrupted":
        return ExitCode.INTERRUPTED
    if result.error is not None:
        return result.error.exit_code
    if result.acknowledgement_failures:
        return ExitCode.PARTIAL
    return ExitCode.OK


def _report(result: ConsumeResult) -> None:
    """Errors first, then Kafka's closing line, as Kafka's tool orders them; then the exit."""
    if result.stopped_by == "output-closed":
        _quiet_stdout()
    for failure in result.acknowledgement_failures:
        common.report_failure(str(failure))
    if result.error is not None:
        common.report_failure(str(result.error))
    diagnostics.progress(f"Processed a total of {result.processed} messages\n")
    code = exit_code(result)
    if code != ExitCode.OK:
        raise typer.Exit(int(code))


def _quiet_stdout() -> None:
    """stdout's reader is gone: point it at /dev/null so the exit flush does not complain."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
