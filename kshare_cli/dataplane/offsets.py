"""Offsets read through librdkafka (ListOffsets), asked again through what a moment cures.

librdkafka answers ``get_watermark_offsets`` and ``offsets_for_times`` once: a
partition whose leader just moved, or a topic just created whose leader has not
taken over yet, fails with NOT_LEADER_OR_FOLLOWER (or LEADER_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH), although librdkafka refreshes
its metadata on that very error and the next request would be answered. Kafka's
own clients retry such errors; each of kshare's readers (the dead-letter reader,
the state tailer, the Spark source) does it here, once: an error
:func:`~kshare_cli.dataplane.errors.is_retriable` calls retriable is asked again
after a short backoff, until the caller's deadline, and then the last error is
raised. Anything else ends the read at once. A topic's metadata
(``list_topics``) is asked again the same way: right after its creation a
topic is listed with LEADER_NOT_AVAILABLE until its leader is elected.

Nothing here imports confluent_kafka at import time (the state tailer imports it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from kshare_cli.dataplane.errors import MISSING_TOPIC, classify, is_retriable

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

__all__ = ["OnRetry", "offsets_for_times", "topic_metadata", "watermark_offsets"]

T = TypeVar("T")

#: The first wait before asking again (librdkafka's ``retry.backoff.ms``), doubled up to
#: :data:`_LONGEST_BACKOFF_S`: a metadata refresh takes milliseconds, an election longer.
_FIRST_BACKOFF_S: Final = 0.1
_LONGEST_BACKOFF_S: Final = 1.0
#: librdkafka's ``_TIMED_OUT``: what a read that had no time left failed with.
_TIMED_OUT: Final = -185

#: Called with each retriable error before it is asked again; may raise to stop there
#: (the state tailer checks what ``error_cb`` reported meanwhile).
OnRetry = Callable[["KafkaError"], None]


class _Retriable(Exception):
    """An attempt's answer that is worth asking again; ``answer`` is kept for the last one."""

    def __init__(self, error: KafkaError, answer: object = None) -> None:
        super().__init__(error)
        self.error = error
        self.answer = answer


def watermark_offsets(
    consumer: Consumer,
    topic: str,
    partition: int,
    deadline: float,
    *,
    attempt_s: float | None = None,
    on_retry: OnRetry | None = None,
) -> tuple[int, int]:
    """The partition's (low, high) watermarks from its leader, asked again until ``deadline``.

    ``deadline`` is a ``time.monotonic()`` instant; ``attempt_s`` caps one attempt
    (default: all the time left). Raises librdkafka's KafkaException: at once for
    an error that is not retriable, with the last error once the deadline passed.
    """
    from confluent_kafka import KafkaException, TopicPartition

    def attempt(timeout_s: float) -> tuple[int, int]:
        try:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout_s, cached=False
            )
        except KafkaException as failure:
            error = failure.args[0]
            if is_retriable(error):
                raise _Retriable(error) from None
            raise
        return int(low), int(high)

    return _asking_again(attempt, deadline, attempt_s, on_retry)


def offsets_for_times(
    consumer: Consumer,
    partitions: Sequence[TopicPartition],
    deadline: float,
    *,
    attempt_s: float | None = None,
    on_retry: OnRetry | None = None,
) -> list[TopicPartition]:
    """librdkafka's ``offsets_for_times`` (timestamp -1: the end), asked again until ``deadline``.

    While a partition's answer carries a retriable error, all are asked again. The
    answers are returned when none does, or when one carries an error that is not
    retriable, or, once the deadline passed, as last answered (errors included):
    the caller words a partition's error. A whole request that fails raises
    KafkaException as :func:`watermark_offsets` does.
    """
    from confluent_kafka import KafkaException

    def attempt(timeout_s: float) -> list[TopicPartition]:
        try:
            answered: list[TopicPartition] = consumer.offsets_for_times(
                list(partitions), timeout=timeout_s
            )
        except KafkaException as failure:
            error = failure.args[0]
            if is_retriable(error):
                raise _Retriable(error) from None
            raise
        errors = [answer.error for answer in answered if answer.error is not None]
        if errors and all(is_retriable(error) for error in errors):
            raise _Retriable(errors[0], answered)
        return answered

    return _asking_again(attempt, deadline, attempt_s, on_retry)


def topic_metadata(
    consumer: Consumer,
    topic: str,
    deadline: float,
    *,
    missing_passes: bool = False,
    on_retry: OnRetry | None = None,
) -> Any:
    """The topic's ``TopicMetadata`` (None: the answer does not name it), asked again
    until ``deadline`` while it carries a retriable error (LEADER_NOT_AVAILABLE: a topic
    just created).

    An answer that the topic does not exist is final unless ``missing_passes`` (the
    caller has seen the topic exist: a broker that has not learnt of it yet answers
    so for a moment). Once the deadline passed, the last answer is returned, its
    error included: the caller words it. A failed request raises KafkaException as
    :func:`watermark_offsets` does.
    """
    from confluent_kafka import KafkaException

    def attempt(timeout_s: float) -> Any:
        try:
            found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except KafkaException as failure:
            error = failure.args[0]
            if is_retriable(error):
                raise _Retriable(error) from None
            raise
        error = None if found is None else found.error
        if (
            error is not None
            and is_retriable(error)
            and (missing_passes or classify(error) not in MISSING_TOPIC)
        ):
            raise _Retriable(error, found)
        return found

    return _asking_again(attempt, deadline, None, on_retry)


def _asking_again(
    attempt: Callable[[float], T],
    deadline: float,
    attempt_s: float | None,
    on_retry: OnRetry | None,
) -> T:
    from confluent_kafka import KafkaError, KafkaException

    backoff = _FIRST_BACKOFF_S
    last: _Retriable | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if last is None:
                raise KafkaException(KafkaError(_TIMED_OUT, "no time left to read offsets"))
            if last.answer is not None:
                return cast(T, last.answer)  # what ``attempt`` answered, errors and all
            raise KafkaException(last.error)
        try:
            return attempt(remaining if attempt_s is None else min(remaining, attempt_s))
        except _Retriable as retriable:
            last = retriable
        if on_retry is not None:
            on_retry(last.error)
        time.sleep(max(0.0, min(backoff, deadline - time.monotonic())))
        backoff = min(backoff * 2, _LONGEST_BACKOFF_S)
