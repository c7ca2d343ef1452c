"""The exporter keeps what did not change since the last refresh, and reads anew what did.

At 10,000 groups a refresh's samples are some 400,000 objects that the stall history
keeps for a minute; built anew at every refresh, they crept pymalloc's arenas up by a
MiB every few minutes (``benchmarks/exporter.py --hour``). A refresh now keeps the
previous refresh's objects where its reading equals them. These tests hold both halves:
unchanged readings are the very same objects (so a refresh of a quiet cluster makes no
new long-lived ones), and a changed share-partition is never answered from the old one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.render.metrics import MetricsPage
from kshare_cli.services.exporter import Refresher, _sharing_unchanged
from kshare_cli.services.exporter_server import build_refresher
from kshare_cli.services.health import Sample, Thresholds
from kshare_cli.state.replay import StartOffsetMove
from kshare_cli.state.sources import TailingStateSource
from kshare_cli.state.window import InFlightWindow
from kshare_cli.wire.client import KafkaClient
from tests.support.records import create_topic, produce
from tests.support.sandbox import Cluster
from tests.support.share_offsets import alter_share_group_offsets
from tests.support.waiting import wait_for

RECORDS = {0: 3, 1: 3}
MORE = 2  # produced to partition 1 between refreshes


@pytest.fixture
def refresher(
    cluster: Cluster, unique: str, tmp_path: Path
) -> Iterator[tuple[Refresher, str, str]]:
    """A refresher of one empty group with start offsets 0 on a two-partition topic."""
    topic, group = f"sharing-{unique}", f"sharing-{unique}"
    create_topic(cluster, topic, partitions=len(RECORDS))
    produce(cluster, topic, RECORDS)
    settings = cluster.settings(tmp_path)

    async def make_group() -> None:
        async with await KafkaClient.connect(settings, timeout_s=30) as client:
            await alter_share_group_offsets(client, group, {topic: sorted(RECORDS)})

    asyncio.run(make_group())
    made: tuple[Refresher, TailingStateSource] = build_refresher(
        settings, [group], Thresholds(), 15.0, 30.0, lambda _: None
    )
    refresher, source = made
    try:
        yield refresher, topic, group
    finally:
        source.close()


def _sample(refresher: Refresher) -> Sample:
    (sample,) = refresher.snapshot.samples
    return sample


def _lag_lines(page: MetricsPage, topic: str) -> list[str]:
    return sorted(
        line
        for line in page.body().decode().splitlines()
        if line.startswith("kshare_share_partition_lag{") and f'topic="{topic}"' in line
    )


def test_a_refresh_of_an_unchanged_group_keeps_the_last_refreshs_objects(
    refresher: tuple[Refresher, str, str],
) -> None:
    exporter, _, _ = refresher
    asyncio.run(exporter.refresh())
    first, first_health = _sample(exporter), exporter.snapshot.report.groups
    asyncio.run(exporter.refresh())
    second, second_health = _sample(exporter), exporter.snapshot.report.groups
    assert second.taken_at > first.taken_at  # a new reading ...
    assert second.group is first.group  # ... that equals the last one: the same objects
    assert second.log_start_offsets is first.log_start_offsets
    assert len(second_health) == 1 and second_health[0] is first_health[0]


def test_a_changed_share_partition_is_read_anew_and_the_others_are_kept(
    cluster: Cluster, refresher: tuple[Refresher, str, str]
) -> None:
    exporter, topic, group = refresher
    page = MetricsPage(lambda: exporter.snapshot, "c")
    exporter.on_snapshot = page.publish
    asyncio.run(exporter.refresh())
    before = {each.partition: each for each in _sample(exporter).group.partitions}
    assert [before[p].lag for p in sorted(RECORDS)] == [RECORDS[0], RECORDS[1]]
    produce(cluster, topic, {1: MORE})  # an application's producer, as on a real cluster

    def lag_grew() -> dict[int, PartitionInflight] | None:
        asyncio.run(exporter.refresh())
        now = {each.partition: each for each in _sample(exporter).group.partitions}
        return now if now[1].lag == RECORDS[1] + MORE else None

    after = wait_for(lag_grew, timeout=30, what="partition 1's new records in the lag")
    assert after[0] is before[0]  # unchanged: kept
    assert after[1] is not before[1] and after[1].end_offset == RECORDS[1] + MORE
    assert _lag_lines(page, topic) == [
        f'kshare_share_partition_lag{{cluster_name="c",group="{group}",'
        f'partition="{partition}",topic="{topic}"}} {float(lag)}'
        for partition, lag in ((0, RECORDS[0]), (1, RECORDS[1] + MORE))
    ]


def _reading(moved_at_ms: int, lag: int) -> Sample:
    window = InFlightWindow(
        start_offset=3,
        delivery_complete_count=0,
        runs=(),
        snapshot_epoch=1,
        state_epoch=0,
        leader_epoch=0,
        write_timestamp=1_000,
        start_offset_moved=StartOffsetMove(at_ms=moved_at_ms, exact=True),
    )
    partitions = tuple(
        PartitionInflight("t", index, None, 3, 3 + lag, lag, None, window) for index in (0, 1)
    )
    return Sample(GroupInflight("g", None, partitions, None), taken_at=1.0)


def test_a_window_that_moved_at_another_time_is_not_shared_though_it_compares_equal() -> None:
    """A window's ``start_offset_moved`` is outside its equality (two replays of the same
    state may know the move to different precision), so it is compared apart."""
    earlier = _reading(moved_at_ms=500, lag=2)
    (same,) = _sharing_unchanged([_reading(moved_at_ms=500, lag=2)], [earlier])
    assert isinstance(same, Sample) and same.group is earlier.group
    (moved,) = _sharing_unchanged([_reading(moved_at_ms=900, lag=2)], [earlier])
    assert isinstance(moved, Sample) and moved.group == earlier.group  # equal, yet ...
    moves = [p.window and p.window.start_offset_moved for p in moved.group.partitions]
    assert moves == [StartOffsetMove(at_ms=900, exact=True)] * 2  # ... the reading's own move
