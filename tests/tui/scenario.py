"""The dashboard's test scenarios: real share groups, and recordings of what the services said.

Two scenarios, both played by confluent-kafka's ShareConsumer in explicit
acknowledgement mode, so the windows on screen are what a real client did:

* ``play_live_group`` on the ``cluster`` fixture (the sandbox, or a real
  cluster): one topic, two partitions, a consumer that releases one record
  and rejects another, then leaves. The Pilot tests and the terminal test
  read it through the live source.
* ``record_snapshot_scenario`` on a private sandbox with fixed names and
  timestamps: a consumer plays a fixed plan of accepts, releases and rejects
  over four rounds while records are produced between them; after each stage
  the real ``LiveSource`` (InflightService, the state-topic tailer, the peek)
  fetches everything once. ``RecordedSource`` replays those answers stage by
  stage, so the SVG snapshots are fixed while their data came from a broker.

A round is one poll of the consumer. Records released in round N come back
in round N+1 with their delivery count raised, so the plan (one action per
delivery of each record) fixes every delivery count; the player checks that
each round delivered exactly what the plan expects and fails loudly if not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kio.schema.share_acknowledge.v1.request import (
    AcknowledgementBatch,
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from kio.schema.share_fetch.v1.request import FetchPartition, FetchTopic, ShareFetchRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.static.primitive import i8, i32, i32Timedelta, i64

from kshare_cli.admin.inflight import GroupInflight, GroupsOverview
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.sandbox.broker import Broker
from kshare_cli.state.sources import TailingStateSource
from kshare_cli.tui.source import LiveSource
from tests.support import raw
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

ACCEPT: Final = AcknowledgeType.ACCEPT
RELEASE: Final = AcknowledgeType.RELEASE
REJECT: Final = AcknowledgeType.REJECT

#: 2026-01-01T00:00:00Z: the records' timestamps and the dashboard clock of the snapshots.
EPOCH_S: Final = 1_767_225_600
EPOCH_MS: Final = EPOCH_S * 1000


#: What the tailer says when the operator has DESCRIBE on the group but no READ on the
#: state topic (kshare_cli.state.tailer); the sandbox has no ACLs to refuse it for real.
DESCRIBE_ONLY: Final = (
    "not authorized to read __share_group_state (needs DESCRIBE and READ on the topic); "
    "in-flight windows cannot be shown"
)


class FakeClock:
    """The dashboard's clock in a test: it moves only when the test says so."""

    def __init__(self, now: float = EPOCH_S) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def command_config_for(cluster: Cluster, directory: Path) -> Path | None:
    """The test cluster's client properties as a --command-config file (None: plaintext)."""
    if not cluster.client_config:
        return None
    path = directory / "client.properties"
    path.write_text("".join(f"{key}={value}\n" for key, value in cluster.client_config.items()))
    return path


def _create(admin: AdminClient, topics: Mapping[str, int], groups: Sequence[str]) -> None:
    for future in admin.create_topics(
        [NewTopic(name, partitions, 1) for name, partitions in topics.items()]
    ).values():
        future.result(30)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resources = [
        ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[earliest])
        for group in groups
    ]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)


def order_value(partition: int, offset: int) -> bytes:
    amount = (offset * 37 + partition * 11) % 500
    return f'{{"order":{partition * 1000 + offset},"amount":{amount}.{offset % 100:02d}}}'.encode()


def _produce(producer: Producer, topic: str, partition: int, first_offset: int, count: int) -> None:
    for offset in range(first_offset, first_offset + count):
        producer.produce(
            topic,
            key=f"customer-{offset % 7}".encode(),
            value=order_value(partition, offset),
            partition=partition,
            timestamp=EPOCH_MS + offset * 1000,
        )
    assert producer.flush(30) == 0


Position = tuple[str, int, int]  # topic, partition, offset


def _first_deliveries(
    consumer: ShareConsumer,
    positions: set[Position],
    act: Mapping[Position, AcknowledgeType],
    timeout: float,
) -> None:
    """Poll until every position was delivered once, acting on each first delivery.

    librdkafka fetches ahead, so a released record may come back before the
    others arrived; it is released again (it stays available, as planned).
    """
    seen: set[Position] = set()
    deadline = time.monotonic() + timeout
    while seen != positions:
        if time.monotonic() > deadline:
            raise AssertionError(f"only {sorted(seen)} of {sorted(positions)} were delivered")
        records = [message for message in consumer.poll(0.2) if message.error() is None]
        for message in records:
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            position = (topic, partition, offset)
            if position in seen:
                consumer.acknowledge(message, RELEASE)
                continue
            seen.add(position)
            consumer.acknowledge(message, act.get(position, ACCEPT))
        if records:
            consumer.commit_sync(10)


# --------------------------------------------------------------------------- live group


@dataclass(frozen=True)
class LiveGroup:
    """A share group on the test cluster, left as the plan says (see ``play_live_group``).

    Partition 0: 10 records; offset 6 released (available again), 7 rejected
    (archived), the rest accepted: lag 1 (KIP-1226: 10 - start offset -
    delivery-complete count). Partition 1: 5 records accepted, then 3 more
    produced: end offset 8, lag 3. Nobody is left in the group. The start
    offsets are at most 6 and 5: Kafka persists a start offset lazily (the
    golden corpus shows it staying behind acknowledged records), the sandbox
    too.
    """

    topic: str
    group: str
    bootstrap: str
    command_config: Path | None
    settings: ConnectionSettings
    state: TailingStateSource
    """One state-topic reader for every test: it reads the topic from its start once."""
    played_at: float = 0.0
    """When the plan began (epoch seconds): no start offset of the group moved before."""

    def source(self, **options: Any) -> LiveSource:
        """A live source on this cluster (``state`` given in ``options`` replaces the reader)."""
        options.setdefault("state", self.state)
        return LiveSource(self.settings, timeout_s=15, **options)

    START_AT_MOST: ClassVar[Mapping[int, int]] = {0: 6, 1: 5}
    END: ClassVar[Mapping[int, int]] = {0: 10, 1: 8}
    LAG: ClassVar[Mapping[int, int]] = {0: 1, 1: 3}


def play_live_group(cluster: Cluster, unique: str, directory: Path) -> LiveGroup:
    played_at = time.time()
    topic = f"kshare-tui-{unique}"
    group = f"kshare-tui-{unique}"
    _create(AdminClient(cluster.config()), {topic: 2}, [group])
    producer = Producer(cluster.config())
    _produce(producer, topic, 0, 0, 10)
    _produce(producer, topic, 1, 0, 5)
    consumer = ShareConsumer(
        cluster.config(
            **{
                "group.id": group,
                "client.id": "kshare-tui-live",
                "share.acknowledgement.mode": "explicit",
                "max.poll.records": 1000,
            }
        )
    )
    try:
        consumer.subscribe([topic])
        firsts = {(topic, 0, offset) for offset in range(10)}
        firsts |= {(topic, 1, offset) for offset in range(5)}
        _first_deliveries(
            consumer, firsts, {(topic, 0, 6): RELEASE, (topic, 0, 7): REJECT}, timeout=90
        )
    finally:
        consumer.close()
    _produce(producer, topic, 1, 5, 3)
    command_config = command_config_for(cluster, directory)
    settings = resolve_settings(
        bootstrap=cluster.bootstrap, command_config=command_config, profile=None
    )
    state = TailingStateSource(settings.confluent_config())
    live = LiveGroup(topic, group, cluster.bootstrap, command_config, settings, state, played_at)

    def settled() -> bool:
        answer = asyncio.run(_fetch_group(live))
        offsets = {each.partition: (each.end_offset, each.lag) for each in answer.partitions}
        return offsets == {p: (LiveGroup.END[p], LiveGroup.LAG[p]) for p in (0, 1)}

    wait_for(settled, timeout=30, interval=0.2, what="the live group's offsets")
    return live


async def _fetch_group(live: LiveGroup) -> GroupInflight:
    source = live.source()
    try:
        return await source.group(live.group)
    finally:
        await source.aclose()


# --------------------------------------------------------------------------- snapshots

MAIN_GROUP: Final = "orders-workers"
AUDIT_GROUP: Final = "payments-audit"
ORDERS: Final = "orders"
PAYMENTS: Final = "payments"
MAIN_MEMBER: Final = "orders-worker-0001"
AUDIT_MEMBER: Final = "payments-audit-0001"
PEEK_LIMIT: Final = 10

#: Batches produced: A before round 1, B before round 3, C after the last round.
BATCH_A: Final = {(ORDERS, 0): 30, (ORDERS, 1): 30, (ORDERS, 2): 30, (PAYMENTS, 0): 12}
BATCH_B: Final = {(ORDERS, 0): 10, (ORDERS, 1): 10, (ORDERS, 2): 10, (PAYMENTS, 0): 6}
BATCH_C: Final = {(ORDERS, 0): 15, (ORDERS, 2): 5, (PAYMENTS, 0): 4}
ROUNDS: Final = 4

#: Every delivery's action for the records that are not simply accepted the first time.
PLAN: Final[dict[Position, tuple[AcknowledgeType, ...]]] = {
    (ORDERS, 0, 3): (REJECT,),
    (ORDERS, 0, 10): (RELEASE, RELEASE, RELEASE, RELEASE),
    (ORDERS, 0, 11): (RELEASE, ACCEPT),
    (ORDERS, 0, 20): (REJECT,),
    (ORDERS, 0, 21): (REJECT,),
    (ORDERS, 0, 22): (REJECT,),
    (ORDERS, 0, 35): (RELEASE, RELEASE),
    (ORDERS, 1, 0): (RELEASE, RELEASE, RELEASE, RELEASE),
    (ORDERS, 2, 25): (REJECT,),
    (ORDERS, 2, 37): (RELEASE, ACCEPT),
    (PAYMENTS, 0, 4): (RELEASE, REJECT),
}

#: The dashboard clock at each recorded stage (seconds after EPOCH_S): after rounds 1, 2
#: and 3, after round 4 and batch C, and 55 s later with nothing changed: start offsets
#: unmoved for 60 s or more under lag are stalled then, the others not yet.
STAGE_TIMES: Final = (0.0, 10.0, 20.0, 30.0, 85.0)

_ACKNOWLEDGE_TYPE: Final = {ACCEPT: 1, RELEASE: 2, REJECT: 3}


@dataclass(frozen=True)
class Stage:
    """What the live source answered at one point of the scenario."""

    at: float
    overview: GroupsOverview
    groups: Mapping[str, GroupInflight]
    peeks: Mapping[tuple[str, int, int, int], tuple[ConsumedRecord, ...]]


class RawShareMember:
    """A share consumer spoken in raw protocol: a fixed member id, and no prefetching.

    librdkafka's ShareConsumer fetches ahead in the background, so records it
    released come back acquired (their delivery count raised) at moments a
    test cannot fix; this member fetches only when told to, so every delivery
    count of the plan is exact. The member id is the client's to choose
    (KIP-932), so the members panel of the snapshots is fixed too.
    """

    def __init__(
        self,
        bootstrap: str,
        group: str,
        member_id: str,
        client_id: str,
        topic_ids: Mapping[str, uuid.UUID],
        rack: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.member_id = member_id
        self.client_id = client_id
        self.topic_ids = dict(topic_ids)
        self.names = {topic_id: name for name, topic_id in topic_ids.items()}
        self.rack = rack
        self.member_epoch = 0
        self.session_epoch = 0
        self.assignment: dict[str, list[int]] = {}

    def _call(self, payload: object) -> Any:
        return raw.call(self.bootstrap, payload, client_id=self.client_id)

    def heartbeat(self, epoch: int | None = None) -> None:
        response = self._call(
            ShareGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=i32(self.member_epoch if epoch is None else epoch),
                rack_id=self.rack,
                subscribed_topic_names=tuple(sorted(self.topic_ids)),
            )
        )
        assert int(response.error_code) == 0, response
        self.member_epoch = int(response.member_epoch)
        if response.assignment is not None:
            self.assignment = {
                self.names[topic.topic_id]: sorted(int(p) for p in topic.partitions)
                for topic in response.assignment.topic_partitions
            }

    def join(self, partitions: Mapping[str, int]) -> None:
        """Heartbeat until every partition of ``partitions`` (topic -> count) is assigned."""
        wanted = {topic: list(range(count)) for topic, count in partitions.items()}

        def assigned() -> bool:
            self.heartbeat()
            return self.assignment == wanted

        wait_for(assigned, timeout=30, interval=0.1, what=f"{self.member_id}'s assignment")

    def fetch(self) -> dict[Position, int]:
        """One ShareFetch: the records it acquired, position -> delivery count."""
        topics = tuple(
            FetchTopic(
                topic_id=self.topic_ids[topic],
                partitions=tuple(
                    FetchPartition(partition_index=i32(partition), acknowledgement_batches=())
                    for partition in partitions
                ),
            )
            for topic, partitions in sorted(self.assignment.items())
        )
        response = self._call(
            ShareFetchRequest(
                group_id=self.group,
                member_id=self.member_id,
                share_session_epoch=i32(self.session_epoch),
                max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=200)),
                min_bytes=i32(1),
                max_records=i32(10_000),
                batch_size=i32(10_000),
                topics=topics if self.session_epoch == 0 else (),
                forgotten_topics_data=(),
            )
        )
        assert int(response.error_code) == 0, response
        self.session_epoch += 1
        acquired: dict[Position, int] = {}
        for topic in response.responses:
            name = self.names[topic.topic_id]
            for partition in topic.partitions:
                assert int(partition.error_code) == 0, partition
                for batch in partition.acquired_records:
                    for offset in range(int(batch.first_offset), int(batch.last_offset) + 1):
                        acquired[(name, int(partition.partition_index), offset)] = int(
                            batch.delivery_count
                        )
        return acquired

    def acknowledge(self, actions: Mapping[Position, AcknowledgeType]) -> None:
        by_partition: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for (topic, partition, offset), action in sorted(actions.items()):
            by_partition.setdefault((topic, partition), []).append(
                (offset, _ACKNOWLEDGE_TYPE[action])
            )
        topics: dict[str, list[AcknowledgePartition]] = {}
        for (topic, partition), offsets in sorted(by_partition.items()):
            topics.setdefault(topic, []).append(
                AcknowledgePartition(
                    partition_index=i32(partition),
                    acknowledgement_batches=tuple(
                        AcknowledgementBatch(
                            first_offset=i64(offset),
                            last_offset=i64(offset),
                            acknowledge_types=(i8(kind),),
                        )
                        for offset, kind in offsets
                    ),
                )
            )
        response = self._call(
            ShareAcknowledgeRequest(
                group_id=self.group,
                member_id=self.member_id,
                share_session_epoch=i32(self.session_epoch),
                topics=tuple(
                    AcknowledgeTopic(topic_id=self.topic_ids[topic], partitions=tuple(parts))
                    for topic, parts in sorted(topics.items())
                ),
            )
        )
        assert int(response.error_code) == 0, response
        for topic in response.responses:
            for partition in topic.partitions:
                assert int(partition.error_code) == 0, partition
        self.session_epoch += 1

    def play_round(
        self,
        expected: Mapping[Position, int],
        act: Mapping[tuple[Position, int], AcknowledgeType],
    ) -> None:
        # A fetch may stop at the first gap of a partition; what it acquired stays locked
        # to us, so fetching again before acknowledging brings the rest, never a repeat.
        acquired: dict[Position, int] = {}
        deadline = time.monotonic() + 30
        while acquired != dict(expected):
            fetched = self.fetch()
            unplanned = {p: c for p, c in fetched.items() if expected.get(p) != c or p in acquired}
            assert not unplanned, f"unplanned deliveries {unplanned}; expected {dict(expected)}"
            acquired.update(fetched)
            assert time.monotonic() < deadline, f"round incomplete: {acquired} of {expected}"
        self.acknowledge(
            {position: act.get((position, count), ACCEPT) for position, count in acquired.items()}
        )

    def leave(self) -> None:
        self.heartbeat(epoch=-1)


def _first_round(position: Position) -> int:
    topic, partition, offset = position
    return 1 if offset < BATCH_A[(topic, partition)] else 3


def _rounds() -> list[tuple[dict[Position, int], dict[tuple[Position, int], AcknowledgeType]]]:
    """Per round: the deliveries expected (position -> count) and the planned actions."""
    positions: list[Position] = []
    for (topic, partition), count in BATCH_A.items():
        positions += [(topic, partition, offset) for offset in range(count)]
    for (topic, partition), count in BATCH_B.items():
        first = BATCH_A[(topic, partition)]
        positions += [(topic, partition, offset) for offset in range(first, first + count)]
    rounds: list[tuple[dict[Position, int], dict[tuple[Position, int], AcknowledgeType]]] = [
        ({}, {}) for _ in range(ROUNDS)
    ]
    for position in positions:
        actions = PLAN.get(position, (ACCEPT,))
        first = _first_round(position)
        last_round = first + len(actions) - 1
        assert last_round <= ROUNDS, position
        if actions[-1] is RELEASE:
            assert last_round == ROUNDS, f"{position} would be delivered again after its plan"
        for delivery, action in enumerate(actions, start=1):
            expected, act = rounds[first + delivery - 2]
            expected[position] = delivery
            act[(position, delivery)] = action
    return rounds


async def _record_stage(source: LiveSource, at: float) -> Stage:
    overview = await source.overview()
    groups = {group: await source.group(group) for group in (MAIN_GROUP, AUDIT_GROUP)}
    keys = [
        (partition.topic, partition.partition, partition.start_offset, PEEK_LIMIT)
        for partition in groups[MAIN_GROUP].partitions
        if partition.start_offset is not None and partition.start_offset >= 0
    ]
    answers = await asyncio.gather(*(source.peek(*key) for key in keys))
    return Stage(at, overview, groups, dict(zip(keys, answers, strict=True)))


class _Recorder:
    """One LiveSource on its own event loop for the whole scenario (its tailer keeps up)."""

    def __init__(self, settings: ConnectionSettings) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.source = LiveSource(settings, timeout_s=15)
        self.stages: list[Stage] = []
        # Each start offset move the state topic dated (broker time, ms), by the scenario's
        # clock at the stage that first saw it: the pictures must not depend on the wall clock.
        self.moves: dict[int, int] = {}

    def record(self) -> None:
        at = EPOCH_S + STAGE_TIMES[len(self.stages)]
        work = _record_stage(self.source, at)
        stage = asyncio.run_coroutine_threadsafe(work, self.loop).result(60)
        groups = {name: self._on_scenario_clock(group, at) for name, group in stage.groups.items()}
        self.stages.append(dataclasses.replace(stage, groups=groups))

    def _on_scenario_clock(self, group: GroupInflight, at: float) -> GroupInflight:
        partitions = []
        for partition in group.partitions:
            window = partition.window
            moved = None if window is None else window.start_offset_moved
            if window is not None and moved is not None:
                at_ms = self.moves.setdefault(moved.at_ms, round(at * 1000))
                moved = dataclasses.replace(moved, at_ms=at_ms)
                window = dataclasses.replace(window, start_offset_moved=moved)
                partition = dataclasses.replace(partition, window=window)
            partitions.append(partition)
        return dataclasses.replace(group, partitions=tuple(partitions))

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.source.aclose(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def record_snapshot_scenario(sandbox: SandboxThread) -> list[Stage]:
    """Play the plan on a private sandbox; one recorded Stage per STAGE_TIMES."""
    bootstrap = sandbox.bootstrap
    config: dict[str, object] = {"bootstrap.servers": bootstrap}
    _create(AdminClient(config), {ORDERS: 3, PAYMENTS: 1}, [MAIN_GROUP, AUDIT_GROUP])

    def topic_id(name: str) -> uuid.UUID:
        def lookup(broker: Broker) -> uuid.UUID:
            topic = broker.topic(name)
            assert topic is not None
            return topic.topic_id

        return sandbox.call(lookup)

    topic_ids = {name: topic_id(name) for name in (ORDERS, PAYMENTS)}
    settings = resolve_settings(bootstrap=bootstrap, command_config=None, profile=None)
    producer = Producer(config)
    for (topic, partition), count in BATCH_A.items():
        _produce(producer, topic, partition, 0, count)
    recorder = _Recorder(settings)
    try:
        _play_plan(sandbox.bootstrap, topic_ids, producer, recorder)
    finally:
        recorder.close()
    return recorder.stages


def _play_plan(
    bootstrap: str, topic_ids: Mapping[str, uuid.UUID], producer: Producer, recorder: _Recorder
) -> None:
    member = RawShareMember(
        bootstrap, MAIN_GROUP, MAIN_MEMBER, "orders-service", topic_ids, rack="eu-west-1a"
    )
    member.join({ORDERS: 3, PAYMENTS: 1})
    for number, (expected, act) in enumerate(_rounds(), start=1):
        if number == 3:
            for (topic, partition), count in BATCH_B.items():
                _produce(producer, topic, partition, BATCH_A[(topic, partition)], count)
        member.play_round(expected, act)
        if number == 1:
            audit = RawShareMember(
                bootstrap,
                AUDIT_GROUP,
                AUDIT_MEMBER,
                "payments-audit",
                {PAYMENTS: topic_ids[PAYMENTS]},
            )
            audit.join({PAYMENTS: 1})
            count = BATCH_A[(PAYMENTS, 0)]
            audit.play_round({(PAYMENTS, 0, offset): 1 for offset in range(count)}, {})
            audit.leave()
        if number < ROUNDS:
            recorder.record()
    for (topic, partition), count in BATCH_C.items():
        first = BATCH_A[(topic, partition)] + BATCH_B[(topic, partition)]
        _produce(producer, topic, partition, first, count)
    member.heartbeat()
    recorder.record()
    recorder.record()


@dataclass
class RecordedSource:
    """A DashboardSource that answers what the live source answered at ``stage``."""

    stages: Sequence[Stage]
    stage: int = 0
    calls: list[str] = field(default_factory=list)

    async def overview(self) -> GroupsOverview:
        self.calls.append("overview")
        return self.stages[self.stage].overview

    async def group(self, group_id: str) -> GroupInflight:
        self.calls.append(f"group {group_id}")
        return self.stages[self.stage].groups[group_id]

    async def peek(
        self, topic: str, partition: int, offset: int, limit: int
    ) -> tuple[ConsumedRecord, ...]:
        self.calls.append(f"peek {topic}:{partition}@{offset}")
        return self.stages[self.stage].peeks[(topic, partition, offset, limit)]
