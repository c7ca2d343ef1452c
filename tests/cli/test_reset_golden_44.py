"""Kafka 4.4's recorded ``kafka-share-groups.sh`` runs 11-35, replayed with kshare on the
sandbox's Kafka 4.4 profile (``tests/golden/kafka-4.4/tool-output/kafka-share-groups/``).

The scenario is the recording's: golden scenario D's setup and consumption (as
``tests/sandbox/test_golden_scenario_d`` drives them: ``golden-d``, ``golden-dg`` and
``golden-dg2`` with their DLQ topics), then an idle member in ``golden-dg`` (a librdkafka
ShareConsumer in implicit mode, ``golden-dg-idle-member``) for run 11, closed before run
12, and then every recorded command in order, each run as kshare with the argv Kafka's
tool got (``commands.json``: ``--reset-offsets``/``--describe`` become the command,
``--group G`` its argument, ``--bootstrap-server`` the sandbox's) and ``-o plain``, from
the recording's folder, so ``--from-file reset-plan.csv`` reads the recorded plan.

Each run's exit code and stdout must be the recording's byte for byte, and its stderr too,
with only what cannot match set aside:

- the time stamp of Kafka's log4j WARN lines (``[2026-11-28 15:31:35,793]``): the time of
  the run (the rest of each line, and their order, must match);
- the coordinator's address in ``describe --state`` (run 12): the sandbox's port, not
  ``49092`` (a 5-digit port keeps Kafka's column widths; the node id is compared);
- kshare's own stderr line after ``--execute`` (``kshare: rollback plan saved to ...``):
  kshare saves a rollback plan before every reset, which Kafka's tool does not;
- run 11's refusal: Kafka prints ``Share group 'golden-dg' is not empty.`` and kshare its
  one error line, which says the same and names the member (exit code and the empty
  stdout are compared).

Runs 00-10 (help, list and describe with the member) are not reset runs; the describe
runs of 12-35 (12-14, 17, 20, 23, 26, 34, 35) are compared like the rest: on Kafka 4.4 a
reset's snapshot has deliveryCompleteCount 0, so LAG is a number after a reset.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ShareConsumer

from tests.cli.conftest import Kshare
from tests.sandbox.test_golden_scenario_d import GROUPS, TOPIC, _consume, _produce, _setup
from tests.support.sandbox import Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

TOOL_OUTPUT = (
    Path(__file__).resolve().parents[1]
    / "golden"
    / "kafka-4.4"
    / "tool-output"
    / "kafka-share-groups"
)
RECORDED_BOOTSTRAP = "127.0.0.1:49092"
GROUP = "golden-dg"
#: Kafka's log4j layout, ``[%d] %p %m (%c)``: the time stamp is the run's.
WARN_TIME = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARN ", re.MULTILINE)
ROLLBACK_SAVED = "kshare: rollback plan saved to "


def recorded_runs() -> dict[str, dict[str, Any]]:
    runs = json.loads((TOOL_OUTPUT / "commands.json").read_text())
    return {run["name"]: run for run in runs}


def kshare_argv(kafka_args: list[str]) -> list[str]:
    """Kafka's ``kafka-share-groups.sh`` arguments as kshare's, and ``-o plain``."""
    args = list(kafka_args)
    at = args.index("--bootstrap-server")
    del args[at : at + 2]  # Kshare.run gives the sandbox's
    at = args.index("--group")
    group = args[at + 1]
    del args[at : at + 2]
    (action,) = [arg for arg in args if arg in ("--reset-offsets", "--describe")]
    args.remove(action)
    return [action.removeprefix("--"), group, *args, "-o", "plain"]


def recorded(name: str, suffix: str) -> str:
    return (TOOL_OUTPUT / f"{name}.{suffix}").read_text()


def masked(text: str) -> str:
    return WARN_TIME.sub("[TIME] WARN ", text)


@pytest.fixture
def sandbox_44() -> Iterator[Cluster]:
    skip_on_real_cluster(
        "the runs are compared with a fresh recording's (golden-d, golden-dg and their "
        "offsets), which a shared broker already holding them cannot give"
    )
    with SandboxThread(kafka_version="4.4") as sandbox:
        yield Cluster(sandbox.bootstrap, {}, sandbox)


class IdleMember:
    """``golden-dg-idle-member``: a ShareConsumer in implicit mode, subscribed and polling
    (it gets no records: all are final), as the recording had during runs 01-11."""

    def __init__(self, cluster: Cluster) -> None:
        self.consumer = ShareConsumer(
            cluster.config(**{"group.id": GROUP, "client.id": "golden-dg-idle-member"})
        )
        self.consumer.subscribe([TOPIC])
        self.records = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stopping.is_set():
            self.records += len(self.consumer.poll(0.2))

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        self.consumer.close()


def group_state(kshare: Kshare) -> tuple[str, int]:
    result = kshare.run("describe", GROUP, "--state", "-o", "json")
    assert result.exit_code == 0, result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    return group["state"], group["member_count"]


def check_run(kshare: Kshare, cluster: Cluster, run: dict[str, Any], tmp_path: Path) -> None:
    name = run["name"]
    result = kshare.run(*kshare_argv(run["args"]), env={"XDG_STATE_HOME": str(tmp_path)})
    context = f"{name}: kshare {' '.join(kshare_argv(run['args']))}\nstderr: {result.stderr}"
    assert result.exit_code == run["rc"] == int(recorded(name, "rc")), context
    expected_out = recorded(name, "out")
    if "--state" in run["args"]:
        # The coordinator column: the sandbox's HOST:PORT, of Kafka's length.
        host_port = cluster.bootstrap.split(",")[0]
        assert len(host_port) == len(RECORDED_BOOTSTRAP), host_port
        expected_out = expected_out.replace(RECORDED_BOOTSTRAP, host_port)
    assert result.stdout == expected_out, context
    stderr = "".join(
        line
        for line in result.stderr.splitlines(keepends=True)
        if not line.startswith(ROLLBACK_SAVED)
    )
    if "--execute" in run["args"]:
        assert ROLLBACK_SAVED in result.stderr, context
    assert masked(stderr) == masked(recorded(name, "err")), context


def test_kafka_44_reset_runs_come_out_of_kshare_byte_for_byte(
    sandbox_44: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kshare = Kshare(sandbox_44.bootstrap, None, tmp_path / "kshare" / "config.toml")
    _setup(sandbox_44, GROUPS)
    _produce(sandbox_44)
    for group in GROUPS:
        _consume(sandbox_44, group)
    monkeypatch.chdir(TOOL_OUTPUT)  # --from-file reset-plan.csv, as the recording ran
    runs = recorded_runs()

    member = IdleMember(sandbox_44)
    try:
        wait_for(lambda: group_state(kshare) == ("Stable", 1), timeout=30)
        run = runs["11-reset-to-current-dry-run-while-active"]
        result = kshare.run(*kshare_argv(run["args"]))
        assert result.exit_code == run["rc"] == 1, result.stderr
        assert result.stdout == recorded(run["name"], "out") == ""
        # Kafka: "Share group 'golden-dg' is not empty." kshare says so and names the member.
        (line,) = result.stderr.splitlines()
        assert "share group 'golden-dg' is not empty" in line
        assert "golden-dg-idle-member" in line
        assert recorded(run["name"], "err") == "Share group 'golden-dg' is not empty.\n"
    finally:
        member.close()
    assert member.records == 0
    wait_for(lambda: group_state(kshare) == ("Empty", 0), timeout=30)

    replayed = [name for name in runs if "12" <= name[:2] <= "35"]
    assert len(replayed) == 24
    for name in replayed:
        check_run(kshare, sandbox_44, runs[name], tmp_path)
