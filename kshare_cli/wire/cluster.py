"""What the client knows about the cluster: brokers, topics, coordinators, API versions.

Pure state with no I/O (aiokafka's ``cluster.py`` split): the client feeds it
responses and asks it questions, so routing decisions -- which leader gets which
partition, which coordinator which groups, in one round of a fan-out
(``plan_leaders``, ``plan_coordinators``) -- can be tested without a socket.
The dataclasses here are the client's public vocabulary; kio's wire types stay
inside ``wire/`` so a kio upgrade does not ripple upwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map

from kshare_cli.errors import IncompatibleBroker
from kshare_cli.kafka.api_keys import SHARE_GROUP_APIS
from kshare_cli.wire.errors import KafkaError, is_retriable, retriable_for_topic

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A broker as the cluster advertises it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def __str__(self) -> str:
        return format_address(self.host, self.port)


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader_id: int
    leader_epoch: int
    error_code: int


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionMetadata]
    error_code: int
    is_internal: bool = False


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """One Metadata answer: the brokers and the topics asked about (all of them when None)."""

    cluster_id: str | None
    controller_id: int
    brokers: Mapping[int, BrokerNode]
    topics: Mapping[str, TopicMetadata]

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        """Share-group RPCs name topics by id; this turns an id back into its topic."""
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None


def format_address(host: str, port: int) -> str:
    """``host:port``, bracketing IPv6 literals so the text parses back."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def metadata_from_response(response: Any) -> ClusterMetadata:
    """A kio Metadata response (any version) as ``ClusterMetadata``."""
    brokers = {
        int(b.node_id): BrokerNode(int(b.node_id), b.host, int(b.port), getattr(b, "rack", None))
        for b in response.brokers
    }
    topics: dict[str, TopicMetadata] = {}
    for topic in response.topics:
        if topic.name is None:  # asked for by id and unknown: nothing to key it by
            continue
        partitions = {
            int(p.partition_index): PartitionMetadata(
                partition=int(p.partition_index),
                leader_id=int(p.leader_id),
                leader_epoch=int(getattr(p, "leader_epoch", -1)),
                error_code=int(p.error_code),
            )
            for p in topic.partitions
        }
        topics[topic.name] = TopicMetadata(
            name=topic.name,
            topic_id=getattr(topic, "topic_id", None) or uuid.UUID(int=0),
            partitions=partitions,
            error_code=int(topic.error_code),
            is_internal=bool(getattr(topic, "is_internal", False)),
        )
    return ClusterMetadata(
        cluster_id=getattr(response, "cluster_id", None),
        controller_id=int(getattr(response, "controller_id", -1)),
        brokers=brokers,
        topics=topics,
    )


@dataclass(slots=True)
class _CachedTopic:
    topic: TopicMetadata
    fetched_at: float


@dataclass(slots=True)
class ClusterState:
    """The latest brokers, topics and group coordinators, with the time each was learnt.

    Times are whatever monotonic clock the caller passes in; nothing here reads one.
    """

    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    _brokers_at: float | None = None
    _topics: dict[str, _CachedTopic] = field(default_factory=dict)
    _all_topics_at: float | None = None
    _coordinators: dict[str, BrokerNode] = field(default_factory=dict)

    def update(self, metadata: ClusterMetadata, *, all_topics: bool, now: float) -> None:
        """Take in a Metadata answer; an all-topics answer also forgets deleted topics."""
        self.cluster_id = metadata.cluster_id
        self.controller_id = metadata.controller_id
        if metadata.brokers:
            self.brokers = dict(metadata.brokers)
            self._brokers_at = now
        if all_topics:
            self._topics.clear()
            self._all_topics_at = now
        for name, topic in metadata.topics.items():
            if topic.error_code == 0:
                self._topics[name] = _CachedTopic(topic, now)
            else:
                self._topics.pop(name, None)

    def cached(
        self, topics: Sequence[str] | None, *, now: float, max_age: float
    ) -> ClusterMetadata | None:
        """The cached answer to a Metadata question, or None when it must be asked again.

        The broker list ages like the topics: a fan-out to every broker must not
        be planned on brokers learnt longer than ``max_age`` ago.
        """
        if not self.brokers or self._brokers_at is None or now - self._brokers_at > max_age:
            return None
        if topics is None:
            if self._all_topics_at is None or now - self._all_topics_at > max_age:
                return None
            chosen = {name: cached.topic for name, cached in self._topics.items()}
        else:
            chosen = {}
            for name in topics:
                entry = self._topics.get(name)
                if entry is None or now - entry.fetched_at > max_age:
                    return None
                chosen[name] = entry.topic
        return ClusterMetadata(self.cluster_id, self.controller_id, dict(self.brokers), chosen)

    def forget_topics(self) -> None:
        self._topics.clear()
        self._all_topics_at = None

    def broker(self, node_id: int) -> BrokerNode | None:
        found = self.brokers.get(node_id)
        if found is not None:
            return found
        for node in self._coordinators.values():
            if node.node_id == node_id:
                return node
        return None

    def coordinator(self, group_id: str) -> BrokerNode | None:
        return self._coordinators.get(group_id)

    def set_coordinator(self, group_id: str, node: BrokerNode) -> None:
        known = self.brokers.get(node.node_id)
        if known is not None and known.address == node.address:
            node = known  # keep the rack that Metadata knows and FindCoordinator does not
        self._coordinators[group_id] = node

    def forget_coordinators(self, group_ids: Iterable[str]) -> None:
        for group_id in group_ids:
            self._coordinators.pop(group_id, None)


# --------------------------------------------------------------------------- routing


@dataclass(frozen=True, slots=True)
class LeaderPlan:
    """Where one round of a fan-out to partition leaders sends each partition.

    ``by_leader`` holds the partitions to ask, per leader id, in the order given;
    ``failed`` the partitions that cannot be asked in this round, with the error to
    report if no later round answers them; ``retry`` those of them worth looking up
    again in fresh metadata (a leader being elected, a topic still loading).
    """

    by_leader: Mapping[int, list[TopicPartitionKey]]
    failed: Mapping[TopicPartitionKey, KafkaError]
    retry: list[TopicPartitionKey]


def plan_leaders(partitions: Sequence[TopicPartitionKey], metadata: ClusterMetadata) -> LeaderPlan:
    """Each partition to its leader in ``metadata``, or to the error that stops asking it.

    A topic-level error fails all its partitions (asked again only when
    ``retriable_for_topic``); a partition the metadata does not list is
    UNKNOWN_TOPIC_OR_PARTITION; one without a leader, or with a retriable error,
    is asked again.
    """
    by_leader: dict[int, list[TopicPartitionKey]] = {}
    failed: dict[TopicPartitionKey, KafkaError] = {}
    retry: list[TopicPartitionKey] = []
    for key in partitions:
        topic = metadata.topics.get(key[0])
        if topic is not None and topic.error_code != 0:
            failed[key] = KafkaError.of(topic.error_code)
            if retriable_for_topic(topic.error_code):
                retry.append(key)
            continue
        partition = None if topic is None else topic.partitions.get(key[1])
        if partition is None:
            failed[key] = KafkaError.of(ErrorCode.unknown_topic_or_partition)
        elif partition.leader_id < 0 or is_retriable(partition.error_code):
            failed[key] = KafkaError.of(partition.error_code or ErrorCode.leader_not_available)
            retry.append(key)
        else:
            by_leader.setdefault(partition.leader_id, []).append(key)
    return LeaderPlan(by_leader, failed, retry)


@dataclass(frozen=True, slots=True)
class CoordinatorPlan:
    """Where one round of a fan-out to group coordinators sends each group.

    ``batches`` holds, per coordinator (in the order their groups came), the groups
    of each request to it; ``failed`` the groups whose coordinator was not found,
    with the error that says why.
    """

    batches: Mapping[BrokerNode, list[list[str]]]
    failed: Mapping[str, KafkaError]


def plan_coordinators(
    group_ids: Sequence[str],
    coordinators: Mapping[str, BrokerNode | KafkaError],
    batch_size: int | None,
) -> CoordinatorPlan:
    """The groups per coordinator, cut into requests of ``batch_size`` (all in one when None)."""
    by_node: dict[BrokerNode, list[str]] = {}
    failed: dict[str, KafkaError] = {}
    for group_id in group_ids:
        coordinator = coordinators[group_id]
        if isinstance(coordinator, KafkaError):
            failed[group_id] = coordinator
        else:
            by_node.setdefault(coordinator, []).append(group_id)
    batches: dict[BrokerNode, list[list[str]]] = {}
    for node, groups in by_node.items():
        size = batch_size or len(groups)
        batches[node] = [groups[start : start + size] for start in range(0, len(groups), size)]
    return CoordinatorPlan(batches, failed)


# --------------------------------------------------------------------------- API versions


def api_name(api_key: int) -> str:
    """Kafka's name for an API (``ShareGroupDescribe``), as operators read it in broker docs."""
    name = api_key_map.get(api_key)
    if name is None:
        return f"API {api_key}"
    return "".join(part.capitalize() for part in str(name).split("_"))


@cache
def our_versions(api_key: int) -> tuple[int, int] | None:
    """The versions kshare speaks: those kio generated (Kafka 4.2's message specs)."""
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = sorted(schema_name_map[name])
    return (versions[0], versions[-1]) if versions else None


@dataclass(frozen=True, slots=True)
class BrokerApiVersions:
    """What one broker said it speaks in ApiVersions, and the choice of version against ours.

    ``finalized_features`` are the cluster's feature levels as this broker knows
    them (ApiVersions v3+: ``share.version``, ``metadata.version``, ...), each its
    finalized max level; ``supported_features`` the (min, max) levels this
    broker's software supports. Both are empty from a broker that sends none.
    """

    broker: str
    ranges: Mapping[int, tuple[int, int]]
    finalized_features: Mapping[str, int] = field(default_factory=dict)
    supported_features: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def choose(self, api_key: int, min_version: int = 0, max_version: int | None = None) -> int:
        """The highest version both sides speak within the bounds, else IncompatibleBroker."""
        ours = our_versions(api_key)
        if ours is None:
            raise ValueError(f"kio has no schema for API key {api_key}")
        low = max(ours[0], min_version)
        high = ours[1] if max_version is None else min(ours[1], max_version)
        theirs = self.ranges.get(api_key)
        name = api_name(api_key)
        share_note = (
            "; share groups need Apache Kafka 4.1 or later" if api_key in SHARE_GROUP_APIS else ""
        )
        if theirs is None:
            raise IncompatibleBroker(
                f"broker at {self.broker} does not support {name} (API {api_key}){share_note}"
            )
        chosen = min(high, theirs[1])
        if chosen < max(low, theirs[0]):
            raise IncompatibleBroker(
                f"broker at {self.broker} supports {name} (API {api_key}) only in versions "
                f"{_span(theirs)}; kshare needs {_span((low, high))}{share_note}"
            )
        return chosen

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        try:
            self.choose(api_key, min_version)
        except (IncompatibleBroker, ValueError):
            return False
        return True


def _span(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return f"v{low}" if low == high else f"v{low}-v{high}"
