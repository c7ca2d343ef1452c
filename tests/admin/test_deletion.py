"""kshare_cli.admin.deletion: the checks, the converters, and the deletions against a broker.

The checks and converters are pure: they are fed Kafka 4.2's recorded answers
(the golden corpus's DeleteShareGroupOffsets and DeleteGroups of scenario A) and
answers built with kio for the cases the corpus lacks. Two situations a sandbox
cannot produce are played with a scripted client: a consumer group holding the
id, and a DeleteGroups whose first attempt deleted the group but whose answer was
lost, so the retry says GROUP_ID_NOT_FOUND. The rest runs against the ``cluster``
fixture (the sandbox, or ``KSHARE_TEST_BOOTSTRAP``), with groups made by
AlterShareGroupOffsets, which creates an empty share group with state.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.admin.deletion import (
    NO_OFFSETS_MESSAGE,
    Deletion,
    Deletions,
    GroupMember,
    check_group,
    delete_empty_groups,
    delete_groups,
    delete_share_group_offsets,
    deleted_groups_from,
    offset_deletions_from,
    predict_offset_deletions,
)
from kshare_cli.admin.models import (
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupListing,
    KafkaError,
    ListedGroup,
    MemberDescription,
)
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.api_keys import DELETE_GROUPS, DELETE_SHARE_GROUP_OFFSETS, LIST_GROUPS
from kshare_cli.wire.build import build
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.cluster import BrokerNode, ClusterMetadata
from kshare_cli.wire.framing import response_schema
from tests.support import golden_admin as golden
from tests.support.sandbox import Cluster
from tests.support.share_offsets import alter_share_group_offsets

T = TypeVar("T")

#: Scenario A's recorded DeleteShareGroupOffsets (run 20) and DeleteGroups (run 22).
GOLDEN_DELETE_OFFSETS_LINE = 373
GOLDEN_DELETE_GROUPS_LINE = 387

NOT_FOUND = KafkaError.of(69, "Group g not found.")


def _described(group_id: str, state: str = "Empty", members: int = 0) -> GroupDescription:
    return GroupDescription(
        group_id=group_id,
        state=state,
        coordinator=None,
        group_epoch=3,
        assignment_epoch=3,
        assignor="simple",
        members=tuple(
            MemberDescription(f"m{n}", f"client-{n}", "/127.0.0.1", None, 2) for n in range(members)
        ),
    )


# --------------------------------------------------------------------------- checks


def test_an_empty_share_group_may_be_deleted() -> None:
    assert check_group("g", _described("g")) is None


def test_a_group_with_members_is_refused_naming_each_member_and_client() -> None:
    refusal = check_group("g", _described("g", "Stable", members=2))
    assert refusal is not None
    assert (refusal.result, refusal.reason) == ("refused", "not_empty")
    assert refusal.members == (
        GroupMember("m0", "client-0", "/127.0.0.1"),
        GroupMember("m1", "client-1", "/127.0.0.1"),
    )
    assert refusal.message == (
        "Share group 'g' is not empty: it has 2 members: "
        "m0 (client id client-0, host /127.0.0.1); m1 (client id client-1, host /127.0.0.1)"
    )
    assert str(refusal).startswith("share group 'g': refused: Share group 'g' is not empty")


def test_a_dead_group_is_refused_with_kafkas_message() -> None:
    refusal = check_group("g", _described("g", "Dead"))
    assert refusal is not None and refusal.reason == "dead"
    assert refusal.message == "Share group 'g' group state is DEAD."


def test_a_missing_group_is_not_found_and_a_consumer_group_is_refused() -> None:
    missing = check_group("g", GroupFailure("g", NOT_FOUND))
    assert missing is not None and missing.result == "not_found" and missing.not_found
    assert str(missing) == "share group 'g': not found"
    consumer = check_group("g", GroupFailure("g", NOT_FOUND), "consumer")
    assert consumer is not None
    assert (consumer.result, consumer.reason) == ("refused", "not_share_group")
    assert consumer.message == "Group 'g' is not a share group (it is a consumer group)."
    assert not consumer.not_found


def test_the_coordinators_words_refuse_a_group_of_another_type_listgroups_missed() -> None:
    answer = GroupFailure("g", KafkaError.of(69, "Group g is not a share group."))
    refusal = check_group("g", answer)
    assert refusal is not None and refusal.reason == "not_share_group"
    assert refusal.message == "Group 'g' is not a share group."


def test_a_group_that_could_not_be_described_is_a_failure() -> None:
    denied = check_group("g", GroupFailure("g", KafkaError.of(30)))
    assert denied is not None and denied.result == "failed"
    assert str(denied) == "share group 'g': GROUP_AUTHORIZATION_FAILED"


def test_results_sort_by_group_then_topic_and_classify_exit_codes() -> None:
    deletions = Deletions(
        "delete-offsets",
        False,
        (
            Deletion("b", "deleted", topic="t2"),
            Deletion("b", "not_found", topic="t1", error=KafkaError.of(3)),
            Deletion("a", "not_found", error=NOT_FOUND),
        ),
    )
    assert [(r.group_id, r.topic) for r in deletions] == [("a", None), ("b", "t1"), ("b", "t2")]
    assert deletions.all_not_found() and not deletions.ok()
    refused = Deletions("delete", False, (Deletion("a", "refused", reason="not_empty"),))
    assert not refused.all_not_found()
    assert Deletions("delete", True, (Deletion("a", "would_delete"),)).ok()


# --------------------------------------------------------------------------- converters


def test_golden_delete_share_group_offsets_answer_is_one_deleted_topic() -> None:
    response = golden.response(GOLDEN_DELETE_OFFSETS_LINE)
    results = offset_deletions_from("golden-g", ["golden-a"], response, {"golden-a": (0, 1)})
    assert results == (Deletion("golden-g", "deleted", topic="golden-a", partitions=(0, 1)),)


def test_golden_delete_groups_answer_deleted_the_group() -> None:
    assert deleted_groups_from(golden.response(GOLDEN_DELETE_GROUPS_LINE)) == {"golden-g": None}


def _offsets_response(
    error_code: int = 0, error_message: str | None = None, topics: Sequence[Any] = ()
) -> Any:
    return build(
        response_schema(DELETE_SHARE_GROUP_OFFSETS, 0),
        {
            "throttle_time": datetime.timedelta(0),
            "error_code": error_code,
            "error_message": error_message,
            "responses": [
                {
                    "topic_name": name,
                    "topic_id": None,
                    "error_code": code,
                    "error_message": message,
                }
                for name, code, message in topics
            ],
        },
    )


def test_per_topic_errors_and_topics_left_out_of_the_answer() -> None:
    response = _offsets_response(
        topics=[
            ("ok", 0, None),
            ("unknown", 3, "This server does not host this topic-partition."),
            ("denied", 29, None),
        ]
    )
    results = offset_deletions_from("g", ["ok", "unknown", "denied", "absent"], response)
    by_topic = {result.topic: result for result in results}
    assert by_topic["ok"].result == "deleted" and by_topic["ok"].partitions is None
    assert by_topic["unknown"].result == "not_found"
    assert by_topic["unknown"].error == KafkaError.of(
        3, "This server does not host this topic-partition."
    )
    assert by_topic["denied"].result == "failed"
    assert by_topic["denied"].error is not None
    assert by_topic["denied"].error.name == "TOPIC_AUTHORIZATION_FAILED"
    # Kafka answers nothing for the topics of a group with no share-partition state.
    assert by_topic["absent"].result == "not_found"
    assert by_topic["absent"].error == KafkaError.of(3, NO_OFFSETS_MESSAGE)


def test_top_level_errors_are_one_group_level_result() -> None:
    (refused,) = offset_deletions_from("g", ["t"], _offsets_response(68, "The group is not empty."))
    assert (refused.topic, refused.result, refused.reason) == (None, "refused", "not_empty")
    assert refused.error == KafkaError.of(68, "The group is not empty.")
    (missing,) = offset_deletions_from("g", ["t"], _offsets_response(69, "Group g not found."))
    assert missing.result == "not_found"


def test_a_dry_run_predicts_the_coordinators_answer() -> None:
    unknown = KafkaError.of(3, "This server does not host this topic-partition.")
    results = predict_offset_deletions(
        "g",
        ["has", "none", "unknown"],
        {"unknown": unknown},
        {"has": (0, 1), "other": (0,)},
    )
    assert results == (
        Deletion("g", "would_delete", topic="has", partitions=(0, 1)),
        Deletion("g", "not_found", topic="none", error=KafkaError.of(3, NO_OFFSETS_MESSAGE)),
        Deletion("g", "not_found", topic="unknown", error=unknown),
    )


# --------------------------------------------------------------------------- scripted client


class ScriptedClient:
    """Answers ListGroups and DeleteGroups as a script says; records what was sent."""

    def __init__(
        self,
        listed_types: Mapping[str, str],
        delete_answers: Mapping[str, KafkaError | None],
        on_delete: Callable[[Sequence[str]], None] = lambda groups: None,
    ) -> None:
        self.listed_types = listed_types
        self.delete_answers = delete_answers
        self.on_delete = on_delete
        self.deleted_requests: list[list[str]] = []

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        return True

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        return ClusterMetadata(None, 1, {1: BrokerNode(1, "b1", 9092)}, {})

    async def request(self, api_key: int, body: Any, **options: Any) -> tuple[int, Any]:
        assert api_key == LIST_GROUPS and body["types_filter"] == []
        groups = [
            {
                "group_id": group_id,
                "protocol_type": "consumer",
                "group_state": "Stable",
                "group_type": kind,
            }
            for group_id, kind in self.listed_types.items()
        ]
        response = build(
            response_schema(LIST_GROUPS, 5),
            {"throttle_time": datetime.timedelta(0), "error_code": 0, "groups": groups},
        )
        return 5, response

    async def fan_out_to_coordinators(
        self, api_key: int, group_ids: Sequence[str], body: Any, split: Any, **options: Any
    ) -> dict[str, Any]:
        assert api_key == DELETE_GROUPS
        request = body(2, group_ids)
        self.deleted_requests.append(list(request["groups_names"]))
        self.on_delete(group_ids)
        answers: dict[str, Any] = {}
        for group_id in group_ids:
            error = self.delete_answers.get(group_id)
            answers[group_id] = object() if error is None else error
        return answers


class ScriptedAdmin:
    def __init__(self, groups: dict[str, GroupDescription], client: ScriptedClient) -> None:
        self.groups = groups
        self.client = client

    async def describe_groups(self, group_ids: Sequence[str]) -> GroupDescriptions:
        return GroupDescriptions(
            tuple(
                self.groups.get(group_id) or GroupFailure(group_id, NOT_FOUND)
                for group_id in group_ids
            )
        )

    async def list_groups(self, states: Sequence[str] = ()) -> GroupListing:
        return GroupListing(
            tuple(
                ListedGroup(g.group_id, g.state) for g in self.groups.values() if g.state in states
            )
        )


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def test_a_consumer_group_of_that_id_is_refused_and_never_sent() -> None:
    client = ScriptedClient({"orders": "consumer"}, {})
    admin = ScriptedAdmin({"empty": _described("empty")}, client)
    deletions = _run(delete_groups(cast(Any, admin), ["orders", "empty", "gone"], dry_run=False))
    by_group = {result.group_id: result for result in deletions}
    assert (by_group["orders"].result, by_group["orders"].reason) == ("refused", "not_share_group")
    assert by_group["gone"].result == "not_found"
    assert by_group["empty"].result == "deleted"
    assert client.deleted_requests == [["empty"]]


def test_a_retried_delete_answered_not_found_is_a_deletion_once_the_group_is_gone() -> None:
    groups = {"g": _described("g"), "h": _described("h")}

    def first_attempt_deleted(group_ids: Sequence[str]) -> None:
        groups.pop("g")  # the lost first attempt did delete g; h vanished for no one

    client = ScriptedClient({}, {"g": NOT_FOUND}, first_attempt_deleted)
    admin = ScriptedAdmin(groups, client)
    deletions = _run(delete_groups(cast(Any, admin), ["g", "h"], dry_run=False))
    by_group = {result.group_id: result for result in deletions}
    assert by_group["g"].result == "deleted" and by_group["g"].error == NOT_FOUND
    assert by_group["g"].message is not None and "retried" in by_group["g"].message
    assert by_group["h"].result == "deleted" and by_group["h"].message is None
    assert deletions.ok()


def test_not_found_from_delete_groups_for_a_group_still_there_is_not_a_deletion() -> None:
    client = ScriptedClient({}, {"g": NOT_FOUND})
    admin = ScriptedAdmin({"g": _described("g")}, client)
    (result,) = _run(delete_groups(cast(Any, admin), ["g"], dry_run=False))
    assert result.result == "not_found"


def test_a_member_joining_after_the_check_is_the_brokers_refusal() -> None:
    client = ScriptedClient({}, {"g": KafkaError.of(68, "The group is not empty.")})
    admin = ScriptedAdmin({"g": _described("g")}, client)
    (result,) = _run(delete_groups(cast(Any, admin), ["g"], dry_run=False))
    assert (result.result, result.reason) == ("refused", "not_empty")
    assert result.error is not None and result.error.name == "NON_EMPTY_GROUP"


def test_a_dry_run_sends_no_delete_and_all_groups_takes_only_empty_ones() -> None:
    client = ScriptedClient({}, {})
    admin = ScriptedAdmin(
        {"a": _described("a"), "b": _described("b"), "live": _described("live", "Stable", 1)},
        client,
    )
    deletions = _run(delete_empty_groups(cast(Any, admin), dry_run=True))
    assert [(r.group_id, r.result) for r in deletions] == [
        ("a", "would_delete"),
        ("b", "would_delete"),
    ]
    assert client.deleted_requests == []


# --------------------------------------------------------------------------- against a broker


def _ask(
    settings: ConnectionSettings, call: Callable[[ShareGroupAdmin], Coroutine[Any, Any, T]]
) -> T:
    async def work() -> T:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            return await call(ShareGroupAdmin(client))

    return _run(work())


async def _alter_offsets(admin: ShareGroupAdmin, group: str, topic: str, partitions: int) -> None:
    await alter_share_group_offsets(admin.client, group, {topic: range(partitions)})


def test_delete_offsets_then_the_group_on_a_broker(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    topic, other, group = (
        f"kshare-del-t-{unique}",
        f"kshare-del-o-{unique}",
        f"kshare-del-g-{unique}",
    )
    admin_client = AdminClient(cluster.config())
    for future in admin_client.create_topics(
        [NewTopic(topic, 2, 1), NewTopic(other, 1, 1)]
    ).values():
        future.result(30)
    settings = cluster.settings(tmp_path)

    async def scenario(admin: ShareGroupAdmin) -> tuple[Deletions, ...]:
        await _alter_offsets(admin, group, topic, 2)
        dry = await delete_share_group_offsets(admin, group, [topic, other], dry_run=True)
        done = await delete_share_group_offsets(admin, group, [topic, other], dry_run=False)
        again = await delete_share_group_offsets(admin, group, [topic], dry_run=False)
        gone = await delete_groups(admin, [group], dry_run=False)
        missing = await delete_share_group_offsets(admin, group, [topic], dry_run=True)
        return dry, done, again, gone, missing

    dry, done, again, gone, missing = _ask(settings, scenario)
    assert [(r.topic, r.result, r.partitions) for r in dry] == [
        (other, "not_found", None),
        (topic, "would_delete", (0, 1)),
    ]
    assert [(r.topic, r.result, r.partitions) for r in done] == [
        (other, "not_found", None),
        (topic, "deleted", (0, 1)),
    ]
    (other_result, _) = done.results
    assert other_result.error == KafkaError.of(3, NO_OFFSETS_MESSAGE)
    (twice,) = again
    assert twice.result == "not_found" and twice.error == KafkaError.of(3, NO_OFFSETS_MESSAGE)
    assert [(r.group_id, r.result) for r in gone] == [(group, "deleted")]
    (after,) = missing
    assert (after.topic, after.result) == (None, "not_found")
    described = _ask(settings, lambda admin: admin.describe_groups([group]))
    assert [failure.not_found for failure in described.errors()] == [True]


@pytest.mark.parametrize("dry_run", [True, False])
def test_unknown_groups_are_not_found_on_a_broker(
    cluster: Cluster, unique: str, tmp_path: Path, dry_run: bool
) -> None:
    group = f"kshare-del-missing-{unique}"
    deletions = _ask(
        cluster.settings(tmp_path), lambda admin: delete_groups(admin, [group], dry_run=dry_run)
    )
    assert deletions.all_not_found()
    (result,) = deletions
    assert result.error is not None and result.error.name == "GROUP_ID_NOT_FOUND"
