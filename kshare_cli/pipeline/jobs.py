"""The audit jobs -- timeline, deliveries, archived -- each as extract / transform / load.

* Extract: the group's records of `__share_group_state` through the
  "kshare-kafka" source (only the state-topic partitions that can hold the
  group's share-partitions, when the topics are known), and the source
  topics' records and watermarks where a job needs them.
* Transform: the pure DataFrame functions of `state_records` (decode),
  `timeline` (the one replay, lag), `deliveries`, `archived` and `history_coverage`;
  nothing here re-implements them.
* Load: rows collected into `models` for stdout and the HTML report, files
  (Parquet or JSON lines) in a directory, or records produced to a
  dead-letter topic (`dead_letters`, Kafka's own DLQ format).

Which source offsets a job reads is decided on the driver from small
aggregates of the state (one row per share-partition), so a timeline reads
the source topic only from the lowest start offset it shows, and the
archived job only the offset span that holds archived records.

`follow.AuditFollow` keeps a job running over a stream of the state topic,
with the functions here.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from kshare_cli.pipeline.archived import archived_offsets, archived_records
from kshare_cli.pipeline.deliveries import deliveries
from kshare_cli.pipeline.history_coverage import state_history
from kshare_cli.pipeline.kafka_source import (
    Connector,
    KafkaReadOptions,
    Offsets,
    read_kafka,
    watermark_offsets,
)
from kshare_cli.pipeline.models import (
    ArchivedRecord,
    DeliveryRange,
    SharePartitionHistory,
    TimelinePoint,
)
from kshare_cli.pipeline.state_records import TOPIC_NAMES_SCHEMA, state_records_of, with_topic_names
from kshare_cli.pipeline.timeline import SOURCE_OFFSETS_SCHEMA, replay_states, timeline
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

__all__ = [
    "AuditScope",
    "FileFormat",
    "archived_frame",
    "collect_archived",
    "collect_history",
    "history_frame",
    "collect_deliveries",
    "collect_timeline",
    "group_records",
    "scope_filters",
    "state_read",
    "topic_names_frame",
    "deliveries_frame",
    "extract_state_records",
    "timeline_frame",
    "to_archived",
    "to_delivery",
    "to_timeline_point",
    "write_directory",
]

FileFormat = Literal["parquet", "jsonl"]


@dataclass(frozen=True, slots=True)
class AuditScope:
    """What an audit reads, resolved from the cluster before Spark starts.

    topic_names maps Kafka's base64 topic ids to names (the state topic knows
    only ids); topics restricts the audit to some topic ids (None: every
    topic of the group). state_partitions are the state-topic partitions to
    read (None: all); state_end_offsets where a batch read stops and a follow
    starts (None: the end at planning time). since keeps what happened at or
    after that instant (UTC milliseconds). read_source False never reads the
    source topics: timeline lags only for the latest point, archived rows
    without their records. source_end_offsets are the log end offsets of
    (topic, partition) read just after state_end_offsets, so the latest
    point's lag is one moment's (partitions not in it are asked when the job
    runs). connector chooses who reads Kafka: kshare's own
    source (confluent-kafka, nothing to download) or Spark's "kafka" format
    (for a cluster that already has the JVM connector and its settings).
    """

    group_id: str
    topic_names: Mapping[str, str] = field(default_factory=dict)
    topics: frozenset[str] | None = None
    state_partitions: tuple[int, ...] | None = None
    state_end_offsets: Offsets | None = None
    since_ms: int | None = None
    read_source: bool = True
    state_topic: str = SHARE_STATE_TOPIC
    connector: Connector = "kshare"
    source_end_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @property
    def since(self) -> datetime.datetime | None:
        if self.since_ms is None:
            return None
        return datetime.datetime.fromtimestamp(self.since_ms / 1000, tz=datetime.UTC)


# --------------------------------------------------------------------------- extract


def state_read(
    config: Mapping[str, str], scope: AuditScope, *, start: Offsets | None = None
) -> KafkaReadOptions:
    """The read of the scope's state-topic partitions: from start (else the earliest) to
    scope.state_end_offsets (else the latest)."""
    partitions = scope.state_partitions
    return KafkaReadOptions(
        config=config,
        topics=() if partitions is not None else (scope.state_topic,),
        assign=None if partitions is None else {scope.state_topic: partitions},
        starting_offsets="earliest" if start is None else start,
        ending_offsets=scope.state_end_offsets or "latest",
        # The share coordinator deletes records it no longer needs: what is left is the log.
        fail_on_data_loss=False,
    )


_WHOLE_PARTITION: Final = 2**62
"""Offsets per input partition of the audit's state read: more than any partition holds."""


def extract_state_records(
    spark: SparkSession, config: Mapping[str, str], scope: AuditScope
) -> DataFrame:
    """The state topic's records (the Kafka source's columns) that can hold the group's state,
    each state-topic partition read whole by one task: the per-share-partition passes then
    need no exchange (`state_records.per_share_partition`), which cost the JVM more than
    the reads' split saved."""
    whole = dataclasses.replace(
        state_read(config, scope), max_records_per_partition=_WHOLE_PARTITION
    )
    return read_kafka(spark, whole, connector=scope.connector)


def group_records(records: DataFrame, scope: AuditScope) -> DataFrame:
    """The group's state records (of scope.topics only, when given), undecoded."""
    return state_records_of(records, **scope_filters(scope))


def scope_filters(scope: AuditScope) -> dict[str, Any]:
    """The group and topic filters of the transforms, as keyword arguments."""
    return {"group_ids": (scope.group_id,), "topic_ids": scope.topics}


def topic_names_frame(spark: SparkSession, scope: AuditScope) -> DataFrame:
    """TOPIC_NAMES_SCHEMA rows of the scope's topic names."""
    return spark.createDataFrame(sorted(scope.topic_names.items()), TOPIC_NAMES_SCHEMA)


def _source_read(
    config: Mapping[str, str], spans: Mapping[tuple[str, int], tuple[int, int]]
) -> KafkaReadOptions:
    """A read of [start, end) of each (topic, partition); records gone are skipped, not fatal."""
    assign: dict[str, list[int]] = {}
    starting: Offsets = {}
    ending: Offsets = {}
    for (topic, partition), (start, end) in sorted(spans.items()):
        assign.setdefault(topic, []).append(partition)
        starting.setdefault(topic, {})[str(partition)] = start
        ending.setdefault(topic, {})[str(partition)] = end
    return KafkaReadOptions(
        config=config,
        assign={topic: tuple(partitions) for topic, partitions in assign.items()},
        starting_offsets=starting,
        ending_offsets=ending,
        fail_on_data_loss=False,
    )


# --------------------------------------------------------------------------- jobs


def timeline_frame(
    spark: SparkSession,
    config: Mapping[str, str],
    scope: AuditScope,
    records: DataFrame,
    *,
    replayed: DataFrame | None = None,
) -> DataFrame:
    """TIMELINE_SCHEMA rows of the group, since scope.since.

    The source topic is read from the lowest start offset the shown rows
    have (lower offsets cannot change a log end offset that the start offset
    already bounds) to its end as scope.source_end_offsets says (else as it
    is now); see TIMELINE_SCHEMA for how a row's log end offset is dated.
    replayed lets a caller pass a cached replay.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    if replayed is None:
        replayed = replay_states(records, **scope_filters(scope))
    shown = (
        replayed
        if scope.since is None
        else replayed.filter(F.col("state_timestamp") >= scope.since)
    )
    lowest = (
        shown.filter(F.col("has_state"))
        .groupBy("topic_id", "partition")
        .agg(F.min(F.when(F.col("start_offset") >= 0, F.col("start_offset"))).alias("lowest"))
        .collect()
    )
    partitions: dict[tuple[str, int], int | None] = {}
    for row in lowest:
        topic = scope.topic_names.get(row["topic_id"])
        if topic is not None:
            partitions[(topic, int(row["partition"]))] = row["lowest"]
    marks = watermark_offsets(config, sorted(partitions)) if partitions else {}
    offsets_rows: list[tuple[str, int, int, int | None]] = []
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    for key, lowest_start in sorted(partitions.items()):
        low, high = marks[key]
        high = scope.source_end_offsets.get(key, high)
        low = min(low, high)
        first_read = None
        if scope.read_source and lowest_start is not None:
            first_read = min(max(low, lowest_start), high)
            if first_read < high:
                spans[key] = (first_read, high)
        offsets_rows.append((key[0], key[1], high, first_read))
    source_offsets = spark.createDataFrame(offsets_rows, SOURCE_OFFSETS_SCHEMA)
    positions = None
    if spans:
        positions = read_kafka(
            spark, _source_read(config, spans), connector=scope.connector
        ).select("topic", "partition", "offset", "timestamp")
    elif scope.read_source:
        positions = spark.createDataFrame(
            [], "topic string, partition int, offset long, timestamp timestamp"
        )
    rows = timeline(
        replayed,
        topic_names_frame(spark, scope),
        source_offsets=source_offsets,
        source_positions=positions,
    )
    if scope.since is not None:
        rows = rows.filter(F.col("time") >= scope.since)
    return rows


def deliveries_frame(
    spark: SparkSession,
    scope: AuditScope,
    records: DataFrame,
    *,
    ranges: DataFrame | None = None,
) -> DataFrame:
    """DELIVERIES_SCHEMA rows with the topic name; since: outcomes reached at or after it.

    ranges lets a caller pass a cached `deliveries.deliveries` of the records
    (with the same since).
    """
    if ranges is None:
        ranges = deliveries(records, **scope_filters(scope), since_ms=scope.since_ms)
    return with_topic_names(ranges, topic_names_frame(spark, scope))


def archived_frame(
    spark: SparkSession,
    config: Mapping[str, str],
    scope: AuditScope,
    ranges: DataFrame,
) -> DataFrame:
    """ARCHIVED_SCHEMA rows from `deliveries` ranges (without topic names).

    The source topic is read only over the span of offsets that hold
    archived records, per partition; offsets that are gone are reported
    without their record.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    offsets = archived_offsets(ranges)
    if scope.since is not None:
        offsets = offsets.filter(
            F.coalesce(F.col("archived_at"), F.col("archiving_at")) >= scope.since
        )
    source = None
    if scope.read_source:
        spans: dict[tuple[str, int], tuple[int, int]] = {}
        for row in (
            offsets.groupBy("topic_id", "partition")
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last"))
            .collect()
        ):
            topic = scope.topic_names.get(row["topic_id"])
            if topic is not None:
                spans[(topic, int(row["partition"]))] = (int(row["first"]), int(row["last"]) + 1)
        if spans:
            source = read_kafka(spark, _source_read(config, spans), connector=scope.connector)
    return archived_records(offsets, topic_names_frame(spark, scope), source)


# --------------------------------------------------------------------------- collect


def _utc(value: datetime.datetime | None) -> datetime.datetime | None:
    """collect() gives naive datetimes in the Python process's zone; make them UTC instants."""
    return None if value is None else value.astimezone(datetime.UTC)


def to_timeline_point(row: Row) -> TimelinePoint:
    values = row.asDict()
    values["time"] = _utc(values["time"])
    return TimelinePoint(**values)


def to_delivery(row: Row) -> DeliveryRange:
    values = row.asDict()
    values["last_changed"] = _utc(values["last_changed"])
    values["archiving_at"] = _utc(values["archiving_at"])
    return DeliveryRange(**values)


def to_archived(row: Row) -> ArchivedRecord:
    values = row.asDict()
    headers = values.pop("headers")
    values.pop("timestampType", None)
    return ArchivedRecord(
        **{
            **values,
            "archived_at": _utc(values["archived_at"]),
            "archiving_at": _utc(values["archiving_at"]),
            "timestamp": _utc(values["timestamp"]),
            "key": None if values["key"] is None else bytes(values["key"]),
            "value": None if values["value"] is None else bytes(values["value"]),
            "headers": None
            if headers is None
            else tuple(
                (header["key"], None if header["value"] is None else bytes(header["value"]))
                for header in headers
            ),
        }
    )


def collect_timeline(rows: DataFrame) -> tuple[TimelinePoint, ...]:
    ordered = rows.orderBy("topic", "topic_id", "partition", "state_partition", "state_offset")
    return tuple(to_timeline_point(row) for row in ordered.collect())


def collect_deliveries(rows: DataFrame) -> tuple[DeliveryRange, ...]:
    ordered = rows.orderBy("topic", "topic_id", "partition", "first_offset")
    return tuple(to_delivery(row) for row in ordered.collect())


def collect_archived(rows: DataFrame) -> tuple[ArchivedRecord, ...]:
    ordered = rows.orderBy("topic", "topic_id", "partition", "offset")
    return tuple(to_archived(row) for row in ordered.collect())


def history_frame(
    spark: SparkSession,
    scope: AuditScope,
    records: DataFrame,
    gaps: Mapping[int, int],
    *,
    whole_state_partitions: bool = False,
) -> DataFrame:
    """`history_coverage.state_history` of the group's records, with topic names."""
    history = state_history(
        records,
        **scope_filters(scope),
        gaps=gaps,
        whole_state_partitions=whole_state_partitions,
    )
    return with_topic_names(history, topic_names_frame(spark, scope))


def collect_history(rows: DataFrame) -> tuple[SharePartitionHistory, ...]:
    ordered = rows.orderBy("topic", "topic_id", "partition")
    return tuple(
        SharePartitionHistory(
            group_id=row["group_id"],
            topic_id=row["topic_id"],
            topic=row["topic"],
            partition=row["partition"],
            history_from=_utc(row["history_from"]),
            history_complete=row["history_complete"],
            history_missing=row["history_missing"],
            unknown_first_offset=row["unknown_first_offset"],
            unknown_last_offset=row["unknown_last_offset"],
        )
        for row in ordered.collect()
    )


# --------------------------------------------------------------------------- load


def write_directory(rows: DataFrame, directory: Path, file_format: FileFormat) -> str:
    """Write rows as Parquet or JSON lines files into directory (absent or empty); its path.

    Spark's JSON writer gives one object per line, binary columns in base64.
    """
    mode = "overwrite" if directory.is_dir() and not any(directory.iterdir()) else "errorifexists"
    writer = rows.write.mode(mode)
    if file_format == "parquet":
        writer.parquet(str(directory))
    else:
        writer.json(str(directory))
    return str(directory)
