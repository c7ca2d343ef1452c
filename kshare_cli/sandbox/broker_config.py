"""Broker configs the sandbox accepts (``kshare sandbox --config KEY=VALUE``), by Kafka's names.

A test or a demo that wants Kafka's behaviour over time -- cold snapshots and
pruning of ``__share_group_state`` every five minutes -- cannot wait five
minutes, so the sandbox takes the same settings a Kafka broker's
``server.properties`` would, under the same names, with Kafka 4.2's defaults
and Kafka's own validation (``ShareCoordinatorConfig.CONFIG_DEF`` in the
share-coordinator module; ``ServerConfigs`` and ``ServerLogConfigs`` for the
topic settings). Kafka only warns about a name it does not know; the sandbox
refuses it instead, because a misspelt interval would silently leave a test
waiting five minutes.

No I/O here: the command and the test helpers parse, the broker reads the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from kshare_cli.kafka.group_configs import (
    ConfigValueError,
    parse_java_boolean,
    parse_java_int,
)

__all__ = [
    "BrokerConfig",
    "BrokerConfigError",
    "ShareCoordinatorConfig",
    "broker_config",
    "parse_config_pairs",
]

SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT: Final = (
    "share.coordinator.snapshot.update.records.per.snapshot"
)
STATE_TOPIC_PRUNE_INTERVAL_MS: Final = "share.coordinator.state.topic.prune.interval.ms"
COLD_PARTITION_SNAPSHOT_INTERVAL_MS: Final = "share.coordinator.cold.partition.snapshot.interval.ms"
AUTO_CREATE_TOPICS_ENABLE: Final = "auto.create.topics.enable"
NUM_PARTITIONS: Final = "num.partitions"
BROKER_SESSION_TIMEOUT_MS: Final = "broker.session.timeout.ms"
DEFAULT_REPLICATION_FACTOR: Final = "default.replication.factor"


class BrokerConfigError(ValueError):
    """A config Kafka would refuse to start with (or one the sandbox does not know)."""


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    """The share coordinator's settings for rewriting and pruning its topic (Kafka 4.2 defaults).

    ``ShareCoordinatorConfig``: a snapshot every ``snapshot_update_records_per_snapshot``
    updates (at least 0), a cold-partition snapshot pass every
    ``cold_partition_snapshot_interval_ms`` and a prune pass every
    ``state_topic_prune_interval_ms`` (both at least 1; internal configs in Kafka,
    settable all the same).
    """

    snapshot_update_records_per_snapshot: int = 500
    state_topic_prune_interval_ms: int = 300_000
    cold_partition_snapshot_interval_ms: int = 300_000

    def __post_init__(self) -> None:
        _at_least(
            SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT, self.snapshot_update_records_per_snapshot, 0
        )
        _at_least(STATE_TOPIC_PRUNE_INTERVAL_MS, self.state_topic_prune_interval_ms, 1)
        _at_least(COLD_PARTITION_SNAPSHOT_INTERVAL_MS, self.cold_partition_snapshot_interval_ms, 1)


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Everything ``--config`` can set: topic auto-creation, the share coordinator, fencing.

    ``broker_session_timeout_ms`` is KRaft's ``broker.session.timeout.ms``: how long
    a sandbox cluster's node that stopped or hangs stays registered before the
    controller fences it and its leaderships move (an INT without a validator in
    Kafka; 0 or less fences at once). ``default_replication_factor`` is Kafka's
    ``default.replication.factor`` (at least 1; no more than the nodes, checked
    when the cluster is built).
    """

    auto_create_topics: bool = True
    num_partitions: int = 1
    share_coordinator: ShareCoordinatorConfig = field(default_factory=ShareCoordinatorConfig)
    broker_session_timeout_ms: int = 9000
    default_replication_factor: int = 1


def parse_config_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--config``, repeatable) as a mapping; the last one of a key wins."""
    parsed: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise BrokerConfigError(f"{pair!r} is not KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed


def broker_config(values: Mapping[str, str]) -> BrokerConfig:
    """Kafka config names and string values, checked as Kafka's ConfigDef checks them."""
    unknown = sorted(set(values) - _KNOWN)
    if unknown:
        accepted = ", ".join(sorted(_KNOWN))
        raise BrokerConfigError(
            f"unknown broker config {unknown[0]!r} (the sandbox accepts: {accepted})"
        )
    share_coordinator = ShareCoordinatorConfig(
        **{
            attribute: _int(name, values[name])
            for name, attribute in _SHARE_COORDINATOR_FIELDS.items()
            if name in values
        }
    )
    auto_create_topics = True
    if AUTO_CREATE_TOPICS_ENABLE in values:
        auto_create_topics = _boolean(AUTO_CREATE_TOPICS_ENABLE, values[AUTO_CREATE_TOPICS_ENABLE])
    num_partitions = 1
    if NUM_PARTITIONS in values:
        num_partitions = _at_least(NUM_PARTITIONS, _int(NUM_PARTITIONS, values[NUM_PARTITIONS]), 1)
    session_timeout_ms = 9000
    if BROKER_SESSION_TIMEOUT_MS in values:
        session_timeout_ms = _int(BROKER_SESSION_TIMEOUT_MS, values[BROKER_SESSION_TIMEOUT_MS])
    replication_factor = 1
    if DEFAULT_REPLICATION_FACTOR in values:
        replication_factor = _at_least(
            DEFAULT_REPLICATION_FACTOR,
            _int(DEFAULT_REPLICATION_FACTOR, values[DEFAULT_REPLICATION_FACTOR]),
            1,
        )
    return BrokerConfig(
        auto_create_topics, num_partitions, share_coordinator, session_timeout_ms,
        replication_factor,
    )  # fmt: skip


_SHARE_COORDINATOR_FIELDS: Final = {
    SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT: "snapshot_update_records_per_snapshot",
    STATE_TOPIC_PRUNE_INTERVAL_MS: "state_topic_prune_interval_ms",
    COLD_PARTITION_SNAPSHOT_INTERVAL_MS: "cold_partition_snapshot_interval_ms",
}
_KNOWN: Final = frozenset(
    {
        *_SHARE_COORDINATOR_FIELDS,
        AUTO_CREATE_TOPICS_ENABLE,
        NUM_PARTITIONS,
        BROKER_SESSION_TIMEOUT_MS,
        DEFAULT_REPLICATION_FACTOR,
    }
)


def _int(name: str, text: str) -> int:
    """A Java INT, as ConfigDef parses one (``Integer.parseInt`` of the trimmed text)."""
    try:
        return parse_java_int(name, text)
    except ConfigValueError as error:
        raise BrokerConfigError(error.message) from None


def _boolean(name: str, text: str) -> bool:
    try:
        return parse_java_boolean(name, text)
    except ConfigValueError as error:
        raise BrokerConfigError(error.message) from None


def _at_least(name: str, value: int, minimum: int) -> int:
    if value < minimum:
        raise BrokerConfigError(
            f"Invalid value {value} for configuration {name}: Value must be at least {minimum}"
        )
    return value
