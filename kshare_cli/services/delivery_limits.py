"""A share group's delivery count limit, as the cluster states it (DescribeConfigs).

Kafka 4.3 lets a group set ``share.delivery.count.limit``; otherwise (and on 4.2)
the broker's ``group.share.delivery.count.limit`` applies. The in-flight views
scale their strips by it, ``kshare consume --interactive`` shows it with the config
that stated it, and the audit labels records archived at it. Many groups' limits
are looked up in a few batched requests (the exporter and ``health --all-groups``
read thousands of groups a refresh).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.errors import ConnectionFailed, IncompatibleBroker, TimedOut
from kshare_cli.kafka.api_keys import DESCRIBE_CONFIGS
from kshare_cli.kafka.group_configs import BROKER_RESOURCE, GROUP_RESOURCE, ConfigSource

if TYPE_CHECKING:
    from kshare_cli.admin.share_groups import ShareGroupAdmin
    from kshare_cli.wire.client import KafkaClient

__all__ = [
    "LIMITS_PER_REQUEST",
    "LIMIT_LOOKUP_S",
    "StatedDeliveryCountLimit",
    "delivery_count_limit",
    "stated_delivery_count_limit",
    "stated_delivery_count_limits",
]

_GROUP_LIMIT: Final = "share.delivery.count.limit"  # a group config since Kafka 4.3
_BROKER_LIMIT: Final = "group.share.delivery.count.limit"


@dataclass(frozen=True, slots=True)
class StatedDeliveryCountLimit:
    """A group's delivery count limit as the cluster stated it, and which config stated it.

    ``source`` is ``group config share.delivery.count.limit`` or ``broker config
    group.share.delivery.count.limit``: what ``kshare consume --interactive`` shows.
    """

    limit: int
    source: str


async def delivery_count_limit(admin: ShareGroupAdmin, group_id: str) -> int | None:
    """The group's delivery count limit; None when the cluster would not say.

    Kafka 4.3 lets a group set ``share.delivery.count.limit``; otherwise (and on
    4.2) the broker's ``group.share.delivery.count.limit`` applies. Both are asked
    in one DescribeConfigs. Only DESCRIBE on the group is required of an operator,
    so a refusal (no DESCRIBE_CONFIGS) costs the strip its exact scale, not the answer
    (and a dead letter its ``__dlq.errors.message``).
    """
    stated = await stated_delivery_count_limit(admin, group_id)
    return None if stated is None else stated.limit


async def stated_delivery_count_limit(
    admin: ShareGroupAdmin, group_id: str
) -> StatedDeliveryCountLimit | None:
    """:func:`delivery_count_limit` with the config that stated it; the one lookup of the limit."""
    client = admin.client
    metadata = await client.metadata([])
    # Lowest id first (one broker answers for all); a broker that is down or silent is
    # passed over for the next: the limit only scales the strips, so it never holds a
    # refresh for long.
    for node in sorted(metadata.brokers):
        try:
            async with asyncio.timeout(LIMIT_LOOKUP_S):
                return await _delivery_count_limit_from(client, group_id, node)
        except IncompatibleBroker:
            return None
        except (ConnectionFailed, TimedOut, TimeoutError):
            continue
    return None


#: How long one broker may take to answer the delivery-limit lookup before the next is asked.
LIMIT_LOOKUP_S: Final = 2.0
#: Groups per DescribeConfigs when the limits of many are looked up at once.
LIMITS_PER_REQUEST: Final = 250


async def stated_delivery_count_limits(
    admin: ShareGroupAdmin, group_ids: Sequence[str]
) -> dict[str, StatedDeliveryCountLimit | None]:
    """:func:`stated_delivery_count_limit` of many groups: ``LIMITS_PER_REQUEST`` groups
    per DescribeConfigs, side by side, each batch passed over to the next broker as one
    group's lookup is."""
    wanted = list(dict.fromkeys(group_ids))
    if not wanted:
        return {}
    client = admin.client
    metadata = await client.metadata([])
    nodes = sorted(metadata.brokers)

    async def batch(groups: list[str]) -> dict[str, StatedDeliveryCountLimit | None]:
        for node in nodes:
            try:
                async with asyncio.timeout(LIMIT_LOOKUP_S):
                    return await _delivery_count_limits_from(client, groups, node)
            except IncompatibleBroker:
                break
            except (ConnectionFailed, TimedOut, TimeoutError):
                continue
        return dict.fromkeys(groups)

    answers = await asyncio.gather(
        *(
            batch(wanted[start : start + LIMITS_PER_REQUEST])
            for start in range(0, len(wanted), LIMITS_PER_REQUEST)
        )
    )
    return {group_id: limit for answer in answers for group_id, limit in answer.items()}


async def _delivery_count_limit_from(
    client: KafkaClient, group_id: str, node: int
) -> StatedDeliveryCountLimit | None:
    """The limit as broker ``node`` states it (DescribeConfigs of the group and the broker)."""
    return (await _delivery_count_limits_from(client, [group_id], node))[group_id]


async def _delivery_count_limits_from(
    client: KafkaClient, group_ids: Sequence[str], node: int
) -> dict[str, StatedDeliveryCountLimit | None]:
    """Each group's limit as broker ``node`` states it: one DescribeConfigs of the groups
    and the broker; a group's own setting, else the broker's."""
    _, response = await client.request(
        DESCRIBE_CONFIGS,
        {
            "resources": [
                *(
                    {
                        "resource_type": GROUP_RESOURCE,
                        "resource_name": group_id,
                        "configuration_keys": [_GROUP_LIMIT],
                    }
                    for group_id in group_ids
                ),
                {
                    "resource_type": BROKER_RESOURCE,
                    "resource_name": str(node),
                    "configuration_keys": [_BROKER_LIMIT],
                },
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
        node=node,
    )
    # Each resource's result by (type, name), the first of each as
    # group_configs.describe_result_for finds it: looked up one by one
    # there, a batch of groups cost its square.
    results: dict[tuple[int, str], Any] = {}
    for result in response.results:
        results.setdefault((int(result.resource_type), result.resource_name), result)
    broker = _stated_limit(
        results.get((BROKER_RESOURCE, str(node))), BROKER_RESOURCE, _BROKER_LIMIT
    )
    return {
        group_id: _stated_limit(
            results.get((GROUP_RESOURCE, group_id)), GROUP_RESOURCE, _GROUP_LIMIT
        )
        or broker
        for group_id in group_ids
    }


def _stated_limit(
    result: Any | None, resource_type: int, key: str
) -> StatedDeliveryCountLimit | None:
    """The limit a resource's result states (None for a missing or failed result)."""
    if result is None or int(result.error_code) != 0:
        return None
    for config in result.configs:
        text = config.value
        # From 4.3 a group's DescribeConfigs lists the key even when the group never set
        # it, carrying the broker's value: only the group's own setting is the group's.
        if resource_type == GROUP_RESOURCE and config.config_source != ConfigSource.GROUP_CONFIG:
            continue
        if config.name == key and text is not None and text.strip().isdigit():
            kind = "group" if resource_type == GROUP_RESOURCE else "broker"
            return StatedDeliveryCountLimit(int(text.strip()), f"{kind} config {key}")
    return None
