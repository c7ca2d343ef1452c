"""Ctrl-C always gives the terminal back, even when the broker stops answering the leave.

The first SIGINT asks the run to commit what was printed and leave the group. That
happens inside librdkafka's close, in C, where neither a second Ctrl-C nor Python's
signal handlers can reach it: a broker that hangs right then once held ``kshare
consume`` for five minutes. The run now gives the leave ``--timeout`` and then exits
130 with one line saying why; what was printed had been acknowledged already.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from tests.support.consume_beds import FAST_HEARTBEAT_MS, Bed, values
from tests.support.sandbox import StartCluster

KSHARE = Path(sys.executable).with_name("kshare")


def test_a_broker_hung_during_the_leave_costs_the_timeout_not_the_terminal(
    sandbox_cluster: StartCluster,
) -> None:
    sandbox = sandbox_cluster(
        1,
        settings=BrokerGroupSettings(
            share_heartbeat_interval_ms=FAST_HEARTBEAT_MS,
            share_min_heartbeat_interval_ms=FAST_HEARTBEAT_MS,
        ),
    )
    bed = Bed("sandbox", sandbox.bootstrap)
    topic, group = bed.names("stop")
    bed.produce(topic, values(50))
    process = subprocess.Popen(
        [
            str(KSHARE),
            "consume",
            "-t",
            topic,
            "-g",
            group,
            "-b",
            sandbox.bootstrap,
            "--timeout",
            "3s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    assert ready, "no record within 60 s"
    first = os.read(process.stdout.fileno(), 64)
    assert first.startswith(b"r-"), first
    sandbox.hang_node(1)
    process.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    try:
        code = process.wait(30)
    finally:
        process.kill()
    elapsed = time.monotonic() - stopped
    stderr = process.stderr.read().decode()
    assert code == 130, stderr
    assert 2.5 < elapsed < 10, elapsed
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1] == (
        "kshare: error: leaving the share group did not finish within 3 s of the stop; "
        "exiting (records not yet acknowledged return to the group when their acquisition "
        "locks expire)"
    ), stderr
