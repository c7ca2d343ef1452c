"""Records/s produced and share-consumed (with acknowledgement) through the sandbox,
beside the same figures on librdkafka's mock cluster, measured in the same run.

Run: ``.venv/bin/python benchmarks/sandbox_throughput.py [--records N]``.

The sandbox runs in its own process (``kshare sandbox --port 0``), as an operator
would run it, so the client's and the broker's Python never share a GIL. The
share consumer's time to first record (joining the group) and its steady-state
rate (first record to last) are separate figures: mixed, the join hides the rate.
The target (issue 2) is at least 20,000 records/s share-consumed on the sandbox.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import _repo  # noqa: F401 -- puts the repository root on sys.path for tests.support
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from tests.support.rdkafka_mock import RdkafkaMockCluster


@dataclass(frozen=True)
class Figures:
    produce_rate: float
    first_record_s: float
    consume_rate: float
    consumed: int


def produce(bootstrap: str, topic: str, records: int) -> float:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000}
    )
    payload = b"x" * 64
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=payload, key=str(i).encode(), partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0
    return records / (time.perf_counter() - started)


def share_consume(bootstrap: str, topic: str, group: str, records: int) -> tuple[float, float, int]:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    started = time.perf_counter()
    first = last = 0.0
    seen = 0
    deadline = started + 300
    while seen < records and time.perf_counter() < deadline:
        batch = consumer.poll(1.0)
        for message in batch:
            if message.error() is not None:
                continue
            if seen == 0:
                first = time.perf_counter()
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            seen += 1
        last = time.perf_counter()
    consumer.close()
    rate = (seen - 1) / (last - first) if seen > 1 and last > first else 0.0
    return first - started, rate, seen


def earliest(bootstrap: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ConfigResource.Type.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def measure(bootstrap: str, create: Callable[[str], None], prepare: Callable[[str], None],
            records: int) -> Figures:  # fmt: skip
    topic, group = f"bench-{time.time_ns()}", f"bench-g-{time.time_ns()}"
    create(topic)
    prepare(group)
    produce_rate = produce(bootstrap, topic, records)
    first, rate, seen = share_consume(bootstrap, topic, group, records)
    return Figures(produce_rate, first, rate, seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()

    with RdkafkaMockCluster(broker_count=1) as mock:
        mock.set_sharegroup_auto_offset_reset("earliest")
        mock_figures = measure(
            mock.bootstrap_servers,
            lambda topic: mock.create_topic(topic, 1),
            lambda group: None,
            args.records,
        )

    process = subprocess.Popen(
        [sys.executable, "-m", "kshare_cli", "sandbox", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()

        def create(topic: str) -> None:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                future.result(30)

        sandbox_figures = measure(
            bootstrap, create, lambda group: earliest(bootstrap, group), args.records
        )
    finally:
        process.terminate()
        process.wait(30)

    print(f"records: {args.records} (64-byte values, one partition)")
    print(f"{'':28}{'produce rec/s':>16}{'first record s':>16}{'share-consume rec/s':>22}")
    for name, figures in (
        ("librdkafka mock cluster", mock_figures),
        ("kshare sandbox", sandbox_figures),
    ):
        print(
            f"{name:28}{figures.produce_rate:>16,.0f}{figures.first_record_s:>16.2f}"
            f"{figures.consume_rate:>22,.0f}"
            + ("" if figures.consumed == args.records else f"  (only {figures.consumed})")
        )
    ratio = (
        sandbox_figures.consume_rate / mock_figures.consume_rate if mock_figures.consume_rate else 0
    )
    print(f"sandbox / mock, share-consume steady state: {ratio:.2f}")
    target = 20_000
    verdict = "meets" if sandbox_figures.consume_rate >= target else "misses"
    print(f"sandbox share-consume target {target:,} rec/s: {verdict}")


if __name__ == "__main__":
    main()
