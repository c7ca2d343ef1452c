"""Keep `__share_group_state` before Kafka prunes it, and read it back under the live topic.

Kafka's share coordinator snapshots every share-partition that was idle for
`share.coordinator.cold.partition.snapshot.interval.ms` and deletes what
lies before the latest snapshots every
`share.coordinator.state.topic.prune.interval.ms` (both five minutes by
default): what a group did an hour ago is gone from the topic. `capture` is
a Structured Streaming job over the state topic ("kshare-kafka" in stream
mode) that copies the chosen groups' records, raw key and value bytes with
their partition, offset and timestamp, into Parquet under a directory;
`history_records` gives an audit those records followed by the live topic.

The directory holds:

* ``capture.json``: the state topic and the groups captured (null: all);
* ``checkpoint/``: Spark's checkpoint, so a restarted capture goes on where
  it stopped;
* ``records/batch=N/``: micro-batch N's records of the groups (Parquet, the
  Kafka source's columns);
* ``progress/batch-N.json``: ``read``, the highest state-topic offset
  micro-batch N read per partition, *whatever the group*. That, not the
  highest offset captured, is where the captured history ends: a partition
  whose last record of the group is old was still read up to here, and the
  live topic beginning after it is no gap. ``gaps``, per partition, the first
  offset the batch read after records the share coordinator pruned before the
  capture read them (a capture that fell behind, or was stopped, for longer
  than Kafka's prune interval): the stream goes on from the log start, and
  the audits say what the gap cost (`HistoryRead.gaps`).

Micro-batch N writes both by overwriting, so a batch Spark replays after a
crash (same offsets, same id) replaces its files instead of adding twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from kshare_cli.pipeline.kafka_source import (
    KAFKA_SCHEMA,
    Connector,
    KafkaReadOptions,
    read_kafka,
    read_kafka_stream,
    watermark_offsets,
)
from kshare_cli.pipeline.state_records import state_records_of
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = [
    "MANIFEST",
    "CaptureError",
    "CaptureManifest",
    "HistoryRead",
    "capture_query",
    "history_records",
    "read_manifest",
    "start_manifest",
]

MANIFEST: Final = "capture.json"
_RECORDS: Final = "records"
_PROGRESS: Final = "progress"
_CHECKPOINT: Final = "checkpoint"
_EARLIEST: Final = -2


class CaptureError(ValueError):
    """A capture directory that cannot serve what is asked of it (a usage error)."""


@dataclass(frozen=True, slots=True)
class CaptureManifest:
    """What a capture directory holds: the state topic and the groups (None: all groups)."""

    state_topic: str
    groups: tuple[str, ...] | None

    def covers(self, group_id: str) -> bool:
        return self.groups is None or group_id in self.groups


def read_manifest(directory: Path) -> CaptureManifest | None:
    """The directory's manifest; None when it holds no capture."""
    path = directory / MANIFEST
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        groups = document["groups"]
        return CaptureManifest(
            str(document["state_topic"]), None if groups is None else tuple(map(str, groups))
        )
    except (ValueError, KeyError, TypeError) as error:
        raise CaptureError(f"{path}: not a kshare capture manifest ({error})") from None


def start_manifest(directory: Path, manifest: CaptureManifest) -> None:
    """Write the manifest of a new capture, or check that a restart captures the same.

    A restart with other groups would continue from the checkpoint's offsets,
    and the added groups' earlier records would be missing without anyone
    knowing: refused.
    """
    found = read_manifest(directory)
    if found is None:
        if directory.exists() and any(directory.iterdir()):
            raise CaptureError(f"{directory}: not empty and not a kshare capture")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MANIFEST).write_text(
            json.dumps(
                {
                    "state_topic": manifest.state_topic,
                    "groups": None if manifest.groups is None else list(manifest.groups),
                }
            )
            + "\n",
            encoding="utf-8",
        )
        return
    if found != manifest:
        held = "all groups" if found.groups is None else ", ".join(found.groups)
        raise CaptureError(
            f"{directory} captures {held}: a restart must capture the same "
            "(use another directory for other groups)"
        )


def capture_query(
    spark: SparkSession,
    config: Mapping[str, str],
    directory: Path,
    manifest: CaptureManifest,
    *,
    until_caught_up: bool = False,
    trigger_seconds: float = 1.0,
) -> StreamingQuery:
    """Start the capture stream (start_manifest first). until_caught_up reads what the
    topic holds when it starts (Trigger.AvailableNow) and stops; else it runs until stopped."""
    options = KafkaReadOptions(
        config=config,
        topics=(manifest.state_topic,),
        starting_offsets="earliest",
        # What the coordinator pruned before the capture started (or while it was
        # stopped) is gone; the audit reports such gaps, the capture keeps going.
        fail_on_data_loss=False,
    )
    stream = read_kafka_stream(spark, options)
    records_dir = directory / _RECORDS
    progress_dir = directory / _PROGRESS
    groups = manifest.groups

    def write(batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

        batch = batch.persist()
        try:
            spans = {
                int(row["partition"]): (int(row["first"]), int(row["last"]))
                for row in batch.groupBy("partition")
                .agg(F.min("offset").alias("first"), F.max("offset").alias("last"))
                .collect()
            }
            if not spans:
                return
            gaps = _pruned_before(
                config, manifest.state_topic, spans, _captured_ends(directory, before=batch_id)
            )
            kept = batch if groups is None else state_records_of(batch, group_ids=groups)
            kept.write.mode("overwrite").parquet(str(records_dir / f"batch={batch_id}"))
            progress_dir.mkdir(parents=True, exist_ok=True)
            (progress_dir / f"batch-{batch_id}.json").write_text(
                json.dumps(
                    {
                        "read": {str(p): last for p, (_, last) in sorted(spans.items())},
                        "gaps": {str(p): first for p, first in sorted(gaps.items())},
                    }
                ),
                encoding="utf-8",
            )
        finally:
            batch.unpersist()

    writer = stream.writeStream.foreachBatch(write).option(
        "checkpointLocation", str(directory / _CHECKPOINT)
    )
    if until_caught_up:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{trigger_seconds} seconds")
    return writer.start()


def _pruned_before(
    config: Mapping[str, str],
    state_topic: str,
    spans: Mapping[int, tuple[int, int]],
    read_before: Mapping[int, int],
) -> dict[int, int]:
    """Per partition, the first offset a micro-batch read after records nobody read.

    The stream reads each partition on from where the previous micro-batch
    ended; when the share coordinator pruned that far while the capture was
    behind (or stopped), the read starts at the log start instead (the source
    runs with failOnDataLoss=false, so that a capture never stalls on it).
    A batch whose first offset is not the one after the last offset read
    before skipped records, and when the log now starts past that offset they
    were pruned, not missing (the state topic has no holes otherwise).
    """
    skipped = {
        partition: first
        for partition, (first, _) in spans.items()
        if partition in read_before and first > read_before[partition] + 1
    }
    if not skipped:
        return {}
    lows = watermark_offsets(config, [(state_topic, partition) for partition in sorted(skipped)])
    return {
        partition: first
        for partition, first in skipped.items()
        if lows[(state_topic, partition)][0] > read_before[partition] + 1
    }


def _progress(directory: Path, before: int | None = None) -> list[dict[str, dict[str, int]]]:
    """The progress files' contents, those of micro-batches before `before` when given."""
    progress = directory / _PROGRESS
    if not progress.is_dir():
        return []
    documents = []
    for path in progress.glob("batch-*.json"):
        if before is not None and int(path.stem.removeprefix("batch-")) >= before:
            continue
        documents.append(json.loads(path.read_text(encoding="utf-8")))
    return documents


def _captured_ends(directory: Path, before: int | None = None) -> dict[int, int]:
    """Per state-topic partition, the highest offset the capture read (before a micro-batch)."""
    ends: dict[int, int] = {}
    for document in _progress(directory, before):
        for partition, last in document["read"].items():
            ends[int(partition)] = max(ends.get(int(partition), -1), int(last))
    return ends


def _captured_gaps(directory: Path) -> dict[int, int]:
    """Per state-topic partition, the latest offset the capture read after pruned records.

    Only the latest: a share-partition whose first record lies before it lost
    what a gap held, and one that starts after it is judged by its first
    record (`history_coverage.state_history`).
    """
    gaps: dict[int, int] = {}
    for document in _progress(directory):
        for partition, first in document.get("gaps", {}).items():
            gaps[int(partition)] = max(gaps.get(int(partition), -1), int(first))
    return gaps


@dataclass(frozen=True, slots=True)
class HistoryRead:
    """The records an audit reads with --history, and what is missing between them.

    gaps maps a state-topic partition to the first offset read after records
    nobody read: the live log starting beyond the captured end + 1, or else
    the latest gap inside the capture (pruned while it was behind);
    `history_coverage.state_history` and `deliveries.deliveries` take it.
    """

    records: DataFrame
    gaps: Mapping[int, int]


def history_records(
    spark: SparkSession,
    config: Mapping[str, str],
    directory: Path,
    *,
    state_topic: str = SHARE_STATE_TOPIC,
    partitions: Sequence[int],
    end_offsets: Mapping[int, int],
    connector: Connector = "kshare",
) -> HistoryRead:
    """Per state-topic partition, the captured records up to the captured end (and below
    end_offsets, where the live read stops and a --follow starts), then the live topic
    from the next offset to end_offsets: each offset once, none skipped that either holds.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    captured_ends = _captured_ends(directory)
    captured_gaps = _captured_gaps(directory)
    lows = watermark_offsets(config, [(state_topic, partition) for partition in partitions])
    starting: dict[str, int] = {}
    gaps: dict[int, int] = {}
    for partition in partitions:
        end = end_offsets[partition]
        captured_end = captured_ends.get(partition)
        if captured_end is None:
            starting[str(partition)] = _EARLIEST
            continue
        resume = min(captured_end + 1, end)
        starting[str(partition)] = resume
        if partition in captured_gaps and captured_gaps[partition] < resume:
            gaps[partition] = captured_gaps[partition]
        low = lows[(state_topic, partition)][0]
        if low > resume:
            gaps[partition] = low
    live = read_kafka(
        spark,
        KafkaReadOptions(
            config=config,
            assign={state_topic: tuple(partitions)},
            starting_offsets={state_topic: starting},
            ending_offsets={state_topic: {str(p): end_offsets[p] for p in partitions}},
            fail_on_data_loss=False,
        ),
        connector=connector,
    )
    records_dir = directory / _RECORDS
    if not any(records_dir.glob("batch=*")):
        return HistoryRead(live, gaps)
    captured = spark.read.schema(KAFKA_SCHEMA).parquet(str(records_dir))
    wanted = None
    for partition in partitions:
        if partition not in captured_ends:
            continue
        bound = min(captured_ends[partition] + 1, end_offsets[partition])
        condition = (F.col("partition") == partition) & (F.col("offset") < bound)
        wanted = condition if wanted is None else wanted | condition
    if wanted is None:
        return HistoryRead(live, gaps)
    captured = captured.filter((F.col("topic") == state_topic) & wanted).select(
        *KAFKA_SCHEMA.fieldNames()
    )
    return HistoryRead(captured.unionByName(live), gaps)
