"""A Spark standalone cluster on this machine: one master and two workers on 127.0.0.1.

The audit's `--master spark://...` must work on a real cluster, where the
Python work runs in executors that other processes launched; `local[*]`
never shows that. The pyspark package ships `bin/spark-class` but not
`sbin/start-master.sh`, so the daemons are started here directly
(`org.apache.spark.deploy.master.Master`, `...worker.Worker`), as child
processes of the caller that `StandaloneCluster.stop` ends by their ids.
Used by tests/pipeline/test_standalone_cluster.py and
`benchmarks/audit_scaling.py --standalone`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["StandaloneCluster", "standalone_cluster"]

_READY_S = 180.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class StandaloneCluster:
    """The master's URL and the daemons' processes (stop() ends them)."""

    def __init__(self, workers: int, cores_per_worker: int, directory: Path) -> None:
        import pyspark

        self._home = Path(pyspark.__file__).parent
        self._directory = directory
        self._processes: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []
        port = _free_port()
        self.url = f"spark://127.0.0.1:{port}"
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())],
        )
        self._wait_for(self._logs[0], "I have been elected leader")
        for index in range(workers):
            self._start(
                f"worker-{index}",
                "org.apache.spark.deploy.worker.Worker",
                [
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(cores_per_worker),
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(directory / f"work-{index}"),
                    self.url,
                ],
            )
        for log in self._logs[1:]:
            self._wait_for(log, "Successfully registered with master")

    def _start(self, name: str, main_class: str, arguments: list[str]) -> None:
        log = self._directory / f"{name}.log"
        environment = {
            **os.environ,
            "SPARK_HOME": str(self._home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self._directory),
            "SPARK_DAEMON_MEMORY": "512m",
        }
        with log.open("wb") as output:
            self._processes.append(
                subprocess.Popen(
                    [str(self._home / "bin" / "spark-class"), main_class, *arguments],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=environment,
                    start_new_session=True,
                )
            )
        self._logs.append(log)

    def _wait_for(self, log: Path, line: str) -> None:
        deadline = time.monotonic() + _READY_S
        while time.monotonic() < deadline:
            if line in log.read_text(errors="replace"):
                return
            if any(process.poll() is not None for process in self._processes):
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{log.name} did not say {line!r}: {log.read_text(errors='replace')}")

    def stop(self) -> None:
        """End every daemon (and the executors a worker started: its process group)."""
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, 15)
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
        self._processes.clear()


@contextmanager
def standalone_cluster(workers: int = 2, cores_per_worker: int = 1) -> Iterator[StandaloneCluster]:
    """A master and `workers` workers on 127.0.0.1, stopped on the way out."""
    with tempfile.TemporaryDirectory(prefix="kshare-standalone-") as directory:
        cluster = StandaloneCluster(workers, cores_per_worker, Path(directory))
        try:
            yield cluster
        finally:
            cluster.stop()


def transform_rows(spark: object, path: str, group_id: str) -> dict[str, list[list[object]]]:
    """The rows `replay_states` and `deliveries` give for the group's records in the
    Parquet files at path (the Kafka source's columns), sorted, as JSON values: grouped by
    Spark, and split by the Python workers of input partitions that each hold whole
    state-topic partitions ("whole": as the audit's read of the state topic gives them)."""
    from kshare_cli.pipeline.deliveries import deliveries
    from kshare_cli.pipeline.timeline import replay_states

    records = spark.read.parquet(path)  # type: ignore[attr-defined]
    by_state_partition = records.repartition(3, "partition")
    frames = {
        "replay": replay_states(records, group_ids=(group_id,)),
        "deliveries": deliveries(records, group_ids=(group_id,)),
        "whole replay": replay_states(
            by_state_partition, group_ids=(group_id,), whole_state_partitions=True
        ),
        "whole deliveries": deliveries(
            by_state_partition, group_ids=(group_id,), whole_state_partitions=True
        ),
    }
    return {
        name: sorted(
            ([None if value is None else str(value) for value in row] for row in frame.collect()),
            key=lambda row: [("" if value is None else value) for value in row],
        )
        for name, frame in frames.items()
    }


def main() -> None:
    """``python -m tests.pipeline.standalone MASTER PATH GROUP OUT``: `transform_rows` in a
    session of MASTER, written to OUT as JSON (a driver of its own, as `kshare audit
    --master spark://...` is)."""
    import json
    import sys

    from kshare_cli.pipeline.session import spark_session

    master, path, group_id, out = sys.argv[1:5]
    spark = spark_session(
        master,
        app_name="kshare standalone check",
        config={
            "spark.ui.enabled": "false",
            "spark.executor.memory": "512m",
            "spark.sql.shuffle.partitions": "4",
        },
        log_level="ERROR",
    )
    try:
        Path(out).write_text(json.dumps(transform_rows(spark, path, group_id)))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
