"""Share-partition lag as Kafka 4.2 computes it (KIP-1226).

KIP-1226 defines lag as "highest offset - SPSO + 1 - in-flight records already
processed". The group coordinator computes it from the log end offset, which
is already "highest offset + 1", and the delivery-complete count the share
coordinator persisted. Both the sandbox (answering DescribeShareGroupOffsets)
and the readers of `__share_group_state` compute it here, so they cannot
disagree. Where Kafka cannot know the lag (uninitialised start offset, or a
count lost to an offset reset) the answer is None rather than a guess; the
wire carries that as -1.
"""

from __future__ import annotations

from typing import Final

__all__ = ["share_partition_lag"]

_UNINITIALIZED_START_OFFSET: Final = -1
_UNKNOWN_DELIVERY_COMPLETE_COUNT: Final = -1


def share_partition_lag(
    log_end_offset: int, start_offset: int, delivery_complete_count: int
) -> int | None:
    """LEO - SPSO - delivery-complete count; None when the SPSO or the count is unknown (-1)."""
    if start_offset == _UNINITIALIZED_START_OFFSET:
        return None
    if delivery_complete_count == _UNKNOWN_DELIVERY_COMPLETE_COUNT:
        return None
    return log_end_offset - start_offset - delivery_complete_count
