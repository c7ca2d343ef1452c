"""``kshare audit (timeline | deliveries | archived)``: a PySpark audit of a share group.

Kafka keeps what a share group did only in ``__share_group_state``, and
prunes it; this reads it (and the source topics) with Spark, ``local[*]`` by
default, a cluster with ``--master spark://...``:

* ``timeline``: per share-partition, after every state record: start offset,
  delivery-complete count, in-flight records by state, lag;
* ``deliveries``: per offset range, the highest delivery count reached and
  the final state;
* ``archived``: the archived records (rejected, or over the delivery limit)
  with their key, value and headers -- on stdout, as files (``--output-dir``),
  or produced to a dead-letter topic (``--dlq-topic``) with the headers
  Kafka's own share-group DLQ writes.

Everything that can be refused is refused before Spark starts, because a
JVM costs seconds and a Spark failure says little: arguments (exit 2), a
missing PySpark or Java 17+ runtime (exit 2, one line saying what to
install), an unreachable cluster (exit 3, 4), a group the cluster does not
know as a share group, topics that do not exist or that the group has no
share-partitions of (exit 5). ``--follow`` keeps reading the state topic and
prints new rows until Ctrl-C (exit 0). ``-o/--output`` is the stdout format,
as in every other command; ``--output-dir DIR`` writes files instead (the
old ``--output DIR`` still works, with a warning).
``--connector spark`` reads Kafka with Spark's own JVM connector instead of
kshare's confluent-kafka source, for clusters that already ship it; its
absence is one line (exit 2), not a stack trace.
"""

from __future__ import annotations

import enum
import inspect
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from typer.core import TyperCommand

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pyspark.sql import SparkSession

    from kshare_cli.services.audit import (
        AuditJob,
        AuditRequest,
        AuditResult,
        DeadLetterCount,
    )

DEFAULT_MASTER: Final = "local[*]"
_MASTER: Final = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://\S+|yarn|k8s://\S+|mesos://\S+)$"
)


class Format(enum.StrEnum):
    """``-o/--output``: the stdout format (``--output-dir DIR`` writes files instead)."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


class FileFormat(enum.StrEnum):
    """``--output-format``: the files ``--output-dir DIR`` holds."""

    parquet = "parquet"
    jsonl = "jsonl"


class ConnectorChoice(enum.StrEnum):
    """``--connector``: who reads Kafka inside Spark."""

    kshare = "kshare"
    spark = "spark"


#: Values of ``--output`` that are a format (any command's: ``--output yaml`` is a wrong
#: format here, not a directory named yaml); any other value is the old ``--output DIR``.
_FORMAT_NAMES: Final = frozenset(
    {each.value for each in Format} | {each.value for each in common.OutputFormat}
)


def legacy_output_args(args: list[str]) -> tuple[list[str], list[str]]:
    """The arguments with the old spellings rewritten, and a deprecation warning for each.

    Before ``-o/--output`` meant the stdout format here, as it does in every
    other command, ``--output DIR`` named the directory and ``--format`` the
    format. Scripts written then keep working: ``--output X`` where X is no
    format name becomes ``--output-dir X``, ``--format`` becomes ``--output``.
    Only the long spelling is rewritten: ``-o`` never meant a directory, so
    ``-o jsn`` stays a wrong format (exit 2), not a directory named jsn.
    """
    rewritten: list[str] = []
    warnings: list[str] = []
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg == "--":
            rewritten.extend(args[position - 1 :])
            break
        name, equals, value = arg.partition("=")
        if name == "--format":
            warnings.append("--format is now -o/--output")
            rewritten.append(f"--output{equals}{value}")
        elif name == "--output":
            if not equals:
                if position >= len(args):
                    rewritten.append(arg)
                    break
                value = args[position]
                position += 1
            if value.lower() in _FORMAT_NAMES:
                rewritten.extend(["--output", value])
            else:
                warnings.append("--output DIR is now --output-dir DIR")
                rewritten.extend(["--output-dir", value])
        else:
            rewritten.append(arg)
    return rewritten, warnings


class _AuditCommand(TyperCommand):
    """A Typer command that accepts the old spellings of the output options (see
    ``legacy_output_args``), warning once per use on stderr."""

    # ctx is Typer's vendored click Context, which Typer does not export under a public name.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args, warnings = legacy_output_args(args)
        if not ctx.resilient_parsing:  # shell completion: stderr is the operator's terminal
            for warning in warnings:
                common.warn(warning)
        return super().parse_args(ctx, args)


app = typer.Typer(
    name="audit",
    help="Audit a share group with Spark: timeline, deliveries, archived records.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Group = Annotated[
    str,
    typer.Option(
        "--group",
        "-g",
        metavar="GROUP",
        help="The share group (the cluster must know it: checked before Spark starts).",
        autocompletion=common.complete_group_ids,
        show_default=False,
    ),
]
Topics = Annotated[
    list[str] | None,
    typer.Option(
        "--topic",
        "-t",
        metavar="TOPIC",
        help="Only this topic's share-partitions (repeatable); reads only the state-topic "
        "partitions that can hold them.",
        show_default=False,
    ),
]
Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="DATETIME",
        help="Only what happened from then on: ISO-8601 (UTC unless it says), 2h, "
        "yesterday 09:00 (as reset-offsets --to-datetime).",
        show_default=False,
    ),
]
OutputDir = Annotated[
    Path | None,
    typer.Option(
        "--output-dir",
        metavar="DIR",
        help="Write the rows as files into DIR (absent or empty) instead of stdout.",
        show_default=False,
    ),
]
OutputDirFormat = Annotated[
    FileFormat,
    typer.Option(
        "--output-format", case_sensitive=False, help="Files of --output-dir: parquet or jsonl."
    ),
]
StdoutOutput = Annotated[
    Format,
    typer.Option(
        "--output",
        "-o",
        case_sensitive=False,
        help="stdout: table for people; json, jsonl, csv for scripts.",
    ),
]
Master = Annotated[
    str,
    typer.Option(
        "--master",
        metavar="URL",
        help="Where Spark runs: local[*] (every core here), local[N], spark://HOST:PORT, ...",
    ),
]
Follow = Annotated[
    bool,
    typer.Option(
        "--follow",
        "-f",
        help="After the rows so far, keep reading the state topic and print new rows "
        "until Ctrl-C (exit 0).",
    ),
]
Report = Annotated[
    Path | None,
    typer.Option(
        "--report",
        metavar="FILE.html",
        help="Also write a self-contained HTML report: lag over time, delivery-count "
        "histogram, archived records (runs all three audits).",
        show_default=False,
    ),
]
NoSource = Annotated[
    bool,
    typer.Option(
        "--no-source",
        help="Do not read the source topics: lag only for the latest state, archived "
        "offsets without their records.",
    ),
]
KafkaConnector = Annotated[
    ConnectorChoice,
    typer.Option(
        "--connector",
        case_sensitive=False,
        help="Who reads Kafka: kshare (confluent-kafka, nothing to download) or spark "
        "(Spark's own Kafka connector, which the session must have, e.g. PYSPARK_SUBMIT_ARGS="
        "'--packages org.apache.spark:spark-sql-kafka-0-10_2.13:VERSION pyspark-shell').",
    ),
]
DlqTopic = Annotated[
    str | None,
    typer.Option(
        "--dlq-topic",
        metavar="TOPIC",
        help="Produce the archived records to this existing topic as Kafka 4.4's DLQ writes "
        "them (headers __dlq.errors.topic, .partition, .offset, .group, .delivery.count, "
        ".message; no key, value or original headers), each once: none the topic or the "
        "group's own broker DLQ already holds.",
        show_default=False,
    ),
]
CopyRecord = Annotated[
    bool,
    typer.Option(
        "--copy-record",
        help="With --dlq-topic: the original key and value too (the default when the "
        "group sets errors.deadletterqueue.copy.record.enable=true).",
    ),
]
KeepHeaders = Annotated[
    bool,
    typer.Option(
        "--keep-headers",
        help="With --dlq-topic: the original headers too, ahead of Kafka's (Kafka drops them).",
    ),
]


HistoryDir = Annotated[
    Path | None,
    typer.Option(
        "--history",
        metavar="DIR",
        help="Read the state records kshare audit capture kept in DIR, then the live topic "
        "from where the capture ended: history Kafka has pruned since.",
        show_default=False,
    ),
]


# --------------------------------------------------------------------------- validation


def check_group_id(group: str) -> None:
    """A group id the cluster could know (exit 2 for an empty one)."""
    if not group.strip():
        raise UsageError("--group: a group id cannot be empty")


def check_master(master: str) -> None:
    """--master is a Spark master URL (exit 2 otherwise)."""
    if not _MASTER.match(master):
        raise UsageError(
            f"--master {master!r}: expected local[*], local[N], spark://HOST:PORT, yarn or "
            "k8s://URL"
        )


def check_args(
    *,
    group: str,
    topics: list[str],
    since: str | None,
    output_dir: Path | None,
    dlq_topic: str | None,
    fmt: Format,
    master: str,
    follow: bool,
    report: Path | None,
    copy_record: bool = False,
    keep_headers: bool = False,
) -> int | None:
    """Refuse what is wrong before anything connects (exit 2); since in epoch ms."""
    check_group_id(group)
    for topic in topics:
        check_topic_name(topic)
    if dlq_topic is not None:
        check_topic_name(dlq_topic, "--dlq-topic")
    if output_dir is not None and dlq_topic is not None:
        raise UsageError("--output-dir and --dlq-topic cannot be used together: choose one")
    for option, given in (("--copy-record", copy_record), ("--keep-headers", keep_headers)):
        if given and dlq_topic is None:
            raise UsageError(f"{option} shapes what --dlq-topic writes: give --dlq-topic TOPIC")
    check_master(master)
    if follow and output_dir is not None:
        raise UsageError("--follow writes to stdout or --dlq-topic, not to --output-dir files")
    if follow and report is not None:
        raise UsageError("--report is a snapshot: it cannot be used with --follow")
    if follow and fmt is Format.json:
        raise UsageError("-o json is one document: use -o jsonl with --follow")
    if output_dir is not None:
        if output_dir.exists() and not output_dir.is_dir():
            raise UsageError(f"--output-dir {output_dir}: not a directory")
        if output_dir.is_dir() and any(output_dir.iterdir()):
            raise UsageError(f"--output-dir {output_dir}: the directory is not empty")
    if report is not None:
        if report.is_dir():
            raise UsageError(f"--report {report}: is a directory, give a file name")
        parent = report.parent
        if not parent.is_dir():
            raise UsageError(f"--report {report}: directory {parent} does not exist")
    if since is None:
        return None
    from kshare_cli.timespec import parse_datetime

    try:
        return parse_datetime(since)
    except UsageError as error:
        raise UsageError(f"--since: {error}") from None


# --------------------------------------------------------------------------- the commands


@dataclass(frozen=True, slots=True)
class JobOptions:
    """What the command line gave an audit job (timeline, deliveries, archived)."""

    group: str
    topics: tuple[str, ...]
    since: str | None
    fmt: Format
    output_dir: Path | None
    output_format: FileFormat
    dlq_topic: str | None
    copy_record: bool
    keep_headers: bool
    master: str
    follow: bool
    report: Path | None
    no_source: bool
    connector: ConnectorChoice
    history: Path | None
    connection: tuple[str | None, Path | None, str | None]
    timeout: str
    debug: bool


def job_options(
    group: Group,
    topic: Topics = None,
    since: Since = None,
    fmt: StdoutOutput = Format.table,
    output_dir: OutputDir = None,
    output_format: OutputDirFormat = FileFormat.parquet,
    dlq_topic: DlqTopic = None,
    copy_record: CopyRecord = False,
    keep_headers: KeepHeaders = False,
    master: Master = DEFAULT_MASTER,
    follow: Follow = False,
    report: Report = None,
    no_source: NoSource = False,
    connector: KafkaConnector = ConnectorChoice.kshare,
    history: HistoryDir = None,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> JobOptions:
    """The options of every audit job, declared once: this signature is each job command's
    (``job_command``), in this order; --dlq-topic (and how it writes) only where the job can
    produce dead letters."""
    return JobOptions(
        group=group,
        topics=tuple(topic or ()),
        since=since,
        fmt=fmt,
        output_dir=output_dir,
        output_format=output_format,
        dlq_topic=dlq_topic,
        copy_record=copy_record,
        keep_headers=keep_headers,
        master=master,
        follow=follow,
        report=report,
        no_source=no_source,
        connector=connector,
        history=history,
        connection=(bootstrap_server, command_config, profile),
        timeout=timeout,
        debug=debug,
    )


_DEAD_LETTER_OPTIONS: Final = frozenset({"dlq_topic", "copy_record", "keep_headers"})


def job_command(
    name: str, *, dead_letters: bool = False
) -> Callable[[Callable[[], None]], Callable[..., None]]:
    """Register the audit job ``name`` as a command taking ``job_options``'s options; the
    decorated function gives only its help (its docstring)."""
    shared = inspect.signature(job_options, eval_str=True)
    parameters = [
        parameter
        for parameter in shared.parameters.values()
        if dead_letters or parameter.name not in _DEAD_LETTER_OPTIONS
    ]

    def register(described: Callable[[], None]) -> Callable[..., None]:
        def command(**options: Any) -> None:
            _audit(name, job_options(**options))

        command.__name__ = command.__qualname__ = described.__name__
        command.__doc__ = described.__doc__
        # Typer reads a command's options from its signature (inspect.signature honours
        # __signature__), so the three jobs share job_options's one declaration.
        command.__signature__ = shared.replace(  # type: ignore[attr-defined]  # a function attribute mypy does not model
            parameters=parameters, return_annotation=None
        )
        edged = common.command_edge(command)
        app.command(name, cls=_AuditCommand)(edged)
        return edged

    return register


@job_command("timeline")
def timeline() -> None:
    """Each share-partition over time: start offset, in-flight records by state, lag.

    One row per state record: the state right after it. The latest row's lag uses the log end
    offset of now (as describe); earlier rows date the log end offset by the source records'
    timestamps (marked with ≈ in the table, lag_basis in JSON).
    """


@job_command("deliveries")
def deliveries() -> None:
    """Per offset range: the highest delivery count reached and the final state.

    From the batches every state record carried, so an acknowledgement written together with
    the start offset moving past it still counts. --since keeps the outcomes reached since.
    """


@job_command("archived", dead_letters=True)
def archived() -> None:
    """The archived records (rejected, or over the delivery limit), with their records.

    Each with its reason (rejected, delivery_limit) and state: archived, or archiving for a Kafka
    4.4 record left on its way to the group's DLQ. On stdout, as files (--output-dir), or produced
    to a dead-letter topic (--dlq-topic) as Kafka 4.4's DLQ writes them, never one a DLQ topic
    already holds (a group whose broker writes its own DLQ gets only what was archived before it,
    or not written); every delivery is checked, exit 1 if one failed.
    """


CaptureGroups = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        "-g",
        metavar="GROUP",
        help="A share group whose state records to keep (repeatable).",
        autocompletion=common.complete_group_ids,
        show_default=False,
    ),
]


@app.command("capture")
@common.command_edge
def capture(
    to: Annotated[
        Path,
        typer.Option(
            "--to",
            metavar="DIR",
            help="Where the records go (Parquet) and Spark's checkpoint: a restart goes on.",
            show_default=False,
        ),
    ],
    group: CaptureGroups = None,
    all_groups: Annotated[
        bool, typer.Option("--all-groups", help="Keep every group's state records.")
    ] = False,
    until_caught_up: Annotated[
        bool,
        typer.Option(
            "--until-caught-up",
            help="Copy what the state topic holds now and stop (Trigger.AvailableNow); "
            "without it, run until Ctrl-C (exit 0).",
        ),
    ] = False,
    master: Master = DEFAULT_MASTER,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Keep __share_group_state records before Kafka prunes them, for audit --history DIR.

    Kafka's share coordinator deletes the state records before its latest snapshots every few
    minutes. This Spark stream copies the groups' records (raw, with partition, offset and
    timestamp) into Parquet under DIR, checkpointed there; the audits read them with --history.
    """
    groups = tuple(dict.fromkeys(group or []))
    if all_groups == bool(groups):
        raise UsageError("give --group GROUP (repeatable) or --all-groups")
    for each in groups:
        check_group_id(each)
    check_master(master)
    from kshare_cli.services import audit

    audit.start_capture(to, None if all_groups else groups)
    audit.require_spark()
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)
    common.run(lambda: audit.check_state_topic(settings, timeout_s))
    audit.capture(settings, to, groups or None, master=master, until_caught_up=until_caught_up)
    diagnostics.progress(f"kshare: captured the state records into {to}\n")


# --------------------------------------------------------------------------- the run


def _audit(job_name: str, options: JobOptions) -> None:
    """Parse, ask the cluster, run the job: each refusal before Spark starts (see the
    module's docstring), in the order the operator's mistakes are most likely."""
    since_ms = check_args(
        group=options.group,
        topics=list(options.topics),
        since=options.since,
        output_dir=options.output_dir,
        dlq_topic=options.dlq_topic,
        fmt=options.fmt,
        master=options.master,
        follow=options.follow,
        report=options.report,
        copy_record=options.copy_record,
        keep_headers=options.keep_headers,
    )
    from kshare_cli.services import audit

    if options.history is not None:
        audit.check_history(options.history, options.group)
    audit.require_spark()
    settings, timeout_s = common.connection(*options.connection, options.timeout)
    if options.connector is ConnectorChoice.spark:
        audit.check_spark_connector(settings)
    request = _request(job_name, options, since_ms)
    resolved = common.run(lambda: audit.resolve_scope(settings, request, timeout_s))
    for note in resolved.notes:
        diagnostics.progress(f"kshare: {note}\n")
    audit.run_job(settings, request, resolved, _Terminal(request, options.fmt))


def _request(job_name: str, options: JobOptions, since_ms: int | None) -> AuditRequest:
    """What the service is asked: the options, checked; the topics each once."""
    from kshare_cli.services import audit

    return audit.AuditRequest(
        job=audit.AuditJob(job_name),
        group_id=options.group,
        topics=tuple(dict.fromkeys(options.topics)),
        since_ms=since_ms,
        output_dir=options.output_dir,
        output_format=options.output_format.value,
        dlq_topic=options.dlq_topic,
        master=options.master,
        follow=options.follow,
        report=options.report,
        read_source=not options.no_source,
        connector=options.connector.value,
        history_dir=options.history,
        copy_record=options.copy_record,
        keep_headers=options.keep_headers,
    )


class _Terminal:
    """Where the audit's answers go (``audit.AuditOutput``): the batch's rows to stdout (or
    where they went, to stderr), the follow's rows as they come, Spark's progress on a
    terminal while the batch runs."""

    def __init__(self, request: AuditRequest, fmt: Format) -> None:
        self._request = request
        self._fmt = fmt
        # CSV's header goes out once: with the batch's rows, or with the first follow rows.
        self._csv_header_printed = False

    def progress(self, spark: SparkSession) -> AbstractContextManager[object]:
        from kshare_cli.cli.audit_progress import SparkProgress, stderr_is_terminal

        return SparkProgress(spark, enabled=stderr_is_terminal())

    def result(self, result: AuditResult) -> None:
        self._csv_header_printed = _finish(result, self._request, self._fmt)

    def rows(self, job: AuditJob, rows: Sequence[Any]) -> None:
        from kshare_cli.render.audit import render_rows

        text = render_rows(
            job,
            rows,
            self._fmt.value,
            width=_terminal_width(),
            csv_header=not self._csv_header_printed,
        )
        self._csv_header_printed = True
        common.stdout_write(text)

    def dead_letters(self, count: DeadLetterCount) -> None:
        assert self._request.dlq_topic is not None
        diagnostics.progress(_dead_letters_line(count, self._request.dlq_topic) + "\n")


def _finish(result: AuditResult, request: AuditRequest, fmt: Format) -> bool:
    """Rows to stdout (or where they went to stderr), notes, the report; whether rows were
    printed."""
    from kshare_cli.render.audit import history_lines, render_audit
    from kshare_cli.services.audit import report_now

    capture = None if request.history_dir is None else str(request.history_dir)
    if result.written is not None:
        diagnostics.progress(f"kshare: wrote the {request.job.value} rows to {result.written}\n")
    elif result.dead_letters is not None:
        assert request.dlq_topic is not None
        diagnostics.progress(_dead_letters_line(result.dead_letters, request.dlq_topic) + "\n")
    else:
        common.stdout_write(
            render_audit(result, fmt.value, width=_terminal_width(), capture=capture)
        )
    for note in history_lines(result.history, capture=capture) + result.notes:
        common.warn(note)
    if request.report is not None:
        from kshare_cli.render.audit_report import render_report

        request.report.write_text(
            render_report(result, generated_at=report_now(), capture=capture), encoding="utf-8"
        )
        diagnostics.progress(f"kshare: wrote the report to {request.report}\n")
    return result.written is None and result.dead_letters is None


def _dead_letters_line(count: DeadLetterCount, topic: str) -> str:
    """What a --dlq-topic run did, for stderr; the skipped ones only when there were some."""
    line = f"kshare: produced {count.produced} archived records to {topic}"
    if count.already_there:
        line += f"; skipped {count.already_there} already there"
    if count.left_to_broker:
        line += f"; left {count.left_to_broker} still ARCHIVING to the broker"
    return line


def _terminal_width() -> int | None:
    import sys

    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns
