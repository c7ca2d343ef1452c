"""Follow `__share_group_state` and keep every share-partition's replayed state current.

The in-flight window exists nowhere but in the share coordinator's records, so
a reader has to consume the whole state topic from its beginning and replay
it (`replay.ShareStateReplayer`), then keep up with what the coordinator
appends. A plain confluent-kafka `Consumer` does that with `assign()`: no
group membership, no rebalances, no committed offsets, so reading the state
topic leaves no trace on the cluster beyond fetches. librdkafka insists on a
group.id even then; a throwaway one is used and nothing is ever committed to
it.

What an operator can do something about becomes `StateTopicUnavailable` with
one line saying what is wrong (no READ on the topic, cluster unreachable,
authentication, too slow); a state topic that does not exist yet is not an
error -- no share group has been used, so there is nothing to show. A record
that cannot be decoded is counted (`corrupt_records`) and skipped: one bad
record must not take every window of the dashboard down with it.

librdkafka's own log lines are routed to a silent logger; stderr belongs to
the command that uses the tailer. The consumer, the logger and the reading of
librdkafka's errors are the data plane's (:mod:`kshare_cli.dataplane`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self

from kshare_cli.dataplane.errors import (
    MISSING_TOPIC,
    UNREACHABLE,
    ErrorKind,
    classify,
    is_retriable,
    plain_text,
)
from kshare_cli.dataplane.offsets import offsets_for_times
from kshare_cli.errors import KshareError
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.records import StateRecordError, decode_key, decode_record
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState, ShareStateReplayer
from kshare_cli.state.window import InFlightWindow

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, Message

__all__ = ["StateTailer", "StateTopicUnavailable"]

_BATCH: Final = 5_000
# How long poll() waits for more once everything it knew of was read: long enough for
# records librdkafka is fetching right now, short enough to count as non-blocking.
_SETTLE_S: Final = 0.05
# Metadata and end-offset requests are retried in slices this long, so that an
# unreachable cluster is reported as soon as librdkafka knows.
_SLICE_S: Final = 0.5
# consume() returns only when it has _BATCH records or its timeout passed, so catching
# up waits in short slices: the loop stops as soon as every partition reached its end
# (a 0.5 s slice made every `kshare inflight` wait half a second on a small topic).
_CATCH_UP_SLICE_S: Final = 0.02
_WINDOWS_NOTE: Final = "in-flight windows cannot be shown"
# catch_up_each gives up on a partition that delivered nothing for this share of its
# timeout (but never less than _SILENT_MIN_S: a healthy leader's first fetch of a fresh
# assignment takes a round of ListOffsets and Fetch, well under a second).
_SILENT_SHARE: Final = 0.25
_SILENT_MIN_S: Final = 3.0
# confluent_kafka.TIMESTAMP_NOT_AVAILABLE: a record without a timestamp dates nothing.
_NO_TIMESTAMP: Final = 0


class StateTopicUnavailable(Exception):
    """The state topic cannot be read; reason is one line an operator can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StateTailer:
    """Follows the state topic with a confluent-kafka Consumer (assign(), no commits), replaying it.

    config is librdkafka configuration (bootstrap and security, e.g.
    `ConnectionSettings.librdkafka_config()`); with group_ids, records of other
    groups are skipped before their values are decoded. With share_partitions,
    only the state partitions that hold them are assigned (Kafka's placement,
    `state_partition_for`): a command about one group reads a few partitions
    instead of fifty, and waits on no leader that holds nothing of its own.
    Not thread-safe: one caller at a time (a worker thread is fine).
    """

    def __init__(
        self,
        config: Mapping[str, object],
        *,
        group_ids: Collection[str] | None = None,
        topic: str = SHARE_STATE_TOPIC,
        share_partitions: Collection[SharePartitionKey] | None = None,
    ) -> None:
        self._config = dict(config)
        self._bootstrap = str(config.get("bootstrap.servers", ""))
        self._group_ids = None if group_ids is None else frozenset(group_ids)
        self._topic = topic
        self._share_partitions = None if share_partitions is None else frozenset(share_partitions)
        # Each state partition's leader as "broker N (HOST:PORT)", from the last metadata.
        self._leaders: dict[int, str | None] = {}
        self._replayer = ShareStateReplayer()
        self._consumer: Consumer | None = None
        self._client_errors: list[KafkaError] = []
        self._partition_count: int | None = None
        # Next offset to read per partition (what was consumed, or the end librdkafka reported).
        self._next_offsets: dict[int, int] = {}
        self._at_end: set[int] = set()
        self._records_applied = 0
        self._corrupt_records = 0
        self._closed = False

    # ------------------------------------------------------------------ public

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def partition_count(self) -> int | None:
        """The state topic's partition count as last discovered; None before (or no topic)."""
        return self._partition_count

    @property
    def records_applied(self) -> int:
        """State records replayed so far (records of filtered-out groups are not counted)."""
        return self._records_applied

    @property
    def corrupt_records(self) -> int:
        """Records skipped because they could not be decoded."""
        return self._corrupt_records

    def catch_up(self, timeout_s: float) -> int:
        """Read every partition up to its end offset as of this call; returns records applied.

        A state topic that does not exist returns 0. Raises StateTopicUnavailable
        when the topic cannot be read or the end is not reached within timeout_s
        (what was read is kept; the next call goes on from there).
        """
        deadline = time.monotonic() + timeout_s
        self._client_errors.clear()
        if not self._discover(deadline):
            return 0
        consumer = self._require_consumer()
        ends = self._end_offsets(consumer, deadline)
        applied = 0
        pending = {
            partition for partition, end in ends.items() if self._next_offsets[partition] < end
        }
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if any(classify(error) in UNREACHABLE for error in self._client_errors):
                    raise self._unreachable("records")
                raise StateTopicUnavailable(
                    f"timed out reading {self._topic} after {timeout_s:g} s "
                    f"({len(ends) - len(pending)} of {len(ends)} partitions read to the end); "
                    f"{_WINDOWS_NOTE}"
                )
            applied += self._apply(consumer.consume(_BATCH, min(remaining, _CATCH_UP_SLICE_S)))
            self._raise_for_client_errors()
            pending = {
                partition
                for partition in pending
                if self._next_offsets[partition] < ends[partition]
            }
        # Read to the end as of this call: poll() need not wait for librdkafka to say so.
        self._at_end.update(ends)
        return applied

    def catch_up_each(self, timeout_s: float) -> dict[int, str]:
        """Read each assigned partition to its end, giving up on each one alone.

        Returns the partitions not read to the end, each with one line saying whose
        silence it was (its leader, by id and address): a partition from which
        nothing came for a quarter of timeout_s (at least 3 s) is given up then,
        so a down leader costs seconds, not the whole share, while a partition
        still delivering a long backlog is read on until timeout_s. No
        ListOffsets is asked: librdkafka's end-of-partition event marks each end,
        so a partition whose leader is down costs its own windows and holds up no
        other (one ListOffsets round for all of them waited for the slowest).
        Raises StateTopicUnavailable as catch_up does for what fails every
        partition alike (authorisation, authentication, no metadata in time).
        """
        started = time.monotonic()
        deadline = started + timeout_s
        self._client_errors.clear()
        if not self._discover(deadline):
            return {}
        consumer = self._require_consumer()
        pending = set(self._next_offsets) - self._at_end
        silent_s = max(_SILENT_MIN_S, timeout_s * _SILENT_SHARE)
        heard = dict.fromkeys(pending, started)
        given_up: set[int] = set()
        while pending:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                break
            before = {partition: self._next_offsets[partition] for partition in pending}
            self._apply(consumer.consume(_BATCH, min(remaining, _CATCH_UP_SLICE_S)))
            self._raise_for_client_errors()
            now = time.monotonic()
            for partition in pending:
                if self._next_offsets[partition] != before[partition]:
                    heard[partition] = now
                elif now - heard[partition] >= silent_s:
                    given_up.add(partition)
            pending -= self._at_end | given_up
        return {partition: self._silent(partition) for partition in sorted(pending | given_up)}

    def poll(self, budget_s: float) -> int:
        """Apply what is new, waiting at most budget_s; returns records applied.

        Returns as soon as a short wait brings less than a full batch: a busy
        topic is never quiet, and what arrives later is the next call's. A state
        topic created since the last call is picked up here.
        """
        deadline = time.monotonic() + budget_s
        self._client_errors.clear()
        if self._partition_count is None and not self._discover(deadline):
            return 0
        consumer = self._require_consumer()
        applied = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            messages = consumer.consume(_BATCH, min(remaining, _SETTLE_S))
            applied += self._apply(messages)
            self._raise_for_client_errors()
            # A short answer means librdkafka had nothing more buffered. On a busy
            # cluster some partition is always behind its end and the topic is never
            # quiet: waiting for either held every dashboard refresh for the budget.
            if len(messages) < _BATCH:
                break
        return applied

    def leader(self, partition: int) -> str | None:
        """The partition's leader as ``broker N (HOST:PORT)`` in the last metadata; None
        when it had none or the partition was never seen (to name who was silent)."""
        return self._leaders.get(partition)

    def states(self) -> dict[SharePartitionKey, SharePartitionState]:
        """Every share-partition's current state (a copy)."""
        return self._replayer.states()

    def window(self, key: SharePartitionKey) -> InFlightWindow | None:
        """The share-partition's window; None when the state topic holds nothing for it."""
        state = self._replayer.state(key)
        return None if state is None else InFlightWindow.from_state(state)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _require_consumer(self) -> Consumer:
        if self._closed:
            raise RuntimeError("the state tailer is closed")
        if self._consumer is None:
            self._consumer = self._new_consumer()
        return self._consumer

    def _new_consumer(self) -> Consumer:
        from kshare_cli.dataplane.clients import new_reader

        their_error_cb = self._config.get("error_cb")

        def on_error(error: KafkaError) -> None:
            self._client_errors.append(error)
            if callable(their_error_cb):
                their_error_cb(error)

        try:
            # A throwaway group id: required by librdkafka even for assign(); never
            # joined, never committed to.
            return new_reader(
                self._config,
                "state-tailer",
                **{
                    "enable.partition.eof": True,
                    "allow.auto.create.topics": False,
                    "auto.offset.reset": "earliest",
                    "error_cb": on_error,
                },
            )
        except KshareError as refused:
            raise StateTopicUnavailable(f"cannot read {self._topic}: {refused}") from None

    def _discover(self, deadline: float) -> bool:
        """Find the topic's partitions and assign new ones; False when the topic does not exist."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

        consumer = self._require_consumer()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._unreachable("metadata")
            try:
                metadata = consumer.list_topics(self._topic, timeout=min(remaining, _SLICE_S))
            except KafkaException as failure:
                self._raise_for(failure.args[0])
                consumer.poll(0)  # serves error_cb: why no metadata came
                self._raise_for_client_errors()
                if any(
                    classify(error) is ErrorKind.ALL_BROKERS_DOWN for error in self._client_errors
                ):
                    raise self._unreachable("metadata") from None
                continue
            described = metadata.topics.get(self._topic)
            error = None if described is None else described.error
            if described is None or (error is not None and classify(error) in MISSING_TOPIC):
                return False
            if error is None:
                break
            self._raise_for(error)
            # LEADER_NOT_AVAILABLE and the like, right after the topic was created: ask again.
            time.sleep(min(_SETTLE_S, max(0.0, deadline - time.monotonic())))
        count = len(described.partitions)
        self._leaders = {}
        for partition, placed in described.partitions.items():
            leader = int(placed.leader)
            broker = metadata.brokers.get(leader)
            self._leaders[partition] = (
                None
                if leader < 0
                else f"broker {leader}"
                if broker is None
                else f"broker {leader} ({broker.host}:{broker.port})"
            )
        wanted: Collection[int] = range(count)
        if self._share_partitions is not None:
            wanted = {state_partition_for(key, count) for key in self._share_partitions}
        new = [partition for partition in wanted if partition not in self._next_offsets]
        if new:
            for partition in new:
                self._next_offsets[partition] = 0
            consumer.incremental_assign(
                [TopicPartition(self._topic, partition, OFFSET_BEGINNING) for partition in new]
            )
        self._partition_count = count
        return True

    def _silent(self, partition: int) -> str:
        """Why a state partition was not read to its end: its leader did not answer."""
        leader = self._leaders.get(partition)
        if leader is None:
            return f"{self._topic} partition {partition} has no leader"
        return f"state partition {partition}'s leader {leader} did not answer"

    def _end_offsets(self, consumer: Consumer, deadline: float) -> dict[int, int]:
        """Every partition's end offset now, in one ListOffsets round (timestamp -1 = latest).

        A leader that moved answers NOT_LEADER_OR_FOLLOWER until librdkafka's metadata
        catches up: the round is asked again (``dataplane.offsets``) until ``deadline``.
        """
        from confluent_kafka import KafkaException, TopicPartition

        latest = [TopicPartition(self._topic, partition, -1) for partition in self._next_offsets]

        def between(_error: KafkaError) -> None:
            consumer.poll(0)  # serves error_cb: refused credentials end the wait at once
            self._raise_for_client_errors()

        try:
            answered = offsets_for_times(
                consumer, latest, deadline, attempt_s=_SLICE_S, on_retry=between
            )
        except KafkaException as failure:
            raise self._end_offsets_failed(failure.args[0]) from None
        ends: dict[int, int] = {}
        for answer in answered:
            if answer.error is not None:
                raise self._end_offsets_failed(answer.error)
            ends[answer.partition] = answer.offset
        return ends

    def _end_offsets_failed(self, error: KafkaError) -> StateTopicUnavailable:
        """Why the end offsets could not be read: in its own words, or no answer in time."""
        self._raise_for(error)
        if is_retriable(error):  # still failing when the time was up
            return self._unreachable("end offsets")
        return StateTopicUnavailable(
            f"cannot read the end offsets of {self._topic}: {plain_text(error.str())}; "
            f"{_WINDOWS_NOTE}"
        )

    def _apply(self, messages: list[Message]) -> int:
        applied = 0
        replay = self._replayer.apply
        wanted = self._group_ids
        next_offsets = self._next_offsets
        at_end = self._at_end
        for message in messages:
            error = message.error()
            partition = message.partition()
            offset = message.offset()
            if error is not None:
                if classify(error) is ErrorKind.PARTITION_EOF:
                    if partition is not None:
                        at_end.add(partition)
                        if offset is not None and offset > next_offsets.get(partition, 0):
                            next_offsets[partition] = offset
                    continue
                self._raise_for(error)
                continue
            if partition is not None and offset is not None:
                next_offsets[partition] = offset + 1
                at_end.discard(partition)
            key_bytes = message.key()
            value = message.value()
            if type(key_bytes) is not bytes:
                self._corrupt_records += 1
                continue
            try:
                if wanted is not None and decode_key(key_bytes).group_id not in wanted:
                    continue
                record = decode_record(key_bytes, value if type(value) is bytes else None)
            except StateRecordError:
                self._corrupt_records += 1
                continue
            stamp_type, stamp = message.timestamp()
            replay(record, stamp if stamp_type != _NO_TIMESTAMP else None)
            applied += 1
        self._records_applied += applied
        return applied

    def _raise_for(self, error: KafkaError) -> None:
        """Raise for an error an operator must hear about; librdkafka retries the others."""
        kind = classify(error)
        if kind is ErrorKind.AUTHORIZATION:
            raise StateTopicUnavailable(
                f"not authorized to read {self._topic} (needs DESCRIBE and READ on the topic); "
                f"{_WINDOWS_NOTE}"
            )
        if kind is ErrorKind.AUTHENTICATION:
            raise StateTopicUnavailable(
                f"authentication to {self._bootstrap} failed: {plain_text(error.str())}; "
                f"{_WINDOWS_NOTE}"
            )
        if kind in MISSING_TOPIC:
            raise StateTopicUnavailable(
                f"{self._topic} disappeared while it was being read; {_WINDOWS_NOTE}"
            )
        if error.fatal():
            raise StateTopicUnavailable(
                f"cannot read {self._topic}: {plain_text(error.str())}; {_WINDOWS_NOTE}"
            )

    def _raise_for_client_errors(self) -> None:
        """Act on what librdkafka reported through error_cb during this call."""
        for error in self._client_errors:
            if classify(error) is not ErrorKind.GROUP_AUTHORIZATION:  # the throwaway group
                self._raise_for(error)

    def _unreachable(self, what: str) -> StateTopicUnavailable:
        """Why nothing came back in time: the cluster is unreachable, or it is just slow."""
        causes = [error for error in self._client_errors if classify(error) in UNREACHABLE]
        if causes:
            return StateTopicUnavailable(
                f"cannot reach {self._bootstrap} to read {self._topic}: "
                f"{plain_text(causes[-1].str())}; {_WINDOWS_NOTE}"
            )
        return StateTopicUnavailable(
            f"no {what} for {self._topic} from {self._bootstrap} in time; {_WINDOWS_NOTE}"
        )
