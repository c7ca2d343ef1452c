"""One batch audit of a group, as typed steps over the jobs of `jobs`.

* ``extract_state``: the state topic's records up to where the cluster said
  it ended, from Kafka, or from a capture and then Kafka (``--history``);
* ``audit_state``: the group's records, kept in Spark's cache while the jobs
  read them, then
  * ``transform``: the frames the asked jobs need -- the replay (timeline),
    the offset ranges (deliveries, and the archived records read from them)
    -- and what the records held that did not decode, as notes;
  * ``load``: the asked job's rows as files, or as dead letters produced to
    a topic;
  * ``collect``: the rows stdout or the HTML report shows, as models;
  * ``prime_follow``: with ``--follow``, the stream primed with what the
    batch knew, not yet started.

The steps take a ``BatchAudit``, which the service builds from the command
line and what the cluster said; nothing here talks to the cluster except
through Spark's reads and the dead-letter producer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.pipeline.models import (
    ArchivedRecord,
    AuditJob,
    AuditResult,
    DeadLetterCount,
    DeliveryRange,
    TimelinePoint,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kshare_cli.pipeline.follow import AuditFollow, Emit
    from kshare_cli.pipeline.jobs import AuditScope, FileFormat

__all__ = [
    "BatchAudit",
    "Collected",
    "DeadLetterTarget",
    "GroupState",
    "Transformed",
    "audit_batch",
    "audit_state",
    "collect",
    "extract_state",
    "load",
    "prime_follow",
    "reasoned",
    "transform",
    "undecoded_in_deliveries",
    "undecoded_in_timeline",
]

_EVERY_JOB: Final = frozenset(AuditJob)


@dataclass(frozen=True, slots=True)
class DeadLetterTarget:
    """Where ``--dlq-topic`` produces and how: Kafka's format, or with the record
    (``--copy-record``, or the group's copy.record.enable) and its headers
    (``--keep-headers``), beside the group's own broker DLQ topic when there is one."""

    config: Mapping[str, Any]
    topic: str
    group_id: str
    delivery_limit: int | None
    copy_record: bool = False
    keep_headers: bool = False
    broker_topic: str | None = None

    def produce(self, records: Iterable[ArchivedRecord]) -> DeadLetterCount:
        """The records' dead letters that no DLQ topic holds yet, produced."""
        from kshare_cli.pipeline.dead_letters import produce_dead_letters

        return produce_dead_letters(
            records,
            self.config,
            self.topic,
            self.group_id,
            delivery_limit=self.delivery_limit,
            copy_record=self.copy_record,
            keep_headers=self.keep_headers,
            broker_topic=self.broker_topic,
        )


@dataclass(frozen=True, slots=True)
class BatchAudit:
    """What one batch audit runs: the job, over the scope the cluster resolved, read with
    config (librdkafka's names); report runs and collects all three jobs, as the HTML report
    shows all three. delivery_limit is the group's, from which an archived record's reason
    is inferred as Kafka does (None: unknown). The rows go to output_dir as files, or to
    dead_letters, or (neither) are collected for stdout."""

    job: AuditJob
    scope: AuditScope
    config: Mapping[str, str] = field(default_factory=dict)
    report: bool = False
    delivery_limit: int | None = None
    history_dir: Path | None = None
    output_dir: Path | None = None
    output_format: FileFormat = "parquet"
    dead_letters: DeadLetterTarget | None = None
    follow: bool = False

    @property
    def jobs(self) -> frozenset[AuditJob]:
        """The jobs whose frames are built."""
        return _EVERY_JOB if self.report else frozenset({self.job})

    def collects(self, job: AuditJob) -> bool:
        """Whether job's rows are collected: for the report, or for stdout."""
        to_stdout = self.output_dir is None and self.dead_letters is None
        return self.report or (to_stdout and job is self.job)


@dataclass(frozen=True, slots=True)
class GroupState:
    """State-topic records as the Kafka source yields them, and per state-topic partition
    where a capture's records stop short of the next ones it kept (``capture.history_records``;
    empty without a capture). whole_state_partitions: each input partition of records holds
    every record of the state-topic partitions it reads (the audit's own read of the topic,
    not a capture's files and the topic after them), so the per-share-partition passes need
    no exchange (`state_records.per_share_partition`)."""

    records: DataFrame
    gaps: Mapping[int, int] = field(default_factory=dict)
    whole_state_partitions: bool = False


@dataclass(frozen=True, slots=True)
class Transformed:
    """The frames of the jobs built, with the cached replay and offset ranges they came
    from (the follow starts from them), and notes on records that did not decode."""

    frames: Mapping[AuditJob, DataFrame]
    replayed: DataFrame | None = None
    ranges: DataFrame | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Collected:
    """The rows collected for stdout or the report; empty for a job not collected."""

    timeline: tuple[TimelinePoint, ...] = ()
    deliveries: tuple[DeliveryRange, ...] = ()
    archived: tuple[ArchivedRecord, ...] = ()


Keep = Callable[["DataFrame"], "DataFrame"]


# --------------------------------------------------------------------------- the run


def audit_batch(
    spark: SparkSession, audit: BatchAudit, *, emit: Emit | None = None
) -> tuple[AuditResult, AuditFollow | None]:
    """The batch audit's result and, with ``follow`` and emit, the follow, not yet started."""
    return audit_state(spark, audit, extract_state(spark, audit), emit=emit)


def extract_state(spark: SparkSession, audit: BatchAudit) -> GroupState:
    """The state topic's records that can hold the group's state: from Kafka, or the
    capture's and then Kafka's from where the capture ended (``--history``)."""
    from kshare_cli.pipeline import jobs

    scope = audit.scope
    if audit.history_dir is None:
        return GroupState(
            jobs.extract_state_records(spark, audit.config, scope), whole_state_partitions=True
        )
    from kshare_cli.pipeline.capture import history_records

    assert scope.state_end_offsets is not None
    ends = {int(p): end for p, end in scope.state_end_offsets[scope.state_topic].items()}
    read = history_records(
        spark,
        audit.config,
        audit.history_dir,
        state_topic=scope.state_topic,
        partitions=sorted(ends),
        end_offsets=ends,
        connector=scope.connector,
    )
    return GroupState(read.records, read.gaps)


def audit_state(
    spark: SparkSession, audit: BatchAudit, state: GroupState, *, emit: Emit | None = None
) -> tuple[AuditResult, AuditFollow | None]:
    """The audit of the group's records among state's: transformed, loaded, collected; the
    frames the jobs share are cached while they run, and released after."""
    from kshare_cli.pipeline import jobs

    with _cached() as keep:
        records = keep(jobs.group_records(state.records, audit.scope))
        state_records = records.count()
        # Filtered and cached, the records keep their input partitions.
        group = dataclasses.replace(state, records=records)
        history = jobs.collect_history(
            jobs.history_frame(
                spark,
                audit.scope,
                records,
                state.gaps,
                whole_state_partitions=state.whole_state_partitions,
            )
        )
        transformed = transform(spark, audit, group, keep)
        written, dead_letters = load(transformed.frames[audit.job], audit)
        rows = collect(audit, transformed.frames)
        result = AuditResult(
            audit.job,
            audit.scope.group_id,
            timeline=rows.timeline,
            deliveries=rows.deliveries,
            archived=rows.archived,
            notes=transformed.notes,
            written=written,
            dead_letters=dead_letters,
            state_records=state_records,
            history=history,
        )
        follow = None
        if audit.follow and emit is not None:
            follow = prime_follow(spark, audit, records, transformed, emit)
        return result, follow


@contextmanager
def _cached() -> Iterator[Keep]:
    """A function that persists a frame (memory, then disk) until the block ends."""
    from pyspark import StorageLevel

    kept: list[DataFrame] = []

    def keep(frame: DataFrame) -> DataFrame:
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        kept.append(frame)
        return frame

    try:
        yield keep
    finally:
        for frame in kept:
            frame.unpersist()


# --------------------------------------------------------------------------- transform


def transform(spark: SparkSession, audit: BatchAudit, group: GroupState, keep: Keep) -> Transformed:
    """The frames of audit's jobs from the group's (cached) records; the replay and the
    offset ranges are cached through keep, as more than one job and the follow read them."""
    from kshare_cli.pipeline import jobs
    from kshare_cli.pipeline.timeline import replay_states

    scope, wanted = audit.scope, audit.jobs
    frames: dict[AuditJob, DataFrame] = {}
    notes: list[str] = []
    replayed = None
    if AuditJob.TIMELINE in wanted:
        replayed = keep(
            replay_states(
                group.records,
                **jobs.scope_filters(scope),
                with_batches=audit.follow,
                whole_state_partitions=group.whole_state_partitions,
            )
        )
        notes.extend(undecoded_in_timeline(replayed))
        frames[AuditJob.TIMELINE] = jobs.timeline_frame(
            spark, audit.config, scope, group.records, replayed=replayed
        )
    ranges = None
    if AuditJob.DELIVERIES in wanted or AuditJob.ARCHIVED in wanted:
        ranges, skipped = _offset_ranges(spark, scope, group, keep)
        if AuditJob.TIMELINE not in wanted:
            notes.extend(undecoded_in_deliveries(skipped))
        frames[AuditJob.DELIVERIES] = jobs.deliveries_frame(
            spark, scope, group.records, ranges=ranges
        )
    if AuditJob.ARCHIVED in wanted:
        assert ranges is not None
        frames[AuditJob.ARCHIVED] = jobs.archived_frame(spark, audit.config, scope, ranges)
    return Transformed(frames, replayed, ranges, tuple(notes))


def _offset_ranges(
    spark: SparkSession, scope: AuditScope, group: GroupState, keep: Keep
) -> tuple[DataFrame, int]:
    """The cached `deliveries.deliveries` ranges of the group, since scope.since, and how
    many of its records did not decode."""
    from kshare_cli.pipeline import jobs
    from kshare_cli.pipeline.deliveries import deliveries

    skipped = spark.sparkContext.accumulator(0)
    ranges = keep(
        deliveries(
            group.records,
            **jobs.scope_filters(scope),
            since_ms=scope.since_ms,
            corrupt=skipped,
            gaps=group.gaps,
            whole_state_partitions=group.whole_state_partitions,
        )
    )
    ranges.count()  # each share-partition's task once: the cache, and the count
    return ranges, skipped.value


def undecoded_in_timeline(replayed: DataFrame) -> tuple[str, ...]:
    """The note on the replayed records that did not decode, if any did not."""
    corrupt = replayed.filter("error is not null").count()
    if not corrupt:
        return ()
    return (
        f"{corrupt} state records of the group could not be decoded; "
        "the state is unchanged across them (record 'corrupt' in the timeline)",
    )


def undecoded_in_deliveries(skipped: int) -> tuple[str, ...]:
    """The note on the records the offset ranges left out, if any (when no timeline ran to
    show where they are)."""
    if not skipped:
        return ()
    return (
        f"{skipped} state records of the group could not be decoded; "
        "the deliveries leave them out (kshare audit timeline shows where)",
    )


# --------------------------------------------------------------------------- load, collect


def load(frame: DataFrame, audit: BatchAudit) -> tuple[str | None, DeadLetterCount | None]:
    """The job's rows written as files (where they went), or produced as dead letters (what
    was produced); neither when they go to stdout."""
    from kshare_cli.pipeline import jobs
    from kshare_cli.pipeline.dead_letters import with_reasons

    if audit.output_dir is not None:
        return jobs.write_directory(frame, audit.output_dir, audit.output_format), None
    if audit.dead_letters is not None:
        archived = (jobs.to_archived(row) for row in frame.toLocalIterator())
        return None, audit.dead_letters.produce(with_reasons(archived, audit.delivery_limit))
    return None, None


def collect(audit: BatchAudit, frames: Mapping[AuditJob, DataFrame]) -> Collected:
    """The rows of the jobs audit collects, as models; archived records with their reason."""
    from kshare_cli.pipeline import jobs
    from kshare_cli.pipeline.dead_letters import with_reasons

    def wanted(job: AuditJob) -> bool:
        return job in frames and audit.collects(job)

    return Collected(
        timeline=jobs.collect_timeline(frames[AuditJob.TIMELINE])
        if wanted(AuditJob.TIMELINE)
        else (),
        deliveries=jobs.collect_deliveries(frames[AuditJob.DELIVERIES])
        if wanted(AuditJob.DELIVERIES)
        else (),
        archived=with_reasons(
            jobs.collect_archived(frames[AuditJob.ARCHIVED]), audit.delivery_limit
        )
        if wanted(AuditJob.ARCHIVED)
        else (),
    )


# --------------------------------------------------------------------------- follow


def prime_follow(
    spark: SparkSession,
    audit: BatchAudit,
    records: DataFrame,
    transformed: Transformed,
    emit: Emit,
) -> AuditFollow:
    """The follow of audit's job, knowing what the batch knew: each share-partition's last
    state (timeline), or every offset range's outcome of all time and the start offsets
    (deliveries, archived); not yet started."""
    from kshare_cli.pipeline import jobs
    from kshare_cli.pipeline.follow import AuditFollow

    follow = AuditFollow(
        spark, audit.config, audit.scope, audit.job, reasoned(emit, audit.delivery_limit)
    )
    if audit.job is AuditJob.TIMELINE:
        assert transformed.replayed is not None
        follow.remember_states(transformed.replayed)
        return follow
    assert transformed.ranges is not None
    all_time = dataclasses.replace(audit.scope, since_ms=None)
    follow.remember_ranges(jobs.collect_deliveries(jobs.deliveries_frame(spark, all_time, records)))
    follow.remember_start_offsets(records)
    return follow


def reasoned(emit: Emit, delivery_limit: int | None) -> Emit:
    """emit, given the follow's archived records with their reasons."""
    from kshare_cli.pipeline.dead_letters import with_reasons

    def emit_reasoned(job: AuditJob, rows: Sequence[object]) -> None:
        if job is AuditJob.ARCHIVED:
            archived = [row for row in rows if isinstance(row, ArchivedRecord)]
            rows = with_reasons(archived, delivery_limit)
        emit(job, rows)

    return emit_reasoned
