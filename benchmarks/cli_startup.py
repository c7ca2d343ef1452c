"""How long ``kshare --help`` and ``kshare list --help`` take, beside ``python -c pass``.

Run: ``.venv/bin/python benchmarks/cli_startup.py [--runs N]``.

An operator types these at a prompt, and shell completion runs ``kshare`` at
every <Tab>, so start-up is a user-visible latency. The target (issue 3) is
under 0.2 s; for scale, Kafka's ``kafka-share-groups.sh --help`` takes 0.67 s
on a machine like these. Each figure is the median of N runs of a fresh process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

KSHARE = Path(sys.executable).with_name("kshare")


def median_seconds(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    baseline = median_seconds([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass            {baseline * 1000:7.1f} ms")
    for argv in (["--help"], ["list", "--help"], ["describe", "--help"]):
        seconds = median_seconds([str(KSHARE), *argv], args.runs)
        verdict = "ok" if seconds < 0.2 else "OVER 0.2 s"
        print(
            f"kshare {' '.join(argv):<18} {seconds * 1000:7.1f} ms"
            f"  ratio to python -c pass {seconds / baseline:5.2f}  ({verdict})"
        )


if __name__ == "__main__":
    main()
