"""How long ``kshare --help`` and ``kshare list --help`` take, and what ``kshare list`` costs.

Run: ``.venv/bin/python benchmarks/cli_startup.py [--runs N] [--kshare PATH] [--no-list]``.

An operator types these at a prompt, and shell completion runs ``kshare`` at
every <Tab>, so start-up is a user-visible latency. The target (issue 3) is
under 0.2 s; for scale, Kafka's ``kafka-share-groups.sh --help`` takes 0.67 s
on a machine like these. Each figure is the median of N runs of a fresh process.

``kshare list`` (issue 17) is measured against a sandbox started here (``kshare
sandbox --port 0 --demo``, in its own process, so one share group is listed) as the
CPU time of the kshare process (user + sys, from ``os.wait4``), which the sandbox's
own work and the machine's other load change far less than the wall time; the
target is under 0.25 s, and a ``list`` is mostly imports. ``python -c pass`` and
``kshare --help`` of the same interpreter are measured in the same run as the
baseline. Measure an install without the test extra (kio imports Hypothesis when it
is installed, +0.15 s): ``python3 -m venv /tmp/kshare-lean && /tmp/kshare-lean/bin/pip
install -e .``, then ``--kshare /tmp/kshare-lean/bin/kshare``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KSHARE = Path(sys.executable).with_name("kshare")
#: Issue 3: ``kshare --help`` and every subcommand's help.
HELP_TARGET_S = 0.2
#: Issue 17: the CPU time of ``kshare list`` against a broker.
LIST_TARGET_CPU_S = 0.25

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The sandbox runs from this checkout in this interpreter, in its own process (its cost
# is not measured): describe_fanout's, started with --demo for a group to list.
from describe_fanout import Sandbox  # noqa: E402 -- beside this file, found through the path above


@dataclass(frozen=True, slots=True)
class Run:
    wall_s: float
    cpu_s: float


def run_once(argv: list[str]) -> Run:
    """One fresh process to completion: its wall time and its own CPU time (user + sys)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, argv)
    return Run(wall, usage.ru_utime + usage.ru_stime)


def measure(argv: list[str], runs: int) -> list[Run]:
    return [run_once(argv) for _ in range(runs)]


def median_seconds(argv: list[str], runs: int) -> float:
    return statistics.median(run.wall_s for run in measure(argv, runs))


def interpreter_of(kshare: Path) -> str:
    """The Python a console script runs (its ``#!`` line), for the same-interpreter baseline."""
    with kshare.open("rb") as script:
        first = script.readline().decode().strip()
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


def wait_for_groups(kshare: Path, bootstrap: str, timeout_s: float = 60.0) -> str:
    """The demo's group, once ``kshare list`` shows it (the demo starts its consumers)."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed = subprocess.run(
            [str(kshare), "list", "-b", bootstrap, "-o", "plain"],
            capture_output=True,
            text=True,
            check=False,
        )
        if listed.returncode == 0 and listed.stdout.strip():
            return listed.stdout.strip()
        if time.monotonic() > deadline:
            raise RuntimeError(f"no share group listed in {timeout_s:.0f} s: {listed.stderr}")
        time.sleep(0.2)


def cpu_line(label: str, samples: list[Run]) -> str:
    cpu = [run.cpu_s for run in samples]
    wall = statistics.median(run.wall_s for run in samples)
    return (
        f"{label:<26} cpu median {statistics.median(cpu) * 1000:6.1f} ms"
        f"  min {min(cpu) * 1000:6.1f} ms  wall median {wall * 1000:6.1f} ms"
    )


def list_case(kshare: Path, runs: int) -> None:
    python = interpreter_of(kshare)
    with Sandbox(options=["--demo"]) as sandbox:
        groups = wait_for_groups(kshare, sandbox.bootstrap)
        print(f"kshare list against the sandbox at {sandbox.bootstrap}: {groups.split()}")
        baseline = measure([python, "-c", "pass"], runs)
        help_runs = measure([str(kshare), "--help"], runs)
        listed = measure([str(kshare), "list", "-b", sandbox.bootstrap], runs)
    print(cpu_line("python -c pass", baseline))
    print(cpu_line("kshare --help", help_runs))
    print(cpu_line("kshare list", listed))
    cpu = statistics.median(run.cpu_s for run in listed)
    verdict = "ok" if cpu < LIST_TARGET_CPU_S else f"OVER {LIST_TARGET_CPU_S} s"
    over_help = cpu - statistics.median(run.cpu_s for run in help_runs)
    print(
        f"kshare list: {cpu * 1000:.1f} ms of CPU, target under {LIST_TARGET_CPU_S * 1000:.0f} ms"
        f" ({verdict}); {over_help * 1000:.1f} ms more than kshare --help"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--kshare", type=Path, default=KSHARE, help="the kshare executable to measure"
    )
    parser.add_argument("--no-list", action="store_true", help="skip the kshare list case")
    args = parser.parse_args()
    kshare: Path = args.kshare
    baseline = median_seconds([interpreter_of(kshare), "-c", "pass"], args.runs)
    print(f"python -c pass            {baseline * 1000:7.1f} ms")
    for argv in (["--help"], ["list", "--help"], ["describe", "--help"]):
        seconds = median_seconds([str(kshare), *argv], args.runs)
        verdict = "ok" if seconds < HELP_TARGET_S else f"OVER {HELP_TARGET_S} s"
        print(
            f"kshare {' '.join(argv):<18} {seconds * 1000:7.1f} ms"
            f"  ratio to python -c pass {seconds / baseline:5.2f}  ({verdict})"
        )
    if not args.no_list:
        list_case(kshare, args.runs)


if __name__ == "__main__":
    main()
