"""Test beds for ``kshare consume``: librdkafka's mock cluster, a fast sandbox, or a real cluster.

Every consume test runs against a broker it can only observe through clients:
records are produced with confluent-kafka's Producer, consumed with kshare's engine
or its console script, and what the broker did with them is read back by consuming
again (delivery counts) or with ``kshare describe`` where the bed answers admin RPCs.

The sandbox here is not the session's ``cluster`` fixture: that one keeps Kafka's
5-second heartbeat interval, and every consume run pays a heartbeat to join. This
one answers with 100 ms heartbeats, so a run joins in a fraction of a second. With
``KSHARE_TEST_BOOTSTRAP`` set, the real cluster is used instead (its joins are slow,
the assertions the same).

"Nothing came back" is never concluded from an idle timeout alone -- a slow join
would make that vacuous. :func:`drain` produces a sentinel record after the records
under test and consumes until the sentinel arrives: a share-partition hands out its
available records lowest offset first, so anything that was still available arrived
before or with it.
"""

from __future__ import annotations

import io
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kshare_cli.consumer.deserializers import make_deserializer
from kshare_cli.consumer.record_formatters import make_formatter
from kshare_cli.consumer.share_consume import ConsumeOptions, ConsumeResult, consume
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox import KEEP_OLD_RECORDS, read_properties
from tests.support.sandbox_thread import SandboxThread

FAST_HEARTBEAT_MS = 100
SENTINEL = b"--sentinel--"
#: The shortest wait a test gives a share consumer for its first record, idle timeouts
#: included (kshare's --timeout-ms, like Kafka's ConsoleShareConsumer.ConsumerWrapper.receive,
#: counts the join in the first wait). On Kafka the assignment comes with the second
#: ShareGroupHeartbeat, which librdkafka sends after the 5 s interval: 5.1 s to a first
#: record measured on Kafka 4.2.0, more on a loaded machine.
FIRST_RECORD_MS = 15_000


@dataclass(frozen=True)
class Record:
    """A record to produce: value, and optionally key, headers and a CreateTime."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None


@dataclass
class Bed:
    """Where to connect and how to set a topic and a group up, the same way on every bed."""

    name: str
    bootstrap: str
    client_config: dict[str, str] = field(default_factory=dict)
    mock: RdkafkaMockCluster | None = None
    admin_rpcs: bool = True  # the mock answers no DescribeShareGroupOffsets
    #: The sandbox serving the bed, for its fault controls (None on the mock or a real cluster).
    sandbox: SandboxThread | None = None

    def config(self, **extra: object) -> dict[str, object]:
        merged: dict[str, object] = {"bootstrap.servers": self.bootstrap}
        merged.update(self.client_config)
        merged.update(extra)
        return merged

    def names(self, prefix: str, partitions: int = 1) -> tuple[str, str]:
        """A new topic (created) and a new group (set to start at the earliest offset)."""
        suffix = uuid.uuid4().hex[:10]
        topic, group = f"{prefix}-{suffix}", f"{prefix}-g-{suffix}"
        self.create_topic(topic, partitions)
        self.prepare_group(group)
        return topic, group

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        if self.mock is not None:
            self.mock.create_topic(topic, partitions)
            return
        admin = AdminClient(self.config())
        # Records may carry the golden corpus's January 2026 CreateTimes: keep them.
        new = NewTopic(topic, partitions, 1, config=KEEP_OLD_RECORDS)
        for future in admin.create_topics([new]).values():
            future.result(30)

    def prepare_group(self, group: str) -> None:
        """``share.auto.offset.reset=earliest`` (the mock's fixture sets it cluster-wide)."""
        if self.mock is not None:
            return
        entry = ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
        admin = AdminClient(self.config())  # kept alive until the futures are done
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)

    def produce(
        self, topic: str, records: Sequence[Record], *, batch: int | None = None
    ) -> list[int]:
        """Produce to partition 0 in order; the offsets the broker gave, in order.

        ``batch`` caps records per produce request (the sandbox, like Kafka, acquires
        whole batches); the producer is closed before returning, before any share
        consumer of the test starts (the mock drops share sessions when any
        connection closes).
        """
        extra: dict[str, object] = {"linger.ms": 5}
        if batch is not None:
            extra.update({"batch.num.messages": batch, "linger.ms": 0})
        producer = Producer(self.config(**extra))
        offsets: dict[int, int] = {}
        failures: list[str] = []

        def delivered(index: int) -> Callable[[object, Any], None]:
            def report(error: object, message: Any) -> None:
                if error is not None:
                    failures.append(str(error))
                else:
                    offsets[index] = message.offset()

            return report

        for index, record in enumerate(records):
            producer.produce(
                topic,
                value=record.value,
                key=record.key,
                headers=list(record.headers) or None,
                timestamp=record.timestamp or 0,
                partition=0,
                on_delivery=delivered(index),
            )
            if batch is not None and index % batch == batch - 1:
                producer.flush(30)
        assert producer.flush(30) == 0
        assert not failures, failures
        return [offsets[index] for index in range(len(records))]

    def kshare_args(self, tmp_path: Path) -> list[str]:
        args = ["--bootstrap-server", self.bootstrap]
        if self.client_config:
            path = tmp_path / "bed-client.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in self.client_config.items()))
            args += ["--command-config", str(path)]
        return args


def values(count: int, prefix: str = "r") -> list[Record]:
    return [Record(f"{prefix}-{index:05d}".encode()) for index in range(count)]


@contextmanager
def sandbox_bed(**settings: Any) -> Iterator[Bed]:
    """A sandbox with fast heartbeats, or the real cluster ``KSHARE_TEST_BOOTSTRAP`` names."""
    real = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if real:
        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        yield Bed("cluster", real, read_properties(config_path) if config_path else {})
        return
    group_settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=FAST_HEARTBEAT_MS,
        share_min_heartbeat_interval_ms=FAST_HEARTBEAT_MS,
        **settings,
    )
    with SandboxThread(settings=group_settings) as sandbox:
        yield Bed("sandbox", sandbox.bootstrap, sandbox=sandbox)


def mock_bed(mock: RdkafkaMockCluster) -> Bed:
    return Bed("mock", mock.bootstrap_servers, mock=mock, admin_rpcs=False)


# --------------------------------------------------------------------------- consuming


class Captured(io.RawIOBase):
    """A binary sink that keeps what was written and can ask the run to stop on a line."""

    def __init__(self, stop: threading.Event | None = None, stop_on: bytes | None = None) -> None:
        super().__init__()
        self.data = bytearray()
        self._stop = stop
        self._stop_on = stop_on

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.data += chunk
        if self._stop is not None and self._stop_on is not None and self._stop_on in chunk:
            self._stop.set()
        return len(chunk)

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in bytes(self.data).splitlines()]


def consume_jsonl(
    bed: Bed,
    topic: str,
    group: str,
    *,
    sink: Any = None,
    stop: threading.Event | None = None,
    value_deserializer: str = "string",
    **options: Any,
) -> tuple[ConsumeResult, list[dict[str, Any]]]:
    """Run kshare's engine in-process with the jsonl formatter; the result and the lines."""
    captured = sink if sink is not None else Captured()
    formatter = make_formatter(
        "jsonl", {}, make_deserializer("string"), make_deserializer(value_deserializer)
    )
    result = consume(
        bed.config(),
        ConsumeOptions(topics=(topic,), group_id=group, **options),
        formatter,
        captured,
        stop=stop,
    )
    lines = captured.json_lines() if isinstance(captured, Captured) else []
    return result, lines


def drain(bed: Bed, topic: str, group: str, timeout_ms: int = 20_000) -> list[dict[str, Any]]:
    """Every record still available to ``group``, accepted now, up to a fresh sentinel.

    Returns the records before the sentinel (jsonl documents: offset, delivery_count...).
    """
    bed.produce(topic, [Record(SENTINEL)])
    stop = threading.Event()
    sink = Captured(stop, SENTINEL)
    result, lines = consume_jsonl(
        bed, topic, group, sink=sink, stop=stop, idle_timeout_ms=timeout_ms
    )
    assert result.error is None, result
    values_seen = [line["value"] for line in lines]
    assert SENTINEL.decode() in values_seen, f"the sentinel never came: {result}"
    return [line for line in lines if line["value"] != SENTINEL.decode()]
