"""Fan-outs to every broker and to partition leaders, over the client's pool and deadlines.

A fan-out never lets one broker cost the whole answer: each branch gets a share
of what is left of the deadline (``BrokerPool.within_share``), a broker that
fresh metadata still lists but that keeps refusing connections is given up
after the client's ``UNREACHABLE_AFTER_S`` (Kafka lists a dead broker until it
is fenced, about 9 s), a broker that left the metadata is planned around, and
an incompatible broker fails only its own part. Each such branch ends as a
``KafkaError`` for its broker, groups or partitions, naming the broker and the
last error, while the others' answers stand (franz-go's kadm: partial results
are data).

Routing (which broker gets which partition) is decided by the pure functions of
``cluster.py``; connections, deadlines and the memory of brokers given up on
stay in ``client.py``, reached through the ``BrokerPool`` interface below, so
this module holds only what a fan-out does with their answers. The fan-out to
group coordinators, with its coordinator cache, is ``coordinators.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from kshare_cli.errors import AuthenticationFailed, ConnectionFailed, IncompatibleBroker, TimedOut
from kshare_cli.wire.backoff import Backoff
from kshare_cli.wire.cluster import (
    BrokerNode,
    ClusterMetadata,
    TopicPartitionKey,
    api_name,
    plan_leaders,
)
from kshare_cli.wire.errors import BrokerUnreachable, KafkaError, NodeLeft, is_retriable

#: A request's description for ``wire.build``, or a function of the version chosen
#: against the broker that returns one.
Body = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]
T = TypeVar("T")


class BrokerPool(Protocol):
    """What a fan-out needs of the client: deadlines, metadata, requests, brokers given up."""

    def bounded(
        self, what: str, timeout_s: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        """One deadline for the work inside, named ``what`` when it runs out."""
        ...

    def remaining_s(self) -> float:
        """Seconds left of the current call's deadline."""
        ...

    def share_deadline(self) -> float:
        """Until when a fan-out may keep re-planning."""
        ...

    async def within_share(self, work: Callable[[], Awaitable[T]]) -> T:
        """``work`` as one branch, within its share of the deadline (TimedOut after it)."""
        ...

    def note(self, error: object) -> None:
        """Remember ``error`` as the last one seen, for a timeout's message."""
        ...

    async def metadata(
        self, topics: Sequence[str] | None = None, *, refresh: bool = False
    ) -> ClusterMetadata:
        """Brokers and topics, from the cache unless ``refresh``."""
        ...

    async def request(
        self,
        api_key: int,
        body: Body,
        *,
        node: int | None = None,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> tuple[int, Any]:
        """One request, retried on new connections; NodeLeft, BrokerUnreachable for ``node``."""
        ...

    async def give_up(self, node: BrokerNode | None, error: BaseException) -> None:
        """After a branch to ``node`` ended in ``error``: a silent broker is given up on."""
        ...

    def refusing_too_long(self, node_id: int) -> bool:
        """Whether ``node_id`` has refused connections long enough to be reported down."""
        ...


def transport_error(error: Exception) -> KafkaError:
    """A branch that could not be asked, in Kafka's words, keeping our own message.

    Timed out: REQUEST_TIMED_OUT; a broker without the API or version needed:
    UNSUPPORTED_VERSION; unreachable or dropped: NETWORK_EXCEPTION.
    """
    if isinstance(error, TimedOut):
        code = ErrorCode.request_timed_out
    elif isinstance(error, IncompatibleBroker):
        code = ErrorCode.unsupported_version
    else:
        code = ErrorCode.network_exception
    return KafkaError.of(code, str(error))


def branch_failure(error: BaseException, node: BrokerNode | None) -> KafkaError:
    """A fan-out branch that ended in an exception, as its broker's KafkaError.

    Authentication failures and programming errors are not a broker's partial
    failure: they propagate.
    """
    if isinstance(error, AuthenticationFailed):
        raise error
    if not isinstance(error, ConnectionFailed | TimedOut):
        raise error
    if node is not None and not isinstance(error, BrokerUnreachable | NodeLeft):
        # Name the broker, as BrokerUnreachable does, whatever the error was.
        named = f"broker {node.node_id} ({node}): {error}"
        return KafkaError.of(transport_error(error).code, named)
    return transport_error(error)


async def fan_out_to_brokers(
    pool: BrokerPool,
    api_key: int,
    body: Body,
    *,
    min_version: int = 0,
    max_version: int | None = None,
    error_code: Callable[[Any], int] | None = None,
) -> dict[BrokerNode, tuple[int, Any] | KafkaError]:
    """Send one request to every broker in the metadata (ListGroups' way of listing).

    Each broker's answer is (version, response), or a KafkaError naming the
    broker and the last error when it could not be asked within its share of
    the deadline: unreachable (NETWORK_EXCEPTION), silent (REQUEST_TIMED_OUT),
    or without the API or version (UNSUPPORTED_VERSION). A broker that left
    the metadata after failing is still reported (what only it knew may not
    have reached the others yet); brokers that joined meanwhile are asked.

    ``error_code(response)`` reads a response's top-level error: a broker that
    answers a retriable one (a Kafka 4.2 broker's ListGroups while it loads a
    group-coordinator partition: COORDINATOR_LOAD_IN_PROGRESS) is asked again
    with backoff within its share; its last answer stands when the share runs out.
    """
    async with pool.bounded(api_name(api_key)):
        results: dict[BrokerNode, tuple[int, Any] | KafkaError] = {}
        asked: set[int] = set()
        metadata = await pool.metadata([])
        while True:
            todo = [
                broker
                for node_id, broker in sorted(metadata.brokers.items())
                if node_id not in asked
            ]
            if not todo:
                return results

            def ask(broker: BrokerNode) -> Callable[[], Awaitable[tuple[int, Any]]]:
                async def until_not_retriable() -> tuple[int, Any]:
                    backoff = Backoff()
                    while True:
                        answer = await pool.request(
                            api_key,
                            body,
                            node=broker.node_id,
                            min_version=min_version,
                            max_version=max_version,
                        )
                        code = 0 if error_code is None else int(error_code(answer[1]))
                        if not is_retriable(code) or not backoff.fits_within(pool.remaining_s()):
                            return answer
                        pool.note(
                            f"{api_name(api_key)} from broker {broker.node_id} ({broker}): "
                            f"{KafkaError.of(code)}"
                        )
                        await backoff.wait()

                return until_not_retriable

            outcomes = await asyncio.gather(
                *(pool.within_share(ask(broker)) for broker in todo),
                return_exceptions=True,
            )
            replan = False
            for broker, outcome in zip(todo, outcomes, strict=True):
                asked.add(broker.node_id)
                if isinstance(outcome, NodeLeft):
                    replan = True
                if isinstance(outcome, BaseException):
                    await pool.give_up(broker, outcome)
                    results[broker] = branch_failure(outcome, broker)
                else:
                    results[broker] = outcome
            if not replan:
                return results
            metadata = await pool.metadata([], refresh=True)


async def fan_out_to_leaders(
    pool: BrokerPool,
    api_key: int,
    partitions: Sequence[TopicPartitionKey],
    body: Callable[[int, Sequence[TopicPartitionKey]], Mapping[str, Any]],
    split: Callable[[Any], Mapping[TopicPartitionKey, tuple[int, Any]]],
    *,
    min_version: int = 0,
) -> dict[TopicPartitionKey, Any | KafkaError]:
    """Ask each partition's leader about its partitions: one request per leader.

    ``body(version, partitions)`` describes the request; ``split(response)``
    maps each (topic, partition) answered to (error code, result). Partitions
    answered with a retriable error (a moved leader, a leader that does not
    know the topic yet, OFFSET_NOT_AVAILABLE...), that fresh metadata gives
    without a leader or with a retriable error, or whose leader left the
    metadata are looked up again in fresh metadata and re-asked with backoff,
    for ``BRANCH_SHARE`` of what is left of the deadline; after that they keep
    their last error. Unknown topics (``retriable_for_topic``), unreachable or
    silent leaders, and leaders without the API are per-partition KafkaErrors.
    """
    wanted = list(dict.fromkeys(partitions))
    async with pool.bounded(api_name(api_key)):
        give_up_at = pool.share_deadline()
        results: dict[TopicPartitionKey, Any | KafkaError] = {}
        pending = wanted
        refresh = False
        backoff = Backoff()
        while pending:
            topics = sorted({topic for topic, _ in pending})
            metadata = await pool.metadata(topics, refresh=refresh)
            plan = plan_leaders(pending, metadata)
            results.update(plan.failed)
            retry = list(plan.retry)
            leaders = sorted(plan.by_leader)

            def ask(
                keys: list[TopicPartitionKey], leader: int
            ) -> Callable[[], Awaitable[tuple[int, Any]]]:
                return lambda: pool.request(
                    api_key,
                    lambda version: body(version, keys),
                    node=leader,
                    min_version=min_version,
                )

            outcomes = await asyncio.gather(
                *(pool.within_share(ask(plan.by_leader[leader], leader)) for leader in leaders),
                return_exceptions=True,
            )
            for leader, outcome in zip(leaders, outcomes, strict=True):
                keys = plan.by_leader[leader]
                node = metadata.brokers.get(leader)
                retry.extend(
                    await _leader_answered(
                        pool, api_key, leader, node, keys, outcome, split, results
                    )
                )
            if not retry or not backoff.fits_before(give_up_at):
                break
            await backoff.wait()
            pending = retry
            refresh = True
        return {key: results[key] for key in wanted}


async def _leader_answered(
    pool: BrokerPool,
    api_key: int,
    leader: int,
    node: BrokerNode | None,
    keys: list[TopicPartitionKey],
    outcome: tuple[int, Any] | BaseException,
    split: Callable[[Any], Mapping[TopicPartitionKey, tuple[int, Any]]],
    results: dict[TopicPartitionKey, Any | KafkaError],
) -> list[TopicPartitionKey]:
    """One leader's answer (or failure) into ``results``; returns the partitions to ask again."""
    if isinstance(outcome, NodeLeft):
        results.update({key: transport_error(outcome) for key in keys})
        if pool.refusing_too_long(leader):
            return []
        return list(keys)  # the new leader may be in the next metadata
    if isinstance(outcome, BaseException):
        await pool.give_up(node, outcome)
        failure = branch_failure(outcome, node)
        results.update({key: failure for key in keys})
        return []
    retry: list[TopicPartitionKey] = []
    answered = split(outcome[1])
    for key in keys:
        if key not in answered:
            results[key] = KafkaError.of(
                ErrorCode.unknown_server_error, f"leader {leader} did not answer for it"
            )
            continue
        code, result = answered[key]
        if code == 0:
            results[key] = result
            continue
        results[key] = KafkaError.of(code, getattr(result, "error_message", None))
        if is_retriable(code):
            pool.note(f"{api_name(api_key)} for {key[0]}-{key[1]}: {results[key]}")
            retry.append(key)
    return retry
