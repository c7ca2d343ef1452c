"""The Kafka release a sandbox cluster behaves as: one profile for the whole cluster.

``kshare sandbox --kafka-version 4.2|4.3|4.4`` (and ``new_broker(kafka_version=...)``)
picks what differs between the releases, measured on real brokers (DESIGN.md, "Facts
measured"; ``tests/golden/kafka-4.4/README.md``):

* feature levels in ApiVersions: ``metadata.version`` 4.2-IV1 (29) on 4.2, 4.3-IV0 (30)
  on 4.3 and on the recorded 4.4 snapshot; ``share.version`` 1 on 4.2 and 4.3, and on
  4.4 either 1 (what a new 4.4 cluster is formatted with) or 2 (after
  ``kafka-features.sh upgrade --feature share.version=2``, the sandbox's 4.4 default);
* group configs (``GroupConfigStore``'s ``kafka_version``);
* from 4.3 (both in 4.3.1's source, KAFKA-20268 and KAFKA-20291): a new group starts at
  epoch 1, so a new share-partition's first snapshot carries state epoch 2 (the 4.4
  recording's; 4.2 wrote 1), and a group's target assignment is computed at most once
  per ``share.assignment.interval.ms``; a reset's snapshot carries
  deliveryCompleteCount 0 (4.2: -1, unknown);
* 4.4 with ``share.version`` 2: the dead-letter queue, a rejected or over-limit record
  persisted as ARCHIVING, written to the group's DLQ topic, then ARCHIVED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kshare_cli.kafka.versions import NEWEST_KAFKA_VERSION, KafkaVersion, at_least

__all__ = ["DEFAULT_KAFKA_VERSION", "Feature", "KafkaProfile"]

#: What a sandbox is when nobody says: the newest release, the one operators who run
#: share groups upgrade to first. Tests that reproduce the 4.2 corpus pin "4.2".
DEFAULT_KAFKA_VERSION: Final[KafkaVersion] = NEWEST_KAFKA_VERSION

#: ``metadata.version`` feature levels (Kafka's ``MetadataVersion``): 3.3-IV3 is the
#: oldest a KRaft cluster supports, 4.2-IV1 4.2's newest production level, 4.3-IV0 4.3's
#: (and the recorded 4.4 snapshot's: its 4.4-IV* levels were not production yet).
_METADATA_MIN: Final = 7
_METADATA_LEVEL: Final[dict[KafkaVersion, int]] = {"4.2": 29, "4.3": 30, "4.4": 30}


@dataclass(frozen=True, slots=True)
class Feature:
    """One feature of ApiVersions: the range this broker supports and the finalized level."""

    name: str
    min_version: int
    max_version: int
    level: int


@dataclass(frozen=True, slots=True)
class KafkaProfile:
    """A sandbox cluster's Kafka release and ``share.version``; see the module docstring."""

    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION
    share_version: int | None = None
    """None: the release's own (1 on 4.2 and 4.3, 2 on the sandbox's 4.4)."""

    def __post_init__(self) -> None:
        if self.kafka_version not in _METADATA_LEVEL:
            raise ValueError(f"unknown Kafka version {self.kafka_version!r}")
        highest = self.max_share_version
        if self.share_version is not None and not 1 <= self.share_version <= highest:
            raise ValueError(
                f"Kafka {self.kafka_version} supports share.version 1"
                + (f" to {highest}" if highest > 1 else "")
                + " (2, the dead-letter queue, is Kafka 4.4's)"
            )

    @property
    def max_share_version(self) -> int:
        return 2 if at_least(self.kafka_version, "4.4") else 1

    @property
    def finalized_share_version(self) -> int:
        return self.max_share_version if self.share_version is None else self.share_version

    @property
    def dead_letter_queue(self) -> bool:
        """Whether the broker acts on a group's DLQ configs (``ShareVersion.SV_2``)."""
        return self.finalized_share_version >= 2

    @property
    def initial_group_epoch(self) -> int:
        """A new group's epoch (and its empty target assignment's): 1 from 4.3 (KAFKA-20268,
        ``ModernGroup``'s ``groupEpoch.set(1)``; in 4.3.1), 0 before. So a new group's
        first assignment is epoch 2 and its share-partitions' first snapshots carry state
        epoch 2: the 4.4 recording's (and its group epochs one higher than 4.2's: 5 with
        the idle member, resets at 6).
        """
        return 1 if at_least(self.kafka_version, "4.3") else 0

    @property
    def assignment_batching(self) -> bool:
        """4.3 computes a group's target assignment at most once per
        ``share.assignment.interval.ms`` (KIP-1263, KAFKA-20291; in 4.3.1)."""
        return at_least(self.kafka_version, "4.3")

    @property
    def reset_delivery_complete_count(self) -> int:
        """The deliveryCompleteCount of a reset's snapshot: 0 from 4.3 on (KAFKA-20034, in
        4.3.0), -1 (unknown) on 4.2."""
        return 0 if at_least(self.kafka_version, "4.3") else -1

    def features(self, *, share_groups: bool = True) -> tuple[Feature, ...]:
        """ApiVersions' features, in the order Kafka lists the finalized ones.

        A broker without share groups (the "too old for share groups" case) lists none,
        as the sandbox always did for it.
        """
        if not share_groups:
            return ()
        metadata = _METADATA_LEVEL[self.kafka_version]
        # The 4.4 recording's single node was formatted with a static quorum (kraft.version
        # 0); the 4.2 recording's with a dynamic one (1).
        kraft_level = 0 if self.kafka_version == "4.4" else 1
        features = [
            Feature("group.version", 0, 1, 1),
            Feature("kraft.version", 0, 1, kraft_level),
            Feature("share.version", 0, self.max_share_version, self.finalized_share_version),
            Feature("metadata.version", _METADATA_MIN, metadata, metadata),
            Feature("streams.version", 0, 1, 1),
            Feature("transaction.version", 0, 2, 2),
            Feature("eligible.leader.replicas.version", 0, 1, 1),
        ]
        return tuple(features)

    def supported_features(self, *, share_groups: bool = True) -> tuple[Feature, ...]:
        """The supported ranges, in Kafka's order for them (``metadata.version`` before
        ``share.version``), as the 4.2 recording's ApiVersions v4 lists them."""
        order = (
            "group.version",
            "kraft.version",
            "metadata.version",
            "share.version",
            "streams.version",
            "transaction.version",
            "eligible.leader.replicas.version",
        )
        by_name = {f.name: f for f in self.features(share_groups=share_groups)}
        return tuple(by_name[name] for name in order if name in by_name)
