"""Partition logs of the sandbox: producers' batch bytes, offsets, and an optional disk copy.

The sandbox stores batches exactly as producers sent them (only the base offset
is rewritten), so what a consumer fetches is byte for byte what was produced --
compressed batches included. With a data directory each partition's batches
are appended to a file as they arrive and read back on start, which is all a
restart needs to keep both the topics and the ``__share_group_state`` records.

A partition's log start offset moves only forward, as Kafka's DeleteRecords
moves it (``UnifiedLog.maybeIncrementLogStartOffset``): records before it are
gone for Fetch (OFFSET_OUT_OF_RANGE) and ListOffsets earliest answers it. The
share coordinator's pruning of ``__share_group_state`` is what moves it here.
On disk it is kept beside the log, in ``<id>-<partition>.log-start`` (Kafka's
``log-start-offset-checkpoint``), written before the log file is rewritten
without the deleted batches, so a crash between the two loses nothing and
resurrects nothing.
"""

from __future__ import annotations

import bisect
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kio.records.readers import read_batch

from kshare_cli.sandbox.record_batches import rebase
from kshare_cli.wire.records import BatchHeader, RecordBatchError, read_batch_headers


@dataclass(slots=True)
class StoredBatch:
    """One batch in a partition log, with what offset and time lookups need."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@dataclass(slots=True)
class PartitionLog:
    """An append-only log of record batches for one partition."""

    topic: str
    partition: int
    path: Path | None = None
    batches: list[StoredBatch] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    _last_offsets: list[int] = field(default_factory=list)

    def append(self, records: bytes, now_ms: int) -> int:
        """Append a producer's record set; returns the base offset of its first batch.

        Raises RecordBatchError (Kafka's CORRUPT_MESSAGE) for bytes that are not
        valid v2 batches, before anything is written.
        """
        headers = read_batch_headers(records, verify_crc=True)
        if not headers or sum(h.size for h in headers) != len(records):
            raise RecordBatchError("record set is not a sequence of whole v2 batches")
        first = self.log_end_offset
        for header in headers:
            self._append_batch(header, records, now_ms)
        return first

    def _append_batch(self, header: BatchHeader, records: bytes, now_ms: int) -> None:
        raw = memoryview(records)[header.position : header.position + header.size]
        data = rebase(raw, self.log_end_offset)
        max_timestamp = header.max_timestamp
        if max_timestamp < 0:
            max_timestamp = now_ms
        stored = StoredBatch(
            self.log_end_offset, self.log_end_offset + header.last_offset_delta, max_timestamp, data
        )
        self.batches.append(stored)
        self._last_offsets.append(stored.last_offset)
        self.log_end_offset = stored.last_offset + 1
        if self.path is not None:
            with self.path.open("ab") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (never back, never past the end).

        What Kafka's DeleteRecords does to a partition: batches that end before
        the new start are dropped; a batch straddling it stays whole, as Kafka
        keeps whole batches (a reader skips the records before the start).
        Returns the log start offset after the call.
        """
        offset = min(offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        self.log_start_offset = offset
        kept = self.batch_index(offset)
        del self.batches[:kept]
        del self._last_offsets[:kept]
        if self.path is not None:
            checkpoint = self._start_path()
            assert checkpoint is not None
            _replace(checkpoint, str(offset).encode())
            _replace(self.path, b"".join(batch.data for batch in self.batches))
        return offset

    def _start_path(self) -> Path | None:
        return None if self.path is None else self.path.with_suffix(".log-start")

    def remove_files(self) -> None:
        """Delete this partition's files (its topic was deleted)."""
        for path in (self.path, self._start_path()):
            if path is not None and path.exists():
                path.unlink()

    def load(self) -> None:
        """Read the batches back from disk (a torn last batch from a crash is dropped)."""
        if self.path is None:
            return
        checkpoint = self._start_path()
        if checkpoint is not None and checkpoint.exists():
            # Before the batches: an empty log still starts (and ends) there.
            self.log_start_offset = self.log_end_offset = int(checkpoint.read_text())
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        headers = read_batch_headers(data)
        good = sum(h.size for h in headers)
        if good != len(data):
            with self.path.open("r+b") as file:
                file.truncate(good)
        for header in headers:
            if header.last_offset < self.log_start_offset:
                continue  # deleted, but the rewrite after the checkpoint did not happen
            raw = data[header.position : header.position + header.size]
            stored = StoredBatch(header.base_offset, header.last_offset, header.max_timestamp, raw)
            self.batches.append(stored)
            self._last_offsets.append(stored.last_offset)
            self.log_end_offset = stored.last_offset + 1
        if self.batches:
            self.log_start_offset = max(self.log_start_offset, self.batches[0].base_offset)

    def batch_index(self, offset: int) -> int:
        """Index of the first batch whose last offset is at or after ``offset``."""
        return bisect.bisect_left(self._last_offsets, offset)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, at least one, up to ``max_bytes``."""
        chunks: list[bytes] = []
        size = 0
        for index in range(self.batch_index(offset), len(self.batches)):
            data = self.batches[index].data
            if chunks and size + len(data) > max_bytes:
                break
            chunks.append(data)
            size += len(data)
        return b"".join(chunks)

    def batch_ranges(self, start: int, end: int) -> list[tuple[int, int]]:
        """(first, last) offsets of the batches overlapping [start, end)."""
        ranges: list[tuple[int, int]] = []
        for index in range(self.batch_index(start), len(self.batches)):
            batch = self.batches[index]
            if batch.base_offset >= end:
                break
            ranges.append((batch.base_offset, batch.last_offset))
        return ranges

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``timestamp``, as ListOffsets."""
        for batch in self.batches[self.batch_index(self.log_start_offset) :]:
            if batch.max_timestamp < timestamp:
                continue
            try:
                decoded, _ = read_batch(batch.data, 0)
            except Exception:  # noqa: BLE001 -- compressed or foreign batch: batch granularity
                return batch.base_offset, batch.max_timestamp
            for record in decoded.records:
                record_ms = int(record.timestamp.timestamp() * 1000)
                if record_ms >= timestamp:
                    return int(record.offset), record_ms
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        best: tuple[int, int] | None = None
        for batch in self.batches:
            if best is None or batch.max_timestamp > best[1]:
                best = (batch.last_offset, batch.max_timestamp)
        return best


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: readers see the old file or the new, whole."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


@dataclass(slots=True)
class Topic:
    """A topic: its id, partition logs, and whether Kafka would call it internal."""

    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]
    internal: bool = False
    configs: dict[str, str] = field(default_factory=dict)


class LogStore:
    """All topics, in memory or under a data directory (``topics.json``, a file a partition)."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self.data_dir = data_dir
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            self._load()

    def _index_path(self) -> Path | None:
        return None if self.data_dir is None else self.data_dir / "topics.json"

    def _partition_path(self, name: str, topic_id: uuid.UUID, partition: int) -> Path | None:
        if self.data_dir is None:
            return None
        return self.data_dir / f"{topic_id.hex}-{partition}.log"

    def _load(self) -> None:
        index = self._index_path()
        if index is None or not index.exists():
            return
        for entry in json.loads(index.read_text()):
            self._add(
                entry["name"],
                uuid.UUID(entry["id"]),
                int(entry["partitions"]),
                bool(entry.get("internal", False)),
                dict(entry.get("configs", {})),
            )
            for log in self.topics[entry["name"]].partitions:
                log.load()

    def _save(self) -> None:
        index = self._index_path()
        if index is None:
            return
        entries = [
            {
                "name": t.name,
                "id": str(t.topic_id),
                "partitions": len(t.partitions),
                "internal": t.internal,
                "configs": t.configs,
            }
            for t in self.topics.values()
        ]
        temporary = index.with_suffix(".tmp")
        temporary.write_text(json.dumps(entries, indent=1))
        temporary.replace(index)

    def _add(
        self,
        name: str,
        topic_id: uuid.UUID,
        partitions: int,
        internal: bool,
        configs: dict[str, str],
    ) -> Topic:
        logs = [
            PartitionLog(name, p, self._partition_path(name, topic_id, p))
            for p in range(partitions)
        ]
        topic = Topic(name, topic_id, logs, internal, configs)
        self.topics[name] = topic
        self.by_id[topic_id] = topic
        return topic

    def create(
        self,
        name: str,
        partitions: int,
        *,
        internal: bool = False,
        configs: dict[str, str] | None = None,
    ) -> Topic:
        topic = self._add(name, uuid.uuid4(), partitions, internal, dict(configs or {}))
        self._save()
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        topic = self.topics[name]
        for p in range(len(topic.partitions), total):
            topic.partitions.append(
                PartitionLog(name, p, self._partition_path(name, topic.topic_id, p))
            )
        self._save()

    def delete(self, name: str) -> Topic:
        topic = self.topics.pop(name)
        del self.by_id[topic.topic_id]
        for log in topic.partitions:
            log.remove_files()
        self._save()
        return topic

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        found = self.topics.get(topic)
        if found is None or not 0 <= partition < len(found.partitions):
            return None
        return found.partitions[partition]


__all__ = ["LogStore", "PartitionLog", "RecordBatchError", "StoredBatch", "Topic"]
