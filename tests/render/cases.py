"""The models the renderer tests render: golden-corpus runs, plus partial failures.

The golden ones come from Kafka 4.2.0's recorded answers (``golden_admin``); the
partial ones add what the recording lacks -- a missing group, a partition the
broker refused, an uninitialised share-partition, a bound from a v0 broker, a
broker that did not answer ListGroups, a total over only some
share-partitions -- so every branch of every format is seen.
"""

from __future__ import annotations

from kshare_cli.admin.models import (
    BrokerFailure,
    Coordinator,
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupListing,
    GroupOffsets,
    KafkaError,
    MemberDescription,
    ShareGroupOffsets,
    SharePartitionOffset,
)
from tests.support import golden_admin as golden

NOT_FOUND = GroupFailure("no-such-group", KafkaError.of(69, "Group no-such-group not found."))


def listings() -> dict[str, GroupListing]:
    stable = golden.listing("03-list-state-stable", ("Stable",))
    return {
        "list-all": golden.listing("02-list-state"),
        "list-stable": stable,
        "list-partial": GroupListing(
            stable.groups,
            ("Stable",),
            (BrokerFailure(2, "broker-2.example", 9092, KafkaError.of(7, "no answer in 30 s")),),
        ),
    }


def _v0_group() -> GroupOffsets:
    return GroupOffsets(
        "orders-workers",
        (
            SharePartitionOffset(
                "orders", 0, 10, leader_epoch=3, lag=5, lag_source="bound", end_offset=15
            ),
            SharePartitionOffset("orders", 1, None, end_offset=7),
            SharePartitionOffset(
                "payments", 0, None, error=KafkaError.of(29, "Not authorized to read payments")
            ),
        ),
    )


def _half_known_group() -> GroupOffsets:
    """Exact lags on two share-partitions, none on the third: the total is a lower bound."""
    return GroupOffsets(
        "billing-workers",
        (
            SharePartitionOffset(
                "invoices", 0, 40, leader_epoch=1, lag=12, lag_source="broker", end_offset=52
            ),
            SharePartitionOffset(
                "invoices", 1, 7, leader_epoch=1, lag=3, lag_source="broker", end_offset=10
            ),
            SharePartitionOffset("invoices", 2, None, end_offset=9),
        ),
    )


def offsets() -> dict[str, ShareGroupOffsets]:
    described = golden.offsets("04")
    return {
        "offsets-all": golden.offsets("10"),
        "offsets-reset": golden.offsets("17"),
        "offsets-none": golden.offsets("21"),
        "offsets-partial": ShareGroupOffsets((*described.succeeded(), _v0_group(), NOT_FOUND)),
        "offsets-lower-bound": ShareGroupOffsets((_half_known_group(),)),
    }


def descriptions() -> dict[str, GroupDescriptions]:
    racked = GroupDescription(
        "orders-workers",
        "Stable",
        Coordinator(2, "broker-2.example", 9093),
        group_epoch=7,
        assignment_epoch=7,
        assignor="simple",
        members=(
            MemberDescription(
                "zz-member",
                "worker-2",
                "/10.0.0.12",
                "eu-west-1b",
                7,
                ("orders", "payments"),
                {"payments": (1, 0), "orders": (2,)},
            ),
            MemberDescription(
                "aa-member", "worker-1", "/10.0.0.11", "eu-west-1a", 6, ("orders",), {}
            ),
        ),
        authorized_operations=("READ", "DESCRIBE", "DELETE"),
    )
    return {
        "describe-all": golden.descriptions("10"),
        "describe-partial": GroupDescriptions(
            (*golden.descriptions("07").succeeded(), racked, NOT_FOUND)
        ),
    }
