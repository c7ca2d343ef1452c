"""Rendering ``Deletions``: Kafka's plain text byte for byte, the table, the structured formats.

The plain outputs of runs 20 (``--delete-offsets``) and 22 (``--delete``) of the
golden corpus are reproduced from the models the recorded answers convert to.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml

from kshare_cli.admin.deletion import (
    Deletion,
    Deletions,
    GroupMember,
    deleted_groups_from,
    offset_deletions_from,
)
from kshare_cli.admin.models import BrokerFailure, KafkaError
from kshare_cli.render.deletion import CSV_HEADER, render_deletions
from tests.cli.conftest import validate
from tests.support import golden_admin as golden

MEMBER = GroupMember("aOqSC+YFSECXXPKq0SceWw", "golden-a-share-consumer", "/127.0.0.1")
NOT_EMPTY = Deletion(
    "live",
    "refused",
    reason="not_empty",
    message=f"Share group 'live' is not empty: it has 1 member: {MEMBER}",
    members=(MEMBER,),
)
NO_OFFSETS = KafkaError.of(3, "There is no offset information to delete.")


def _golden_delete_offsets() -> Deletions:
    response = golden.response(373)
    results = offset_deletions_from("golden-g", ["golden-a"], response, {"golden-a": (0, 1)})
    return Deletions("delete-offsets", False, results)


def _golden_delete() -> Deletions:
    answers = deleted_groups_from(golden.response(387))
    results = tuple(
        Deletion(group_id, "deleted") for group_id, error in answers.items() if error is None
    )
    return Deletions("delete", False, results)


# --------------------------------------------------------------------------- plain


def test_delete_offsets_plain_is_kafkas_output_byte_for_byte() -> None:
    rendered = render_deletions(_golden_delete_offsets(), "plain")
    assert rendered.encode() == golden.tool_output("20")


def test_delete_plain_is_kafkas_output_byte_for_byte() -> None:
    assert render_deletions(_golden_delete(), "plain").encode() == golden.tool_output("22")


def test_delete_offsets_plain_widens_to_long_topics_and_words_errors_as_kafka() -> None:
    long_topic = "a-topic-name-longer-than-fifteen"
    deletions = Deletions(
        "delete-offsets",
        False,
        (
            Deletion("g", "deleted", topic=long_topic),
            Deletion("g", "not_found", topic="b", error=NO_OFFSETS),
            Deletion("g", "failed", topic="c", error=KafkaError.of(29)),
        ),
    )
    width = len(long_topic)
    assert render_deletions(deletions, "plain") == (
        f"\n{'TOPIC':<{width}} STATUS"
        f"\n{long_topic} Successful"
        f"\n{'b':<{width}} Error: There is no offset information to delete."
        f"\n{'c':<{width}} Error: Topic authorization failed.\n"
    )


def test_delete_offsets_plain_of_a_group_level_refusal_is_empty_stderr_says_it() -> None:
    assert render_deletions(Deletions("delete-offsets", False, (NOT_EMPTY,)), "plain") == ""


def test_delete_plain_failure_block_is_kafkas() -> None:
    deletions = Deletions(
        "delete",
        False,
        (
            Deletion("a", "deleted"),
            Deletion("b", "deleted"),
            NOT_EMPTY,
            Deletion("missing", "not_found", error=KafkaError.of(69, "Group missing not found.")),
            Deletion(
                "orders",
                "refused",
                reason="not_share_group",
                message="Group 'orders' is not a share group (it is a consumer group).",
            ),
            Deletion("denied", "failed", error=KafkaError.of(30)),
        ),
    )
    assert render_deletions(deletions, "plain") == (
        "\nError: Deletion of some share groups failed:\n"
        "* Group 'denied' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupAuthorizationException: Group authorization failed.\n"
        "* Group 'live' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: Share group 'live' is not EMPTY.\n"
        "* Group 'missing' could not be deleted due to: "
        "java.lang.IllegalArgumentException: Group 'missing' is not a share group.\n"
        "* Group 'orders' could not be deleted due to: "
        "java.lang.IllegalArgumentException: Group 'orders' is not a share group.\n"
        "\nThese share groups were deleted successfully: 'a', 'b'\n"
    )


def test_dry_run_plain_says_what_would_happen() -> None:
    dry = Deletions("delete", True, (Deletion("a", "would_delete"), Deletion("b", "would_delete")))
    assert render_deletions(dry, "plain") == (
        "Deletion of requested share groups ('a', 'b') would be successful (dry run).\n"
    )
    mixed = Deletions("delete", True, (Deletion("a", "would_delete"), NOT_EMPTY))
    assert render_deletions(mixed, "plain") == (
        "\nError: Deletion of some share groups would fail:\n"
        "* Group 'live' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: Share group 'live' is not EMPTY.\n"
        "\nThese share groups would be deleted: 'a'\n"
    )
    offsets = Deletions(
        "delete-offsets", True, (Deletion("g", "would_delete", topic="t", partitions=(0,)),)
    )
    assert render_deletions(offsets, "plain") == (
        "\nTOPIC           STATUS\nt               Would be deleted (dry run)\n"
    )


# --------------------------------------------------------------------------- table


def test_delete_table_has_group_result_error() -> None:
    deletions = Deletions("delete", False, (Deletion("a", "deleted"), NOT_EMPTY))
    lines = render_deletions(deletions, "table").splitlines()
    assert lines[0].split() == ["GROUP", "RESULT", "ERROR"]
    assert lines[2].split() == ["a", "deleted"]
    assert lines[3].startswith("live") and "refused" in lines[3]
    assert "golden-a-share-consumer" in lines[3] and MEMBER.member_id in lines[3]


def test_delete_offsets_table_has_topic_partitions_result_error() -> None:
    deletions = Deletions(
        "delete-offsets",
        True,
        (
            Deletion("g", "would_delete", topic="t", partitions=(0, 1)),
            Deletion("g", "not_found", topic="u", error=NO_OFFSETS),
        ),
    )
    lines = render_deletions(deletions, "table").splitlines()
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITIONS", "RESULT", "ERROR"]
    assert lines[2].split() == ["g", "t", "0,1", "would", "delete"]
    assert lines[3].split()[:4] == ["g", "u", "-", "not"]
    assert lines[3].endswith(
        "UNKNOWN_TOPIC_OR_PARTITION: There is no offset information to delete."
    )


def test_a_deletion_confirmed_by_a_second_look_is_noted_under_the_table() -> None:
    note = "DeleteGroups answered GROUP_ID_NOT_FOUND and the group is gone"
    deletions = Deletions(
        "delete", False, (Deletion("g", "deleted", message=note, error=KafkaError.of(69)),)
    )
    text = render_deletions(deletions, "table")
    assert text.splitlines()[2].split() == ["g", "deleted"]
    assert text.splitlines()[-1] == f"g: {note}."


def test_nothing_to_delete_renders_nothing_but_the_json_document() -> None:
    empty = Deletions("delete", True, ())
    for fmt in ("plain", "table", "jsonl"):
        assert render_deletions(empty, fmt) == ""
    assert json.loads(render_deletions(empty, "json"))["results"] == []


# --------------------------------------------------------------------------- structured

EVERYTHING = Deletions(
    "delete-offsets",
    False,
    (
        Deletion("g", "deleted", topic="t", partitions=(0, 1)),
        Deletion("g", "not_found", topic="u", error=NO_OFFSETS),
        NOT_EMPTY,
    ),
    (BrokerFailure(2, "b2", 9092, KafkaError.of(13, "connection refused")),),
)


def test_json_and_yaml_follow_the_schema() -> None:
    document = json.loads(render_deletions(EVERYTHING, "json"))
    validate(document, "deletions.schema.json")
    assert yaml.safe_load(render_deletions(EVERYTHING, "yaml")) == document
    assert document["operation"] == "delete-offsets" and document["dry_run"] is False
    first = document["results"][0]
    assert first["group_id"] == "g" and first["topic"] == "t" and first["partitions"] == [0, 1]
    refused = document["results"][2]
    assert refused["members"] == [
        {"member_id": MEMBER.member_id, "client_id": MEMBER.client_id, "host": "/127.0.0.1"}
    ]
    assert refused["reason"] == "not_empty" and refused["error"] is None
    assert document["broker_errors"][0]["error"]["name"] == "NETWORK_EXCEPTION"
    validate(json.loads(render_deletions(_golden_delete(), "json")), "deletions.schema.json")


def test_jsonl_lines_and_csv_rows_follow_the_row_schema() -> None:
    lines = render_deletions(EVERYTHING, "jsonl").splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        validate(row, "deletions-row.schema.json")
    assert [(r["group_id"], r["topic"], r["result"]) for r in rows] == [
        ("g", "t", "deleted"),
        ("g", "u", "not_found"),
        ("live", None, "refused"),
    ]
    table = list(csv.reader(io.StringIO(render_deletions(EVERYTHING, "csv"))))
    assert tuple(table[0]) == CSV_HEADER
    assert list(table[0]) == list(rows[0])
    assert table[1] == ["delete-offsets", "false", "g", "t", "deleted", "", "", "0,1", "", ""]
    assert table[2][-1] == "UNKNOWN_TOPIC_OR_PARTITION: There is no offset information to delete."
    assert table[3][8] == str(MEMBER)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "yaml", "plain", "table"])
def test_every_format_renders_a_dry_run(fmt: str) -> None:
    dry = Deletions("delete", True, (Deletion("a", "would_delete"),))
    assert "a" in render_deletions(dry, fmt)


def test_from_kafka_4_4_a_group_that_is_not_a_share_group_is_a_group_id_not_found() -> None:
    deletions = Deletions("delete", False, (Deletion("missing", "not_found"),), kafka_line="4.4")
    assert render_deletions(deletions, "plain") == (
        "\nError: Deletion of some share groups failed:\n"
        "* Group 'missing' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: "
        "Group 'missing' is not a share group.\n"
    )
