"""``kshare consume`` beside a bare confluent-kafka share-consumer loop, on librdkafka's mock.

Run: ``.venv/bin/python benchmarks/consume_throughput.py [--records 200000] [--rounds 1]
[--bed mock|sandbox]``.

Why: issue 5 asks that kshare's console share consumer keep librdkafka's speed:
a steady-state rate at least 0.85 of a bare poll-and-acknowledge loop measured in
the same run. For scale, on a real Kafka 4.2 broker on a machine like these the
bare loop streams 508,000 records/s after a 5.1 s join, and Kafka's Java
``kafka-console-share-consumer.sh`` 173,000 records/s after 1.5 s (DESIGN.md).

What: one mock broker, one partition, ``--records`` records of exactly
``--value-bytes`` bytes, produced first by a plain Producer that is gone before
any share consumer starts (the mock drops every share session on a broker when
any connection to it closes). They are lz4-compressed in batches of 500: the
mock keeps only 5 MB of batches per partition and silently drops older ones
(``mpart->max_size``), which 200,000 uncompressed 100-byte records overflow;
the check that the log still starts at offset 0 guards this. 500 is the share
consumer's ``max.poll.records``, so a fetch never decompresses records it was not
given. ``share.auto.offset.reset=earliest`` is set once, cluster-wide (the mock
has no per-group setter), before either group exists. Each client then drains
the topic with its OWN new group, in its own process (the mock stays in this
one, so neither client shares a GIL or a CPU account with it):

(a) bare: confluent-kafka's ShareConsumer in explicit acknowledgement mode,
    every record acknowledged ACCEPT as it is seen (this file, ``--bare-child``);
    it reports its own timestamps and CPU time.
(b) kshare: ``kshare consume --topic T --group G --format raw --timeout-ms MS``
    (default acknowledgement: accept, after the record was written), run twice
    (``--sinks``): stdout a file in tmpfs -- to kshare the same as the issue's
    ``> /dev/null``: write, flush, nothing to wait for -- whose size this process
    looks at every 0.5 ms; and stdout a pipe this process drains in 4 MiB reads
    (grown to 1 MiB). Through a pipe kshare counts a record as printed only once
    its reader took the bytes (kshare_cli/consumer/output.py), so it waits for
    the reader after each batch: the pipe figure includes that handshake.
    Records are counted by bytes: every value has the same size and ``raw``
    writes the values and nothing else. kshare's CPU time is read from /proc at
    the first and at the last record.

Figures, never mixed:
- first record after: from process start (interpreter and imports included, as
  a user waits for them) to the first record in hand; the join is most of it;
- steady state: the records after the first batch divided by the time from the
  first batch to the last record (a batch arrives at once, so the first batch's
  size is left out for both clients alike);
- CPU per record over that same span, every thread of the client process.
The target is the ratio of steady-state rates, kshare / bare >= 0.85. The
mock's ShareFetch costs time in proportion to the records still ahead of the
share-partition's start (its poll time falls from ~45 ms to ~3 ms over a run),
so on the mock both rates are mostly the mock's; the CPU per record is the
figure that shows what kshare itself adds. The first group ever to read the log
is served a third slower than every later one, so an unmeasured group drains it
first (``--no-warmup`` to skip). ``--bed sandbox`` runs the same comparison on
kshare's sandbox in its own process, which hands out whole producer batches as
Kafka does and so lets a client stream at hundreds of thousands of records/s:
there the rates are the clients' own.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import _repo  # noqa: F401 -- puts the repository root on sys.path for tests.support
import confluent_kafka
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

KSHARE = Path(sys.executable).with_name("kshare")
TARGET_RATIO = 0.85
PRODUCE_BATCH = 500  # the share consumer's max.poll.records default
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ on Linux; not exported by every Python
_READ_SIZE = 4 << 20
_PIPE_SIZE = 1 << 20
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_LOOK_S = 0.0005


@dataclass(frozen=True)
class Figures:
    first_record_s: float  # from process start to the first record in hand
    steady_rate: float  # records/s after the first batch
    cpu_us_per_record: float  # client CPU (all threads) per record after the first batch
    records: int
    first_batch: int  # records that arrived with the first one


def produce(bootstrap: str, topic: str, records: int, value_bytes: int) -> float:
    """Fill the topic; returns the producer's rate (records/s), for the record."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.num.messages": PRODUCE_BATCH,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    started = time.perf_counter()
    for index in range(records):
        value = b"%d" % index
        value += b"." * (value_bytes - len(value))
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("the mock did not take every record")
    rate = records / (time.perf_counter() - started)
    del producer  # closed before any share consumer starts (see the module docstring)
    watermarks = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    low, high = watermarks.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    watermarks.close()
    if (low, high) != (0, records):
        raise RuntimeError(f"the mock kept offsets {low}..{high} of 0..{records}: log too big")
    return rate


def bare_child(bootstrap: str, topic: str, group: str, records: int, idle_s: float) -> None:
    """(a), in its own process: prints its figures as one JSON line."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    seen = first_batch = 0
    first_wall = first = first_cpu = 0.0
    idle_since = time.perf_counter()
    acknowledge, accept = consumer.acknowledge, AcknowledgeType.ACCEPT
    while seen < records and time.perf_counter() - idle_since < idle_s:
        batch = consumer.poll(1.0)
        for message in batch:
            if message.error() is None:
                acknowledge(message, accept)
                seen += 1
        if batch:
            idle_since = time.perf_counter()
        if seen and not first_batch:
            first_wall, first, first_cpu = time.time(), time.perf_counter(), time.process_time()
            first_batch = seen
    last, last_cpu = time.perf_counter(), time.process_time()
    consumer.close()
    print(
        json.dumps(
            {
                "first_wall": first_wall,
                "steady_s": last - first,
                "steady_cpu_s": last_cpu - first_cpu,
                "records": seen,
                "first_batch": first_batch,
            }
        )
    )


def bare_loop(bootstrap: str, topic: str, group: str, records: int, idle_s: float) -> Figures:
    started = time.time()
    argv = [sys.executable, __file__, "--bare-child", bootstrap, topic, group, str(records)]
    completed = subprocess.run(
        [*argv, "--idle-ms", str(round(idle_s * 1000))],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the bare loop failed: {completed.stderr.strip()[-500:]}")
    result = json.loads(completed.stdout.splitlines()[-1])
    after_first = result["records"] - result["first_batch"]
    if result["records"] != records:
        raise RuntimeError(f"the bare loop saw {result['records']} of {records} records")
    return Figures(
        result["first_wall"] - started,
        _rate(after_first, result["steady_s"]),
        _per_record_us(result["steady_cpu_s"], after_first),
        result["records"],
        result["first_batch"],
    )


def kshare_command(bootstrap: str, topic: str, group: str, idle_ms: int) -> list[str]:
    return [
        str(KSHARE),
        "consume",
        "--topic",
        topic,
        "--group",
        group,
        "--format",
        "raw",
        "--timeout-ms",
        str(idle_ms),
        "--bootstrap-server",
        bootstrap,
    ]


def _cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid``, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def pipe_consumer(argv: list[str], records: int, value_bytes: int) -> Figures:
    """Run a consumer that writes ``value_bytes`` per record to a pipe; time it from outside."""
    expected = records * value_bytes
    started = time.time()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert process.stdout is not None
    descriptor = process.stdout.fileno()
    try:
        fcntl.fcntl(descriptor, _F_SETPIPE_SZ, _PIPE_SIZE)
    except OSError:
        pass  # the default 64 KiB pipe only makes the writer wait a little more often
    received = first_batch = 0
    first_wall = first = first_cpu = 0.0
    read = os.read
    while received < expected:
        chunk = read(descriptor, _READ_SIZE)
        if not chunk:
            break
        received += len(chunk)
        if not first_batch:
            first_wall, first = time.time(), time.perf_counter()
            first_cpu = _cpu_seconds(process.pid)
            first_batch = max(1, received // value_bytes)
    last = time.perf_counter()
    last_cpu = _cpu_seconds(process.pid) if process.poll() is None else first_cpu
    # The rest (the idle timeout, the summary line) is not measured.
    rest, errors = process.communicate(timeout=120)
    received += len(rest)
    if received != expected or process.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:2])} exited {process.returncode} after {received} of "
            f"{expected} bytes: {errors.decode(errors='replace').strip()[-500:]}"
        )
    after_first = received // value_bytes - first_batch
    return Figures(
        first_wall - started,
        _rate(after_first, last - first),
        _per_record_us(last_cpu - first_cpu, after_first),
        received // value_bytes,
        first_batch,
    )


def file_consumer(argv: list[str], records: int, value_bytes: int) -> Figures:
    """The same, with stdout a file in memory (tmpfs), watched by its size.

    To kshare a regular file is what ``> /dev/null`` is: written and flushed, no
    reader to wait for. Its size is looked at every half millisecond, which is the
    resolution of the two timestamps and costs the client nothing.
    """
    expected = records * value_bytes
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryFile(dir=directory, prefix="kshare-bench-") as output:
        started = time.time()
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.PIPE)
        size = first_batch = 0
        first_wall = first = first_cpu = 0.0
        descriptor = output.fileno()
        while size < expected and process.poll() is None:
            size = os.fstat(descriptor).st_size
            if size and not first_batch:
                first_wall, first = time.time(), time.perf_counter()
                first_cpu = _cpu_seconds(process.pid)
                first_batch = max(1, size // value_bytes)
            time.sleep(_LOOK_S)
        last = time.perf_counter()
        last_cpu = _cpu_seconds(process.pid) if process.poll() is None else first_cpu
        _, errors = process.communicate(timeout=120)
        size = os.fstat(descriptor).st_size
    if size != expected or process.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:2])} exited {process.returncode} after {size} of "
            f"{expected} bytes: {errors.decode(errors='replace').strip()[-500:]}"
        )
    after_first = size // value_bytes - first_batch
    return Figures(
        first_wall - started,
        _rate(after_first, last - first),
        _per_record_us(last_cpu - first_cpu, after_first),
        size // value_bytes,
        first_batch,
    )


def _rate(records: int, seconds: float) -> float:
    return records / seconds if seconds > 0 and records > 0 else 0.0


def _per_record_us(cpu_seconds: float, records: int) -> float:
    return cpu_seconds / records * 1e6 if records > 0 else 0.0


TestBed = tuple[str, Callable[[str], None], Callable[[str], None], str]


@contextmanager
def test_bed(kind: str) -> Iterator[TestBed]:
    """(bootstrap, create_topic, prepare_group, label) for the mock or the sandbox."""
    if kind == "mock":
        from tests.support.rdkafka_mock import RdkafkaMockCluster

        with RdkafkaMockCluster(broker_count=1) as mock:
            mock.set_sharegroup_auto_offset_reset("earliest")  # cluster-wide, for every group
            yield (
                mock.bootstrap_servers,
                lambda topic: mock.create_topic(topic, 1),
                lambda group: None,
                "librdkafka mock cluster, 1 broker",
            )
        return
    process = subprocess.Popen(
        [str(KSHARE), "sandbox", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        admin = AdminClient({"bootstrap.servers": bootstrap})

        def create_topic(topic: str) -> None:
            for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                future.result(30)

        def earliest(group: str) -> None:
            entry = ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
            resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
            for future in admin.incremental_alter_configs([resource]).values():
                future.result(30)

        yield bootstrap, create_topic, earliest, "kshare sandbox (own process; an emulator)"
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument(
        "--rounds", type=int, default=1, help="alternate bare and kshare this many times"
    )
    parser.add_argument(
        "--idle-ms",
        type=int,
        help=(
            "kshare consume --timeout-ms; the first wait includes the join "
            "(default: 3000 on the mock, 12000 on the sandbox, whose join is a 5 s heartbeat)"
        ),
    )
    parser.add_argument(
        "--warmup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="drain the topic once with an unmeasured group first (default: yes)",
    )
    parser.add_argument(
        "--bed",
        choices=("mock", "sandbox"),
        default="mock",
        help="librdkafka's mock cluster (the issue's bed), or kshare's sandbox in a process",
    )
    parser.add_argument(
        "--sinks",
        default="file,pipe",
        help="kshare's stdout: a file (as > /dev/null), a pipe read here, or both (default)",
    )
    parser.add_argument("--bare-child", nargs=4, metavar=("BOOTSTRAP", "TOPIC", "GROUP", "N"))
    args = parser.parse_args()
    if args.bare_child:
        bootstrap, topic, group, count = args.bare_child
        bare_child(bootstrap, topic, group, int(count), (args.idle_ms or 10_000) / 1000)
        return
    if args.idle_ms is None:
        args.idle_ms = 3000 if args.bed == "mock" else 12_000
    if args.value_bytes < len(str(args.records)):
        parser.error("--value-bytes must hold the record number")

    sinks = [sink for sink in args.sinks.split(",") if sink]
    if not sinks or set(sinks) - {"file", "pipe"}:
        parser.error("--sinks: file, pipe or file,pipe")
    results: dict[str, list[Figures]] = {"bare": []} | {f"kshare-{s}": [] for s in sinks}
    with test_bed(args.bed) as (bootstrap, create_topic, prepare_group, bed_label):
        topic = f"bench-consume-{time.time_ns()}"
        create_topic(topic)
        produce_rate = produce(bootstrap, topic, args.records, args.value_bytes)

        def bare(group: str) -> Figures:
            prepare_group(group)
            idle_s = max(args.idle_ms / 1000, 10.0)
            return bare_loop(bootstrap, topic, group, args.records, idle_s)

        def kshare(consumer: Callable[[list[str], int, int], Figures]) -> Callable[[str], Figures]:
            def run(group: str) -> Figures:
                prepare_group(group)
                argv = kshare_command(bootstrap, topic, group, args.idle_ms)
                return consumer(argv, args.records, args.value_bytes)

            return run

        consumers = {"file": file_consumer, "pipe": pipe_consumer}
        runners: dict[str, Callable[[str], Figures]] = {"bare": bare} | {
            f"kshare-{sink}": kshare(consumers[sink]) for sink in sinks
        }
        if args.warmup:
            # The mock serves the first group ever to read a log a third slower than every
            # later one: a group that is not measured reads it first.
            bare(f"bench-warmup-{time.time_ns()}")
        for round_number in range(args.rounds):
            for name, run in runners.items():
                results[name].append(run(f"bench-{name}-{round_number}-{time.time_ns()}"))

    librdkafka, librdkafka_number = confluent_kafka.libversion()
    client_version = confluent_kafka.version()
    if isinstance(client_version, tuple):  # (str, int) in older confluent-kafka releases
        client_version = client_version[0]
    print(
        f"confluent-kafka {client_version}, librdkafka {librdkafka} "
        f"(0x{librdkafka_number:08x}), Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"{bed_label}, 1 partition: {args.records:,} records of "
        f"{args.value_bytes} bytes (lz4, batches of {PRODUCE_BATCH}), produced at "
        f"{produce_rate:,.0f} records/s; each client in its own new group and process"
        + ("; drained once by an unmeasured group first" if args.warmup else "")
    )
    print()
    header = (
        f"{'client':<44}{'first record after':>20}{'steady state':>18}"
        f"{'CPU/record':>13}{'first batch':>13}"
    )
    print(header)
    print("-" * len(header))
    labels = {
        "bare": "bare ShareConsumer loop (explicit, ACCEPT)",
        "kshare-file": "kshare consume --format raw > file",
        "kshare-pipe": "kshare consume --format raw | reader",
    }
    for name, figures in results.items():
        for index, figure in enumerate(figures):
            label = labels[name] + (f" #{index + 1}" if len(figures) > 1 else "")
            print(
                f"{label:<44}{figure.first_record_s:>18.2f} s"
                f"{figure.steady_rate:>12,.0f} rec/s{figure.cpu_us_per_record:>10.1f} us"
                f"{figure.first_batch:>13,}"
            )
    bare_rate = statistics.median(f.steady_rate for f in results["bare"])
    bare_cpu = statistics.median(f.cpu_us_per_record for f in results["bare"])
    medians = " (medians)" if args.rounds > 1 else ""
    print()
    for sink in sinks:
        figures = results[f"kshare-{sink}"]
        rate = statistics.median(f.steady_rate for f in figures)
        cpu = statistics.median(f.cpu_us_per_record for f in figures)
        ratio = rate / bare_rate if bare_rate else 0.0
        verdict = "ok" if ratio >= TARGET_RATIO else f"BELOW {TARGET_RATIO}"
        where = "> file (as > /dev/null)" if sink == "file" else "| reader"
        print(
            f"kshare {where}: steady-state ratio to bare {ratio:.2f} "
            f"(target >= {TARGET_RATIO}: {verdict}); CPU per record "
            f"{cpu / bare_cpu if bare_cpu else 0:.2f}x bare{medians}"
        )
    # What a user waits for, apart from what a user streams: kshare subscribes again
    # until its first assignment (docs/first-record.md), the bare loop leaves the
    # second heartbeat to librdkafka's interval (5 s on the sandbox, as on Kafka).
    bare_first = statistics.median(f.first_record_s for f in results["bare"])
    for sink in sinks:
        first = statistics.median(f.first_record_s for f in results[f"kshare-{sink}"])
        where = "> file (as > /dev/null)" if sink == "file" else "| reader"
        print(
            f"kshare {where}: first record after {first:.2f} s, bare loop {bare_first:.2f} s "
            f"(ratio {first / bare_first if bare_first else 0:.2f}){medians}"
        )


if __name__ == "__main__":
    main()
