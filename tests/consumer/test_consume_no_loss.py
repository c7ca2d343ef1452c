"""No record is lost when ``kshare consume`` is interrupted: SIGINT, SIGTERM, or a closed stdout.

Many runs of the console script share one group and one topic. Each run is stopped
at a random point, by the three ways in turn (every kind is exercised on every seed;
the seed chooses only when to stop and how the pipe is read), while this test reads its
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
  higher delivery count: a share-partition hands out its lowest available records
  first, so every record below the highest printed offset that was not printed had
  been acquired by a run and released, and must come back with a count of at least 2;
  a record whose line was cut short by a stop comes back counting more than that line
  said.

``KSHARE_NO_LOSS_SEED=N`` replays a run; every assertion message names the seed.
"""

from __future__ import annotations

import json
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

from tests.support.consume_beds import Bed, drain, mock_bed, sandbox_bed, values
from tests.support.rdkafka_mock import RdkafkaMockCluster

KSHARE = Path(sys.executable).with_name("kshare")

#: Runs against the sandbox and the mock; the seed is printed so a failure can be replayed.
RUNS = {"sandbox": 24, "mock": 12}
RECORDS_PER_RUN = 400
#: Batch sizes a run asks for (``max.poll.records``): a stop lands inside small and large ones.
BATCHES = (5, 50, 200)
SEED = int(os.environ.get("KSHARE_NO_LOSS_SEED", str(random.SystemRandom().randrange(1 << 30))))
#: A failure bound, not a stop: the mid-line run's first line waits for the group's join
#: (the mock's session timeout, 10 s, for a member an earlier run left, on a loaded machine).
MID_LINE_WAIT_S = 180
#: The stop kinds, cycled run by run so that each is exercised whatever the seed.
STOPS = ("SIGINT", "SIGTERM", "close")


@dataclass
class Run:
    """One interrupted run: how it was stopped and what the test saw of it."""

    how: str
    lines: list[bytes]
    code: int
    stderr: str
    #: What a stop cut short of the last line: printed in part, so delivered, not accepted.
    cut: bytes = b""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Bed]:
    with sandbox_bed() as bed:
        yield bed


def _interrupted_run(
    bed: Bed,
    topic: str,
    group: str,
    tmp_path: Path,
    chooser: random.Random,
    how: str,
    *,
    mid_line: bool = False,
) -> Run:
    """One run, stopped ``how``; ``mid_line`` closes stdout inside the second line, byte-exact."""
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
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_sigint
    )
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.fileno()
    received = b""
    # Stop after a random number of bytes once printing began (a line may be cut in
    # two), or after a while without output (every record was taken already).
    stop_after_bytes = chooser.randrange(0, RECORDS_PER_RUN * 24)
    started = time.monotonic()
    stopped = False
    stopped_at = 0.0
    while True:
        if stopped and time.monotonic() - stopped_at > 60:
            process.kill()
            raise AssertionError(f"seed {SEED}: kshare consume still ran 60 s after {how}")
        ready, _, _ = select.select([out], [], [], 0.05)
        if ready:
            chunk = os.read(out, 8 if mid_line else chooser.randrange(16, 2048))
            if not chunk:
                break
            received += chunk
            time.sleep(chooser.random() * 0.002)
        if mid_line:
            # Inside a line whose offset and delivery count were printed whole: waited for
            # however slow the join (records always remain; an earlier run's member may
            # hold the assignment until its session times out), never cut short by time.
            tail = received[received.rfind(b"\n") + 1 :] if b"\n" in received else b""
            stop_now = tail.count(b"\t") >= 2
            if not stop_now and time.monotonic() - started > MID_LINE_WAIT_S:
                process.kill()
                raise AssertionError(
                    f"seed {SEED}: the mid-line run printed no whole offset and delivery"
                    f" count in {MID_LINE_WAIT_S} s: {received!r}"
                )
        else:
            idle_too_long = time.monotonic() - started > 1.5
            stop_now = len(received) >= stop_after_bytes > 0 or idle_too_long
        if not stopped and stop_now:
            stopped = True
            stopped_at = time.monotonic()
            if how == "close":
                process.stdout.close()
                break
            process.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
    stderr = process.stderr.read().decode()
    code = process.wait(30)
    end = received.rfind(b"\n") + 1
    return Run(how, received[:end].splitlines(), code, stderr, cut=received[end:])


#: What a stop that lands while kshare is still importing gives (a loaded machine can take
#: longer than the test's 1.5 s idle limit to get there): Python's default SIGINT is
#: kshare's "interrupted" line, a default SIGTERM ends the process, before anything was
#: consumed. A closed stdout is only noticed once kshare writes, so it has no such case.
_STOPPED_WHILE_STARTING: dict[str, set[tuple[int, str]]] = {
    "SIGINT": {(130, "kshare: interrupted\n")},
    "SIGTERM": {(-signal.SIGTERM, "")},
    "close": set(),
}


def _default_sigint() -> None:
    """Give the run the default SIGINT disposition, whatever this test inherited.

    A shell starts a background job with SIGINT ignored, and a process that starts with
    SIGINT ignored keeps ignoring it until kshare installs its own handler: a SIGINT sent
    in that first moment was lost, and the run went on for ever (twice in a hundred
    loops of this test started from a background shell).
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _parse(line: bytes) -> tuple[int, int, str]:
    offset, delivery, value = line.split(b"\t")
    return (
        int(offset.removeprefix(b"Offset:")),
        int(delivery.removeprefix(b"Delivery:")),
        value.decode(),
    )


def _cut_delivery(cut: bytes) -> tuple[int, int] | None:
    """The offset and delivery count of a line cut short, when both were printed whole."""
    fields = cut.split(b"\t")
    if len(fields) < 3:  # the delivery field may itself be cut short
        return None
    offset, delivery, _ = _parse(b"\t".join(fields[:3]))
    return offset, delivery


def _released(bed: Bed, group: str, tmp_path: Path) -> dict[int, int]:
    """Offsets persisted as Available after a delivery, with their delivery counts.

    Read from ``__share_group_state`` through ``kshare inflight`` (the mock has no admin
    RPCs and no state topic): the records the stops released, waiting for redelivery.
    """
    argv = [str(KSHARE), "inflight", group, "-o", "json", *bed.kshare_args(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    released: dict[int, int] = {}
    for share_partition in json.loads(done.stdout)["partitions"]:
        window = share_partition["window"]
        assert window is not None, done.stdout
        for run in window["runs"]:
            if run["state"] == "available" and run["delivery_count"] >= 1:
                for offset in range(run["first_offset"], run["last_offset"] + 1):
                    released[offset] = run["delivery_count"]
    return released


def _check_no_loss(bed: Bed, runs: int, tmp_path: Path) -> None:
    chooser = random.Random(f"{SEED}-{bed.name}")
    topic, group = bed.names("no-loss")
    # Small produce batches: the sandbox, like Kafka, acquires whole batches.
    offsets = bed.produce(topic, values(runs * RECORDS_PER_RUN), batch=50)
    history: list[Run] = []
    for index in range(runs):
        how = STOPS[index % len(STOPS)]
        run = _interrupted_run(bed, topic, group, tmp_path, chooser, how)
        history.append(run)
        expected_code = 0 if run.how == "close" else 130
        context = f"seed {SEED}, run {len(history)} ({run.how}): {run.stderr!r}"
        if (run.code, run.stderr) in _STOPPED_WHILE_STARTING[run.how]:
            assert not run.lines, context  # stopped before it could consume: nothing to lose
            continue
        assert run.code == expected_code, context
        assert "Traceback" not in run.stderr, context
        assert run.stderr.endswith(f"Processed a total of {len(run.lines)} messages\n"), context
    # A last run closes stdout inside a line, so every seed has a record printed in part.
    run = _interrupted_run(bed, topic, group, tmp_path, chooser, "close", mid_line=True)
    history.append(run)
    assert run.code == 0 and run.lines, f"seed {SEED}, the mid-line run: {run.stderr!r}"
    assert _cut_delivery(run.cut) is not None, f"seed {SEED}: {run.cut!r}"
    printed = [_parse(line) for run in history for line in run.lines]
    printed_offsets = [offset for offset, _, _ in printed]
    assert len(printed_offsets) == len(set(printed_offsets)), f"seed {SEED}: printed twice"
    released = _released(bed, group, tmp_path) if bed.admin_rpcs else {}
    rest = drain(bed, topic, group)
    drained_counts = {line["offset"]: line["delivery_count"] for line in rest}
    drained_offsets = [line["offset"] for line in rest]
    assert not set(drained_offsets) & set(printed_offsets), f"seed {SEED}: accepted, yet back"
    assert sorted(printed_offsets + drained_offsets) == offsets, f"seed {SEED}: records lost"
    for offset, count, value in printed:
        assert value == f"r-{offsets.index(offset):05d}"
        assert count >= 1
    assert any(run.lines for run in history), f"seed {SEED}: no run printed anything"
    # Released records come back counting their earlier deliveries.
    if bed.admin_rpcs:
        # The last run, at least, released what it had acquired and not printed.
        assert released, f"seed {SEED}: no run left a released record to check"
    for offset, count in released.items():
        assert drained_counts.get(offset) == count + 1, f"seed {SEED}: offset {offset}"
    later = {offset: count for offset, count, _ in printed} | drained_counts
    for run in history:
        cut = _cut_delivery(run.cut)
        if cut is not None:
            offset, count = cut
            assert later[offset] > count, f"seed {SEED}: offset {offset}, cut short, came back"


def test_no_loss_on_the_sandbox(sandbox: Bed, tmp_path: Path) -> None:
    _check_no_loss(sandbox, RUNS["sandbox"], tmp_path)


def test_no_loss_on_the_mock(rdkafka_mock: RdkafkaMockCluster, tmp_path: Path) -> None:
    _check_no_loss(mock_bed(rdkafka_mock), RUNS["mock"], tmp_path)
