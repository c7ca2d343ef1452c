"""Share-consumer scenarios, run unchanged against any bootstrap: test-bed infrastructure.

The sandbox broker is trusted only as far as third-party clients agree with it, so the
same scenarios run against librdkafka's mock cluster, against kshare's sandbox and, when
one is given, against a real Kafka cluster; the tests compare what each reports. A
scenario therefore records facts a client can observe, every delivery as (consumer,
partition, offset, delivery count, action), never the broker's internals.

What differs between test beds is kept out of the scenarios and passed in as hooks:

- ``prepare_group(group)`` runs before any consumer joins. A share group starts at the
  latest offset unless ``share.auto.offset.reset=earliest`` is set broker-side, and how
  that is done differs (a mock setter, IncrementalAlterConfigs on a GROUP resource).
  The scenarios produce before or after joining as suits them, and assume earliest.
- ``members_joined(group, topic, count)`` runs once all consumers of a multi-consumer
  scenario have subscribed; a test bed may wait for the members there and fix the
  assignment (the mock splits partitions like a consumer group; Kafka shares them).

Every scenario is bounded by deadlines and closes every client it opened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from confluent_kafka import AcknowledgeType, KafkaException, Message, Producer, ShareConsumer

__all__ = [
    "SCENARIOS",
    "Action",
    "Deadline",
    "Delivery",
    "MembersJoined",
    "PrepareGroup",
    "RecordPosition",
    "ScenarioResult",
    "all_delivered",
    "lock_timeout",
    "produce_records",
    "release_once",
    "release_until_archived",
    "scenario_producer",
    "two_consumers",
]

PrepareGroup = Callable[[str], object]  # return value ignored
MembersJoined = Callable[[str, str, int], object]  # return value ignored
ClientConfig = Mapping[str, str | int | float | bool]

_POLL_INTERVAL: Final = 0.1
_COMMIT_TIMEOUT: Final = 10.0


class Action(StrEnum):
    """What the scenario did with a delivered record."""

    ACCEPT = "accept"
    RELEASE = "release"
    REJECT = "reject"
    HOLD = "hold"  # neither acknowledged nor released: left for the lock to expire


_ACKNOWLEDGE_TYPES: Final = {
    Action.ACCEPT: AcknowledgeType.ACCEPT,
    Action.RELEASE: AcknowledgeType.RELEASE,
    Action.REJECT: AcknowledgeType.REJECT,
}


@dataclass(frozen=True, slots=True, order=True)
class RecordPosition:
    """Where a record lives: the identity a share group tracks delivery by."""

    partition: int
    offset: int


def _position(message: Message) -> RecordPosition:
    partition, offset = message.partition(), message.offset()
    if partition is None or offset is None:
        raise ValueError("a client returned a record without a position")
    return RecordPosition(partition, offset)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery of one record to one consumer, and what the scenario did with it."""

    consumer: str
    partition: int
    offset: int
    delivery_count: int
    action: Action
    at: float  # seconds since the scenario started, for ordering and lock timing

    @property
    def position(self) -> RecordPosition:
        return RecordPosition(self.partition, self.offset)


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """Everything a scenario observed, for tests to assert on and to compare across beds."""

    scenario: str
    topic: str
    group: str
    produced: tuple[RecordPosition, ...]
    produced_at: float  # when producing began: no record can have been acquired earlier
    deliveries: tuple[Delivery, ...]
    commit_errors: tuple[str, ...]
    client_errors: tuple[str, ...]  # non-fatal errors poll() returned, then retried
    completed: bool  # False: a deadline ran out before the scenario's goal was reached
    elapsed: float

    def deliveries_of(self, position: RecordPosition) -> tuple[Delivery, ...]:
        return tuple(delivery for delivery in self.deliveries if delivery.position == position)

    def accepted(self) -> tuple[RecordPosition, ...]:
        """Accepted positions in delivery order, duplicates kept: a duplicate is a defect."""
        return tuple(
            delivery.position for delivery in self.deliveries if delivery.action is Action.ACCEPT
        )

    def consumers(self) -> frozenset[str]:
        """The consumers that received at least one record."""
        return frozenset(delivery.consumer for delivery in self.deliveries)

    def delivery_counts(self) -> dict[RecordPosition, tuple[int, ...]]:
        """Per record, the delivery counts seen, in order: the differential fingerprint."""
        counts: dict[RecordPosition, list[int]] = {}
        for delivery in self.deliveries:
            counts.setdefault(delivery.position, []).append(delivery.delivery_count)
        return {position: tuple(seen) for position, seen in sorted(counts.items())}


@dataclass(frozen=True, slots=True)
class Deadline:
    """A point in monotonic time that bounds a wait; frozen so it can be shared."""

    expires_at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.expires_at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.expires_at


@dataclass(slots=True)
class _Recorder:
    """Collects deliveries from one or more consumer threads in arrival order."""

    started: float = field(default_factory=time.monotonic)
    deliveries: list[Delivery] = field(default_factory=list)
    commit_errors: list[str] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> float:
        return time.monotonic() - self.started

    def record(self, consumer: str, message: Message, action: Action) -> Delivery:
        position = _position(message)
        delivery = Delivery(
            consumer=consumer,
            partition=position.partition,
            offset=position.offset,
            delivery_count=message.delivery_count() or 0,
            action=action,
            at=self.now(),
        )
        with self.lock:
            self.deliveries.append(delivery)
        return delivery

    def commit_error(self, consumer: str, error: str) -> None:
        with self.lock:
            self.commit_errors.append(f"{consumer}: {error}")

    def client_error(self, consumer: str, error: str) -> None:
        with self.lock:
            self.client_errors.append(f"{consumer}: {error}")

    def snapshot(self) -> list[Delivery]:
        with self.lock:
            return list(self.deliveries)

    def result(
        self,
        scenario: str,
        topic: str,
        group: str,
        produced: tuple[RecordPosition, ...],
        produced_at: float,
        completed: bool,
    ) -> ScenarioResult:
        with self.lock:
            return ScenarioResult(
                scenario=scenario,
                topic=topic,
                group=group,
                produced=produced,
                produced_at=produced_at,
                deliveries=tuple(self.deliveries),
                commit_errors=tuple(self.commit_errors),
                client_errors=tuple(self.client_errors),
                completed=completed,
                elapsed=self.now(),
            )


@contextmanager
def scenario_producer(
    bootstrap: str, client_config: ClientConfig | None = None
) -> Iterator[Producer]:
    """The one producer a scenario uses from start to end, closed after the consumers.

    librdkafka's mock closes every share session on a broker whenever any connection to
    that broker closes, so a producer closed mid-scenario would release every record
    the consumers hold; one producer that outlives the consumers avoids that anywhere.
    """
    producer = Producer({**(client_config or {}), "bootstrap.servers": bootstrap})
    try:
        yield producer
    finally:
        producer.close()


def produce_records(
    producer: Producer,
    topic: str,
    count: int,
    *,
    deadline: Deadline,
    prefix: str = "record",
    partitions: int | None = None,
) -> tuple[RecordPosition, ...]:
    """Produce ``count`` records and return where the broker put them.

    Positions come from the delivery reports, not from assumptions about offsets, so a
    scenario can name exactly the records it expects back on any test bed. With
    ``partitions``, record ``i`` goes to partition ``i % partitions``; without, the
    producer's partitioner chooses (keyless: whole batches to one partition at a time).
    """
    positions: list[RecordPosition] = []
    failures: list[str] = []

    def on_delivery(error: object, message: Message) -> None:
        partition, offset = message.partition(), message.offset()
        if error is not None or partition is None or offset is None:
            failures.append(str(error))
        else:
            positions.append(RecordPosition(partition, offset))

    for index in range(count):
        value = f"{prefix}-{index}".encode()
        if partitions is None:
            producer.produce(topic, value=value, on_delivery=on_delivery)
        else:
            producer.produce(
                topic, value=value, partition=index % partitions, on_delivery=on_delivery
            )
    remaining = producer.flush(deadline.remaining())
    if remaining or failures:
        raise RuntimeError(
            f"produced {len(positions)} of {count} records to {topic!r}: "
            f"{remaining} undelivered, failures {failures}"
        )
    return tuple(sorted(positions))


@contextmanager
def _share_consumer(
    bootstrap: str, topic: str, group: str, client_config: ClientConfig | None, **extra: object
) -> Iterator[ShareConsumer]:
    consumer = ShareConsumer(
        {
            **(client_config or {}),
            **extra,
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    try:
        consumer.subscribe([topic])
        yield consumer
    finally:
        consumer.close()


def _poll(
    consumer: ShareConsumer, name: str, recorder: _Recorder, deadline: Deadline
) -> list[Message]:
    """One bounded poll: fatal errors raise, transient ones are recorded and retried."""
    messages = consumer.poll(min(_POLL_INTERVAL, max(deadline.remaining(), 0.001)))
    records = []
    for message in messages:
        error = message.error()
        if error is None:
            records.append(message)
        elif error.fatal():
            raise KafkaException(error)
        else:
            recorder.client_error(name, str(error))
    return records


def _acknowledge(
    consumer: ShareConsumer,
    name: str,
    recorder: _Recorder,
    message: Message,
    action: Action,
) -> Delivery:
    delivery = recorder.record(name, message, action)
    if action is not Action.HOLD:
        consumer.acknowledge(message, _ACKNOWLEDGE_TYPES[action])
    return delivery


def _commit(consumer: ShareConsumer, name: str, recorder: _Recorder) -> None:
    """Commit acknowledgements now so the broker's state is settled before the next poll."""
    for partition, error in consumer.commit_sync(_COMMIT_TIMEOUT).items():
        if error is not None:
            recorder.commit_error(name, f"{partition.topic}[{partition.partition}]: {error}")


def _consume_until(
    consumer: ShareConsumer,
    name: str,
    recorder: _Recorder,
    decide: Callable[[Message], Action],
    done: Callable[[], bool],
    deadline: Deadline,
) -> bool:
    """Poll, act on each record, commit each batch; True once ``done()`` holds in time."""
    while not done():
        if deadline.expired():
            return False
        records = _poll(consumer, name, recorder, deadline)
        for message in records:
            _acknowledge(consumer, name, recorder, message, decide(message))
        if records:
            _commit(consumer, name, recorder)
    return True


def _accepted_all(recorder: _Recorder, produced: tuple[RecordPosition, ...]) -> bool:
    accepted = {
        delivery.position for delivery in recorder.snapshot() if delivery.action is Action.ACCEPT
    }
    return accepted.issuperset(produced)


def all_delivered(
    bootstrap: str,
    topic: str,
    group: str,
    *,
    records: int = 10,
    timeout: float = 30.0,
    prepare_group: PrepareGroup | None = None,
    client_config: ClientConfig | None = None,
    partitions: int | None = None,
) -> ScenarioResult:
    """Produce ``records`` records (round robin over ``partitions``, when given), accept
    every delivery until all are accepted.

    Expected on any broker: each record delivered exactly once, with delivery count 1.
    """
    deadline = Deadline.after(timeout)
    recorder = _Recorder()
    if prepare_group is not None:
        prepare_group(group)
    produced_at = recorder.now()
    with scenario_producer(bootstrap, client_config) as producer:
        produced = produce_records(
            producer, topic, records, deadline=deadline, partitions=partitions
        )
        with _share_consumer(bootstrap, topic, group, client_config) as consumer:
            completed = _consume_until(
                consumer,
                "a",
                recorder,
                lambda message: Action.ACCEPT,
                lambda: _accepted_all(recorder, produced),
                deadline,
            )
        return recorder.result("all_delivered", topic, group, produced, produced_at, completed)


def release_once(
    bootstrap: str,
    topic: str,
    group: str,
    *,
    records: int = 3,
    timeout: float = 30.0,
    prepare_group: PrepareGroup | None = None,
    client_config: ClientConfig | None = None,
) -> ScenarioResult:
    """Release the first produced record on its first delivery, accept everything else.

    Expected: the released record comes back with delivery count 2 and is accepted; the
    others are delivered once. A release makes the record available at once, so no
    lock duration is involved.
    """
    deadline = Deadline.after(timeout)
    recorder = _Recorder()
    if prepare_group is not None:
        prepare_group(group)
    produced_at = recorder.now()
    with scenario_producer(bootstrap, client_config) as producer:
        produced = produce_records(producer, topic, records, deadline=deadline)
        target = produced[0]
        released = False

        def decide(message: Message) -> Action:
            nonlocal released
            if not released and _position(message) == target:
                released = True
                return Action.RELEASE
            return Action.ACCEPT

        with _share_consumer(bootstrap, topic, group, client_config) as consumer:
            completed = _consume_until(
                consumer,
                "a",
                recorder,
                decide,
                lambda: _accepted_all(recorder, produced),
                deadline,
            )
        return recorder.result("release_once", topic, group, produced, produced_at, completed)


def release_until_archived(
    bootstrap: str,
    topic: str,
    group: str,
    *,
    delivery_limit: int = 5,
    records: int = 3,
    quiet_period: float = 1.0,
    timeout: float = 30.0,
    prepare_group: PrepareGroup | None = None,
    client_config: ClientConfig | None = None,
) -> ScenarioResult:
    """Release the first record on every delivery; it must stop coming back at the limit.

    ``delivery_limit`` is the group's ``share.delivery.count.limit`` as the test bed set
    it (5 is Kafka's default). After the last release the record is archived. To see
    that without trusting a bare quiet period, a sentinel record is produced once the
    record has been released ``delivery_limit`` times: a share-partition hands out
    lower offsets first, so had the record still been available it would arrive no
    later than the sentinel. The consumer then keeps polling for ``quiet_period``.
    """
    deadline = Deadline.after(timeout)
    recorder = _Recorder()
    if prepare_group is not None:
        prepare_group(group)
    produced_at = recorder.now()
    with scenario_producer(bootstrap, client_config) as producer:
        produced = produce_records(producer, topic, records, deadline=deadline)
        target = produced[0]
        releases = 0

        def decide(message: Message) -> Action:
            nonlocal releases
            if _position(message) == target:
                releases += 1
                return Action.RELEASE
            return Action.ACCEPT

        with _share_consumer(bootstrap, topic, group, client_config) as consumer:
            completed = _consume_until(
                consumer,
                "a",
                recorder,
                decide,
                lambda: releases >= delivery_limit and _accepted_all(recorder, produced[1:]),
                deadline,
            )
            if completed:
                sentinel = produce_records(producer, topic, 1, deadline=deadline, prefix="sentinel")
                produced = produced + sentinel
                completed = _consume_until(
                    consumer,
                    "a",
                    recorder,
                    decide,
                    lambda: _accepted_all(recorder, sentinel),
                    deadline,
                )
                quiet = Deadline(min(deadline.expires_at, time.monotonic() + quiet_period))
                _consume_until(consumer, "a", recorder, decide, lambda: False, quiet)
        return recorder.result(
            "release_until_archived", topic, group, produced, produced_at, completed
        )


def lock_timeout(
    bootstrap: str,
    topic: str,
    group: str,
    *,
    redelivery_timeout: float = 45.0,
    join_timeout: float = 30.0,
    prepare_group: PrepareGroup | None = None,
    members_joined: MembersJoined | None = None,
    client_config: ClientConfig | None = None,
) -> ScenarioResult:
    """One consumer acquires a record and holds it; after the lock expires it is redelivered.

    The lock duration is the group's ``share.record.lock.duration.ms``, set by the test
    bed; ``redelivery_timeout`` bounds the wait for it, ``join_timeout`` everything before
    (joining, producing, the first delivery). Two consumers, "a" and "b", poll
    alternately from this one thread (each is only ever used by one thread at a time):
    whichever receives the record first holds it, neither acknowledging nor releasing,
    and stops polling, since an explicit-mode consumer may not poll again with a record
    unacknowledged. The other keeps polling until the record comes back with delivery
    count 2 and accepts it; the holder then closes. The record is produced only after
    both have joined, so that no assignment change can release it early. Because the
    record cannot be acquired before it was produced, ``redelivery.at - produced_at`` is
    a lower bound on how long the lock held, which a test can compare with the
    configured duration.
    """
    join_deadline = Deadline.after(join_timeout)
    recorder = _Recorder()
    if prepare_group is not None:
        prepare_group(group)
    with scenario_producer(bootstrap, client_config) as producer:
        produced: tuple[RecordPosition, ...] = ()
        produced_at = 0.0
        completed = False
        with (
            _share_consumer(bootstrap, topic, group, client_config) as consumer_a,
            _share_consumer(bootstrap, topic, group, client_config) as consumer_b,
        ):
            consumers = {"a": consumer_a, "b": consumer_b}
            # Joining happens in librdkafka's background threads once a poll has started it.
            for name, consumer in consumers.items():
                _poll(consumer, name, recorder, join_deadline)
            if members_joined is not None:
                members_joined(group, topic, len(consumers))
            produced_at = recorder.now()
            produced = produce_records(producer, topic, 1, deadline=join_deadline)
            holder = _first_to_receive(consumers, recorder, produced[0], join_deadline)
            if holder is not None:
                other = "b" if holder == "a" else "a"
                completed = _consume_until(
                    consumers[other],
                    other,
                    recorder,
                    lambda message: Action.ACCEPT,
                    lambda: _accepted_all(recorder, produced),
                    Deadline.after(redelivery_timeout),
                )
        return recorder.result("lock_timeout", topic, group, produced, produced_at, completed)


def _first_to_receive(
    consumers: Mapping[str, ShareConsumer],
    recorder: _Recorder,
    target: RecordPosition,
    deadline: Deadline,
) -> str | None:
    """Poll the consumers in turn until one receives ``target``; it holds it. Its name."""
    while not deadline.expired():
        for name, consumer in consumers.items():
            holder = None
            for message in _poll(consumer, name, recorder, deadline):
                if _position(message) == target and holder is None:
                    _acknowledge(consumer, name, recorder, message, Action.HOLD)
                    holder = name
                else:
                    _acknowledge(consumer, name, recorder, message, Action.ACCEPT)
            if holder is not None:
                return holder
    return None


def two_consumers(
    bootstrap: str,
    topic: str,
    group: str,
    *,
    records: int = 100,
    max_poll_records: int = 5,
    timeout: float = 60.0,
    prepare_group: PrepareGroup | None = None,
    members_joined: MembersJoined | None = None,
    client_config: ClientConfig | None = None,
) -> ScenarioResult:
    """Two consumers of one group share a one-partition topic, each in its own thread.

    Expected: both receive records, every record is accepted, none is accepted twice.
    ``max.poll.records`` is kept small so one fetch cannot take the whole topic, and a
    consumer that has committed its first batch waits (bounded) until the other has
    received one, so "both receive records" does not hinge on thread scheduling. The
    records are produced after both consumers have joined.
    """
    deadline = Deadline.after(timeout)
    recorder = _Recorder()
    if prepare_group is not None:
        prepare_group(group)
    names = ("a", "b")
    subscribed = {name: threading.Event() for name in names}
    received = {name: threading.Event() for name in names}
    stop = threading.Event()
    produced_box: list[tuple[RecordPosition, ...]] = []
    failures: list[BaseException] = []

    def abort() -> None:
        # Also wakes a consumer waiting for the other one's first batch.
        stop.set()
        for event in received.values():
            event.set()

    def done() -> bool:
        return stop.is_set() or (bool(produced_box) and _accepted_all(recorder, produced_box[0]))

    def run(name: str) -> None:
        other = "b" if name == "a" else "a"
        try:
            with _share_consumer(
                bootstrap, topic, group, client_config, **{"max.poll.records": max_poll_records}
            ) as consumer:
                _poll(consumer, name, recorder, deadline)  # starts the join
                subscribed[name].set()
                while not done() and not deadline.expired():
                    batch = _poll(consumer, name, recorder, deadline)
                    for message in batch:
                        _acknowledge(consumer, name, recorder, message, Action.ACCEPT)
                    if batch:
                        _commit(consumer, name, recorder)
                        if not received[name].is_set():
                            received[name].set()
                            received[other].wait(deadline.remaining())
        except BaseException as error:  # noqa: BLE001 - handed to the main thread, re-raised
            failures.append(error)
            abort()

    threads = [threading.Thread(target=run, args=(name,), name=f"share-{name}") for name in names]
    for thread in threads:
        thread.start()
    produced: tuple[RecordPosition, ...] = ()
    produced_at = 0.0
    with scenario_producer(bootstrap, client_config) as producer:
        try:
            if all(event.wait(deadline.remaining()) for event in subscribed.values()):
                if members_joined is not None:
                    members_joined(group, topic, len(names))
                produced_at = recorder.now()
                produced = produce_records(producer, topic, records, deadline=deadline)
                produced_box.append(produced)
        except BaseException:
            abort()
            raise
        finally:
            # Each thread stops by itself: goal reached, deadline passed, or stop set.
            for thread in threads:
                thread.join()
    if failures:
        raise failures[0]
    completed = bool(produced) and _accepted_all(recorder, produced)
    return recorder.result("two_consumers", topic, group, produced, produced_at, completed)


SCENARIOS: Final[Mapping[str, Callable[..., ScenarioResult]]] = {
    "all_delivered": all_delivered,
    "release_once": release_once,
    "release_until_archived": release_until_archived,
    "lock_timeout": lock_timeout,
    "two_consumers": two_consumers,
}
