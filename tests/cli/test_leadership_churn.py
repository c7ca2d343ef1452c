"""``kshare describe`` while leaders and coordinators move under it.

Issue 16: on a real cluster leadership moves all the time (preferred elections,
reassignments, a rolling restart). A move is transient: the client must find the
new leader or coordinator and ask again within --timeout, so no run of
``kshare describe`` may show NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS or a ``-`` where a figure belongs. A thread moves
the topic's partition leaders, the group's coordinator and the share
coordinators of its share-partitions round the three nodes while describe runs
back to back; every run must exit 0 with every row in full.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.runner import SandboxThread
from tests.cli.conftest import Kshare
from tests.cli.test_cluster_faults import PARTITIONS, start_offsets_at_zero
from tests.cli.test_inflight_state_faults import _share_key, _topic_id
from tests.support.sandbox import StartCluster

RUNS = 100
NODES = (1, 2, 3)
#: One move this often, the kinds in turn: each coordinator moves about every 0.45 s,
#: longer than the sandbox's 0.2 s of COORDINATOR_LOAD_IN_PROGRESS after a move.
MOVE_EVERY_S = 0.15


def _mover(sandbox: SandboxThread, topic: str, group: str, stop: threading.Event) -> list[str]:
    """Start moving leaders and coordinators until ``stop``; the list collects what moved."""
    topic_id = _topic_id(sandbox, topic)
    moves: list[str] = []

    def move() -> None:
        for step, node in zip(itertools.count(), itertools.cycle(NODES), strict=False):
            if stop.wait(MOVE_EVERY_S):
                return
            partition = step % PARTITIONS
            kind = step % 3
            if kind == 0:
                sandbox.move_leader(topic, partition, node)
                moves.append(f"leader {topic}-{partition} -> {node}")
            elif kind == 1:
                sandbox.move_group_coordinator(group, node)
                moves.append(f"group coordinator -> {node}")
            else:
                sandbox.move_share_coordinator(_share_key(group, topic_id, partition), node)
                moves.append(f"share coordinator {partition} -> {node}")

    threading.Thread(target=move, name="leadership-churn", daemon=True).start()
    return moves


def test_describe_shows_no_transient_error_while_leaders_and_coordinators_move(
    sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    sandbox = sandbox_cluster(3)
    suffix = uuid.uuid4().hex[:8]
    topic = f"churn-{suffix}"
    group = f"churn-{suffix}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for partition in range(PARTITIONS):
        producer.produce(topic, value=b"r", partition=partition)
    assert producer.flush(15) == 0
    start_offsets_at_zero(sandbox, group, topic)
    kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
    stop = threading.Event()
    moves = _mover(sandbox, topic, group, stop)
    started = time.monotonic()
    try:
        for run in range(RUNS):
            result = kshare.run("describe", group, "-o", "csv", "--timeout", "10s")
            message = (
                f"run {run} after {len(moves)} moves ({moves[-3:]}): exit {result.exit_code}\n"
                f"{result.stdout}{result.stderr}"
            )
            assert result.exit_code == ExitCode.OK, message
            assert result.stderr == "", message
            rows = [line.split(",") for line in result.stdout.splitlines()[1:]]
            assert [row[2] for row in rows] == [str(p) for p in range(PARTITIONS)], message
            # group_id .. lag all known, error empty (csv: a blank cell is null).
            assert all(cell not in ("", "-") for row in rows for cell in row[:6]), message
            assert [row[8] for row in rows] == [""] * PARTITIONS, message
    finally:
        stop.set()
    elapsed = time.monotonic() - started
    assert len(moves) >= RUNS // 10, f"only {len(moves)} moves in {elapsed:.1f} s"
