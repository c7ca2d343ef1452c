"""What the cluster is: its finalized features and its share-related cluster configs.

A command that offers a feature only some clusters act on -- Kafka 4.4's
dead-letter queue needs ``share.version`` 2; a group config must lie within the
broker's ``group.share.min/max.*`` -- must know the cluster it talks to, and
say plainly what the cluster lacks. ``ClusterFacts`` is that knowledge, read
once per command run by the ``Session`` (``services/session.py``): the feature
levels come with the ApiVersions answer the client already has, the configs in
one DescribeConfigs of one broker's BROKER resource.

A broker that will not describe its configs (no DESCRIBE_CONFIGS on the
cluster) leaves ``configs_error`` set: the facts then hold only the features,
and each reader falls back to Kafka's defaults and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kshare_cli.admin.group_configs import (
    DESCRIBE_CONFIGS_WITH_SOURCE,
    BrokerSettings,
    describe_result_for,
)
from kshare_cli.errors import ConnectionFailed
from kshare_cli.kafka.api_keys import DESCRIBE_CONFIGS
from kshare_cli.kafka.features import (
    METADATA_VERSION,
    SHARE_VERSION,
    kafka_line_of,
    metadata_version_name,
)
from kshare_cli.kafka.group_configs import (
    BROKER_RESOURCE,
    DLQ_AUTO_CREATE_TOPICS_ENABLE,
    DLQ_SHARE_VERSION,
    DLQ_TOPIC_NAME_PREFIX,
    JAVA_INT,
    SHARE_CONFIG_KEYS,
)
from kshare_cli.wire.errors import KafkaError

if TYPE_CHECKING:
    from kshare_cli.wire.client import KafkaClient

__all__ = [
    "CLUSTER_CONFIG_NAMES",
    "ClusterFacts",
    "cluster_facts_from",
    "read_cluster_facts",
]

#: The broker configs a share-group command may need: the bounds of the share-group
#: configs (``group.share.min/max.*``) and Kafka 4.4's DLQ cluster configs.
CLUSTER_CONFIG_NAMES: Final = (
    *(bound.setting for key in SHARE_CONFIG_KEYS for bound in key.bounds),
    DLQ_TOPIC_NAME_PREFIX,
    DLQ_AUTO_CREATE_TOPICS_ENABLE,
)


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """The cluster's feature levels and share-related configs, as one broker reported them.

    ``finalized_features`` are the levels the cluster acts on (``share.version``
    1 or 2, ``metadata.version`` 30 for 4.3-IV0); ``supported_features`` what
    the broker's software could be upgraded to. ``configs`` are the broker
    configs of :data:`CLUSTER_CONFIG_NAMES` that broker ``node_id`` reported
    (a 4.2 broker has no DLQ configs, so they are missing, not defaulted).
    """

    node_id: int | None
    finalized_features: tuple[tuple[str, int], ...] = ()
    supported_features: tuple[tuple[str, int, int], ...] = ()
    configs: tuple[tuple[str, str | None], ...] = ()
    configs_error: KafkaError | None = None

    # -- features ------------------------------------------------------------

    def feature(self, name: str) -> int | None:
        """A finalized feature level; None when the broker reports none for ``name``."""
        return next((level for feature, level in self.finalized_features if feature == name), None)

    def supported_max(self, name: str) -> int | None:
        return next(
            (highest for feature, _, highest in self.supported_features if feature == name), None
        )

    @property
    def share_version(self) -> int | None:
        return self.feature(SHARE_VERSION)

    @property
    def metadata_version(self) -> str | None:
        """``metadata.version`` by Kafka's name (``4.3-IV0``)."""
        level = self.feature(METADATA_VERSION)
        return None if level is None else metadata_version_name(level)

    @property
    def kafka_line(self) -> str | None:
        """The newest Kafka release line the features prove (``4.4``), None when unknown."""
        return kafka_line_of(self.feature(METADATA_VERSION), self.supported_max(SHARE_VERSION))

    @property
    def dead_letter_queue(self) -> bool:
        """Whether the cluster acts on the DLQ configs (``share.version`` >= 2)."""
        return (self.share_version or 0) >= DLQ_SHARE_VERSION

    def dead_letter_queue_lacking(self) -> str | None:
        """What the cluster lacks for the dead-letter queue, in an operator's words, or None."""
        if self.dead_letter_queue:
            return None
        have = (
            "does not report share.version"
            if self.share_version is None
            else f"share.version is {self.share_version}"
        )
        return (
            f"this cluster's {have}: the dead-letter queue needs {DLQ_SHARE_VERSION} "
            f"(`kafka-features.sh upgrade --feature share.version={DLQ_SHARE_VERSION}`)"
        )

    # -- configs -------------------------------------------------------------

    def config(self, name: str) -> str | None:
        return next((value for config, value in self.configs if config == name), None)

    @property
    def dlq_topic_name_prefix(self) -> str | None:
        """``errors.deadletterqueue.topic.name.prefix`` (``dlq.``); None when not reported."""
        return self.config(DLQ_TOPIC_NAME_PREFIX)

    @property
    def dlq_auto_create_topics(self) -> bool | None:
        """``errors.deadletterqueue.auto.create.topics.enable``; None when not reported."""
        value = self.config(DLQ_AUTO_CREATE_TOPICS_ENABLE)
        return None if value is None else value.strip().lower() == "true"

    def bounds(self) -> BrokerSettings:
        """The integer settings (``group.share.max.*`` ...) for the checks of a group config."""
        values = tuple(
            (name, int(value.strip()))
            for name, value in self.configs
            if value is not None and JAVA_INT.fullmatch(value.strip())
        )
        return BrokerSettings(
            self.node_id if self.node_id is not None else -1, values, self.configs_error
        )

    def document(self) -> dict[str, Any]:
        """The facts a JSON document shows (``describe --state -o json``'s ``cluster``)."""
        return {
            "kafka_line": self.kafka_line,
            "metadata_version": self.metadata_version,
            "share_version": self.share_version,
            "dead_letter_queue": self.dead_letter_queue,
        }


def cluster_facts_from(
    finalized: dict[str, int] | Any,
    supported: dict[str, tuple[int, int]] | Any,
    node_id: int | None,
    result: Any | KafkaError | None,
) -> ClusterFacts:
    """Facts from an ApiVersions answer's features and a BROKER DescribeConfigs result."""
    features = tuple(sorted((str(name), int(level)) for name, level in dict(finalized).items()))
    supports = tuple(
        sorted((str(name), int(low), int(high)) for name, (low, high) in dict(supported).items())
    )
    if result is None or isinstance(result, KafkaError):
        return ClusterFacts(node_id, features, supports, (), result)
    configs = tuple((str(config.name), config.value) for config in result.configs)
    return ClusterFacts(node_id, features, supports, configs)


async def read_cluster_facts(client: KafkaClient, *, configs: bool = True) -> ClusterFacts:
    """The cluster's facts: features from the client's ApiVersions, configs from one broker.

    The broker asked is the lowest id in the metadata (as ``GroupConfigAdmin``
    asks); a refusal of its configs is kept as ``configs_error``, not raised.
    Without ``configs`` only the features are read, which costs no request (a
    ``describe --state`` must not wait on one broker for a header).
    """
    versions = client.broker_versions
    if not configs:
        return cluster_facts_from(
            versions.finalized_features, versions.supported_features, None, None
        )
    metadata = await client.metadata([])
    if not metadata.brokers:
        raise ConnectionFailed("the cluster metadata lists no brokers")
    node_id = min(metadata.brokers)
    _, response = await client.request(
        DESCRIBE_CONFIGS,
        {
            "resources": [
                {
                    "resource_type": BROKER_RESOURCE,
                    "resource_name": str(node_id),
                    "configuration_keys": list(CLUSTER_CONFIG_NAMES),
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
        node=node_id,
        min_version=DESCRIBE_CONFIGS_WITH_SOURCE,
    )
    result = describe_result_for(response, BROKER_RESOURCE, str(node_id))
    return cluster_facts_from(
        versions.finalized_features, versions.supported_features, node_id, result
    )
