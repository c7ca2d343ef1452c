"""No record is lost when ``kshare consume`` is interrupted: SIGINT, SIGTERM, or a closed stdout.

Many runs of the console script share one group and one topic. Each run is stopped
at a random point, by a random one of the three ways, while this test reads its
stdout through a pipe in small random bites (so the stop lands while a batch is
being written, while kshare waits for the reader, or while it is idle). What the
test read is exactly what was printed; a line cut short by the stop was not.

Afterwards a fresh consumer of the group drains what is left. The claims:

- every run says ``Processed a total of N messages`` with N the complete lines the
  test read (every printed record, and only those, was accepted);
- no record was printed twice (an accepted record is never delivered again);
- printed and drained records partition the produced ones: nothing was accepted
  without being printed, nothing vanished;
- a drained record that had been delivered before (released at a stop) carries a
  higher delivery count.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kshare_cli.sandbox.rdkafka_mock import RdkafkaMockCluster
from tests.support.consume_beds import Bed, drain, mock_bed, sandbox_bed, values

KSHARE = Path(sys.executable).with_name("kshare")

#: Runs against the sandbox and the mock; the seed is printed so a failure can be replayed.
RUNS = {"sandbox": 24, "mock": 12}
RECORDS_PER_RUN = 400
#: Batch sizes a run asks for (``max.poll.records``): a stop lands inside small and large ones.
BATCHES = (5, 50, 200)
SEED = int(os.environ.get("KSHARE_NO_LOSS_SEED", str(random.SystemRandom().randrange(1 << 30))))


@dataclass
class Run:
    """One interrupted run: how it was stopped and what the test saw of it."""

    how: str
    lines: list[bytes]
    code: int
    stderr: str


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Bed]:
    with sandbox_bed() as bed:
        yield bed


def _interrupted_run(
    bed: Bed, topic: str, group: str, tmp_path: Path, chooser: random.Random
) -> Run:
    how = chooser.choice(["SIGINT", "SIGTERM", "close"])
    argv = [
        str(KSHARE),
        "consume",
        "--topic",
        topic,
        "--group",
        group,
        "--property",
        "print.offset=true",
        "--property",
        "print.delivery=true",
        "--command-property",
        f"max.poll.records={chooser.choice(BATCHES)}",
        *bed.kshare_args(tmp_path),
    ]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.fileno()
    received = b""
    # Stop after a random number of bytes once printing began (a line may be cut in
    # two), or after a while without output (every record was taken already).
    stop_after_bytes = chooser.randrange(0, RECORDS_PER_RUN * 24)
    started = time.monotonic()
    stopped = False
    while True:
        ready, _, _ = select.select([out], [], [], 0.05)
        if ready:
            chunk = os.read(out, chooser.randrange(16, 2048))
            if not chunk:
                break
            received += chunk
            time.sleep(chooser.random() * 0.002)
        idle_too_long = time.monotonic() - started > 1.5
        if not stopped and (len(received) >= stop_after_bytes > 0 or idle_too_long):
            stopped = True
            if how == "close":
                process.stdout.close()
                break
            process.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
    stderr = process.stderr.read().decode()
    code = process.wait(30)
    complete = received[: received.rfind(b"\n") + 1] if b"\n" in received else b""
    return Run(how, complete.splitlines(), code, stderr)


def _parse(line: bytes) -> tuple[int, int, str]:
    offset, delivery, value = line.split(b"\t")
    return (
        int(offset.removeprefix(b"Offset:")),
        int(delivery.removeprefix(b"Delivery:")),
        value.decode(),
    )


def _check_no_loss(bed: Bed, runs: int, tmp_path: Path) -> None:
    chooser = random.Random(f"{SEED}-{bed.name}")
    topic, group = bed.names("no-loss")
    # Small produce batches: the sandbox, like Kafka, acquires whole batches.
    offsets = bed.produce(topic, values(runs * RECORDS_PER_RUN), batch=50)
    history: list[Run] = []
    for _ in range(runs):
        run = _interrupted_run(bed, topic, group, tmp_path, chooser)
        history.append(run)
        expected_code = 0 if run.how == "close" else 130
        context = f"seed {SEED}, run {len(history)} ({run.how}): {run.stderr!r}"
        assert run.code == expected_code, context
        assert "Traceback" not in run.stderr, context
        assert run.stderr.endswith(f"Processed a total of {len(run.lines)} messages\n"), context
    printed = [_parse(line) for run in history for line in run.lines]
    printed_offsets = [offset for offset, _, _ in printed]
    assert len(printed_offsets) == len(set(printed_offsets)), f"seed {SEED}: printed twice"
    rest = drain(bed, topic, group)
    drained_offsets = [line["offset"] for line in rest]
    assert not set(drained_offsets) & set(printed_offsets), f"seed {SEED}: accepted, yet back"
    assert sorted(printed_offsets + drained_offsets) == offsets, f"seed {SEED}: records lost"
    for offset, count, value in printed:
        assert value == f"r-{offsets.index(offset):05d}"
        assert count >= 1
    assert any(run.lines for run in history), f"seed {SEED}: no run printed anything"
    assert {run.how for run in history} == {"SIGINT", "SIGTERM", "close"}, f"seed {SEED}"


def test_no_loss_on_the_sandbox(sandbox: Bed, tmp_path: Path) -> None:
    _check_no_loss(sandbox, RUNS["sandbox"], tmp_path)


def test_no_loss_on_the_mock(rdkafka_mock: RdkafkaMockCluster, tmp_path: Path) -> None:
    _check_no_loss(mock_bed(rdkafka_mock), RUNS["mock"], tmp_path)
