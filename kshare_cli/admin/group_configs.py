"""Share-group configs: DescribeConfigs and IncrementalAlterConfigs on GROUP resources.

Kafka keeps per-group configs (``share.record.lock.duration.ms``, ...) as GROUP
config resources (resource type 32), apart from the groups themselves: a group
that does not exist yet can be configured (the golden corpus configured
``golden-h`` before any member joined it), and its configs outlive it. Kafka's
Admin sends both RPCs for a GROUP resource to any broker -- the least loaded one,
not the group coordinator: ``KafkaAdminClient.nodeFor`` names a node only for
BROKER and BROKER_LOGGER resources -- and the broker forwards an alter to the
controller. kshare does the same.

Kafka checks a new value twice: ConfigDef parses it (its type, ``atLeast``, the
allowed strings), then ``GroupConfig.validateValues`` holds it to broker settings
(``group.share.max.record.lock.duration.ms`` and the like). kshare makes both
checks before it sends an alter, so a bad value is a usage error naming the bound
and its value. The broker settings are read from the BROKER resource of the
broker asked (DescribeConfigs); when the broker does not let us (no
DESCRIBE_CONFIGS on the cluster, an older broker), Kafka's default is used and the
update carries a note saying so. Whatever the broker still refuses -- Kafka 4.2
also checks the keys a group has not set against the static defaults -- comes back
as the broker's own message (``Refused``).

The key table and ConfigDef's rules for the values are Kafka's knowledge,
shared with the sandbox broker: ``kafka/group_configs.py``; kshare's checks of
a change before anything is sent (those rules, then the broker's bounds, as
usage errors) are ``admin/config_checks.py``. This module holds the models,
the converters from kio responses and the RPC service.

The converters from kio responses are module functions, testable without a broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from kshare_cli.admin.config_checks import (
    BOUND_SETTINGS,
    DlqTopic,
    check_against_broker,
    check_assignments,
    check_names,
    check_supported,
    dlq_notes,
    dlq_topic_to_check,
)
from kshare_cli.errors import (
    AUTHORIZATION_ERROR_CODES,
    AuthenticationFailed,
    ConnectionFailed,
    IncompatibleBroker,
    NotAuthorized,
    Refused,
    TimedOut,
)
from kshare_cli.kafka.api_keys import DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_GROUPS
from kshare_cli.kafka.group_configs import (
    BROKER_RESOURCE,
    DLQ_GROUP_ENABLE,
    GROUP_RESOURCE,
    JAVA_INT,
    TOPIC_RESOURCE,
    AlterConfigOpType,
    ConfigType,
    is_share_group_config,
)
from kshare_cli.wire.errors import KafkaError

if TYPE_CHECKING:
    from kshare_cli.admin.cluster_facts import ClusterFacts
    from kshare_cli.wire.client import KafkaClient

#: UNKNOWN_TOPIC_OR_PARTITION: what DescribeConfigs answers for a TOPIC that does not exist.
_UNKNOWN_TOPIC = 3

__all__ = [
    "DYNAMIC_GROUP_CONFIG",
    "BrokerSettings",
    "ConfigChange",
    "ConfigOperation",
    "ConfigSynonym",
    "ConfigUpdate",
    "GroupConfigAdmin",
    "GroupConfigEntry",
    "GroupConfigs",
    "alter_error_from",
    "broker_settings_from",
    "describe_result_for",
    "describe_results_for",
    "group_configs_from",
]

#: DescribeConfigs v1 is the first with a config source (v0 has only ``is_default``).
DESCRIBE_CONFIGS_WITH_SOURCE: Final = 1

#: Kafka's ``ConfigEntry.ConfigSource`` names for the wire's ``configSource`` ids
#: (``DescribeConfigsResponse.ConfigSource``): what kafka-configs.sh prints.
CONFIG_SOURCES: Final = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
DYNAMIC_GROUP_CONFIG: Final = "DYNAMIC_GROUP_CONFIG"
#: ``DescribeConfigsResponse.ConfigType`` names by id (DescribeConfigs v3+).
CONFIG_TYPES: Final = {config_type.value: config_type.name for config_type in ConfigType}

# --------------------------------------------------------------------------- models


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """Where a config's value could come from, highest precedence first (Kafka's synonyms)."""

    name: str
    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class GroupConfigEntry:
    """One config of a group as the broker reports it (DescribeConfigs).

    ``source`` is Kafka's ``ConfigEntry.ConfigSource`` name: ``DYNAMIC_GROUP_CONFIG``
    when the group sets the key, ``DEFAULT_CONFIG`` otherwise. ``config_type`` is
    None from a broker that answers DescribeConfigs v1-v2 only.
    """

    name: str
    value: str | None
    source: str
    sensitive: bool = False
    read_only: bool = False
    config_type: str | None = None
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def dynamic(self) -> bool:
        """Set on the group itself (what ``kafka-configs.sh --describe`` lists)."""
        return self.source == DYNAMIC_GROUP_CONFIG


@dataclass(frozen=True, slots=True)
class GroupConfigs:
    """Every config the broker reports for one group, sorted by name (as Kafka's tool).

    ``exists`` is whether the group exists, when that was checked (a group with no
    config of its own that no broker lists, e.g. a typo); None when not checked.
    """

    group_id: str
    entries: tuple[GroupConfigEntry, ...]
    exists: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(sorted(self.entries, key=lambda e: e.name)))

    def get(self, name: str) -> GroupConfigEntry | None:
        for entry in self.entries:
            if entry.name == name:
                return entry
        return None

    def dynamic(self) -> tuple[GroupConfigEntry, ...]:
        """The configs the group sets itself."""
        return tuple(entry for entry in self.entries if entry.dynamic)

    def share(self) -> tuple[GroupConfigEntry, ...]:
        """The share-group configs (``share.*``, ``errors.deadletterqueue.*``), defaults too."""
        return tuple(entry for entry in self.entries if is_share_group_config(entry.name))

    def names(self) -> frozenset[str]:
        return frozenset(entry.name for entry in self.entries)


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """The bound settings one broker reported (``group.share.max.*`` ...).

    ``error`` says why none could be read (CLUSTER_AUTHORIZATION_FAILED, ...);
    a setting missing from ``values`` is then Kafka's default.
    """

    node_id: int
    values: tuple[tuple[str, int], ...] = ()
    error: KafkaError | None = None

    def value(self, name: str) -> int | None:
        return next((value for setting, value in self.values if setting == name), None)


@dataclass(frozen=True, slots=True)
class ConfigOperation:
    """One IncrementalAlterConfigs operation: set a value, or delete the group's own."""

    name: str
    operation: Literal["set", "delete"]
    value: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One key of a set or unset: what it was before, and what it becomes.

    ``value`` is None for an unset (the key falls back to its default).
    """

    name: str
    operation: Literal["set", "delete"]
    value: str | None
    previous_value: str | None
    previous_source: str | None


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """What a ``config set`` or ``unset`` did (or, with ``validate_only``, would do).

    ``notes`` are facts the operator should know beside success: a bound checked
    against Kafka's default because the broker's could not be read, a key to
    unset that the group did not set.
    """

    group_id: str
    changes: tuple[ConfigChange, ...]
    validate_only: bool = False
    notes: tuple[str, ...] = ()


# --------------------------------------------------------------------------- converters


def describe_result_for(response: Any, resource_type: int, name: str) -> Any | KafkaError:
    """The DescribeConfigs result of one resource, or its error as a KafkaError."""
    return describe_results_for(response, resource_type, [name])[name]


def describe_results_for(
    response: Any, resource_type: int, names: Sequence[str]
) -> dict[str, Any | KafkaError]:
    """:func:`describe_result_for` of many resources, the response indexed once: looked
    up one by one, a request of 10,000 groups cost 10^8 steps."""
    found: dict[str, Any] = {}
    for result in response.results:
        if int(result.resource_type) == resource_type:
            found.setdefault(result.resource_name, result)
    answers: dict[str, Any | KafkaError] = {}
    for name in names:
        result = found.get(name)
        if result is None:
            answers[name] = KafkaError.of(-1, f"the broker did not answer for resource {name!r}")
        elif (code := int(result.error_code)) != 0:
            message = result.error_message
            answers[name] = KafkaError.of(code, None if message in ("", None) else message)
        else:
            answers[name] = result
    return answers


def _source_name(source: int) -> str:
    return CONFIG_SOURCES.get(int(source), "UNKNOWN")


def _entry_from(config: Any) -> GroupConfigEntry:
    config_type = getattr(config, "config_type", None)
    return GroupConfigEntry(
        name=config.name,
        value=config.value,
        source=_source_name(config.config_source),
        sensitive=bool(config.is_sensitive),
        read_only=bool(config.read_only),
        config_type=None if config_type is None else CONFIG_TYPES.get(int(config_type)),
        synonyms=tuple(
            ConfigSynonym(synonym.name, synonym.value, _source_name(synonym.source))
            for synonym in config.synonyms
        ),
    )


def group_configs_from(result: Any, group_id: str) -> GroupConfigs:
    """A successful DescribeConfigs result for a GROUP resource as ``GroupConfigs``."""
    return GroupConfigs(group_id, tuple(_entry_from(config) for config in result.configs))


def broker_settings_from(result: Any | KafkaError, node_id: int) -> BrokerSettings:
    """A BROKER resource's DescribeConfigs result as the integer settings it holds."""
    if isinstance(result, KafkaError):
        return BrokerSettings(node_id, (), result)
    values: list[tuple[str, int]] = []
    for config in result.configs:
        text = config.value
        if text is not None and JAVA_INT.fullmatch(text.strip()):
            values.append((config.name, int(text.strip())))
    return BrokerSettings(node_id, tuple(values))


def alter_error_from(response: Any, group_id: str) -> KafkaError | None:
    """The IncrementalAlterConfigs error for ``group_id``'s GROUP resource, if any."""
    for result in response.responses:
        if int(result.resource_type) == GROUP_RESOURCE and result.resource_name == group_id:
            code = int(result.error_code)
            if code == 0:
                return None
            message = result.error_message
            return KafkaError.of(code, None if message in ("", None) else message)
    return KafkaError.of(-1, "the broker did not answer for this group")


# --------------------------------------------------------------------------- the admin


class GroupConfigAdmin:
    """Group-config operations over a connected ``KafkaClient``.

    Every request goes to one broker of the cluster (Kafka's least-loaded
    choice), never to the group's coordinator: configs are cluster metadata.
    """

    def __init__(self, client: KafkaClient) -> None:
        self._client = client

    @property
    def client(self) -> KafkaClient:
        """The connected client, for callers that also send their own requests."""
        return self._client

    # -- reading ----------------------------------------------------------------

    async def describe(self, group_id: str, *, check_exists: bool = False) -> GroupConfigs:
        """Every config of ``group_id`` with its source and synonyms (DescribeConfigs).

        With ``check_exists``, a group with no config of its own is looked up in
        every broker's ListGroups (any group type), as kafka-configs.sh does
        before it says "doesn't exist and doesn't have dynamic config".
        """
        _, response = await self._client.request(
            DESCRIBE_CONFIGS,
            {
                "resources": [_group_resource(group_id)],
                "include_synonyms": True,
                "include_documentation": False,
            },
            min_version=DESCRIBE_CONFIGS_WITH_SOURCE,
        )
        configs = _group_configs_or_refuse(response, group_id)
        if check_exists and not configs.dynamic():
            exists = await self.group_exists(group_id)
            configs = GroupConfigs(group_id, configs.entries, exists)
        return configs

    async def describe_with_broker(
        self, group_id: str, node_id: int
    ) -> tuple[GroupConfigs, BrokerSettings]:
        """The group's configs and broker ``node_id``'s bound settings, in one request."""
        _, response = await self._client.request(
            DESCRIBE_CONFIGS,
            {
                "resources": [
                    _group_resource(group_id),
                    {
                        "resource_type": BROKER_RESOURCE,
                        "resource_name": str(node_id),
                        "configuration_keys": list(BOUND_SETTINGS),
                    },
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
            node=node_id,
            min_version=DESCRIBE_CONFIGS_WITH_SOURCE,
        )
        configs = _group_configs_or_refuse(response, group_id)
        broker = broker_settings_from(
            describe_result_for(response, BROKER_RESOURCE, str(node_id)), node_id
        )
        return configs, broker

    async def describe_with_topic(
        self, group_id: str, node_id: int | None, topic: str | None
    ) -> tuple[GroupConfigs, DlqTopic | None]:
        """The group's configs and, when ``topic`` is given, what that DLQ topic is, in one request.

        A topic the broker does not know is ``exists=False``; another refusal
        (TOPIC_AUTHORIZATION_FAILED ...) leaves its existence unknown, with the reason.
        """
        resources: list[Mapping[str, Any]] = [_group_resource(group_id)]
        if topic is not None:
            resources.append(
                {
                    "resource_type": TOPIC_RESOURCE,
                    "resource_name": topic,
                    "configuration_keys": [DLQ_GROUP_ENABLE],
                }
            )
        _, response = await self._client.request(
            DESCRIBE_CONFIGS,
            {"resources": resources, "include_synonyms": False, "include_documentation": False},
            node=node_id,
            min_version=DESCRIBE_CONFIGS_WITH_SOURCE,
        )
        configs = _group_configs_or_refuse(response, group_id)
        if topic is None:
            return configs, None
        result = describe_result_for(response, TOPIC_RESOURCE, topic)
        if isinstance(result, KafkaError):
            if result.code == _UNKNOWN_TOPIC:
                return configs, DlqTopic(topic, False)
            return configs, DlqTopic(topic, None, error=str(result))
        enable = next(
            (config.value for config in result.configs if config.name == DLQ_GROUP_ENABLE), None
        )
        return configs, DlqTopic(topic, True, enable)

    async def group_exists(self, group_id: str) -> bool | None:
        """Whether any broker lists ``group_id`` (any type); None when one could not be asked."""
        metadata = await self._client.metadata([])
        brokers = sorted(metadata.brokers)

        async def listed(node_id: int) -> set[str] | None:
            try:
                _, response = await self._client.request(
                    LIST_GROUPS, {"states_filter": [], "types_filter": []}, node=node_id
                )
            except (AuthenticationFailed, IncompatibleBroker):
                raise
            except (ConnectionFailed, TimedOut):
                return None
            if int(response.error_code) != 0:
                return None
            return {group.group_id for group in response.groups}

        answers = await asyncio.gather(*(listed(node_id) for node_id in brokers))
        if any(answer is not None and group_id in answer for answer in answers):
            return True
        if any(answer is None for answer in answers):
            return None
        return False

    async def any_broker(self) -> int:
        """The broker to ask: the lowest id in the cluster metadata."""
        metadata = await self._client.metadata([])
        if not metadata.brokers:
            raise ConnectionFailed("the cluster metadata lists no brokers")
        return min(metadata.brokers)

    # -- changing ---------------------------------------------------------------

    async def alter(
        self,
        group_id: str,
        operations: Sequence[ConfigOperation],
        *,
        validate_only: bool = False,
        node: int | None = None,
    ) -> None:
        """IncrementalAlterConfigs for one GROUP, as given (no checks of kshare's own).

        The broker's refusal becomes ``Refused`` with its message.
        """
        _, response = await self._client.request(
            INCREMENTAL_ALTER_CONFIGS,
            {
                "resources": [
                    {
                        "resource_type": GROUP_RESOURCE,
                        "resource_name": group_id,
                        "configs": [
                            {
                                "name": operation.name,
                                "config_operation": AlterConfigOpType.SET
                                if operation.operation == "set"
                                else AlterConfigOpType.DELETE,
                                "value": operation.value,
                            }
                            for operation in operations
                        ],
                    }
                ],
                "validate_only": validate_only,
            },
            node=node,
        )
        error = alter_error_from(response, group_id)
        if error is not None:
            if int(error.code) in AUTHORIZATION_ERROR_CODES:
                raise NotAuthorized(
                    f"not authorized to alter the configs of group {group_id!r}: {error}"
                )
            raise Refused(f"the broker refused to update group {group_id!r}: {error}")

    async def set_configs(
        self,
        group_id: str,
        assignments: Sequence[str],
        *,
        validate_only: bool = False,
        facts: ClusterFacts | None = None,
    ) -> ConfigUpdate:
        """Set ``KEY=VALUE`` share configs on a group, after every check Kafka would make.

        Static checks first (UsageError); then the group's configs and the broker's
        bounds -- from ``facts`` when the session looked them up, else read here in
        the same DescribeConfigs -- (a 4.3 key on an older broker, a value out of the
        broker's bounds: UsageError); then IncrementalAlterConfigs, which with
        ``validate_only`` makes the broker validate without changing anything. With
        ``facts``, a DLQ setting Kafka accepts but will not act on comes back as
        notes (``dlq_notes``), the DLQ topic described in the same request.
        """
        checked = check_assignments(assignments)
        if facts is None:
            node = await self.any_broker()
            configs, broker = await self.describe_with_broker(group_id, node)
            topic = None
        else:
            node = facts.node_id if facts.node_id is not None else await self.any_broker()
            configs, topic = await self.describe_with_topic(
                group_id, node, dlq_topic_to_check(checked)
            )
            broker = facts.bounds()
        check_supported(configs, [value.key for value in checked])
        notes = check_against_broker(checked, configs, broker)
        if facts is not None:
            notes = (*notes, *dlq_notes(checked, facts, topic))
        await self.alter(
            group_id,
            [ConfigOperation(value.key.name, "set", value.raw) for value in checked],
            validate_only=validate_only,
            node=node,
        )
        changes = tuple(_change(configs, value.key.name, "set", value.raw) for value in checked)
        return ConfigUpdate(group_id, changes, validate_only, notes)

    async def unset_configs(
        self, group_id: str, names: Sequence[str], *, validate_only: bool = False
    ) -> ConfigUpdate:
        """Delete the group's own values of ``names``, so their defaults apply again.

        A key the group does not set is left alone, with a note: it already has its
        default (kafka-configs.sh refuses the whole command instead).
        """
        keys = check_names(names)
        configs = await self.describe(group_id)
        check_supported(configs, keys)
        to_delete = [key for key in keys if (entry := configs.get(key.name)) and entry.dynamic]
        notes = tuple(
            f"{key.name} is not set on group {group_id!r}: it already has its default"
            for key in keys
            if key not in to_delete
        )
        if to_delete:
            await self.alter(
                group_id,
                [ConfigOperation(key.name, "delete") for key in to_delete],
                validate_only=validate_only,
            )
        changes = tuple(_change(configs, key.name, "delete", None) for key in to_delete)
        return ConfigUpdate(group_id, changes, validate_only, notes)


def _group_resource(group_id: str) -> Mapping[str, Any]:
    return {"resource_type": GROUP_RESOURCE, "resource_name": group_id, "configuration_keys": None}


def _group_configs_or_refuse(response: Any, group_id: str) -> GroupConfigs:
    result = describe_result_for(response, GROUP_RESOURCE, group_id)
    if isinstance(result, KafkaError):
        if int(result.code) in AUTHORIZATION_ERROR_CODES:
            raise NotAuthorized(
                f"not authorized to read the configs of group {group_id!r}: {result}"
            )
        raise Refused(f"cannot read the configs of group {group_id!r}: {result}")
    return group_configs_from(result, group_id)


def _change(
    configs: GroupConfigs, name: str, operation: Literal["set", "delete"], value: str | None
) -> ConfigChange:
    entry = configs.get(name)
    return ConfigChange(
        name,
        operation,
        value,
        None if entry is None else entry.value,
        None if entry is None else entry.source,
    )
