"""``-o plain`` where the golden corpus has no example: Kafka's rules, applied by hand.

Expected texts follow ShareGroupCommand's format strings in Kafka 4.2 (printOffsets,
printMembers, printStates, printGroupInfo): minimum widths of 15, columns widening
to the longest value, ``-`` for anything unknown, share-partitions the broker
answered with an error left out, and a Dead group's "does not exist" line.
"""

from __future__ import annotations

from kshare_cli.admin.models import (
    Coordinator,
    GroupDescription,
    GroupDescriptions,
    GroupListing,
    GroupOffsets,
    ListedGroup,
    MemberDescription,
    ShareGroupOffsets,
    SharePartitionOffset,
)
from kshare_cli.render.descriptions import description_notices, render_members, render_states
from kshare_cli.render.listing import render_listing
from kshare_cli.render.offsets import render_offsets
from tests.render import cases


def test_offsets_leave_out_failed_partitions_and_print_kafkas_lag_only() -> None:
    # orders:0 has a bound (≤5) but Kafka would have printed no lag: "-".
    # payments:0 failed (TOPIC_AUTHORIZATION_FAILED): Kafka skips it.
    expected = (
        "\nGROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG"
        "\ngolden-g        golden-a        0          0             2             0"
        "\ngolden-g        golden-a        1          0             5             0\n"
        "\nGROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG"
        "\norders-workers  orders          0          3             10            -"
        "\norders-workers  orders          1          -             -             -\n"
    )
    assert render_offsets(cases.offsets()["offsets-partial"], "plain", verbose=True) == expected


def test_offsets_with_only_failed_partitions_have_no_offset_information() -> None:
    failed = cases.offsets()["offsets-partial"].get("orders-workers")
    assert isinstance(failed, GroupOffsets)
    only_errors = GroupOffsets("g", tuple(p for p in failed.partitions if p.error is not None))
    assert render_offsets(ShareGroupOffsets((only_errors,)), "plain") == (
        "\nShare group 'g' has no offset information.\n"
    )


def test_offsets_columns_widen_for_long_group_and_topic_names() -> None:
    group = "a-group-id-longer-than-15"
    offsets = ShareGroupOffsets(
        (
            GroupOffsets(
                group,
                (
                    SharePartitionOffset("short", 1, 7, 0, 3, "broker"),
                    SharePartitionOffset("a-rather-long-topic-name", 0, 1, 0, 0, "broker"),
                ),
            ),
        )
    )
    assert render_offsets(offsets, "plain") == (
        "\nGROUP                     TOPIC                    PARTITION  START-OFFSET  LAG"
        "\na-group-id-longer-than-15 a-rather-long-topic-name 0          1             0"
        "\na-group-id-longer-than-15 short                    1          7             3\n"
    )


def test_members_sorted_by_member_id_with_widened_columns() -> None:
    expected = (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  ASSIGNMENT"
        "\norders-workers  aa-member       /10.0.0.11      worker-1        0            "
        "\norders-workers  zz-member       /10.0.0.12      worker-2        3            "
        "orders:2;payments:0,1\n"
    )
    descriptions = cases.descriptions()["describe-partial"]
    racked = descriptions.get("orders-workers")
    assert isinstance(racked, GroupDescription)
    assert render_members(GroupDescriptions((racked,)), "plain") == expected


def test_state_coordinator_column_widens_past_25() -> None:
    racked = cases.descriptions()["describe-partial"].get("orders-workers")
    assert isinstance(racked, GroupDescription)
    assert render_states(GroupDescriptions((racked,)), "plain", verbose=True) == (
        "\nGROUP           COORDINATOR (ID)           STATE           GROUP-EPOCH  "
        "ASSIGNMENT-EPOCH  #MEMBERS"
        "\norders-workers  broker-2.example:9093  (2) Stable          7            7"
        "                 2\n"
    )


def _dead() -> GroupDescriptions:
    return GroupDescriptions(
        (GroupDescription("gone", "Dead", Coordinator(1, "h", 9092), 4, 4, "simple"),)
    )


def test_dead_group_says_it_does_not_exist_as_kafka_does() -> None:
    # printMembers: only the error; printStates: the error, then the table anyway.
    assert render_members(_dead(), "plain") == "\nError: Share group 'gone' does not exist.\n"
    assert render_states(_dead(), "plain") == (
        "\nError: Share group 'gone' does not exist.\n"
        "\nGROUP           COORDINATOR (ID)          STATE           #MEMBERS"
        "\ngone            h:9092  (1)               Dead            0\n"
    )
    assert description_notices(_dead()) == ()


def test_stable_group_without_members_prints_nothing_in_members_view() -> None:
    stable = GroupDescriptions(
        (GroupDescription("g", "Stable", Coordinator(1, "h", 9092), 1, 1, "simple"),)
    )
    assert render_members(stable, "plain") == ""


def test_member_assignment_text_is_kafkas() -> None:
    member = MemberDescription(
        "m", "c", "/h", None, 1, ("b", "a"), {"b": (3, 1, 2), "a": (0,), "c": ()}
    )
    assert member.assignment_text == "a:0;b:1,2,3"
    assert "c" not in member.assignment
    assert member.partition_count == 4
    assert member.subscribed_topics == ("a", "b")


def test_listing_of_no_groups() -> None:
    empty = GroupListing(())
    assert render_listing(empty, "plain") == ""
    assert render_listing(empty, "plain", with_state=True) == "GROUP           STATE\n"


def test_listing_sorts_and_deduplicates_what_brokers_answered() -> None:
    listing = GroupListing(
        (ListedGroup("b", "Empty"), ListedGroup("a", "Stable"), ListedGroup("b", "Empty"))
    )
    assert render_listing(listing, "plain") == "a\nb\n"
