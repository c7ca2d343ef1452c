"""``kshare inflight`` with the leader of one ``__share_group_state`` partition down.

Issue 16: the state reader read all fifty state partitions, and librdkafka waited
for the down leader's, so ``kshare inflight`` of any group took the state share of
--timeout (24 s of 30 s) whichever group it was about. Now it reads only the state
partitions holding the group's share-partitions and gives up on each one alone:
a group placed elsewhere answers in full at once.

Issue 23: a group with one share-partition on the down leader's state partition
cannot have its offsets: Kafka's group coordinator, healthy itself, holds
DescribeShareGroupOffsets until every share coordinator it reads from answers
(the sandbox holds it as Kafka 4.2-4.4 do). kshare then shows what can be known:
the group's description, and its other share-partitions from the state topic
itself (start offset, window, the log end offset and kshare's lag), the missing
one marked, the silent broker named, exit 1, within --timeout. A reset's plan
needs every share-partition: it fails naming the broker. Three sandbox nodes; the
stopped node stays the leader in the metadata (never fenced), as on Kafka until
the broker session times out.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import GroupDescription
from kshare_cli.errors import ExitCode
from kshare_cli.render.inflight import CSV_HEADER, render_inflight
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.replay import SharePartitionKey
from tests.cli.conftest import Kshare, validate
from tests.support.fault_beds import (
    NEVER_FENCED_MS,
    PARTITIONS,
    share_key,
    start_offsets_at_zero,
    topic_id_of,
)
from tests.support.sandbox import StartCluster
from tests.support.waiting import wait_for

#: A broker stopped or hung against --timeout: run alone, after the parallel part
#: (scripts/test.sh), so other workers' load does not eat the budgets it asserts.
pytestmark = pytest.mark.faults

#: The node stopped: it leads one state partition of the victim group, nothing else used.
VICTIM = 2
#: Where everything else lives: the topic's leaders, the coordinators, the other state partitions.
HEALTHY = 1
#: The victim's share-partition on the down leader's state partition.
VICTIM_PARTITION = 0
TIMEOUT_S = 30.0
#: The bound a command under --timeout is held to: the timeout and a margin.
WITHIN_S = TIMEOUT_S + 5.0


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


def _timed(kshare: Kshare, *args: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    result = kshare.run(*args, "--timeout", f"{TIMEOUT_S:g}s")
    return result.exit_code, result.stdout, result.stderr, time.monotonic() - started


def test_inflight_reads_only_its_state_partitions_and_gives_up_on_each_alone(
    sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    # Kafka 4.4 persists a reset's delivery-complete count as 0 (4.2: -1, lag unknown):
    # the broker gives the healthy group a lag, and kshare computes the victim's.
    sandbox = sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS, kafka_version="4.4")
    suffix = uuid.uuid4().hex[:8]
    topic = f"state-faults-{suffix}"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap})
    for partition in range(PARTITIONS):
        producer.produce(topic, value=b"r", partition=partition)
    assert producer.flush(15) == 0
    topic_id = topic_id_of(sandbox, topic)
    healthy, victim = _groups(f"state-faults-{suffix}", topic_id)
    for partition in range(PARTITIONS):
        sandbox.move_leader(topic, partition, HEALTHY)
    for group in (healthy, victim):
        sandbox.move_group_coordinator(group, HEALTHY)
        for partition in range(PARTITIONS):
            on = VICTIM if (group, partition) == (victim, VICTIM_PARTITION) else HEALTHY
            sandbox.move_share_coordinator(share_key(group, topic_id, partition), on)
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

    healthy_lags = {row["partition"]: row["lag"] for row in document["partitions"]}
    assert {row["lag_source"] for row in document["partitions"]} == {"broker"}
    assert document["offsets_note"] is None

    # The victim's coordinator (the healthy node) holds DescribeShareGroupOffsets: its
    # description and the state topic answer instead, the broker named, exit 1.
    code, out, err, elapsed = _timed(kshare, "inflight", victim, "-o", "json")
    message = f"inflight {victim}: exit {code} after {elapsed:.2f} s\n{err}"
    assert code == ExitCode.PARTIAL, message
    assert elapsed < WITHIN_S, message
    assert "Traceback" not in err, message
    held = (
        f"the group coordinator broker {HEALTHY} ({sandbox.addresses[HEALTHY]}) held "
        f"DescribeShareGroupOffsets while {named} did not answer"
    )
    assert f"kshare: error: share group '{victim}': {held}: start offsets and lag read " in err
    assert "from __share_group_state instead (lag computed by kshare)" in err, message
    assert (
        f"{topic}:{VICTIM_PARTITION}: window unknown: state partition "
        f"{victim_state_partition}'s leader {named} did not answer"
    ) in err, message
    document = json.loads(out)
    validate(document, "inflight.schema.json")
    assert held in document["offsets_note"]
    assert f"state partitions led by {named} are missing or unknown" in document["offsets_note"]
    assert (document["state"], document["members"]) == ("Empty", 0)
    by_partition = {row["partition"]: row for row in document["partitions"]}
    assert sorted(by_partition) == list(range(PARTITIONS)), by_partition
    missing = by_partition[VICTIM_PARTITION]
    assert (missing["start_offset"], missing["window"], missing["lag"]) == (None, None, None)
    assert named in missing["window_error"]
    for partition in range(PARTITIONS):
        if partition == VICTIM_PARTITION:
            continue
        row = by_partition[partition]
        assert row["window"] is not None and row["window_error"] is None, by_partition
        assert (row["start_offset"], row["end_offset"]) == (0, 1), row
        # The broker's rule, applied by kshare to the persisted state: the same figure
        # the broker gives the healthy group placed alike.
        assert (row["lag"], row["lag_source"]) == (healthy_lags[partition], "state"), row
    assert (document["total_lag_source"], document["total_lag_complete"]) == ("state", False)

    # A reset's plan needs every share-partition's start offset: it fails naming the
    # silent broker, within --timeout.
    code, out, err, elapsed = _timed(
        kshare, "reset-offsets", victim, "--all-topics", "--to-earliest", "-o", "json"
    )
    message = f"reset-offsets {victim}: exit {code} after {elapsed:.2f} s\n{err}"
    assert code == ExitCode.PARTIAL, message
    assert elapsed < WITHIN_S, message
    assert "Traceback" not in err, message
    assert f"share group '{victim}': no plan without every start offset: {held}" in err, message
    assert out == "", message


def _held_group() -> GroupInflight:
    """A group answered from the state topic: one share-partition shown, one marked."""
    note = (
        "the group coordinator broker 1 (h:1) held DescribeShareGroupOffsets while broker 2 "
        "(h:2) did not answer: start offsets and lag read from __share_group_state instead "
        "(lag computed by kshare); share-partitions whose state lives on state partition 7 "
        "led by broker 2 (h:2) are missing or unknown"
    )
    shown = PartitionInflight("t", 1, uuid.uuid4(), 0, 5, 5, "state", None)
    marked = PartitionInflight(
        "t", 0, None, None, 5, None, None, None,
        window_error="state partition 7's leader broker 2 (h:2) did not answer",
    )  # fmt: skip
    description = GroupDescription("g", "Empty", None, 1, 1, "simple")
    return GroupInflight("g", description, (shown, marked), None, 5, (), note)


def test_the_held_offsets_note_is_in_every_output_format() -> None:
    group = _held_group()
    note = group.offsets_note
    assert note is not None
    assert group.total_lag_source == "state"
    table = render_inflight(group, "table")
    assert f"Offsets: {note}." in table.splitlines()
    document = json.loads(render_inflight(group, "json"))
    validate(document, "inflight.schema.json")
    assert document["offsets_note"] == note
    assert [row["lag_source"] for row in document["partitions"]] == [None, "state"]
    rows = [json.loads(line) for line in render_inflight(group, "jsonl").splitlines()]
    for row in rows:
        validate(row, "inflight-row.schema.json")
    assert [row["offsets_note"] for row in rows] == [note, note]
    csv_lines = render_inflight(group, "csv").splitlines()
    assert csv_lines[0].split(",")[-1] == CSV_HEADER[-1] == "offsets_note"
    assert all(note in line for line in csv_lines[1:])
