"""The first record on a new group: a heartbeat round trip, not a heartbeat interval (issue 29).

Kafka answers a new member's first ShareGroupHeartbeat with an empty assignment
and assigns with the second; librdkafka 2.16 sends the second only after
``share.heartbeat.interval.ms`` (5 s), Java at once (docs/first-record.md). These
run on a sandbox with Kafka's default 5 s interval, so a first record within a
second can only have come through an early second heartbeat. On a terminal,
``kshare consume`` says "joining group G…" until the assignment arrives.
"""

from __future__ import annotations

import logging
import os
import pty
import select
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from kshare_cli.consumer.deserializers import make_deserializer
from kshare_cli.consumer.record_formatters import make_formatter
from kshare_cli.consumer.share_consume import ConsumeOptions, consume
from kshare_cli.kafka.versions import KafkaVersion
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from tests.cli.conftest import KSHARE, Kshare, process_env
from tests.support.consume_beds import Bed, Captured, values
from tests.support.sandbox import read_properties, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread

#: Kafka's default ``share.heartbeat.interval.ms``, which the sandbox below keeps.
HEARTBEAT_INTERVAL_S = BrokerGroupSettings().share_heartbeat_interval_ms / 1000


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    """A sandbox keeping Kafka's default interval, or the real cluster when it keeps it too."""
    real = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if real:
        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        cluster = Bed("cluster", real, read_properties(config_path) if config_path else {})
        interval_s = _share_heartbeat_interval_s(cluster)
        if interval_s != HEARTBEAT_INTERVAL_S:
            pytest.skip(
                f"on a real cluster: its share.heartbeat.interval.ms is {interval_s * 1000:.0f},"
                f" not Kafka's default {HEARTBEAT_INTERVAL_S * 1000:.0f}"
            )
        yield cluster
        return
    with SandboxThread() as sandbox:
        yield Bed("sandbox", sandbox.bootstrap, sandbox=sandbox)


def _share_heartbeat_interval_s(bed: Bed) -> float:
    """The interval a new group on ``bed``'s cluster gets (its group config's value)."""
    resource = ConfigResource("GROUP", f"first-record-interval-{uuid.uuid4().hex[:10]}")
    admin = AdminClient(bed.config())
    (future,) = admin.describe_configs([resource]).values()
    return float(future.result(30)["share.heartbeat.interval.ms"].value) / 1000


class _Heartbeats(logging.Handler):
    """librdkafka's protocol log: when each ShareGroupHeartbeat was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "Sent ShareGroupHeartbeatRequest" in record.getMessage():
            self.sent.append(time.monotonic())


class _FirstRecord(Captured):
    def __init__(self) -> None:
        super().__init__()
        self.at: float | None = None

    def write(self, data: Any) -> int:
        if self.at is None:
            self.at = time.monotonic()
        return super().write(data)


def test_first_record_comes_a_round_trip_after_the_join(bed: Bed) -> None:
    assert HEARTBEAT_INTERVAL_S == 5.0
    topic, group = bed.names("first-record")
    bed.produce(topic, values(1))
    heartbeats = _Heartbeats()
    log = logging.getLogger(f"kshare.test.first-record.{group}")
    log.setLevel(logging.DEBUG)
    log.addHandler(heartbeats)
    config = bed.config
    bed.config = lambda **extra: config(debug="protocol", logger=log, **extra)  # type: ignore[method-assign]
    joining: list[tuple[bool, float]] = []
    first_record_s, first_at = _first_record(
        bed, topic, group, on_joining=lambda state: joining.append((state, time.monotonic()))
    )
    # Without the expedited second heartbeat the assignment waits the broker's whole
    # interval; with it, a round trip (milliseconds here). The heartbeats are counted below.
    assert first_record_s < HEARTBEAT_INTERVAL_S, f"first record after {first_record_s:.2f} s"
    # The join, then at least one more before the assignment, the leave last; and no flood.
    before_leave = heartbeats.sent[:-1]
    assert 2 <= len(before_leave) <= 8, heartbeats.sent
    assert [state for state, _ in joining] == [True, False]
    assert joining[1][1] <= first_at + 0.05


#: Kafka 4.3+'s ``share.assignment.interval.ms`` default: the least time between a
#: group's two assignments, the join's (empty) one and the one with the partitions.
ASSIGNMENT_INTERVAL_S = BrokerGroupSettings().share_assignment_interval_ms / 1000


@pytest.mark.parametrize(
    ("version", "earliest_s", "latest_s"),
    [("4.2", 0.0, 1.0), ("4.4", ASSIGNMENT_INTERVAL_S, ASSIGNMENT_INTERVAL_S + 1.5)],
)
def test_the_first_record_waits_for_the_releases_assignment_not_the_heartbeat_interval(
    version: KafkaVersion, earliest_s: float, latest_s: float
) -> None:
    """On 4.2 the partitions come a round trip after the broker initialised them; from
    4.3 the broker computes the next assignment only an assignment interval (1 s) after
    the join's, whatever the client does (real Kafka 4.4: kshare's first record after
    1.27 s, Java's console share consumer's after 6.7 s: its one early heartbeat came
    within the interval, and the next a heartbeat interval later). Either way well under
    librdkafka's 5 s heartbeat interval."""
    skip_on_real_cluster("it compares the sandbox's Kafka releases")
    with SandboxThread(kafka_version=version) as sandbox:
        bed = Bed("sandbox", sandbox.bootstrap, sandbox=sandbox)
        topic, group = bed.names(f"first-record-{version}")
        bed.produce(topic, values(1))
        first_record_s, _ = _first_record(bed, topic, group)
    assert earliest_s <= first_record_s < latest_s, f"first record after {first_record_s:.2f} s"
    assert latest_s < HEARTBEAT_INTERVAL_S


def _first_record(
    bed: Bed, topic: str, group: str, on_joining: Callable[[bool], None] | None = None
) -> tuple[float, float]:
    """``kshare consume --max-messages 1`` of a new group: seconds from its start to its
    first record, and that moment (monotonic)."""
    sink = _FirstRecord()
    formatter = make_formatter(
        "jsonl", {}, make_deserializer("string"), make_deserializer("string")
    )
    started = time.monotonic()
    result = consume(
        bed.config(),
        ConsumeOptions(topics=(topic,), group_id=group, max_messages=1),
        formatter,
        sink,
        on_joining=on_joining,
    )
    assert result.processed == 1 and result.error is None, result
    assert sink.at is not None
    return sink.at - started, sink.at


def test_no_assignment_yet_means_paced_heartbeats_then_librdkafkas_own(bed: Bed) -> None:
    """An empty topic: the join is told done once assigned, with no record to show it."""
    topic, group = bed.names("first-record-empty")
    joining: list[bool] = []
    stop = threading.Event()

    def told(state: bool) -> None:
        joining.append(state)
        if not state:
            stop.set()  # assigned: nothing more to see

    formatter = make_formatter("raw", {}, make_deserializer("string"), make_deserializer("string"))
    started = time.monotonic()
    result = consume(
        bed.config(),
        ConsumeOptions(topics=(topic,), group_id=group, idle_timeout_ms=10_000),
        formatter,
        Captured(),
        stop=stop,
        on_joining=told,
    )
    assert result.stopped_by == "interrupted", result
    assert joining == [True, False]
    assert time.monotonic() - started < HEARTBEAT_INTERVAL_S


def test_a_terminal_shows_joining_until_the_assignment(bed: Bed, tmp_path: Path) -> None:
    topic, group = bed.names("first-record-tty")
    bed.produce(topic, values(1))
    kshare = Kshare(bed.bootstrap, None, tmp_path / "kshare" / "config.toml")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(KSHARE), "consume", "-t", topic, "-g", group, "--max-messages", "1"]
        + bed.kshare_args(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=process_env({**kshare.environment(), "NO_COLOR": "1"}),
        close_fds=True,
    )
    os.close(follower)
    screen = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed: the process ended
                    break
                if not chunk:
                    break
                screen += chunk
            elif process.poll() is not None:
                break
        assert process.wait(timeout=30) == 0, screen
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    joining = f"joining group {group}\u2026".encode()
    assert screen.index(joining) < screen.index(b"\r\x1b[K") < screen.index(b"r-00000")
    assert screen.count(joining) == 1
    assert b"Processed a total of 1 messages" in screen
