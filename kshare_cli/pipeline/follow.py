"""``kshare audit ... --follow``: an audit job kept running over a stream of the state topic.

Each micro-batch is the new records plus, ahead of them, synthetic records
that stand for everything before (the last state of each share-partition,
or the outcome of each offset range), so the same transforms (`timeline`,
`deliveries`, `archived`) and the same jobs (`jobs`) give the new rows
without replaying the topic again. Its own module because it is a stateful
driver-side loop, where `jobs` are one-shot extract / transform / load
functions.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.pipeline.archived import ARCHIVED_STATES
from kshare_cli.pipeline.deliveries import DELIVERIES_SCHEMA, deliveries
from kshare_cli.pipeline.jobs import (
    AuditScope,
    archived_frame,
    collect_archived,
    collect_deliveries,
    collect_timeline,
    group_records,
    scope_filters,
    state_read,
    timeline_frame,
    topic_names_frame,
)
from kshare_cli.pipeline.kafka_source import KAFKA_SCHEMA, read_kafka_stream
from kshare_cli.pipeline.models import AuditJob, DeliveryRange
from kshare_cli.pipeline.state_records import decode_state_records, topic_uuid, with_topic_names
from kshare_cli.pipeline.timeline import replay_states
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
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["AuditFollow", "Emit"]

_STATE_NUMBERS: Final = {state.name.lower(): int(state) for state in DeliveryState}


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
        """Take the outcome of every offset range so far (and which offsets were archived, or
        are archiving: a record that goes ARCHIVING then ARCHIVED is reported once)."""
        for each in ranges:
            key = (each.group_id, each.topic_id, each.partition)
            self._ranges.setdefault(key, []).append(each)
            if each.final_state in ARCHIVED_STATES:
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
            key = ShareStateKey(StateRecordKind.SNAPSHOT, group_id, topic_uuid(topic_id), partition)
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
        """Per share-partition a snapshot with the last start offset, opening its history;
        then per known range an update that says its highest count and then its final
        count, written at its last change (after the snapshot, so that a final state
        counts as still named: `deliveries`' complete); an archived range that was
        ARCHIVING first (Kafka 4.4) is said ARCHIVING at its archiving_at before that,
        so that it keeps it."""
        seeds: list[tuple[Any, ...]] = []
        position = -1 - sum(
            len(ranges) + 1 + sum(_said_archiving_first(each) for each in ranges)
            for ranges in self._ranges.values()
        )
        for key, ranges in sorted(self._ranges.items()):
            group_id, topic_id, partition = key
            topic = topic_uuid(topic_id)
            snapshot = ShareSnapshotValue(0, 0, -1, self._start_offsets.get(key, -1), -1, 0, 0, ())
            snapshot_key = ShareStateKey(StateRecordKind.SNAPSHOT, group_id, topic, partition)
            seeds.append(_seed(StateRecord(snapshot_key, snapshot), 0, position, None))
            position += 1
            update_key = ShareStateKey(StateRecordKind.UPDATE, group_id, topic, partition)
            for each in ranges:
                if _said_archiving_first(each):
                    archiving = StateBatch(
                        each.first_offset,
                        each.last_offset,
                        DeliveryState.ARCHIVING,
                        each.final_delivery_count,
                    )
                    value = ShareUpdateValue(0, -1, -1, -1, (archiving,))
                    seeds.append(
                        _seed(StateRecord(update_key, value), 0, position, each.archiving_at)
                    )
                    position += 1
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
        return seeds

    # ------------------------------------------------------------------ stream

    def start(self) -> StreamingQuery:
        scope = self._scope
        options = state_read(self._config, scope, start=scope.state_end_offsets)
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
                self._seeded(new, self._state_seeds()),
                **scope_filters(self._scope),
                with_batches=True,
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

    def _changed(self, ranges: tuple[DeliveryRange, ...]) -> list[DeliveryRange]:
        """The ranges not among those remembered as they are (new, or with a new outcome)."""
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
        return [
            each
            for each in ranges
            if known.get(
                (each.group_id, each.topic_id, each.partition, each.first_offset, each.last_offset)
            )
            != each
        ]

    def _deliveries_batch(self, new: DataFrame) -> None:
        spark = self._spark
        seeds = self._range_seeds()
        self.remember_start_offsets(new)
        ranges = collect_deliveries(
            with_topic_names(
                deliveries(self._seeded(new, seeds), **scope_filters(self._scope)),
                topic_names_frame(spark, self._scope),
            )
        )
        changed = self._changed(ranges)
        newly_archived: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
        for each in changed:
            if each.final_state not in ARCHIVED_STATES:
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
            if each.final_state in ARCHIVED_STATES
            and (each.group_id, each.topic_id, each.partition) in newly_archived
        ]
        if not archived:
            return
        rows = self._spark.createDataFrame(
            _newly_archived_rows(archived, newly_archived), DELIVERIES_SCHEMA
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


def _newly_archived_rows(
    archived: list[DeliveryRange],
    newly_archived: Mapping[tuple[str, str, int], list[tuple[int, int]]],
) -> list[tuple[Any, ...]]:
    """DELIVERIES_SCHEMA rows of the offsets archived since the last batch: each archived
    range cut to the newly archived spans inside it."""
    return [
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
            each.archiving_at,
        )
        for each in archived
        for first, last in newly_archived[(each.group_id, each.topic_id, each.partition)]
        if each.first_offset <= first and last <= each.last_offset
    ]


def _seed(
    record: StateRecord, state_partition: int, offset: int, written: datetime.datetime | None
) -> tuple[Any, ...]:
    """A synthetic record in the Kafka source's columns, at a negative offset: before every
    real record of its share-partition."""
    key, value = encode_record(record)
    return (key, value, SHARE_STATE_TOPIC, state_partition, offset, written, 0, None)


def _said_archiving_first(each: DeliveryRange) -> bool:
    """Whether a range's seeds start with an ARCHIVING update: an archived range that was
    ARCHIVING first (Kafka 4.4's DLQ write), so that it keeps when it became ARCHIVING."""
    return each.archiving_at is not None and each.final_state == DeliveryState.ARCHIVED.name.lower()


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
