"""``kshare exporter`` run as an operator runs it: a process, its stderr, its HTTP endpoints.

Every exporter test starts the process the same way and learns its address from the
first stderr line (``--listen 127.0.0.1:0`` picks a free port); this module is that one
way, and the parser for what ``/metrics`` answers.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import IO, Final

from prometheus_client.parser import text_string_to_metric_families

#: How long the exporter may take to start listening (a loaded machine, a cold import).
STARTUP_S: Final = 30.0

#: A scrape by (sample name, sorted labels).
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class Exporter:
    """A running ``kshare exporter`` and the address it said it listens on."""

    def __init__(self, process: subprocess.Popen[str], base: str, lines: queue.Queue[str]):
        self.process = process
        self.base = base
        self.lines = lines

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def kill(self) -> None:
        """Kill the process if it still runs (a test's cleanup, not a graceful stop)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    """Copy ``stream``'s lines into ``lines`` (run in a daemon thread)."""
    for line in stream:
        lines.put(line)


def start_exporter(argv: Sequence[str], env: Mapping[str, str]) -> Exporter:
    """Start ``argv`` (a ``kshare exporter --listen 127.0.0.1:0 ...`` command line) and
    return it once it said where it listens; killed if it never says so."""
    process = subprocess.Popen(
        list(argv),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    threading.Thread(target=pump, args=(process.stderr, lines), daemon=True).start()
    exporter = Exporter(process, "", lines)
    try:
        first = lines.get(timeout=STARTUP_S)
        assert "exporter listening on http://127.0.0.1:" in first, first
    except BaseException:
        exporter.kill()
        raise
    exporter.base = first.split("listening on ", 1)[1].strip().removesuffix("/metrics")
    return exporter


def samples(text: str) -> Samples:
    """Every sample of a ``/metrics`` answer."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found
