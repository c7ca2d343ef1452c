"""``kshare exporter`` at scale: one refresh, scrape latency under load, memory over time.

Run: ``.venv/bin/python benchmarks/exporter.py [--groups 1000] [--partitions 10]
[--refreshes 240] [--scrapers 20] [--scrapes 25] [--hour]``.

Why: issue 18 asks that the exporter serve a large cluster from one process: a
refresh of 1,000 share groups and 10,000 share-partitions within 5 s (a third of
the default 15 s interval), a scrape's p99 under 50 ms with 20 scrapers at once
(scrapes never wait on Kafka, nor on rendering: the refresh does), and memory flat
across an hour of refreshes (240 at 15 s): a leak of a few kilobytes per
refresh is a restart every week.

How: a fresh sandbox runs in its own process (``kshare sandbox --port 0``, as
``describe_fanout.py`` starts it), so the exporter's Python never shares a GIL
with the broker's. The groups are made through the protocol with
``describe_fanout``'s helpers (a ShareGroupHeartbeat join and leave, then
AlterShareGroupOffsets on every partition of one topic of ``--partitions``
partitions) and checked before anything is timed. The refresher and the HTTP
server are the exporter's own (``exporter_server.build_refresher`` and
``make_server``), every group listed at each refresh as with ``--all-groups``.

Figures: the first refresh (it also reads the state topic from its start) and the
next one (the steady state: only what is new), wall time and this process's CPU,
each with its page rendered and gzipped as ``serve`` does after every refresh;
then ``--scrapers`` threads each fetching ``/metrics`` ``--scrapes`` times with
urllib, p50 and p99 (the exporter renders a snapshot once, in the refresh, as
``Refresher.on_snapshot`` calls ``MetricsPage.publish``, and every scrape until the
next refresh copies it and adds the age line), once plain and once with
``Accept-Encoding: gzip`` as Prometheus asks (the body gzipped in the refresh too);
the baseline is a plain
``prometheus_client`` registry of Gauges holding the very same series, served by
``start_http_server``, scraped the same way in the same run (the ratio is the
exporter's p99 over the baseline's); last,
``--refreshes`` back-to-back refreshes on one event loop (as ``Refresher.run`` does,
without the interval's wait), each followed by one ``/metrics`` body, with the
resident set size (``VmRSS`` from ``/proc/self/status``) sampled after every
refresh: its growth per refresh is the least-squares slope once the refresher's stall
history (the refreshes of the last ``--stall-after``, 60 s) is full, and from the tenth
refresh on at the earliest (the first ones fill caches).

Issue 29 takes it to 10,000 groups (100,000 share-partitions): a refresh under the
default 15 s interval, a gzip scrape's p99 under 100 ms, memory under 1 GiB and flat
over an hour; the targets printed are issue 18's up to 1,000 groups, issue 29's
above. Each refresh's figures include its round trips (requests the client sent,
by API) and the sandbox's own CPU beside the exporter's (the sandbox runs in its own
process: ``/proc/PID/stat``), so a loaded machine's figure can be read apart from the
broker emulator's share. ``--baseline`` also times a refresh's reads done one group
at a time (``InflightService.group`` for every group side by side, the exporter's
way before its reads were batched), in the same run, and prints the ratio.

``--bootstrap HOST:PORT`` measures a sandbox already running (``--sandbox-pid`` for
its CPU) instead of starting one: the groups are made only if none are listed, so
that several runs at 10,000 groups pay the setup (minutes) once.

``--hour``: only the memory figure, as an hour of production would give it: 240
refreshes at a 15 s interval, time-compressed (back to back, but the refresher's
stall history is kept on a simulated clock that advances 15 s per refresh, so it
holds the five refreshes that an hour at the real interval holds, not the
dozens that 65 real seconds of back-to-back refreshes hold). It prints the RSS
before the first refresh, after it, every 60 refreshes and at the end, and the
least-squares slope per refresh after the warm-up (the stall history full and
``WARM_REFRESHES`` done) and over the second half hour alone (the allocator's
arenas were still filling for some 60 refreshes in the first run), each against
the target. With each RSS line, and every ``--memory-detail`` refreshes, it prints
where the memory sits (``allocator_figures``: glibc's bytes in use and free,
pymalloc's arenas, the mappings' resident KiB by kind), which is how the creep of
session 18 was found to be pymalloc's arenas with the Python objects flat.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import collections
import contextlib
import ctypes
import gc
import math
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import Gauge, generate_latest, start_http_server
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

sys.path.insert(0, str(Path(__file__).resolve().parent))

import describe_fanout  # noqa: E402 -- beside this file, found through the path above

from kshare_cli.admin.models import TopicPartition  # noqa: E402
from kshare_cli.admin.share_groups import (
    EARLIEST_TIMESTAMP,  # noqa: E402
    ShareGroupAdmin,  # noqa: E402
)
from kshare_cli.errors import KshareError  # noqa: E402
from kshare_cli.kafka import api_keys  # noqa: E402
from kshare_cli.render.metrics import MetricsPage, SnapshotCollector, index_page  # noqa: E402
from kshare_cli.services.exporter import (  # noqa: E402
    OneStateReadPerRefresh,
    Refresher,
    StateReads,
)
from kshare_cli.services.exporter_server import (  # noqa: E402
    build_refresher,
    make_server,
    tune_gc,
)
from kshare_cli.services.health import Thresholds  # noqa: E402
from kshare_cli.services.session import Session  # noqa: E402
from kshare_cli.wire.client import KafkaClient  # noqa: E402

API_NAMES = {
    key: name for name, key in vars(api_keys).items() if isinstance(key, int) and name.isupper()
}

#: Issue 18's targets up to 1,000 groups; issue 29's (the interval itself, a gzip p99
#: under 100 ms, under 1 GiB resident) above.
REFRESH_TARGET_S = 5.0
SCRAPE_P99_TARGET_MS = 50.0
LARGE_GROUPS = 1000
LARGE_REFRESH_TARGET_S = 15.0
LARGE_SCRAPE_P99_TARGET_MS = 100.0
RSS_TARGET_MIB = 1024.0
#: "Flat": under this many KiB of resident memory per refresh (a MiB a day at 15 s).
GROWTH_TARGET_KIB = 0.2
#: Refreshes before the memory slope is measured: the first ones fill caches.
WARM_REFRESHES = 10
#: ``--hour``: the production interval it simulates, and how often it prints the RSS.
HOUR_INTERVAL_S = 15.0
HOUR_REFRESHES = round(3600 / HOUR_INTERVAL_S)
HOUR_PRINT_EVERY = 60
#: How far back the refresher keeps refreshes (``Thresholds().stall_after_s``, plus one
#: refresh's worth): memory may grow until then.
HISTORY_S = Thresholds().stall_after_s + 5.0
TIMEOUT_S = 120.0


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33+): sizes in bytes."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


#: A mapping's kind by its name in ``/proc/self/smaps`` (else a file's path, or "other").
_MAPPING_KINDS = {"[heap]": "heap", "": "anon"}


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse words the refusal)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def allocator_figures() -> str:
    """Where the resident memory sits, to tell a leak from an allocator keeping pages.

    glibc's malloc (``mallinfo2``: bytes in use, free inside its heaps, mmapped
    chunks), pymalloc's 1 MiB arenas (CPython 3.10+; ``sys._debugmallocstats``, which writes to
    the C stderr: read back through a temporary file), and the resident KiB of the
    process's mappings by kind (``/proc/self/smaps``: the brk heap, anonymous
    mappings, files). A growing "in use" is memory someone holds; a growing "free"
    with "in use" flat is the heap fragmenting; more arenas with Python blocks flat
    is pymalloc's fragmentation."""
    parts = []
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        parts.append(
            f"malloc in use {info.uordblks / 2**20:.1f} MiB, free in heaps "
            f"{info.fordblks / 2**20:.1f} MiB, mmapped {info.hblkhd / 2**20:.1f} MiB"
        )
    except (OSError, AttributeError):
        parts.append("malloc: no mallinfo2")
    with tempfile.TemporaryFile() as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(capture.fileno(), 2)
            sys._debugmallocstats()  # noqa: SLF001 -- CPython's own allocator report
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        for line in capture.read().decode(errors="replace").splitlines():
            if line.startswith("# arenas allocated current"):
                parts.append(f"pymalloc arenas {line.split('=')[1].strip()}")
    resident: collections.Counter[str] = collections.Counter()
    kind = ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:
            name = fields[5] if len(fields) > 5 else ""
            kind = _MAPPING_KINDS.get(name, "file" if name.startswith("/") else "other")
        elif fields and fields[0] == "Rss:":
            resident[kind] += int(fields[1])
    parts.append(
        "resident KiB "
        + ", ".join(f"{name} {resident[name]:,}" for name in ("heap", "anon", "file", "other"))
    )
    return "; ".join(parts)


def process_cpu_s(pid: int | None) -> float:
    """Another process's CPU seconds so far (user + system); 0 when unknown."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RequestCount:
    """Every request the exporter's clients send, by API (``KafkaClient._attempt`` is the
    one place a request leaves a client)."""

    def __init__(self) -> None:
        self.sent: collections.Counter[str] = collections.Counter()
        attempt = KafkaClient._attempt  # noqa: SLF001
        count = self.sent

        async def counted(self: KafkaClient, connection: Any, api_key: int, *rest: Any) -> Any:
            count[API_NAMES.get(api_key, str(api_key))] += 1
            return await attempt(self, connection, api_key, *rest)

        KafkaClient._attempt = counted  # type: ignore[method-assign]  # noqa: SLF001

    def taken(self) -> str:
        """The requests since the last call, most first; and forget them."""
        total = sum(self.sent.values())
        text = ", ".join(f"{name} {count}" for name, count in self.sent.most_common())
        self.sent.clear()
        return f"{total} requests ({text})"


def timed_refresh(
    refresher: Refresher, sandbox_pid: int | None = None
) -> tuple[float, float, float]:
    """One refresh on its own loop: wall seconds, this process's CPU seconds and the
    sandbox's."""
    cpu = time.process_time()
    theirs = process_cpu_s(sandbox_pid)
    started = time.perf_counter()
    asyncio.run(refresher.refresh())
    return (
        time.perf_counter() - started,
        time.process_time() - cpu,
        process_cpu_s(sandbox_pid) - theirs,
    )


def one_by_one(
    settings: Any, group_ids: Sequence[str], sandbox_pid: int | None, timeout_s: float
) -> tuple[float, float, float] | str:
    """The baseline: every group read on its own (``InflightService.group``), side by side
    after one batched FindCoordinator, then every log start offset in one ListOffsets per
    leader, with the exporter's state read: a refresh's reads before they were batched
    (less the delivery limits' batched lookup: each group asks its own). Wall, CPU, the
    sandbox's CPU; why, when it did not finish (a read timed out)."""
    session = Session(settings, timeout_s)

    async def read() -> None:
        async with session.admin() as admin:
            # One state read shared by every group, as the exporter's refreshes share it.
            state = OneStateReadPerRefresh(StateReads(session.tailing_state(group_ids)), timeout_s)
            service = session.inflight(admin, state)
            await admin.client.find_coordinators(group_ids)
            read = await asyncio.gather(
                *(service.group(each, log_start_offsets=False) for each in group_ids)
            )
            partitions = [
                TopicPartition(each.topic, each.partition)
                for group in read
                for each in group.partitions
            ]
            await admin.log_offsets(partitions, EARLIEST_TIMESTAMP)

    cpu = time.process_time()
    theirs = process_cpu_s(sandbox_pid)
    started = time.perf_counter()
    try:
        asyncio.run(session.bounded(read(), "reading the groups one by one"))
    except KshareError as error:  # a group's read timed out: the sandbox fell behind
        return str(error)
    finally:
        session.close()
    return (
        time.perf_counter() - started,
        time.process_time() - cpu,
        process_cpu_s(sandbox_pid) - theirs,
    )


def check(refresher: Refresher, groups: int, partitions: int) -> None:
    snapshot = refresher.snapshot
    assert snapshot.refresh_errors == 0, snapshot.last_error
    assert len(snapshot.samples) == groups, f"{len(snapshot.samples)} of {groups} groups sampled"
    found = sum(len(sample.group.partitions) for sample in snapshot.samples)
    assert found == groups * partitions, f"{found} share-partitions, not {groups * partitions}"


def scrape_latencies(
    url: str,
    scrapers: int,
    scrapes: int,
    *,
    gzipped: bool = False,
    failed: list[BaseException] | None = None,
) -> list[float]:
    """``scrapers`` threads, ``scrapes`` GETs each, all starting together: milliseconds.
    ``gzipped``: with ``Accept-Encoding: gzip``, as Prometheus scrapes (the body is
    read, not decompressed: Prometheus's side of the cost). ``failed``: where a
    scraper's failure (a timeout) goes instead of failing the run (the baseline, which
    at 100,000 share-partitions does not answer 20 scrapers within 60 s)."""
    headers = {"Accept-Encoding": "gzip"} if gzipped else {}
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(scrapers)
    failures: list[BaseException] = []

    def scraper() -> None:
        mine = []
        barrier.wait()
        try:
            for _ in range(scrapes):
                started = time.perf_counter()
                request = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()
                mine.append((time.perf_counter() - started) * 1000)
        except OSError as error:
            failures.append(error)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=scraper) for _ in range(scrapers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed is None:
        assert not failures, failures[:3]
    else:
        failed.extend(failures)
    return latencies


def percentiles(latencies: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return cuts[49], cuts[98]


def baseline_registry(text: str) -> tuple[CollectorRegistry, int]:
    """Plain Gauges holding every series of an exporter scrape; and how many series."""
    registry = CollectorRegistry(auto_describe=False)
    count = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = f"baseline_{sample.name}"
            labels = sorted(sample.labels)
            gauge = Gauge(name, family.documentation or name, labels, registry=registry)
            gauge.labels(**sample.labels).set(sample.value) if labels else gauge.set(sample.value)
            count += 1
            break
        rest = family.samples[1:]
        if rest:
            collector = registry._names_to_collectors[f"baseline_{family.samples[0].name}"]  # noqa: SLF001
            for sample in rest:
                if sample.name != family.samples[0].name:
                    continue
                assert isinstance(collector, Gauge)
                collector.labels(**sample.labels).set(sample.value)
                count += 1
    return registry, count


class SimulatedClock:
    """``--hour``'s clock for the stall history: an interval passes at every refresh,
    however long the refresh really took."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self) -> None:
        self.now += self.interval_s


async def refresh_many(
    refresher: Refresher,
    page: MetricsPage,
    count: int,
    clock: SimulatedClock | None = None,
    on_sample: Callable[[int, int], None] | None = None,
) -> list[tuple[int, float, int]]:
    """``count`` refreshes on one loop, each followed by a scrape's body: (refresh, seconds
    since the first began, RSS KiB); with ``clock``, the seconds are the simulated ones.

    The figures are kept in arrays allocated before the first refresh, as machine
    numbers: a list of (int, float, int) tuples grew the Python heap by four blocks a
    refresh, which ``--hour``'s block count then reported as the exporter's growth."""
    since_s = array.array("d", bytes(8 * count))
    rss_at = array.array("q", bytes(8 * count))
    began = time.monotonic()
    for index in range(count):
        await refresher.refresh()
        page.body()
        rss_at[index] = rss_kib()
        since_s[index] = time.monotonic() - began if clock is None else clock()
        if on_sample is not None:
            # A callback that collects garbage does it before this RSS.
            on_sample(index, rss_at[index])
        if clock is not None:
            clock.tick()
    samples = [(index, since_s[index], rss_at[index]) for index in range(count)]
    return samples


def slope(points: Sequence[tuple[int, int]]) -> float:
    xs = [float(x) for x, _ in points]
    ys = [float(y) for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def hour(
    refresher: Refresher, groups: int, partitions: int, detail_every: int = HOUR_PRINT_EVERY
) -> None:
    """``--hour``: 240 refreshes, the stall history on a clock that a 15 s interval
    advances at each, RSS printed as it goes (with ``allocator_figures`` every
    ``detail_every``); then the slope after the warm-up."""
    clock = SimulatedClock(HOUR_INTERVAL_S)
    refresher.history_clock = clock
    page = MetricsPage(lambda: refresher.snapshot, "bench")
    refresher.on_snapshot = page.publish  # as exporter_server.serve wires it
    # Preallocated (see ``refresh_many``): appending an int per refresh grew the count.
    blocks = array.array("q", bytes(8 * HOUR_REFRESHES))
    start = rss_kib()
    print(
        f"memory, an hour of refreshes simulated: {HOUR_REFRESHES} refreshes at "
        f"{HOUR_INTERVAL_S:g} s, back to back; RSS at start {start / 1024:.1f} MiB",
        flush=True,
    )

    def progress(index: int, rss: int) -> None:
        # The Python heap's live blocks, garbage collected: a leak of objects grows this
        # by its objects per refresh, where RSS moves by megabytes with the allocator.
        gc.collect()
        blocks[index] = sys.getallocatedblocks()
        done = index + 1
        if done == 1 or done % HOUR_PRINT_EVERY == 0:
            minutes = done * HOUR_INTERVAL_S / 60
            print(
                f"  after refresh {done:3d} (simulated {minutes:5.2f} min): "
                f"RSS {rss / 1024:.1f} MiB ({rss - start:+d} KiB since start), "
                f"{blocks[index]:,} Python blocks allocated",
                flush=True,
            )
        if done == 1 or done % detail_every == 0:
            print(f"    {allocator_figures()}", flush=True)

    began = time.perf_counter()
    points = asyncio.run(refresh_many(refresher, page, HOUR_REFRESHES, clock, progress))
    elapsed = time.perf_counter() - began
    check(refresher, groups, partitions)
    warm = next(
        index for index, since, _ in points if since > HISTORY_S and index >= WARM_REFRESHES
    )
    growth = slope([(index, rss) for index, _, rss in points[warm:]])
    half = HOUR_REFRESHES // 2
    late = slope([(index, rss) for index, _, rss in points[half:]])
    print(
        f"memory: {elapsed:.0f} s real for the simulated hour ({elapsed / HOUR_REFRESHES:.2f} s "
        f"a refresh); RSS {points[-1][2] / 1024:.1f} MiB at the end "
        f"({points[-1][2] - start:+d} KiB since start, "
        f"{points[-1][2] - points[warm][2]:+d} KiB since refresh {warm + 1}, the warm-up's end)"
    )
    print(
        f"memory: growth {growth:.2f} KiB per refresh after the warm-up "
        f"(least squares over refreshes {warm + 1}-{HOUR_REFRESHES}; target flat, < "
        f"{GROWTH_TARGET_KIB:g} KiB: {verdict(growth < GROWTH_TARGET_KIB)})"
    )
    print(
        f"memory: growth {late:.2f} KiB per refresh over the second half hour (refreshes "
        f"{half + 1}-{HOUR_REFRESHES}; target flat, < {GROWTH_TARGET_KIB:g} KiB: "
        f"{verdict(late < GROWTH_TARGET_KIB)}); RSS range there "
        f"{min(rss for _, _, rss in points[half:]) / 1024:.1f}-"
        f"{max(rss for _, _, rss in points[half:]) / 1024:.1f} MiB"
    )
    print(
        f"memory: peak RSS {peak_rss_mib():.0f} MiB (target < {RSS_TARGET_MIB:g} MiB: "
        f"{verdict(peak_rss_mib() < RSS_TARGET_MIB)})"
    )
    block_growth = slope(list(enumerate(blocks))[half:])
    print(
        f"memory: Python blocks allocated (after gc) over the second half hour: "
        f"{min(blocks[half:]):,}-{max(blocks[half:]):,}, growth {block_growth:.1f} per refresh "
        f"(a leak of one object per refresh is 1; flat: < 1: {verdict(block_growth < 1)})"
    )


async def listed(bootstrap: str) -> int:
    """How many share groups a running sandbox lists."""
    async with await KafkaClient.connect(
        describe_fanout.settings_for(bootstrap), timeout_s=TIMEOUT_S
    ) as client:
        return len((await ShareGroupAdmin(client).list_groups()).group_ids())


def profile(refresher: Refresher, groups: int, partitions: int, path: str) -> None:
    """``--profile``: the first refresh timed, the steady one under cProfile."""
    import cProfile
    import pstats

    page = MetricsPage(lambda: refresher.snapshot, "bench")
    refresher.on_snapshot = page.publish  # as exporter_server.serve wires it
    wall, cpu, _ = timed_refresh(refresher)
    check(refresher, groups, partitions)
    print(f"first refresh: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    profiler = cProfile.Profile()
    profiler.enable()
    wall, cpu, _ = timed_refresh(refresher)
    profiler.disable()
    profiler.dump_stats(path)
    check(refresher, groups, partitions)
    print(f"steady refresh (profiled, slower): {wall:.2f} s wall, {cpu:.2f} s CPU")
    pstats.Stats(path).sort_stats("cumulative").print_stats(40)
    pstats.Stats(path).sort_stats("tottime").print_stats(40)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10, help="partitions of the topic")
    parser.add_argument(
        "--refreshes", type=int, default=240, help="for the memory figure (0: none)"
    )
    parser.add_argument("--scrapers", type=int, default=20)
    parser.add_argument("--scrapes", type=int, default=25, help="per scraper")
    parser.add_argument(
        "--hour",
        action="store_true",
        help=f"only the memory figure, over {HOUR_REFRESHES} refreshes on a simulated "
        f"{HOUR_INTERVAL_S:g} s interval (an hour, time-compressed)",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="only the two refreshes, the steady one under cProfile, its statistics "
        "written to FILE (pstats) and the top functions printed",
    )
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT_S, help="a refresh's --timeout (seconds)"
    )
    parser.add_argument("--bootstrap", help="a sandbox already running, instead of a new one")
    parser.add_argument(
        "--sandbox-pid", type=int, help="with --bootstrap: its process, for its CPU"
    )
    parser.add_argument(
        "--memory-detail",
        type=positive_int,
        default=HOUR_PRINT_EVERY,
        metavar="N",
        help="--hour: print where the memory sits (malloc, pymalloc, mappings) every N refreshes",
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also time the reads one group at a time (the unbatched way), for the ratio",
    )
    args = parser.parse_args(argv)
    if args.hour:
        args.refreshes = HOUR_REFRESHES
    assert args.refreshes == 0 or args.refreshes > WARM_REFRESHES + 2, (
        f"--refreshes must be 0 (no memory figure) or above {WARM_REFRESHES + 2}"
    )
    groups = [f"fanout-{index:05d}" for index in range(args.groups)]
    describe_fanout.PARTITIONS = args.partitions
    with contextlib.ExitStack() as stack:
        if args.bootstrap:
            bootstrap, sandbox_pid = args.bootstrap, args.sandbox_pid
        else:
            sandbox = stack.enter_context(describe_fanout.Sandbox())
            bootstrap, sandbox_pid = sandbox.bootstrap, sandbox._process.pid  # noqa: SLF001
        started = time.perf_counter()
        if not args.bootstrap or not asyncio.run(listed(bootstrap)):
            asyncio.run(describe_fanout.setup_groups(bootstrap, groups))
        asyncio.run(describe_fanout.verify(bootstrap, groups))
        print(
            f"setup: {args.groups} share groups x {args.partitions} partitions = "
            f"{args.groups * args.partitions} share-partitions "
            f"in {time.perf_counter() - started:.1f} s (sandbox, own process)"
        )
        settings = describe_fanout.settings_for(bootstrap)
        requests = RequestCount()
        large = args.groups > LARGE_GROUPS
        refresh_target = LARGE_REFRESH_TARGET_S if large else REFRESH_TARGET_S
        scrape_target = LARGE_SCRAPE_P99_TARGET_MS if large else SCRAPE_P99_TARGET_MS
        refresher, source = build_refresher(
            settings, None, Thresholds(), 15.0, args.timeout, lambda line: print(line)
        )
        tune_gc()  # as exporter_server.serve does before its first refresh
        if args.hour:
            try:
                hour(refresher, args.groups, args.partitions, args.memory_detail)
            finally:
                source.close()
            return
        if args.profile:
            try:
                profile(refresher, args.groups, args.partitions, args.profile)
            finally:
                source.close()
            return
        # As exporter_server.serve wires it: each refresh renders its page (and gzips it).
        page = MetricsPage(lambda: refresher.snapshot, "bench")
        refresher.on_snapshot = page.publish
        try:
            first = timed_refresh(refresher, sandbox_pid)
            check(refresher, args.groups, args.partitions)
            first_requests = requests.taken()
            steady = timed_refresh(refresher, sandbox_pid)
            check(refresher, args.groups, args.partitions)
            steady_requests = requests.taken()
            for name, (wall, cpu, theirs), sent in (
                ("first refresh", first, first_requests),
                ("steady refresh", steady, steady_requests),
            ):
                print(
                    f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU (the sandbox: {theirs:.2f} s "
                    f"CPU) (target < {refresh_target:g} s: {verdict(wall < refresh_target)}); "
                    f"{sent}"
                )
            baseline = (
                one_by_one(settings, groups, sandbox_pid, args.timeout) if args.baseline else None
            )
            if isinstance(baseline, str):
                print(
                    f"baseline, the same reads one group at a time: did not finish ({baseline}); "
                    f"{requests.taken()}"
                )
            elif baseline is not None:
                wall, cpu, theirs = baseline
                print(
                    f"baseline, the same reads one group at a time: {wall:.2f} s wall, "
                    f"{cpu:.2f} s CPU (the sandbox: {theirs:.2f} s CPU); {requests.taken()}; "
                    f"ratio steady refresh/baseline: wall {steady[0] / wall:.2f}x, "
                    f"CPU {steady[1] / cpu:.2f}x"
                )
            print(
                f"peak RSS so far: {peak_rss_mib():.0f} MiB (target < {RSS_TARGET_MIB:g} MiB: "
                f"{verdict(peak_rss_mib() < RSS_TARGET_MIB)})",
                flush=True,
            )
            registry = CollectorRegistry(auto_describe=False)
            registry.register(SnapshotCollector(lambda: refresher.snapshot, "bench"))
            text = generate_latest(registry).decode()
            render = time.perf_counter()
            page.publish()  # what the refresh does after each snapshot: text and gzip
            render_ms = (time.perf_counter() - render) * 1000
            page.publish()
            server = make_server(("127.0.0.1", 0), page, refresher, 15.0, index_page("b"))
            threading.Thread(target=server.serve_forever, daemon=True).start()
            plain, series = baseline_registry(text)
            base_failures: list[BaseException] = []
            base_server, _ = start_http_server(0, addr="127.0.0.1", registry=plain)
            try:
                ours = scrape_latencies(
                    f"http://127.0.0.1:{server.server_address[1]}/metrics",
                    args.scrapers,
                    args.scrapes,
                )
                packed = scrape_latencies(
                    f"http://127.0.0.1:{server.server_address[1]}/metrics",
                    args.scrapers,
                    args.scrapes,
                    gzipped=True,
                )
                theirs = scrape_latencies(
                    f"http://127.0.0.1:{base_server.server_port}/metrics",
                    args.scrapers,
                    args.scrapes,
                    failed=base_failures,
                )
            finally:
                server.shutdown()
                server.server_close()
                base_server.shutdown()
                base_server.server_close()
            # The baseline's million Gauges (gigabytes at 10,000 groups) are not the
            # exporter's: gone before its memory is measured.
            text_kib = len(text) / 1024
            del plain, base_server, text, registry
            gc.collect()
            p50, p99 = percentiles(ours)
            base_p50, base_p99 = percentiles(theirs) if len(theirs) >= 2 else (math.nan,) * 2
            gz_p50, gz_p99 = percentiles(packed)
            print(
                f"series: {series} ({text_kib:.0f} KiB per scrape); "
                f"one render of the page, text and gzip (done in the refresh, not in a scrape): "
                f"{render_ms:.1f} ms"
            )
            print(
                f"scrape ({args.scrapers} scrapers x {args.scrapes}): p50 {p50:.1f} ms, "
                f"p99 {p99:.1f} ms (target p99 < {scrape_target:g} ms: "
                f"{verdict(p99 < scrape_target)})"
            )
            print(
                f"scrape with Accept-Encoding: gzip, as Prometheus asks: p50 {gz_p50:.1f} ms, "
                f"p99 {gz_p99:.1f} ms (target p99 < {scrape_target:g} ms: "
                f"{verdict(gz_p99 < scrape_target)})"
            )
            print(
                f"baseline, plain prometheus_client Gauges, same series: p50 {base_p50:.1f} ms, "
                f"p99 {base_p99:.1f} ms; ratio exporter/baseline: p50 {p50 / base_p50:.2f}x, "
                f"p99 {p99 / base_p99:.2f}x"
                + (
                    f"; {len(base_failures)} of {args.scrapers} baseline scrapers gave up "
                    f"({type(base_failures[0]).__name__}: {base_failures[0]}), their "
                    f"{len(theirs)} answered scrapes only"
                    if base_failures
                    else ""
                )
            )
            if not args.refreshes:
                return
            began = time.perf_counter()
            points = asyncio.run(refresh_many(refresher, page, args.refreshes))
            elapsed = time.perf_counter() - began
            check(refresher, args.groups, args.partitions)
            # The refresher keeps every refresh of the last --stall-after (60 s) for
            # the stall rule: memory rises until that history is full, by design.
            full = next(
                (
                    index
                    for index, since, _ in points
                    if since > HISTORY_S and index >= WARM_REFRESHES
                ),
                None,
            )
            print(
                f"memory over {args.refreshes} refreshes ({elapsed:.0f} s, "
                f"{elapsed / args.refreshes:.2f} s each): RSS {points[0][2] / 1024:.1f} MiB "
                f"after the first, {points[-1][2] / 1024:.1f} MiB at the end"
            )
            if full is None or len(points) - full < 5:
                print(
                    f"memory: too few refreshes after the stall history filled ({HISTORY_S:g} s"
                    "): give more --refreshes for the growth figure"
                )
            else:
                growth = slope([(index, rss) for index, _, rss in points[full:]])
                print(
                    f"memory: {points[full][2] / 1024:.1f} MiB at refresh {full} (stall history"
                    f" full), growth {growth:.2f} KiB per refresh from there (target flat, < "
                    f"{GROWTH_TARGET_KIB:g} KiB: {verdict(growth < GROWTH_TARGET_KIB)})"
                )
        finally:
            source.close()


if __name__ == "__main__":
    main()
