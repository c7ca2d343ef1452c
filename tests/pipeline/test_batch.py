"""A batch audit's steps (`pipeline.batch`) on the small hand-built story of `tests.pipeline.story`:
which frames a job builds, what it collects, where its rows go, what it says about records that
did not decode, and that its cache is released.

The scope reads no source topic (``read_source=False``) and the story's topic has no name for
the timeline (a named topic's log end offsets would be asked of a cluster), so nothing here
needs a broker: only Spark and the records.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kshare_cli.pipeline.batch import (
    BatchAudit,
    DeadLetterTarget,
    GroupState,
    audit_state,
    reasoned,
)
from kshare_cli.pipeline.jobs import AuditScope
from kshare_cli.pipeline.models import ArchivedRecord, AuditJob
from kshare_cli.state.partitioning import kafka_uuid
from tests.pipeline.story import TOPIC, frame, story_rows, time_at

NAMES = {kafka_uuid(TOPIC): "orders"}
DELIVERIES_NOTE = (
    "1 state records of the group could not be decoded; "
    "the deliveries leave them out (kshare audit timeline shows where)"
)
TIMELINE_NOTE = (
    "1 state records of the group could not be decoded; "
    "the state is unchanged across them (record 'corrupt' in the timeline)"
)
# What the story's share-partitions went through (tests/pipeline/test_deliveries.py tells it).
STORY_RANGES = [
    (0, 0, 2, 1, "acknowledged", time_at(2)),
    (0, 3, 3, 2, "archived", time_at(4)),
    (0, 4, 4, 3, "acknowledged", time_at(5)),
    (1, 10, 11, 3, "available", time_at(0)),
]


def _story(spark: SparkSession) -> GroupState:
    return GroupState(frame(spark, story_rows()))


def _cached_rdds(spark: SparkSession) -> int:
    return len(spark.sparkContext._jsc.sc().getRDDStorageInfo())


def _utc(moment: datetime.datetime) -> datetime.datetime:
    return moment.astimezone(datetime.UTC)


def test_a_deliveries_audit_collects_its_ranges_and_counts_what_did_not_decode(
    spark: SparkSession,
) -> None:
    audit = BatchAudit(job=AuditJob.DELIVERIES, scope=AuditScope("g", NAMES, read_source=False))

    result, follow = audit_state(spark, audit, _story(spark))

    assert [
        (
            row.topic,
            row.partition,
            row.first_offset,
            row.last_offset,
            row.max_delivery_count,
            row.final_state,
            row.last_changed,
        )
        for row in result.deliveries
    ] == [("orders", *story[:5], _utc(story[5])) for story in STORY_RANGES]
    # The group's eight records (the undecodable key belongs to no group), one of them
    # truncated; no other job's rows; nothing written; no follow without --follow.
    assert (result.state_records, result.notes) == (8, (DELIVERIES_NOTE,))
    assert (result.timeline, result.archived, result.written, result.dead_letters) == (
        (),
        (),
        None,
        None,
    )
    assert [(each.topic, each.partition) for each in result.history] == [
        ("orders", 0),
        ("orders", 1),
    ]
    assert follow is None


def test_a_report_runs_every_job_and_names_what_did_not_decode_once(
    spark: SparkSession,
) -> None:
    """The report shows all three jobs; the timeline shows where the truncated record is, so
    the deliveries' note about it is not said twice."""
    audit = BatchAudit(
        job=AuditJob.TIMELINE,
        scope=AuditScope("g", read_source=False),
        report=True,
        delivery_limit=5,
    )

    result, _ = audit_state(spark, audit, _story(spark))

    assert result.notes == (TIMELINE_NOTE,)
    assert [(point.partition, point.state_offset, point.record) for point in result.timeline] == [
        (0, 100, "snapshot"),
        (0, 101, "update"),
        (0, 102, "update"),
        (0, 103, "corrupt"),
        (0, 104, "update"),
        (0, 105, "update"),
        (1, 40, "snapshot"),
        (1, 41, "tombstone"),
    ]
    assert len(result.deliveries) == len(STORY_RANGES)
    # Offset 3 was rejected on its second delivery, under the limit of 5: its reason says so.
    assert [
        (record.partition, record.offset, record.delivery_count, record.reason, record.record_found)
        for record in result.archived
    ] == [(0, 3, 2, "rejected", False)]


def test_output_dir_gets_the_jobs_rows_and_nothing_is_collected(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = tmp_path / "rows"
    audit = BatchAudit(
        job=AuditJob.DELIVERIES,
        scope=AuditScope("g", NAMES, read_source=False),
        output_dir=directory,
        output_format="jsonl",
    )

    result, _ = audit_state(spark, audit, _story(spark))

    assert (result.written, result.deliveries) == (str(directory), ())
    written = [
        json.loads(line)
        for part in sorted(directory.glob("part-*.json"))
        for line in part.read_text().splitlines()
    ]
    assert sorted(
        (row["partition"], row["first_offset"], row["last_offset"], row["final_state"])
        for row in written
    ) == [(story[0], story[1], story[2], story[4]) for story in STORY_RANGES]


@pytest.mark.parametrize("job", list(AuditJob))
def test_the_cache_is_released_after_the_audit(spark: SparkSession, job: AuditJob) -> None:
    """The records, the replay and the offset ranges are cached while the jobs read them;
    a long-lived session (a notebook's, or --follow's) must not keep them after."""
    before = _cached_rdds(spark)
    audit = BatchAudit(job=job, scope=AuditScope("g", read_source=False), follow=True)

    _, follow = audit_state(spark, audit, _story(spark), emit=lambda job, rows: None)

    assert follow is not None  # primed from the cached frames before they were released
    assert _cached_rdds(spark) == before


def test_the_follows_archived_rows_get_their_reason_by_kafkas_rule() -> None:
    emitted: list[tuple[AuditJob, list[object]]] = []
    at_limit, rejected = (
        ArchivedRecord(
            group_id="g",
            topic_id="t",
            topic="orders",
            partition=0,
            offset=offset,
            delivery_count=delivery_count,
            archived_at=None,
            record_found=False,
            key=None,
            value=None,
            timestamp=None,
            headers=None,
        )
        for offset, delivery_count in ((7, 5), (8, 1))
    )

    emit = reasoned(lambda job, rows: emitted.append((job, list(rows))), delivery_limit=5)
    emit(AuditJob.ARCHIVED, [at_limit, rejected])
    emit(AuditJob.DELIVERIES, ["a range"])

    assert [(job, [getattr(row, "reason", row) for row in rows]) for job, rows in emitted] == [
        (AuditJob.ARCHIVED, ["delivery_limit", "rejected"]),
        (AuditJob.DELIVERIES, ["a range"]),
    ]


def test_dead_letters_follow_the_target_not_stdout() -> None:
    """With a dead-letter target the rows go there, so none are collected for stdout (the
    report still collects all three)."""
    target = DeadLetterTarget(config={}, topic="dlq", group_id="g", delivery_limit=5)
    audit = BatchAudit(
        job=AuditJob.ARCHIVED, scope=AuditScope("g", read_source=False), dead_letters=target
    )

    assert [audit.collects(job) for job in AuditJob] == [False, False, False]
    report = BatchAudit(
        job=AuditJob.ARCHIVED,
        scope=AuditScope("g", read_source=False),
        dead_letters=target,
        report=True,
    )
    assert [report.collects(job) for job in AuditJob] == [True, True, True]
    assert report.jobs == frozenset(AuditJob)
