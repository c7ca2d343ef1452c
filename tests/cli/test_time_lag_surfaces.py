"""One time lag on every surface, where the stored start offset trails acknowledgements.

A share consumer accepted offsets 0-5 (records 300 s to 250 s old) and left; Kafka
persists a start offset only with the next state write, so the stored start offset stays
behind the records it finished (the golden corpus and a real 4.2 broker show it; the
sandbox does the same), and 6-8 (100 s, 90 s, 80 s old) were produced after. The oldest
record the group has not acknowledged is offset 6, 100 s old: ``describe --time-lag``,
``health --time-lag``, the exporter and the dashboard must all say so. ``describe`` used
to age the record at the stored start offset, an acknowledged one at least 250 s old: the
test computes that old answer too, and it differs. Without READ on the state topic (the
sandbox's deny list) describe can only count from the stored start offset, and says so.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from prometheus_client.parser import text_string_to_metric_families

from kshare_cli.admin.models import GroupOffsets
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.render.metrics import MetricsPage
from kshare_cli.sandbox.security import ListenerSecurity
from kshare_cli.services import groups
from kshare_cli.services.dashboard import DashboardReads
from kshare_cli.services.exporter_server import build_refresher
from kshare_cli.services.health import Thresholds
from kshare_cli.services.session import Session
from kshare_cli.services.time_lag import time_lags
from tests.cli.conftest import Kshare, write_properties
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

#: Offsets 0-5: accepted by the consumer; their ages in seconds when produced.
ACKNOWLEDGED_AGES = (300, 290, 280, 270, 260, 250)
#: Offsets 6-8: produced after the consumer left; the oldest waiting record is 100 s old.
WAITING_AGES = (100, 90, 80)
OLDEST_WAITING_S = WAITING_AGES[0]
END = len(ACKNOWLEDGED_AGES) + len(WAITING_AGES)
#: The scenario's and the test's own running time may add to an age, never subtract.
SLACK_S = 10.0


@dataclass(frozen=True)
class Trailing:
    """A group whose stored start offset trails its acknowledgements, on one topic."""

    topic: str
    group: str
    produced_at: float
    """The wall-clock second the record ages count back from."""

    def assert_oldest_waiting(self, seconds: float | None) -> None:
        assert seconds is not None
        elapsed = time.time() - self.produced_at
        assert OLDEST_WAITING_S - 1 <= seconds <= OLDEST_WAITING_S + elapsed + SLACK_S, seconds


def _produce(config: Mapping[str, Any], topic: str, ages: tuple[int, ...], now: float) -> None:
    producer = Producer(dict(config))
    for age in ages:
        producer.produce(
            topic, value=f"aged-{age}".encode(), partition=0, timestamp=int((now - age) * 1000)
        )
    assert producer.flush(30) == 0


def _accept_all(config: Mapping[str, Any], group: str, topic: str, count: int) -> None:
    """A share consumer accepts offsets 0 to count - 1 (committing after each poll) and leaves."""
    consumer = ShareConsumer(
        {**config, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    seen: set[int] = set()
    deadline = time.monotonic() + 90
    try:
        consumer.subscribe([topic])
        while len(seen) < count:
            assert time.monotonic() < deadline, f"only offsets {sorted(seen)} were delivered"
            records = [message for message in consumer.poll(0.2) if message.error() is None]
            for message in records:
                offset = message.offset()
                assert offset is not None
                seen.add(offset)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if records:
                consumer.commit_sync(10)
    finally:
        consumer.close()


def play(config: Mapping[str, Any]) -> Trailing:
    """Offsets 0-5 accepted, 6-8 produced after: the stored start offset stays behind 6."""
    unique = uuid.uuid4().hex[:6]
    topic, group = f"tl-trail-{unique}", f"tl-trail-g-{unique}"
    admin = AdminClient(dict(config))
    for future in admin.create_topics([NewTopic(topic, 1, 1, config=KEEP_OLD_RECORDS)]).values():
        future.result(30)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[earliest])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    produced_at = time.time()
    _produce(config, topic, ACKNOWLEDGED_AGES, produced_at)
    _accept_all(config, group, topic, len(ACKNOWLEDGED_AGES))
    _produce(config, topic, WAITING_AGES, produced_at)
    return Trailing(topic, group, produced_at)


def settings_of(bootstrap: str, command_config: Path | None) -> ConnectionSettings:
    return resolve_settings(bootstrap=bootstrap, command_config=command_config, profile=None)


def stored_start_offset(settings: ConnectionSettings, trailing: Trailing) -> int:
    """The start offset DescribeShareGroupOffsets gives once the group's lag shows 6-8
    waiting; the scenario's premise is that it trails (below 6), checked here."""

    def described() -> tuple[int] | None:
        report = asyncio.run(groups.describe(settings, [trailing.group], False, "offsets", 15))
        group = report.get(trailing.group)
        assert isinstance(group, GroupOffsets), group
        (offset,) = group.partitions
        settled = offset.end_offset == END and offset.lag == len(WAITING_AGES)
        return (offset.start_offset,) if settled and offset.start_offset is not None else None

    (start,) = wait_for(described, 30, 0.2, "the lag of offsets 6-8")
    assert start < len(ACKNOWLEDGED_AGES), f"the stored start offset {start} does not trail"
    return int(start)


def old_describe_age(settings: ConnectionSettings, trailing: Trailing) -> float | None:
    """What ``describe --time-lag`` answered before it read the window: the age of the
    record at the stored start offset (``time_lags`` without the windows' resume offsets)."""
    report = asyncio.run(groups.describe(settings, [trailing.group], False, "offsets", 15))
    return time_lags(report, settings.confluent_config(), 15.0)[(trailing.group, trailing.topic, 0)]


def describe_age(kshare: Kshare, trailing: Trailing) -> tuple[float | None, str]:
    result = kshare.run("describe", trailing.group, "--time-lag", "-o", "json")
    assert result.exit_code == 0, result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    (partition,) = group["partitions"]
    return partition["lag_seconds"], result.stderr


def health_age(kshare: Kshare, trailing: Trailing) -> float | None:
    result = kshare.run("health", trailing.group, "--time-lag", "-o", "json")
    assert result.exit_code == 2, result.stderr  # no members while records wait: STOP
    (group,) = json.loads(result.stdout)["groups"]
    (partition,) = group["partitions"]
    seconds: float | None = partition["lag_seconds"]
    return seconds


def exporter_age(settings: ConnectionSettings, trailing: Trailing) -> float:
    """One exporter refresh with ``--time-lag``: its kshare_share_partition_lag_seconds."""
    refresher, source = build_refresher(
        settings, [trailing.group], Thresholds(), 15.0, 10.0, lambda line: None, time_lag=True
    )
    page = MetricsPage(lambda: refresher.snapshot, "c")
    refresher.on_snapshot = page.publish
    try:
        asyncio.run(refresher.refresh())
    finally:
        source.close()
    (age,) = [
        sample.value
        for family in text_string_to_metric_families(page.body().decode())
        for sample in family.samples
        if sample.name == "kshare_share_partition_lag_seconds"
    ]
    return age


async def dashboard_age(settings: ConnectionSettings, trailing: Trailing) -> float | None:
    """The dashboard's reads (its group answer, then the oldest record's timestamp), aged
    with the wall clock as the group screen ages it."""
    reads = DashboardReads(Session(settings, 15.0))
    try:
        inflight = await reads.group(trailing.group)
        assert inflight.window_note is None, inflight.window_note
        stamps = await reads.oldest_unacknowledged(inflight)
    finally:
        await reads.aclose()
    stamp = stamps[(trailing.group, trailing.topic, 0)]
    return None if stamp is None else time.time() - stamp / 1000


def test_describe_health_the_exporter_and_the_dashboard_give_the_same_age(
    cluster: Cluster, kshare: Kshare
) -> None:
    trailing = play(cluster.config())
    settings = settings_of(kshare.bootstrap, kshare.command_config)
    start = stored_start_offset(settings, trailing)
    measured_from = time.time()
    described, stderr = describe_age(kshare, trailing)
    ages = {
        "describe": described,
        "health": health_age(kshare, trailing),
        "exporter": exporter_age(settings, trailing),
        "dashboard": asyncio.run(dashboard_age(settings, trailing)),
    }
    measuring_s = time.time() - measured_from
    assert stderr == ""  # the windows were read: nothing to warn about
    for age in ages.values():
        trailing.assert_oldest_waiting(age)
    known = [age for age in ages.values() if age is not None]
    assert max(known) - min(known) <= measuring_s + 1.0, ages
    # The old answer aged the acknowledged record at the stored start offset.
    old = old_describe_age(settings, trailing)
    assert old is not None and old >= ACKNOWLEDGED_AGES[start] - 1, (start, old)
    assert old - max(known) >= ACKNOWLEDGED_AGES[-1] - OLDEST_WAITING_S - SLACK_S, (old, ages)


# --------------------------------------------------------------------------- no READ

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
#: bob may describe groups and topics and read the topic, not the state topic.
DENY = {"User:bob": [("TOPIC", "__share_group_state", "READ")]}


@pytest.fixture(scope="module")
def no_state_read(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kshare, Kshare]]:
    """A SASL sandbox whose deny list refuses bob READ on ``__share_group_state``: kshare
    as alice (who may read it) and as bob."""
    skip_on_real_cluster("needs a principal the cluster's ACLs refuse; the sandbox's deny list")
    directory = tmp_path_factory.mktemp("no-state-read")
    security = ListenerSecurity(protocol="SASL_PLAINTEXT", users=USERS, mechanisms=("PLAIN",))
    with SandboxThread(security=security, deny=DENY) as sandbox:
        runners = tuple(
            Kshare(
                sandbox.bootstrap,
                write_properties(
                    directory / f"{user}.properties",
                    {
                        "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN",
                        "sasl.jaas.config": "org.apache.kafka.common.security.plain."
                        f'PlainLoginModule required username="{user}" password="{password}";',
                    },
                ),
                directory / user / "config.toml",
            )
            for user, password in USERS.items()
        )
        yield runners[0], runners[1]


def test_without_read_on_the_state_topic_describe_says_it_counts_from_the_start_offset(
    no_state_read: tuple[Kshare, Kshare],
) -> None:
    alice, bob = no_state_read
    alice_config = {
        "bootstrap.servers": alice.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": USERS["alice"],
    }
    trailing = play(alice_config)
    start = stored_start_offset(settings_of(alice.bootstrap, alice.command_config), trailing)
    seen_by_alice, alice_stderr = describe_age(alice, trailing)
    trailing.assert_oldest_waiting(seen_by_alice)
    assert alice_stderr == ""
    seen_by_bob, bob_stderr = describe_age(bob, trailing)
    assert seen_by_bob is not None and seen_by_bob >= ACKNOWLEDGED_AGES[start] - 1
    (warning,) = bob_stderr.splitlines()
    assert warning.startswith(
        "kshare: warning: time lag (LAG-AGE, lag_seconds) counted from the stored start "
        "offset, which can trail acknowledged records, so an age may be too high: "
    ), warning
    assert "__share_group_state" in warning  # why: the state topic could not be read
    # The table is the same table, the note on stderr alone.
    table = bob.run("describe", trailing.group, "--time-lag")
    assert table.stdout.splitlines()[0].split()[-1] == "LAG-AGE"
    assert table.stderr.splitlines() == [warning]
