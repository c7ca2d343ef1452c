"""A share-partition's record states and state batches, as Kafka numbers and persists them.

The share coordinator persists these batches in ``__share_group_state``
(ShareSnapshot/ShareUpdate) and in Read/WriteShareGroupState; the state codec
decodes them, the dashboard draws them, the audit analyses them and the
sandbox's share-partitions produce them. One definition keeps the wire ids and
the meaning of "terminal" the same for all of them. No kio here: the codec and
the Spark jobs import this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["DeliveryState", "StateBatch"]


class DeliveryState(IntEnum):
    """Per-offset delivery state as Kafka numbers it (the ``deliveryState`` of a state batch).

    ACQUIRED is never persisted (an acquisition lock lives only in the
    broker's memory), but it appears in the protocol and on screen.

    ARCHIVING (Kafka 4.4, KIP-1191) is a record on its way to the group's
    dead-letter queue: persisted before the broker writes the DLQ record, then
    ARCHIVED once the write completed (or failed). It never returns to a
    consumer, yet it is not delivery-complete: it is not counted in
    deliveryCompleteCount and the start offset does not move past it. A state
    3 left behind means the broker stopped between the two writes; it resumes
    the DLQ write when it loads the share-partition again.
    """

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4

    @property
    def is_terminal(self) -> bool:
        """Terminal records never return to a consumer and count as delivery-complete."""
        return self in (DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED)

    @property
    def is_final(self) -> bool:
        """Never delivered again: the terminal states and ARCHIVING, which only becomes ARCHIVED."""
        return self in (DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVING, DeliveryState.ARCHIVED)


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets sharing one delivery state and delivery count.

    delivery_state stays a plain int: a newer broker may persist a state this
    release does not name, and the codec must carry it through unchanged.
    """

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int
