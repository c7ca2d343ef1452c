"""Group RPCs: each group's coordinator found, cached, and asked about its groups.

The groups are batched per coordinator (one FindCoordinator v4+ round trip finds
them all), one request per coordinator carries all of its groups -- or, with
``batch_size``, a few of them per request, sent concurrently, at most
``max_in_flight`` at a time per coordinator, for RPCs a broker serves group by
group -- and only the groups whose coordinator moved are asked again.

A coordinator talks to the connection pool more closely than the other fan-outs
(``fanout.py``), because a silent coordinator is not always a dead one: Kafka's
group coordinator holds the offset RPCs while a share coordinator it reads from
is hung. So this module checks a coordinator with a fresh handshake, keeps a
holding one in use on a new connection, asks its held groups again one by one on
connections of their own, and names the brokers that do not answer. The
coordinators found are cached in the client's ``ClusterState``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Final, Protocol

from kio.schema.errors import ErrorCode

from kshare_cli.errors import AuthenticationFailed, ConnectionFailed, IncompatibleBroker, TimedOut
from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    FIND_COORDINATOR,
)
from kshare_cli.wire.backoff import Backoff
from kshare_cli.wire.cluster import BrokerNode, ClusterState, api_name, plan_coordinators
from kshare_cli.wire.connection import BrokerConnection
from kshare_cli.wire.errors import (
    COORDINATOR_MOVED,
    BrokerUnreachable,
    ConnectionReplaced,
    KafkaError,
    NodeLeft,
    is_retriable,
)
from kshare_cli.wire.fanout import Body, BrokerPool, branch_failure, transport_error

#: FindCoordinator's key type for consumer, classic and share groups alike.
GROUP_KEY_TYPE: Final = 0
#: The first FindCoordinator version with ``coordinator_keys`` (KIP-699).
BATCHED_FIND_COORDINATOR: Final = 4
#: Requests of one fan-out in flight to one coordinator at a time. A Kafka broker
#: reads no further request from a connection until it has answered the last (its
#: socket server mutes the channel), so more in flight only wait in socket buffers:
#: 32 keeps the pipe full across a round trip, far below the broker's request
#: queue (``queued.max.requests``, 500, shared by all its clients).
DEFAULT_MAX_IN_FLIGHT: Final = 32
#: How long a broker has to complete a fresh handshake when a coordinator held a request:
#: on a healthy cluster a handshake takes milliseconds, so a second tells alive from hung.
PROBE_S: Final = 1.0
#: A group asked again alone, once its coordinator was found holding another group's
#: request: how long it may take, and how many such connections are open at once.
ALONE_S: Final = 2.0
ALONE_IN_FLIGHT: Final = 8

#: The group RPCs Kafka's group coordinator answers only once the share coordinators it
#: reads from have (``PersisterStateManager``): about 180 s for a hung one. They go on a
#: connection of their own to each coordinator, its ``HELD_LANE``, so that a held one
#: never holds the descriptions, metadata and end offsets asked meanwhile.
HOLDABLE: Final = frozenset(
    {DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS}
)
HELD_LANE: Final = "offsets"

GroupsBody = Callable[[int, Sequence[str]], Mapping[str, Any]]
GroupsSplit = Callable[[Any], Mapping[str, tuple[int, Any]]]
#: One coordinator's answers so far, and the groups to ask again.
Answers = tuple[dict[str, Any | KafkaError], list[str]]


class HeldBehind(TimedOut):
    """A request queued behind a held one on the same connection, which another
    fan-out found held and replaced: the coordinator is alive (it answered that
    fan-out's handshake), so the group is asked again alone, not given up."""


class CoordinatorPool(BrokerPool, Protocol):
    """What the coordinator fan-out needs of the client beyond ``BrokerPool``.

    The coordinator cache, and connection-level access: a coordinator's
    groups are asked once on its pooled connection (not retried there, since
    they may have moved), and a held coordinator is probed on new connections.
    """

    @property
    def cluster(self) -> ClusterState:
        """The cluster state whose coordinator cache this module keeps."""
        ...

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        """Whether the bootstrap broker speaks ``api_key`` at ``min_version`` or later."""
        ...

    def check_given_up(self, node: BrokerNode) -> None:
        """Raise ``node``'s BrokerUnreachable again if it was given up on."""
        ...

    def given_up_recently(self, node_id: int) -> bool:
        """Whether ``node_id`` was given up on within the client's give-up time."""
        ...

    def answered(self, node_id: int) -> None:
        """``node_id`` answered: forget that it ever failed."""
        ...

    async def connection(self, address: tuple[str, int], lane: str = "") -> BrokerConnection:
        """The pooled connection to ``address`` on ``lane``, opened if needed."""
        ...

    async def connection_failed(self, node: BrokerNode, error: ConnectionFailed) -> None:
        """After a connection to ``node`` failed: raise NodeLeft or BrokerUnreachable, or retry."""
        ...

    async def open_connection(self, address: tuple[str, int]) -> BrokerConnection:
        """A new connection outside the pool; the caller closes it."""
        ...

    async def adopt_connection(
        self, node: BrokerNode, fresh: BrokerConnection, lane: str = ""
    ) -> None:
        """Make ``fresh`` the pooled connection to ``node`` on ``lane``, closing the one
        it replaces."""
        ...

    async def attempt(
        self,
        connection: BrokerConnection,
        api_key: int,
        body: Body,
        min_version: int,
        max_version: int | None,
    ) -> tuple[int, Any]:
        """One request on ``connection``, its version chosen against that broker."""
        ...


async def find_coordinators(
    pool: CoordinatorPool, group_ids: Sequence[str]
) -> dict[str, BrokerNode | KafkaError]:
    """Each group's coordinator: cached, else one batched FindCoordinator for all missing.

    Coordinators still loading or not yet elected (any retriable error) are
    asked again with backoff for ``BRANCH_SHARE`` of what is left of the
    deadline, then come back as their last error, like any other per-group
    error: a group without a coordinator must not cost the other groups their
    answers.
    """
    wanted = list(dict.fromkeys(group_ids))
    async with pool.bounded("FindCoordinator"):
        give_up_at = pool.share_deadline()
        found: dict[str, BrokerNode | KafkaError] = {}
        missing: list[str] = []
        for group_id in wanted:
            cached = pool.cluster.coordinator(group_id)
            if cached is None:
                missing.append(group_id)
            else:
                found[group_id] = cached
        backoff = Backoff()
        while missing:
            answers = await _find_coordinators_once(pool, missing)
            missing = []
            retry = backoff.fits_before(give_up_at)
            for group_id, answer in answers.items():
                if retry and isinstance(answer, KafkaError) and is_retriable(answer.code):
                    pool.note(f"FindCoordinator for group {group_id!r}: {answer}")
                    missing.append(group_id)
                    continue
                if isinstance(answer, BrokerNode):
                    pool.cluster.set_coordinator(group_id, answer)
                    answer = pool.cluster.coordinator(group_id) or answer
                found[group_id] = answer
            if missing:
                await backoff.wait()
        return {group_id: found[group_id] for group_id in wanted}


async def _find_coordinators_once(
    pool: CoordinatorPool, group_ids: Sequence[str]
) -> dict[str, BrokerNode | KafkaError]:
    if pool.supports(FIND_COORDINATOR, BATCHED_FIND_COORDINATOR):
        # Asked of any broker; the bootstrap one's answer stands for the cluster.
        _, response = await pool.request(
            FIND_COORDINATOR,
            {"key_type": GROUP_KEY_TYPE, "coordinator_keys": list(group_ids)},
            min_version=BATCHED_FIND_COORDINATOR,
        )
        answered = {entry.key: entry for entry in response.coordinators}
        unanswered: KafkaError | None = None
        answers: dict[str, BrokerNode | KafkaError] = {}
        for group_id in group_ids:
            entry = answered.get(group_id)
            if entry is not None:
                answers[group_id] = _coordinator(entry)
                continue
            if unanswered is None:  # built once, and only when needed (1,000s of groups)
                unanswered = KafkaError.of(-1, "the broker did not answer for this group")
            answers[group_id] = unanswered
        return answers

    async def one(group_id: str) -> BrokerNode | KafkaError:
        _, response = await pool.request(
            FIND_COORDINATOR,
            {"key": group_id, "key_type": GROUP_KEY_TYPE},
            max_version=BATCHED_FIND_COORDINATOR - 1,
        )
        return _coordinator(response)

    results = await asyncio.gather(*(one(group_id) for group_id in group_ids))
    return dict(zip(group_ids, results, strict=True))


async def fan_out_to_coordinators(
    pool: CoordinatorPool,
    api_key: int,
    group_ids: Sequence[str],
    body: GroupsBody,
    split: GroupsSplit,
    *,
    min_version: int = 0,
    batch_size: int | None = None,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ask_again: Callable[[Any], bool] | None = None,
) -> dict[str, Any | KafkaError]:
    """Ask each group's coordinator about its groups: one request per coordinator.

    ``body(version, group_ids)`` describes the request for some groups;
    ``split(response)`` maps each group in a response to (error code, result).
    Groups answered with a retriable error are re-asked with backoff for
    ``BRANCH_SHARE`` of what is left of the deadline; those answered with
    NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE
    (``COORDINATOR_MOVED``), or whose coordinator could not be reached, have
    their coordinator found again first. The answer maps every group to its
    result, or to a KafkaError: any other error code, the last retriable
    error once the time for re-asking is over, a coordinator that stayed unreachable
    (NETWORK_EXCEPTION naming it), silent (REQUEST_TIMED_OUT) or without the
    API (UNSUPPORTED_VERSION). ``ask_again(result)`` marks an answer as
    transient (a share-partition whose leader is moving): it is asked again
    while there is time, and kept as it is otherwise.

    ``batch_size`` caps the groups per request, for RPCs a broker serves one
    group after the other (Kafka 4.2's DescribeShareGroupOffsets: one request
    of 112 groups 2.40 s, 112 one-group requests 0.11 s); the requests to one
    coordinator are then sent concurrently, ``max_in_flight`` at a time. The
    coordinators are still found with one FindCoordinator for all groups.
    """
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
    wanted = list(dict.fromkeys(group_ids))

    async def ask(gate: asyncio.Semaphore, node: BrokerNode, groups: list[str]) -> Answers:
        async with gate:
            return await pool.within_share(
                lambda: _ask_coordinator(
                    pool, api_key, node, groups, body, split, min_version, ask_again
                )
            )

    async with pool.bounded(api_name(api_key)):
        give_up_at = pool.share_deadline()
        results: dict[str, Any | KafkaError] = {}
        pending = wanted
        backoff = Backoff()
        while pending:
            coordinators = await find_coordinators(pool, pending)
            plan = plan_coordinators(pending, coordinators, batch_size)
            results.update(plan.failed)
            asks: list[Coroutine[Any, Any, Answers]] = []
            asked: list[tuple[BrokerNode, list[str]]] = []
            for node, batches in plan.batches.items():
                gate = asyncio.Semaphore(max_in_flight)
                for groups in batches:
                    asked.append((node, groups))
                    asks.append(ask(gate, node, groups))
            outcomes = await asyncio.gather(*asks, return_exceptions=True)
            pending = await _coordinators_answered(
                pool, api_key, asked, outcomes, body, split, min_version, results
            )
            if pending and not backoff.fits_before(give_up_at):
                break  # what they were last answered stands (set in _ask_coordinator)
            if pending:
                await backoff.wait()
        return {group_id: results[group_id] for group_id in wanted}


async def _coordinators_answered(
    pool: CoordinatorPool,
    api_key: int,
    asked: Sequence[tuple[BrokerNode, list[str]]],
    outcomes: Sequence[Answers | BaseException],
    body: GroupsBody,
    split: GroupsSplit,
    min_version: int,
    results: dict[str, Any | KafkaError],
) -> list[str]:
    """One round's answers (or failures) into ``results``; returns the groups to ask again.

    The requests that got no answer in their share are gathered per coordinator
    first, so a silent coordinator is checked once for all its groups.
    """
    pending: list[str] = []
    silent_branches: dict[BrokerNode, list[tuple[list[str], BaseException]]] = {}
    for (node, groups), outcome in zip(asked, outcomes, strict=True):
        if isinstance(outcome, TimedOut):
            silent_branches.setdefault(node, []).append((groups, outcome))
            continue
        if isinstance(outcome, BaseException):
            await pool.give_up(node, outcome)
            failure = branch_failure(outcome, node)
            results.update({group_id: failure for group_id in groups})
            continue
        answered, retry = outcome
        results.update(answered)
        pending.extend(retry)
    for node, branches in silent_branches.items():
        results.update(
            await _coordinator_silent(pool, api_key, node, branches, body, split, min_version)
        )
    return pending


async def _coordinator_silent(
    pool: CoordinatorPool,
    api_key: int,
    node: BrokerNode,
    branches: Sequence[tuple[list[str], BaseException]],
    body: GroupsBody,
    split: GroupsSplit,
    min_version: int,
) -> dict[str, Any | KafkaError]:
    """The groups of a coordinator whose requests got no answer in their share.

    A coordinator that did not answer in time is not always the broker at fault:
    Kafka's group coordinator holds DescribeShareGroupOffsets (and the other offset
    RPCs) until the share coordinators it reads from answer, about 180 s for a hung
    one (``PersisterStateManager``: five 30 s attempts). And a broker serves one
    connection's requests in order, so one held request holds every group asked
    after it on that connection. So the coordinator is checked with a fresh
    handshake. One that does not answer is given up, and its groups fail naming it.
    One that answers is holding: it stays in use (its stuck connection replaced),
    each of its silent groups is asked once more on a connection of its own, and
    the groups held again fail naming the brokers that do not answer as the cause.
    Groups whose requests were queued behind a held one when another fan-out
    replaced that connection (``HeldBehind``) are asked again alone at once: the
    coordinator was just checked, and checking it again would replace the
    connection the other fan-outs now use.
    """
    groups = [group_id for each, _ in branches for group_id in each]
    error = branches[0][1]
    if not all(isinstance(each, HeldBehind) for _, each in branches):
        fresh = await _fresh_connection(pool, node)
        if fresh is None:
            await pool.give_up(node, error)
            failure = branch_failure(error, node)
            return {group_id: failure for group_id in groups}
        await pool.adopt_connection(node, fresh, _lane(api_key))
    gate = asyncio.Semaphore(ALONE_IN_FLIGHT)

    async def alone(group_id: str) -> Any | KafkaError | None:
        async with gate:
            return await _ask_alone(pool, api_key, node, group_id, body, split, min_version)

    answers = dict(zip(groups, await asyncio.gather(*map(alone, groups)), strict=True))
    held = [group_id for group_id, answer in answers.items() if answer is None]
    results: dict[str, Any | KafkaError] = {
        group_id: answer for group_id, answer in answers.items() if answer is not None
    }
    if held:
        failure = await _held(pool, api_key, node, error)
        results.update({group_id: failure for group_id in held})
    return results


async def _held(
    pool: CoordinatorPool, api_key: int, node: BrokerNode, error: BaseException
) -> KafkaError:
    """The error for groups a coordinator that answers holds: the silent brokers named."""
    silent = await _silent_brokers(pool, exclude=node.node_id)
    what = f"broker {node.node_id} ({node}) holds {api_name(api_key)} unanswered"
    if silent:
        named = ", ".join(f"broker {each.node_id} ({each})" for each in silent)
        verb = "does" if len(silent) == 1 else "do"
        message = f"{named} {verb} not answer, and {what} meanwhile ({error})"
    else:
        message = (
            f"{what} ({error}) though it answers: Kafka holds it while a share "
            "coordinator it reads from does not answer"
        )
    return KafkaError.of(ErrorCode.request_timed_out, message)


async def _ask_alone(
    pool: CoordinatorPool,
    api_key: int,
    node: BrokerNode,
    group_id: str,
    body: GroupsBody,
    split: GroupsSplit,
    min_version: int,
) -> Any | KafkaError | None:
    """One group asked once on a connection of its own; None when that is held too."""
    within = min(ALONE_S, pool.remaining_s())
    if within <= 0:
        return None
    try:
        async with asyncio.timeout(within):
            connection = await pool.open_connection(node.address)
            try:
                _, response = await pool.attempt(
                    connection,
                    api_key,
                    lambda version: body(version, [group_id]),
                    min_version,
                    None,
                )
            finally:
                await connection.close()
    except (ConnectionFailed, TimedOut, TimeoutError):
        return None
    code, result = split(response).get(group_id, (-1, None))
    if int(code) == 0:
        return result
    return KafkaError.of(int(code), getattr(result, "error_message", None))


async def _fresh_connection(pool: CoordinatorPool, node: BrokerNode) -> BrokerConnection | None:
    """A new connection to ``node`` if it completes a handshake within ``PROBE_S``."""
    within = min(PROBE_S, pool.remaining_s())
    if within <= 0:
        return None
    try:
        async with asyncio.timeout(within):
            return await pool.open_connection(node.address)
    except (ConnectionFailed, TimedOut, TimeoutError):
        return None


async def _silent_brokers(pool: CoordinatorPool, exclude: int) -> list[BrokerNode]:
    """The listed brokers (but ``exclude``) given up on, or silent to a fresh handshake."""
    try:
        listed = (await pool.metadata([])).brokers
    except (ConnectionFailed, TimedOut):
        listed = pool.cluster.brokers
    nodes = sorted(
        (node for node in listed.values() if node.node_id != exclude),
        key=lambda node: node.node_id,
    )
    known = {node.node_id for node in nodes if pool.given_up_recently(node.node_id)}
    unknown = [node for node in nodes if node.node_id not in known]
    probes = await asyncio.gather(*(_fresh_connection(pool, node) for node in unknown))
    silent = set(known)
    for node, probe in zip(unknown, probes, strict=True):
        if probe is None:
            silent.add(node.node_id)
        else:
            await probe.close()
    return [node for node in nodes if node.node_id in silent]


async def _ask_coordinator(
    pool: CoordinatorPool,
    api_key: int,
    node: BrokerNode,
    group_ids: list[str],
    body: GroupsBody,
    split: GroupsSplit,
    min_version: int,
    ask_again: Callable[[Any], bool] | None,
) -> Answers:
    """One coordinator's share of a fan-out: (answers so far, groups to find again).

    A group to find again also has an answer: its last error (or transient
    result), which stands if the fan-out runs out of time for it.
    """
    try:
        pool.check_given_up(node)
    except BrokerUnreachable:
        pool.cluster.forget_coordinators(group_ids)  # found again once it may have moved
        raise
    try:
        connection = await pool.connection(node.address, _lane(api_key))
    except (AuthenticationFailed, IncompatibleBroker):
        raise
    except ConnectionFailed as error:
        pool.cluster.forget_coordinators(group_ids)
        try:
            await pool.connection_failed(node, error)
        except NodeLeft as left:
            if pool.refusing_too_long(node.node_id):
                raise  # and still named as their coordinator: the groups fail
            # Its groups may have moved with it: find them again.
            return {group_id: transport_error(left) for group_id in group_ids}, group_ids
        named = BrokerUnreachable(node.node_id, node.host, node.port, str(error))
        failure = transport_error(named)
        return {group_id: failure for group_id in group_ids}, group_ids
    try:
        _, response = await pool.attempt(
            connection, api_key, lambda version: body(version, group_ids), min_version, None
        )
    except (AuthenticationFailed, IncompatibleBroker):
        raise
    except ConnectionReplaced as error:
        raise HeldBehind(str(error)) from error
    except ConnectionFailed as error:
        pool.note(error)
        pool.cluster.forget_coordinators(group_ids)
        failure = transport_error(error)
        return {group_id: failure for group_id in group_ids}, group_ids
    pool.answered(node.node_id)
    return _coordinator_answers(pool, api_key, node, group_ids, split(response), ask_again)


def _coordinator_answers(
    pool: CoordinatorPool,
    api_key: int,
    node: BrokerNode,
    group_ids: list[str],
    per_group: Mapping[str, tuple[int, Any]],
    ask_again: Callable[[Any], bool] | None,
) -> Answers:
    """A coordinator's answer, group by group; the groups whose coordinator moved are
    forgotten from the cache, so that they are found again."""
    answered: dict[str, Any | KafkaError] = {}
    retry: list[str] = []
    moved: list[str] = []
    for group_id in group_ids:
        if group_id not in per_group:
            answered[group_id] = KafkaError.of(
                -1, f"the coordinator {node} did not answer for this group"
            )
            continue
        code, result = per_group[group_id]
        code = int(code)
        if code == 0:
            answered[group_id] = result
            if ask_again is not None and ask_again(result):
                pool.note(f"{api_name(api_key)} for group {group_id!r}: a transient error")
                retry.append(group_id)
        elif is_retriable(code):
            pool.note(f"{api_name(api_key)} for group {group_id!r}: {KafkaError.of(code)}")
            answered[group_id] = KafkaError.of(code, getattr(result, "error_message", None))
            retry.append(group_id)
            if code in COORDINATOR_MOVED:
                moved.append(group_id)
        else:
            answered[group_id] = KafkaError.of(code, getattr(result, "error_message", None))
    pool.cluster.forget_coordinators(moved)
    return answered, retry


def _coordinator(entry: Any) -> BrokerNode | KafkaError:
    code = int(entry.error_code)
    if code != 0:
        message = entry.error_message
        return KafkaError.of(code, None if message in ("", "NONE") else message)
    return BrokerNode(int(entry.node_id), entry.host, int(entry.port))


def _lane(api_key: int) -> str:
    """The pooled connection a group RPC goes on: its own for those Kafka may hold."""
    return HELD_LANE if api_key in HOLDABLE else ""
