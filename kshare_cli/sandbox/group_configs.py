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
by ``kafka_version="4.3"``. In 4.2 the delivery limit and the record-lock cap
come only from the broker (``group.share.delivery.count.limit``,
``group.share.partition.max.record.locks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.group_configs import (
    GROUP_CONFIG_KEYS,
    AlterConfigOpType,
    AutoOffsetReset,
    ConfigSource,
    ConfigType,
    ConfigValueError,
    GroupConfigKey,
    Parsed,
    java_str,
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

#: Group configs the sandbox does not emulate yet: Kafka 4.3's assignment interval.
_NOT_EMULATED = frozenset({"share.assignment.interval.ms"})
#: The group configs the sandbox answers for, in ConfigDef (validation) order.
_DEFINITIONS: tuple[GroupConfigKey, ...] = tuple(
    key for key in GROUP_CONFIG_KEYS if key.name not in _NOT_EMULATED
)


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
    ) -> None:
        self.broker = broker if broker is not None else BrokerGroupSettings()
        self.kafka_version: KafkaVersion = kafka_version
        self._definitions = tuple(
            d for d in _DEFINITIONS if d.since != "4.3" or at_least(kafka_version, "4.3")
        )
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
            synonyms = (ConfigSynonym(name, text, source),) if include_synonyms else ()
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
        return entries

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

    # -- internals

    def _broker_value(self, definition: GroupConfigKey) -> Parsed:
        field_name = _broker_field(definition)
        if field_name is None:
            return definition.default_value
        value: int = getattr(self.broker, field_name)
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
        return parse_value(definition, raw)

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
