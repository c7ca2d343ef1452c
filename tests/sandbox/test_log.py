"""The sandbox's partition log: a log start offset that DeleteRecords moves, kept on disk.

Kafka keeps a partition's log start offset in its ``log-start-offset-checkpoint``,
apart from the segments, because the start may fall inside a batch or at the end
of an emptied log; a restart must answer ListOffsets earliest, Fetch and the next
Produce exactly as before it.
"""

from __future__ import annotations

from pathlib import Path

from kshare_cli.sandbox.log import PartitionLog
from kshare_cli.sandbox.record_batches import encode_batch


def _log(path: Path | None) -> PartitionLog:
    log = PartitionLog("t", 0, path)
    log.load()
    return log


def _append(log: PartitionLog, count: int) -> int:
    return log.append(encode_batch([(None, b"v")] * count, 1_000), 1_000)


def test_deleting_records_drops_whole_batches_before_the_new_start(tmp_path: Path) -> None:
    log = _log(tmp_path / "t-0.log")
    for _ in range(3):
        _append(log, 2)  # batches [0,1] [2,3] [4,5]
    assert log.delete_records_before(3) == 3
    assert (log.log_start_offset, log.log_end_offset) == (3, 6)
    assert [(b.base_offset, b.last_offset) for b in log.batches] == [(2, 3), (4, 5)]
    assert log.delete_records_before(1) == 3  # never back
    assert log.delete_records_before(99) == 6  # never past the end


def test_a_start_inside_a_batch_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "t-0.log"
    log = _log(path)
    _append(log, 2)
    _append(log, 2)
    log.delete_records_before(3)
    again = _log(path)
    assert (again.log_start_offset, again.log_end_offset) == (3, 4)
    assert [(b.base_offset, b.last_offset) for b in again.batches] == [(2, 3)]


def test_an_emptied_log_keeps_its_offsets_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "t-0.log"
    log = _log(path)
    _append(log, 5)
    log.delete_records_before(5)
    again = _log(path)
    assert (again.log_start_offset, again.log_end_offset, again.batches) == (5, 5, [])
    assert _append(again, 1) == 5  # the next record continues the offsets


def test_batches_below_the_checkpoint_are_dropped_on_load(tmp_path: Path) -> None:
    """A crash between writing the checkpoint and rewriting the log resurrects nothing."""
    path = tmp_path / "t-0.log"
    log = _log(path)
    _append(log, 2)
    _append(log, 2)
    path.with_suffix(".log-start").write_text("2")
    again = _log(path)
    assert again.log_start_offset == 2
    assert [(b.base_offset, b.last_offset) for b in again.batches] == [(2, 3)]
