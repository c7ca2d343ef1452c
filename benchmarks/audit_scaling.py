"""The audit pipeline on 1,000,000 state records: local[1] against local[2], and one process.

Run: ``.venv/bin/python benchmarks/audit_scaling.py [--records 1000000]
[--share-partitions 16] [--rounds 2] [--standalone] [--master spark://...]``
(10,000,000 records: ``--records 10000000``).

Why: the audit exists for the day one machine is not enough, so a Spark core
must do a fair share of what one Python process replaying the state topic
does (issue 29: at least half the single-process replay's records/s per
core), and the audit must scale with cores -- ``local[2]`` at least 1.6 times
as fast as ``local[1]`` where two plain processes gain 1.8 (issue 7).

What is measured: decode + replay and decode + deliveries, the
per-share-partition passes the audit jobs run (``replay_states`` -- the
timeline's base -- and ``deliveries`` -- the deliveries and archived jobs'
base; each decodes the group's records, chosen in Spark by key bytes, in one
Python function per share-partition), on the same records in every session:
as an audit of the state topic runs them (each input partition a whole
state-topic partition, which each Python worker splits by share-partition:
``whole_state_partitions``), and, as "grouped", as an audit of a capture
does (Spark's exchange and sort by share-partition). The replay gives the
state after every record (the timeline needs each), the single-process
baseline only the final state.

What is not measured: the broker. The records are generated here as a
share coordinator writes them (``ShareCoordinatorState``: an initial
snapshot per share-partition, then updates that acknowledge, release with
rising delivery counts and archive batches while the start offset trails,
folded into a snapshot every 500 updates as Kafka does), encoded with
``state.records.encode_record``, and written as Parquet files in exactly
the shape the "kshare-kafka" source yields (key, value, topic,
partition, offset, timestamp; each share-partition in the state-topic
partition Kafka would put it in; one file, and so one task, per state-topic
partition, as the audit's read of the topic gives them). Reading them
through the sandbox instead would measure the sandbox -- one Python process
serving Fetch -- and not the pipeline.

How: in rounds. Each round measures how much faster two plain Python
processes run than one (the most local[2] can gain at that moment: the
machines this runs on are shared), then the baseline -- ``decode_record`` +
``ShareStateReplayer.apply`` over the same records in this process --, then
each master in a fresh session of its own process (local[1], local[2],
``--standalone``'s cluster of one master and two one-core workers started
here, ``--master``), warmed up by ``--warmups`` passes of each transform
over all files (JVM, Python workers, imports; the JVM's JIT compiler works
through several passes: after one, a measured local[1] pass still spent
0.6-1.2 s of JIT compilation on the second core, which is what local[2]
needs, and local[2]/local[1] read 1.30 where two warm-up passes give
1.56), then ``--passes`` measured passes of each transform over all files,
forced with Spark's ``noop`` sink (everything computed, nothing
collected); the session's median, then the median over the rounds.
Records/s per core is a master's rate over the cores it runs tasks on, set
beside the baseline's rate of the same rounds. For local masters it also
prints the cores the session kept busy (CPU seconds of its JVM and Python
workers over the wall time) and the JVM's and the Python workers' CPU
seconds apart (a figure other load on the machine distorts less than the
wall): what the JVM spends beside a busy Python worker is what bounds
local[2]'s gain on a two-core machine (local[1] keeping 1 + j cores busy
leaves local[2] at most 2 / (1 + j)). Shuffle partitions are 2x the
share-partitions and adaptive coalescing is off, so each share-partition's
grouped pass is its own task and two cores can share them evenly.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from kshare_cli.sandbox.share_coordinator_state import ShareCoordinatorState
from kshare_cli.state.partitioning import DEFAULT_STATE_PARTITIONS, state_partition_for
from kshare_cli.state.records import (
    DeliveryState,
    StateBatch,
    StateRecord,
    decode_record,
    encode_record,
)
from kshare_cli.state.replay import SharePartitionKey, ShareStateReplayer

GROUP = "orders-workers"
BASE_MS = 1_767_225_600_000
TARGET_RATIO = 1.6
TARGET_CEILING = 1.8
TARGET_PER_CORE = 0.5
# (name, pass, whole_state_partitions): as an audit of the state topic runs each pass, then
# as an audit of a capture does (grouped by Spark).
TRANSFORMS = (
    ("decode+replay", "replay", True),
    ("decode+deliveries", "deliveries", True),
    ("grouped replay", "replay", False),
    ("grouped deliveries", "deliveries", False),
)
MAIN = ("decode+replay", "decode+deliveries")


def generate(
    records: int, share_partitions: int
) -> Iterator[tuple[SharePartitionKey, StateRecord]]:
    """The coordinator's records, interleaved across share-partitions as it writes them.

    Yielded as they are made: 10,000,000 records kept as objects would take
    more memory than the machines this runs on have (their encoded bytes fit)."""
    coordinator = ShareCoordinatorState(updates_per_snapshot=500, clock=lambda: BASE_MS)
    chooser = random.Random(7)
    topics = [uuid.UUID(int=topic + 1) for topic in range(4)]
    keys = [
        SharePartitionKey(GROUP, topics[index % len(topics)], index // len(topics))
        for index in range(share_partitions)
    ]
    made = 0

    def append(
        key: SharePartitionKey, record: StateRecord | None
    ) -> Iterator[tuple[SharePartitionKey, StateRecord]]:
        nonlocal made
        if record is not None:
            coordinator.apply(record)
            made += 1
            yield key, record

    for key in keys:
        yield from append(key, coordinator.initialize(key, state_epoch=1, start_offset=0))
    next_offset = dict.fromkeys(keys, 0)
    pending: dict[SharePartitionKey, list[tuple[int, int]]] = {key: [] for key in keys}
    while made < records:
        key = keys[made % share_partitions]
        first = next_offset[key]
        next_offset[key] += 10
        batches = [
            StateBatch(first, first + 5, DeliveryState.ACKNOWLEDGED, 1),
            StateBatch(first + 6, first + 7, DeliveryState.AVAILABLE, 1),
            StateBatch(first + 8, first + 8, DeliveryState.ACKNOWLEDGED, 1),
            StateBatch(first + 9, first + 9, DeliveryState.ARCHIVED, 1),
        ]
        # Records released before come back: acknowledged, released again, or archived.
        for offset, count in pending[key][:4]:
            outcome = chooser.random()
            if outcome < 0.6 or count >= 4:
                state = DeliveryState.ACKNOWLEDGED if outcome < 0.9 else DeliveryState.ARCHIVED
                batches.append(StateBatch(offset, offset, state, count + 1))
            else:
                batches.append(StateBatch(offset, offset, DeliveryState.AVAILABLE, count + 1))
                pending[key].append((offset, count + 1))
        # Four come back per write and two join: the window stays a few dozen offsets wide.
        pending[key] = pending[key][4:] + [(first + 6, 1), (first + 7, 1)]
        batches.sort(key=lambda batch: batch.first_offset)
        start = min((offset for offset, _ in pending[key]), default=first + 10)
        current = coordinator.state(key)
        assert current is not None
        yield from append(
            key,
            coordinator.write(
                key,
                start_offset=start if start > current.start_offset else -1,
                delivery_complete_count=8,
                leader_epoch=0,
                state_epoch=1,
                state_batches=batches,
            ),
        )


def write_parquet(
    log: Iterable[tuple[SharePartitionKey, StateRecord]], directory: Path
) -> list[tuple[bytes, bytes | None]]:
    """The records as the Kafka source's columns, a file per state-topic partition (one row
    group each: Spark reads a row group in one task, so a file is never split); returns
    each record's key and value bytes, in log order, for the single-process baseline."""
    offsets: dict[int, int] = {}
    columns: dict[str, list[Any]] = {
        name: [] for name in ("key", "value", "topic", "partition", "offset", "timestamp")
    }
    encoded: list[tuple[bytes, bytes | None]] = []
    for index, (key, record) in enumerate(log):
        state_partition = state_partition_for(key, DEFAULT_STATE_PARTITIONS)
        offset = offsets.get(state_partition, 0)
        offsets[state_partition] = offset + 1
        record_key, record_value = encode_record(record)
        encoded.append((record_key, record_value))
        columns["key"].append(record_key)
        columns["value"].append(record_value)
        columns["topic"].append("__share_group_state")
        columns["partition"].append(state_partition)
        columns["offset"].append(offset)
        columns["timestamp"].append((BASE_MS + index) * 1000)
    table = pa.table(
        {
            "key": pa.array(columns["key"], pa.binary()),
            "value": pa.array(columns["value"], pa.binary()),
            "topic": pa.array(columns["topic"], pa.string()),
            "partition": pa.array(columns["partition"], pa.int32()),
            "offset": pa.array(columns["offset"], pa.int64()),
            "timestamp": pa.array(columns["timestamp"], pa.timestamp("us", tz="UTC")),
        }
    )
    partitions = table.column("partition")
    for partition in sorted(offsets):
        rows = table.filter(pc.equal(partitions, partition))
        pq.write_table(
            rows, directory / f"partition-{partition:02d}.parquet", row_group_size=rows.num_rows
        )
    return encoded


def single_process(encoded: list[tuple[bytes, bytes | None]]) -> float:
    """decode_record + ShareStateReplayer over the same records: seconds."""
    started = time.perf_counter()
    replayer = ShareStateReplayer()
    apply = replayer.apply
    for key, value in encoded:
        apply(decode_record(key, value))
    return time.perf_counter() - started


def run_master(
    master: str, directory: Path, share_partitions: int, warmups: int, passes: int
) -> dict[str, float]:
    """Seconds per transform in a fresh session of master, after warm-up passes.

    In a process of its own, so that each session starts its own JVM (a stopped
    session leaves the JVM and its settings behind for the next)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        timings: dict[str, float] = pool.apply(
            _run_master, (master, directory, share_partitions, warmups, passes)
        )
    return timings


def _run_master(
    master: str, directory: Path, share_partitions: int, warmups: int, passes: int
) -> dict[str, float]:
    from kshare_cli.pipeline.deliveries import deliveries
    from kshare_cli.pipeline.session import spark_session
    from kshare_cli.pipeline.timeline import replay_states

    spark = spark_session(
        master,
        app_name=f"kshare audit scaling {master}",
        config={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": str(2 * share_partitions),
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
            # A task per file, as the Kafka source reads a task per state-topic partition
            # (Spark would pack small files into one task).
            "spark.sql.files.openCostInBytes": str(1 << 30),
            "spark.driver.memory": "2g",
            "spark.executor.memory": "1g",
        },
        log_level="ERROR",
    )
    try:
        group = {GROUP}
        kinds: dict[str, Callable[..., Any]] = {"replay": replay_states, "deliveries": deliveries}

        def steps(path: str) -> dict[str, Callable[[], None]]:
            records = spark.read.parquet(path)
            frames = {
                name: kinds[kind](records, group_ids=group, whole_state_partitions=whole)
                for name, kind, whole in TRANSFORMS
            }
            return {name: functools.partial(_computed, frame) for name, frame in frames.items()}

        # Warm-up: the JVM's code paths (compiled while they run), Python workers, imports.
        for _ in range(warmups):
            for action in steps(str(directory)).values():
                action()
        measured: dict[str, list[float]] = {}
        for _ in range(passes):
            for name, action in steps(str(directory)).items():
                started = time.perf_counter()
                cpu, jvm = tree_cpu_seconds()
                action()
                measured.setdefault(name, []).append(time.perf_counter() - started)
                cpu_after, jvm_after = tree_cpu_seconds()
                measured.setdefault(f"{name} cpu", []).append(cpu_after - cpu)
                measured.setdefault(f"{name} jvm", []).append(jvm_after - jvm)
        return {name: statistics.median(values) for name, values in measured.items()}
    finally:
        spark.stop()


def _computed(frame: Any) -> None:
    """Every row of frame computed, nothing collected (Spark's noop sink)."""
    frame.write.format("noop").mode("overwrite").save()


def tree_cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process and all its descendants (the JVM Spark started and its
    Python workers, those it already reaped included), and of the JVM's own threads alone,
    from /proc: how many cores a local master really kept busy, and how many of them the
    JVM. Executors of a cluster are not descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    own: dict[int, float] = {}
    reaped: dict[int, float] = {}
    java: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        own[pid] = (int(fields[11]) + int(fields[12])) / tick
        reaped[pid] = (int(fields[13]) + int(fields[14])) / tick
        if stat[stat.index("(") + 1 : stat.rindex(")")] == "java":
            java.add(pid)
    total, jvm, todo = 0.0, 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += own.get(pid, 0.0) + reaped.get(pid, 0.0)
        if pid in java:
            jvm += own.get(pid, 0.0)
        todo += children.get(pid, [])
    return total, jvm


def _spin(_: int) -> int:
    total = 0
    for number in range(15_000_000):
        total += number
    return total


def _ready(_: int) -> None:
    time.sleep(0.2)


def machine_parallelism() -> float:
    """How much faster two plain Python processes finish two loops than one process: the
    most local[2] can gain on this machine right now (other load included)."""
    started = time.perf_counter()
    _spin(0)
    _spin(1)
    serial = time.perf_counter() - started
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_ready, [0, 1], chunksize=1)  # both workers started and imported
        started = time.perf_counter()
        pool.map(_spin, [0, 1], chunksize=1)
        parallel = time.perf_counter() - started
    return serial / parallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--share-partitions", type=int, default=16)
    parser.add_argument(
        "--rounds", type=int, default=2, help="local[1] then local[2], this many times"
    )
    parser.add_argument(
        "--warmups",
        type=int,
        default=2,
        help="passes of every transform over all files before any is measured (JIT, workers)",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=3,
        help="measured passes of every transform in each session; each session's median",
    )
    parser.add_argument(
        "--master",
        help="also measure this master (e.g. spark://host:7077; its workers must see this "
        "machine's temporary directory), in every round",
    )
    parser.add_argument(
        "--master-cores", type=int, default=2, help="the cores --master runs tasks on"
    )
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="also measure a standalone cluster started here: one master, two workers of one "
        "core each, on 127.0.0.1 (tests/pipeline/standalone.py)",
    )
    args = parser.parse_args()

    started = time.perf_counter()
    directory = Path(tempfile.mkdtemp(prefix="kshare-audit-scaling-"))
    with contextlib.ExitStack() as stack:
        masters = {"local[1]": 1, "local[2]": 2}
        if args.master:
            masters[args.master] = args.master_cores
        if args.standalone:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from tests.pipeline.standalone import standalone_cluster

            cluster = stack.enter_context(standalone_cluster(workers=2, cores_per_worker=1))
            masters[cluster.url] = 2
        samples: dict[str, list[dict[str, float]]] = {master: [] for master in masters}
        baselines: list[float] = []
        ceilings: list[float] = []
        try:
            encoded = write_parquet(generate(args.records, args.share_partitions), directory)
            size = sum(len(key) + len(value or b"") for key, value in encoded)
            print(
                f"{len(encoded):,} state records of {args.share_partitions} share-partitions "
                f"({size / 1e6:.0f} MB of keys and values), generated in "
                f"{time.perf_counter() - started:.0f} s"
            )
            for _ in range(args.rounds):
                ceilings.append(machine_parallelism())
                baselines.append(single_process(encoded))
                for master in masters:
                    samples[master].append(
                        run_master(
                            master, directory, args.share_partitions, args.warmups, args.passes
                        )
                    )
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    report(args, masters, samples, baselines, ceilings)


def report(
    args: argparse.Namespace,
    masters: dict[str, int],
    samples: dict[str, list[dict[str, float]]],
    baselines: list[float],
    ceilings: list[float],
) -> None:
    """The medians: records/s per core of each master and transform beside the replay's,
    and local[2]/local[1] beside what two plain processes gain."""
    count = args.records
    baseline = statistics.median(baselines)
    replay_rate = count / baseline
    results = {
        master: {name: statistics.median(run[name] for run in runs) for name in runs[0]}
        for master, runs in samples.items()
    }
    print(
        f"single process, decode_record + ShareStateReplayer (final states only): "
        f"{baseline:6.1f} s {replay_rate:>10,.0f} records/s (one core)"
    )
    print(
        f"medians of {args.rounds} rounds (each: the replay, then each master in a fresh "
        "session); per core: records/s over the master's cores, and against the replay's"
    )
    for name, _, _ in TRANSFORMS:
        for master, cores in masters.items():
            seconds = results[master][name]
            per_core = count / seconds / cores
            busy = ""
            if master.startswith("local"):
                cpu, jvm = results[master][f"{name} cpu"], results[master][f"{name} jvm"]
                busy = (
                    f"   {cpu / seconds:4.2f} cores busy (JVM {jvm:5.1f} s CPU, "
                    f"Python {cpu - jvm:5.1f} s)"
                )
            print(
                f"{name:<18} {master:<24} {seconds:6.1f} s {count / seconds:>10,.0f} rec/s   "
                f"per core {per_core:>9,.0f} rec/s = {per_core / replay_rate:4.2f} x the replay "
                f"(target >= {TARGET_PER_CORE}){busy}"
            )
        one, two = results["local[1]"][name], results["local[2]"][name]
        print(f"{name:<18} local[2]/local[1] {one / two:4.2f}")
    total_one = sum(results["local[1]"][name] for name in MAIN)
    total_two = sum(results["local[2]"][name] for name in MAIN)
    print(
        f"decode+replay+deliveries  local[1] {total_one:6.1f} s   local[2] {total_two:6.1f} s   "
        f"ratio {total_one / total_two:4.2f} (target >= {TARGET_RATIO} where two processes "
        f"gain >= {TARGET_CEILING})"
    )
    ceiling = statistics.median(ceilings)
    print(
        "two plain Python processes against one on this machine during the rounds: "
        + ", ".join(f"{each:.2f}x" for each in ceilings)
        + " (the most local[2] can gain here)"
    )
    print(
        f"local[2]/local[1] against two plain processes' gain: {total_one / total_two:4.2f} / "
        f"{ceiling:4.2f} = {total_one / total_two / ceiling:4.2f} of what this machine allows "
        f"(the target's share: {TARGET_RATIO} / {TARGET_CEILING} = "
        f"{TARGET_RATIO / TARGET_CEILING:4.2f})"
    )


if __name__ == "__main__":
    main()
