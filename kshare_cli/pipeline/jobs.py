"""The audit jobs -- timeline, deliveries, archived -- each as extract / transform / load.

* Extract: the group's records of `__share_group_state` through the
  "kshare-kafka" source (only the state-topic partitions that can hold the
  group's share-partitions, when the topics are known), and the source
  topics' records and watermarks where a job needs them.
* Transform: the pure DataFrame functions of `transforms` (decode, the one
  replay, deliveries, timeline, archived); nothing here re-implements them.
* Load: rows collected into `models` for stdout and the HTML report, files
  (Parquet or JSON lines) in a directory, or records produced to a
  dead-letter topic (`dead_letters`, Kafka's own DLQ format).

Which source offsets a job reads is decided on the driver from small
aggregates of the state (one row per share-partition), so a timeline reads
the source topic only from the lowest start offset it shows, and the
archived job only the offset span that holds archived records.

`AuditFollow` keeps a job running over a stream of the state topic: each
micro-batch is the new records plus, ahead of them, synthetic records that
stand for everything before (the last state of each share-partition, or
the outcome of each offset range), so the same transforms give the new
rows without replaying the topic again.
"""

from __future__ import annotations

import base64
import datetime
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

# The dead-letter load has its own module; these names stay importable from here.
from kshare_cli.pipeline.dead_letters import DeadLetterError, produce_dead_letters
from kshare_cli.pipeline.kafka_source import (
    KAFKA_SCHEMA,
    Connector,
    KafkaReadOptions,
    Offsets,
    read_kafka,
    read_kafka_stream,
    watermark_offsets,
)
from kshare_cli.pipeline.models import (
    ArchivedRecord,
    AuditJob,
    DeliveryRange,
    SharePartitionHistory,
    TimelinePoint,
)
from kshare_cli.pipeline.transforms import (
    DELIVERIES_SCHEMA,
    SOURCE_OFFSETS_SCHEMA,
    TOPIC_NAMES_SCHEMA,
    archived_offsets,
    archived_records,
    decode_state_records,
    deliveries,
    replay_states,
    state_history,
    state_records_of,
    timeline,
    with_topic_names,
)
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC
from kshare_cli.state.records import (
    DeliveryState,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    encode_record,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = [
    "AuditFollow",
    "AuditScope",
    "DeadLetterError",
    "Emit",
    "FileFormat",
    "archived_frame",
    "collect_archived",
    "collect_history",
    "history_frame",
    "collect_deliveries",
    "collect_timeline",
    "group_records",
    "deliveries_frame",
    "extract_state_records",
    "produce_dead_letters",
    "timeline_frame",
    "to_archived",
    "to_delivery",
    "to_timeline_point",
    "write_directory",
]

FileFormat = Literal["parquet", "jsonl"]

_ARCHIVED: Final = DeliveryState.ARCHIVED.name.lower()
_STATE_NUMBERS: Final = {state.name.lower(): int(state) for state in DeliveryState}


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


def _state_read(
    config: Mapping[str, str], scope: AuditScope, *, start: Offsets | None = None
) -> KafkaReadOptions:
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


def extract_state_records(
    spark: SparkSession, config: Mapping[str, str], scope: AuditScope
) -> DataFrame:
    """The state topic's records (the Kafka source's columns) that can hold the group's state."""
    return read_kafka(spark, _state_read(config, scope), connector=scope.connector)


def group_records(records: DataFrame, scope: AuditScope) -> DataFrame:
    """The group's state records (of scope.topics only, when given), undecoded."""
    return state_records_of(records, **_filters(scope))


def _filters(scope: AuditScope) -> dict[str, Any]:
    return {"group_ids": (scope.group_id,), "topic_ids": scope.topics}


def _topic_names_frame(spark: SparkSession, scope: AuditScope) -> DataFrame:
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
        replayed = replay_states(records, **_filters(scope))
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
        _topic_names_frame(spark, scope),
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

    ranges lets a caller pass a cached `transforms.deliveries` of the records
    (with the same since).
    """
    if ranges is None:
        ranges = deliveries(records, **_filters(scope), since_ms=scope.since_ms)
    return with_topic_names(ranges, _topic_names_frame(spark, scope))


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
        offsets = offsets.filter(F.col("archived_at") >= scope.since)
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
    return archived_records(offsets, _topic_names_frame(spark, scope), source)


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
    return DeliveryRange(**values)


def to_archived(row: Row) -> ArchivedRecord:
    values = row.asDict()
    headers = values.pop("headers")
    values.pop("timestampType", None)
    return ArchivedRecord(
        **{
            **values,
            "archived_at": _utc(values["archived_at"]),
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
    spark: SparkSession, scope: AuditScope, records: DataFrame, gaps: Mapping[int, int]
) -> DataFrame:
    """`transforms.state_history` of the group's records, with topic names."""
    return with_topic_names(
        state_history(records, **_filters(scope), gaps=gaps), _topic_names_frame(spark, scope)
    )


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


# --------------------------------------------------------------------------- follow


Emit = Callable[[AuditJob, Sequence[Any]], None]


class AuditFollow:
    """A job kept running over a stream of the state topic, until stop().

    The batch part of the job has read the state topic up to
    scope.state_end_offsets; the stream starts there. Each micro-batch's
    records are decoded and put behind synthetic records that carry what the
    batch (and the micro-batches before) knew: per share-partition its last
    state as a snapshot (timeline), or per offset range its outcome (deliveries,
    archived). The transforms then give exactly the rows the new records add:
    the timeline's new points (the last one of each share-partition with
    today's log end offset, the others without a lag, as nothing dates them
    yet), the ranges whose outcome changed, the offsets newly archived. emit
    is called on the driver with each micro-batch's rows (models), in order.
    """

    def __init__(
        self,
        spark: SparkSession,
        config: Mapping[str, str],
        scope: AuditScope,
        job: AuditJob,
        emit: Emit,
        *,
        trigger_seconds: float = 1.0,
    ) -> None:
        self._spark = spark
        self._config = dict(config)
        self._scope = scope
        self._job = job
        self._emit = emit
        self._trigger_seconds = trigger_seconds
        self._states: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._ranges: dict[tuple[str, str, int], list[DeliveryRange]] = {}
        self._archived: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
        self._start_offsets: dict[tuple[str, str, int], int] = {}
        self._query: StreamingQuery | None = None
        self._checkpoint: str | None = None
        self._lock = threading.Lock()
        self._stopping = False
        self.failure: BaseException | None = None

    # ------------------------------------------------------------------ seeds

    def remember_states(self, replayed: DataFrame) -> None:
        """Take the last replayed state of each share-partition (REPLAYED_WITH_BATCHES rows)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

        newest_first = Window.partitionBy("group_id", "topic_id", "partition").orderBy(
            F.col("state_partition").desc(), F.col("state_offset").desc()
        )
        last = replayed.withColumn("_rank", F.row_number().over(newest_first)).filter(
            F.col("_rank") == 1
        )
        for row in last.collect():
            key = (row["group_id"], row["topic_id"], int(row["partition"]))
            if row["has_state"]:
                self._states[key] = row.asDict()
            else:
                self._states.pop(key, None)

    def remember_ranges(self, ranges: Iterable[DeliveryRange]) -> None:
        """Take the outcome of every offset range so far (and which offsets were archived)."""
        for each in ranges:
            key = (each.group_id, each.topic_id, each.partition)
            self._ranges.setdefault(key, []).append(each)
            if each.final_state == _ARCHIVED:
                _add_span(self._archived.setdefault(key, []), each.first_offset, each.last_offset)

    def remember_start_offsets(self, records: DataFrame) -> None:
        """Take each share-partition's last known start offset from its records: what a
        snapshot says, or an update that does not leave it unchanged (-1)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

        decoded = decode_state_records(group_records(records, self._scope))
        newest_first = Window.partitionBy("group_id", "topic_id", "partition").orderBy(
            F.col("state_partition").desc(), F.col("state_offset").desc()
        )
        setting = decoded.filter(
            F.col("error").isNull()
            & ~F.col("tombstone")
            & ((F.col("kind") == "snapshot") | (F.col("start_offset") != -1))
        )
        last = setting.withColumn("_rank", F.row_number().over(newest_first)).filter(
            F.col("_rank") == 1
        )
        for row in last.collect():
            key = (row["group_id"], row["topic_id"], int(row["partition"]))
            self._start_offsets[key] = int(row["start_offset"])

    def _state_seeds(self) -> list[tuple[Any, ...]]:
        """Each share-partition's last state as a snapshot record, before all new records."""
        seeds = []
        for index, ((group_id, topic_id, partition), row) in enumerate(
            sorted(self._states.items())
        ):
            value = ShareSnapshotValue(
                row["snapshot_epoch"],
                row["state_epoch"],
                row["leader_epoch"],
                row["start_offset"],
                row["delivery_complete_count"],
                0,
                0,
                tuple(StateBatch(*batch) for batch in row["state_batches"] or ()),
            )
            key = ShareStateKey(StateRecordKind.SNAPSHOT, group_id, _uuid(topic_id), partition)
            seeds.append(
                _seed(
                    StateRecord(key, value),
                    row["state_partition"],
                    -1 - len(self._states) + index,
                    None,
                )
            )
        return seeds

    def _range_seeds(self) -> list[tuple[Any, ...]]:
        """Per known range an update that says its highest count and then its final count,
        written at its last change; then a snapshot with the last start offset."""
        seeds: list[tuple[Any, ...]] = []
        position = -1 - sum(len(ranges) + 1 for ranges in self._ranges.values())
        for key, ranges in sorted(self._ranges.items()):
            group_id, topic_id, partition = key
            topic_uuid = _uuid(topic_id)
            update_key = ShareStateKey(StateRecordKind.UPDATE, group_id, topic_uuid, partition)
            for each in ranges:
                state = _STATE_NUMBERS.get(each.final_state, -1)
                batches = (
                    StateBatch(each.first_offset, each.last_offset, state, each.max_delivery_count),
                    StateBatch(
                        each.first_offset, each.last_offset, state, each.final_delivery_count
                    ),
                )
                value = ShareUpdateValue(0, -1, -1, -1, batches)
                seeds.append(_seed(StateRecord(update_key, value), 0, position, each.last_changed))
                position += 1
            snapshot = ShareSnapshotValue(0, 0, -1, self._start_offsets.get(key, -1), -1, 0, 0, ())
            snapshot_key = ShareStateKey(StateRecordKind.SNAPSHOT, group_id, topic_uuid, partition)
            seeds.append(_seed(StateRecord(snapshot_key, snapshot), 0, position, None))
            position += 1
        return seeds

    # ------------------------------------------------------------------ stream

    def start(self) -> StreamingQuery:
        scope = self._scope
        options = _state_read(self._config, scope, start=scope.state_end_offsets)
        stream = read_kafka_stream(self._spark, options, connector=scope.connector)
        self._checkpoint = tempfile.mkdtemp(prefix="kshare-audit-follow-")
        self._query = (
            stream.writeStream.foreachBatch(self._micro_batch)
            .option("checkpointLocation", self._checkpoint)
            .trigger(processingTime=f"{self._trigger_seconds} seconds")
            .start()
        )
        return self._query

    def stop(self) -> None:
        """Stop after the micro-batch in progress, if any, has emitted all its rows.

        Stopping the query interrupts what it runs; a micro-batch interrupted
        halfway would have printed or produced part of its rows (and a
        KeyboardInterrupt inside a py4j call breaks the gateway). So no new
        micro-batch starts work once stopping, and the one running finishes first.
        """
        self._stopping = True
        with self._lock:
            pass
        if self._query is not None:
            self._query.stop()
            self._query = None
        if self._checkpoint is not None:
            shutil.rmtree(self._checkpoint, ignore_errors=True)
            self._checkpoint = None

    def _micro_batch(self, records: DataFrame, batch_id: int) -> None:
        if self._stopping:
            return
        try:
            with self._lock:
                if self._stopping:
                    return
                new = group_records(records, self._scope).persist()
                try:
                    if new.limit(1).count() == 0:
                        return
                    if self._job is AuditJob.TIMELINE:
                        self._timeline_batch(new)
                    else:
                        self._deliveries_batch(new)
                finally:
                    new.unpersist()
        except BaseException as error:
            if self._stopping:
                return  # interrupted by stop() before it emitted anything: not a failure
            self.failure = error
            raise

    def _seeded(self, new: DataFrame, seeds: list[tuple[Any, ...]]) -> DataFrame:
        if not seeds:
            return new
        return self._spark.createDataFrame(seeds, KAFKA_SCHEMA).unionByName(new)

    def _timeline_batch(self, new: DataFrame) -> None:
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

        replayed = (
            replay_states(
                self._seeded(new, self._state_seeds()), **_filters(self._scope), with_batches=True
            )
            .filter(F.col("state_offset") >= 0)
            .persist()
        )
        try:
            scope = AuditScope(
                self._scope.group_id,
                self._scope.topic_names,
                self._scope.topics,
                read_source=False,
            )
            rows = collect_timeline(
                timeline_frame(self._spark, self._config, scope, new, replayed=replayed)
            )
            self.remember_states(replayed)
        finally:
            replayed.unpersist()
        if rows:
            self._emit(AuditJob.TIMELINE, rows)

    def _deliveries_batch(self, new: DataFrame) -> None:
        spark = self._spark
        seeds = self._range_seeds()
        self.remember_start_offsets(new)
        ranges = collect_deliveries(
            with_topic_names(
                deliveries(self._seeded(new, seeds), **_filters(self._scope)),
                _topic_names_frame(spark, self._scope),
            )
        )
        known = {
            (
                each.group_id,
                each.topic_id,
                each.partition,
                each.first_offset,
                each.last_offset,
            ): each
            for partition_ranges in self._ranges.values()
            for each in partition_ranges
        }
        changed = [
            each
            for each in ranges
            if known.get(
                (each.group_id, each.topic_id, each.partition, each.first_offset, each.last_offset)
            )
            != each
        ]
        newly_archived: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
        for each in changed:
            if each.final_state != _ARCHIVED:
                continue
            key = (each.group_id, each.topic_id, each.partition)
            for first, last in _subtract(
                (each.first_offset, each.last_offset), self._archived.get(key, [])
            ):
                newly_archived.setdefault(key, []).append((first, last))
        self._ranges = {}
        self._archived = {}
        self.remember_ranges(ranges)
        if self._job is AuditJob.DELIVERIES:
            if changed:
                self._emit(AuditJob.DELIVERIES, changed)
            return
        archived = [
            each
            for each in changed
            if each.final_state == _ARCHIVED
            and (each.group_id, each.topic_id, each.partition) in newly_archived
        ]
        if not archived:
            return
        rows = self._spark.createDataFrame(
            [
                (
                    each.group_id,
                    each.topic_id,
                    each.partition,
                    first,
                    last,
                    each.max_delivery_count,
                    each.final_state,
                    each.final_delivery_count,
                    each.complete,
                    each.last_changed,
                )
                for each in archived
                for first, last in newly_archived[(each.group_id, each.topic_id, each.partition)]
                if each.first_offset <= first and last <= each.last_offset
            ],
            DELIVERIES_SCHEMA,
        )
        scope = AuditScope(
            self._scope.group_id,
            self._scope.topic_names,
            self._scope.topics,
            read_source=self._scope.read_source,
        )
        found = collect_archived(archived_frame(spark, self._config, scope, rows))
        if found:
            self._emit(AuditJob.ARCHIVED, found)


def _uuid(topic_id: str) -> uuid.UUID:
    """Kafka's base64 topic id back to a UUID."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def _seed(
    record: StateRecord, state_partition: int, offset: int, written: datetime.datetime | None
) -> tuple[Any, ...]:
    """A synthetic record in the Kafka source's columns, at a negative offset: before every
    real record of its share-partition."""
    key, value = encode_record(record)
    return (key, value, SHARE_STATE_TOPIC, state_partition, offset, written, 0, None)


def _add_span(spans: list[tuple[int, int]], first: int, last: int) -> None:
    """Add [first, last] to sorted disjoint spans, joining what touches."""
    spans.append((first, last))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for span_first, span_last in spans:
        if merged and span_first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], span_last))
        else:
            merged.append((span_first, span_last))
    spans[:] = merged


def _subtract(
    span: tuple[int, int], covered: Sequence[tuple[int, int]]
) -> Iterator[tuple[int, int]]:
    """The parts of span that no covered span holds."""
    cursor, last = span
    for covered_first, covered_last in covered:
        if covered_last < cursor or covered_first > last:
            continue
        if covered_first > cursor:
            yield cursor, covered_first - 1
        cursor = max(cursor, covered_last + 1)
        if cursor > last:
            return
    if cursor <= last:
        yield cursor, last
