"""Record batches as a broker writes them: re-based on append, and its own internal batches.

Only a broker assigns offsets and writes records of its own (the share
coordinator's ``__share_group_state`` records), so these live with the sandbox
broker; reading batch headers, which a client needs too, stays in
``wire/records.py``.
"""

from __future__ import annotations

import datetime
import io
import struct
from collections.abc import Sequence

from kio.records.schema import NewRecordBatch, Record, RecordHeader
from kio.records.writers import write_new_batch
from kio.static.primitive import i8, i16, i32, i64

from kshare_cli.wire.records import LOG_OVERHEAD

__all__ = ["encode_batch", "rebase"]

_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")


def rebase(batch: bytes | memoryview, base_offset: int, leader_epoch: int = 0) -> bytes:
    """A copy of one batch with the broker-assigned base offset and leader epoch.

    Both fields lie before the CRC's range, so the producer's CRC stays valid.
    """
    data = bytearray(batch)
    _BASE_OFFSET.pack_into(data, 0, base_offset)
    _LEADER_EPOCH.pack_into(data, LOG_OVERHEAD, leader_epoch)
    return bytes(data)


def encode_batch(
    records: list[tuple[bytes | None, bytes | None]],
    timestamp_ms: int,
    base_offset: int = 0,
    headers: Sequence[Sequence[tuple[str, bytes]]] | None = None,
) -> bytes:
    """An uncompressed v2 batch of (key, value) records, all with one CreateTime.

    Brokers write their own records (``__share_group_state``, a share group's
    dead-letter records, with ``headers`` per record) this way; producers'
    batches never pass through here.
    """
    moment = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
    batch = NewRecordBatch(
        producer_id=i64(-1),
        producer_epoch=i16(-1),
        base_sequence=i32(-1),
        attributes=i16(0),
        records=tuple(
            Record(
                attributes=i8(0),
                # A tz-aware datetime is what kio's phantom TZAwareMicros admits; mypy
                # cannot see the predicate.
                timestamp=moment,  # type: ignore[arg-type]
                offset=i64(base_offset + index),
                key=key,
                value=value,
                headers=tuple(
                    RecordHeader(key=name.encode(), value=data)
                    for name, data in (headers[index] if headers is not None else ())
                ),
            )
            for index, (key, value) in enumerate(records)
        ),
    )
    buffer = io.BytesIO()
    write_new_batch(buffer, batch)
    return buffer.getvalue()
