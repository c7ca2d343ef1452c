"""Deleting share groups and their offsets, checked first: ``kshare delete`` and ``delete-offsets``.

Deleting a share group, or its offsets on a topic, discards the share-partitions'
start offsets, in-flight state and delivery counts for good. So every deletion
is checked before anything is sent, and a dry run is the same checks without
the sending:

- The group must be a share group. ShareGroupDescribe answers GROUP_ID_NOT_FOUND
  both for a missing group and for a consumer group of that name ("Group x is not
  a share group."); ListGroups over every type tells the two apart. DeleteGroups
  itself would delete a consumer group as readily as a share group, which is why
  Kafka's tool checks the type first (``deleteShareGroups``) and so does kshare.
- The group must be empty: a group with members is refused, naming them (member
  id, client id, host), before the broker is asked. A member that joins between
  the check and the request makes the broker refuse with NON_EMPTY_GROUP, which is
  reported the same way.
- ``delete-offsets`` (DeleteShareGroupOffsets, one request to the group's
  coordinator) answers per topic; Kafka 4.2 answers UNKNOWN_TOPIC_OR_PARTITION for
  a topic that does not exist and, with "There is no offset information to
  delete.", for a topic the group has no offsets on. A dry run predicts those
  answers from Metadata and DescribeShareGroupOffsets.

DeleteGroups is not idempotent: when a connection drops after the broker deleted
a group, the client's retry is answered GROUP_ID_NOT_FOUND. A group that was
checked a moment before and is gone when DeleteGroups answers is described again;
if it is still gone it is reported deleted, with a note saying how it is known.

The converters from kio responses are module functions, so the golden corpus's
recorded answers convert without a broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import (
    BrokerFailure,
    GroupDescription,
    GroupFailure,
    KafkaError,
    MemberDescription,
)
from kshare_cli.errors import (
    AUTHORIZATION_ERROR_CODES,
    AuthenticationFailed,
    ConnectionFailed,
    IncompatibleBroker,
    TimedOut,
)
from kshare_cli.kafka.api_keys import (
    DELETE_GROUPS,
    DELETE_SHARE_GROUP_OFFSETS,
    LIST_GROUPS,
    LIST_GROUPS_WITH_TYPES,
)

if TYPE_CHECKING:
    from kshare_cli.admin.share_groups import ShareGroupAdmin

__all__ = [
    "Deletion",
    "DeletionResult",
    "Deletions",
    "GroupMember",
    "Operation",
    "RefusalReason",
    "check_group",
    "delete_empty_groups",
    "delete_groups",
    "delete_share_group_offsets",
    "deleted_groups_from",
    "offset_deletions_from",
    "predict_offset_deletions",
]


#: Kafka's message for UNKNOWN_TOPIC_OR_PARTITION (``Errors.UNKNOWN_TOPIC_OR_PARTITION``).
UNKNOWN_TOPIC_MESSAGE: Final = "This server does not host this topic-partition."
#: The group coordinator's message for a topic the group has no offsets on (Kafka 4.2,
#: ``GroupMetadataManager.sharePartitionsEligibleForOffsetDeletion``).
NO_OFFSETS_MESSAGE: Final = "There is no offset information to delete."

Operation = Literal["delete", "delete-offsets"]

#: ``deleted`` and ``would_delete`` (a dry run) succeed; the rest are failures.
#: ``refused``: kshare's checks (or the broker) refused the deletion: see ``RefusalReason``.
#: ``not_found``: no such group, or (delete-offsets) no such topic or no offsets on it.
#: ``failed``: anything else (not authorised, a coordinator that did not answer, ...).
DeletionResult = Literal["deleted", "would_delete", "refused", "not_found", "failed"]

#: ``not_empty``: the group has members. ``not_share_group``: a group of another type
#: (consumer, classic, streams) has that id. ``dead``: the group is already being removed.
RefusalReason = Literal["not_empty", "not_share_group", "dead"]


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A member that keeps a group from being deleted: who to stop first."""

    member_id: str
    client_id: str
    host: str

    @classmethod
    def of(cls, member: MemberDescription) -> GroupMember:
        return cls(member.member_id, member.client_id, member.host)

    def __str__(self) -> str:
        return f"{self.member_id} (client id {self.client_id}, host {self.host})"


@dataclass(frozen=True, slots=True)
class Deletion:
    """What happened (or, in a dry run, would happen) to one group, or one topic of a group.

    ``topic`` is None for ``delete`` and for a group-level outcome of ``delete-offsets``
    (the group is missing or has members: no topic was touched). ``error`` is exactly
    what the cluster answered, if anything; ``message`` is kshare's explanation (a
    refusal names the ``members``); ``partitions`` are the share-partitions whose
    offsets are (or would be) deleted, as DescribeShareGroupOffsets listed them
    before the deletion (None when not known).
    """

    group_id: str
    result: DeletionResult
    topic: str | None = None
    reason: RefusalReason | None = None
    message: str | None = None
    error: KafkaError | None = None
    members: tuple[GroupMember, ...] = ()
    partitions: tuple[int, ...] | None = None

    @property
    def succeeded(self) -> bool:
        return self.result in ("deleted", "would_delete")

    @property
    def not_found(self) -> bool:
        return self.result == "not_found"

    @property
    def not_authorized(self) -> bool:
        """The cluster's ACLs refused us the group or topic (GROUP_AUTHORIZATION_FAILED, ...)."""
        return self.error is not None and int(self.error.code) in AUTHORIZATION_ERROR_CODES

    def __str__(self) -> str:
        subject = f"share group '{self.group_id}'"
        if self.topic is not None:
            subject += f", topic '{self.topic}'"
        if self.result == "deleted":
            return f"{subject}: deleted" + (f" ({self.message})" if self.message else "")
        if self.result == "would_delete":
            return f"{subject}: would be deleted"
        detail = self.message or (str(self.error) if self.error is not None else self.result)
        if self.result == "not_found" and self.topic is None and self.message is None:
            detail = "not found"
        if self.result == "refused":
            return f"{subject}: refused: {detail}"
        return f"{subject}: {detail}"


@dataclass(frozen=True, slots=True)
class Deletions:
    """The outcome of one ``delete`` or ``delete-offsets`` run, sorted by group, then topic.

    ``broker_failures`` names brokers that did not answer the ListGroups of
    ``delete --all-groups``: the empty groups they coordinate were not considered.
    ``kafka_line`` is the release line the cluster's features prove (``4.4``), None
    when unknown: Kafka's tool words a group that is not a share group differently
    from one release to the next.
    """

    operation: Operation
    dry_run: bool
    results: tuple[Deletion, ...]
    broker_failures: tuple[BrokerFailure, ...] = ()
    kafka_line: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "results",
            tuple(sorted(self.results, key=lambda r: (r.group_id, r.topic is not None, r.topic))),
        )

    def sorted(self) -> tuple[Deletion, ...]:
        return self.results

    def succeeded(self) -> tuple[Deletion, ...]:
        return tuple(result for result in self.results if result.succeeded)

    def errors(self) -> tuple[Deletion, ...]:
        return tuple(result for result in self.results if not result.succeeded)

    def ok(self) -> bool:
        return not self.errors() and not self.broker_failures

    def all_not_found(self) -> bool:
        """Failures there are, and every one is a missing group, topic or offsets."""
        errors = self.errors()
        return bool(errors) and not self.broker_failures and all(e.not_found for e in errors)

    def all_not_authorized(self) -> bool:
        """Failures there are, and every one is the cluster's ACLs refusing us (exit 6)."""
        errors = self.errors()
        return bool(errors) and not self.broker_failures and all(e.not_authorized for e in errors)

    def __iter__(self) -> Iterator[Deletion]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


# --------------------------------------------------------------------------- checks (pure)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def check_group(
    group_id: str,
    described: GroupDescription | GroupFailure,
    other_type: str | None = None,
) -> Deletion | None:
    """Why ``group_id`` must not be deleted (or have its offsets deleted); None when it may.

    ``described`` is its ShareGroupDescribe answer; ``other_type`` is the type ListGroups
    reports for a group of that id that is not a share group (None: no such group).
    """
    if isinstance(described, GroupFailure):
        if not described.not_found:
            return Deletion(group_id, "failed", error=described.error)
        # ListGroups names the other type; failing that (a broker that did not answer),
        # the coordinator's own words for a group of another type say as much.
        said = described.error.message or ""
        if other_type is not None or "is not a share group" in said:
            kind = f" (it is a {other_type} group)" if other_type is not None else ""
            return Deletion(
                group_id,
                "refused",
                reason="not_share_group",
                message=f"Group '{group_id}' is not a share group{kind}.",
                error=described.error,
            )
        return Deletion(group_id, "not_found", error=described.error)
    if described.state == "Dead":
        return Deletion(
            group_id,
            "refused",
            reason="dead",
            message=f"Share group '{group_id}' group state is DEAD.",
        )
    if described.members or described.state != "Empty":
        members = tuple(GroupMember.of(member) for member in described.members)
        named = "; ".join(str(member) for member in members)
        return Deletion(
            group_id,
            "refused",
            reason="not_empty",
            message=(
                f"Share group '{group_id}' is not empty: it has "
                f"{_plural(len(members), 'member')}: {named}"
                if members
                else f"Share group '{group_id}' is not empty (state {described.state})."
            ),
            members=members,
        )
    return None


def _refused_by_broker(group_id: str, error: KafkaError, topic: str | None = None) -> Deletion:
    """The broker's own refusal: a member joined after the check, or the group vanished."""
    if error.code == ErrorCode.non_empty_group:
        return Deletion(
            group_id,
            "refused",
            topic=topic,
            reason="not_empty",
            message=f"Share group '{group_id}' is not empty: a member joined after the check.",
            error=error,
        )
    if error.code == ErrorCode.group_id_not_found:
        return Deletion(group_id, "not_found", topic=topic, error=error)
    return Deletion(group_id, "failed", topic=topic, error=error)


# --------------------------------------------------------------------------- converters (pure)


def _split_delete_groups(response: Any) -> Mapping[str, tuple[int, Any]]:
    return {result.group_id: (int(result.error_code), result) for result in response.results}


def deleted_groups_from(response: Any) -> dict[str, KafkaError | None]:
    """One DeleteGroups answer: each group's error, None for a group deleted."""
    return {
        result.group_id: None if int(result.error_code) == 0 else KafkaError.of(result.error_code)
        for result in response.results
    }


def offset_deletions_from(
    group_id: str,
    topics: Sequence[str],
    response: Any,
    partitions: Mapping[str, tuple[int, ...]] | None = None,
) -> tuple[Deletion, ...]:
    """One DeleteShareGroupOffsets answer as a result per requested topic.

    A top-level error (group not found, not empty, not authorised) is one group-level
    result. A requested topic the answer leaves out (Kafka does when the group has no
    share-partition state at all) has no offsets to delete, which is how Kafka's
    broker words it for a topic it knows the group never consumed. ``partitions``
    are the share-partitions each topic had before, for the report.
    """
    code = int(response.error_code)
    if code != 0:
        return (_refused_by_broker(group_id, KafkaError.of(code, response.error_message)),)
    known = partitions or {}
    answered = {topic.topic_name: topic for topic in response.responses}
    results = []
    for name in dict.fromkeys(topics):
        topic = answered.get(name)
        if topic is None:
            error = KafkaError.of(ErrorCode.unknown_topic_or_partition, NO_OFFSETS_MESSAGE)
            results.append(Deletion(group_id, "not_found", topic=name, error=error))
            continue
        topic_code = int(topic.error_code)
        if topic_code == 0:
            results.append(Deletion(group_id, "deleted", topic=name, partitions=known.get(name)))
            continue
        error = KafkaError.of(topic_code, topic.error_message)
        result: DeletionResult = (
            "not_found" if topic_code == ErrorCode.unknown_topic_or_partition else "failed"
        )
        results.append(Deletion(group_id, result, topic=name, error=error))
    return tuple(results)


def predict_offset_deletions(
    group_id: str,
    topics: Sequence[str],
    topic_errors: Mapping[str, KafkaError],
    partitions: Mapping[str, tuple[int, ...]],
) -> tuple[Deletion, ...]:
    """A dry run of DeleteShareGroupOffsets: what Kafka 4.2's coordinator would answer.

    ``topic_errors`` are Metadata's errors for the requested topics (an unknown topic
    is UNKNOWN_TOPIC_OR_PARTITION); ``partitions`` the group's share-partitions per
    topic (DescribeShareGroupOffsets).
    """
    results = []
    for name in dict.fromkeys(topics):
        error = topic_errors.get(name)
        if error is not None:
            result: DeletionResult = (
                "not_found" if error.code == ErrorCode.unknown_topic_or_partition else "failed"
            )
            results.append(Deletion(group_id, result, topic=name, error=error))
        elif not partitions.get(name):
            error = KafkaError.of(ErrorCode.unknown_topic_or_partition, NO_OFFSETS_MESSAGE)
            results.append(Deletion(group_id, "not_found", topic=name, error=error))
        else:
            results.append(
                Deletion(group_id, "would_delete", topic=name, partitions=partitions[name])
            )
    return tuple(results)


# --------------------------------------------------------------------------- operations


async def _other_group_types(admin: ShareGroupAdmin, group_ids: Iterable[str]) -> dict[str, str]:
    """The type of every group among ``group_ids`` that exists but is not a share group.

    ListGroups (v5, every type) on every broker; a broker that does not answer is
    skipped, so its groups count as missing, which refuses them just the same.
    """
    wanted = set(group_ids)
    if not wanted:
        return {}
    client = admin.client
    if not client.supports(LIST_GROUPS, LIST_GROUPS_WITH_TYPES):
        return {}
    metadata = await client.metadata([])

    async def ask(node_id: int) -> Any:
        try:
            _, response = await client.request(
                LIST_GROUPS,
                {"states_filter": [], "types_filter": []},
                node=node_id,
                min_version=LIST_GROUPS_WITH_TYPES,
            )
        except (AuthenticationFailed, IncompatibleBroker):
            raise
        except (ConnectionFailed, TimedOut):
            return None
        return response

    answers = await asyncio.gather(*(ask(node_id) for node_id in sorted(metadata.brokers)))
    found: dict[str, str] = {}
    for response in answers:
        if response is None or int(response.error_code) != 0:
            continue
        for group in response.groups:
            kind = str(getattr(group, "group_type", "") or group.protocol_type or "unknown")
            if group.group_id in wanted and kind.lower() != "share":
                found[group.group_id] = kind.lower()
    return found


async def _check_groups(
    admin: ShareGroupAdmin, group_ids: Sequence[str]
) -> tuple[list[str], list[Deletion], dict[str, GroupDescription]]:
    """(groups that may be deleted, refusals and failures, their descriptions)."""
    descriptions = await admin.describe_groups(group_ids)
    missing = [failure.group_id for failure in descriptions.errors() if failure.not_found]
    other_types = await _other_group_types(admin, missing)
    eligible: list[str] = []
    refused: list[Deletion] = []
    described: dict[str, GroupDescription] = {}
    for group_id in group_ids:
        answer = descriptions.get(group_id)
        if answer is None:  # pragma: no cover - describe_groups answers every group asked
            answer = GroupFailure(
                group_id, KafkaError.of(ErrorCode.unknown_server_error, "no answer")
            )
        verdict = check_group(group_id, answer, other_types.get(group_id))
        if verdict is not None:
            refused.append(verdict)
            continue
        eligible.append(group_id)
        if isinstance(answer, GroupDescription):
            described[group_id] = answer
    return eligible, refused, described


async def delete_groups(
    admin: ShareGroupAdmin, group_ids: Iterable[str], *, dry_run: bool
) -> Deletions:
    """Delete empty share groups (DeleteGroups, one request per coordinator), checked first.

    Every group is described first; a group with members, a group of another type
    and a missing group are not sent. ``dry_run`` stops after the checks.
    """
    wanted = list(dict.fromkeys(group_ids))
    if not wanted:
        return Deletions("delete", dry_run, ())
    eligible, results, _ = await _check_groups(admin, wanted)
    if dry_run or not eligible:
        results.extend(Deletion(group_id, "would_delete") for group_id in eligible)
        return Deletions("delete", dry_run, tuple(results))

    def body(version: int, groups: Sequence[str]) -> Mapping[str, Any]:
        return {"groups_names": list(groups)}

    answers = await admin.client.fan_out_to_coordinators(
        DELETE_GROUPS, eligible, body, _split_delete_groups
    )
    vanished = [
        group_id
        for group_id in eligible
        if isinstance(answers[group_id], KafkaError)
        and answers[group_id].code == ErrorCode.group_id_not_found
    ]
    gone: set[str] = set()
    if vanished:
        again = await admin.describe_groups(vanished)
        gone = {failure.group_id for failure in again.errors() if failure.not_found}
    for group_id in eligible:
        answer = answers[group_id]
        if not isinstance(answer, KafkaError):
            results.append(Deletion(group_id, "deleted"))
        elif group_id in gone:
            # Checked present a moment ago, absent now: our (retried) request deleted
            # it, or someone else did at the same moment. Either way it is gone.
            results.append(
                Deletion(
                    group_id,
                    "deleted",
                    message="DeleteGroups answered GROUP_ID_NOT_FOUND and the group is gone: "
                    "deleted by a retried request, or concurrently by another client",
                    error=answer,
                )
            )
        else:
            results.append(_refused_by_broker(group_id, answer))
    return Deletions("delete", dry_run, tuple(results))


async def delete_empty_groups(admin: ShareGroupAdmin, *, dry_run: bool) -> Deletions:
    """``delete --all-groups --empty-only``: every share group ListGroups reports Empty.

    Each is still described and checked before deletion (a member may have joined
    since the listing); brokers that did not answer ListGroups are reported.
    """
    listing = await admin.list_groups(["Empty"])
    deletions = await delete_groups(admin, listing.group_ids(), dry_run=dry_run)
    return Deletions(deletions.operation, deletions.dry_run, deletions.results, listing.failures)


async def _share_partitions(admin: ShareGroupAdmin, group_id: str) -> dict[str, tuple[int, ...]]:
    """The group's share-partitions per topic (DescribeShareGroupOffsets, all topics)."""
    offsets = await admin.list_share_partition_offsets([group_id], end_offsets=False)
    found: dict[str, list[int]] = {}
    for group in offsets.succeeded():
        for offset in group.partitions:
            if offset.error is None:
                found.setdefault(offset.topic, []).append(offset.partition)
    return {topic: tuple(sorted(parts)) for topic, parts in found.items()}


async def _topic_errors(admin: ShareGroupAdmin, topics: Sequence[str]) -> dict[str, KafkaError]:
    metadata = await admin.client.metadata(list(topics))
    errors: dict[str, KafkaError] = {}
    for name in topics:
        topic = metadata.topics.get(name)
        if topic is None:
            errors[name] = KafkaError.of(
                ErrorCode.unknown_topic_or_partition, UNKNOWN_TOPIC_MESSAGE
            )
        elif topic.error_code != 0:
            message = (
                UNKNOWN_TOPIC_MESSAGE
                if topic.error_code == ErrorCode.unknown_topic_or_partition
                else None
            )
            errors[name] = KafkaError.of(topic.error_code, message)
    return errors


async def delete_share_group_offsets(
    admin: ShareGroupAdmin, group_id: str, topics: Iterable[str], *, dry_run: bool
) -> Deletions:
    """Delete an empty share group's offsets on ``topics`` (DeleteShareGroupOffsets), checked first.

    The group must be an empty share group (else one group-level result, nothing
    sent). The group's share-partitions are read first, for the report and for a dry
    run's prediction; the broker's per-topic answer is the result.
    """
    wanted = list(dict.fromkeys(topics))
    eligible, refused, _ = await _check_groups(admin, [group_id])
    if not eligible:
        return Deletions("delete-offsets", dry_run, tuple(refused))
    partitions = await _share_partitions(admin, group_id)
    if dry_run:
        topic_errors = await _topic_errors(admin, wanted)
        predicted = predict_offset_deletions(group_id, wanted, topic_errors, partitions)
        return Deletions("delete-offsets", dry_run, predicted)

    def body(version: int, groups: Sequence[str]) -> Mapping[str, Any]:
        return {"group_id": group_id, "topics": [{"topic_name": name} for name in wanted]}

    def split(response: Any) -> Mapping[str, tuple[int, Any]]:
        # A single-group request: its top-level error is the group's.
        return {group_id: (int(response.error_code), response)}

    answers = await admin.client.fan_out_to_coordinators(
        DELETE_SHARE_GROUP_OFFSETS, [group_id], body, split
    )
    answer = answers[group_id]
    if isinstance(answer, KafkaError):
        return Deletions("delete-offsets", dry_run, (_refused_by_broker(group_id, answer),))
    return Deletions(
        "delete-offsets", dry_run, offset_deletions_from(group_id, wanted, answer, partitions)
    )
