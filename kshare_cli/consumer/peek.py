"""Peek at a share-partition's records without acquiring any of them.

A share consumer cannot look without taking: every record it fetches is
acquired, its delivery count goes up, and another member cannot have it until
the lock expires or it is released. So the dashboard reads the records after
the start offset with a plain (classic) consumer instead: ``assign()`` at the
offset, no subscription, no commits. The share group never hears of it, and
its start offset, delivery counts and lag stay exactly as they were.

The consumer carries a throwaway ``group.id`` only because confluent-kafka
refuses to build a consumer without one; it never joins, never commits, so no
such group appears on the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.dataplane.clients import new_reader
from kshare_cli.dataplane.errors import ErrorKind, classify, raise_for_client_error
from kshare_cli.errors import NotFound, TimedOut, UsageError

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError

__all__ = ["peek_records"]

#: Properties of a share consumer that a classic consumer refuses or must not inherit.
_SHARE_ONLY: Final = frozenset(
    {"group.id", "share.acknowledgement.mode", "max.poll.records", "group.protocol"}
)
_POLL_SLICE_S: Final = 0.1


def peek_records(
    config: Mapping[str, object],
    topic: str,
    partition: int,
    offset: int,
    limit: int,
    timeout_s: float,
) -> tuple[ConsumedRecord, ...]:
    """Up to ``limit`` records of ``topic``:``partition`` from ``offset`` on, in offset order.

    Blocking (run it in a thread from async code). Returns fewer records when
    the partition ends first, none when ``offset`` is at or past its end.
    Records below ``offset`` (a compacted or deleted head makes the broker
    start earlier) are skipped. ``config`` is a librdkafka configuration:
    bootstrap servers and security, e.g. ``ConnectionSettings.confluent_config()``.
    Raises ConnectionFailed when the cluster cannot be reached, NotFound for a
    missing topic or partition, TimedOut when nothing was read within
    ``timeout_s``, UsageError for a bad argument or property.
    """
    if limit < 0:
        raise UsageError(f"peek limit must be at least 0, got {limit}")
    if offset < 0:
        raise UsageError(f"peek offset must be at least 0, got {offset}")
    if limit == 0:
        return ()
    from confluent_kafka import TopicPartition

    errors: list[KafkaError] = []
    consumer = new_reader(
        {key: value for key, value in config.items() if key not in _SHARE_ONLY},
        "peek",
        **{
            "enable.partition.eof": True,
            # Past the end is no error but nothing to show; before the log start offset
            # (records deleted) the first records still there are the next ones.
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            "error_cb": errors.append,
        },
    )
    bootstrap = str(config.get("bootstrap.servers", ""))
    records: list[ConsumedRecord] = []
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout_s
        while len(records) < limit:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if records:
                    break
                for seen in errors:
                    raise_for_client_error(seen, bootstrap)
                _raise_if_missing(consumer, topic, partition)
                raise TimedOut(
                    f"no records of {topic}:{partition} from offset {offset} within {timeout_s:g} s"
                )
            messages = consumer.consume(
                num_messages=limit - len(records), timeout=min(_POLL_SLICE_S, remaining)
            )
            for message in messages:
                problem = message.error()
                if problem is None:
                    record = ConsumedRecord.from_message(message)
                    if record.offset >= offset:
                        records.append(record)
                    continue
                kind = classify(problem)
                if kind is ErrorKind.PARTITION_EOF:
                    return tuple(records[:limit])
                if kind in (ErrorKind.UNKNOWN_TOPIC_OR_PARTITION, ErrorKind.UNKNOWN_PARTITION):
                    raise NotFound(f"{topic}:{partition} does not exist")
                if kind is ErrorKind.UNKNOWN_TOPIC:
                    raise NotFound(f"topic {topic!r} does not exist")
                raise_for_client_error(problem, bootstrap)
            for seen in errors:
                raise_for_client_error(seen, bootstrap)
        return tuple(records[:limit])
    finally:
        consumer.close()


def _raise_if_missing(consumer: Consumer, topic: str, partition: int) -> None:
    """librdkafka waits silently on a missing topic; one metadata request says so."""
    from confluent_kafka import KafkaException

    try:
        metadata = consumer.list_topics(topic, timeout=1.0)
    except KafkaException:
        return
    described = metadata.topics.get(topic)
    if described is None or described.error is not None:
        raise NotFound(f"topic {topic!r} does not exist")
    if partition not in described.partitions:
        raise NotFound(f"{topic}:{partition} does not exist")
