"""The exporter's ``/metrics`` body is prometheus_client's own text, byte for byte.

``MetricsPage`` writes the per-share-partition and per-group families itself
(``large_families_text``: some 900,000 series at 10,000 groups x 10 partitions,
where building prometheus_client's families took most of a refresh); what it serves must
stay exactly what ``generate_latest`` gives for the same snapshot through
``SnapshotCollector``: label order and escaping, Go's float notation for large
offsets, empty families' headers, the time-lag family only with ``--time-lag``.
"""

from __future__ import annotations

from prometheus_client.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import GroupDescription, TopicPartition
from kshare_cli.render.metrics import MetricsPage, SnapshotCollector
from kshare_cli.services.exporter import ExporterSnapshot
from kshare_cli.services.health import Sample, evaluate_samples
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState

#: Names a label value must escape (a quote, a backslash, a newline) and non-ASCII text.
ODD_GROUP = 'odd "group" \\ with\nnewline, ünïcode'
ODD_TOPIC = 'topic"\\x'


def _snapshot(time_lags: bool) -> ExporterSnapshot:
    runs = (
        WindowRun(1_234_560, 1_234_561, WindowState.AVAILABLE, 3),
        WindowRun(1_234_562, 1_234_563, WindowState.ARCHIVING, 1),
        WindowRun(1_234_564, 1_234_564, WindowState.ARCHIVED, 5),
    )
    big = InFlightWindow(1_234_560, 0, runs, 1, 3, 0, 0)
    small = InFlightWindow(10, 0, (WindowRun(10, 11, WindowState.ACKNOWLEDGED, 1),), 1, 1, 0, 0)
    partitions = (
        # Offsets above a million: Go's notation (1.23456e+06), not Python's.
        PartitionInflight(ODD_TOPIC, 0, None, 1_234_560, 99_999_999, 98_765_439, "broker", big),
        PartitionInflight("plain", 1, None, 10, 20, 10, "broker", small),
        # Unknown figures are left out, not written as 0.
        PartitionInflight("plain", 2, None, None, None, None, None, None),
        PartitionInflight("plain", 3, None, -1, 0, 0, "broker", None),
    )
    description = GroupDescription(ODD_GROUP, "Stable", None, 3, 3, "simple")
    odd = GroupInflight(ODD_GROUP, description, partitions, None, 5).with_log_start_offsets(
        {TopicPartition("plain", 1): 11}  # one offset deleted: the "deleted" series
    )
    empty_description = GroupDescription("empty", "Empty", None, 1, 1, "simple")
    empty = GroupInflight("empty", empty_description, (), None)
    samples = (Sample(odd, 1.0), Sample(empty, 1.0))
    lags = {(ODD_GROUP, ODD_TOPIC, 0): 12.5, ("empty", "plain", 7): 1e-7} if time_lags else {}
    return ExporterSnapshot(
        samples=samples,
        report=evaluate_samples(samples),
        refreshed_at=1_795_000_000.25,
        refreshed_monotonic=5.0,
        refresh_seconds=3.5,
        refresh_errors=2,
        time_lags=lags,
        group_errors={ODD_GROUP: 1, "empty": 0},
        group_read_at={ODD_GROUP: 1_795_000_000.25, "empty": 1_794_999_990.0},
        broker_errors={(1, "127.0.0.1:9092"): 3},
    )


def _reference(snapshot: ExporterSnapshot) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: snapshot, "prod", lambda: 7.0))
    return generate_latest(registry)


def test_the_body_is_generate_latests_text_byte_for_byte() -> None:
    for time_lags in (False, True):
        snapshot = _snapshot(time_lags)
        page = MetricsPage(lambda snapshot=snapshot: snapshot, "prod", lambda: 7.0)
        page.publish()
        body = page.body()
        assert body == _reference(snapshot)
        assert (b"kshare_share_partition_lag_seconds" in body) is time_lags
        assert b'state="deleted"' in body
        assert b"9.9999999e+07" in body  # the end offset, in Go's notation
        assert b'group="odd \\"group\\" \\\\ with\\nnewline' in body


def test_a_snapshot_without_share_partitions_keeps_the_empty_families() -> None:
    snapshot = ExporterSnapshot()
    page = MetricsPage(lambda: snapshot, "prod", lambda: 7.0)
    page.publish()
    assert page.body() == _reference(snapshot)
    assert b"# TYPE kshare_share_partition_max_delivery_count gauge\n" in page.body()
