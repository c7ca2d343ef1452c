"""kshare's checks of a group-config change, before anything is sent to a broker.

Kafka checks a new value twice: ConfigDef parses it (its type, ``atLeast``, the
allowed strings), then ``GroupConfig.validateValues`` holds it to broker settings
(``group.share.max.record.lock.duration.ms`` and the like). kshare makes both
checks first, with Kafka's rules from ``kafka/group_configs.py``, so a bad value
is a usage error naming the bound and its value rather than a broker's refusal;
a bound the broker would not report is checked against Kafka's default, with a
note saying so. ``admin/group_configs.py``'s service runs them.

Kafka 4.4 accepts some dead-letter-queue settings it will then not act on: a
DLQ topic name without the cluster's ``errors.deadletterqueue.topic.name.prefix``
(checked only when the broker writes a record), a topic that does not exist
while ``errors.deadletterqueue.auto.create.topics.enable`` is false, a topic
without ``errors.deadletterqueue.group.enable=true``, and any DLQ config on a
cluster whose ``share.version`` is below 2. :func:`dlq_notes` names each of
them; the command shows them as warnings and exits 0, as Kafka would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kshare_cli.errors import UsageError
from kshare_cli.kafka.group_configs import (
    AUTO_OFFSET_RESET,
    DLQ_AUTO_CREATE_TOPICS_ENABLE,
    DLQ_GROUP_ENABLE,
    DLQ_TOPIC_NAME,
    DLQ_TOPIC_NAME_PREFIX,
    JAVA_INT,
    SHARE_CONFIG_KEYS,
    BrokerBound,
    ConfigValueError,
    GroupConfigKey,
    Parsed,
    check_dlq_topic_name,
    invalid_value,
    parse_auto_offset_reset,
    parse_value,
    share_config_key,
    validate_value,
)

if TYPE_CHECKING:
    from kshare_cli.admin.cluster_facts import ClusterFacts
    from kshare_cli.admin.group_configs import BrokerSettings, GroupConfigs

__all__ = [
    "BOUND_SETTINGS",
    "OTHER_GROUP_TYPES",
    "CheckedValue",
    "DlqTopic",
    "check_against_broker",
    "check_assignments",
    "check_name",
    "check_names",
    "check_supported",
    "check_value",
    "dlq_notes",
    "dlq_topic_to_check",
    "parse_assignment",
    "valid_keys_text",
]

#: Group configs of other group types: Kafka has them, kshare leaves them to kafka-configs.sh.
OTHER_GROUP_TYPES: Final = ("consumer.", "streams.")


# --------------------------------------------------------------------------- the key table

#: Every broker setting a share config is bounded by: what a set reads from the broker.
BOUND_SETTINGS: Final = tuple(bound.setting for key in SHARE_CONFIG_KEYS for bound in key.bounds)
_SESSION_TIMEOUT = "share.session.timeout.ms"
_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"


def valid_keys_text() -> str:
    return ", ".join(
        key.name if key.since == "4.1" else f"{key.name} (Kafka {key.since}+)"
        for key in sorted(SHARE_CONFIG_KEYS, key=lambda key: key.name)
    )


# --------------------------------------------------------------------------- static checks


_AUTO_OFFSET_RESET_RULE = (
    "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
)


def check_value(key: GroupConfigKey, raw: str) -> Parsed:
    """ConfigDef's parse and validator for ``key``: the typed value, or a UsageError.

    The messages are Kafka's (``Not a number of type INT``, ``Value must be at
    least 1000``, ``errors.deadletterqueue.topic.name: DLQ topic name must not
    start with '__'``), so an operator finds them in Kafka's documentation and
    logs; an auto offset reset names the rule in kshare's shorter words.
    """
    try:
        value = parse_value(key, raw)
        if key.name == AUTO_OFFSET_RESET and parse_auto_offset_reset(str(value)) is None:
            raise invalid_value(key.name, value, _AUTO_OFFSET_RESET_RULE)
        validate_value(key, value)
        if key.name == DLQ_TOPIC_NAME:
            check_dlq_topic_name(str(value))
    except ConfigValueError as refused:
        raise UsageError(refused.message) from None
    return value


def check_name(name: str) -> GroupConfigKey:
    """The share config called ``name``, or a UsageError naming the valid ones."""
    key = share_config_key(name)
    if key is not None:
        return key
    if name.startswith(OTHER_GROUP_TYPES):
        kind = name.split(".", 1)[0]
        raise UsageError(
            f"{name} is a {kind}-group config; kshare config manages share-group configs "
            "(share.*) only (kafka-configs.sh --entity-type groups sets the others)"
        )
    raise UsageError(f"unknown share-group config {name!r}; valid keys: {valid_keys_text()}")


def parse_assignment(argument: str) -> tuple[str, str]:
    """``KEY=VALUE`` (split at the first ``=``, so a value may hold one)."""
    name, separator, value = argument.partition("=")
    name = name.strip()
    if not separator or not name:
        raise UsageError(f"expected KEY=VALUE, got {argument!r}")
    return name, value


@dataclass(frozen=True, slots=True)
class CheckedValue:
    """A value that passed the static checks: the text to send and what it parses to."""

    key: GroupConfigKey
    raw: str
    value: Parsed


def check_assignments(arguments: Sequence[str]) -> tuple[CheckedValue, ...]:
    """Every ``KEY=VALUE`` through the static checks, in order, before any I/O."""
    if not arguments:
        raise UsageError("name at least one KEY=VALUE to set")
    checked: list[CheckedValue] = []
    seen: set[str] = set()
    for argument in arguments:
        name, raw = parse_assignment(argument)
        key = check_name(name)
        if name in seen:
            raise UsageError(f"{name} is given more than once")
        seen.add(name)
        checked.append(CheckedValue(key, raw, check_value(key, raw)))
    return tuple(checked)


def check_names(names: Sequence[str]) -> tuple[GroupConfigKey, ...]:
    """Config names to unset, checked before any I/O."""
    if not names:
        raise UsageError("name at least one config to unset")
    keys: list[GroupConfigKey] = []
    for name in names:
        if "=" in name:
            raise UsageError(f"unset takes config names, not KEY=VALUE: {name!r}")
        key = check_name(name.strip())
        if key in keys:
            raise UsageError(f"{key.name} is given more than once")
        keys.append(key)
    return tuple(keys)


# --------------------------------------------------------------------------- broker checks


def _bound_value(bound: BrokerBound, broker: BrokerSettings) -> tuple[int, str, bool]:
    """(value, how to name where it came from, whether it is Kafka's default instead)."""
    value = broker.value(bound.setting)
    if value is not None:
        return value, f"{value} on broker {broker.node_id}", False
    reason = f": {broker.error}" if broker.error is not None else ""
    return (
        bound.default,
        f"{bound.default}, Kafka's default; broker {broker.node_id} did not report its own"
        + reason,
        True,
    )


def _current_int(configs: GroupConfigs, name: str) -> int | None:
    entry = configs.get(name)
    if entry is None or entry.value is None or JAVA_INT.fullmatch(entry.value.strip()) is None:
        return None
    return int(entry.value.strip())


def check_supported(configs: GroupConfigs, keys: Iterable[GroupConfigKey]) -> None:
    """Refuse keys the cluster does not know as group configs (a 4.3 key on a 4.2 broker).

    DescribeConfigs on a GROUP lists every group config the broker knows, so a key
    missing there would be refused as ``Unknown group config name``.
    """
    known = configs.names()
    for key in keys:
        if key.name not in known:
            raise UsageError(
                f"{key.name} is not a group config on this cluster: it needs Kafka "
                f"{key.since} or later"
                + (
                    f" (until then the broker's {key.default_from} applies to every group)"
                    if key.default_from
                    else ""
                )
            )


def check_against_broker(
    values: Sequence[CheckedValue], configs: GroupConfigs, broker: BrokerSettings
) -> tuple[str, ...]:
    """``GroupConfig.validateValues`` for the keys being set, before the broker sees them.

    Each bound, minimum first as Kafka checks it, against the broker's setting or,
    when that could not be read, Kafka's default (returned as a note); then
    Kafka's rule that a share group's session timeout exceeds its heartbeat
    interval, with the group's current value of whichever key is not being set.
    """
    notes: list[str] = []
    for checked in values:
        value = checked.value
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        key = checked.key
        for bound, relation, sign in (
            (key.minimum, "greater than or equal to", -1),
            (key.maximum, "less than or equal to", 1),
        ):
            if bound is None:
                continue
            limit, where, defaulted = _bound_value(bound, broker)
            if (value - limit) * sign > 0:
                raise UsageError(
                    f"{key.name}={value} is out of bounds: {key.name} must be {relation} "
                    f"{bound.setting} ({where})"
                )
            if defaulted:
                notes.append(
                    f"{key.name}={value} was checked against Kafka's default "
                    f"{bound.setting}={bound.default}: broker {broker.node_id} did not report "
                    "its own" + (f" ({broker.error})" if broker.error is not None else "")
                )
    new = {checked.key.name: checked.value for checked in values}
    if _SESSION_TIMEOUT in new or _HEARTBEAT_INTERVAL in new:
        session = new.get(_SESSION_TIMEOUT, _current_int(configs, _SESSION_TIMEOUT))
        heartbeat = new.get(_HEARTBEAT_INTERVAL, _current_int(configs, _HEARTBEAT_INTERVAL))
        if isinstance(session, int) and isinstance(heartbeat, int) and session <= heartbeat:
            raise UsageError(
                f"{_SESSION_TIMEOUT} must be greater than {_HEARTBEAT_INTERVAL} "
                f"(it would be {session} <= {heartbeat} for this group)"
            )
    return tuple(dict.fromkeys(notes))


# --------------------------------------------------------------------------- DLQ warnings


@dataclass(frozen=True, slots=True)
class DlqTopic:
    """What the cluster said of a DLQ topic: whether it exists, and its group-enable value.

    ``group_enable`` is the topic's ``errors.deadletterqueue.group.enable`` as
    described (None when the topic is missing or the value could not be read);
    ``error`` says why the topic could not be described, when it was not a
    plain "does not exist".
    """

    name: str
    exists: bool | None
    group_enable: str | None = None
    error: str | None = None


def dlq_topic_to_check(values: Sequence[CheckedValue]) -> str | None:
    """The DLQ topic a set names, if any: a blank name turns the DLQ off, nothing to check."""
    for checked in values:
        if checked.key.name == DLQ_TOPIC_NAME and isinstance(checked.value, str):
            return checked.value or None
    return None


def dlq_notes(
    values: Sequence[CheckedValue], facts: ClusterFacts, topic: DlqTopic | None
) -> tuple[str, ...]:
    """Warnings for DLQ settings Kafka accepts but will not act on, in the order they bite.

    ``share.version`` below 2 first (the broker ignores every DLQ config), then
    the DLQ topic's name against the cluster's prefix, its existence (when the
    broker will not create it) and its ``errors.deadletterqueue.group.enable``.
    """
    if not any(checked.key.name.startswith("errors.deadletterqueue.") for checked in values):
        return ()
    notes: list[str] = []
    lacking = facts.dead_letter_queue_lacking()
    if lacking is not None:
        notes.append(
            f"{lacking}; until then the broker keeps the DLQ configs and ignores them "
            "(rejected records are archived, nothing is written)"
        )
    name = dlq_topic_to_check(values)
    if name is None:
        return tuple(notes)
    prefix = facts.dlq_topic_name_prefix
    if prefix and not name.startswith(prefix):
        notes.append(
            f"{DLQ_TOPIC_NAME}={name} does not start with the cluster's "
            f"{DLQ_TOPIC_NAME_PREFIX} '{prefix}': Kafka accepts it, but checks the prefix only "
            "when it writes a dead letter, and will write none to this topic"
        )
    if topic is None:
        return tuple(notes)
    if topic.exists is False:
        if facts.dlq_auto_create_topics is not True:
            setting = (
                "is false"
                if facts.dlq_auto_create_topics is False
                else "was not reported (Kafka's default is false)"
            )
            notes.append(
                f"DLQ topic '{name}' does not exist and {DLQ_AUTO_CREATE_TOPICS_ENABLE} "
                f"{setting}: the broker will write no dead letters until it is created "
                f"with {DLQ_GROUP_ENABLE}=true"
            )
    elif topic.exists and (topic.group_enable or "").strip().lower() != "true":
        notes.append(
            f"DLQ topic '{name}' does not have {DLQ_GROUP_ENABLE}=true: the broker will write "
            f"no dead letters to it (kafka-configs.sh --entity-type topics --entity-name {name} "
            f"--alter --add-config {DLQ_GROUP_ENABLE}=true)"
        )
    elif topic.exists is None and topic.error is not None:
        notes.append(f"DLQ topic '{name}' could not be checked: {topic.error}")
    return tuple(notes)
