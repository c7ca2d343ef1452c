"""The domain models' collection behaviour: sorted, deduplicated, partial failure as data."""

from __future__ import annotations

import pytest

from kshare_cli.admin.models import (
    GROUP_STATES,
    BrokerFailure,
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupListing,
    GroupOffsets,
    KafkaError,
    ListedGroup,
    ShareGroupOffsets,
    SharePartitionOffset,
    parse_group_state,
    parse_state_filter,
)
from kshare_cli.errors import UsageError


def test_state_parsing_is_case_insensitive_and_unknown_otherwise() -> None:
    assert parse_group_state("stable") == "Stable"
    assert parse_group_state("PREPARINGREBALANCE") == "PreparingRebalance"
    assert parse_group_state("") == "Unknown"
    assert parse_group_state("bogus") == "Unknown"
    assert set(GROUP_STATES) >= {"Stable", "Empty", "Dead", "Unknown"}


def test_state_filter_accepts_kafkas_input_forms() -> None:
    assert parse_state_filter(["Stable, empty", "STABLE"]) == ("Stable", "Empty")
    assert parse_state_filter([""]) == ()
    assert parse_state_filter([]) == ()
    assert parse_state_filter(["dead"]) == ("Dead",)


@pytest.mark.parametrize("value", ["Unknown", "Assigning", "nope", "Stable,Reconciling"])
def test_state_filter_refuses_what_a_share_group_cannot_be_in(value: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_state_filter([value])
    assert str(raised.value) == (
        f"Invalid state list '{value}'. Valid states are: Stable, Dead, Empty"
    )


def test_listing_is_sorted_unique_and_keeps_broker_failures() -> None:
    failure = BrokerFailure(3, "b3", 9092, KafkaError.of(13, "connection refused"))
    listing = GroupListing(
        (ListedGroup("z", "Empty"), ListedGroup("a", "Stable"), ListedGroup("z", "Empty")),
        (),
        (failure,),
    )
    assert listing.group_ids() == ("a", "z")
    assert not listing.ok()
    assert listing.errors() == (failure,)
    assert str(failure) == "broker 3 (b3:9092): NETWORK_EXCEPTION: connection refused"


def test_group_results_partial_failure() -> None:
    missing = GroupFailure("m", KafkaError.of(69, "Group m not found."))
    denied = GroupFailure("d", KafkaError.of(30, None))
    described = GroupDescription("a", "Empty", None, 1, 1, "simple")
    result = GroupDescriptions((missing, described, denied))
    assert result.group_ids() == ("a", "d", "m")
    assert result.succeeded() == (described,)
    assert result.errors() == (denied, missing)
    assert not result.ok()
    assert result.get("a") is described and result.get("x") is None
    assert [failure.not_found for failure in result.errors()] == [False, True]
    assert str(denied) == "share group 'd': GROUP_AUTHORIZATION_FAILED"


def _total(group: GroupOffsets) -> tuple[int | None, str | None, bool | None]:
    return group.total_lag, group.total_lag_source, group.total_lag_complete


def test_total_lag_sums_the_known_lags_and_says_whether_any_is_missing() -> None:
    exact = SharePartitionOffset("t", 0, 1, 0, 4, "broker")
    bound = SharePartitionOffset("t", 1, 1, 0, 6, "bound")
    unknown = SharePartitionOffset("t", 2, None)
    assert _total(GroupOffsets("g", (exact,))) == (4, "broker", True)
    both = GroupOffsets("g", (bound, exact))
    assert _total(both) == (10, "bound", True)
    assert [p.partition for p in both.partitions] == [0, 1]
    # One lag unknown: the others' sum stands, marked incomplete (a lower bound).
    assert _total(GroupOffsets("g", (exact, unknown))) == (4, "broker", False)
    assert _total(GroupOffsets("g", (bound, exact, unknown))) == (10, "bound", False)
    # No lag known, or no share-partition: no total at all.
    assert _total(GroupOffsets("g", (unknown,))) == (None, None, None)
    assert _total(GroupOffsets("g", ())) == (None, None, None)


def test_offsets_collect_partition_errors_of_successful_groups() -> None:
    error = KafkaError.of(29)
    offsets = ShareGroupOffsets(
        (GroupOffsets("g", (SharePartitionOffset("t", 0, None, error=error),)),)
    )
    assert offsets.ok()  # the group answered
    (failure,) = offsets.partition_errors()
    assert (failure.group_id, str(failure.topic_partition), failure.error) == ("g", "t:0", error)
