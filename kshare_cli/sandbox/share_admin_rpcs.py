"""The admin RPCs on share groups: list, describe, offsets, delete.

ListGroups, OffsetCommit (refused for share groups as Kafka does),
ShareGroupDescribe, Describe/Alter/DeleteShareGroupOffsets and DeleteGroups,
answered by the group's coordinator from ``share_groups.ShareGroups`` the way
Kafka 4.2 answers them (the golden corpus's requests give the recorded answers).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_GROUPS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    SHARE_GROUP_DESCRIBE,
)
from kshare_cli.sandbox.broker import (
    SHARE_STATE_PARTITIONS,
    Broker,
    handles,
    response_type,
)
from kshare_cli.sandbox.cluster import NodeState
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.log import Topic
from kshare_cli.sandbox.server import Connection
from kshare_cli.sandbox.share_groups import (
    COORDINATOR_MESSAGES,
    ShareGroups,
    installed_share_groups,
    share_groups,
)
from kshare_cli.state.lag import share_partition_lag
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.wire.build import build

# -- admin RPCs ----------------------------------------------------------------


@handles(LIST_GROUPS)
async def list_groups(broker: Broker, request: Request, connection: Connection) -> Any:
    """The groups this node coordinates, or COORDINATOR_LOAD_IN_PROGRESS and none at all.

    Kafka 4.2's ``GroupCoordinatorService.listGroups`` reads every group-coordinator
    partition the broker holds (``CoordinatorRuntime.scheduleReadAllOperation``); a
    partition still loading fails its read with COORDINATOR_LOAD_IN_PROGRESS, which
    fails the combined answer: a top-level error and an empty list, even for the
    groups of the partitions already loaded. (NOT_COORDINATOR from a partition being
    unloaded is dropped: it lists nothing.) Java's admin client retries the error.
    """
    shares = installed_share_groups(broker)
    payload = request.payload
    if broker.cluster.group_coordinator_loading(connection.node_id):
        return build(
            response_type(request),
            {
                "throttle_time": 0,
                "error_code": ErrorCode.coordinator_load_in_progress,
                "groups": [],
            },
        )
    states = {s.lower() for s in (getattr(payload, "states_filter", ()) or ())}
    types = {t.lower() for t in (getattr(payload, "types_filter", ()) or ())}
    groups = []
    # Without share groups the broker is a 3.x one with no groups at all.
    if shares is not None:
        listed = [*shares.groups.list_groups(states), *shares.groups.list_classic_groups(states)]
        # Each broker lists the groups it coordinates; an admin client asks them all.
        here = set(
            broker.cluster.groups_coordinated_by(
                connection.node_id, [listing.group_id for listing in listed]
            )
        )
        for listing in listed:
            if types and listing.group_type not in types:
                continue
            if listing.group_id not in here:
                continue
            groups.append(
                {
                    "group_id": listing.group_id,
                    "protocol_type": listing.protocol_type,
                    "group_state": listing.state,
                    "group_type": listing.group_type,
                }
            )
    return build(
        response_type(request), {"throttle_time": 0, "error_code": ErrorCode.none, "groups": groups}
    )


@handles(OFFSET_COMMIT)
async def offset_commit(broker: Broker, request: Request, connection: Connection) -> Any:
    """A simple consumer's commit (no JoinGroup): it makes a classic group of that id.

    The sandbox has no classic group protocol; this is the one way to host a group
    of another type, so that kshare's "not a share group" paths meet the answers
    Kafka gives for one.
    """
    shares = installed_share_groups(broker)
    payload = request.payload

    def name_of(topic: Any) -> str:
        # v10 names topics by id (KIP-848); earlier versions by name.
        name = str(getattr(topic, "name", "") or "")
        topic_id = getattr(topic, "topic_id", None)
        known = None if topic_id is None else broker.logs.by_id.get(topic_id)
        return name or ("" if known is None else known.name)

    offsets = {
        (name_of(topic), int(partition.partition_index)): int(partition.committed_offset)
        for topic in payload.topics
        for partition in topic.partitions
    }
    refused = broker.group_coordinator_error(connection, str(payload.group_id))
    code: int
    if shares is None:
        code = ErrorCode.coordinator_not_available  # a 3.x-like broker here hosts no groups at all
    elif refused:
        code = refused
    else:
        code = shares.groups.commit_classic(str(payload.group_id), offsets)
    topics = [
        {
            "name": getattr(topic, "name", ""),
            "topic_id": getattr(topic, "topic_id", None),
            "partitions": [
                {"partition_index": partition.partition_index, "error_code": code}
                for partition in topic.partitions
            ],
        }
        for topic in payload.topics
    ]
    return build(response_type(request), {"throttle_time": 0, "topics": topics})


@handles(SHARE_GROUP_DESCRIBE)
async def share_group_describe(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    groups = []
    for group_id in request.payload.group_ids:
        if refused := broker.group_coordinator_error(connection, group_id):
            groups.append(
                {
                    "error_code": refused,
                    "error_message": COORDINATOR_MESSAGES[refused],
                    "group_id": group_id,
                    "group_state": "",
                    "group_epoch": 0,
                    "assignment_epoch": 0,
                    "assignor_name": "",
                    "members": [],
                    "authorized_operations": -2147483648,
                }
            )
            continue
        description = shares.groups.describe(group_id)
        if description.error_code != ErrorCode.none:
            groups.append(
                {
                    "error_code": description.error_code,
                    "error_message": description.error_message,
                    "group_id": group_id,
                    # Kafka leaves the defaults: "", 0, 0 (golden line 249, no-such-group).
                    "group_state": description.state,
                    "group_epoch": description.group_epoch,
                    "assignment_epoch": description.assignment_epoch,
                    "assignor_name": description.assignor_name,
                    "members": [],
                    "authorized_operations": -2147483648,
                }
            )
            continue
        members = []
        for member in description.members:
            topic_partitions = []
            for name, partitions in sorted(member.assignment.items()):
                topic = broker.topic(name)
                if topic is None:
                    continue
                topic_partitions.append(
                    {
                        "topic_id": topic.topic_id,
                        "topic_name": name,
                        "partitions": sorted(partitions),
                    }
                )
            members.append(
                {
                    "member_id": member.member_id,
                    "rack_id": member.rack_id,
                    "member_epoch": member.member_epoch,
                    "client_id": member.client_id,
                    "client_host": member.client_host,
                    "subscribed_topic_names": list(member.subscribed_topic_names),
                    "assignment": {"topic_partitions": topic_partitions},
                }
            )
        groups.append(
            {
                "error_code": ErrorCode.none,
                "error_message": None,
                "group_id": group_id,
                "group_state": description.state,
                "group_epoch": description.group_epoch,
                "assignment_epoch": description.assignment_epoch,
                "assignor_name": description.assignor_name,
                "members": members,
                "authorized_operations": -2147483648,
            }
        )
    return build(response_type(request), {"throttle_time": 0, "groups": groups})


def _group_error(shares: ShareGroups, group_id: str, *, must_be_empty: bool) -> int:
    description = shares.groups.describe(group_id)
    if description.error_code != ErrorCode.none:
        return description.error_code
    if must_be_empty and description.members:
        return ErrorCode.non_empty_group
    return ErrorCode.none


def _change_refused(
    broker: Broker, connection: Connection, shares: ShareGroups, group_id: str
) -> int:
    """Why a change to the group's offsets or to the group itself is refused (0: it is not).

    Kafka asks the coordinator first (NOT_COORDINATOR, loading), then the group: it
    must exist and have no members.
    """
    if refused := broker.group_coordinator_error(connection, group_id):
        return refused
    return _group_error(shares, group_id, must_be_empty=True)


@handles(DESCRIBE_SHARE_GROUP_OFFSETS)
async def describe_share_group_offsets(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    """Start offset and lag of each group's share-partitions, the groups read one by one.

    Kafka 4.2 reads each group's offsets from the share coordinator
    (``GroupCoordinatorService.describeShareGroupAllOffsets`` ->
    ``readShareGroupStateSummary`` -> ``persister.readSummary``: one
    ReadShareGroupStateSummary per group). ``KafkaApis.handleDescribeShareGroupOffsetsRequest``
    starts every group's read and answers when all are done, but the persister
    (``PersisterStateManager.SendThread.generateRequests``) coalesces reads per group
    only, takes one queued handler per wake-up and keeps one SUMMARY request in flight
    per share-coordinator node, so the groups of one request are read one after the
    other: 112 groups took 2.40 s. One-group requests never queue there -- the socket
    server reads a connection's next request only after answering the last -- and 112
    of them took 0.11 s in all.

    So the sandbox reads the first group of a request at once and makes each further
    group wait ``summary_read_wait_s`` (default: Kafka's 2.40 s / 112) behind the one
    before it, with ``asyncio.sleep``, so other connections are served meanwhile; a
    group's state is read when its turn comes, by share-partition key (a scan of
    every group's state per request would make a thousand one-group requests cost
    the sandbox time quadratic in the groups, which Kafka's per-group read does not).
    """
    shares = share_groups(broker)
    # The whole answer waits, as KafkaApis waits for every group's read, until the
    # persister has read every share-partition whose share coordinator is down, or given
    # up on it (then that share-partition reads as "no data": start offset -1, no error).
    unread = await _read_summaries(broker, shares, connection, request.payload.groups)
    groups = []
    for index, wanted in enumerate(request.payload.groups):
        if index and shares.summary_read_wait_s:
            await asyncio.sleep(shares.summary_read_wait_s)
        groups.append(_group_offsets(broker, shares, connection, wanted, unread))
    return build(response_type(request), {"throttle_time": 0, "groups": groups})


def _group_offsets(
    broker: Broker,
    shares: ShareGroups,
    connection: Connection,
    wanted: Any,
    unread: frozenset[SharePartitionKey],
) -> dict[str, Any]:
    """One group's answer: its coordinator's refusal, or its topics' share-partitions.

    Kafka answers for an unknown group as for one with no share-partitions: no error, no
    topics (or start offset -1 for named partitions); it is the tool that finds out the
    group is missing, from ShareGroupDescribe.
    """
    group_id = wanted.group_id
    if refused := broker.group_coordinator_error(connection, group_id):
        return {
            "group_id": group_id,
            "topics": [],
            "error_code": refused,
            "error_message": COORDINATOR_MESSAGES[refused],
        }
    states = _group_states(broker, shares, group_id)
    topics = [
        _topic_offsets(broker, group_id, name, partitions, states, unread)
        for name, partitions in _requested_topics(broker, states, wanted)
    ]
    return {
        "group_id": group_id,
        "topics": topics,
        "error_code": ErrorCode.none,
        "error_message": None,
    }


def _requested_topics(
    broker: Broker, states: dict[SharePartitionKey, SharePartitionState], wanted: Any
) -> list[tuple[str, list[int] | None]]:
    """The topics (and partitions; None: all with state) asked for, or every topic the
    group has state on when the request names none."""
    if wanted.topics is None:
        names = sorted(
            {t.name for k in states if (t := broker.logs.by_id.get(k.topic_id)) is not None}
        )
        return [(name, None) for name in names]
    return [(t.topic_name, [int(p) for p in t.partitions]) for t in wanted.topics]


def _topic_offsets(
    broker: Broker,
    group_id: str,
    name: str,
    partitions: list[int] | None,
    states: dict[SharePartitionKey, SharePartitionState],
    unread: frozenset[SharePartitionKey],
) -> dict[str, Any]:
    topic = broker.topic(name)
    if topic is None:
        return {
            "topic_name": name,
            "topic_id": uuid.UUID(int=0),
            # Kafka: an unknown topic is absence of data (offset -1), not an error.
            "partitions": [_offset_entry(p, -1, -1, -1, ErrorCode.none) for p in partitions or []],
        }
    if partitions is None:
        partitions = sorted(
            k.partition for k in states if k.topic_id == topic.topic_id and states[k]
        )
    entries = []
    for partition in partitions:
        key = SharePartitionKey(group_id, topic.topic_id, partition)
        entries.append(_partition_offset(broker, topic, key, states.get(key), unread))
    return {"topic_name": name, "topic_id": topic.topic_id, "partitions": entries}


def _partition_offset(
    broker: Broker,
    topic: Topic,
    key: SharePartitionKey,
    persisted: SharePartitionState | None,
    unread: frozenset[SharePartitionKey],
) -> dict[str, Any]:
    partition = key.partition
    if not 0 <= partition < len(topic.partitions):
        return _offset_entry(partition, -1, -1, -1, ErrorCode.unknown_topic_or_partition)
    if persisted is None:
        return _offset_entry(partition, -1, -1, -1, ErrorCode.none)
    if key in unread:
        # Kafka 4.2 computeShareGroupLagAndBuildResponse: a persister error is
        # "treated as absence of data, rather than an error": -1, 0, -1, NONE.
        return _offset_entry(partition, -1, 0, -1, ErrorCode.none)
    if broker.cluster.any_loading(SHARE_STATE_TOPIC) and broker.cluster.loading(
        SHARE_STATE_TOPIC, state_partition_for(key, SHARE_STATE_PARTITIONS)
    ):
        # Its share coordinator moved a moment ago: Kafka 4.2 answered this
        # share-partition NOT_LEADER_OR_FOLLOWER until the move settled.
        return _offset_entry(partition, -1, -1, -1, ErrorCode.not_leader_or_follower)
    end = topic.partitions[partition].log_end_offset
    lag = share_partition_lag(end, persisted.start_offset, persisted.delivery_complete_count)
    return _offset_entry(
        partition,
        persisted.start_offset,
        persisted.leader_epoch,
        -1 if lag is None else lag,
        ErrorCode.none,
    )


#: Kafka's persister (``PersisterStateManager``): each ReadShareGroupStateSummary attempt
#: to a share coordinator times out after 30 s (``DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS``,
#: the inter-broker send thread's request timeout); a refused connection fails at once;
#: five attempts (``MAX_FIND_COORD_ATTEMPTS``) with exponential backoff from 1 s, base 2
#: (about 2, 4, 8 and 16 s between them), the share coordinator looked up again before
#: each. A hung share coordinator therefore holds the answer about 180 s, a stopped one
#: until it is fenced and its state partitions have a new leader.
PERSISTER_ATTEMPT_TIMEOUT_S = 30.0
PERSISTER_BACKOFFS_S = (2.0, 4.0, 8.0, 16.0)


async def _read_summaries(
    broker: Broker, shares: ShareGroups, connection: Connection, wanted_groups: Any
) -> frozenset[SharePartitionKey]:
    """Wait as Kafka's persister does for the share-partitions whose share coordinator
    (the leader of their ``__share_group_state`` partition) is stopped or hung; return
    those it gave up on.

    Kafka reads every share-partition's summary from its share coordinator before the
    group coordinator answers DescribeShareGroupOffsets, so a hung share coordinator
    holds the answer of a perfectly healthy group coordinator, and with it every other
    share-partition of the request (measured in Kafka 4.2's source: ``DefaultStatePersister
    .readSummary`` waits on all of them, ``KafkaApis`` on all groups).
    """
    cluster = broker.cluster
    if all(state is NodeState.RUNNING for state in cluster.states.values()):
        # No share coordinator can be down: nothing to wait for, and no state partition
        # to compute for every share-partition of every group asked.
        return frozenset()
    keys = {
        key
        for wanted in wanted_groups
        if not broker.group_coordinator_error(connection, wanted.group_id)
        for key, state in _group_states(broker, shares, wanted.group_id).items()
        if state is not None
    }

    def down(key: SharePartitionKey) -> NodeState | None:
        leader = cluster.leader(SHARE_STATE_TOPIC, state_partition_for(key, SHARE_STATE_PARTITIONS))
        state = cluster.states.get(leader, NodeState.RUNNING)
        return None if state is NodeState.RUNNING else state

    pending = {key for key in keys if down(key) is not None}
    for backoff in (*PERSISTER_BACKOFFS_S, None):
        if not pending:
            return frozenset()
        if any(down(key) is NodeState.HUNG for key in pending):
            await asyncio.sleep(PERSISTER_ATTEMPT_TIMEOUT_S)
        if backoff is None:
            break
        await asyncio.sleep(backoff)
        pending = {key for key in pending if down(key) is not None}
    return frozenset(pending)


def _group_states(
    broker: Broker, shares: ShareGroups, group_id: str
) -> dict[SharePartitionKey, SharePartitionState]:
    """One group's persisted share-partition states, on the topics that exist now."""
    states: dict[SharePartitionKey, SharePartitionState] = {}
    for topic_id, topic in broker.logs.by_id.items():
        for partition in range(len(topic.partitions)):
            key = SharePartitionKey(group_id, topic_id, partition)
            state = shares.state.state(key)
            if state is not None:
                states[key] = state
    return states


def _offset_entry(
    partition: int, start_offset: int, leader_epoch: int, lag: int, error_code: int
) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "start_offset": start_offset,
        "leader_epoch": leader_epoch,
        "lag": lag,
        "error_code": error_code,
        "error_message": None,
    }


def _group_refused(request: Request, group_id: str, error: int) -> Any:
    """Alter/DeleteShareGroupOffsets refused for the whole group, with Kafka's message."""
    messages: dict[int, str] = {
        ErrorCode.non_empty_group: "The group is not empty.",
        ErrorCode.group_id_not_found: f"Group {group_id} not found.",
        **COORDINATOR_MESSAGES,
    }
    message = messages.get(error)
    body: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": error,
        "error_message": message,
        "responses": [],
    }
    return build(response_type(request), body)


@handles(ALTER_SHARE_GROUP_OFFSETS)
async def alter_share_group_offsets(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id
    error = _change_refused(broker, connection, shares, group_id)
    if error == ErrorCode.group_id_not_found:
        # Kafka 4.2 (GroupMetadataManager.alterShareGroupOffsets) makes a new ShareGroup but
        # persists it only through the ShareGroupStatePartitionMetadata record, written when
        # at least one requested topic is in its metadata image; replaying that record adds
        # the group (getOrMaybeCreatePersistedShareGroup). With only unknown topics every
        # partition answers UNKNOWN_TOPIC_OR_PARTITION and no group exists afterwards.
        if any(broker.topic(wanted.topic_name) is not None for wanted in payload.topics):
            shares.groups.ensure_group(group_id)
        error = ErrorCode.none
    if error != ErrorCode.none:
        return _group_refused(request, group_id, error)
    body: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None}
    group_epoch = shares.groups.describe(group_id).group_epoch
    responses = []
    for wanted in payload.topics:
        topic = broker.topic(wanted.topic_name)
        partitions = []
        for partition in wanted.partitions:
            index = int(partition.partition_index)
            start = int(partition.start_offset)
            code = ErrorCode.none
            message = None
            if topic is None or not 0 <= index < len(topic.partitions):
                code = ErrorCode.unknown_topic_or_partition
                message = "This server does not host this topic-partition."
            else:
                key = SharePartitionKey(group_id, topic.topic_id, index)
                # Kafka initializes the state with the group epoch as the state epoch (the
                # golden reset after close wrote stateEpoch 3 twice, at group epoch 3).
                shares.initialize(key, group_epoch, start)
                shares.forget_live([key])
                shares.groups.mark_initialized(group_id, {wanted.topic_name: [index]})
            partitions.append(
                {"partition_index": index, "error_code": code, "error_message": message}
            )
        responses.append(
            {
                "topic_name": wanted.topic_name,
                "topic_id": uuid.UUID(int=0) if topic is None else topic.topic_id,
                "partitions": partitions,
            }
        )
    body["responses"] = responses
    return build(response_type(request), body)


@handles(DELETE_SHARE_GROUP_OFFSETS)
async def delete_share_group_offsets(
    broker: Broker, request: Request, connection: Connection
) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id
    error = _change_refused(broker, connection, shares, group_id)
    if error != ErrorCode.none:
        return _group_refused(request, group_id, error)
    body: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None}
    states = shares.group_topic_states(group_id)
    responses = []
    for wanted in payload.topics:
        topic = broker.topic(wanted.topic_name)
        if topic is None:
            responses.append(
                {
                    "topic_name": wanted.topic_name,
                    "topic_id": uuid.UUID(int=0),
                    "error_code": ErrorCode.unknown_topic_or_partition,
                    "error_message": "This server does not host this topic-partition.",
                }
            )
            continue
        keys = [k for k in states if k.topic_id == topic.topic_id]
        if not keys and wanted.topic_name not in shares.groups.initialized_partitions(group_id):
            # Kafka 4.2 (sharePartitionsEligibleForOffsetDeletion): a topic the group has
            # no initialised share-partitions on is refused, not silently "deleted".
            responses.append(
                {
                    "topic_name": wanted.topic_name,
                    "topic_id": uuid.UUID(int=0),
                    "error_code": ErrorCode.unknown_topic_or_partition,
                    "error_message": "There is no offset information to delete.",
                }
            )
            continue
        for key in sorted(keys, key=lambda k: k.partition):
            record = shares.state.delete(key)
            if record is not None:
                shares._append_state(key, record)
        shares.forget_live(keys)
        shares.groups.mark_uninitialized(group_id, [wanted.topic_name])
        responses.append(
            {
                "topic_name": wanted.topic_name,
                "topic_id": topic.topic_id,
                "error_code": ErrorCode.none,
                "error_message": None,
            }
        )
    body["responses"] = responses
    return build(response_type(request), body)


@handles(DELETE_GROUPS)
async def delete_groups(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = installed_share_groups(broker)
    results = []
    for group_id in request.payload.groups_names:
        if shares is None:
            results.append({"group_id": group_id, "error_code": ErrorCode.group_id_not_found})
            continue
        error = _change_refused(broker, connection, shares, group_id)
        if error == ErrorCode.none:
            states = shares.group_topic_states(group_id)
            for key in sorted(states, key=lambda k: (str(k.topic_id), k.partition)):
                record = shares.state.delete(key)
                if record is not None:
                    shares._append_state(key, record)
            shares.forget_live(list(states))
            shares.groups.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": error})
    return build(response_type(request), {"throttle_time": 0, "results": results})
