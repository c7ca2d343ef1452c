"""Which `__share_group_state` partition holds a share-partition's state.

Kafka's ShareCoordinatorService places a share-partition by Java's
`String.hashCode` of "group:topicId:partition" (the topic id in Kafka's own
base64 form) modulo the state topic's partition count. The sandbox must put
records where a real broker would, and a reader that knows the placement can
read one partition instead of fifty, so both use this one implementation.
"""

from __future__ import annotations

import base64
import uuid
from typing import Final

from kshare_cli.state.replay import SharePartitionKey

__all__ = [
    "DEFAULT_STATE_PARTITIONS",
    "SHARE_STATE_TOPIC",
    "java_string_hash",
    "kafka_uuid",
    "state_partition_for",
]

SHARE_STATE_TOPIC: Final = "__share_group_state"

DEFAULT_STATE_PARTITIONS: Final = 50
"""Kafka's `share.coordinator.state.topic.num.partitions` default."""

_INT_MIN: Final = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode`: over UTF-16 code units, wrapped to a signed 32-bit int."""
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        value = (31 * value + (encoded[index] << 8 | encoded[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's `Uuid.toString`: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def state_partition_for(key: SharePartitionKey, partitions: int = DEFAULT_STATE_PARTITIONS) -> int:
    """The state-topic partition of a share-partition, as Kafka's `Utils.abs(hash) % partitions`.

    Kafka's `Utils.abs` maps Integer.MIN_VALUE to 0 (Math.abs would leave it negative).
    """
    if partitions <= 0:
        raise ValueError(f"the state topic needs at least one partition, not {partitions}")
    hashed = java_string_hash(f"{key.group_id}:{kafka_uuid(key.topic_id)}:{key.partition}")
    return 0 if hashed == _INT_MIN else abs(hashed) % partitions
