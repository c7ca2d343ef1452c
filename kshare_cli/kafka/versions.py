"""The Kafka releases whose share-group behaviour kshare knows, as one type.

The sandbox emulates each of them as a cluster-wide profile (group configs,
feature levels, record states, snapshot fields, the dead-letter queue) and the
product layers may compare a broker against them; one definition keeps the
spelling ("4.2", not "4.2.0") and the order the same everywhere.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = ["KAFKA_VERSIONS", "NEWEST_KAFKA_VERSION", "KafkaVersion", "at_least"]

#: A Kafka release line, major.minor as Kafka's own docs name it.
KafkaVersion = Literal["4.2", "4.3", "4.4"]

#: Every release line kshare emulates, oldest first.
KAFKA_VERSIONS: Final[tuple[KafkaVersion, ...]] = get_args(KafkaVersion)

NEWEST_KAFKA_VERSION: Final[KafkaVersion] = KAFKA_VERSIONS[-1]


def at_least(version: KafkaVersion, minimum: KafkaVersion) -> bool:
    """Whether ``version`` is ``minimum`` or a later release line."""
    return KAFKA_VERSIONS.index(version) >= KAFKA_VERSIONS.index(minimum)
