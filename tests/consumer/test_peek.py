"""``peek_records``: the dashboard's look at a share-partition's records, acquiring nothing.

A share consumer cannot look without taking a record (acquiring it raises its
delivery count), so the peek is a plain consumer on ``assign()``. These tests
hold it to that: the share group's start offset and lag are the same before
and after a peek, a share consumer that joins later still gets every record
on its first delivery, and no group of the peek's appears on the cluster.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kshare_cli.admin.models import GroupOffsets
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.consumer.peek import peek_records
from kshare_cli.errors import ConnectionFailed, NotFound, UsageError
from kshare_cli.services.session import Session
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster
from tests.support.waiting import wait_for

TIMESTAMP_MS = 1_767_225_600_000


def _topic(cluster: Cluster, topic: str, records: int) -> None:
    admin = AdminClient(cluster.config())
    new = NewTopic(topic, 2, 1, config=KEEP_OLD_RECORDS)  # January 2026 records
    for future in admin.create_topics([new]).values():
        future.result(30)
    producer = Producer(cluster.config())
    for offset in range(records):
        producer.produce(
            topic,
            key=f"k{offset}".encode(),
            value=f"v{offset}".encode(),
            partition=1,
            timestamp=TIMESTAMP_MS + offset,
            headers=[("h", f"{offset}".encode())],
        )
    assert producer.flush(30) == 0


def _offsets(
    cluster: Cluster, group: str, directory: Path
) -> dict[int, tuple[int | None, int | None]]:
    """Start offset and lag per partition, as `kshare describe` reads them."""
    command_config = None
    if cluster.client_config:
        command_config = directory / "client.properties"
        command_config.write_text(
            "".join(f"{key}={value}\n" for key, value in cluster.client_config.items())
        )
    settings = resolve_settings(
        bootstrap=cluster.bootstrap, command_config=command_config, profile=None
    )

    async def describe() -> GroupOffsets:
        async with Session(settings, 15).admin() as admin:
            result = (await admin.list_share_partition_offsets([group])).get(group)
            assert isinstance(result, GroupOffsets), result
            return result

    offsets = asyncio.run(describe())
    return {each.partition: (each.start_offset, each.lag) for each in offsets.partitions}


def test_peek_reads_from_the_offset_in_order_up_to_the_limit(cluster: Cluster, unique: str) -> None:
    topic = f"peek-{unique}"
    _topic(cluster, topic, 6)
    records = peek_records(cluster.config(), topic, 1, 2, 3, timeout_s=10)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (2, b"k2", b"v2", TIMESTAMP_MS + 2),
        (3, b"k3", b"v3", TIMESTAMP_MS + 3),
        (4, b"k4", b"v4", TIMESTAMP_MS + 4),
    ]
    assert records[0].headers == (("h", b"2"),)
    assert {(r.topic, r.partition) for r in records} == {(topic, 1)}
    # The partition ends first: fewer records, and quickly (end of partition, not timeout).
    started = time.monotonic()
    assert [r.offset for r in peek_records(cluster.config(), topic, 1, 4, 10, 10)] == [4, 5]
    assert peek_records(cluster.config(), topic, 1, 6, 10, 10) == ()
    assert peek_records(cluster.config(), topic, 0, 0, 10, 10) == ()
    assert time.monotonic() - started < 9
    assert peek_records(cluster.config(), topic, 1, 0, 0, 10) == ()


def test_peeking_changes_nothing_for_the_share_group(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    topic = f"peek-share-{unique}"
    group = f"peek-share-{unique}"
    _topic(cluster, topic, 6)
    admin = AdminClient(cluster.config())
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[earliest])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    # Before any share consumer came: peeking is no member, so it cannot acquire anything.
    assert len(peek_records(cluster.config(), topic, 1, 0, 10, 10)) == 6

    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    deliveries: dict[int, int | None] = {}
    try:
        consumer.subscribe([topic])

        def all_delivered() -> bool:
            for message in consumer.poll(0.2):
                if message.error() is None:
                    offset = message.offset()
                    assert offset is not None
                    deliveries[offset] = message.delivery_count()
                    # Accept the first three, release the rest: a window with both states.
                    kind = AcknowledgeType.ACCEPT if offset < 3 else AcknowledgeType.RELEASE
                    consumer.acknowledge(message, kind)
            if deliveries:
                consumer.commit_sync(10)
            return len(deliveries) == 6

        wait_for(all_delivered, timeout=90, interval=0, what="the share consumer's records")
    finally:
        consumer.close()
    assert deliveries == dict.fromkeys(range(6), 1)  # the early peek acquired nothing

    def settled() -> dict[int, tuple[int | None, int | None]] | None:
        offsets = _offsets(cluster, group, tmp_path)
        return offsets if offsets.get(1, (None, None))[1] == 3 else None

    before = wait_for(settled, timeout=30, interval=0.2, what="lag 3 on partition 1")
    peeked = peek_records(cluster.config(), topic, 1, 0, 10, 10)
    assert [record.offset for record in peeked] == list(range(6))
    assert all(record.delivery_count is None for record in peeked)  # not a share delivery
    assert _offsets(cluster, group, tmp_path) == before

    listed = [group.group_id for group in admin.list_consumer_groups().result(30).valid]
    assert not [name for name in listed if name.startswith("kshare-peek-")]


def test_failures_are_kshare_errors(cluster: Cluster, unique: str) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        peek_records(cluster.config(), f"missing-{unique}", 0, 0, 5, timeout_s=2)
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match="127.0.0.1:1"):
        peek_records({"bootstrap.servers": "127.0.0.1:1"}, "t", 0, 0, 5, timeout_s=10)
    assert time.monotonic() - started < 5
    with pytest.raises(UsageError):
        peek_records(cluster.config(), "t", 0, -1, 5, timeout_s=2)
    with pytest.raises(UsageError):
        peek_records(cluster.config(), "t", 0, 0, -1, timeout_s=2)
