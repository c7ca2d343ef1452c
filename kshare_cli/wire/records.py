"""Record batches (magic v2) at the byte level: split and inspect.

Reading individual records (keys, values, headers) is kio's job
(``kio.records.readers.read_batch``); this module only reads the fixed batch
header, which is all that offsets, timestamps and sizes need. Writing batches
as a broker does (re-basing a producer's batch, encoding its own records) is
the sandbox's (``sandbox/record_batches.py``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

import crc32c

#: Bytes of the fixed v2 batch header up to and including the record count.
BATCH_HEADER_BYTES: Final = 61
#: Bytes before ``batchLength`` counts: base offset (8) and batch length (4).
LOG_OVERHEAD: Final = 12

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_START: Final = 21
COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_LOG_APPEND: Final = 0x08
CONTROL_FLAG: Final = 0x20


class RecordBatchError(ValueError):
    """Bytes that are not a well-formed v2 record batch."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed header of one v2 batch and where it sits in a buffer."""

    position: int
    size: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


def read_batch_headers(data: bytes | memoryview, *, verify_crc: bool = False) -> list[BatchHeader]:
    """Every batch header in a record set, in order.

    A trailing partial batch is allowed in Fetch responses (Kafka may cut a
    response mid-batch), so it is ignored rather than rejected; a batch that is
    not magic v2 or whose CRC is wrong raises RecordBatchError.
    """
    headers: list[BatchHeader] = []
    position = 0
    view = memoryview(data)
    while len(view) - position >= BATCH_HEADER_BYTES:
        fields = _HEADER.unpack_from(view, position)
        batch_length = fields[1]
        size = LOG_OVERHEAD + batch_length
        if batch_length < BATCH_HEADER_BYTES - LOG_OVERHEAD:
            raise RecordBatchError(f"batch length {batch_length} is shorter than a batch header")
        if fields[3] != 2:
            raise RecordBatchError(f"record batch magic {fields[3]} is not 2")
        if position + size > len(view):
            break
        if verify_crc:
            actual = crc32c.crc32c(view[position + _CRC_START : position + size])
            if actual != fields[4]:
                raise RecordBatchError("record batch CRC mismatch")
        headers.append(BatchHeader(position, size, *fields))
        position += size
    return headers
