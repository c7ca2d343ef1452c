"""``kshare describe`` and ``kshare inflight`` when one partition's leader is down.

Issue 16: ListOffsets to the down leader failed per partition, and the failure
was dropped on the way to the models: END-OFFSET and LAG showed ``-`` and both
commands exited 0 saying nothing. Now the row keeps ``-``, stderr names the
leader (id and address) and the exit is 1, a partial answer. The topic has
replication factor 1, so its partition stays on the stopped leader (never
fenced: the metadata still names it, as Kafka's does until the session expires).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.errors import ExitCode
from tests.cli.conftest import Kshare, validate
from tests.support.fault_beds import (
    NEVER_FENCED_MS,
    PARTITIONS,
    share_key,
    start_offsets_at_zero,
    topic_id_of,
)
from tests.support.sandbox import StartCluster

#: The node stopped, and the one partition of the topic it leads.
VICTIM = 2
VICTIM_PARTITION = 1
HEALTHY = 1


def test_a_down_leaders_end_offset_is_named_and_partial(
    sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    sandbox = sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS)
    suffix = uuid.uuid4().hex[:8]
    topic = f"end-faults-{suffix}"
    group = f"end-faults-{suffix}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(15)
    for partition in range(PARTITIONS):
        sandbox.move_leader(topic, partition, VICTIM if partition == VICTIM_PARTITION else HEALTHY)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for partition in range(PARTITIONS):
        producer.produce(topic, value=b"r", partition=partition)
    assert producer.flush(15) == 0
    topic_id = topic_id_of(sandbox, topic)
    sandbox.move_group_coordinator(group, HEALTHY)
    for partition in range(PARTITIONS):
        sandbox.move_share_coordinator(share_key(group, topic_id, partition), HEALTHY)
    start_offsets_at_zero(sandbox, group, topic)
    bootstrap = ",".join(sandbox.addresses[node] for node in sorted(sandbox.addresses))
    kshare = Kshare(bootstrap, None, tmp_path / "config.toml")
    before = kshare.run("describe", group, "--timeout", "30s")
    assert before.exit_code == ExitCode.OK, before.stderr
    sandbox.stop_node(VICTIM)
    named = f"broker {VICTIM} ({sandbox.addresses[VICTIM]})"
    failing = f"share group '{group}', partition {topic}:{VICTIM_PARTITION}: end offset unknown: "

    started = time.monotonic()
    result = kshare.run("describe", group, "--timeout", "30s")
    elapsed = time.monotonic() - started
    message = f"describe: exit {result.exit_code} after {elapsed:.2f} s\n{result.stderr}"
    assert result.exit_code == ExitCode.PARTIAL, message
    assert failing in result.stderr and named in result.stderr, message
    assert elapsed < 10.0, message
    rows = {
        int(line.split()[2]): line.split()
        for line in result.stdout.splitlines()
        if line.split()[:2] == [group, topic]
    }
    assert sorted(rows) == list(range(PARTITIONS)), result.stdout
    header = next(line for line in result.stdout.splitlines() if "END-OFFSET" in line).split()
    column = header.index("END-OFFSET")
    assert rows[VICTIM_PARTITION][column] == "-", result.stdout
    for partition in range(PARTITIONS):
        if partition != VICTIM_PARTITION:
            assert rows[partition][column] == "1", result.stdout

    result = kshare.run("describe", group, "-o", "json", "--timeout", "30s")
    assert result.exit_code == ExitCode.PARTIAL, result.stderr
    document = json.loads(result.stdout)
    validate(document, "offsets.schema.json")
    (described,) = document["groups"]
    failures = {
        row["partition"]: row["end_offset_error"]
        for row in described["partitions"]
        if row["end_offset_error"] is not None
    }
    assert list(failures) == [VICTIM_PARTITION], described
    assert named in failures[VICTIM_PARTITION]["message"], failures

    started = time.monotonic()
    result = kshare.run("inflight", group, "-o", "json", "--timeout", "30s")
    elapsed = time.monotonic() - started
    message = f"inflight: exit {result.exit_code} after {elapsed:.2f} s\n{result.stderr}"
    assert result.exit_code == ExitCode.PARTIAL, message
    assert failing in result.stderr and named in result.stderr, message
    assert elapsed < 10.0, message
    document = json.loads(result.stdout)
    validate(document, "inflight.schema.json")
    ends = {row["partition"]: row["end_offset"] for row in document["partitions"]}
    assert ends == {p: None if p == VICTIM_PARTITION else 1 for p in range(PARTITIONS)}
    unanswered = document["partitions"][VICTIM_PARTITION]["end_offset_error"]
    assert named in unanswered["message"], unanswered
