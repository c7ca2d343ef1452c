"""The exporter's Prometheus view of an ``ExporterSnapshot``, and its index page.

Names follow kafka-lag-exporter and kminion: ``kshare_share_partition_*`` per
share-partition and ``kshare_share_group_*`` per group, labelled ``cluster_name``,
``group``, ``topic``, ``partition``; ``kshare_exporter_*`` for the refresher,
whose ``last_refresh_age_seconds`` tells a scraper how stale the rest is. The
per-broker series are labelled ``broker`` (the node id, as Kafka's ``node.id``
and kafka_exporter's ``id`` name it: what a query selects and joins on) and
``address`` (``host:port`` as the broker advertises it, for the reader), the
same broker kshare's messages name as ``broker 2 (host:port)``.
The collector builds the families from a snapshot (``MetricsPage`` renders each
snapshot once, in the refresh), so a scrape never waits on Kafka, and a figure
that is unknown (a lag the broker did not report, a window the state topic did
not give) is left out rather than written as 0.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from kshare_cli.services.exporter import ExporterSnapshot
from kshare_cli.services.health import Status

__all__ = ["METRICS", "MetricsPage", "SnapshotCollector", "index_page", "large_families_text"]

_PARTITION: Final = ("cluster_name", "group", "topic", "partition")
_GROUP: Final = ("cluster_name", "group")
_BROKER: Final = ("cluster_name", "broker", "address")

#: Every metric the exporter serves, with its help: the collector's and the index page's.
METRICS: Final = {
    "kshare_share_partition_lag": "Records of the share-partition not yet delivered and done.",
    "kshare_share_partition_lag_seconds": (
        "Age of the oldest record not yet acknowledged, at the last refresh (--time-lag)."
    ),
    "kshare_share_partition_start_offset": "The share-partition start offset (SPSO).",
    "kshare_share_partition_end_offset": "The log end offset of the partition.",
    "kshare_share_partition_records": "Records in the persisted in-flight window, by state.",
    "kshare_share_partition_max_delivery_count": "The highest delivery count in the window.",
    "kshare_share_group_lag": "The sum of the group's known share-partition lags.",
    "kshare_share_group_members": "Members of the share group.",
    "kshare_share_group_state": "The share group's state (Stable, Empty, ...), info-style.",
    "kshare_share_group_status": "kshare health's status of the group: 1 for the current one.",
    "kshare_share_group_dlq_records": (
        "Records the broker wrote to the group's dead-letter queue (Kafka 4.4), by reason "
        "(rejected, delivery_limit, other): counted since the exporter started, from what "
        "the DLQ topic held then."
    ),
    "kshare_share_group_dlq_last_record_timestamp_seconds": (
        "CreateTime of the newest record in the group's dead-letter queue (its write time)."
    ),
    "kshare_share_group_last_read_timestamp_seconds": (
        "When the group's figures were read; before the last refresh: kept, as it failed since."
    ),
    "kshare_exporter_refresh_seconds": "How long the last successful refresh took.",
    "kshare_exporter_refresh_errors": "Refreshes that failed as a whole.",
    "kshare_exporter_group_errors": "Refreshes that could not read the group (whole ones too).",
    "kshare_exporter_broker_errors": (
        "Refreshes in which the broker did not list its groups (every broker from 0)."
    ),
    "kshare_exporter_last_refresh_timestamp_seconds": "When the last refresh succeeded.",
    "kshare_exporter_last_refresh_age_seconds": (
        "Seconds since the last successful refresh, at scrape time: how old the figures are."
    ),
}

#: ``archiving``: Kafka 4.4's records on their way to the dead-letter queue (neither
#: delivered nor archived yet); ``deleted``: offsets below the log start offset the group
#: had not finished (retention deleted them), served only when the log start offset is known.
_WINDOW_STATES: Final = ("available", "acknowledged", "archiving", "archived")


class SnapshotCollector(Collector):
    """Serves whatever snapshot ``current`` returns at scrape time.

    ``clock`` is the monotonic clock the refresher stamps its snapshots with: the age
    is computed per scrape, so it keeps growing while the refreshes fail; without
    ``age`` it is left out (``MetricsPage`` adds it to a body rendered once). Without
    ``large`` the per-share-partition and per-group families are left out too
    (``MetricsPage`` writes them with ``large_families_text``).
    """

    def __init__(
        self,
        current: Callable[[], ExporterSnapshot],
        cluster_name: str,
        clock: Callable[[], float] = time.monotonic,
        *,
        age: bool = True,
        large: bool = True,
    ) -> None:
        self._current = current
        self._cluster = cluster_name
        self._clock = clock
        self._age = age
        self._large = large

    def collect(self) -> Iterator[Metric]:
        snapshot = self._current()
        cluster = self._cluster
        if self._large:
            yield from _share_partition_families(snapshot, cluster)
            yield from _group_families(snapshot, cluster)
        yield from _dead_letters(snapshot, cluster)
        yield from _exporter_families(snapshot, cluster)
        if self._age:
            yield from _age(snapshot, cluster, self._clock)


def _share_partition_families(snapshot: ExporterSnapshot, cluster: str) -> Iterator[Metric]:
    """The per-share-partition families (``share_partition_text`` writes the same text
    without building them)."""
    lag = _gauge("kshare_share_partition_lag", _PARTITION)
    start = _gauge("kshare_share_partition_start_offset", _PARTITION)
    end = _gauge("kshare_share_partition_end_offset", _PARTITION)
    records = _gauge("kshare_share_partition_records", (*_PARTITION, "state"))
    deliveries = _gauge("kshare_share_partition_max_delivery_count", _PARTITION)
    for sample in snapshot.samples:
        group = sample.group
        for partition in group.partitions:
            labels = [cluster, group.group_id, partition.topic, str(partition.partition)]
            if partition.lag is not None:
                lag.add_metric(labels, partition.lag)
            if partition.start_offset is not None and partition.start_offset >= 0:
                start.add_metric(labels, partition.start_offset)
            if partition.end_offset is not None:
                end.add_metric(labels, partition.end_offset)
            window = partition.window
            if window is not None:
                counts = (window.available, window.acknowledged, window.archiving, window.archived)
                for name, count in zip(_WINDOW_STATES, counts, strict=True):
                    records.add_metric([*labels, name], count)
                if partition.deleted is not None:
                    records.add_metric([*labels, "deleted"], partition.deleted)
                deliveries.add_metric(labels, window.max_delivery_count)
    yield lag
    if snapshot.time_lags:  # only with --time-lag: the page is unchanged without it
        seconds = _gauge("kshare_share_partition_lag_seconds", _PARTITION)
        for (group_id, topic, number), age in sorted(snapshot.time_lags.items()):
            seconds.add_metric([cluster, group_id, topic, str(number)], age)
        yield seconds
    yield from (start, end, records, deliveries)


def _group_families(snapshot: ExporterSnapshot, cluster: str) -> Iterator[Metric]:
    group_lag = _gauge("kshare_share_group_lag", _GROUP)
    members = _gauge("kshare_share_group_members", _GROUP)
    state = InfoMetricFamily(
        "kshare_share_group_state", METRICS["kshare_share_group_state"], labels=_GROUP
    )
    status = _gauge("kshare_share_group_status", (*_GROUP, "status"))
    for health in snapshot.report.groups:
        labels = [cluster, health.group_id]
        if health.lag is not None:
            group_lag.add_metric(labels, health.lag)
        if health.members is not None:
            members.add_metric(labels, health.members)
        if health.state is not None:
            state.add_metric(labels, {"state": health.state})
        for each in Status:
            status.add_metric([*labels, each.value], 1 if health.status is each else 0)
    read_at = _gauge("kshare_share_group_last_read_timestamp_seconds", _GROUP)
    for group_id, stamp in sorted(snapshot.group_read_at.items()):
        read_at.add_metric([cluster, group_id], stamp)
    yield from (group_lag, members, state, status, read_at)


def _exporter_families(snapshot: ExporterSnapshot, cluster: str) -> Iterator[Metric]:
    if snapshot.refresh_seconds is not None:
        refresh = _gauge("kshare_exporter_refresh_seconds", ("cluster_name",))
        refresh.add_metric([cluster], snapshot.refresh_seconds)
        yield refresh
    errors = CounterMetricFamily(
        "kshare_exporter_refresh_errors",
        METRICS["kshare_exporter_refresh_errors"],
        labels=("cluster_name",),
    )
    errors.add_metric([cluster], snapshot.refresh_errors)
    yield errors
    if snapshot.group_errors:
        group_errors = CounterMetricFamily(
            "kshare_exporter_group_errors", METRICS["kshare_exporter_group_errors"], labels=_GROUP
        )
        for group_id, count in sorted(snapshot.group_errors.items()):
            group_errors.add_metric([cluster, group_id], count)
        yield group_errors
    if snapshot.broker_errors:
        broker_errors = CounterMetricFamily(
            "kshare_exporter_broker_errors",
            METRICS["kshare_exporter_broker_errors"],
            labels=_BROKER,
        )
        for (node_id, address), count in sorted(snapshot.broker_errors.items()):
            broker_errors.add_metric([cluster, str(node_id), address], count)
        yield broker_errors
    if snapshot.refreshed_at is not None:
        last = _gauge("kshare_exporter_last_refresh_timestamp_seconds", ("cluster_name",))
        last.add_metric([cluster], snapshot.refreshed_at)
        yield last


def share_partition_text(
    snapshot: ExporterSnapshot, cluster: str, label: _LabelText | None = None
) -> str:
    """The per-share-partition families as ``generate_latest`` writes them, byte for byte,
    without building a family (a ``Sample`` tuple and a label dict per series, sorted and
    escaped one by one): at 100,000 share-partitions, some 800,000 series a refresh.

    Labels go in ``generate_latest``'s order (sorted by name) and values through its
    ``floatToGoString``; only integers below a million take the short way, where the
    two agree.
    """
    label = label or _LabelText()
    prefix = f'{{cluster_name="{label(cluster)}",group="'
    lag: list[str] = []
    start: list[str] = []
    end: list[str] = []
    records: list[str] = []
    deliveries: list[str] = []
    for sample in snapshot.samples:
        group = sample.group
        of_group = prefix + label(group.group_id)
        for partition in group.partitions:
            where = f'{of_group}",partition="{partition.partition}'
            labels = f'{where}",topic="{label(partition.topic)}"}} '
            if partition.lag is not None:
                lag.append(f"kshare_share_partition_lag{labels}{_value(partition.lag)}\n")
            if partition.start_offset is not None and partition.start_offset >= 0:
                start.append(
                    f"kshare_share_partition_start_offset{labels}{_value(partition.start_offset)}\n"
                )
            if partition.end_offset is not None:
                end.append(
                    f"kshare_share_partition_end_offset{labels}{_value(partition.end_offset)}\n"
                )
            window = partition.window
            if window is None:
                continue
            topic = f'",topic="{label(partition.topic)}"}} '
            counts = (window.available, window.acknowledged, window.archiving, window.archived)
            for name, count in zip(_WINDOW_STATES, counts, strict=True):
                records.append(
                    f'kshare_share_partition_records{where}",state="{name}{topic}{_value(count)}\n'
                )
            if partition.deleted is not None:
                records.append(
                    f'kshare_share_partition_records{where}",state="deleted{topic}'
                    f"{_value(partition.deleted)}\n"
                )
            deliveries.append(
                f"kshare_share_partition_max_delivery_count{labels}"
                f"{_value(window.max_delivery_count)}\n"
            )
    parts = [_header("kshare_share_partition_lag"), *lag]
    if snapshot.time_lags:
        parts.append(_header("kshare_share_partition_lag_seconds"))
        for (group_id, topic, number), age in sorted(snapshot.time_lags.items()):
            parts.append(
                f"kshare_share_partition_lag_seconds{prefix}{label(group_id)}"
                f'",partition="{number}",topic="{label(topic)}"}} {_go_float(age)}\n'
            )
    for name, lines in (
        ("kshare_share_partition_start_offset", start),
        ("kshare_share_partition_end_offset", end),
        ("kshare_share_partition_records", records),
        ("kshare_share_partition_max_delivery_count", deliveries),
    ):
        parts.append(_header(name))
        parts.extend(lines)
    return "".join(parts)


def large_families_text(snapshot: ExporterSnapshot, cluster: str) -> str:
    """The per-share-partition and per-group families, as ``generate_latest`` writes them
    (see ``share_partition_text``)."""
    label = _LabelText()
    return share_partition_text(snapshot, cluster, label) + _group_text(snapshot, cluster, label)


def _group_text(snapshot: ExporterSnapshot, cluster: str, label: _LabelText) -> str:
    """``_group_families`` as text: five series a group for the status alone."""
    prefix = f'{{cluster_name="{label(cluster)}",group="'
    lag: list[str] = []
    members: list[str] = []
    state: list[str] = []
    status: list[str] = []
    for health in snapshot.report.groups:
        of_group = prefix + label(health.group_id)
        labels = f'{of_group}"}} '
        if health.lag is not None:
            lag.append(f"kshare_share_group_lag{labels}{_value(health.lag)}\n")
        if health.members is not None:
            members.append(f"kshare_share_group_members{labels}{_value(health.members)}\n")
        if health.state is not None:
            state.append(
                f'kshare_share_group_state_info{of_group}",state="{label(health.state)}"}} 1.0\n'
            )
        for each in Status:
            value = "1.0" if health.status is each else "0.0"
            status.append(
                f'kshare_share_group_status{of_group}",status="{label(each.value)}"}} {value}\n'
            )
    read_at = [
        f'kshare_share_group_last_read_timestamp_seconds{prefix}{label(group_id)}"}} '
        f"{_go_float(stamp)}\n"
        for group_id, stamp in sorted(snapshot.group_read_at.items())
    ]
    return "".join(
        [
            _header("kshare_share_group_lag"),
            *lag,
            _header("kshare_share_group_members"),
            *members,
            _header("kshare_share_group_state", "_info"),
            *state,
            _header("kshare_share_group_status"),
            *status,
            _header("kshare_share_group_last_read_timestamp_seconds"),
            *read_at,
        ]
    )


class _LabelText:
    """Label values escaped as ``generate_latest`` escapes them, each text once."""

    def __init__(self) -> None:
        self._escaped: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        escaped = self._escaped.get(text)
        if escaped is None:
            escaped = text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
            self._escaped[text] = escaped
        return escaped


def _value(number: int) -> str:
    """``floatToGoString(number)``: an integer below a million is written ``N.0``."""
    if -1_000_000 < number < 1_000_000:
        return f"{number}.0"
    return _go_float(number)


def _go_float(number: float) -> str:
    return str(floatToGoString(number))  # type: ignore[no-untyped-call]


def _header(name: str, suffix: str = "") -> str:
    """A gauge family's HELP and TYPE lines (``suffix``: an info family's ``_info``)."""
    help_text = METRICS[name].replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name}{suffix} {help_text}\n# TYPE {name}{suffix} gauge\n"


def _dead_letters(snapshot: ExporterSnapshot, cluster: str) -> list[Metric]:
    """The DLQ series of the groups with a DLQ the broker writes to, whose topic was read;
    none at all when no group has one (the page is unchanged on Kafka 4.3 and older)."""
    records = CounterMetricFamily(
        "kshare_share_group_dlq_records",
        METRICS["kshare_share_group_dlq_records"],
        labels=(*_GROUP, "reason"),
    )
    newest = _gauge("kshare_share_group_dlq_last_record_timestamp_seconds", _GROUP)
    for sample in sorted(snapshot.samples, key=lambda each: each.group.group_id):
        queue = sample.dead_letters
        if queue is None or queue.topic is None or queue.records is None:
            continue
        labels = [cluster, queue.group_id]
        for reason, count in queue.reason_counts().items():
            records.add_metric([*labels, reason], count)
        if queue.newest_timestamp_ms is not None:
            newest.add_metric(labels, queue.newest_timestamp_ms / 1000.0)
    return [family for family in (records, newest) if family.samples]


def _age(snapshot: ExporterSnapshot, cluster: str, clock: Callable[[], float]) -> Iterator[Metric]:
    if snapshot.refreshed_monotonic is not None:
        age = _gauge("kshare_exporter_last_refresh_age_seconds", ("cluster_name",))
        age.add_metric([cluster], max(0.0, clock() - snapshot.refreshed_monotonic))
        yield age


class _AgeCollector(Collector):
    def __init__(
        self, current: Callable[[], ExporterSnapshot], cluster: str, clock: Callable[[], float]
    ) -> None:
        self._current, self._cluster, self._clock = current, cluster, clock

    def collect(self) -> Iterator[Metric]:
        return _age(self._current(), self._cluster, self._clock)


#: The page's gzip level, in the refresh: at 100,000 share-partitions (114 MB of text)
#: level 3 takes 0.18 s of CPU for 3.1 MB where level 6 took 0.60 s for 2.8 MB.
GZIP_LEVEL: Final = 3


class MetricsPage:
    """The ``/metrics`` body: rendered once per snapshot, in the refresh; only the age
    line per scrape.

    Rendering 10,000 share-partitions takes tens of milliseconds of CPU under the
    GIL (most of a second at 78,000 series); twenty scrapers rendering it each (a
    plain registry does) queue behind one another for seconds, and even one render
    on the first scrape after a refresh is that scrape's whole latency. The snapshot
    changes once per refresh, so its text does too: the refresher calls ``publish``
    right after it makes a snapshot, in its own thread, and a scrape only copies the
    last published bytes and adds the age, computed at scrape time. While a render
    runs, scrapes serve the previous body with the previous snapshot's age. Before
    anything is published the first scrape renders ``current()`` itself.

    The body is gzipped in the refresh too, for scrapers that accept it (Prometheus
    does): 8 MiB of text at 78,000 series is about a twentieth of that gzipped, and
    copying it to twenty scrapers at once was most of a scrape's time. The age line
    goes as a second gzip member, which gzip readers (Go's, Python's, curl's) join.
    """

    def __init__(
        self,
        current: Callable[[], ExporterSnapshot],
        cluster_name: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._current = current
        #: Renders of the snapshot's body so far (the tests' and the benchmark's count).
        self.renders = 0
        self._published: tuple[ExporterSnapshot, bytes, bytes] | None = None
        self._render_lock = threading.Lock()
        self._age_lock = threading.Lock()
        self._static = CollectorRegistry(auto_describe=False)
        self._static.register(
            SnapshotCollector(lambda: self._rendering, cluster_name, clock, age=False, large=False)
        )
        self._cluster = cluster_name
        self._rendering = ExporterSnapshot()
        self._age = CollectorRegistry(auto_describe=False)
        self._age.register(_AgeCollector(lambda: self._aged, cluster_name, clock))
        self._aged = ExporterSnapshot()

    def publish(self, snapshot: ExporterSnapshot | None = None) -> None:
        """Render ``snapshot`` (``current()`` when None) and serve it from now on."""
        if snapshot is None:
            snapshot = self._current()
        with self._render_lock:
            self._rendering = snapshot
            body = large_families_text(snapshot, self._cluster).encode() + generate_latest(
                self._static
            )
            self.renders += 1
            packed = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
            self._published = (snapshot, body, packed)

    def body(self, *, gzipped: bool = False) -> bytes:
        """The page as a scrape gets it; ``gzipped``: as gzip members, for Content-Encoding."""
        published = self._published
        if published is None:
            self.publish()
            published = self._published
            assert published is not None
        snapshot, body, packed = published
        with self._age_lock:
            self._aged = snapshot
            age = generate_latest(self._age)
        if gzipped:
            return packed + gzip.compress(age, compresslevel=1, mtime=0)
        return body + age


def _gauge(name: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, METRICS[name], labels=labels)


#: The counters among ``METRICS``: prometheus_client serves them with ``_total``.
_COUNTERS: Final = ("_errors", "_dlq_records")


def index_page(cluster_name: str) -> str:
    """``/``: what is served where, for someone who opened the port in a browser."""
    items = "".join(
        f"<li><code>{name}{'_total' if name.endswith(_COUNTERS) else ''}</code>: {text}</li>"
        for name, text in METRICS.items()
    )
    return (
        "<!doctype html><html><head><title>kshare exporter</title></head><body>"
        f"<h1>kshare exporter: {_escape(cluster_name)}</h1>"
        '<p><a href="/metrics">/metrics</a> (Prometheus) &middot; '
        '<a href="/healthz">/healthz</a></p>'
        f"<ul>{items}</ul></body></html>\n"
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
