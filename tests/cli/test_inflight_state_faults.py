"""``kshare inflight`` with the leader of one ``__share_group_state`` partition down.

Issue 16: the state reader read all fifty state partitions, and librdkafka waited
for the down leader's, so ``kshare inflight`` of any group took the state share of
--timeout (24 s of 30 s) whichever group it was about. Now it reads only the state
partitions holding the group's share-partitions and gives up on each one alone:
a group placed elsewhere answers in full at once; a group with one share-partition
on the down leader's state partition shows its other windows, names the broker,
and exits 1. Three sandbox nodes; the stopped node stays the leader in the
metadata (never fenced), as on Kafka until the broker session times out.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.runner import SandboxThread
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, kafka_uuid, state_partition_for
from kshare_cli.state.replay import SharePartitionKey
from tests.cli.conftest import Kshare, validate
from tests.cli.test_cluster_faults import PARTITIONS, start_offsets_at_zero
from tests.support.golden import wait_for
from tests.support.sandbox import StartCluster

NEVER_FENCED_MS = 600_000
#: The node stopped: it leads one state partition of the victim group, nothing else used.
VICTIM = 2
#: Where everything else lives: the topic's leaders, the coordinators, the other state partitions.
HEALTHY = 1
#: The victim's share-partition on the down leader's state partition.
VICTIM_PARTITION = 0


def _topic_id(sandbox: SandboxThread, topic: str) -> uuid.UUID:
    found = sandbox.call(lambda broker: broker.topic(topic))
    assert found is not None, topic
    return uuid.UUID(str(found.topic_id))


def _placements(group: str, topic_id: uuid.UUID) -> list[int]:
    """The state partition of each of the group's share-partitions, by partition index."""
    return [
        state_partition_for(SharePartitionKey(group, topic_id, partition))
        for partition in range(PARTITIONS)
    ]


def _groups(prefix: str, topic_id: uuid.UUID) -> tuple[str, str]:
    """A healthy group and a victim group whose state partitions are all different."""
    healthy = f"{prefix}-healthy"
    taken = set(_placements(healthy, topic_id))
    for index in range(1000):
        victim = f"{prefix}-victim-{index}"
        placed = _placements(victim, topic_id)
        if len(set(placed)) == PARTITIONS and not taken & set(placed):
            return healthy, victim
    raise AssertionError("no victim group placed apart from the healthy one")


def _share_key(group: str, topic_id: uuid.UUID, partition: int) -> str:
    return f"{group}:{kafka_uuid(topic_id)}:{partition}"


def _timed(kshare: Kshare, *args: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    result = kshare.run(*args, "--timeout", "30s")
    return result.exit_code, result.stdout, result.stderr, time.monotonic() - started


def test_inflight_reads_only_its_state_partitions_and_gives_up_on_each_alone(
    sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    sandbox = sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS)
    suffix = uuid.uuid4().hex[:8]
    topic = f"state-faults-{suffix}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for partition in range(PARTITIONS):
        producer.produce(topic, value=b"r", partition=partition)
    assert producer.flush(15) == 0
    topic_id = _topic_id(sandbox, topic)
    healthy, victim = _groups(f"state-faults-{suffix}", topic_id)
    for partition in range(PARTITIONS):
        sandbox.move_leader(topic, partition, HEALTHY)
    for group in (healthy, victim):
        sandbox.move_group_coordinator(group, HEALTHY)
        for partition in range(PARTITIONS):
            on = VICTIM if (group, partition) == (victim, VICTIM_PARTITION) else HEALTHY
            sandbox.move_share_coordinator(_share_key(group, topic_id, partition), on)
        start_offsets_at_zero(sandbox, group, topic)
    victim_state_partition = _placements(victim, topic_id)[VICTIM_PARTITION]
    led_by_victim = sandbox.call(
        lambda broker: broker.cluster.partitions_led_by(VICTIM)  # type: ignore[no-any-return]
    )
    assert (SHARE_STATE_TOPIC, victim_state_partition) in led_by_victim
    bootstrap = ",".join(sandbox.addresses[node] for node in sorted(sandbox.addresses))
    kshare = Kshare(bootstrap, None, tmp_path / "config.toml")

    def windows_shown() -> bool:
        code, out, _, _ = _timed(kshare, "inflight", victim, "-o", "json")
        document = json.loads(out) if code == ExitCode.OK else None
        return document is not None and all(
            row["window"] is not None for row in document["partitions"]
        )

    wait_for(windows_shown, 15, what="every window of the victim group before the fault")
    sandbox.stop_node(VICTIM)
    named = f"broker {VICTIM} ({sandbox.addresses[VICTIM]})"

    code, out, err, elapsed = _timed(kshare, "inflight", healthy, "-o", "json")
    message = f"inflight {healthy}: exit {code} after {elapsed:.2f} s\n{err}"
    assert code == ExitCode.OK, message
    assert elapsed < 5.0, message
    document = json.loads(out)
    validate(document, "inflight.schema.json")
    assert [row["window_error"] for row in document["partitions"]] == [None] * PARTITIONS
    assert all(row["window"] is not None for row in document["partitions"]), document

    code, out, err, elapsed = _timed(kshare, "inflight", victim, "-o", "json")
    message = f"inflight {victim}: exit {code} after {elapsed:.2f} s\n{err}"
    assert code == ExitCode.PARTIAL, message
    assert elapsed < 10.0, message
    assert "Traceback" not in err, message
    assert (
        f"{topic}:{VICTIM_PARTITION}: window unknown: state partition "
        f"{victim_state_partition}'s leader {named} did not answer"
    ) in err, message
    document = json.loads(out)
    validate(document, "inflight.schema.json")
    by_partition = {row["partition"]: row for row in document["partitions"]}
    assert by_partition[VICTIM_PARTITION]["window"] is None
    assert named in by_partition[VICTIM_PARTITION]["window_error"]
    for partition in range(PARTITIONS):
        if partition != VICTIM_PARTITION:
            assert by_partition[partition]["window"] is not None, by_partition
            assert by_partition[partition]["window_error"] is None, by_partition

    # A reset's plan reads the windows the same way: its counts become lower bounds,
    # the reason names the broker, and it comes within seconds, not the state share.
    code, out, err, elapsed = _timed(
        kshare, "reset-offsets", victim, "--all-topics", "--to-earliest", "-o", "json"
    )
    message = f"reset-offsets {victim}: exit {code} after {elapsed:.2f} s\n{err}"
    assert code == ExitCode.OK, message
    assert elapsed < 10.0, message
    assert named in err, message
    plan = json.loads(out)
    validate(plan, "reset.schema.json")
    assert named in plan["counts_note"], out
