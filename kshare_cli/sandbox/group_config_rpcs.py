"""DescribeConfigs and IncrementalAlterConfigs: group, broker, cluster and topic configs.

GROUP resources are answered from the cluster's ``GroupConfigStore``, a broker's
own BROKER resource with its ``group.*`` settings (and, on 4.4, the DLQ cluster
configs), the BROKER resource ``""`` with the dynamic cluster defaults (4.4:
the DLQ's), as Kafka answers them. TOPIC resources list the configs a topic was
created or altered with (``DYNAMIC_TOPIC_CONFIG``, as ``kafka-configs.sh
--describe`` prints them) and, on 4.4, ``errors.deadletterqueue.group.enable``
at its default; an alter of it is checked as Kafka's ConfigDef checks a BOOLEAN
(the recorded run 12), and refused as unknown before 4.4.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
from kshare_cli.kafka.group_configs import (
    BROKER_RESOURCE,
    DLQ_GROUP_ENABLE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    AlterConfigOpType,
    ConfigSource,
    ConfigType,
    java_trim,
)
from kshare_cli.kafka.versions import at_least
from kshare_cli.sandbox.broker import (
    Broker,
    handles,
    response_type,
)
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.group_configs import (
    ConfigEntry,
    ConfigSynonym,
    GroupConfigError,
    GroupConfigStore,
)
from kshare_cli.sandbox.log import Topic
from kshare_cli.sandbox.server import Connection
from kshare_cli.sandbox.share_groups import (
    ShareGroups,
    installed_share_groups,
)
from kshare_cli.wire.build import build

# -- group configs ---------------------------------------------------------------


@handles(DESCRIBE_CONFIGS)
async def describe_configs(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = installed_share_groups(broker)
    payload = request.payload
    options = _DescribeOptions(
        include_synonyms=bool(getattr(payload, "include_synonyms", False)),
        include_documentation=bool(getattr(payload, "include_documentation", False)),
    )
    results = []
    for resource in payload.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        keys = None if resource.configuration_keys is None else list(resource.configuration_keys)
        entry: dict[str, Any] = {
            "error_code": ErrorCode.none,
            # Kafka leaves the schema default, "", on a successful result (golden line 396).
            "error_message": "",
            "resource_type": kind,
            "resource_name": name,
            "configs": [],
        }
        if kind == GROUP_RESOURCE:
            entry.update(_describe_group(shares, name, keys, options))
        elif kind == TOPIC_RESOURCE:
            entry.update(_describe_topic(broker, shares, name, keys, options))
        elif kind == BROKER_RESOURCE:
            entry.update(_describe_broker(shares, name, keys, options, connection.node_id))
        else:
            entry.update(_refused(ErrorCode.invalid_request, "Unsupported resource type"))
        results.append(entry)
    return build(response_type(request), {"throttle_time": 0, "results": results})


@dataclass(frozen=True, slots=True)
class _DescribeOptions:
    """What a DescribeConfigs request asks to be told besides each config's value."""

    include_synonyms: bool
    include_documentation: bool


def _refused(error_code: int, message: str) -> dict[str, Any]:
    """The fields of a result that failed: its error, and no configs."""
    return {"error_code": error_code, "error_message": message}


def _described(configs: Iterable[ConfigEntry]) -> dict[str, Any]:
    return {"configs": [_config_entry(c) for c in configs]}


def _describe_group(
    shares: ShareGroups | None, name: str, keys: list[str] | None, options: _DescribeOptions
) -> dict[str, Any]:
    """A GROUP resource: unsupported on a broker without share groups, as Kafka 3.x says."""
    if shares is None:
        return _refused(ErrorCode.invalid_request, "Unsupported resource type")
    try:
        configs = shares.configs.describe(
            name, keys, options.include_documentation, include_synonyms=options.include_synonyms
        )
    except GroupConfigError as error:
        return _refused(error.error_code, error.message)
    return _described(configs)


def _describe_topic(
    broker: Broker,
    shares: ShareGroups | None,
    name: str,
    keys: list[str] | None,
    options: _DescribeOptions,
) -> dict[str, Any]:
    topic = broker.topic(name)
    if topic is None:
        return _refused(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.")
    store = None if shares is None else shares.configs
    return _described(_topic_configs(topic, store, keys, options.include_synonyms))


def _describe_broker(
    shares: ShareGroups | None,
    name: str,
    keys: list[str] | None,
    options: _DescribeOptions,
    node_id: int,
) -> dict[str, Any]:
    """A BROKER resource: ``""`` is the cluster-wide dynamic defaults; a broker id is that
    broker's own configs (the sandbox has its group.* settings), as ConfigHelper answers:
    another id or a non-number is INVALID_REQUEST."""
    if not name:
        if shares is None:
            return {}
        return _described(
            shares.configs.describe_cluster_defaults(
                keys, include_synonyms=options.include_synonyms
            )
        )
    try:
        broker_id = int(name)
    except ValueError:
        return _refused(
            ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}"
        )
    if broker_id != node_id:
        return _refused(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {node_id} or empty string, but received {name}",
        )
    if shares is None:
        return {}
    return _described(
        shares.configs.describe_broker(keys, include_synonyms=options.include_synonyms)
    )


def _topic_configs(
    topic: Topic,
    store: GroupConfigStore | None,
    keys: list[str] | None,
    include_synonyms: bool,
) -> list[ConfigEntry]:
    """A topic's configs as the sandbox knows them: those it was given, then 4.4's DLQ flag."""
    wanted = set(keys) if keys else None
    entries: list[ConfigEntry] = []
    for name, value in sorted(topic.configs.items()):
        if wanted is not None and name not in wanted:
            continue
        synonym = ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG)
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                read_only=False,
                source=ConfigSource.TOPIC_CONFIG,
                is_sensitive=False,
                synonyms=(synonym,) if include_synonyms else (),
                config_type=ConfigType.BOOLEAN if name == DLQ_GROUP_ENABLE else ConfigType.STRING,
                documentation=None,
            )
        )
    if (
        store is not None
        and at_least(store.kafka_version, "4.4")
        and DLQ_GROUP_ENABLE not in topic.configs
        and (wanted is None or DLQ_GROUP_ENABLE in wanted)
    ):
        # No broker synonym: Kafka gives DEFAULT_CONFIG and no synonyms.
        entries.append(
            ConfigEntry(
                name=DLQ_GROUP_ENABLE,
                value="false",
                read_only=False,
                source=ConfigSource.DEFAULT_CONFIG,
                is_sensitive=False,
                synonyms=(),
                config_type=ConfigType.BOOLEAN,
                documentation=None,
            )
        )
    return entries


def topic_config_refusal(
    store: GroupConfigStore | None, configs: dict[str, str | None]
) -> tuple[int, str] | None:
    """Kafka's refusal of a topic config the sandbox checks: 4.4's DLQ flag, a BOOLEAN.

    Before 4.4 the name is unknown to Kafka. Other topic configs pass unchecked.
    """
    if DLQ_GROUP_ENABLE not in configs:
        return None
    if store is None or not at_least(store.kafka_version, "4.4"):
        return ErrorCode.invalid_config, f"Unknown topic config name: {DLQ_GROUP_ENABLE}"
    value = configs[DLQ_GROUP_ENABLE]
    if value is not None and java_trim(value).lower() not in ("true", "false"):
        return (
            ErrorCode.invalid_config,
            f"Invalid value {value} for configuration {DLQ_GROUP_ENABLE}: "
            "Expected value to be either true or false",
        )
    return None


def _alter_topic(
    broker: Broker,
    store: GroupConfigStore | None,
    name: str,
    ops: list[tuple[str, int, str | None]],
    validate_only: bool,
) -> tuple[int, str | None]:
    topic = broker.topic(name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist."
    merged: dict[str, str] = dict(topic.configs)
    for key, op, value in ops:
        if op == AlterConfigOpType.SET and value is not None:
            merged[key] = value
        elif op == AlterConfigOpType.DELETE:
            merged.pop(key, None)
        else:
            return ErrorCode.invalid_request, f"Unknown operations type {op}"
    refusal = topic_config_refusal(store, {key: merged.get(key) for key, _, _ in ops})
    if refusal is not None:
        return refusal
    if not validate_only:
        topic.configs.clear()
        topic.configs.update(merged)
    return 0, None


def _config_entry(config: ConfigEntry) -> dict[str, Any]:
    """One DescribeConfigs result entry, for ``build``."""
    return {
        "name": config.name,
        "value": config.value,
        "read_only": config.read_only,
        "config_source": int(config.source),
        "is_sensitive": config.is_sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": int(s.source)} for s in config.synonyms
        ],
        "config_type": int(config.config_type),
        "documentation": config.documentation,
    }


@handles(INCREMENTAL_ALTER_CONFIGS)
async def incremental_alter_configs(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    shares = installed_share_groups(broker)
    payload = request.payload
    responses = []
    for resource in payload.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
        validate_only = bool(payload.validate_only)
        store = None if shares is None else shares.configs
        answer: tuple[int, str | None] | None = None
        if kind == TOPIC_RESOURCE:
            answer = _alter_topic(broker, store, name, ops, validate_only)
        elif kind == BROKER_RESOURCE and not name and store is not None:
            answer = store.alter_cluster_defaults(ops, validate_only)
        if answer is not None:
            code, message = answer
            responses.append(
                {
                    "error_code": code,
                    "error_message": message,
                    "resource_type": kind,
                    "resource_name": name,
                }
            )
            continue
        if kind != GROUP_RESOURCE or shares is None:
            responses.append(
                {
                    "error_code": ErrorCode.invalid_request,
                    "error_message": "The sandbox alters GROUP and TOPIC configs and the "
                    "DLQ cluster defaults only."
                    if shares is not None
                    else "Unsupported resource type",
                    "resource_type": kind,
                    "resource_name": name,
                }
            )
            continue
        code, message = shares.configs.incremental_alter(name, ops, validate_only)
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": kind,
                "resource_name": name,
            }
        )
    return build(response_type(request), {"throttle_time": 0, "responses": responses})
