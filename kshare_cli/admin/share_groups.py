"""ShareGroupAdmin: the read-only share-group operations, as Kafka's Admin client does them.

Each operation asks as few brokers as the protocol allows (ListGroups to every
broker, group RPCs once per coordinator with all its groups -- except
DescribeShareGroupOffsets, one group per request, see
``list_share_partition_offsets`` -- ListOffsets once per partition leader) and
returns a domain model in which a missing group, an unauthorised partition or a
silent broker is a fact about that group, partition or broker: the rest of the
answer stands.

The converters from kio responses to models are module functions, so the golden
corpus's recorded responses can be turned into models without a broker.

Kafka semantics followed (ShareGroupCommand, KafkaAdminClient, Kafka 4.2):

- ``describe`` of offsets first describes the groups: DescribeShareGroupOffsets
  answers an unknown group with no topics rather than an error, and only
  ShareGroupDescribe says GROUP_ID_NOT_FOUND.
- A negative start offset means the share-partition is not initialised: start
  offset, leader epoch and lag are all unknown (Kafka prints ``-`` for each).
- A negative leader epoch or lag is unknown. DescribeShareGroupOffsets v1 reports
  lag -1 after an offset reset; v0 has no lag at all. Then, when the log end offset
  is known, the lag is bounded by end offset − start offset (``lag_source="bound"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kio.schema.errors import ErrorCode

from kshare_cli.admin.models import (
    BrokerFailure,
    Coordinator,
    EndOffsets,
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupListing,
    GroupOffsets,
    KafkaError,
    LagSource,
    ListedGroup,
    MemberDescription,
    ShareGroupOffsets,
    SharePartitionOffset,
    TopicPartition,
    parse_group_state,
    parse_state_filter,
)
from kshare_cli.kafka.api_keys import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
    LIST_GROUPS,
    LIST_GROUPS_WITH_TYPES,
    LIST_OFFSETS,
    SHARE_GROUP_DESCRIBE,
)
from kshare_cli.wire.errors import is_retriable

if TYPE_CHECKING:
    from kshare_cli.wire.client import KafkaClient
    from kshare_cli.wire.cluster import BrokerNode

__all__ = [
    "ShareGroupAdmin",
    "authorized_operations",
    "description_from",
    "end_offsets_from",
    "group_offsets_from",
    "lag_and_source",
    "listed_groups_from",
]

#: Groups per DescribeShareGroupOffsets. Kafka 4.2 reads the groups of one request one
#: after the other (112 groups: 2.40 s) and one-group requests at once (112 of them:
#: 0.11 s), so every further group in a request only adds its wait; Kafka's own tool
#: sends one group per request too.
OFFSETS_GROUPS_PER_REQUEST: Final = 1

#: ListOffsets' special timestamps: the log end offset, and the log start offset.
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
READ_UNCOMMITTED: Final = 0
NO_AUTHORIZED_OPERATIONS: Final = -(2**31)

#: Kafka's AclOperation codes; UNKNOWN, ANY and ALL are never reported as authorised.
_ACL_OPERATIONS: Final = {
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    9: "CLUSTER_ACTION",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
    12: "IDEMPOTENT_WRITE",
    13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS",
    15: "TWO_PHASE_COMMIT",
}


class ShareGroupAdmin:
    """Typed share-group operations over a connected ``KafkaClient``.

    The client owns connections, deadlines and retries; this class knows which
    RPCs to send and what Kafka means by their answers.
    """

    def __init__(self, client: KafkaClient) -> None:
        self._client = client

    @property
    def client(self) -> KafkaClient:
        """The connected client, for callers that also send their own requests."""
        return self._client

    # -- list ------------------------------------------------------------------

    async def list_groups(self, states: Sequence[str] = ()) -> GroupListing:
        """Every share group (ListGroups v5, type ``share``) of every broker, sorted by id.

        ``states`` filters case-insensitively (``"stable,empty"`` works, as in Kafka's
        tool); an unknown state is a UsageError. A broker that fails to answer
        (unreachable, silent for its share of the deadline, too old for ListGroups v5)
        is recorded in ``failures`` and the groups of the others are still returned.
        A broker still loading a group-coordinator partition answers
        COORDINATOR_LOAD_IN_PROGRESS for all its groups: it is asked again, as Java's
        admin client does, and fails only if it is still loading when its share of
        the deadline runs out.
        """
        states_filter = parse_state_filter(states)
        body = {"states_filter": list(states_filter), "types_filter": ["Share"]}
        answers = await self._client.fan_out_to_brokers(
            LIST_GROUPS,
            body,
            min_version=LIST_GROUPS_WITH_TYPES,
            error_code=lambda response: int(response.error_code),
        )
        groups: list[ListedGroup] = []
        failures: list[BrokerFailure] = []
        for broker, answer in sorted(answers.items(), key=lambda item: item[0].node_id):
            if not isinstance(answer, KafkaError) and int(answer[1].error_code) != 0:
                answer = KafkaError.of(int(answer[1].error_code))
            if isinstance(answer, KafkaError):
                failures.append(
                    BrokerFailure(
                        broker.node_id, broker.host, broker.port, _unnamed(answer, broker)
                    )
                )
            else:
                groups.extend(listed_groups_from(answer[1]))
        return GroupListing(tuple(groups), states_filter, tuple(failures))

    async def all_group_ids(self) -> tuple[str, ...]:
        """Every share group's id, sorted: what ``describe --all-groups`` describes."""
        return (await self.list_groups()).group_ids()

    # -- describe --------------------------------------------------------------

    async def describe_groups(
        self, group_ids: Iterable[str], *, include_authorized_operations: bool = False
    ) -> GroupDescriptions:
        """ShareGroupDescribe, one request per coordinator; a description or failure per group."""
        wanted = list(dict.fromkeys(group_ids))
        if not wanted:
            return GroupDescriptions(())

        def body(version: int, groups: Sequence[str]) -> Mapping[str, Any]:
            return {
                "group_ids": list(groups),
                "include_authorized_operations": include_authorized_operations,
            }

        answers = await self._client.fan_out_to_coordinators(
            SHARE_GROUP_DESCRIBE, wanted, body, _split_groups
        )
        coordinators = await self._client.find_coordinators(wanted)
        results: list[GroupDescription | GroupFailure] = []
        for group_id in wanted:
            answer = answers[group_id]
            if isinstance(answer, KafkaError):
                results.append(GroupFailure(group_id, answer))
                continue
            node = coordinators.get(group_id)
            coordinator = (
                None
                if node is None or isinstance(node, KafkaError)
                else Coordinator(node.node_id, node.host, node.port)
            )
            results.append(description_from(answer, coordinator))
        return GroupDescriptions(tuple(results))

    # -- offsets ---------------------------------------------------------------

    async def list_share_partition_offsets(
        self,
        group_ids: Iterable[str],
        *,
        end_offsets: bool = True,
        groups_per_request: int | None = OFFSETS_GROUPS_PER_REQUEST,
    ) -> ShareGroupOffsets:
        """Start offset, lag and (with ``end_offsets``) log end offset of every share-partition.

        The groups are described first, so a group that does not exist is a
        GROUP_ID_NOT_FOUND failure, not "no offset information". Then
        DescribeShareGroupOffsets asks for all topics of each group,
        ``groups_per_request`` groups per request (None: all of a coordinator's
        groups in one, as kshare did before; the benchmark's baseline), the requests
        to each coordinator sent concurrently within the client's in-flight bound,
        and one ListOffsets per partition leader asks for the end offsets. A group
        whose request failed is a GroupFailure; the others stand.
        """
        wanted = list(dict.fromkeys(group_ids))
        if not wanted:
            return ShareGroupOffsets(())
        descriptions = await self.describe_groups(wanted)
        failures = {failure.group_id: failure for failure in descriptions.errors()}
        existing = [group_id for group_id in wanted if group_id not in failures]
        answers: dict[str, Any] = {}
        if existing:

            def body(version: int, groups: Sequence[str]) -> Mapping[str, Any]:
                return {"groups": [{"group_id": group, "topics": None} for group in groups]}

            answers = await self._client.fan_out_to_coordinators(
                DESCRIBE_SHARE_GROUP_OFFSETS,
                existing,
                body,
                _split_groups,
                batch_size=groups_per_request,
                ask_again=_leader_moving,
            )
        # Every share-partition answered without error, initialised or not: the log end
        # offset is known even where the start offset is not (Kafka's "-").
        partitions = {
            TopicPartition(topic.topic_name, int(partition.partition_index))
            for answer in answers.values()
            if not isinstance(answer, KafkaError)
            for topic in answer.topics
            for partition in topic.partitions
            if int(partition.error_code) == 0
        }
        ends = await self.log_end_offsets(partitions) if end_offsets and partitions else None
        results: list[GroupOffsets | GroupFailure] = list(failures.values())
        for group_id in existing:
            answer = answers[group_id]
            if isinstance(answer, KafkaError):
                results.append(GroupFailure(group_id, answer))
            else:
                results.append(group_offsets_from(answer, ends))
        return ShareGroupOffsets(tuple(results))

    async def log_end_offsets(self, topic_partitions: Iterable[TopicPartition]) -> EndOffsets:
        """Log end offsets (ListOffsets latest, read-uncommitted, as the broker's lag uses)."""
        return await self.log_offsets(topic_partitions, LATEST_TIMESTAMP)

    async def log_offsets(
        self, topic_partitions: Iterable[TopicPartition], timestamp: int
    ) -> EndOffsets:
        """ListOffsets for ``timestamp``: ``LATEST_TIMESTAMP`` (-1), ``EARLIEST_TIMESTAMP``
        (-2), or epoch milliseconds for the first offset whose timestamp is at or after it.

        One request per partition leader, sent concurrently. Unknown topics and
        partitions, leaderless partitions and leaders that do not answer are
        per-partition failures. For a timestamp with no record at or after it the
        answer is offset -1 (Kafka's UNKNOWN_OFFSET), kept as such: the caller decides
        (Kafka's reset tools fall back to the log end offset).
        """
        wanted = sorted(set(topic_partitions))
        if not wanted:
            return EndOffsets()

        def body(version: int, keys: Sequence[tuple[str, int]]) -> Mapping[str, Any]:
            topics: dict[str, list[dict[str, Any]]] = {}
            for topic, partition in keys:
                topics.setdefault(topic, []).append(
                    {
                        "partition_index": partition,
                        "current_leader_epoch": -1,
                        "timestamp": timestamp,
                    }  # fmt: skip
                )
            return {
                "replica_id": -1,
                "isolation_level": READ_UNCOMMITTED,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
                "timeout": round(self._client.timeout_s * 1000),
            }

        answers = await self._client.fan_out_to_leaders(
            LIST_OFFSETS, [(tp.topic, tp.partition) for tp in wanted], body, _split_partitions
        )
        offsets: dict[TopicPartition, int] = {}
        failures: dict[TopicPartition, KafkaError] = {}
        for tp in wanted:
            answer = answers[(tp.topic, tp.partition)]
            if isinstance(answer, KafkaError):
                failures[tp] = answer
            elif int(answer.offset) < 0 and timestamp < 0:
                failures[tp] = KafkaError.of(
                    ErrorCode.unknown_server_error, "no offset in the answer"
                )
            else:
                offsets[tp] = max(int(answer.offset), -1)
        return EndOffsets(offsets, failures)


# --------------------------------------------------------------------------- converters


def _unnamed(error: KafkaError, broker: BrokerNode) -> KafkaError:
    """A broker's failure without the broker's name in its message: the row names it."""
    prefix = f"broker {broker.node_id} ({broker}): "
    if error.message and error.message.startswith(prefix):
        return KafkaError.of(error.code, error.message.removeprefix(prefix))
    return error


def _split_partitions(response: Any) -> Mapping[tuple[str, int], tuple[int, Any]]:
    """A ListOffsets answer per (topic, partition)."""
    return {
        (topic.name, int(partition.partition_index)): (int(partition.error_code), partition)
        for topic in response.topics
        for partition in topic.partitions
    }


def _leader_moving(group: Any) -> bool:
    """Whether a group's offsets answer carries a share-partition error worth asking again.

    Any retriable one: NOT_LEADER_OR_FOLLOWER while a leader or share coordinator
    moves (seen on Kafka 4.2 during controlled shutdowns), a share coordinator still
    loading, UNKNOWN_TOPIC_OR_PARTITION from one that has not learnt of a new topic.
    """
    return any(
        is_retriable(int(partition.error_code))
        for topic in group.topics
        for partition in topic.partitions
    )


def _split_groups(response: Any) -> Mapping[str, tuple[int, Any]]:
    """ShareGroupDescribe and DescribeShareGroupOffsets both answer a list of groups."""
    return {group.group_id: (int(group.error_code), group) for group in response.groups}


def listed_groups_from(response: Any) -> list[ListedGroup]:
    """The share groups of one ListGroups answer (other types, if any, are left out)."""
    return [
        ListedGroup(group.group_id, parse_group_state(group.group_state))
        for group in response.groups
        if getattr(group, "group_type", "share").lower() in ("share", "")
    ]


def authorized_operations(bits: int) -> tuple[str, ...] | None:
    """Kafka's ``validAclOperations``: None when not asked for, else the operation names."""
    if bits == NO_AUTHORIZED_OPERATIONS:
        return None
    return tuple(name for code, name in _ACL_OPERATIONS.items() if bits & (1 << code))


def description_from(group: Any, coordinator: Coordinator | None) -> GroupDescription:
    """One DescribedGroup of a ShareGroupDescribe answer (error code 0)."""
    members = []
    for member in group.members:
        assignment: dict[str, list[int]] = {}
        for topic in member.assignment.topic_partitions:
            assignment.setdefault(topic.topic_name, []).extend(int(p) for p in topic.partitions)
        members.append(
            MemberDescription(
                member_id=member.member_id,
                client_id=member.client_id,
                host=member.client_host,
                rack=member.rack_id,
                member_epoch=int(member.member_epoch),
                subscribed_topics=tuple(member.subscribed_topic_names),
                assignment={topic: tuple(parts) for topic, parts in assignment.items()},
            )
        )
    return GroupDescription(
        group_id=group.group_id,
        state=parse_group_state(group.group_state),
        coordinator=coordinator,
        group_epoch=int(group.group_epoch),
        assignment_epoch=int(group.assignment_epoch),
        assignor=group.assignor_name,
        members=tuple(members),
        authorized_operations=authorized_operations(int(group.authorized_operations)),
    )


def lag_and_source(
    start: int | None, broker_lag: int | None, end: int | None
) -> tuple[int | None, LagSource | None]:
    """The broker's lag when it gave one, else kshare's bound (end - start), else unknown:
    the one rule for describe, and for inflight's rows read from the state topic."""
    if broker_lag is not None:
        return broker_lag, "broker"
    if start is not None and end is not None:
        return max(0, end - start), "bound"
    return None, None


def group_offsets_from(group: Any, end_offsets: EndOffsets | None = None) -> GroupOffsets:
    """One group of a DescribeShareGroupOffsets answer (error code 0), any version.

    ``end_offsets`` fills in the log end offsets and, where the broker gave no lag
    (v0, or -1), the bound.
    """
    offsets = []
    for topic in group.topics:
        for partition in topic.partitions:
            tp = TopicPartition(topic.topic_name, int(partition.partition_index))
            code = int(partition.error_code)
            end = None if end_offsets is None else end_offsets.get(tp)
            end_error = None if end_offsets is None else end_offsets.failures.get(tp)
            if code != 0:
                error = KafkaError.of(code, partition.error_message)
                offsets.append(SharePartitionOffset(tp.topic, tp.partition, None, error=error))
                continue
            start = int(partition.start_offset)
            if start < 0:
                offsets.append(
                    SharePartitionOffset(
                        tp.topic, tp.partition, None, end_offset=end, end_offset_error=end_error
                    )
                )
                continue
            epoch = int(partition.leader_epoch)
            reported = getattr(partition, "lag", None)  # absent before v1
            broker_lag = None if reported is None or int(reported) < 0 else int(reported)
            lag, source = lag_and_source(start, broker_lag, end)
            offsets.append(
                SharePartitionOffset(
                    tp.topic,
                    tp.partition,
                    start,
                    leader_epoch=epoch if epoch >= 0 else None,
                    lag=lag,
                    lag_source=source,
                    end_offset=end,
                    end_offset_error=end_error,
                )
            )
    return GroupOffsets(group.group_id, tuple(offsets))


def end_offsets_from(
    response: Any, *, allow_unknown: bool = False
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, KafkaError]]:
    """The offsets and per-partition errors of one ListOffsets answer.

    ``allow_unknown`` keeps offset -1 (a timestamp query with no record at or after
    the timestamp) as an answer instead of a failure.
    """
    found: dict[TopicPartition, int] = {}
    failed: dict[TopicPartition, KafkaError] = {}
    for topic in response.topics:
        for partition in topic.partitions:
            tp = TopicPartition(topic.name, int(partition.partition_index))
            code = int(partition.error_code)
            if code != 0:
                failed[tp] = KafkaError.of(code)
            elif int(partition.offset) < 0 and not allow_unknown:
                failed[tp] = KafkaError.of(
                    ErrorCode.unknown_server_error, "no offset in the answer"
                )
            else:
                found[tp] = max(int(partition.offset), -1)
    return found, failed
