"""What ``kshare audit`` does once its arguments are valid: ask the cluster, then run Spark.

Imported only when the command runs. Two phases, so that anything the
cluster can refuse is refused before a JVM starts (seconds, and memory):

1. ``resolve_scope`` (asyncio, the wire client, bounded by ``--timeout``):
   topic names and ids (the state topic knows only ids), the topics and the
   dead-letter topic exist, the state topic's partitions and end offsets --
   the batch reads up to them and ``--follow`` goes on from them -- and, with
   ``--topic``, only the state-topic partitions that can hold the group's
   share-partitions of those topics; the group is a share group the cluster
   knows and, for a batch with ``--topic``, has share-partitions of each
   topic (else Spark would read for a minute to find nothing: exit 5 now);
2. ``run_audit``: the Spark job (``pipeline.jobs``), then stdout rows, files,
   or the dead-letter topic; with ``--report`` all three jobs run, as the
   report shows all three.

Spark failures reach the operator as one line: the error of our Kafka source
when there is one (it names topic and partition), else Spark's first line.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from kshare_cli.admin.inflight import delivery_count_limit
from kshare_cli.admin.models import GroupFailure, GroupOffsets, TopicPartition
from kshare_cli.cli.service import _bounded, open_admin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import ExitCode, KshareError, NotFound
from kshare_cli.pipeline.models import AuditJob, AuditResult, SharePartitionHistory
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, kafka_uuid, state_partition_for
from kshare_cli.state.replay import SharePartitionKey

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kshare_cli.pipeline.follow import AuditFollow, Emit
    from kshare_cli.pipeline.jobs import AuditScope, FileFormat
    from kshare_cli.pipeline.kafka_source import Connector

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


@dataclass(frozen=True, slots=True)
class ResolvedScope:
    """The scope, and whether the cluster has a state topic to read."""

    scope: AuditScope
    state_topic_exists: bool
    # For --dlq-topic: the group's delivery count limit, from which a dead letter's
    # __dlq.errors.message is inferred as Kafka does (None: unknown, no message).
    delivery_limit: int | None = None


# --------------------------------------------------------------------------- phase 1


async def resolve_scope(
    settings: ConnectionSettings, request: AuditRequest, timeout_s: float
) -> ResolvedScope:
    from kshare_cli.pipeline.jobs import AuditScope

    async def work() -> ResolvedScope:
        async with open_admin(settings, timeout_s) as admin:
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
            names = {
                kafka_uuid(metadata.topic_id): name
                for name, metadata in topics.items()
                if metadata.error_code == 0 and metadata.topic_id != _ZERO_UUID
            }
            state = topics.get(SHARE_STATE_TOPIC)
            state_exists = state is not None and state.error_code == 0 and bool(state.partitions)
            partitions: tuple[int, ...] | None = None
            end_offsets: dict[str, dict[str, int]] | None = None
            selected: frozenset[str] | None = None
            if request.topics:
                selected = frozenset(kafka_uuid(topics[topic].topic_id) for topic in request.topics)
            if state is not None and state_exists:
                count = len(state.partitions)
                if request.topics:
                    partitions = tuple(
                        sorted(
                            {
                                state_partition_for(
                                    SharePartitionKey(
                                        request.group_id, topics[topic].topic_id, partition
                                    ),
                                    count,
                                )
                                for topic in request.topics
                                for partition in topics[topic].partitions
                            }
                        )
                    )
                read = partitions if partitions is not None else tuple(sorted(state.partitions))
                ends = await admin.log_end_offsets(
                    TopicPartition(SHARE_STATE_TOPIC, partition) for partition in read
                )
                for tp, error in ends.errors().items():
                    raise AuditFailed(f"end offset of {tp} cannot be read: {error}")
                end_offsets = {
                    SHARE_STATE_TOPIC: {
                        str(tp.partition): offset for tp, offset in ends.offsets.items()
                    }
                }
            # Right after the state topic's end offsets (the state the batch reads), the log
            # end offsets it is measured against: the latest point's lag is then one moment's,
            # as describe's is, not the state of then against a log of seconds later (the
            # job takes that long). State first, so no window reaches past its log's end.
            offsets = await admin.list_share_partition_offsets([request.group_id])
            check_group(request, offsets.get(request.group_id))
            source_ends = {
                (each.topic, each.partition): each.end_offset
                for group in offsets.succeeded()
                for each in group.partitions
                if each.end_offset is not None
            }
            limit = None
            if request.dlq_topic is not None:
                limit = await delivery_count_limit(admin, request.group_id)
            return ResolvedScope(
                AuditScope(
                    request.group_id,
                    names,
                    selected,
                    partitions,
                    end_offsets,
                    request.since_ms,
                    request.read_source,
                    connector=request.connector,
                    source_end_offsets=source_ends,
                ),
                state_exists,
                limit,
            )

    return await _bounded(work(), timeout_s, "asking the cluster about the audit")


async def check_state_topic(settings: ConnectionSettings, timeout_s: float) -> None:
    """The cluster answers and has a state topic to capture (else exit 3/4, or 5)."""

    async def work() -> None:
        async with open_admin(settings, timeout_s) as admin:
            named = await admin.client.metadata([SHARE_STATE_TOPIC], refresh=True)
            state = named.topics.get(SHARE_STATE_TOPIC)
            if state is None or state.error_code != 0 or not state.partitions:
                raise NotFound(
                    f"the cluster has no {SHARE_STATE_TOPIC} topic yet: no share group has state"
                )

    await _bounded(work(), timeout_s, "asking the cluster for the state topic")


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


def run_audit(
    spark: SparkSession,
    settings: ConnectionSettings,
    request: AuditRequest,
    resolved: ResolvedScope,
    *,
    emit: Emit | None = None,
) -> tuple[AuditResult, AuditFollow | None]:
    """The batch part of the job -- rows, files or dead letters, the report's data -- and,
    with --follow, the follow, primed with what the batch knew, not yet started."""
    from pyspark import StorageLevel

    from kshare_cli.pipeline import jobs
    from kshare_cli.pipeline.dead_letters import produce_dead_letters
    from kshare_cli.pipeline.deliveries import deliveries
    from kshare_cli.pipeline.follow import AuditFollow
    from kshare_cli.pipeline.timeline import replay_states

    scope = resolved.scope
    config = settings.librdkafka_config()
    if not resolved.state_topic_exists:
        note = f"the cluster has no {SHARE_STATE_TOPIC} topic: no share group has state yet"
        return AuditResult(request.job, request.group_id, notes=(note,)), None
    disk = StorageLevel.MEMORY_AND_DISK
    group_ids, topic_ids = (scope.group_id,), scope.topics
    gaps: Mapping[int, int] = {}
    if request.history_dir is not None:
        from kshare_cli.pipeline.capture import history_records

        assert scope.state_end_offsets is not None
        ends = {int(p): end for p, end in scope.state_end_offsets[scope.state_topic].items()}
        read = history_records(
            spark,
            config,
            request.history_dir,
            state_topic=scope.state_topic,
            partitions=sorted(ends),
            end_offsets=ends,
            connector=scope.connector,
        )
        state, gaps = read.records, read.gaps
    else:
        state = jobs.extract_state_records(spark, config, scope)
    records = jobs.group_records(state, scope).persist(disk)
    cached: list[DataFrame] = [records]
    try:
        state_records = records.count()
        history = jobs.collect_history(jobs.history_frame(spark, scope, records, gaps))
        notes = [note for note in [history_note(history, request.history_dir)] if note]
        want = set(AuditJob) if request.report is not None else {request.job}
        frames: dict[AuditJob, DataFrame] = {}
        replayed = None
        ranges = None
        if AuditJob.TIMELINE in want:
            replayed = replay_states(
                records, group_ids=group_ids, topic_ids=topic_ids, with_batches=request.follow
            )
            replayed = replayed.persist(disk)
            cached.append(replayed)
            corrupt = replayed.filter("error is not null").count()
            if corrupt:
                notes.append(
                    f"{corrupt} state records of the group could not be decoded; "
                    "the state is unchanged across them (record 'corrupt' in the timeline)"
                )
            frames[AuditJob.TIMELINE] = jobs.timeline_frame(
                spark, config, scope, records, replayed=replayed
            )
        if AuditJob.DELIVERIES in want or AuditJob.ARCHIVED in want:
            skipped = spark.sparkContext.accumulator(0)
            ranges = deliveries(
                records,
                group_ids=group_ids,
                topic_ids=topic_ids,
                since_ms=scope.since_ms,
                corrupt=skipped,
                gaps=gaps,
            ).persist(disk)
            cached.append(ranges)
            ranges.count()  # each share-partition's task once: the cache, and the count
            if skipped.value and AuditJob.TIMELINE not in want:
                notes.append(
                    f"{skipped.value} state records of the group could not be decoded; "
                    "the deliveries leave them out (kshare audit timeline shows where)"
                )
            frames[AuditJob.DELIVERIES] = jobs.deliveries_frame(
                spark, scope, records, ranges=ranges
            )
        if AuditJob.ARCHIVED in want:
            assert ranges is not None
            frames[AuditJob.ARCHIVED] = jobs.archived_frame(spark, config, scope, ranges)

        frame = frames[request.job]
        written = None
        dead_letters = None
        if request.output_dir is not None:
            written = jobs.write_directory(frame, request.output_dir, request.output_format)
        elif request.dlq_topic is not None:
            dead_letters = produce_dead_letters(
                (jobs.to_archived(row) for row in frame.toLocalIterator()),
                settings.confluent_config(),
                request.dlq_topic,
                request.group_id,
                delivery_limit=resolved.delivery_limit,
            )
        to_stdout = request.output_dir is None and request.dlq_topic is None

        def wanted(job: AuditJob) -> bool:
            return job in frames and (
                request.report is not None or (to_stdout and job is request.job)
            )

        result = AuditResult(
            request.job,
            request.group_id,
            timeline=jobs.collect_timeline(frames[AuditJob.TIMELINE])
            if wanted(AuditJob.TIMELINE)
            else (),
            deliveries=jobs.collect_deliveries(frames[AuditJob.DELIVERIES])
            if wanted(AuditJob.DELIVERIES)
            else (),
            archived=jobs.collect_archived(frames[AuditJob.ARCHIVED])
            if wanted(AuditJob.ARCHIVED)
            else (),
            notes=tuple(notes),
            written=written,
            dead_letters=dead_letters,
            state_records=state_records,
            history=history,
        )
        follow = None
        if request.follow and emit is not None:
            follow = AuditFollow(spark, config, scope, request.job, emit)
            if request.job is AuditJob.TIMELINE:
                assert replayed is not None
                follow.remember_states(replayed)
            else:
                assert ranges is not None
                follow.remember_ranges(
                    jobs.collect_deliveries(jobs.deliveries_frame(spark, _all_time(scope), records))
                )
                follow.remember_start_offsets(records)
        return result, follow
    finally:
        for frame_ in cached:
            frame_.unpersist()


def history_note(history: Sequence[SharePartitionHistory], history_dir: Path | None) -> str | None:
    """One stderr line naming the share-partitions whose history the audit does not have."""
    from kshare_cli.pipeline.history import HISTORY_GAP
    from kshare_cli.render.audit import iso_time

    missing = [each for each in history if not each.history_complete]
    if not missing:
        return None
    names = ", ".join(
        f"{each.topic or each.topic_id}-{each.partition} from {iso_time(each.history_from)}"
        for each in missing
    )
    why = (
        f"the state topic was pruned between the capture in {history_dir} and the live log"
        if any(each.history_missing == HISTORY_GAP for each in missing)
        else "Kafka pruned the state topic's earlier records"
    )
    return (
        f"history incomplete for {len(missing)} share-partitions ({names}): {why}; "
        "what happened before is shown with time unknown (kshare audit capture keeps it all)"
    )


def _all_time(scope: AuditScope) -> AuditScope:
    return dataclasses.replace(scope, since_ms=None)


def report_now() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)
