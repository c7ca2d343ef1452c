"""DescribeConfigs and IncrementalAlterConfigs: group configs and the broker's own settings.

GROUP resources are answered from the cluster's ``GroupConfigStore``, BROKER
resources with the broker's ``group.*`` settings, as Kafka 4.2 answers them.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
from kshare_cli.kafka.group_configs import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from kshare_cli.sandbox.broker import (
    Broker,
    handles,
    response_type,
)
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.group_configs import (
    ConfigEntry,
    GroupConfigError,
)
from kshare_cli.sandbox.server import Connection
from kshare_cli.sandbox.share_groups import (
    installed_share_groups,
)
from kshare_cli.wire.build import build

# -- group configs ---------------------------------------------------------------


@handles(DESCRIBE_CONFIGS)
async def describe_configs(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = installed_share_groups(broker)
    payload = request.payload
    include_synonyms = bool(getattr(payload, "include_synonyms", False))
    include_documentation = bool(getattr(payload, "include_documentation", False))
    results = []
    for resource in payload.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        entry: dict[str, Any] = {
            "error_code": ErrorCode.none,
            # Kafka leaves the schema default, "", on a successful result (golden line 396).
            "error_message": "",
            "resource_type": kind,
            "resource_name": name,
            "configs": [],
        }
        if kind == GROUP_RESOURCE and shares is None:
            entry.update(
                error_code=ErrorCode.invalid_request, error_message="Unsupported resource type"
            )
        elif kind == GROUP_RESOURCE and shares is not None:
            try:
                configs = shares.configs.describe(
                    name,
                    None
                    if resource.configuration_keys is None
                    else list(resource.configuration_keys),
                    include_documentation,
                    include_synonyms=include_synonyms,
                )
            except GroupConfigError as error:
                entry.update(error_code=error.error_code, error_message=error.message)
            else:
                entry["configs"] = [_config_entry(c) for c in configs]
        elif kind == TOPIC_RESOURCE:
            topic = broker.topic(name)
            if topic is None:
                entry.update(
                    error_code=ErrorCode.unknown_topic_or_partition,
                    error_message=f"Topic {name} does not exist.",
                )
        elif kind == BROKER_RESOURCE and name:
            # ConfigHelper: this broker's own id gets its configs (the sandbox has its
            # group.* settings), another id or a non-number is INVALID_REQUEST. The
            # empty name (cluster-wide dynamic defaults) has none here: an empty list.
            try:
                broker_id: int | None = int(name)
            except ValueError:
                broker_id = None
            if broker_id is None:
                entry.update(
                    error_code=ErrorCode.invalid_request,
                    error_message=f"Broker id must be an integer, but it is: {name}",
                )
            elif broker_id != connection.node_id:
                entry.update(
                    error_code=ErrorCode.invalid_request,
                    error_message=(
                        f"Unexpected broker id, expected {connection.node_id} or empty string, "
                        f"but received {name}"
                    ),
                )
            elif shares is not None:
                entry["configs"] = [
                    _config_entry(c)
                    for c in shares.configs.describe_broker(
                        None
                        if resource.configuration_keys is None
                        else list(resource.configuration_keys),
                        include_synonyms=include_synonyms,
                    )
                ]
        elif kind != BROKER_RESOURCE:
            entry.update(
                error_code=ErrorCode.invalid_request, error_message="Unsupported resource type"
            )
        results.append(entry)
    return build(response_type(request), {"throttle_time": 0, "results": results})


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
        if kind != GROUP_RESOURCE or shares is None:
            responses.append(
                {
                    "error_code": ErrorCode.invalid_request,
                    "error_message": "The sandbox only alters GROUP configs."
                    if shares is not None
                    else "Unsupported resource type",
                    "resource_type": kind,
                    "resource_name": name,
                }
            )
            continue
        ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
        code, message = shares.configs.incremental_alter(name, ops, bool(payload.validate_only))
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": kind,
                "resource_name": name,
            }
        )
    return build(response_type(request), {"throttle_time": 0, "responses": responses})
