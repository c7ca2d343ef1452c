"""Kafka's group configs: the key table and ConfigDef's rules for their values.

Kafka keeps per-group configs (``share.record.lock.duration.ms``, ...) as GROUP
config resources. Two parts of kshare need the same facts about them: the
client checks a value before it sends an alter (``admin/group_configs.py``),
and the sandbox broker answers DescribeConfigs and IncrementalAlterConfigs as
Kafka does (``sandbox/group_configs.py``). The table and the parsing rules are
written down once, here, from Kafka's ``GroupConfig`` (branches 4.2, 4.3 and 4.4),
``GroupCoordinatorConfig`` and ``ShareGroupConfig``; what each side does with a
refusal (a usage error, an INVALID_CONFIG answer) stays with it. So are the
names and defaults of Kafka 4.4's dead-letter queue (KIP-1191): the group
configs ``errors.deadletterqueue.topic.name`` and ``.copy.record.enable``, the
cluster configs ``errors.deadletterqueue.topic.name.prefix`` and
``.auto.create.topics.enable`` and the topic config
``errors.deadletterqueue.group.enable``, and Kafka's one rule on a DLQ name
(no ``__``, :func:`check_dlq_topic_name`).

Value parsing follows ConfigDef, not Python: ``String.trim()`` (every char up to
U+0020), ``Integer.parseInt`` (a sign, ASCII digits, 32 bits), and
``java.time.Duration.parse`` for ``by_duration:``, whose grammar differs from
Python's libraries. Messages are Kafka's own (``Invalid value abc for
configuration share.record.lock.duration.ms: Not a number of type INT``), so an
operator finds them in Kafka's documentation and logs.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "AUTO_OFFSET_RESET",
    "BROKER_RESOURCE",
    "DLQ_AUTO_CREATE_TOPICS_ENABLE",
    "DLQ_AUTO_CREATE_TOPICS_ENABLE_DEFAULT",
    "DLQ_COPY_RECORD_ENABLE",
    "DLQ_GROUP_ENABLE",
    "DLQ_SHARE_VERSION",
    "DLQ_TOPIC_NAME",
    "DLQ_TOPIC_NAME_PREFIX",
    "DLQ_TOPIC_NAME_PREFIX_DEFAULT",
    "GROUP_CONFIG_KEYS",
    "GROUP_RESOURCE",
    "JAVA_INT",
    "SHARE_CONFIG_KEYS",
    "TOPIC_RESOURCE",
    "AlterConfigOpType",
    "AutoOffsetReset",
    "BrokerBound",
    "ConfigSource",
    "ConfigType",
    "ConfigValueError",
    "GroupConfigKey",
    "Parsed",
    "check_dlq_topic_name",
    "group_config_key",
    "is_share_group_config",
    "invalid_value",
    "java_str",
    "java_trim",
    "parse_auto_offset_reset",
    "parse_java_duration_ms",
    "parse_java_boolean",
    "parse_java_duration_ns",
    "parse_java_int",
    "parse_value",
    "share_config_key",
    "validate_value",
]

#: DescribeConfigs / IncrementalAlterConfigs resource types (``ConfigResource.Type``).
TOPIC_RESOURCE: Final = 2
BROKER_RESOURCE: Final = 4
GROUP_RESOURCE: Final = 32

AUTO_OFFSET_RESET: Final = "share.auto.offset.reset"

# Kafka 4.4's dead-letter queue for share groups (KIP-1191).
#: Group config: the group's DLQ topic; blank (the default) is no DLQ.
DLQ_TOPIC_NAME: Final = "errors.deadletterqueue.topic.name"
#: Group config: whether a DLQ record carries the original key and value (false).
DLQ_COPY_RECORD_ENABLE: Final = "errors.deadletterqueue.copy.record.enable"
#: Cluster config: the prefix every DLQ topic name needs (checked only when a record is written).
DLQ_TOPIC_NAME_PREFIX: Final = "errors.deadletterqueue.topic.name.prefix"
DLQ_TOPIC_NAME_PREFIX_DEFAULT: Final = "dlq."
#: Cluster config: whether the broker creates a missing DLQ topic.
DLQ_AUTO_CREATE_TOPICS_ENABLE: Final = "errors.deadletterqueue.auto.create.topics.enable"
DLQ_AUTO_CREATE_TOPICS_ENABLE_DEFAULT: Final = False
#: Topic config: a topic must have it true before a broker writes dead letters to it.
DLQ_GROUP_ENABLE: Final = "errors.deadletterqueue.group.enable"
#: The ``share.version`` feature level from which the broker acts on the DLQ configs
#: (``ShareVersion.SV_2``, "adds support for DLQ"); below it they are stored and ignored.
DLQ_SHARE_VERSION: Final = 2


class ConfigSource(enum.IntEnum):
    """DescribeConfigs ``configSource`` ids (``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(enum.IntEnum):
    """DescribeConfigs ``configType`` ids (``DescribeConfigsResponse.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class AlterConfigOpType(enum.IntEnum):
    """IncrementalAlterConfigs ``configOperation`` ids (``AlterConfigOp.OpType``)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


Parsed = int | str | bool


@dataclass(frozen=True, slots=True)
class BrokerBound:
    """A broker setting that bounds a group config, with Kafka's default for it."""

    setting: str
    default: int


@dataclass(frozen=True, slots=True)
class GroupConfigKey:
    """One group config as Kafka's ``GroupConfig`` defines and validates it.

    ``default`` is the ConfigDef default as Kafka prints it; ``at_least`` and
    ``choices`` are ConfigDef's validators; ``minimum`` and ``maximum`` are the
    broker settings ``GroupConfig.validateValues`` compares with; ``default_from``
    is the broker setting that supplies the default a group without its own
    value gets (from 4.3 on also the DEFAULT_CONFIG synonym DescribeConfigs
    names). ``since`` is the release that added the key: "4.3", "4.4", or "4.1"
    (the oldest release kshare supports) for the others.
    """

    name: str
    value_type: Literal["INT", "STRING", "BOOLEAN", "LIST"]
    since: str
    default: str
    documentation: str | None = None
    at_least: int | None = None
    choices: tuple[str, ...] = ()
    minimum: BrokerBound | None = None
    maximum: BrokerBound | None = None
    default_from: str | None = None

    @property
    def bounds(self) -> tuple[BrokerBound, ...]:
        return tuple(bound for bound in (self.minimum, self.maximum) if bound is not None)

    @property
    def config_type(self) -> ConfigType:
        return ConfigType[self.value_type]

    @property
    def share_group(self) -> bool:
        """A share group's config: ``share.*`` and the dead-letter queue's."""
        return is_share_group_config(self.name)

    @property
    def default_value(self) -> Parsed:
        """The ConfigDef default, typed (what Kafka 4.2 validates an unset key with)."""
        if self.value_type == "INT":
            return int(self.default)
        if self.value_type == "BOOLEAN":
            return self.default == "true"
        return self.default


_SHARE_AUTO_OFFSET_RESET_DOC = (
    "The strategy to initialize the share-partition start offset. "
    "<ul><li>earliest: automatically reset the offset to the earliest offset</li>"
    "<li>latest: automatically reset the offset to the latest offset</li>"
    "<li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration "
    "from the current timestamp. "
    "&lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). "
    "Negative duration is not allowed.</li>"
    "<li>anything else: throw exception to the share consumer.</li></ul>"
)
_SHARE_ISOLATION_LEVEL_DOC = (
    "Controls how to read records written transactionally. "
    'If set to "read_committed", the share group will only deliver transactional records '
    "which have been committed. "
    'If set to "read_uncommitted", the share group will return all messages, even '
    "transactional messages which have been aborted. "
    "Non-transactional records will be returned unconditionally in either mode."
)

#: Every group config of Kafka 4.2, and those 4.3 and 4.4 added (the ones DescribeConfigs
#: lists; 4.4's internal ``*.assignor.offload.enable`` and the like are never shown), in
#: ConfigDef (validation) order.
#: Static bounds from ``GroupConfig``'s ConfigDef; broker bounds and their defaults from
#: ``GroupCoordinatorConfig`` and ``ShareGroupConfig`` (same values on 4.2 and 4.3).
GROUP_CONFIG_KEYS: Final[tuple[GroupConfigKey, ...]] = (
    GroupConfigKey(
        "consumer.session.timeout.ms",
        "INT",
        "4.1",
        "45000",
        "The timeout to detect client failures when using the consumer group protocol.",
        at_least=1,
        default_from="group.consumer.session.timeout.ms",
    ),
    GroupConfigKey(
        "consumer.heartbeat.interval.ms",
        "INT",
        "4.1",
        "5000",
        "The heartbeat interval given to the members of a consumer group.",
        at_least=1,
        default_from="group.consumer.heartbeat.interval.ms",
    ),
    GroupConfigKey(
        "consumer.assignment.interval.ms",
        "INT",
        "4.3",
        "1000",
        "The minimum interval between two assignment computations of a consumer group.",
        at_least=0,
        minimum=BrokerBound("group.consumer.min.assignment.interval.ms", 0),
        maximum=BrokerBound("group.consumer.max.assignment.interval.ms", 15000),
        default_from="group.consumer.assignment.interval.ms",
    ),
    GroupConfigKey(
        "share.session.timeout.ms",
        "INT",
        "4.1",
        "45000",
        "The timeout to detect client failures when using the share group protocol.",
        at_least=1,
        minimum=BrokerBound("group.share.min.session.timeout.ms", 45000),
        maximum=BrokerBound("group.share.max.session.timeout.ms", 60000),
        default_from="group.share.session.timeout.ms",
    ),
    GroupConfigKey(
        "share.heartbeat.interval.ms",
        "INT",
        "4.1",
        "5000",
        "The heartbeat interval given to the members of a share group.",
        at_least=1,
        minimum=BrokerBound("group.share.min.heartbeat.interval.ms", 5000),
        maximum=BrokerBound("group.share.max.heartbeat.interval.ms", 15000),
        default_from="group.share.heartbeat.interval.ms",
    ),
    GroupConfigKey(
        "share.record.lock.duration.ms",
        "INT",
        "4.1",
        "30000",
        "The record acquisition lock duration in milliseconds for share groups.",
        at_least=1000,
        minimum=BrokerBound("group.share.min.record.lock.duration.ms", 15000),
        maximum=BrokerBound("group.share.max.record.lock.duration.ms", 60000),
        default_from="group.share.record.lock.duration.ms",
    ),
    GroupConfigKey(
        "share.delivery.count.limit",
        "INT",
        "4.3",
        "5",
        "The maximum number of delivery attempts for a record delivered to a share group.",
        at_least=2,
        minimum=BrokerBound("group.share.min.delivery.count.limit", 2),
        maximum=BrokerBound("group.share.max.delivery.count.limit", 10),
        default_from="group.share.delivery.count.limit",
    ),
    GroupConfigKey(
        "share.partition.max.record.locks",
        "INT",
        "4.3",
        "2000",
        "Share-group record lock limit per share-partition.",
        at_least=100,
        minimum=BrokerBound("group.share.min.partition.max.record.locks", 100),
        maximum=BrokerBound("group.share.max.partition.max.record.locks", 4000),
        default_from="group.share.partition.max.record.locks",
    ),
    GroupConfigKey(AUTO_OFFSET_RESET, "STRING", "4.1", "latest", _SHARE_AUTO_OFFSET_RESET_DOC),
    GroupConfigKey(
        "share.isolation.level",
        "STRING",
        "4.1",
        "read_uncommitted",
        _SHARE_ISOLATION_LEVEL_DOC,
        choices=("read_committed", "read_uncommitted"),
    ),
    GroupConfigKey(
        "share.renew.acknowledge.enable",
        "BOOLEAN",
        "4.3",
        "true",
        "Whether the renew acknowledge type is enabled for the share group.",
    ),
    GroupConfigKey(
        "share.assignment.interval.ms",
        "INT",
        "4.3",
        "1000",
        at_least=0,
        minimum=BrokerBound("group.share.min.assignment.interval.ms", 0),
        maximum=BrokerBound("group.share.max.assignment.interval.ms", 15000),
        default_from="group.share.assignment.interval.ms",
    ),
    GroupConfigKey(
        "streams.session.timeout.ms",
        "INT",
        "4.1",
        "45000",
        "The timeout to detect client failures when using the streams group protocol.",
        at_least=1,
        default_from="group.streams.session.timeout.ms",
    ),
    GroupConfigKey(
        "streams.heartbeat.interval.ms",
        "INT",
        "4.1",
        "5000",
        "The heartbeat interval given to the members.",
        at_least=1,
        default_from="group.streams.heartbeat.interval.ms",
    ),
    GroupConfigKey(
        "streams.num.standby.replicas",
        "INT",
        "4.1",
        "0",
        "The number of standby replicas for each task.",
        at_least=0,
        default_from="group.streams.num.standby.replicas",
    ),
    GroupConfigKey(
        "streams.initial.rebalance.delay.ms",
        "INT",
        "4.1",
        "3000",
        "The amount of time the group coordinator will wait for more streams clients to join "
        "a new group before performing the first rebalance. A longer delay means potentially "
        "fewer rebalances.",
        at_least=0,
        default_from="group.streams.initial.rebalance.delay.ms",
    ),
    GroupConfigKey(
        "streams.assignment.interval.ms",
        "INT",
        "4.3",
        "1000",
        "The minimum interval between two assignment computations of a streams group.",
        at_least=0,
        minimum=BrokerBound("group.streams.min.assignment.interval.ms", 0),
        maximum=BrokerBound("group.streams.max.assignment.interval.ms", 15000),
        default_from="group.streams.assignment.interval.ms",
    ),
    GroupConfigKey(
        "streams.rack.aware.assignment.tags",
        "LIST",
        "4.4",
        "",
        "List of client tag keys used to distribute standby replicas across Kafka Streams "
        "instances.",
        default_from="group.streams.rack.aware.assignment.tags",
    ),
    GroupConfigKey(
        "streams.assignor.name",
        "STRING",
        "4.4",
        "sticky",
        "The task assignor to use for this streams group.",
        default_from="group.streams.assignors",
    ),
    GroupConfigKey(
        DLQ_TOPIC_NAME,
        "STRING",
        "4.4",
        "",
        "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share "
        "group. If blank (the default), the group does not have a DLQ topic.",
    ),
    GroupConfigKey(
        DLQ_COPY_RECORD_ENABLE,
        "BOOLEAN",
        "4.4",
        "false",
        "When writing onto the dead-letter queue topic, whether to copy the original record "
        "onto the DLQ topic, or just write a record containing the context information headers.",
    ),
)


def is_share_group_config(name: str) -> bool:
    """Whether ``name`` configures a share group: ``share.*`` or the dead-letter queue's.

    Kafka 4.4's DLQ group configs (``errors.deadletterqueue.*``) apply to share
    groups only (KIP-1191), so ``kshare config`` manages them with ``share.*``.
    """
    return name.startswith(("share.", "errors.deadletterqueue."))


#: The share-group configs (``share.*``, ``errors.deadletterqueue.*``), in the table's order.
SHARE_CONFIG_KEYS: Final = tuple(key for key in GROUP_CONFIG_KEYS if key.share_group)

_KEYS_BY_NAME: Final = {key.name: key for key in GROUP_CONFIG_KEYS}


def group_config_key(name: str) -> GroupConfigKey | None:
    """The table entry for ``name``, None for a name that is not a group config."""
    return _KEYS_BY_NAME.get(name)


def share_config_key(name: str) -> GroupConfigKey | None:
    """The table entry for ``name``, None for a name that is not a share-group config."""
    key = _KEYS_BY_NAME.get(name)
    return key if key is not None and key.share_group else None


def check_dlq_topic_name(name: str) -> None:
    """Kafka 4.4's one rule on a DLQ topic name (``GroupConfig.validateValues``).

    Raises ConfigValueError with Kafka's message for a name in the ``__`` space
    of internal topics; a blank name (no DLQ) passes. Nothing else is checked
    here: the cluster's prefix only when the broker writes a record.
    """
    if name.startswith("__"):
        raise ConfigValueError(f"{DLQ_TOPIC_NAME}: DLQ topic name must not start with '__'")


# --------------------------------------------------------------------------- values


class ConfigValueError(ValueError):
    """A value ConfigDef refuses; the message is Kafka's ``ConfigException`` text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def java_str(value: object) -> str:
    """``String.valueOf``: how Kafka prints a parsed value (``true``, ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def invalid_value(name: str, value: object, detail: str | None) -> ConfigValueError:
    """Kafka's ``ConfigException(name, value, message)``."""
    suffix = "" if detail is None else f": {detail}"
    return ConfigValueError(f"Invalid value {java_str(value)} for configuration {name}{suffix}")


def java_trim(text: str) -> str:
    """``String.trim()``, as ConfigDef applies it: every char <= U+0020, not only spaces."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
#: What ``Integer.parseInt`` reads: a sign and ASCII digits (the range is checked apart).
JAVA_INT: Final = re.compile(r"[+-]?[0-9]+")
# java.time.Duration.parse: [-+]PnDTnHnMn.nS, case-insensitive, a sign on any unit.
_JAVA_DURATION: Final = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_java_duration_ns(text: str) -> int | None:
    """``java.time.Duration.parse`` in nanoseconds; None where Java throws.

    Kafka validates ``by_duration:`` with Java's parser, whose grammar differs from
    Python's libraries (days at most, no years/months/weeks, signs on each unit).
    """
    match = _JAVA_DURATION.fullmatch(text)
    if match is None:
        return None
    sign, days, t_part, hours, minutes, seconds, fraction = match.groups()
    if days is None and t_part is None:
        return None
    if t_part is not None and hours is None and minutes is None and seconds is None:
        return None
    total = 0
    for amount, unit_seconds in ((days, 86400), (hours, 3600), (minutes, 60), (seconds, 1)):
        if amount is not None:
            total += int(amount) * unit_seconds * 1_000_000_000
    if fraction:
        fraction_ns = int((fraction + "000000000")[:9])
        total += -fraction_ns if seconds is not None and seconds.startswith("-") else fraction_ns
    return -total if sign == "-" else total


def parse_java_duration_ms(text: str) -> int | None:
    """:func:`parse_java_duration_ns` in (floored) milliseconds."""
    total_ns = parse_java_duration_ns(text)
    return None if total_ns is None else total_ns // 1_000_000


@dataclass(frozen=True, slots=True)
class AutoOffsetReset:
    """A parsed ``share.auto.offset.reset``: where a share-partition starts.

    ``duration_ms`` is set for ``by_duration``; :meth:`timestamp` gives the
    ListOffsets timestamp the share-partition leader looks up.
    """

    kind: Literal["earliest", "latest", "by_duration"]
    duration_ms: int | None = None

    def timestamp(self, now_ms: int) -> int:
        """ListOffsets timestamp: -2 earliest, -1 latest, else ``now - duration``."""
        if self.kind == "earliest":
            return -2
        if self.kind == "latest":
            return -1
        return now_ms - (self.duration_ms or 0)


def parse_auto_offset_reset(value: str) -> AutoOffsetReset | None:
    """Parse a trimmed ``share.auto.offset.reset`` value; None where Kafka refuses it.

    ``none`` is a valid consumer strategy but not a share-group one, and names are
    case-sensitive (``EARLIEST`` is refused), as in ``ShareGroupAutoOffsetResetStrategy``.
    """
    if value == "earliest":
        return AutoOffsetReset("earliest")
    if value == "latest":
        return AutoOffsetReset("latest")
    if value.startswith("by_duration:"):
        duration_ms = parse_java_duration_ms(value[len("by_duration:") :])
        if duration_ms is None or duration_ms < 0:
            return None
        return AutoOffsetReset("by_duration", duration_ms)
    return None


def parse_java_int(name: str, raw: str) -> int:
    """ConfigDef's parse of an INT config: ``Integer.parseInt`` of the trimmed text.

    Raises ConfigValueError with Kafka's ``Not a number of type INT`` message; the
    sandbox broker's own configs are parsed by the same rule.
    """
    trimmed = java_trim(raw)
    if JAVA_INT.fullmatch(trimmed) is None or not _INT32_MIN <= int(trimmed) <= _INT32_MAX:
        raise invalid_value(name, raw, "Not a number of type INT")
    return int(trimmed)


def parse_java_boolean(name: str, raw: str) -> bool:
    """ConfigDef's parse of a BOOLEAN config: ``true`` or ``false`` in any case, trimmed.

    Raises ConfigValueError with Kafka's ``Expected value to be either true or false``.
    """
    lowered = java_trim(raw).lower()
    if lowered not in ("true", "false"):
        raise invalid_value(name, raw, "Expected value to be either true or false")
    return lowered == "true"


def parse_value(key: GroupConfigKey, raw: str) -> Parsed:
    """ConfigDef's parse of ``raw`` for ``key``: an int, a bool or the trimmed string.

    Raises ConfigValueError (``Not a number of type INT``, ``Expected value to be
    either true or false``); the validators are :func:`validate_value`'s.
    """
    if key.value_type == "INT":
        return parse_java_int(key.name, raw)
    if key.value_type == "BOOLEAN":
        return parse_java_boolean(key.name, raw)
    return java_trim(raw)


def validate_value(key: GroupConfigKey, value: Parsed) -> None:
    """ConfigDef's validator for ``key`` (``atLeast``, ``in``, the auto offset reset rule).

    Raises ConfigValueError with the broker's message; for ``share.auto.offset.reset``
    that is ``ShareGroupAutoOffsetResetStrategy``'s own text.
    """
    if key.at_least is not None and isinstance(value, int) and value < key.at_least:
        raise invalid_value(key.name, value, f"Value must be at least {key.at_least}")
    if key.choices and value not in key.choices:
        raise invalid_value(key.name, value, "String must be one of: " + ", ".join(key.choices))
    if key.name == AUTO_OFFSET_RESET and (
        not isinstance(value, str) or parse_auto_offset_reset(value) is None
    ):
        raise invalid_value(
            key.name,
            value,
            f"Invalid value `{java_str(value)}` for configuration {key.name}. The value must be "
            "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        )
