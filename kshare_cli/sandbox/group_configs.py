"""Group-level configs (``share.*`` and their siblings) for the sandbox broker.

Kafka keeps dynamic per-group configs (resource type GROUP in DescribeConfigs and
IncrementalAlterConfigs) next to broker-level ``group.*`` settings that supply the
defaults and the bounds a group value is checked against. The sandbox has to
answer those two RPCs the way Kafka 4.2 does, and its share-group coordinator and
share-partitions have to read the effective values (lock duration, delivery
limit, session timeout, ...), so both live here, without I/O. The key table and
ConfigDef's rules for values are Kafka's knowledge, shared with the client:
``kafka/group_configs.py``; what is here is the broker's side of them.

What this reproduces from Apache Kafka 4.2.0 (``GroupConfig``,
``GroupConfigManager``, ``ConfigHelper``, ``ConfigurationControlManager``):

* DescribeConfigs on a GROUP returns all eleven group configs (``consumer.*``,
  ``share.*`` and ``streams.*``), whatever group type the name belongs to, in the
  iteration order of Java's ``HashMap`` (reproduced, so the wire order matches the
  golden recording). Source is DEFAULT_CONFIG (5) unless the group overrides the
  key, then GROUP_CONFIG (8); the one synonym is the entry itself.
* Defaults of ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``,
  ``share.record.lock.duration.ms`` and the two ``consumer.*`` timeouts are the
  broker's ``group.*`` values; the rest are the static ConfigDef defaults.
* DescribeConfigs on the broker's own BROKER resource reports its ``group.*``
  settings (Kafka reports every broker config; the sandbox has only these),
  which is where a client reads the bounds a group value is checked against.
* IncrementalAlterConfigs validates the merged result before applying anything
  (all-or-nothing per resource) and reports Kafka's error codes and messages,
  e.g. INVALID_CONFIG (40) ``share.record.lock.duration.ms must be less than or
  equal to group.share.max.record.lock.duration.ms``.
* 4.2 quirk kept: validation fills keys the group has not set with the *static*
  ConfigDef defaults (45000/5000/30000 ...), not with the broker's values, except
  for the two ``consumer.*`` timeouts. A broker whose ``group.share.max.*`` bound
  is below a static default therefore refuses every alter. 4.3 merges the broker
  values first; the ``"4.3"`` profile does that.

``share.delivery.count.limit``, ``share.partition.max.record.locks`` and
``share.renew.acknowledge.enable`` do not exist as group configs in 4.2 (Kafka
4.2 answers ``Unknown group config name``); they arrive in 4.3 and are enabled
by ``kafka_version="4.3"``, with the three ``*.assignment.interval.ms``.

From 4.3 on (``ConfigHelper.createGroupConfigEntry``) a DEFAULT_CONFIG synonym
names the broker config that supplies the default
(``group.share.delivery.count.limit=5``; a broker config set in
``server.properties`` adds its STATIC_BROKER_CONFIG synonym first), and a key
the group sets lists its DYNAMIC_GROUP_CONFIG synonym before those: the 4.4
recording's ``kafka-configs --describe`` output. Kafka 4.4 (``"4.4"``) adds the
dead-letter-queue group configs ``errors.deadletterqueue.topic.name`` and
``.copy.record.enable`` and Streams' ``streams.assignor.name`` and
``streams.rack.aware.assignment.tags``, validates only the keys a group sets
(``share.delivery.count.limit must be in the range 2 to 10 inclusive.``, the
session timeout against the broker's heartbeat interval), refuses a DLQ name
starting with ``__`` (Kafka's reason, recorded), and has the cluster configs
``errors.deadletterqueue.topic.name.prefix`` and
``errors.deadletterqueue.auto.create.topics.enable``, which may be set as
dynamic cluster defaults (BROKER resource ``""``, recorded runs 13-16).

In 4.2 the delivery limit and the record-lock cap come only from the broker
(``group.share.delivery.count.limit``, ``group.share.partition.max.record.locks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Final

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.group_configs import (
    DLQ_AUTO_CREATE_TOPICS_ENABLE,
    DLQ_AUTO_CREATE_TOPICS_ENABLE_DEFAULT,
    DLQ_COPY_RECORD_ENABLE,
    DLQ_TOPIC_NAME,
    DLQ_TOPIC_NAME_PREFIX,
    DLQ_TOPIC_NAME_PREFIX_DEFAULT,
    GROUP_CONFIG_KEYS,
    AlterConfigOpType,
    AutoOffsetReset,
    ConfigSource,
    ConfigType,
    ConfigValueError,
    GroupConfigKey,
    Parsed,
    check_dlq_topic_name,
    invalid_value,
    java_str,
    java_trim,
    parse_auto_offset_reset,
    parse_value,
    validate_value,
)
from kshare_cli.kafka.versions import KafkaVersion, at_least
from kshare_cli.state.partitioning import java_string_hash

#: Kafka's cap on a stored config value (KRaft ConfigRecord), in characters.
_MAX_VALUE_SIZE = 32767


class GroupConfigError(Exception):
    """A request-level failure that Kafka reports as an error code on the resource.

    Raised by :meth:`GroupConfigStore.describe` so the caller can put
    ``error_code``/``message`` into the DescribeConfigs result for that resource.
    """

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@dataclass(frozen=True, slots=True)
class BrokerGroupSettings:
    """The broker's ``group.*`` settings that give group configs defaults and bounds.

    Field names follow the Kafka property names (``group.share.session.timeout.ms``
    is ``share_session_timeout_ms``). The defaults are Kafka 4.2's. Construction
    applies the consistency checks Kafka applies at broker start-up, with Kafka's
    messages, because a combination Kafka would refuse to start with would make
    the sandbox answer things no real cluster answers.
    """

    consumer_session_timeout_ms: int = 45000
    consumer_min_session_timeout_ms: int = 45000
    consumer_max_session_timeout_ms: int = 60000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_min_heartbeat_interval_ms: int = 5000
    consumer_max_heartbeat_interval_ms: int = 15000

    share_session_timeout_ms: int = 45000
    share_min_session_timeout_ms: int = 45000
    share_max_session_timeout_ms: int = 60000
    share_heartbeat_interval_ms: int = 5000
    share_min_heartbeat_interval_ms: int = 5000
    share_max_heartbeat_interval_ms: int = 15000
    share_max_size: int = 200
    share_record_lock_duration_ms: int = 30000
    share_min_record_lock_duration_ms: int = 15000
    share_max_record_lock_duration_ms: int = 60000
    share_delivery_count_limit: int = 5
    share_partition_max_record_locks: int = 2000
    # 4.3 only: the bounds of the group-level overrides introduced there.
    share_min_delivery_count_limit: int = 2
    share_max_delivery_count_limit: int = 10
    share_min_partition_max_record_locks: int = 100
    share_max_partition_max_record_locks: int = 4000
    # 4.3 only: the assignment intervals (KIP-1263) and their bounds.
    consumer_assignment_interval_ms: int = 1000
    consumer_min_assignment_interval_ms: int = 0
    consumer_max_assignment_interval_ms: int = 15000
    share_assignment_interval_ms: int = 1000
    share_min_assignment_interval_ms: int = 0
    share_max_assignment_interval_ms: int = 15000
    streams_assignment_interval_ms: int = 1000
    streams_min_assignment_interval_ms: int = 0
    streams_max_assignment_interval_ms: int = 15000

    streams_session_timeout_ms: int = 45000
    streams_min_session_timeout_ms: int = 45000
    streams_max_session_timeout_ms: int = 60000
    streams_heartbeat_interval_ms: int = 5000
    streams_min_heartbeat_interval_ms: int = 5000
    streams_max_heartbeat_interval_ms: int = 15000
    streams_num_standby_replicas: int = 0
    streams_max_standby_replicas: int = 2
    streams_initial_rebalance_delay_ms: int = 3000

    def __post_init__(self) -> None:
        checks: list[tuple[bool, str]] = [
            (
                self.share_max_heartbeat_interval_ms >= self.share_min_heartbeat_interval_ms,
                "group.share.max.heartbeat.interval.ms must be greater than or equal to "
                "group.share.min.heartbeat.interval.ms",
            ),
            (
                self.share_heartbeat_interval_ms >= self.share_min_heartbeat_interval_ms,
                "group.share.heartbeat.interval.ms must be greater than or equal to "
                "group.share.min.heartbeat.interval.ms",
            ),
            (
                self.share_heartbeat_interval_ms <= self.share_max_heartbeat_interval_ms,
                "group.share.heartbeat.interval.ms must be less than or equal to "
                "group.share.max.heartbeat.interval.ms",
            ),
            (
                self.share_max_session_timeout_ms >= self.share_min_session_timeout_ms,
                "group.share.max.session.timeout.ms must be greater than or equal to "
                "group.share.min.session.timeout.ms",
            ),
            (
                self.share_session_timeout_ms >= self.share_min_session_timeout_ms,
                "group.share.session.timeout.ms must be greater than or equal to "
                "group.share.min.session.timeout.ms",
            ),
            (
                self.share_session_timeout_ms <= self.share_max_session_timeout_ms,
                "group.share.session.timeout.ms must be less than or equal to "
                "group.share.max.session.timeout.ms",
            ),
            (
                self.share_heartbeat_interval_ms < self.share_session_timeout_ms,
                "group.share.heartbeat.interval.ms must be less than "
                "group.share.session.timeout.ms",
            ),
            (
                self.share_record_lock_duration_ms >= self.share_min_record_lock_duration_ms,
                "group.share.record.lock.duration.ms must be greater than or equal to "
                "group.share.min.record.lock.duration.ms",
            ),
            (
                self.share_max_record_lock_duration_ms >= self.share_record_lock_duration_ms,
                "group.share.max.record.lock.duration.ms must be greater than or equal to "
                "group.share.record.lock.duration.ms",
            ),
            (
                1 <= self.share_max_size <= 1000,
                f"Invalid value {self.share_max_size} for configuration group.share.max.size",
            ),
            (
                self.consumer_heartbeat_interval_ms < self.consumer_session_timeout_ms,
                "group.consumer.heartbeat.interval.ms must be less than "
                "group.consumer.session.timeout.ms",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """One DescribeConfigs synonym: where a value could come from, highest precedence first."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs result entry, field for field as Kafka fills it for a GROUP."""

    name: str
    value: str | None
    read_only: bool
    source: ConfigSource
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    config_type: ConfigType
    documentation: str | None


# --- the definitions -------------------------------------------------------------------------

#: The group configs the sandbox answers for, in ConfigDef (validation) order.
_DEFINITIONS: tuple[GroupConfigKey, ...] = GROUP_CONFIG_KEYS


def _known_in(definition: GroupConfigKey, version: KafkaVersion) -> bool:
    """Whether Kafka ``version`` has the group config (``since`` 4.1 is every profile)."""
    since = definition.since
    if since not in ("4.3", "4.4"):
        return True
    return at_least(version, "4.4" if since == "4.4" else "4.3")


#: Kafka 4.4's cluster configs of the dead-letter queue, with their defaults: set
#: statically on :class:`GroupConfigStore` or as dynamic cluster defaults.
DLQ_CLUSTER_DEFAULTS: Final = {
    DLQ_TOPIC_NAME_PREFIX: DLQ_TOPIC_NAME_PREFIX_DEFAULT,
    DLQ_AUTO_CREATE_TOPICS_ENABLE: java_str(DLQ_AUTO_CREATE_TOPICS_ENABLE_DEFAULT),
}


def _broker_field(key: GroupConfigKey) -> str | None:
    """The :class:`BrokerGroupSettings` field that supplies ``key``'s default, if any."""
    if key.default_from is None:
        return None
    return key.default_from.removeprefix("group.").replace(".", "_")


#: Configs whose DescribeConfigs default is the broker's value in 4.2
#: (``extractGroupConfigMap``); in 4.3 every definition with a broker_default is.
_BROKER_DEFAULTED_42 = frozenset(
    {
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
    }
)
#: Broker settings that exist only from 4.3 on (the bounds of the new group-level keys).
_BROKER_SETTINGS_43 = frozenset(
    {
        "share_min_delivery_count_limit",
        "share_max_delivery_count_limit",
        "share_min_partition_max_record_locks",
        "share_max_partition_max_record_locks",
        "consumer_assignment_interval_ms",
        "consumer_min_assignment_interval_ms",
        "consumer_max_assignment_interval_ms",
        "share_assignment_interval_ms",
        "share_min_assignment_interval_ms",
        "share_max_assignment_interval_ms",
        "streams_assignment_interval_ms",
        "streams_min_assignment_interval_ms",
        "streams_max_assignment_interval_ms",
    }
)
#: Keys 4.2's validation takes from the broker; the others use static defaults.
_VALIDATION_BROKER_KEYS_42 = frozenset(
    {
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
    }
)


def java_hashmap_order(names: Sequence[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` filled with ``names`` in order.

    Kafka builds the DescribeConfigs list by iterating such a map, so clients (and
    the golden recording) see this order; it is reproduced rather than sorted.
    """
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = java_string_hash(name) & 0xFFFFFFFF  # Java's >>> is on the unsigned bits
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(names, key=lambda name: (bucket(name), names.index(name)))


# --- the store --------------------------------------------------------------------------------


class GroupConfigStore:
    """Dynamic group configs of one sandbox cluster, answering as Kafka 4.2 (or 4.3).

    Group configs exist independently of groups (Kafka lets you configure a group
    that never had a member), so this store is keyed by group name only and never
    consults the group coordinator.
    """

    def __init__(
        self,
        broker: BrokerGroupSettings | None = None,
        *,
        kafka_version: KafkaVersion = "4.2",
        cluster_configs: Mapping[str, str] | None = None,
    ) -> None:
        self.broker = broker if broker is not None else BrokerGroupSettings()
        self.kafka_version: KafkaVersion = kafka_version
        #: The DLQ cluster configs as set in ``server.properties`` (4.4; Kafka's
        #: defaults for the rest); dynamic cluster defaults override them.
        self.static_cluster_configs: dict[str, str] = dict(cluster_configs or {})
        unknown = set(self.static_cluster_configs) - set(DLQ_CLUSTER_DEFAULTS)
        if unknown:
            raise ValueError(f"not a DLQ cluster config: {sorted(unknown)[0]}")
        for name, value in self.static_cluster_configs.items():
            _check_cluster_value(name, value)
        self._cluster_defaults: dict[str, str] = {}
        self._definitions = tuple(d for d in _DEFINITIONS if _known_in(d, kafka_version))
        self._by_name = {d.name: d for d in self._definitions}
        self._describe_order = java_hashmap_order([d.name for d in self._definitions])
        self._overrides: dict[str, dict[str, str]] = {}
        #: Called after every change that is applied (not after a validate-only or
        #: refused one), so whoever owns a data directory can persist :meth:`snapshot`;
        #: the store itself does no I/O.
        self.on_change: Callable[[], None] | None = None

    # -- introspection

    @property
    def definitions(self) -> tuple[GroupConfigKey, ...]:
        """The group configs this Kafka version knows, in ConfigDef (validation) order."""
        return self._definitions

    def overrides(self, group: str) -> dict[str, str]:
        """The values set on ``group`` as stored (untrimmed), for persistence or display."""
        return dict(self._overrides.get(group, {}))

    def configured_groups(self) -> list[str]:
        """Groups with at least one override: what ListConfigResources returns for GROUP."""
        return [group for group, values in self._overrides.items() if values]

    def snapshot(self) -> dict[str, dict[str, str]]:
        """Every group's overrides as stored: what a restart must get back (:meth:`restore`)."""
        return {group: dict(values) for group, values in self._overrides.items() if values}

    def restore(self, snapshot: Mapping[str, Mapping[str, str]]) -> None:
        """Put back overrides an earlier run stored, as Kafka replays its ConfigRecords.

        They were validated when they were set and are not checked again (Kafka
        does not either). Names this Kafka version does not know are dropped: a
        4.3-only key kept from a 4.3 profile would make every later alter of the
        group fail with ``Unknown group config name``.
        """
        for group, values in snapshot.items():
            known = {name: value for name, value in values.items() if name in self._by_name}
            if group and known:
                self._overrides[group] = dict(known)

    # -- DescribeConfigs

    def describe(
        self,
        group: str,
        keys: Sequence[str] | None = None,
        include_documentation: bool = False,
        *,
        include_synonyms: bool = False,
    ) -> list[ConfigEntry]:
        """DescribeConfigs for one GROUP resource, entry for entry as Kafka builds it.

        ``keys`` None or empty means all; unknown keys are silently left out, as
        Kafka does. An empty group name raises :class:`GroupConfigError`
        (INVALID_REQUEST, ``Group name must not be empty``).
        """
        if not group:
            raise GroupConfigError(ErrorCode.invalid_request, "Group name must not be empty")
        overrides = self._overrides.get(group, {})
        wanted = set(keys) if keys else None
        entries: list[ConfigEntry] = []
        for name in self._describe_order:
            if wanted is not None and name not in wanted:
                continue
            definition = self._by_name[name]
            if name in overrides:
                value = self._parse(definition, overrides[name])
                source = ConfigSource.GROUP_CONFIG
            else:
                value = self._describe_default(definition)
                source = ConfigSource.DEFAULT_CONFIG
            text = java_str(value)
            every: tuple[ConfigSynonym, ...] = (ConfigSynonym(name, text, source),)
            if at_least(self.kafka_version, "4.3"):
                every = self._default_synonyms(definition)
                if name in overrides:
                    every = (ConfigSynonym(name, text, ConfigSource.GROUP_CONFIG), *every)
                source = every[0].source
            synonyms = every if include_synonyms else ()
            entries.append(
                ConfigEntry(
                    name=name,
                    value=text,
                    read_only=False,
                    source=source,
                    is_sensitive=False,
                    synonyms=synonyms,
                    config_type=definition.config_type,
                    documentation=definition.documentation if include_documentation else None,
                )
            )
        return entries

    def _default_synonyms(self, definition: GroupConfigKey) -> tuple[ConfigSynonym, ...]:
        """4.3+: the broker config's synonyms (static, then default), or the group default's."""
        broker_name = definition.default_from
        field_name = _broker_field(definition)
        if broker_name is None or field_name is None:
            return (
                ConfigSynonym(definition.name, definition.default, ConfigSource.DEFAULT_CONFIG),
            )
        default = self._field_defaults().get(field_name)
        value = getattr(self.broker, field_name, None)
        if value is None or default is None:
            # A broker config the sandbox does not model (group.streams.assignors ...).
            return (ConfigSynonym(broker_name, definition.default, ConfigSource.DEFAULT_CONFIG),)
        synonyms = [ConfigSynonym(broker_name, java_str(default), ConfigSource.DEFAULT_CONFIG)]
        if value != default:
            synonyms.insert(
                0, ConfigSynonym(broker_name, java_str(value), ConfigSource.STATIC_BROKER_CONFIG)
            )
        return tuple(synonyms)

    @staticmethod
    def _field_defaults() -> dict[str, object]:
        return {f.name: f.default for f in fields(BrokerGroupSettings)}

    def describe_broker(
        self, keys: Sequence[str] | None = None, *, include_synonyms: bool = False
    ) -> list[ConfigEntry]:
        """DescribeConfigs for this broker's own BROKER resource: its ``group.*`` settings.

        Kafka answers with every broker config; the sandbox has only the group
        settings, which are what a client reads to learn the bounds of group
        configs (``group.share.max.record.lock.duration.ms``, ...). Sources and
        synonyms as Kafka gives them for a config set in ``server.properties``
        (STATIC_BROKER_CONFIG, then the DEFAULT_CONFIG synonym) or left at its
        default (DEFAULT_CONFIG); none of them is dynamic in 4.2, so all are
        read-only. The 4.3-only bounds exist only on a ``"4.3"`` store.
        """
        wanted = set(keys) if keys else None
        entries: list[ConfigEntry] = []
        for setting in sorted(fields(self.broker), key=lambda f: f.name):
            if setting.name in _BROKER_SETTINGS_43 and not at_least(self.kafka_version, "4.3"):
                continue
            name = "group." + setting.name.replace("_", ".")
            if wanted is not None and name not in wanted:
                continue
            value = str(getattr(self.broker, setting.name))
            default = str(setting.default)
            synonyms = [ConfigSynonym(name, default, ConfigSource.DEFAULT_CONFIG)]
            if value != default:
                synonyms.insert(0, ConfigSynonym(name, value, ConfigSource.STATIC_BROKER_CONFIG))
            entries.append(
                ConfigEntry(
                    name=name,
                    value=value,
                    read_only=True,
                    source=synonyms[0].source,
                    is_sensitive=False,
                    synonyms=tuple(synonyms) if include_synonyms else (),
                    config_type=ConfigType.INT,
                    documentation=None,
                )
            )
        for name in self.cluster_config_names():
            if wanted is not None and name not in wanted:
                continue
            chain = self._cluster_synonyms(name)
            entries.append(
                ConfigEntry(
                    name=name,
                    value=chain[0].value,
                    read_only=False,
                    source=chain[0].source,
                    is_sensitive=False,
                    synonyms=chain if include_synonyms else (),
                    config_type=_cluster_config_type(name),
                    documentation=None,
                )
            )
        entries.sort(key=lambda entry: entry.name)
        return entries

    # -- the DLQ cluster configs (4.4)

    def cluster_config_names(self) -> tuple[str, ...]:
        """The dynamic cluster configs this Kafka version has: the DLQ's, from 4.4 on."""
        return tuple(DLQ_CLUSTER_DEFAULTS) if at_least(self.kafka_version, "4.4") else ()

    def cluster_config(self, name: str) -> str:
        """The value a broker acts on: the dynamic cluster default, static, or Kafka's default."""
        return self._cluster_synonyms(name)[0].value or ""

    @property
    def dlq_topic_name_prefix(self) -> str:
        """``errors.deadletterqueue.topic.name.prefix``: every DLQ topic name's start."""
        return self.cluster_config(DLQ_TOPIC_NAME_PREFIX)

    @property
    def dlq_auto_create_topics(self) -> bool:
        """``errors.deadletterqueue.auto.create.topics.enable``: create a missing DLQ topic."""
        return self.cluster_config(DLQ_AUTO_CREATE_TOPICS_ENABLE).strip().lower() == "true"

    def _cluster_synonyms(self, name: str) -> tuple[ConfigSynonym, ...]:
        synonyms = [ConfigSynonym(name, DLQ_CLUSTER_DEFAULTS[name], ConfigSource.DEFAULT_CONFIG)]
        if name in self.static_cluster_configs:
            synonyms.insert(
                0,
                ConfigSynonym(
                    name, self.static_cluster_configs[name], ConfigSource.STATIC_BROKER_CONFIG
                ),
            )
        if name in self._cluster_defaults:
            synonyms.insert(
                0,
                ConfigSynonym(
                    name, self._cluster_defaults[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                ),
            )
        return tuple(synonyms)

    def describe_cluster_defaults(
        self, keys: Sequence[str] | None = None, *, include_synonyms: bool = False
    ) -> list[ConfigEntry]:
        """DescribeConfigs of the BROKER resource ``""``: the dynamic cluster defaults set."""
        wanted = set(keys) if keys else None
        return [
            ConfigEntry(
                name=name,
                value=value,
                read_only=False,
                source=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                is_sensitive=False,
                synonyms=(
                    (ConfigSynonym(name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),)
                    if include_synonyms
                    else ()
                ),
                config_type=_cluster_config_type(name),
                documentation=None,
            )
            for name, value in sorted(self._cluster_defaults.items())
            if wanted is None or name in wanted
        ]

    def alter_cluster_defaults(
        self, ops: Sequence[tuple[str, int, str | None]], validate_only: bool = False
    ) -> tuple[int, str | None]:
        """IncrementalAlterConfigs on the BROKER resource ``""`` for the DLQ cluster configs.

        Kafka takes many more dynamic cluster defaults; the sandbox models only the
        DLQ's (4.4), and says so for any other name.
        """
        known = self.cluster_config_names()
        merged = dict(self._cluster_defaults)
        for name, op, value in ops:
            if name not in known:
                return (
                    ErrorCode.invalid_request,
                    f"The sandbox does not emulate the cluster config {name}; it has: "
                    + (", ".join(known) or "none in this Kafka version"),
                )
            if op == AlterConfigOpType.SET and value is not None:
                try:
                    _check_cluster_value(name, value)
                except ConfigValueError as error:
                    return ErrorCode.invalid_config, error.message
                merged[name] = value
            elif op == AlterConfigOpType.DELETE:
                merged.pop(name, None)
            else:
                return ErrorCode.invalid_request, f"Unknown operations type {op}"
        if not validate_only:
            self._cluster_defaults = merged
        return 0, None

    # -- IncrementalAlterConfigs

    def incremental_alter(
        self,
        group: str,
        ops: Sequence[tuple[str, int, str | None]],
        validate_only: bool = False,
    ) -> tuple[int, str | None]:
        """Apply ``(key, op, value)`` operations to one GROUP resource, all or nothing.

        Returns Kafka's ``(error_code, error_message)`` for the resource; ``(0,
        None)`` on success. Nothing is stored when validation fails or when
        ``validate_only`` is set. The checks run in Kafka's order: duplicate keys,
        null values, operation types, value size, group name, unknown names, value
        parsing (in ConfigDef order), then the broker bounds.
        """
        names = [name for name, _, _ in ops]
        if len(set(names)) != len(names):
            return ErrorCode.invalid_request, "Error due to duplicate config keys"
        null_updates = [
            name for name, op, value in ops if op != AlterConfigOpType.DELETE and value is None
        ]
        if null_updates:
            return ErrorCode.invalid_request, "Null value not supported for : " + ", ".join(
                null_updates
            )

        current = self._overrides.get(group, {})
        merged = dict(current)
        for name, op, value in ops:
            if op == AlterConfigOpType.SET and value is not None:
                merged[name] = value
            elif op == AlterConfigOpType.DELETE:
                merged.pop(name, None)
            elif op in (AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT):
                op_name = AlterConfigOpType(op).name
                return (
                    ErrorCode.invalid_config,
                    f"Can't {op_name} to key {name} because its type is not LIST.",
                )
            else:
                return ErrorCode.invalid_request, f"Unknown operations type {op}"
        for name, value in merged.items():
            if current.get(name) != value and len(value) > _MAX_VALUE_SIZE:
                return (
                    ErrorCode.invalid_config,
                    "The configuration value cannot be added because it exceeds the maximum "
                    f"value size of {_MAX_VALUE_SIZE} bytes.",
                )
        if not group:
            return ErrorCode.invalid_request, "Default group resources are not allowed."
        try:
            self._validate(merged)
        except ConfigValueError as error:
            return ErrorCode.invalid_config, error.message
        if not validate_only:
            if merged:
                self._overrides[group] = merged
            else:
                self._overrides.pop(group, None)
            self._changed()
        return 0, None

    def forget(self, group: str) -> None:
        """Drop every override of ``group`` (what deleting its config record does)."""
        if self._overrides.pop(group, None) is not None:
            self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # -- typed getters (effective values for the sandbox's share machinery)

    def session_timeout_ms(self, group: str) -> int:
        """``share.session.timeout.ms``: when the coordinator fences a silent member."""
        return self._effective_int(group, "share.session.timeout.ms")

    def heartbeat_interval_ms(self, group: str) -> int:
        """``share.heartbeat.interval.ms``: what ShareGroupHeartbeat tells members."""
        return self._effective_int(group, "share.heartbeat.interval.ms")

    def record_lock_duration_ms(self, group: str) -> int:
        """``share.record.lock.duration.ms``: how long an acquired record stays locked."""
        return self._effective_int(group, "share.record.lock.duration.ms")

    def delivery_count_limit(self, group: str) -> int:
        """Delivery attempts before a record is archived.

        A group-level override exists from 4.3 on; in 4.2 this is always the
        broker's ``group.share.delivery.count.limit``.
        """
        return self._effective_int(group, "share.delivery.count.limit")

    def max_record_locks(self, group: str) -> int:
        """In-flight (acquired) records a share-partition may hold for the group.

        Group-level from 4.3 on; the broker's ``group.share.partition.max.record.locks``
        in 4.2.
        """
        return self._effective_int(group, "share.partition.max.record.locks")

    def auto_offset_reset(self, group: str) -> str:
        """``earliest``, ``latest`` or ``by_duration:<ISO-8601 duration>`` as configured."""
        value = self._effective(group, "share.auto.offset.reset")
        return value if isinstance(value, str) else "latest"

    def auto_offset_reset_strategy(self, group: str) -> AutoOffsetReset:
        """:meth:`auto_offset_reset`, parsed, so callers get a ListOffsets timestamp."""
        parsed = parse_auto_offset_reset(self.auto_offset_reset(group))
        return parsed if parsed is not None else AutoOffsetReset("latest")

    def isolation_level(self, group: str) -> str:
        """``read_uncommitted`` or ``read_committed``."""
        value = self._effective(group, "share.isolation.level")
        return value if isinstance(value, str) else "read_uncommitted"

    def assignment_interval_ms(self, group: str) -> int:
        """``share.assignment.interval.ms``: the least time between two assignments (4.3+).

        4.2 has no such config: assignments change at once (0).
        """
        if not at_least(self.kafka_version, "4.3"):
            return 0
        return self._effective_int(group, "share.assignment.interval.ms")

    def dlq_topic_name(self, group: str) -> str:
        """``errors.deadletterqueue.topic.name``: the group's DLQ topic, "" for none (or < 4.4)."""
        if DLQ_TOPIC_NAME not in self._by_name:
            return ""
        value = self._effective(group, DLQ_TOPIC_NAME)
        return value if isinstance(value, str) else ""

    def dlq_copy_record(self, group: str) -> bool:
        """``errors.deadletterqueue.copy.record.enable``: DLQ records carry key and value."""
        if DLQ_COPY_RECORD_ENABLE not in self._by_name:
            return False
        return self._effective(group, DLQ_COPY_RECORD_ENABLE) is True

    # -- internals

    def _broker_value(self, definition: GroupConfigKey) -> Parsed:
        field_name = _broker_field(definition)
        value = None if field_name is None else getattr(self.broker, field_name, None)
        if not isinstance(value, int):
            return definition.default_value
        return value

    def _describe_default(self, definition: GroupConfigKey) -> Parsed:
        if at_least(self.kafka_version, "4.3") or definition.name in _BROKER_DEFAULTED_42:
            return self._broker_value(definition)
        return definition.default_value

    def _effective(self, group: str, name: str) -> Parsed:
        definition = self._by_name.get(name)
        if definition is None:
            # 4.2 has no group-level key for this: the broker value is the only one.
            for candidate in _DEFINITIONS:
                if candidate.name == name:
                    return self._broker_value(candidate)
            raise KeyError(name)
        raw = self._overrides.get(group, {}).get(name)
        if raw is None:
            return self._broker_value(definition)
        value = self._parse(definition, raw)
        if at_least(self.kafka_version, "4.3") and isinstance(value, int):
            value = self._clamp_43(name, value)
        return value

    def _effective_int(self, group: str, name: str) -> int:
        value = self._effective(group, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} is not an INT config")
        return value

    def _clamp_43(self, name: str, value: int) -> int:
        """4.3 caps a stored value into the broker's current bounds when reading it."""
        bounds = self._bounds().get(name)
        if bounds is None:
            return value
        low, high = bounds[0][0], bounds[1][0]
        return max(low, min(high, value))

    def _parse(self, definition: GroupConfigKey, raw: str) -> Parsed:
        value = parse_value(definition, raw)
        if definition.value_type == "LIST" and isinstance(value, str) and value:
            # ConfigDef's LIST: split at commas, each item trimmed; printed joined by ",".
            value = ",".join(java_trim(item) for item in value.split(","))
        return value

    def _bounds(self) -> dict[str, tuple[tuple[int, str], tuple[int, str]]]:
        """Per key: ((min, broker min name), (max, broker max name)), in check order."""
        b = self.broker
        bounds: dict[str, tuple[tuple[int, str], tuple[int, str]]] = {
            "consumer.heartbeat.interval.ms": (
                (b.consumer_min_heartbeat_interval_ms, "group.consumer.min.heartbeat.interval.ms"),
                (b.consumer_max_heartbeat_interval_ms, "group.consumer.max.heartbeat.interval.ms"),
            ),
            "consumer.session.timeout.ms": (
                (b.consumer_min_session_timeout_ms, "group.consumer.min.session.timeout.ms"),
                (b.consumer_max_session_timeout_ms, "group.consumer.max.session.timeout.ms"),
            ),
            "share.heartbeat.interval.ms": (
                (b.share_min_heartbeat_interval_ms, "group.share.min.heartbeat.interval.ms"),
                (b.share_max_heartbeat_interval_ms, "group.share.max.heartbeat.interval.ms"),
            ),
            "share.session.timeout.ms": (
                (b.share_min_session_timeout_ms, "group.share.min.session.timeout.ms"),
                (b.share_max_session_timeout_ms, "group.share.max.session.timeout.ms"),
            ),
            "share.record.lock.duration.ms": (
                (b.share_min_record_lock_duration_ms, "group.share.min.record.lock.duration.ms"),
                (b.share_max_record_lock_duration_ms, "group.share.max.record.lock.duration.ms"),
            ),
        }
        if at_least(self.kafka_version, "4.3"):
            bounds["share.delivery.count.limit"] = (
                (b.share_min_delivery_count_limit, "group.share.min.delivery.count.limit"),
                (b.share_max_delivery_count_limit, "group.share.max.delivery.count.limit"),
            )
            bounds["share.partition.max.record.locks"] = (
                (
                    b.share_min_partition_max_record_locks,
                    "group.share.min.partition.max.record.locks",
                ),
                (
                    b.share_max_partition_max_record_locks,
                    "group.share.max.partition.max.record.locks",
                ),
            )
        if at_least(self.kafka_version, "4.3"):
            for kind in ("consumer", "share", "streams"):
                bounds[f"{kind}.assignment.interval.ms"] = (
                    (
                        getattr(b, f"{kind}_min_assignment_interval_ms"),
                        f"group.{kind}.min.assignment.interval.ms",
                    ),
                    (
                        getattr(b, f"{kind}_max_assignment_interval_ms"),
                        f"group.{kind}.max.assignment.interval.ms",
                    ),
                )
        bounds["streams.heartbeat.interval.ms"] = (
            (b.streams_min_heartbeat_interval_ms, "group.streams.min.heartbeat.interval.ms"),
            (b.streams_max_heartbeat_interval_ms, "group.streams.max.heartbeat.interval.ms"),
        )
        bounds["streams.session.timeout.ms"] = (
            (b.streams_min_session_timeout_ms, "group.streams.min.session.timeout.ms"),
            (b.streams_max_session_timeout_ms, "group.streams.max.session.timeout.ms"),
        )
        return bounds

    def _validate(self, merged: Mapping[str, str]) -> None:
        """``GroupConfigManager.validate``: names, then ConfigDef parse, then bounds."""
        for name in merged:
            if name not in self._by_name:
                raise ConfigValueError(f"Unknown group config name: {name}")
        if at_least(self.kafka_version, "4.4"):
            self._validate_44(merged)
            return
        combined: dict[str, str | Parsed] = {}
        for definition in self._definitions:
            use_broker = (
                at_least(self.kafka_version, "4.3") and definition.default_from is not None
            ) or definition.name in _VALIDATION_BROKER_KEYS_42
            if use_broker:
                combined[definition.name] = self._broker_value(definition)
        combined.update(merged)
        values: dict[str, Parsed] = {}
        for definition in self._definitions:
            raw = combined.get(definition.name)
            if raw is None:
                value = definition.default_value
            elif isinstance(raw, str):
                value = self._parse(definition, raw)
            else:
                value = raw
            validate_value(definition, value)
            values[definition.name] = value
        self._check_bounds(values)

    def _validate_44(self, merged: Mapping[str, str]) -> None:
        """Kafka 4.4's ``GroupConfig.validate``: only the keys the group sets are held to bounds.

        ConfigDef parses every key (the unset ones at their valid defaults), then each
        set key is checked against the broker's range (``must be in the range 2 to 10
        inclusive.``), a session timeout against the heartbeat interval (the broker's
        for the one not set), and a DLQ name against ``__``.
        """
        values: dict[str, Parsed] = {}
        for definition in self._definitions:
            raw = merged.get(definition.name)
            if raw is None:
                continue
            value = self._parse(definition, raw)
            validate_value(definition, value)
            values[definition.name] = value
        for name, ((low, _), (high, _)) in self._bounds().items():
            bounded = values.get(name)
            if isinstance(bounded, int) and not low <= bounded <= high:
                raise ConfigValueError(f"{name} must be in the range {low} to {high} inclusive.")
        replicas = values.get("streams.num.standby.replicas")
        if isinstance(replicas, int) and replicas > self.broker.streams_max_standby_replicas:
            raise ConfigValueError(
                "streams.num.standby.replicas must be less than or equal to "
                f"{self.broker.streams_max_standby_replicas}"
            )
        for kind in ("consumer", "share", "streams"):
            session_name, heartbeat_name = (
                f"{kind}.session.timeout.ms",
                f"{kind}.heartbeat.interval.ms",
            )
            if session_name not in values and heartbeat_name not in values:
                continue
            session = values.get(session_name, self._broker_value(self._by_name[session_name]))
            heartbeat = values.get(
                heartbeat_name, self._broker_value(self._by_name[heartbeat_name])
            )
            assert isinstance(session, int) and isinstance(heartbeat, int)
            if session <= heartbeat:
                raise ConfigValueError(f"{session_name} must be greater than {heartbeat_name}")
        dlq_name = values.get(DLQ_TOPIC_NAME)
        if isinstance(dlq_name, str):
            check_dlq_topic_name(dlq_name)

    def _check_bounds(self, values: Mapping[str, Parsed]) -> None:
        for name, ((low, low_name), (high, high_name)) in self._bounds().items():
            value = values[name]
            assert isinstance(value, int)
            if value < low:
                raise ConfigValueError(f"{name} must be greater than or equal to {low_name}")
            if value > high:
                raise ConfigValueError(f"{name} must be less than or equal to {high_name}")
            if name == "streams.session.timeout.ms":
                replicas = values["streams.num.standby.replicas"]
                assert isinstance(replicas, int)
                if replicas > self.broker.streams_max_standby_replicas:
                    raise ConfigValueError(
                        "streams.num.standby.replicas must be less than or equal to "
                        "group.streams.max.standby.replicas"
                    )
        for kind in ("consumer", "share", "streams"):
            session = values[f"{kind}.session.timeout.ms"]
            heartbeat = values[f"{kind}.heartbeat.interval.ms"]
            assert isinstance(session, int) and isinstance(heartbeat, int)
            if session <= heartbeat:
                raise ConfigValueError(
                    f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms"
                )


def _cluster_config_type(name: str) -> ConfigType:
    return ConfigType.BOOLEAN if name == DLQ_AUTO_CREATE_TOPICS_ENABLE else ConfigType.STRING


def _check_cluster_value(name: str, value: str) -> None:
    """ConfigDef's parse of a DLQ cluster config: the auto-create flag is a BOOLEAN."""
    if name == DLQ_AUTO_CREATE_TOPICS_ENABLE and java_trim(value).lower() not in ("true", "false"):
        raise invalid_value(name, value, "Expected value to be either true or false")
