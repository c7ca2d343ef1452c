"""What ``kshare audit`` asks for: checks before Spark, the cluster, then the Spark job.

The command (``cli/audit_cmd.py``) reaches the pipeline and admin layers
only through here: the checks that must refuse before a JVM starts (PySpark
and Java there, ``--history`` a capture of the group, ``--connector spark``
able to take the settings), then the job or the capture stream in a Spark
session of its own (``pipeline.lifecycle``: started, stopped, Ctrl-C). The
pipeline's types the command names are re-exported (``__all__``); they keep
their one home in ``pipeline/``.

Imported only when the command runs, and importing it loads no PySpark: the
pipeline is imported inside the calls, so that a missing PySpark is the one
line of ``require_spark``, not a traceback. Two phases, so that anything the
cluster can refuse is refused before a JVM starts (seconds, and memory):

1. ``resolve_scope`` (asyncio, the wire client, bounded by ``--timeout``):
   topic names and ids (the state topic knows only ids), the topics and the
   dead-letter topic exist, the state topic's partitions and end offsets --
   the batch reads up to them and ``--follow`` goes on from them -- and, with
   ``--topic``, only the state-topic partitions that can hold the group's
   share-partitions of those topics; the group is a share group the cluster
   knows and, for a batch with ``--topic``, has share-partitions of each
   topic (else Spark would read for a minute to find nothing: exit 5 now);
2. ``run_job``: the batch's steps (``pipeline.batch``), its result handed to
   the command's ``AuditOutput``, then with ``--follow`` the follow; with
   ``--report`` all three jobs run, as the report shows all three.

Spark failures reach the operator as one line: the error of our Kafka source
when there is one (it names topic and partition), else Spark's first line.
"""

from __future__ import annotations

import datetime
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from kshare_cli.admin.models import GroupFailure, GroupOffsets, TopicPartition
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import ExitCode, KshareError, NotFound, Refused, UsageError
from kshare_cli.pipeline.lifecycle import SPARK_LOG
from kshare_cli.pipeline.models import (
    ArchivedRecord,
    AuditJob,
    AuditResult,
    DeadLetterCount,
    SharePartitionHistory,
)
from kshare_cli.services.delivery_limits import delivery_count_limit
from kshare_cli.services.session import Session
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, kafka_uuid, state_partition_for
from kshare_cli.state.replay import SharePartitionKey

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from kshare_cli.admin.models import ShareGroupOffsets
    from kshare_cli.admin.share_groups import ShareGroupAdmin
    from kshare_cli.pipeline.batch import BatchAudit, DeadLetterTarget
    from kshare_cli.pipeline.follow import AuditFollow, Emit
    from kshare_cli.pipeline.jobs import AuditScope, FileFormat
    from kshare_cli.pipeline.kafka_source import Connector
    from kshare_cli.wire.cluster import TopicMetadata

__all__ = [
    "SPARK_CONNECTOR_MISSING",
    "SPARK_LOG",
    "SPARK_MISSING",
    "AuditFailed",
    "AuditJob",
    "AuditOutput",
    "AuditRequest",
    "AuditResult",
    "DeadLetterCount",
    "ResolvedScope",
    "SharePartitionHistory",
    "SparkConnectorMissing",
    "batch_audit",
    "capture",
    "check_group",
    "check_history",
    "check_spark_connector",
    "check_state_topic",
    "job_failure",
    "produce_follow_dead_letters",
    "report_now",
    "require_spark",
    "resolve_scope",
    "run_audit",
    "run_job",
    "spark_failure",
    "start_capture",
]

SPARK_MISSING: Final = (
    "kshare audit needs the spark extra (PySpark, about 800 MB, and a Java 17+ runtime); "
    "from a clone: .venv/bin/pip install -e '.[spark]'"
)
_ZERO_UUID: Final = uuid.UUID(int=0)
_SOURCE_ERROR: Final = re.compile(r"KafkaSourceError: (.+)")
_DEAD_LETTER_ERROR: Final = re.compile(r"DeadLetterError: (.+)")


class AuditFailed(KshareError):
    """The Spark job failed; the message is its one meaningful line."""

    exit_code = ExitCode.PARTIAL


class SparkConnectorMissing(AuditFailed):
    """--connector spark, and the session has no "kafka" format: a setup to fix, not a
    failed job (exit 2)."""

    exit_code = ExitCode.USAGE


SPARK_CONNECTOR_MISSING: Final = (
    "--connector spark: this Spark session has no Kafka connector; add it "
    "(PYSPARK_SUBMIT_ARGS='--packages org.apache.spark:spark-sql-kafka-0-10_2.13:"
    "{version} pyspark-shell', or spark.jars.packages on the cluster) or use --connector kshare"
)


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """Everything the command line asked for, validated."""

    job: AuditJob
    group_id: str
    topics: tuple[str, ...] = ()
    since_ms: int | None = None
    output_dir: Path | None = None
    output_format: FileFormat = "parquet"
    dlq_topic: str | None = None
    master: str = "local[*]"
    follow: bool = False
    report: Path | None = None
    read_source: bool = True
    connector: Connector = "kshare"
    history_dir: Path | None = None
    # --dlq-topic: the original key and value (--copy-record), the original headers
    # (--keep-headers); Kafka's own format (neither) by default.
    copy_record: bool = False
    keep_headers: bool = False


@dataclass(frozen=True, slots=True)
class ResolvedScope:
    """The scope, and whether the cluster has a state topic to read."""

    scope: AuditScope
    state_topic_exists: bool
    # For the archived records: the group's delivery count limit, from which a record's
    # reason (and a dead letter's __dlq.errors.message) is inferred as Kafka does
    # (None: unknown).
    delivery_limit: int | None = None
    # For --dlq-topic: the group's errors.deadletterqueue.copy.record.enable, and its DLQ
    # topic when the broker writes one itself (Kafka 4.4, share.version 2, the group
    # config set); notes are what the operator is told about them before Spark starts.
    copy_record: bool = False
    broker_dlq_topic: str | None = None
    notes: tuple[str, ...] = ()


# --------------------------------------------------------------------------- before Spark


def require_spark() -> None:
    """PySpark and pyarrow import, and a Java 17+ runtime is there for Spark's JVM; or one line
    saying what to install (exit 2)."""
    try:
        import pyarrow  # type: ignore[import-untyped]  # noqa: F401
        import pyspark.sql  # noqa: F401
    except ImportError:
        raise UsageError(SPARK_MISSING) from None
    from kshare_cli.pipeline.session import check_java

    check_java()


def check_history(history: Path, group: str) -> None:
    """--history DIR is a capture of the group, or one line (exit 2): a capture of other
    groups would make the live read start after records it never kept."""
    from kshare_cli.pipeline.capture import CaptureError, read_manifest

    try:
        manifest = read_manifest(history)
    except CaptureError as error:
        raise UsageError(f"--history: {error}") from None
    if manifest is None:
        raise UsageError(f"--history {history}: not a kshare audit capture directory")
    if not manifest.covers(group):
        held = ", ".join(manifest.groups or ())
        raise UsageError(f"--history {history}: it captures {held}, not group '{group}'")


def check_spark_connector(settings: ConnectionSettings) -> None:
    """The connection settings say in Java client properties, or one line (exit 2) naming
    what Spark's connector cannot take -- before Spark starts."""
    from kshare_cli.pipeline.kafka_source import (
        KafkaReadOptions,
        KafkaSourceError,
        spark_kafka_options,
    )

    try:
        spark_kafka_options(KafkaReadOptions(config=settings.librdkafka_config(), topics=("t",)))
    except KafkaSourceError as error:
        raise UsageError(f"--connector spark: {error}") from None


def start_capture(directory: Path, groups: tuple[str, ...] | None) -> None:
    """The capture directory's manifest written, or checked against a restart's (exit 2 if
    it captures something else); groups None: every group."""
    from kshare_cli.pipeline.capture import CaptureError, CaptureManifest, start_manifest

    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--to {directory}: not a directory")
    try:
        start_manifest(directory, CaptureManifest(SHARE_STATE_TOPIC, groups))
    except CaptureError as error:
        raise UsageError(f"--to: {error}") from None


# --------------------------------------------------------------------------- phase 1


async def resolve_scope(
    settings: ConnectionSettings, request: AuditRequest, timeout_s: float
) -> ResolvedScope:
    """What the audit reads and how, asked of the cluster within the timeout, before Spark
    starts: everything the cluster can refuse is refused here."""
    session = Session(settings, timeout_s)

    async def work() -> ResolvedScope:
        async with session.admin() as admin:
            return await _resolved(session, admin, request)

    return await session.bounded(work(), "asking the cluster about the audit")


async def _resolved(
    session: Session, admin: ShareGroupAdmin, request: AuditRequest
) -> ResolvedScope:
    from kshare_cli.pipeline.jobs import AuditScope

    topics = await _topics(admin, request)
    state = topics.get(SHARE_STATE_TOPIC)
    state_exists = state is not None and state.error_code == 0 and bool(state.partitions)
    partitions: tuple[int, ...] | None = None
    end_offsets: dict[str, dict[str, int]] | None = None
    if state is not None and state_exists:
        partitions = _state_partitions(request, topics, len(state.partitions))
        read = partitions if partitions is not None else tuple(sorted(state.partitions))
        end_offsets = await _state_end_offsets(admin, read)
    # Right after the state topic's end offsets (the state the batch reads), the log
    # end offsets it is measured against: the latest point's lag is then one moment's,
    # as describe's is, not the state of then against a log of seconds later (the
    # job takes that long). State first, so no window reaches past its log's end.
    offsets = await admin.list_share_partition_offsets([request.group_id])
    check_group(request, offsets.get(request.group_id))
    limit = None
    if request.job is AuditJob.ARCHIVED or request.report is not None:
        limit = await delivery_count_limit(admin, request.group_id)
    dead_letters = _NO_BROKER_DLQ
    if request.dlq_topic is not None:
        dead_letters = await _broker_dead_letters(session, admin, request)
    scope = AuditScope(
        request.group_id,
        _topic_names(topics),
        _selected_topics(request, topics),
        partitions,
        end_offsets,
        request.since_ms,
        request.read_source,
        connector=request.connector,
        source_end_offsets=_source_end_offsets(offsets),
    )
    return ResolvedScope(scope, state_exists, limit, *dead_letters)


async def _topics(admin: ShareGroupAdmin, request: AuditRequest) -> Mapping[str, TopicMetadata]:
    """Every topic (the state topic knows only ids: their names), and the state topic and
    the named ones as a request naming them answers; NotFound (exit 5) for a --topic or
    --dlq-topic that does not exist."""
    client = admin.client
    everything = await client.metadata(None, refresh=True)
    wanted = [*request.topics, SHARE_STATE_TOPIC]
    if request.dlq_topic is not None:
        wanted.append(request.dlq_topic)
    named = await client.metadata(wanted, refresh=True)
    topics = {**everything.topics, **named.topics}
    for topic in (*request.topics, *filter(None, [request.dlq_topic])):
        found = topics.get(topic)
        if found is None or found.error_code != 0:
            raise NotFound(f"topic '{topic}' does not exist")
    return topics


def _topic_names(topics: Mapping[str, TopicMetadata]) -> dict[str, str]:
    """Kafka's base64 topic id -> name, of every topic that has an id."""
    return {
        kafka_uuid(metadata.topic_id): name
        for name, metadata in topics.items()
        if metadata.error_code == 0 and metadata.topic_id != _ZERO_UUID
    }


def _selected_topics(
    request: AuditRequest, topics: Mapping[str, TopicMetadata]
) -> frozenset[str] | None:
    """The ids of --topic's topics; None: every topic of the group."""
    if not request.topics:
        return None
    return frozenset(kafka_uuid(topics[topic].topic_id) for topic in request.topics)


def _state_partitions(
    request: AuditRequest, topics: Mapping[str, TopicMetadata], count: int
) -> tuple[int, ...] | None:
    """With --topic, the state-topic partitions (of count) that can hold the group's
    share-partitions of those topics; None: all of them."""
    if not request.topics:
        return None
    return tuple(
        sorted(
            {
                state_partition_for(
                    SharePartitionKey(request.group_id, topics[topic].topic_id, partition),
                    count,
                )
                for topic in request.topics
                for partition in topics[topic].partitions
            }
        )
    )


async def _state_end_offsets(
    admin: ShareGroupAdmin, partitions: tuple[int, ...]
) -> dict[str, dict[str, int]]:
    """Where the batch stops reading the state topic's partitions, and a follow starts."""
    ends = await admin.log_end_offsets(
        TopicPartition(SHARE_STATE_TOPIC, partition) for partition in partitions
    )
    for tp, error in ends.errors().items():
        raise AuditFailed(f"end offset of {tp} cannot be read: {error}")
    return {SHARE_STATE_TOPIC: {str(tp.partition): offset for tp, offset in ends.offsets.items()}}


def _source_end_offsets(offsets: ShareGroupOffsets) -> dict[tuple[str, int], int]:
    """The log end offset of each (topic, partition) the group's offsets carried."""
    return {
        (each.topic, each.partition): each.end_offset
        for group in offsets.succeeded()
        for each in group.partitions
        if each.end_offset is not None
    }


_NO_BROKER_DLQ: Final[tuple[bool, str | None, tuple[str, ...]]] = (False, None, ())


async def _broker_dead_letters(
    session: Session, admin: ShareGroupAdmin, request: AuditRequest
) -> tuple[bool, str | None, tuple[str, ...]]:
    """For --dlq-topic: the group's copy.record.enable, its DLQ topic if the broker writes
    one itself, and what to tell the operator about it.

    Kafka 4.4 writes a group's dead letters itself when the cluster's share.version is 2
    and the group names a DLQ topic: the audit then back-fills only what that topic
    does not hold (archived before the DLQ was configured, or a write that failed).
    """
    from kshare_cli.admin.group_configs import GroupConfigAdmin
    from kshare_cli.kafka.group_configs import DLQ_COPY_RECORD_ENABLE, DLQ_TOPIC_NAME

    group = request.group_id
    try:
        configs = await GroupConfigAdmin(admin.client).describe(group)
    except Refused as refused:
        note = f"{refused}: the audit cannot tell whether the broker writes the group's DLQ"
        return False, None, (note,)
    copy_entry = configs.get(DLQ_COPY_RECORD_ENABLE)
    copy_record = copy_entry is not None and (copy_entry.value or "").lower() == "true"
    topic_entry = configs.get(DLQ_TOPIC_NAME)
    broker_topic = (topic_entry.value or "").strip() if topic_entry is not None else ""
    if not broker_topic:
        return copy_record, None, ()
    facts = await session.cluster_facts(admin, configs=False)
    lacking = facts.dead_letter_queue_lacking()
    if lacking is not None:
        note = f"group '{group}' names the DLQ topic {broker_topic}, which {lacking}"
        return copy_record, None, (note,)
    note = (
        f"the broker writes group '{group}''s dead letters to {broker_topic} itself "
        f"(share.version {facts.share_version}): only the archived records no DLQ topic "
        "holds are produced (archived before the DLQ was configured, or not written)"
    )
    return copy_record, broker_topic, (note,)


async def check_state_topic(settings: ConnectionSettings, timeout_s: float) -> None:
    """The cluster answers and has a state topic to capture (else exit 3/4, or 5)."""

    session = Session(settings, timeout_s)

    async def work() -> None:
        async with session.admin() as admin:
            named = await admin.client.metadata([SHARE_STATE_TOPIC], refresh=True)
            state = named.topics.get(SHARE_STATE_TOPIC)
            if state is None or state.error_code != 0 or not state.partitions:
                raise NotFound(
                    f"the cluster has no {SHARE_STATE_TOPIC} topic yet: no share group has state"
                )

    await session.bounded(work(), "asking the cluster for the state topic")


def check_group(request: AuditRequest, described: GroupOffsets | GroupFailure | None) -> None:
    """NotFound (exit 5) for what the state topic cannot hold anything of, for this audit.

    A group the cluster does not know as a share group (a consumer group of
    that name, or none) has no state the audit could find: Kafka tombstones a
    deleted group's share-partitions. With ``--topic``, a batch needs the
    group's share-partitions of each topic; ``--follow`` may wait for the
    group to start on one. Other failures (authorization, a coordinator
    moving) are left to the read, which may still succeed.
    """
    group_id = request.group_id
    if isinstance(described, GroupFailure):
        if described.not_found and "is not a share group" in (described.error.message or ""):
            raise NotFound(f"group '{group_id}' is not a share group")
        if described.not_found:
            raise NotFound(str(described))
        return
    if described is None or request.follow or not request.topics:
        return
    held = {each.topic for each in described.partitions}
    for topic in request.topics:
        if topic not in held:
            raise NotFound(
                f"share group '{group_id}' has no share-partitions of topic '{topic}'"
                + (f" (it has {', '.join(sorted(held))})" if held else "")
            )


# --------------------------------------------------------------------------- phase 2


def spark_failure(error: BaseException) -> AuditFailed:
    """One line for a failed Spark job: our own source's or DLQ's error when it is in there."""
    text = str(error)
    if "Failed to find data source: kafka" in text or "KAFKA_DATA_SOURCE_NOT_ENABLED" in text:
        from pyspark import __version__

        return SparkConnectorMissing(SPARK_CONNECTOR_MISSING.format(version=__version__))
    for pattern in (_SOURCE_ERROR, _DEAD_LETTER_ERROR):
        found = pattern.search(text)
        if found:
            return AuditFailed(found.group(1).strip())
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    return AuditFailed(f"the Spark job failed: {first}")


class AuditOutput(Protocol):
    """Where a running audit's answers go: the command's renderer.

    progress is drawn around the batch (it reads Spark's progress from the
    session); result gets the batch's answer; a --follow micro-batch's rows
    go to rows, or, with --dlq-topic, what producing them did to dead_letters.
    """

    def progress(self, spark: SparkSession) -> AbstractContextManager[object]: ...

    def result(self, result: AuditResult) -> None: ...

    def rows(self, job: AuditJob, rows: Sequence[Any]) -> None: ...

    def dead_letters(self, count: DeadLetterCount) -> None: ...


def run_job(
    settings: ConnectionSettings,
    request: AuditRequest,
    resolved: ResolvedScope,
    output: AuditOutput,
) -> None:
    """The audit in a Spark session of its own (``--master``): the batch, its result to
    output, then with --follow the follow until Ctrl-C; a Ctrl-C during the batch cancels
    its Spark jobs and raises KeyboardInterrupt, a failure is one line (AuditFailed)."""
    from kshare_cli.pipeline import lifecycle

    def emit(job: AuditJob, rows: Sequence[Any]) -> None:
        if request.dlq_topic is None:
            output.rows(job, rows)
        else:
            output.dead_letters(produce_follow_dead_letters(rows, settings, request, resolved))

    try:
        with lifecycle.spark_started(request.master) as run:
            result, follow = lifecycle.run_batch(
                run,
                lambda: run_audit(run.spark, settings, request, resolved, emit=emit),
                display=output.progress,
            )
            output.result(result)
            if follow is not None:
                lifecycle.follow_until_interrupted(run, follow)
    except lifecycle.JobFailed as failed:
        raise job_failure(failed.cause, failed.log_dir) from None


def run_audit(
    spark: SparkSession,
    settings: ConnectionSettings,
    request: AuditRequest,
    resolved: ResolvedScope,
    *,
    emit: Emit | None = None,
) -> tuple[AuditResult, AuditFollow | None]:
    """The batch part of the job -- rows, files or dead letters, the report's data -- and,
    with --follow, the follow, primed with what the batch knew, not yet started.

    The result's notes are what the job found wrong in the records (some did not
    decode); which share-partitions' history was pruned, and which of their offsets
    are unknown, is its ``history``, which ``render.audit.history_lines`` words.
    """
    from kshare_cli.pipeline.batch import audit_batch

    if not resolved.state_topic_exists:
        note = f"the cluster has no {SHARE_STATE_TOPIC} topic: no share group has state yet"
        return AuditResult(request.job, request.group_id, notes=(note,)), None
    return audit_batch(spark, batch_audit(settings, request, resolved), emit=emit)


def batch_audit(
    settings: ConnectionSettings, request: AuditRequest, resolved: ResolvedScope
) -> BatchAudit:
    """The pipeline's batch audit of what the command line asked and the cluster said."""
    from kshare_cli.pipeline.batch import BatchAudit

    return BatchAudit(
        job=request.job,
        scope=resolved.scope,
        config=settings.librdkafka_config(),
        report=request.report is not None,
        delivery_limit=resolved.delivery_limit,
        history_dir=request.history_dir,
        output_dir=request.output_dir,
        output_format=request.output_format,
        dead_letters=_dead_letter_target(settings, request, resolved),
        follow=request.follow,
    )


def _dead_letter_target(
    settings: ConnectionSettings, request: AuditRequest, resolved: ResolvedScope
) -> DeadLetterTarget | None:
    """How --dlq-topic writes: Kafka's format, the record with --copy-record or the group's
    copy.record.enable, its headers with --keep-headers; beside the broker's own DLQ."""
    from kshare_cli.pipeline.batch import DeadLetterTarget

    if request.dlq_topic is None:
        return None
    return DeadLetterTarget(
        config=settings.confluent_config(),
        topic=request.dlq_topic,
        group_id=request.group_id,
        delivery_limit=resolved.delivery_limit,
        copy_record=request.copy_record or resolved.copy_record,
        keep_headers=request.keep_headers,
        broker_topic=resolved.broker_dlq_topic,
    )


def report_now() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)


# --------------------------------------------------------------------------- Spark


def job_failure(error: BaseException, log_dir: str | None) -> KshareError:
    """The one line for a failed job, naming Spark's log when the audit started Spark."""
    failure = spark_failure(error)
    if log_dir is not None:
        failure = type(failure)(f"{failure} (Spark's log: {os.path.join(log_dir, SPARK_LOG)})")
    return failure


def capture(
    settings: ConnectionSettings,
    directory: Path,
    groups: tuple[str, ...] | None,
    *,
    master: str,
    until_caught_up: bool,
) -> None:
    """Run the stream that copies the groups' state records into directory
    (``start_capture`` wrote its manifest; groups None: every group) in a Spark session of
    its own, until it has caught up or Ctrl-C; a failure is one line (AuditFailed)."""
    from kshare_cli.pipeline import lifecycle
    from kshare_cli.pipeline.capture import CaptureManifest, capture_query

    def start(spark: SparkSession) -> StreamingQuery:
        return capture_query(
            spark,
            settings.librdkafka_config(),
            directory,
            CaptureManifest(SHARE_STATE_TOPIC, groups),
            until_caught_up=until_caught_up,
        )

    try:
        with lifecycle.spark_started(master) as run:
            lifecycle.stream_until_interrupted(run, lambda: start(run.spark))
    except lifecycle.JobFailed as failed:
        raise job_failure(failed.cause, failed.log_dir) from None


def produce_follow_dead_letters(
    rows: Sequence[object],
    settings: ConnectionSettings,
    request: AuditRequest,
    resolved: ResolvedScope,
) -> DeadLetterCount:
    """A --follow micro-batch's archived records, produced to the dead-letter topic."""
    target = _dead_letter_target(settings, request, resolved)
    assert target is not None
    return target.produce([row for row in rows if isinstance(row, ArchivedRecord)])
