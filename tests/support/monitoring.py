"""The monitoring scenario: four share groups on a two-node Kafka 4.4 sandbox, a
``kshare exporter`` reading them, and the steps that make each alert's condition.

Played by ``tests/docs/test_prometheus_live.py`` (a real Prometheus scrapes the
exporter; queries and alerts are checked against ``kshare describe``) and by
``scripts/record_exporter_scenario.py`` (the same, recorded for
``docs/prometheus/alerts.test.yml``, then the brokers and the exporter stopped).

The members speak the protocol themselves (``RawShareMember``): they fetch only
when told to, so every delivery count is the plan's, and they join at once.

* ``orders-consumers`` drains: 30 records, 3 accepted per step, lag 0 at the end.
  (The KEDA example's group, so its selector is used as shipped, with cluster prod.)
* ``payments-workers`` stalls: a member that never fetches while 2 records a step
  arrive; lag grows, the start offset stands still.
* ``invoices-batch`` stopped: its member accepted 6 of 10 records, released 4 and
  left; lag 4, no members.
* ``refunds-workers`` has a poison record: offset 0 released at each of 4
  deliveries (available, delivery count 4: one short of the limit, 5) while the 2
  records produced each step are rejected, archived and, on Kafka 4.4 with the
  group's ``errors.deadletterqueue.topic.name``, written to its DLQ by the broker.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kshare_cli.sandbox.broker import Broker
from tests.cli.conftest import KSHARE, process_env
from tests.support import exporter_process
from tests.support.exporter_process import Exporter
from tests.support.sandbox_thread import SandboxThread
from tests.tui.scenario import ACCEPT, REJECT, RELEASE, RawShareMember

CLUSTER_NAME: Final = "prod"
DRAINING: Final = "orders-consumers"
STALLED: Final = "payments-workers"
STOPPED: Final = "invoices-batch"
POISON: Final = "refunds-workers"
GROUPS: Final = (DRAINING, STALLED, STOPPED, POISON)
TOPICS: Final = {DRAINING: "orders", STALLED: "payments", STOPPED: "invoices", POISON: "refunds"}
DLQ_TOPIC: Final = f"dlq.{POISON}"

DRAINING_RECORDS: Final = 30
ACCEPTED_PER_STEP: Final = 3
STEPS: Final = DRAINING_RECORDS // ACCEPTED_PER_STEP
ARRIVING_PER_STEP: Final = 2
POISON_DELIVERIES: Final = 4
STOPPED_RECORDS: Final = 10
STOPPED_ACCEPTED: Final = 6


@dataclass
class Scenario:
    sandbox: SandboxThread
    members: dict[str, RawShareMember]
    producer: Producer
    stop_heartbeats: threading.Event

    @property
    def bootstrap(self) -> str:
        return self.sandbox.bootstrap


def _produce(producer: Producer, topic: str, count: int, tag: str) -> None:
    for index in range(count):
        producer.produce(
            topic,
            key=f"{tag}-{index}".encode(),
            value=f"{tag}-{index}".encode(),
            partition=0,
            headers=[("source", b"kshare-tests")],
        )
    assert producer.flush(30) == 0


def _setup_cluster(sandbox: SandboxThread) -> dict[str, uuid.UUID]:
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    topics = [NewTopic(topic, 1, 1) for topic in TOPICS.values()]
    topics.append(NewTopic(DLQ_TOPIC, 1, 1, config={"errors.deadletterqueue.group.enable": "true"}))
    for future in admin.create_topics(topics).values():
        future.result(30)
    resources = []
    for group in GROUPS:
        entries = [
            ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
        ]
        if group == POISON:
            entries.append(
                ConfigEntry(
                    "errors.deadletterqueue.topic.name",
                    DLQ_TOPIC,
                    incremental_operation=AlterConfigOpType.SET,
                )
            )
        resources.append(
            ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
        )
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)
    # Node 1 leads every partition and coordinates every group (the stopped one moves
    # to node 2 once its member left: stopping node 2 later costs that group only).
    for topic in (*TOPICS.values(), DLQ_TOPIC):
        sandbox.move_leader(topic, 0, 1)
    for group in GROUPS:
        sandbox.move_group_coordinator(group, 1)

    def topic_id(name: str) -> uuid.UUID:
        def lookup(broker: Broker) -> uuid.UUID:
            topic = broker.topic(name)
            assert topic is not None
            return topic.topic_id

        return sandbox.call(lookup)

    return {topic: topic_id(topic) for topic in TOPICS.values()}


def _heartbeats(scenario: Scenario) -> None:
    """Keep the members that stay in their groups alive (a session times out in 45 s)."""
    while not scenario.stop_heartbeats.wait(2):
        for group in (DRAINING, STALLED, POISON):
            try:
                scenario.members[group].heartbeat()
            except (ConnectionError, OSError):
                return  # the recording stopped the brokers


@contextmanager
def monitoring_scenario() -> Iterator[Scenario]:
    """The sandbox with the four groups set up (before any step), torn down after."""
    sandbox = SandboxThread(
        brokers=2,
        kafka_version="4.4",
        coordinator_load_ms=0,
        config={"broker.session.timeout.ms": "600000"},
    ).start()
    stop = threading.Event()
    try:
        topic_ids = _setup_cluster(sandbox)
        producer = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 0})
        _produce(producer, TOPICS[DRAINING], DRAINING_RECORDS, "order")
        _produce(producer, TOPICS[STOPPED], STOPPED_RECORDS, "invoice")
        _produce(producer, TOPICS[POISON], 1, "poison")
        members = {
            group: RawShareMember(
                sandbox.bootstrap,
                group,
                f"{group}-member-1",
                f"{group}-client",
                {TOPICS[group]: topic_ids[TOPICS[group]]},
            )
            for group in GROUPS
        }
        for group, member in members.items():
            member.join({TOPICS[group]: 1})
        # The stalled member releases its first 2 records (it cannot process them) and
        # never fetches again: start offset 0, 2 available records, lag from then on.
        _produce(producer, TOPICS[STALLED], ARRIVING_PER_STEP, "payment-0")
        stalled = members[STALLED]
        stalled.acknowledge(dict.fromkeys(_fetch_at_least(stalled, ARRIVING_PER_STEP), RELEASE))
        stopped = members[STOPPED]
        acquired = _fetch_at_least(stopped, STOPPED_RECORDS)
        stopped.acknowledge(
            {
                position: ACCEPT if position[2] < STOPPED_ACCEPTED else RELEASE
                for position in acquired
            }
        )
        stopped.leave()
        sandbox.move_group_coordinator(STOPPED, 2)
        scenario = Scenario(sandbox, members, producer, stop)
        threading.Thread(target=_heartbeats, args=(scenario,), daemon=True).start()
        yield scenario
    finally:
        stop.set()
        sandbox.stop()


def _fetch_at_least(member: RawShareMember, count: int) -> dict[tuple[str, int, int], int]:
    acquired: dict[tuple[str, int, int], int] = {}
    deadline = time.monotonic() + 30
    while len(acquired) < count:
        acquired.update(member.fetch())
        assert time.monotonic() < deadline, f"{member.group}: only {sorted(acquired)} acquired"
    return acquired


def play_step(scenario: Scenario, step: int) -> None:
    """Step ``step`` (1..STEPS): drain 3, 2 more for the stalled group, and, for the first
    POISON_DELIVERIES steps, 2 records rejected and the poison record released again."""
    members = scenario.members
    _produce(scenario.producer, TOPICS[STALLED], ARRIVING_PER_STEP, f"payment-{step}")
    draining = members[DRAINING]
    topic = TOPICS[DRAINING]
    if step == 1:
        _fetch_at_least(draining, DRAINING_RECORDS)
    first = (step - 1) * ACCEPTED_PER_STEP
    draining.acknowledge(
        {(topic, 0, offset): ACCEPT for offset in range(first, first + ACCEPTED_PER_STEP)}
    )
    if step <= POISON_DELIVERIES:
        poison = members[POISON]
        topic = TOPICS[POISON]
        _produce(scenario.producer, topic, ARRIVING_PER_STEP, f"refund-{step}")
        acquired = _fetch_at_least(poison, ARRIVING_PER_STEP + 1)
        assert acquired[(topic, 0, 0)] == step, acquired
        poison.acknowledge(
            {position: RELEASE if position[2] == 0 else REJECT for position in acquired}
        )


def start_exporter(scenario: Scenario, profiles: Path, interval: str = "500ms") -> Exporter:
    """``kshare exporter`` over the four groups, as an operator runs it, on a free port."""
    argv = [
        str(KSHARE),
        "exporter",
        "--listen",
        "127.0.0.1:0",
        *(arg for group in GROUPS for arg in ("--group", group)),
        "--interval",
        interval,
        "--stall-after",
        "3s",
        "--timeout",
        "10s",
        "--cluster-name",
        CLUSTER_NAME,
        "-b",
        scenario.bootstrap,
    ]
    return exporter_process.start_exporter(
        argv,
        process_env(
            {
                "KSHARE_BOOTSTRAP_SERVERS": None,
                "KSHARE_COMMAND_CONFIG": None,
                "KSHARE_CONFIG": str(profiles),
            }
        ),
    )


def stop_exporter(exporter: Exporter) -> None:
    if exporter.process.poll() is None:
        exporter.process.terminate()
        try:
            exporter.process.wait(15)
        except subprocess.TimeoutExpired:
            exporter.process.kill()
            exporter.process.wait(5)


def target_of(exporter: Exporter) -> str:
    """host:port of the exporter, as a scrape config's target."""
    return exporter.base.removeprefix("http://").rstrip("/")
