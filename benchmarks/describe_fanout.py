"""Wall time and round trips of ``describe --all-groups`` for 100 and for 1,000 share groups.

Run: ``.venv/bin/python benchmarks/describe_fanout.py [--sizes 100,1000] [--runs 5]
[--baseline-runs 2] [--cluster-groups 1000] [--only-cluster]``.

Why: issue 3 asks that describing every group scale with the number of coordinators,
not of groups (one ShareGroupDescribe per coordinator, one ListOffsets per partition
leader), so ten times the groups must cost at most three times the wall time. Issue
15 adds that Kafka 4.2 serves the groups of one DescribeShareGroupOffsets one after
the other (112 groups in one request: 2.40 s; 112 one-group requests: 0.11 s), so
kshare now sends one group per request, concurrently, and the sandbox makes each
further group of a request wait Kafka's measured 2.40 s / 112 (its default
``summary_read_wait_s``). The baseline, measured in the same run on the same
sandbox, is the old batching: one DescribeShareGroupOffsets per coordinator with
all its groups (``list_share_partition_offsets(..., groups_per_request=None)``).
For scale, Kafka's own ``kafka-share-groups.sh --describe --all-groups`` took
1.42 s for 112 groups, and kshare with the old batching 2.87 s (DESIGN.md).

How: for each size a fresh sandbox runs in its own process (``kshare sandbox
--port 0``), so the client's and the broker's Python never share a GIL. The groups
are made through the protocol with kshare's own ``KafkaClient``: a
ShareGroupHeartbeat join (member epoch 0, subscribed to the topic) and leave
(member epoch -1) leave each group Empty, then AlterShareGroupOffsets (which
needs an Empty group) gives it a start offset on every partition of a
3-partition topic. The setup is checked (every group listed, Empty, with an
offset per partition) before anything is timed.

Each measurement opens a fresh client (connect included: a user waits for it)
and does what the CLI does for ``describe --all-groups``: (a) the default
offsets view, ``all_group_ids()`` then ``list_share_partition_offsets(ids)``,
(b) the members/state view, ``all_group_ids()`` then ``describe_groups(ids)``, and
(c) the offsets view with the old batching (the baseline: ``--baseline-runs`` runs,
fewer by default since at 1,000 groups each waits 999 x 21 ms). The median (and
min) of ``--runs`` runs is printed with the client process's CPU time (the rest of
the wall time is the sandbox's) and round trips (handshakes included), then the
ratios largest size / smallest size and a linear fit (fixed ms + us per group)
through the two sizes, and the baseline's time over the new. The real CLI, ``kshare describe
--all-groups`` with ``-o json`` and with the default ``-o table``, is also timed
end to end once per size (process start included). ``--profile`` adds a
cProfile of the offsets view at the largest size. Last, the three-node bed (issue
16): ``--cluster-groups`` groups (1,000) on ``kshare sandbox --brokers 3``, spread
by Kafka's hash over the three nodes' coordinators, the same views timed the same
way, beside the one-node figures of that size.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    CREATE_TOPICS,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.sandbox.share import KAFKA_SUMMARY_READ_WAIT_S
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.cluster import BrokerNode

TOPIC = "fanout"
PARTITIONS = 3
#: Groups set up concurrently: enough to overlap round trips, few enough to stay polite.
SETUP_BATCH = 100
#: The target of issue 3: 10x the groups in at most 3x the time.
TARGET_TIME_RATIO = 3.0
#: How the sandbox is started (a module constant, so an experiment can swap in a patched one).
SANDBOX_COMMAND = [sys.executable, "-m", "kshare_cli", "sandbox", "--port", "0"]
#: DESIGN.md / issue 15: Kafka 4.2's kafka-share-groups.sh --describe --all-groups for
#: 112 groups, and kshare's describe --all-groups with the old batching, same cluster.
KAFKA_TOOL_112_GROUPS_S = 1.42
KSHARE_BATCHED_112_GROUPS_S = 2.87


@dataclass(frozen=True)
class Measured:
    median_ms: float
    min_ms: float
    #: The client process's CPU time (median); the rest of the wall time is the sandbox's.
    client_cpu_ms: float
    round_trips: int


@dataclass(frozen=True)
class SizeFigures:
    groups: int
    setup_s: float
    offsets: Measured
    describe: Measured
    #: The offsets view with one DescribeShareGroupOffsets per coordinator (the baseline).
    batched: Measured
    cli_json_ms: float
    cli_table_ms: float
    #: The CLI processes' CPU time and peak resident set (MiB), -o json and -o table.
    cli_json_cpu_ms: float = 0.0
    cli_table_cpu_ms: float = 0.0
    cli_json_peak_mib: float = 0.0
    cli_table_peak_mib: float = 0.0


class Sandbox:
    """``kshare sandbox --port 0 [OPTIONS]`` in its own process; stdout's first line: the bootstrap.

    ``brokers`` above 1 starts a cluster (``--brokers N``): the first line then lists
    every node's address, a bootstrap list.
    """

    def __init__(self, brokers: int = 1, options: Sequence[str] = ()) -> None:
        extra = [*(["--brokers", str(brokers)] if brokers > 1 else []), *options]
        self._process = subprocess.Popen(
            [*SANDBOX_COMMAND, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._process.stdout is not None
        self.bootstrap = self._process.stdout.readline().strip()
        if not self.bootstrap:
            self.close()
            raise RuntimeError("the sandbox printed no bootstrap address")

    def close(self) -> None:
        self._process.terminate()
        self._process.wait(30)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def settings_for(bootstrap: str) -> ConnectionSettings:
    servers = tuple(server for server in bootstrap.split(",") if server)
    return ConnectionSettings(bootstrap_servers=servers, client_id="describe-fanout")


def member_id() -> str:
    """Kafka's Uuid.toString(), as Java share consumers make their member ids."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


# -- setup -------------------------------------------------------------------------


async def create_topic(client: KafkaClient) -> None:
    _, response = await client.request(
        CREATE_TOPICS,
        {
            "topics": [
                {
                    "name": TOPIC,
                    "num_partitions": PARTITIONS,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 30_000,
            "validate_only": False,
        },
    )
    codes = [int(topic.error_code) for topic in response.topics]
    assert codes == [0], f"CreateTopics answered {codes}"
    client.forget_metadata()


async def make_group(client: KafkaClient, group_id: str, node: int) -> None:
    """Join and leave (an Empty share group), then give it a start offset per partition."""
    member = member_id()
    _, joined = await client.request(
        SHARE_GROUP_HEARTBEAT,
        {
            "group_id": group_id,
            "member_id": member,
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": [TOPIC],
        },
        node=node,
    )
    assert int(joined.error_code) == 0, f"{group_id}: join answered {joined.error_code}"
    _, left = await client.request(
        SHARE_GROUP_HEARTBEAT,
        {
            "group_id": group_id,
            "member_id": joined.member_id or member,
            "member_epoch": -1,
            "rack_id": None,
            "subscribed_topic_names": None,
        },
        node=node,
    )
    assert int(left.error_code) == 0, f"{group_id}: leave answered {left.error_code}"
    _, altered = await client.request(
        ALTER_SHARE_GROUP_OFFSETS,
        {
            "group_id": group_id,
            "topics": [
                {
                    "topic_name": TOPIC,
                    "partitions": [
                        {"partition_index": p, "start_offset": 0} for p in range(PARTITIONS)
                    ],
                }
            ],
        },
        node=node,
    )
    assert int(altered.error_code) == 0, f"{group_id}: alter answered {altered.error_code}"
    codes = {int(p.error_code) for t in altered.responses for p in t.partitions}
    assert codes == {0}, f"{group_id}: alter partitions answered {codes}"


async def setup_groups(bootstrap: str, groups: Sequence[str]) -> None:
    async with await KafkaClient.connect(settings_for(bootstrap), timeout_s=120) as client:
        await create_topic(client)
        coordinators = await client.find_coordinators(groups)
        for start in range(0, len(groups), SETUP_BATCH):
            batch = groups[start : start + SETUP_BATCH]
            nodes = []
            for group_id in batch:
                node = coordinators[group_id]
                assert isinstance(node, BrokerNode), f"{group_id}: {node}"
                nodes.append(node.node_id)
            await asyncio.gather(
                *(make_group(client, g, n) for g, n in zip(batch, nodes, strict=True))
            )


async def verify(bootstrap: str, groups: Sequence[str]) -> None:
    """Every group listed and Empty, with a start offset on every partition."""
    async with await KafkaClient.connect(settings_for(bootstrap), timeout_s=120) as client:
        admin = ShareGroupAdmin(client)
        listing = await admin.list_groups()
        assert listing.ok(), listing.errors()
        states = {group.group_id: group.state for group in listing}
        assert sorted(states) == sorted(groups), f"listed {len(states)} of {len(groups)} groups"
        assert set(states.values()) == {"Empty"}, set(states.values())
        offsets = await admin.list_share_partition_offsets(groups)
        assert offsets.ok() and not offsets.partition_errors(), offsets.errors()
        for group in offsets.succeeded():
            started = [p.start_offset for p in group.partitions]
            assert started == [0] * PARTITIONS, f"{group.group_id}: {started}"


# -- measurement -------------------------------------------------------------------


async def offsets_view(bootstrap: str, groups: int) -> int:
    """The default ``describe --all-groups``: every group's share-partition offsets."""
    client = await KafkaClient.connect(settings_for(bootstrap), timeout_s=120)
    try:
        admin = ShareGroupAdmin(client)
        ids = await admin.all_group_ids()
        result = await admin.list_share_partition_offsets(ids)
        assert len(result) == groups and result.ok(), (len(result), result.errors()[:3])
        return client.round_trips
    finally:
        await client.close()


async def offsets_batched_view(bootstrap: str, groups: int) -> int:
    """The baseline: the offsets view with all of a coordinator's groups in one request."""
    client = await KafkaClient.connect(settings_for(bootstrap), timeout_s=120)
    try:
        admin = ShareGroupAdmin(client)
        ids = await admin.all_group_ids()
        result = await admin.list_share_partition_offsets(ids, groups_per_request=None)
        assert len(result) == groups and result.ok(), (len(result), result.errors()[:3])
        return client.round_trips
    finally:
        await client.close()


async def describe_view(bootstrap: str, groups: int) -> int:
    """``describe --all-groups --members``/``--state``: every group's description."""
    client = await KafkaClient.connect(settings_for(bootstrap), timeout_s=120)
    try:
        admin = ShareGroupAdmin(client)
        ids = await admin.all_group_ids()
        result = await admin.describe_groups(ids)
        assert len(result) == groups and result.ok(), (len(result), result.errors()[:3])
        return client.round_trips
    finally:
        await client.close()


View = Callable[[str, int], Coroutine[Any, Any, int]]


def measure(view: View, bootstrap: str, groups: int, runs: int, warm_up: bool = True) -> Measured:
    if warm_up:
        asyncio.run(view(bootstrap, groups))  # imports, kio schema caches
    walls: list[float] = []
    cpus: list[float] = []
    trips: set[int] = set()
    for _ in range(runs):
        cpu = time.process_time()
        started = time.perf_counter()
        trips.add(asyncio.run(view(bootstrap, groups)))
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    assert len(trips) == 1, f"round trips varied between runs: {sorted(trips)}"
    return Measured(statistics.median(walls), min(walls), statistics.median(cpus), trips.pop())


@dataclass(frozen=True)
class CliRun:
    wall_ms: float
    cpu_ms: float
    peak_mib: float


def time_cli(bootstrap: str, groups: int, output: str) -> CliRun:
    """``kshare describe --all-groups -o OUTPUT`` end to end, process start included.

    The process's own CPU time and peak resident set come from ``wait4``'s rusage.
    """
    kshare = Path(sys.executable).with_name("kshare")
    command = [str(kshare), "describe", "--all-groups", "-b", bootstrap, "-o", output]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = (time.perf_counter() - started) * 1000
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    assert process.returncode == 0, stderr.decode()
    last = f"fanout-{groups - 1:05d}".encode()
    assert last in stdout, f"-o {output} did not show every group"
    cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000
    return CliRun(elapsed, cpu_ms, usage.ru_maxrss / 1024)


def profile(bootstrap: str, groups: int) -> str:
    """cProfile of one offsets view: the client's own functions, and its wait on the sandbox."""
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    asyncio.run(offsets_view(bootstrap, groups))
    profiler.disable()
    wall = time.perf_counter() - started
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    waited = sum(
        entry[2]  # tottime
        for (_, _, name), entry in stats.stats.items()  # type: ignore[attr-defined]
        if name == "<method 'poll' of 'select.epoll' objects>"
    )
    out.write(
        f"wall {wall * 1000:.0f} ms under the profiler, of which waiting in epoll (the "
        f"sandbox working, or the network) {waited * 1000:.0f} ms\n"
    )
    stats.sort_stats("cumulative").print_stats(r"kshare_cli|kio", 20)
    return out.getvalue()


def run_size(
    groups: int, runs: int, baseline_runs: int, want_profile: bool
) -> tuple[SizeFigures, str]:
    ids = [f"fanout-{index:05d}" for index in range(groups)]
    with Sandbox() as sandbox:
        started = time.perf_counter()
        asyncio.run(setup_groups(sandbox.bootstrap, ids))
        setup_s = time.perf_counter() - started
        asyncio.run(verify(sandbox.bootstrap, ids))
        offsets = measure(offsets_view, sandbox.bootstrap, groups, runs)
        described = measure(describe_view, sandbox.bootstrap, groups, runs)
        # No warm-up: the offsets view warmed the same code, and each run is long.
        batched = measure(
            offsets_batched_view, sandbox.bootstrap, groups, baseline_runs, warm_up=False
        )
        cli_json = time_cli(sandbox.bootstrap, groups, "json")
        cli_table = time_cli(sandbox.bootstrap, groups, "table")
        report = profile(sandbox.bootstrap, groups) if want_profile else ""
    figures = SizeFigures(
        groups,
        setup_s,
        offsets,
        described,
        batched,
        cli_json.wall_ms,
        cli_table.wall_ms,
        cli_json.cpu_ms,
        cli_table.cpu_ms,
        cli_json.peak_mib,
        cli_table.peak_mib,
    )
    return figures, report


@dataclass(frozen=True)
class ClusterFigures:
    """The three-node bed: the same views, the groups spread over every node's coordinator."""

    brokers: int
    groups: int
    setup_s: float
    #: Groups per coordinating node, as FindCoordinator placed them.
    per_coordinator: dict[int, int]
    offsets: Measured
    describe: Measured
    cli_json_ms: float


async def coordinator_spread(bootstrap: str, groups: Sequence[str]) -> dict[int, int]:
    async with await KafkaClient.connect(settings_for(bootstrap), timeout_s=120) as client:
        found = await client.find_coordinators(groups)
    spread: dict[int, int] = {}
    for node in found.values():
        assert isinstance(node, BrokerNode), node
        spread[node.node_id] = spread.get(node.node_id, 0) + 1
    return dict(sorted(spread.items()))


def run_cluster(brokers: int, groups: int, runs: int) -> ClusterFigures:
    """Issue 16: ``describe --all-groups`` over several coordinators (``--brokers N``).

    ListGroups goes to every node and DescribeShareGroupOffsets to each group's own
    coordinator, so the round trips grow by a handful of handshakes per node, and the
    wall time should stay near the one-node figure (the nodes answer in parallel).
    """
    ids = [f"fanout-{index:05d}" for index in range(groups)]
    with Sandbox(brokers) as sandbox:
        started = time.perf_counter()
        asyncio.run(setup_groups(sandbox.bootstrap, ids))
        setup_s = time.perf_counter() - started
        asyncio.run(verify(sandbox.bootstrap, ids))
        spread = asyncio.run(coordinator_spread(sandbox.bootstrap, ids))
        offsets = measure(offsets_view, sandbox.bootstrap, groups, runs)
        described = measure(describe_view, sandbox.bootstrap, groups, runs)
        cli_json_ms = time_cli(sandbox.bootstrap, groups, "json").wall_ms
    return ClusterFigures(brokers, groups, setup_s, spread, offsets, described, cli_json_ms)


def print_cluster(cluster: ClusterFigures, single: SizeFigures | None) -> None:
    spread = ", ".join(f"node {node}: {count}" for node, count in cluster.per_coordinator.items())
    print(
        f"\nThree-node bed (issue 16): kshare sandbox --brokers {cluster.brokers}, "
        f"{cluster.groups} groups over {len(cluster.per_coordinator)} coordinators ({spread}); "
        f"setup {cluster.setup_s:.1f} s"
    )
    print(f"{'view':>14} | {'median ms':>9}{'min':>8}{'cpu':>8}{'trips':>7} | one node ms / trips")
    for name, measured, alone in (
        ("offsets", cluster.offsets, None if single is None else single.offsets),
        ("describe", cluster.describe, None if single is None else single.describe),
    ):
        reference = "" if alone is None else f"{alone.median_ms:.1f} / {alone.round_trips}"
        print(
            f"{name:>14} | {measured.median_ms:>9.1f}{measured.min_ms:>8.1f}"
            f"{measured.client_cpu_ms:>8.1f}{measured.round_trips:>7} | {reference}"
        )
    print(f"{'CLI -o json':>14} | {cluster.cli_json_ms:>9.0f} (process start included)")


def ratio(large: float, small: float) -> float:
    return large / small if small else float("inf")


def print_ratios(small: SizeFigures, large: SizeFigures) -> None:
    scale = f"{large.groups}/{small.groups}"
    extra = large.groups - small.groups
    for name, a, b in (
        ("offsets view", small.offsets, large.offsets),
        ("describe view", small.describe, large.describe),
    ):
        time_ratio = ratio(b.median_ms, a.median_ms)
        trips_ratio = ratio(b.round_trips, a.round_trips)
        verdict = "meets" if time_ratio <= TARGET_TIME_RATIO else "misses"
        print(
            f"{name:15}{scale}: time {time_ratio:5.2f}x, round trips {trips_ratio:.2f}x "
            f"-> target <= {TARGET_TIME_RATIO:g}x time: {verdict}"
        )
        # Time = fixed + per-group x groups, through the two sizes: what the ratio hides.
        per_group = (b.median_ms - a.median_ms) / extra
        fixed = a.median_ms - per_group * small.groups
        per_group_cpu = (b.client_cpu_ms - a.client_cpu_ms) / extra
        if fixed < 0:
            print(
                f"{'':15}superlinear: more than {large.groups / small.groups:g}x the time for "
                f"{large.groups / small.groups:g}x the groups, so some per-group cost grows "
                f"with the group count (client CPU {per_group_cpu * 1000:.0f} us/group)"
            )
            continue
        print(
            f"{'':15}fit: {fixed:.1f} ms fixed + {per_group * 1000:.0f} us/group "
            f"(client CPU {per_group_cpu * 1000:.0f} us/group, the rest the sandbox's)"
        )
    for name, a_ms, b_ms in (
        ("CLI -o json", small.cli_json_ms, large.cli_json_ms),
        ("CLI -o table", small.cli_table_ms, large.cli_table_ms),
    ):
        print(f"{name:15}{scale}: time {ratio(b_ms, a_ms):5.2f}x (process start included)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100,1000", help="group counts, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per view and size")
    parser.add_argument(
        "--baseline-runs", type=int, default=2, help="timed runs of the old batching per size"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the largest size")
    parser.add_argument(
        "--cluster-groups",
        type=int,
        default=1000,
        help="groups on the three-node bed (--brokers 3); 0 skips it",
    )
    parser.add_argument("--only-cluster", action="store_true", help="run the three-node bed only")
    args = parser.parse_args(argv)
    if args.only_cluster:
        cluster = run_cluster(3, args.cluster_groups, args.runs)
        print_cluster(cluster, None)
        return
    sizes = sorted(int(size) for size in args.sizes.split(","))

    figures: list[SizeFigures] = []
    reports: list[str] = []
    for size in sizes:
        measured, report = run_size(
            size, args.runs, args.baseline_runs, args.profile and size == sizes[-1]
        )
        figures.append(measured)
        reports.append(report)

    print(
        f"describe --all-groups on the sandbox: a fresh sandbox process per size (one node), "
        f"a topic of {PARTITIONS} partitions,\nevery group Empty with {PARTITIONS} "
        f"share-partitions. In-process views: median (and min) of {args.runs} runs, a fresh "
        f"client each,\nconnect included; cpu = the client process's CPU time. CLI: one run, "
        f"process start included."
    )
    print(
        f"{'groups':>6}{'setup s':>8} | {'offsets ms':>10}{'min':>7}{'cpu':>7}{'trips':>6} | "
        f"{'describe ms':>11}{'min':>7}{'cpu':>7}{'trips':>6} | {'CLI json':>8}{'CLI table':>10}"
    )
    for f in figures:
        o, d = f.offsets, f.describe
        print(
            f"{f.groups:>6}{f.setup_s:>8.1f} | "
            f"{o.median_ms:>10.1f}{o.min_ms:>7.1f}{o.client_cpu_ms:>7.1f}{o.round_trips:>6} | "
            f"{d.median_ms:>11.1f}{d.min_ms:>7.1f}{d.client_cpu_ms:>7.1f}{d.round_trips:>6} | "
            f"{f.cli_json_ms:>8.0f}{f.cli_table_ms:>10.0f}"
        )
    print(
        f"\nDescribeShareGroupOffsets, the sandbox making each further group of a request "
        f"wait {KAFKA_SUMMARY_READ_WAIT_S * 1000:.1f} ms\n(Kafka 4.2: 2.40 s / 112 groups). "
        f"New: one group per request, concurrently. Baseline (same run, same sandbox): one "
        f"request\nper coordinator with all its groups, median (and min) of "
        f"{args.baseline_runs} runs."
    )
    print(
        f"{'groups':>6} | {'new ms':>8}{'trips':>6} | {'baseline ms':>11}{'min':>9}{'trips':>6}"
        f" | {'baseline / new':>14}"
    )
    for f in figures:
        o, b = f.offsets, f.batched
        print(
            f"{f.groups:>6} | {o.median_ms:>8.1f}{o.round_trips:>6} | "
            f"{b.median_ms:>11.1f}{b.min_ms:>9.1f}{b.round_trips:>6} | "
            f"{ratio(b.median_ms, o.median_ms):>13.1f}x"
        )
    print(
        f"reference (DESIGN.md, Kafka 4.2, 112 groups): kafka-share-groups.sh --describe "
        f"--all-groups {KAFKA_TOOL_112_GROUPS_S * 1000:.0f} ms; kshare describe --all-groups "
        f"with the old batching {KSHARE_BATCHED_112_GROUPS_S * 1000:.0f} ms"
    )
    print(
        "\nThe CLI processes (wait4): CPU and peak resident set; time per group (median wall "
        "/ groups), which stays flat if nothing grows faster than the group count"
    )
    print(
        f"{'groups':>6} | {'json cpu ms':>11}{'peak MiB':>9} | {'table cpu ms':>12}{'peak MiB':>9}"
        f" | {'per group us: offsets':>21}{'describe':>9}{'CLI json':>9}{'CLI table':>10}"
    )
    for f in figures:
        print(
            f"{f.groups:>6} | {f.cli_json_cpu_ms:>11.0f}{f.cli_json_peak_mib:>9.0f} | "
            f"{f.cli_table_cpu_ms:>12.0f}{f.cli_table_peak_mib:>9.0f} | "
            f"{f.offsets.median_ms * 1000 / f.groups:>21.0f}"
            f"{f.describe.median_ms * 1000 / f.groups:>9.0f}"
            f"{f.cli_json_ms * 1000 / f.groups:>9.0f}{f.cli_table_ms * 1000 / f.groups:>10.0f}"
        )
    if len(figures) >= 2:
        print_ratios(figures[0], figures[-1])
    if args.cluster_groups > 0:
        single = next((f for f in figures if f.groups == args.cluster_groups), None)
        print_cluster(run_cluster(3, args.cluster_groups, args.runs), single)
    for report in reports:
        if report:
            print(f"\ncProfile of the offsets view at {sizes[-1]} groups (client process):")
            print(report)


if __name__ == "__main__":
    main()
