"""``kshare exporter`` as an operator runs it: a process, its HTTP endpoints, SIGTERM.

The figures must be ``kshare describe``'s: the session's ``drained`` group is
quiet (no members, nothing produced after the setup), so both read the same
values whenever they are asked.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import KSHARE, Kshare, ShareGroups, process_env
from tests.support.exporter_process import Exporter, samples, start_exporter
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def exporter(kshare: Kshare, share_groups: ShareGroups) -> Iterator[Exporter]:
    argv = [
        str(KSHARE),
        "exporter",
        "--listen",
        "127.0.0.1:0",
        "--group",
        share_groups.drained,
        "--interval",
        "500ms",
        "--cluster-name",
        "test",
        *kshare.connection_args(),
    ]
    exporter = start_exporter(argv, process_env(kshare.environment()))
    try:
        yield exporter
    finally:
        exporter.kill()


def test_metrics_match_describe_healthz_and_sigterm_exits_0(
    kshare: Kshare, share_groups: ShareGroups, exporter: Exporter
) -> None:
    group = share_groups.drained
    wait_for(lambda: exporter.get("/healthz")[0] == 200, timeout=30, what="the first refresh")
    status, body = exporter.get("/healthz")
    assert (status, body.startswith("ok: refreshed")) == (200, True)
    status, text = exporter.get("/metrics")
    assert status == 200
    metrics = samples(text)
    described = json.loads(kshare.run("describe", group, "-o", "json").stdout)
    (document,) = described["groups"]
    assert len(document["partitions"]) == 2
    for partition in document["partitions"]:
        labels = (
            ("cluster_name", "test"),
            ("group", group),
            ("partition", str(partition["partition"])),
            ("topic", partition["topic"]),
        )
        assert metrics[("kshare_share_partition_lag", labels)] == partition["lag"]
        assert metrics[("kshare_share_partition_start_offset", labels)] == partition["start_offset"]
        assert metrics[("kshare_share_partition_end_offset", labels)] == partition["end_offset"]
    group_labels = (("cluster_name", "test"), ("group", group))
    assert metrics[("kshare_share_group_lag", group_labels)] == sum(
        ShareGroups.DRAINED_LAG.values()
    )
    assert metrics[("kshare_share_group_members", group_labels)] == 0
    assert metrics[("kshare_share_group_status", (*group_labels, ("status", "STOP")))] == 1
    assert metrics[("kshare_share_group_status", (*group_labels, ("status", "OK")))] == 0
    assert metrics[("kshare_share_group_state_info", (*group_labels, ("state", "Empty")))] == 1
    assert metrics[("kshare_exporter_refresh_errors_total", (("cluster_name", "test"),))] == 0
    assert ("kshare_exporter_last_refresh_timestamp_seconds", (("cluster_name", "test"),)) in (
        metrics
    )
    status, page = exporter.get("/")
    assert status == 200 and "kshare_share_partition_lag" in page
    assert exporter.get("/nothing")[0] == 404

    exporter.process.send_signal(signal.SIGTERM)
    assert exporter.process.wait(15) == 0


def test_usage_errors_are_2(kshare: Kshare) -> None:
    for args, fragment in (
        (["--listen", "nowhere"], "--listen"),
        (["--group", "g", "--all-groups"], "not both"),
        (["--interval", "0"], "--interval must be above 0"),
    ):
        result = kshare.run("exporter", *args, connect=False)
        assert result.exit_code == 2, args
        assert fragment in result.stderr


def test_ctrl_c_stops_it_cleanly_with_exit_0(exporter: Exporter) -> None:
    wait_for(lambda: exporter.get("/healthz")[0] == 200, timeout=30, what="the first refresh")
    exporter.process.send_signal(signal.SIGINT)
    assert exporter.process.wait(15) == 0
    rest = []
    while not exporter.lines.empty():
        rest.append(exporter.lines.get())
    assert "Traceback" not in "".join(rest)


def test_help_loads_nothing_heavy() -> None:
    code = (
        "import sys\nsys.argv = ['kshare', 'exporter', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'kio', 'prometheus_client', 'http')"
        " or m.startswith(('kshare_cli.services', 'kshare_cli.admin', 'kshare_cli.render'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
