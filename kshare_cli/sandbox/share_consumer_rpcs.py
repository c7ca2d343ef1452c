"""ShareGroupHeartbeat, ShareFetch and ShareAcknowledge: what a share consumer sends.

Membership goes to the group coordinator; fetches and acknowledgements to each
partition's leader, through the member's share session (per node, as Kafka's
share-session cache is per broker), acquiring and acknowledging records in the
share-partitions of ``share_groups.ShareGroups``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Final

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.sandbox.broker import (
    Broker,
    handles,
    now_ms,
    response_type,
)
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.sandbox.share_groups import (
    COORDINATOR_MESSAGES,
    ShareGroups,
    ShareSession,
    share_groups,
)
from kshare_cli.sandbox.share_partition import (
    AcknowledgementBatch,
    SharePartition,
)
from kshare_cli.state.replay import SharePartitionKey
from kshare_cli.wire.build import build

log = logging.getLogger("kshare.sandbox")

# -- ShareGroupHeartbeat ------------------------------------------------------


@handles(SHARE_GROUP_HEARTBEAT)
async def share_group_heartbeat(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    refused = broker.group_coordinator_error(connection, payload.group_id)
    if refused:
        return build(
            response_type(request),
            {
                "throttle_time": 0,
                "error_code": refused,
                "error_message": COORDINATOR_MESSAGES[refused],
                "member_id": None,
                "member_epoch": 0,
                "heartbeat_interval": 0,
                "assignment": None,
            },
        )
    now = now_ms()
    topics = {name: len(t.partitions) for name, t in broker.logs.topics.items() if not t.internal}
    result = shares.groups.heartbeat(
        group_id=payload.group_id,
        member_id=payload.member_id,
        member_epoch=int(payload.member_epoch),
        rack_id=payload.rack_id,
        client_id=request.client_id or "",
        client_host=f"/{connection.peer_host}",
        subscribed_topic_names=(
            None if payload.subscribed_topic_names is None else list(payload.subscribed_topic_names)
        ),
        topic_partitions=topics,
        now_ms=now,
    )
    if result.removed_member is not None:
        removed = result.removed_member
        shares._member_gone(removed.group_id, removed.member_id, now)
    if result.initialization is not None:
        shares.initialize_assigned(result.initialization)
    assignment = None
    if result.assignment is not None:
        topic_partitions = []
        for name, partitions in sorted(result.assignment.items()):
            topic = broker.topic(name)
            if topic is None:
                continue
            for partition in partitions:
                shares.share_partition(
                    SharePartitionKey(payload.group_id, topic.topic_id, partition)
                )
            topic_partitions.append({"topic_id": topic.topic_id, "partitions": sorted(partitions)})
        assignment = {"topic_partitions": topic_partitions}
    broker.notify_data_changed()
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "error_message": result.error_message,
            "member_id": result.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval": result.heartbeat_interval_ms,
            "assignment": assignment,
        },
    )


# -- ShareFetch / ShareAcknowledge --------------------------------------------


def carries_acknowledgements(request: Request) -> bool:
    """Whether ``request`` is a ShareFetch or ShareAcknowledge with acknowledgements in it.

    For ``Broker.drop_answer``: the request whose lost answer leaves a consumer
    unable to tell whether its acknowledgements were applied.
    """
    if request.api_key not in (SHARE_FETCH, SHARE_ACKNOWLEDGE):
        return False
    return any(p.acknowledgement_batches for t in request.payload.topics for p in t.partitions)


def _session_for(
    shares: ShareGroups, node_id: int, group_id: str, member_id: str, epoch: int
) -> tuple[ShareSession | None, int]:
    """Kafka's share-session rules: 0 opens, -1 closes, otherwise the epoch must follow on."""
    key = (node_id, group_id, member_id)
    if epoch == 0:
        opened = ShareSession(group_id, member_id, 1)
        shares.sessions[key] = opened
        return opened, ErrorCode.none
    session = shares.sessions.get(key)
    if session is None:
        return None, ErrorCode.share_session_not_found
    if epoch == -1:
        return session, ErrorCode.none
    if epoch != session.next_epoch:
        return None, ErrorCode.invalid_share_session_epoch
    session.next_epoch = epoch + 1 if epoch < 2**31 - 1 else 1
    return session, ErrorCode.none


def _acknowledge(
    shares: ShareGroups,
    connection: Connection,
    group_id: str,
    member_id: str,
    topics: Any,
    now: int,
    deferred: list[SharePartition] | None = None,
) -> dict[tuple[uuid.UUID, int], int]:
    """Apply acknowledgements; with ``deferred``, their records stay mid-write until committed.

    A real broker cannot hand out a record whose acknowledgement is still being
    persisted, so a ShareFetch that piggybacks a release gets that record back
    only on a later fetch; ``deferred`` reproduces that ordering.
    """
    results: dict[tuple[uuid.UUID, int], int] = {}
    for topic in topics:
        for partition in topic.partitions:
            if not partition.acknowledgement_batches:
                continue
            key = SharePartitionKey(group_id, topic.topic_id, int(partition.partition_index))
            refused = _leader_error(shares.broker, connection, topic.topic_id, key.partition)
            if refused:
                results[(topic.topic_id, key.partition)] = refused
                continue
            share_partition = shares.share_partition(key)
            if share_partition is None:
                results[(topic.topic_id, key.partition)] = ErrorCode.unknown_topic_or_partition
                continue
            batches = [
                AcknowledgementBatch(
                    int(b.first_offset),
                    int(b.last_offset),
                    tuple(int(t) for t in b.acknowledge_types),
                )
                for b in partition.acknowledgement_batches
            ]
            outcome = share_partition.acknowledge(
                member_id, batches, now, defer_commit=deferred is not None
            )
            if deferred is not None and share_partition.has_pending_writes:
                deferred.append(share_partition)
            if outcome.state_write is not None:
                shares._persist(key, outcome.state_write)
            results[(topic.topic_id, key.partition)] = outcome.error_code
    return results


def _leader_error(
    broker: Broker, connection: Connection, topic_id: uuid.UUID, partition: int
) -> int:
    """NOT_LEADER_OR_FOLLOWER for a share-partition this node does not lead (else NONE)."""
    topic = broker.logs.by_id.get(topic_id)
    if topic is None:
        return ErrorCode.none
    return broker.leader_error(connection, topic.name, partition)


def _current_leader(broker: Broker, topic_id: uuid.UUID, partition: int) -> dict[str, int]:
    topic = broker.logs.by_id.get(topic_id)
    if topic is None:
        return _LEADER
    return broker.current_leader(topic.name, partition)


def _leader_to_name(
    broker: Broker, topic_id: uuid.UUID, partition: int, codes: tuple[int, ...], leaders: set[int]
) -> dict[str, int]:
    """A partition's CurrentLeader: the real one (added to ``leaders``, whose NodeEndpoints
    the response lists) when one of its codes is NOT_LEADER_OR_FOLLOWER, else none."""
    if ErrorCode.not_leader_or_follower not in codes:
        return _LEADER
    current_leader = _current_leader(broker, topic_id, partition)
    leaders.add(current_leader["leader_id"])
    return current_leader


def _acquire(
    shares: ShareGroups,
    session: ShareSession,
    max_records: int,
    max_bytes: int,
    batch_size: int,
    now: int,
) -> dict[tuple[uuid.UUID, int], tuple[bytes, list[dict[str, int]]]]:
    fetched: dict[tuple[uuid.UUID, int], tuple[bytes, list[dict[str, int]]]] = {}
    remaining = max_records
    for topic_id, partition in sorted(session.partitions, key=lambda p: (str(p[0]), p[1])):
        if remaining <= 0 or max_bytes <= 0:
            break
        key = SharePartitionKey(session.group_id, topic_id, partition)
        share_partition = shares.share_partition(key)
        topic = shares.broker.logs.by_id.get(topic_id)
        if share_partition is None or topic is None:
            continue
        partition_log = topic.partitions[partition]
        start = share_partition.next_fetch_offset()
        if start >= partition_log.log_end_offset:
            continue
        acquired = share_partition.acquire(
            session.member_id,
            partition_log.log_end_offset,
            remaining,
            now,
            record_batches=partition_log.batch_ranges(start, partition_log.log_end_offset),
            batch_size=batch_size or None,
        )
        if not acquired:
            continue
        first = min(a.first_offset for a in acquired)
        last = max(a.last_offset for a in acquired)
        chunks = []
        size = 0
        for first_offset, last_offset in partition_log.batch_ranges(first, last + 1):
            index = partition_log.batch_index(first_offset)
            data = partition_log.batches[index].data
            chunks.append(data)
            size += len(data)
            del last_offset
        remaining -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
        max_bytes -= size
        fetched[(topic_id, partition)] = (
            b"".join(chunks),
            [
                {
                    "first_offset": a.first_offset,
                    "last_offset": a.last_offset,
                    "delivery_count": a.delivery_count,
                }
                for a in acquired
            ],
        )
    return fetched


_LEADER: Final = {"leader_id": 0, "leader_epoch": 0}


def _top_level_error(request: Request, error_code: int, **extra: Any) -> Any:
    """A ShareFetch/ShareAcknowledge response that fails the whole request."""
    body: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": error_code,
        "error_message": None,
        "responses": [],
        "node_endpoints": [],
    }
    return build(response_type(request), {**body, **extra})


def _session_node(broker: Broker, connection: Connection) -> int | None:
    """Whose partitions a closing session releases: all of them on a one-node sandbox."""
    return connection.node_id if len(broker.cluster.node_ids) > 1 else None


def _commit(shares: ShareGroups, deferred: list[SharePartition]) -> None:
    """The deferred acknowledgements' writes completed; then any DLQ writes they started."""
    for share_partition in deferred:
        share_partition.commit_pending()
    if any(share_partition.has_dead_letters for share_partition in deferred):
        shares.drain_dead_letters()
    deferred.clear()


@handles(SHARE_FETCH)
async def share_fetch(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id or ""
    member_id = payload.member_id or ""
    epoch = int(payload.share_session_epoch)
    lock_ms = shares.configs.record_lock_duration_ms(group_id) if group_id else 30000

    def top_level(error_code: int) -> Any:
        return _top_level_error(request, error_code, acquisition_lock_timeout=lock_ms)

    if not group_id or not member_id:
        return top_level(ErrorCode.invalid_request)
    has_acks = any(p.acknowledgement_batches for t in payload.topics for p in t.partitions)
    if epoch == 0 and has_acks:
        return top_level(ErrorCode.invalid_request)
    session, error = _session_for(shares, connection.node_id, group_id, member_id, epoch)
    if session is None:
        return top_level(error)
    now = now_ms()
    deferred: list[SharePartition] = []
    ack_results = _acknowledge(
        shares, connection, group_id, member_id, payload.topics, now, deferred
    )
    errors = _update_session(broker, shares, connection, session, payload, epoch)
    fetched: Fetched = {}
    if epoch == -1:
        # Closing the session releases whatever the member still holds on this node.
        shares.sessions.pop((connection.node_id, group_id, member_id), None)
        shares._member_gone(group_id, member_id, now, led_by=_session_node(broker, connection))
        broker.notify_data_changed()
    else:
        fetched = await _fetch_until_due(broker, shares, session, payload, deferred, ack_results)
    _commit(shares, deferred)
    by_topic, leaders = _fetch_partitions(broker, fetched, errors, ack_results)
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "acquisition_lock_timeout": lock_ms,
            "responses": [
                {"topic_id": topic_id, "partitions": partitions}
                for topic_id, partitions in by_topic.items()
            ],
            "node_endpoints": broker.node_endpoints(leaders),
        },
    )


#: What a ShareFetch acquired, by (topic id, partition): the records' bytes and their
#: AcquiredRecords ranges.
Fetched = dict[tuple[uuid.UUID, int], tuple[bytes, list[dict[str, int]]]]


def _update_session(
    broker: Broker,
    shares: ShareGroups,
    connection: Connection,
    session: ShareSession,
    payload: Any,
    epoch: int,
) -> dict[tuple[uuid.UUID, int], int]:
    """Forget what the request forgets, add what it names, and drop the partitions this
    node no longer leads; the error for each partition that gets one."""
    for forgotten in payload.forgotten_topics_data:
        for partition in forgotten.partitions:
            session.partitions.discard((forgotten.topic_id, int(partition)))
    errors: dict[tuple[uuid.UUID, int], int] = {}
    # A partition of the session whose leadership moved away is reported once and dropped.
    for topic_id, index in sorted(session.partitions, key=lambda p: (str(p[0]), p[1])):
        if refused := _leader_error(broker, connection, topic_id, index):
            errors[(topic_id, index)] = refused
            session.partitions.discard((topic_id, index))
    for topic in payload.topics:
        for partition in topic.partitions:
            key = SharePartitionKey(
                session.group_id, topic.topic_id, int(partition.partition_index)
            )
            if refused := _leader_error(broker, connection, topic.topic_id, key.partition):
                errors[(topic.topic_id, key.partition)] = refused
            elif shares.share_partition(key) is None:
                errors[(topic.topic_id, key.partition)] = (
                    ErrorCode.unknown_topic_id
                    if topic.topic_id not in broker.logs.by_id
                    else ErrorCode.unknown_topic_or_partition
                )
            elif epoch != -1:
                session.partitions.add((topic.topic_id, key.partition))
    return errors


async def _fetch_until_due(
    broker: Broker,
    shares: ShareGroups,
    session: ShareSession,
    payload: Any,
    deferred: list[SharePartition],
    ack_results: dict[tuple[uuid.UUID, int], int],
) -> Fetched:
    """Acquire records for the session, waiting up to the request's MaxWait for some
    (a fetch that acknowledged something answers at once)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + payload.max_wait.total_seconds()
    while True:
        fetched = _acquire(
            shares,
            session,
            int(payload.max_records) or 500,
            int(payload.max_bytes),
            int(getattr(payload, "batch_size", 0) or 0),
            now_ms(),
        )
        if not fetched and deferred:
            # Kafka parks such a fetch until the acknowledgement's write completes.
            _commit(shares, deferred)
            continue
        remaining = deadline - loop.time()
        if fetched or ack_results or remaining <= 0:
            return fetched
        await broker.wait_data_changed(remaining)


def _fetch_partitions(
    broker: Broker,
    fetched: Fetched,
    errors: dict[tuple[uuid.UUID, int], int],
    ack_results: dict[tuple[uuid.UUID, int], int],
) -> tuple[dict[uuid.UUID, list[dict[str, Any]]], set[int]]:
    """Each touched partition's answer, by topic id, and the leaders they name."""
    touched = set(ack_results) | set(fetched) | set(errors)
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for topic_id, partition in sorted(touched, key=lambda p: (str(p[0]), p[1])):
        records, acquired = fetched.get((topic_id, partition), (b"", []))
        error_code = errors.get((topic_id, partition), ErrorCode.none)
        ack_error_code = ack_results.get((topic_id, partition), ErrorCode.none)
        current_leader = _leader_to_name(
            broker, topic_id, partition, (error_code, ack_error_code), leaders
        )
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": error_code,
                "error_message": None,
                "acknowledge_error_code": ack_error_code,
                "acknowledge_error_message": None,
                "current_leader": current_leader,
                "records": records,
                "acquired_records": acquired,
            }
        )
    return by_topic, leaders


@handles(SHARE_ACKNOWLEDGE)
async def share_acknowledge(broker: Broker, request: Request, connection: Connection) -> Any:
    shares = share_groups(broker)
    payload = request.payload
    group_id = payload.group_id or ""
    member_id = payload.member_id or ""
    epoch = int(payload.share_session_epoch)

    def top_level(error_code: int) -> Any:
        return _top_level_error(request, error_code)

    if not group_id or not member_id:
        return top_level(ErrorCode.invalid_request)
    if epoch == 0:
        return top_level(ErrorCode.invalid_share_session_epoch)
    session, error = _session_for(shares, connection.node_id, group_id, member_id, epoch)
    if session is None:
        return top_level(error)
    now = now_ms()
    results = _acknowledge(shares, connection, group_id, member_id, payload.topics, now)
    if epoch == -1:
        # Closing the session releases whatever the member still holds on this node.
        shares.sessions.pop((connection.node_id, group_id, member_id), None)
        shares._member_gone(group_id, member_id, now, led_by=_session_node(broker, connection))
    broker.notify_data_changed()
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for (topic_id, partition), code in sorted(
        results.items(), key=lambda r: (str(r[0][0]), r[0][1])
    ):
        current_leader = _leader_to_name(broker, topic_id, partition, (code,), leaders)
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "error_code": code,
                "error_message": None,
                "current_leader": current_leader,
            }
        )
    return build(
        response_type(request),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "responses": [{"topic_id": t, "partitions": p} for t, p in by_topic.items()],
            "node_endpoints": broker.node_endpoints(leaders),
        },
    )
