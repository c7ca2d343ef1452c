"""`--master spark://...`: the audit's transforms on a standalone cluster (one master, two
workers, on this machine) give exactly the rows `local[1]` gives, grouped by Spark or split
by share-partition in the executors' Python workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from kshare_cli.state.partitioning import DEFAULT_STATE_PARTITIONS, state_partition_for
from kshare_cli.state.records import encode_record
from kshare_cli.state.replay import SharePartitionKey
from tests.pipeline.standalone import standalone_cluster, transform_rows
from tests.pipeline.test_delivery_columns import _consumers_story

GROUP = "audit"


def _write_records(directory: Path) -> None:
    """Two share-partitions' stories (the second with a record that does not decode),
    in two files as the Kafka source's columns."""
    rows: dict[str, list[Any]] = {
        name: [] for name in ("key", "value", "topic", "partition", "offset", "timestamp")
    }
    for seed in (1, 2):
        records = _consumers_story(seed, writes=60)
        share_partition = SharePartitionKey.of(records[0].key)
        state_partition = state_partition_for(share_partition, DEFAULT_STATE_PARTITIONS) + seed
        for offset, record in enumerate(records):
            key, value = encode_record(record)
            if seed == 2 and offset == 30:
                value = b"\x00\x07"
            rows["key"].append(key)
            rows["value"].append(value)
            rows["topic"].append("__share_group_state")
            rows["partition"].append(state_partition)
            rows["offset"].append(offset)
            rows["timestamp"].append(1_767_225_600_000_000 + offset * 1000)
    table = pa.table(
        {
            "key": pa.array(rows["key"], pa.binary()),
            "value": pa.array(rows["value"], pa.binary()),
            "topic": pa.array(rows["topic"], pa.string()),
            "partition": pa.array(rows["partition"], pa.int32()),
            "offset": pa.array(rows["offset"], pa.int64()),
            "timestamp": pa.array(rows["timestamp"], pa.timestamp("us", tz="UTC")),
        }
    )
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), directory / "part-0.parquet")
    pq.write_table(table.slice(half), directory / "part-1.parquet")


@pytest.mark.slow
@pytest.mark.timeout(900)  # six JVMs start on a shared machine
def test_a_standalone_cluster_gives_the_rows_local_gives(spark: Any, tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    _write_records(records)
    local = json.loads(json.dumps(transform_rows(spark, str(records), GROUP)))
    out = tmp_path / "cluster.json"

    with standalone_cluster(workers=2, cores_per_worker=1) as cluster:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.pipeline.standalone",
                cluster.url,
                str(records),
                GROUP,
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=720,
            check=False,
            cwd=Path(__file__).parents[2],
        )

    assert run.returncode == 0, run.stderr[-3000:]
    clustered = json.loads(out.read_text())
    assert len(local["replay"]) == 2 * 61 + 2 * 3  # every record of both stories
    assert any(row[8] is not None for row in local["replay"])  # the corrupt record's error
    assert local["deliveries"]
    assert (local["whole replay"], local["whole deliveries"]) == (
        local["replay"],
        local["deliveries"],
    )
    assert clustered == local
