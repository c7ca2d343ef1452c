"""``kshare audit`` over a state topic that Kafka prunes, and ``audit capture`` that keeps it.

The sandbox's share coordinator runs Kafka's timers a thousand times faster
(cold snapshots every second, pruning every few), so a scenario's early
state records are gone from the topic a few seconds later, as on Kafka
after five minutes. A capture started before the scenario keeps them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.state.partitioning import SHARE_STATE_TOPIC
from kshare_cli.state.records import ShareSnapshotValue, StateRecord, decode_record
from tests.cli.conftest import Kshare
from tests.cli.test_audit_cmd import (
    ACCEPT,
    ACK_TYPES,
    MASTER,
    REJECT,
    Record,
    _produce,
    _set_group_configs,
    _share_consumer,
)
from tests.support.report import ReportParser
from tests.support.sandbox import Cluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import wait_for

COLD_MS = "share.coordinator.cold.partition.snapshot.interval.ms"
PRUNE_MS = "share.coordinator.state.topic.prune.interval.ms"
UPDATES_PER_SNAPSHOT = "share.coordinator.snapshot.update.records.per.snapshot"
REJECTED = (2, 5, 7)


@dataclass
class Pruned:
    kshare: Kshare
    cluster: Cluster
    topic: str
    group: str
    records: list[Record]
    history: Path


@dataclass
class Scene:
    """A sandbox with a topic and a share group of its own, named with suffix."""

    sandbox: SandboxThread
    cluster: Cluster
    topic: str
    group: str
    suffix: str


@contextmanager
def _share_group_sandbox(name: str, config: dict[str, str]) -> Iterator[Scene]:
    """A sandbox with broker config (the share coordinator's timers), a one-partition topic
    NAME-SUFFIX and a share group NAME-g-SUFFIX that starts at its earliest record."""
    settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=100,
        share_min_heartbeat_interval_ms=100,
        share_min_record_lock_duration_ms=1_000,
        # Assignments at once (4.3+'s interval 0, as 4.2): with the 1 s default a new
        # share-partition sits idle a second before its first acknowledgement, and a 1 s
        # cold-snapshot timer snapshots it then (and, the shard quiet, not after the story).
        share_assignment_interval_ms=0,
    )
    with SandboxThread(settings=settings, config=config) as sandbox:
        cluster = Cluster(sandbox.bootstrap, {}, sandbox)
        suffix = uuid.uuid4().hex[:8]
        topic, group = f"{name}-{suffix}", f"{name}-g-{suffix}"
        admin = AdminClient(cluster.config())
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(30)
        _set_group_configs(admin, group, {"share.auto.offset.reset": "earliest"})
        yield Scene(sandbox, cluster, topic, group, suffix)


def _capture_stream(spark: Any, cluster: Cluster, group: str, history: Path) -> Any:
    """The capture stream of the group's state records into history, started (5 a second)."""
    from kshare_cli.pipeline.capture import CaptureManifest, capture_query, start_manifest

    manifest = CaptureManifest(SHARE_STATE_TOPIC, (group,))
    start_manifest(history, manifest)
    return capture_query(
        spark, {"bootstrap.servers": cluster.bootstrap}, history, manifest, trigger_seconds=0.2
    )


def _run_story(
    cluster: Cluster,
    group: str,
    topic: str,
    name: str,
    indexes: range = range(10),
    rejected: tuple[int, ...] = REJECTED,
) -> list[Record]:
    """Records delivered once each: those of the rejected indexes (2, 5 and 7) archived,
    the others accepted."""
    records = _produce(cluster, topic, indexes)
    consumer = _share_consumer(cluster, group, topic, name)
    try:
        by_value = {record.value: record for record in records}
        deadline = time.monotonic() + 60
        while any(not record.actions for record in records):
            assert time.monotonic() < deadline, records
            messages = [m for m in consumer.poll(0.1) if m.error() is None]
            for message in messages:
                record = by_value[message.value() or b""]
                action = REJECT if record.index in rejected else ACCEPT
                record.actions.append((message.delivery_count() or 0, action))
                consumer.acknowledge(message, ACK_TYPES[action])
            if messages:
                consumer.commit_sync(10)
    finally:
        consumer.close()
    return records


def _state_watermarks(cluster: Cluster) -> dict[int, tuple[int, int]]:
    consumer = Consumer(cluster.config(**{"group.id": "kshare-test-watermarks"}))
    try:
        metadata = consumer.list_topics(SHARE_STATE_TOPIC, timeout=10)
        return {
            partition: consumer.get_watermark_offsets(
                TopicPartition(SHARE_STATE_TOPIC, partition), timeout=10, cached=False
            )
            for partition in metadata.topics[SHARE_STATE_TOPIC].partitions
        }
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def pruned(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pruned]:
    skip_on_real_cluster("the share coordinator's snapshot and prune timers are broker configs")
    with _share_group_sandbox("hist", {COLD_MS: "1000", PRUNE_MS: "4000"}) as scene:
        cluster, topic, group = scene.cluster, scene.topic, scene.group
        home = tmp_path_factory.mktemp("history")
        kshare = Kshare(cluster.bootstrap, None, home / "config.toml")
        history = home / "capture"
        # The capture runs from before the first state record, as an operator would run it.
        query = _capture_stream(spark, cluster, group, history)
        try:
            records = _run_story(cluster, group, topic, f"hist-{scene.suffix}")
            # Idle now: cold snapshots restate the state, and pruning moves the log start.
            wait_for(
                lambda: any(low for low, _ in _state_watermarks(cluster).values()),
                timeout=30,
                interval=0.2,
                what="the state topic pruned",
            )
        finally:
            query.stop()
        # The command's bounded run catches up with what the stream had not read yet.
        _capture_until_caught_up(kshare, group, history)
        yield Pruned(kshare, cluster, topic, group, records, history)


def _json(pruned: Pruned, *args: str) -> tuple[dict[str, Any], str]:
    result = pruned.kshare.run(
        "audit", *args, "--group", pruned.group, "-o", "json", "--master", MASTER
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    document: dict[str, Any] = json.loads(result.stdout)
    return document, result.stderr


def test_archived_after_pruning_says_history_is_missing_and_dates_nothing_wrongly(
    pruned: Pruned,
) -> None:
    document, stderr = _json(pruned, "archived")

    (history,) = document["history"]
    assert (history["topic"], history["partition"]) == (pruned.topic, 0)
    assert history["history_complete"] is False and history["history_missing"] == "pruned"
    assert history["history_from"] is not None
    # Every archiving happened before the earliest state left: its time is unknown.
    assert sorted(row["offset"] for row in document["archived"]) == list(REJECTED)
    assert {row["archived_at"] for row in document["archived"]} == {None}
    # The earliest snapshot left still starts at 0 (Kafka's stored start offset trails
    # acknowledgements): every offset is known, only the times before it are not.
    assert (history["unknown_first_offset"], history["unknown_last_offset"]) == (None, None)
    assert [line for line in stderr.strip().splitlines() if pruned.topic in line] == [
        f"kshare: warning: {pruned.topic}:0: state records before {history['history_from']} "
        "pruned by Kafka before this audit; every offset is still known, outcomes reached "
        "before then have time unknown; `kshare audit capture` keeps state records before "
        "Kafka prunes them"
    ]


def test_history_of_another_group_is_refused_before_spark(pruned: Pruned) -> None:
    result = pruned.kshare.run(
        "audit", "archived", "--group", "someone-else", "--history", str(pruned.history)
    )

    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"kshare: error: --history {pruned.history}: it captures {pruned.group}, "
        "not group 'someone-else'"
    ]


@dataclass
class Captured:
    kshare: Kshare
    topic: str
    group: str
    records: list[Record]
    history: Path
    state_partition: int
    cold_snapshots_read: int
    """How many state records the capture read after the story: the idle group's snapshot."""
    end_before_restart: int
    """The state partition's log end offset when the restarted (--until-caught-up) run began."""


def _read_through(query: Any, partition: int) -> int:
    """Where the capture stream's last completed micro-batch ended in a state partition."""
    progress = query.lastProgress
    if progress is None or not progress["sources"][0]["endOffset"]:
        return -1
    ends = json.loads(progress["sources"][0]["endOffset"])
    return int(ends.get(SHARE_STATE_TOPIC, {}).get(str(partition), -1))


@pytest.fixture(scope="module")
def captured(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """A capture that runs from before the story, through the group's idle snapshots and
    a prune of everything before the latest one; stopped, then restarted with
    --until-caught-up over what the coordinator wrote meanwhile.

    The snapshots come on the sandbox's timer (every second); the prune is the
    sandbox's own prune pass, run when the capture has read what it deletes. On
    Kafka a capture has five minutes to read a record before it can go, here a
    Spark micro-batch on a shared machine takes seconds: on the prune timer the
    test would race the capture.
    """
    skip_on_real_cluster("the share coordinator's snapshot and prune timers are broker configs")
    from kshare_cli.sandbox.share import share_groups

    with _share_group_sandbox("kept", {COLD_MS: "1000", PRUNE_MS: str(3_600_000)}) as scene:
        sandbox, cluster, topic, group = scene.sandbox, scene.cluster, scene.topic, scene.group
        suffix = scene.suffix
        home = tmp_path_factory.mktemp("kept")
        kshare = Kshare(cluster.bootstrap, None, home / "config.toml")
        history = home / "capture"
        query = _capture_stream(spark, cluster, group, history)
        try:
            records = _run_story(cluster, group, topic, f"kept-{suffix}")
            (state_partition, (_, story_end)) = next(
                (partition, marks)
                for partition, marks in _state_watermarks(cluster).items()
                if marks[1] > 0
            )
            # Idle now: the coordinator snapshots the group within a second, restating it.
            wait_for(
                lambda: _state_watermarks(cluster)[state_partition][1] > story_end,
                timeout=30,
                interval=0.2,
                what="a snapshot of the idle group",
            )
            read_to = _state_watermarks(cluster)[state_partition][1]
            wait_for(
                lambda: _read_through(query, state_partition) >= read_to,
                timeout=120,
                interval=0.2,
                what=f"the capture reading {SHARE_STATE_TOPIC}-{state_partition} to {read_to}",
            )
            sandbox.call(lambda broker: share_groups(broker).prune())
            assert _state_watermarks(cluster)[state_partition][0] > 0, "nothing pruned"
        finally:
            query.stop()
        # The group goes on while the capture is stopped: two more records, accepted.
        records += _run_story(cluster, group, topic, f"kept2-{suffix}", range(10, 12))
        wait_for(
            lambda: _state_watermarks(cluster)[state_partition][1] > read_to,
            timeout=30,
            interval=0.2,
            what="state records after the capture stopped",
        )
        end_before_restart = _state_watermarks(cluster)[state_partition][1]
        _capture_until_caught_up(kshare, group, history)
        yield Captured(
            kshare,
            topic,
            group,
            records,
            history,
            state_partition,
            read_to - story_end,
            end_before_restart,
        )


def _captured_json(captured: Captured, job: str) -> dict[str, Any]:
    result = captured.kshare.run(
        "audit",
        job,
        "--group",
        captured.group,
        "--history",
        str(captured.history),
        "-o",
        "json",
        "--master",
        MASTER,
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "pruned" not in result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_capture_restarted_on_its_directory_kept_every_state_record_once(
    captured: Captured,
) -> None:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    table = pq.read_table(captured.history / "records")
    positions = sorted(
        zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True)
    )

    # From the group's first state record to what the log held when the restart began:
    # the stopped stream's, then the restarted one's, none twice, none left out.
    last = positions[-1][1]
    assert last + 1 >= captured.end_before_restart
    assert positions == [(captured.state_partition, offset) for offset in range(last + 1)]


def test_archived_with_history_are_exactly_the_archived_records_and_the_history_is_complete(
    captured: Captured,
) -> None:
    document = _captured_json(captured, "archived")

    (history,) = document["history"]
    assert (history["topic"], history["partition"]) == (captured.topic, 0)
    assert (history["history_complete"], history["history_missing"]) == (True, None)
    by_offset = {record.offset: record for record in captured.records}
    assert [
        (row["offset"], row["key"], row["value"], row["headers"], row["delivery_count"])
        for row in sorted(document["archived"], key=lambda row: row["offset"])
    ] == [
        (
            by_offset[offset].offset,
            by_offset[offset].key.decode(),
            by_offset[offset].value.decode(),
            [{"key": "i", "value": str(by_offset[offset].index)}],
            1,
        )
        for offset in sorted(
            record.offset for record in captured.records if record.index in REJECTED
        )
    ]
    # The whole history is there, so each archiving has its time.
    assert None not in {row["archived_at"] for row in document["archived"]}


def test_deliveries_with_history_cover_every_offset(captured: Captured) -> None:
    document = _captured_json(captured, "deliveries")

    per_offset = {}
    for each in document["deliveries"]:
        assert (each["topic"], each["partition"]) == (captured.topic, 0)
        assert each["last_changed"] is not None
        for offset in range(each["first_offset"], each["last_offset"] + 1):
            assert offset not in per_offset
            per_offset[offset] = (each["max_delivery_count"], each["final_state"])
    assert per_offset == {
        record.offset: (1, "archived" if record.index in REJECTED else "acknowledged")
        for record in captured.records
    }


def test_timeline_with_history_has_no_rows_for_the_idle_groups_snapshots(
    captured: Captured,
) -> None:
    document = _captured_json(captured, "timeline")

    rows = document["timeline"]
    # The story: the group's first snapshot, then its updates; the snapshot the
    # coordinator wrote of the idle group, captured, restates it and adds nothing.
    assert captured.cold_snapshots_read >= 1
    assert [row["record"] for row in rows] == ["snapshot"] + ["update"] * (len(rows) - 1)
    assert len(rows) >= 2


def test_dlq_topic_help_names_kafkas_six_dlq_headers() -> None:
    from typer.testing import CliRunner

    from kshare_cli.cli.app import app
    from kshare_cli.pipeline.dead_letters import DlqHeader

    result = CliRunner().invoke(app, ["audit", "archived", "--help"], env={"COLUMNS": "400"})

    assert result.exit_code == 0
    text = " ".join(result.stdout.replace("│", " ").split())
    first, *rest = list(DlqHeader)
    named = ", ".join([first.value, *(header.removeprefix("__dlq.errors") for header in rest)])
    assert len(DlqHeader) == 6 and f"(headers {named};" in text


def _capture_until_caught_up(kshare: Kshare, group: str, history: Path) -> None:
    result = kshare.run(
        "audit",
        "capture",
        "--group",
        group,
        "--to",
        str(history),
        "--until-caught-up",
        "--master",
        MASTER,
    )
    assert result.exit_code == 0, result.stderr


def _captured_last_offset(history: Path) -> int:
    import pyarrow.parquet as pq

    return max(pq.read_table(history / "records").column("offset").to_pylist())


def test_records_pruned_while_the_capture_was_stopped_are_a_gap_it_reports(
    spark: Any, tmp_path: Path
) -> None:
    skip_on_real_cluster("the share coordinator's snapshot and prune timers are broker configs")
    from kshare_cli.sandbox.share import share_groups

    # A snapshot after every update, so that a prune can delete updates the capture never read.
    config = {COLD_MS: "1000", PRUNE_MS: str(3_600_000), UPDATES_PER_SNAPSHOT: "1"}
    with _share_group_sandbox("gap", config) as scene:
        sandbox, cluster, topic, group = scene.sandbox, scene.cluster, scene.topic, scene.group
        suffix = scene.suffix
        kshare = Kshare(cluster.bootstrap, None, tmp_path / "config.toml")
        history = tmp_path / "capture"
        _run_story(cluster, group, topic, f"gap-{suffix}")
        _capture_until_caught_up(kshare, group, history)
        read_to = _captured_last_offset(history)
        (state_partition,) = [p for p, marks in _state_watermarks(cluster).items() if marks[1]]
        # State records nobody reads, then a snapshot; the prune deletes what lies before it.
        _run_story(cluster, group, topic, f"gap2-{suffix}", range(10, 11))
        _run_story(cluster, group, topic, f"gap3-{suffix}", range(11, 12))
        wait_for(
            lambda: _state_watermarks(cluster)[state_partition][1] >= read_to + 3,
            timeout=30,
            interval=0.2,
            what="state records after the capture stopped",
        )

        def pruned_past_the_capture() -> bool:
            sandbox.call(lambda broker: share_groups(broker).prune())
            return _state_watermarks(cluster)[state_partition][0] > read_to + 1

        wait_for(pruned_past_the_capture, timeout=30, interval=0.2, what="unread records pruned")
        log_start = _state_watermarks(cluster)[state_partition][0]

        # The restarted capture goes on from the log start (no stall, exit 0) ...
        _capture_until_caught_up(kshare, group, history)
        assert _captured_last_offset(history) >= log_start
        result = kshare.run(
            "audit",
            "archived",
            "--group",
            group,
            "--history",
            str(history),
            "-o",
            "json",
            "--master",
            MASTER,
        )

    # ... and the audit says what it did not read, though the capture began at the start.
    assert result.exit_code == 0, result.stderr
    (share_partition,) = json.loads(result.stdout)["history"]
    assert (share_partition["history_complete"], share_partition["history_missing"]) == (
        False,
        "gap",
    )
    assert f"{topic}:0: state records pruned by Kafka between the capture in {history} " in (
        result.stderr
    )


# --------------------------------------------------------------------------- offsets pruned


@dataclass
class PrunedPast:
    kshare: Kshare
    topic: str
    group: str
    records: list[Record]
    start_offset: int
    """The start offset of the earliest state record left: the first offset the topic knows."""


def _state_records(cluster: Cluster, partition: int) -> list[tuple[int, StateRecord]]:
    """What a state-topic partition holds now, decoded, from its log start to its end."""
    low, high = _state_watermarks(cluster)[partition]
    consumer = Consumer(
        cluster.config(
            **{"group.id": f"kshare-test-{uuid.uuid4().hex}", "enable.partition.eof": True}
        )
    )
    read: list[tuple[int, StateRecord]] = []
    try:
        consumer.assign([TopicPartition(SHARE_STATE_TOPIC, partition, low)])
        while not read or read[-1][0] < high - 1:
            message = consumer.poll(10)
            assert message is not None, f"{SHARE_STATE_TOPIC}-{partition} did not answer"
            if message.error() is not None:
                break
            offset = message.offset()
            assert offset is not None
            read.append((offset, decode_record(message.key(), message.value())))
    finally:
        consumer.close()
    return read


@pytest.fixture(scope="module")
def pruned_past(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrunedPast]:
    """Records 0-9 (2, 5, 7 archived), then 10-14 (11 and 14 archived), then a prune: the
    earliest snapshot left starts past 0-9, as on Kafka when a partition was consumed on
    after its first records were done with (the stored start offset trails by a write).

    The snapshot comes on the sandbox's timer (every second); the prune is the sandbox's
    own pass, run once that snapshot is there.
    """
    skip_on_real_cluster("the share coordinator's snapshot and prune timers are broker configs")
    from kshare_cli.sandbox.share import share_groups

    with _share_group_sandbox("past", {COLD_MS: "1000", PRUNE_MS: str(3_600_000)}) as scene:
        sandbox, cluster, topic, group = scene.sandbox, scene.cluster, scene.topic, scene.group
        home = tmp_path_factory.mktemp("past")
        kshare = Kshare(cluster.bootstrap, None, home / "config.toml")
        records = _run_story(cluster, group, topic, f"past-{scene.suffix}")
        records += _run_story(
            cluster, group, topic, f"past2-{scene.suffix}", range(10, 15), rejected=(11, 14)
        )
        (state_partition,) = [p for p, marks in _state_watermarks(cluster).items() if marks[1]]
        story_end = _state_watermarks(cluster)[state_partition][1]

        def snapshot_after_the_story() -> bool:
            return any(
                offset >= story_end and isinstance(record.value, ShareSnapshotValue)
                for offset, record in _state_records(cluster, state_partition)
            )

        wait_for(snapshot_after_the_story, timeout=30, interval=0.2, what="an idle snapshot")
        sandbox.call(lambda broker: share_groups(broker).prune())
        left = _state_records(cluster, state_partition)
        first_offset, first = left[0]
        assert first_offset >= story_end and isinstance(first.value, ShareSnapshotValue), left
        yield PrunedPast(kshare, topic, group, records, first.value.start_offset)


def _unknown_line(past: PrunedPast, history_from: str) -> str:
    last = past.start_offset - 1
    return (
        f"offsets 0–{last} of {past.topic}:0: pruned by Kafka before this audit, not in these "
        f"results (state read from {history_from}); `kshare audit capture` keeps state "
        "records before Kafka prunes them"
    )


def _past_run(past: PrunedPast, *args: str) -> Any:
    result = past.kshare.run("audit", *args, "--group", past.group, "--master", MASTER)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_archived_after_pruning_names_the_offsets_it_no_longer_knows(
    pruned_past: PrunedPast, tmp_path: Path
) -> None:
    report = tmp_path / "report.html"
    result = _past_run(pruned_past, "archived", "-o", "json", "--report", str(report))
    document = json.loads(result.stdout)

    start = pruned_past.start_offset
    assert start >= 10  # the first records' offsets are all gone from the state topic
    (history,) = document["history"]
    assert (history["history_complete"], history["history_missing"]) == (False, "pruned")
    assert (history["unknown_first_offset"], history["unknown_last_offset"]) == (0, start - 1)
    # Every archived record is either listed or inside the range named unknown.
    archived = sorted(r.offset for r in pruned_past.records if r.index in (*REJECTED, 11, 14))
    assert [row["offset"] for row in document["archived"]] == [o for o in archived if o >= start]
    assert all(offset < start for offset in archived[:3])  # 2, 5 and 7: named unknown
    # stderr names the range, once.
    line = _unknown_line(pruned_past, history["history_from"])
    assert [each for each in result.stderr.splitlines() if pruned_past.topic in each] == [
        f"kshare: warning: {line}"
    ]
    # The HTML report says the same, with the range as data.
    parser = ReportParser()
    parser.feed(report.read_text(encoding="utf-8"))
    ((attributes, text),) = parser.history
    assert text == line
    assert (
        attributes["data-unknown-first-offset"],
        attributes["data-unknown-last-offset"],
    ) == ("0", str(start - 1))


def test_deliveries_after_pruning_cover_every_offset_or_name_it_unknown(
    pruned_past: PrunedPast,
) -> None:
    document = json.loads(_past_run(pruned_past, "deliveries", "-o", "json").stdout)
    table = _past_run(pruned_past, "deliveries", "-o", "table").stdout

    (history,) = document["history"]
    unknown = range(history["unknown_first_offset"], history["unknown_last_offset"] + 1)
    listed: list[int] = []
    for each in document["deliveries"]:
        listed += range(each["first_offset"], each["last_offset"] + 1)
        # Every record was acknowledged or archived: every range is done with.
        assert each["complete"] is True, each
    assert sorted([*unknown, *listed]) == sorted(r.offset for r in pruned_past.records)
    assert table.rstrip().splitlines()[-1] == _unknown_line(pruned_past, history["history_from"])
