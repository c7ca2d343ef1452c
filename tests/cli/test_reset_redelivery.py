"""What a reset really delivers again and skips, checked by a share consumer that drains.

A confluent-kafka ShareConsumer in explicit acknowledgement mode consumes
partition 0 of a two-partition topic (records 0-9) in each of five share groups:
it accepts 0-3, 5, 6 and 8, rejects 7 and releases 4 and 9, then leaves.
Partition 1 is empty while it is a member, so the group has no start offset
there. Afterwards 5 more records go to partition 0 (10-14) and 5 to partition 1
(0-4). So on partition 0 records 0-3, 5-8 are done (acknowledged or archived)
and 4, 9-14 are not; on partition 1 nothing was ever delivered.

Each test resets one group with ``--execute``, compares the plan's counts with
that story, and drains the group with a ShareConsumer: the records that come
back, and their offsets, must be what the plan said. Two apply the rollback plan
the reset saved: its dry run must count what its note says, and the drain after
it must deliver that. A sentinel record produced
to each partition after the reset marks the end of the drain (records of a
share-partition are delivered in offset order), so no test waits for nothing.
Against the sandbox, or a real cluster with ``KSHARE_TEST_BOOTSTRAP``.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from tests.cli.conftest import Kshare, validate
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for

ACCEPTED = frozenset({0, 1, 2, 3, 5, 6, 8})
REJECTED = frozenset({7})
RELEASED = frozenset({4, 9})
DONE = ACCEPTED | REJECTED  # what a reset at or below them delivers again
FIRST_RECORDS = 10
LATER_P0, LATER_P1 = 5, 5
SCENARIOS = ("earliest", "latest", "current", "offset", "first-unacknowledged", "undo-earliest")
JOIN_TIMEOUT_S = 90  # a share consumer's join takes Kafka's 5 s heartbeat interval or more


@dataclass(frozen=True)
class Story:
    topic: str
    groups: dict[str, str]


def _produce(cluster: Cluster, topic: str, partition: int, count: int, tag: str) -> list[int]:
    offsets: list[int] = []
    producer = Producer(cluster.config())
    for index in range(count):
        producer.produce(
            topic,
            value=f"{tag}{index}".encode(),
            partition=partition,
            on_delivery=lambda error, message: offsets.append(message.offset()),
        )
    assert producer.flush(30) == 0
    return sorted(offsets)


def _act(cluster: Cluster, group: str, topic: str) -> None:
    """Accept, reject and release partition 0's records 0-9 once each, then leave."""
    consumer = ShareConsumer(
        cluster.config(
            **{
                "group.id": group,
                "client.id": f"actor-{group}",
                "share.acknowledgement.mode": "explicit",
            }
        )
    )
    consumer.subscribe([topic])
    acted: set[int] = set()
    try:

        def all_acted() -> bool:
            messages = [m for m in consumer.poll(0.2) if m.error() is None]
            for message in messages:
                offset = message.offset()
                assert message.partition() == 0, "partition 1 is empty while the actor reads"
                if offset in ACCEPTED and offset not in acted:
                    kind = AcknowledgeType.ACCEPT
                elif offset in REJECTED and offset not in acted:
                    kind = AcknowledgeType.REJECT
                else:  # released, or a released record back for another delivery
                    kind = AcknowledgeType.RELEASE
                consumer.acknowledge(message, kind)
                acted.add(offset)
            if messages:
                for partition, error in consumer.commit_sync(10).items():
                    assert error is None, (partition, error)
            return acted >= set(range(FIRST_RECORDS))

        wait_for(all_acted, timeout=JOIN_TIMEOUT_S, interval=0, what=f"{group} acted on")
    finally:
        consumer.close()


def _state(kshare: Kshare, group: str) -> str:
    result = kshare.run("describe", group, "--state", "-o", "json")
    assert result.exit_code == 0, result.stderr
    (document,) = json.loads(result.stdout)["groups"]
    state: str = document["state"]
    return state


@pytest.fixture(scope="module")
def story(
    cluster: Cluster,
    cluster_command_config: Path | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Story]:
    suffix = uuid.uuid4().hex[:6]
    topic = f"redeliver-{suffix}"
    groups = {scenario: f"redeliver-{scenario[:5]}-{suffix}" for scenario in SCENARIOS}
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(30)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resources = [
        ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[earliest])
        for group in groups.values()
    ]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)
    assert _produce(cluster, topic, 0, FIRST_RECORDS, "first") == list(range(FIRST_RECORDS))
    # The five groups join side by side: one heartbeat interval for all.
    failures: list[BaseException] = []

    def act(group: str) -> None:
        try:
            _act(cluster, group, topic)
        except BaseException as error:  # noqa: BLE001 -- re-raised in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=act, args=(group,)) for group in groups.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    later = list(range(FIRST_RECORDS, FIRST_RECORDS + LATER_P0))
    assert _produce(cluster, topic, 0, LATER_P0, "later") == later
    assert _produce(cluster, topic, 1, LATER_P1, "later") == list(range(LATER_P1))
    checker = Kshare(
        cluster.bootstrap,
        cluster_command_config,
        tmp_path_factory.mktemp("redeliver") / "config.toml",
    )
    for group in groups.values():
        wait_for(lambda g=group: _state(checker, g) == "Empty", timeout=60, what=f"{group} empty")
    yield Story(topic, groups)


def _drain(cluster: Cluster, group: str, topic: str) -> dict[int, set[int]]:
    """Everything the group receives now, by partition: up to a sentinel record produced to
    each partition after the reset (a share-partition delivers in offset order)."""
    sentinels = {
        partition: _produce(cluster, topic, partition, 1, "sentinel")[0] for partition in (0, 1)
    }
    consumer = ShareConsumer(cluster.config(**{"group.id": group, "client.id": f"drain-{group}"}))
    consumer.subscribe([topic])
    received: dict[int, set[int]] = {0: set(), 1: set()}
    try:

        def both_sentinels() -> bool:
            for message in consumer.poll(0.2):
                if message.error() is None:
                    received[message.partition()].add(message.offset())
            return all(sentinels[p] in received[p] for p in (0, 1))

        wait_for(both_sentinels, timeout=JOIN_TIMEOUT_S, interval=0, what=f"{group} drained")
        consumer.commit_sync(10)
    finally:
        consumer.close()
    return {p: received[p] - {sentinels[p]} for p in (0, 1)}


def _reset(kshare: Kshare, tmp_path: Path, group: str, *args: str) -> tuple[dict[str, Any], Any]:
    rollback = tmp_path / f"{group}-rollback.csv"
    result = kshare.run(
        "reset-offsets", group, *args, "--execute", "--rollback-file", str(rollback), "-o", "json"
    )
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    validate(document, "reset.schema.json")
    assert document["executed"] is True and document["counts_exact"] is True
    assert "lower bounds" not in result.stderr
    return document, result


def _counts(document: dict[str, Any]) -> dict[int, tuple[int | None, int, int, int]]:
    """Partition -> (current, new, delivered again, skipped)."""
    return {
        p["partition"]: (p["current_offset"], p["new_offset"], p["redelivered"], p["skipped"])
        for p in document["partitions"]
    }


def _ends(document: dict[str, Any]) -> dict[int, int]:
    """The log end offsets when planned: the tests share the topic, and each drain adds a
    sentinel record to both partitions, which other groups never received."""
    return {p["partition"]: p["log_end_offset"] for p in document["partitions"]}


def _not_done_below(new: int) -> int:
    """Partition 0's records below ``new`` that were not done (skipped by a reset there)."""
    return sum(1 for offset in range(new) if offset not in DONE)


def _done_from(new: int) -> int:
    """Partition 0's done records at or above ``new`` (delivered again by a reset there)."""
    return sum(1 for offset in DONE if offset >= new)


def test_to_earliest_delivers_every_acknowledged_record_again(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, story: Story
) -> None:
    group = story.groups["earliest"]
    document, _ = _reset(kshare, tmp_path, group, "--topic", story.topic, "--to-earliest")
    counts, ends = _counts(document), _ends(document)
    assert {p: c[1:] for p, c in counts.items()} == {0: (0, len(DONE), 0), 1: (0, 0, 0)}
    assert counts[1][0] is None  # partition 1 had no start offset
    assert (document["redelivered"], document["skipped"]) == (len(DONE), 0)
    received = _drain(cluster, group, story.topic)
    assert received == {0: set(range(ends[0])), 1: set(range(ends[1]))}
    assert len(received[0] & DONE) == document["redelivered"]


def test_all_topics_to_latest_skips_the_backlog_of_a_partition_never_read(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, story: Story
) -> None:
    group = story.groups["latest"]
    dry = kshare.run("reset-offsets", group, "--all-topics", "--to-latest")
    assert dry.exit_code == 0, dry.stderr
    # The unread partition is in the plan, its current start offset '-'.
    assert any(line.split()[2:4] == ["1", "-"] for line in dry.stdout.splitlines()[2:]), dry.stdout
    document, result = _reset(kshare, tmp_path, group, "--all-topics", "--to-latest")
    counts, ends = _counts(document), _ends(document)
    # Partition 0: 4, 9 and everything from 10 on; 0-3 and 5-8 were done already.
    # Partition 1: its whole backlog, never delivered (Kafka's tool resets it too).
    assert counts == {
        0: (counts[0][0], ends[0], 0, _not_done_below(ends[0])),
        1: (None, ends[1], 0, ends[1]),
    }
    assert _not_done_below(ends[0]) >= len(RELEASED) + LATER_P0 and ends[1] >= LATER_P1
    assert (document["redelivered"], document["skipped"]) == (
        0,
        _not_done_below(ends[0]) + ends[1],
    )

    # The rollback plan restores partition 0's resume point, 4 (the first record not done),
    # and says how many acknowledged records it delivers again: 5-8.
    rollback = tmp_path / f"{group}-rollback.csv"
    resume = min(RELEASED)
    again = _done_from(resume)
    note = (
        "a rollback restores start offsets (each partition's first record not yet "
        "acknowledged or archived), not per-record acknowledgements, and delivers again "
        f"{again} record(s) acknowledged or archived before this reset; 1 share-partition(s) "
        "had no start offset, which it cannot restore"
    )
    lines = rollback.read_text().splitlines()
    assert lines[-1] == f"{group},{story.topic},0,{resume}"
    assert all(line.startswith("#") for line in lines[:-1]) and note in lines[1]
    assert note in result.stderr and f"--from-file {rollback} --execute" in result.stderr
    assert document["rollback_redelivers"] == again

    assert _noted_again(rollback) == again

    # Applied now, the plan counts what its note says: 5-8 again (finished before the
    # reset, which cleared their states), nothing skipped (0-3 were finished). The state
    # topic alone would say everything from 4 on again: after the reset it is all below
    # the start offset, skipped and finished alike.
    _rollback(kshare, tmp_path, group, rollback, (resume, again, 0), execute=False)
    # Nothing comes back after the reset. The drain acknowledges its sentinel record (the
    # log end when reset): one record finished since, which the plan now delivers again.
    assert _drain(cluster, group, story.topic) == {0: set(), 1: set()}
    sentinel = ends[0]
    undo = _rollback(kshare, tmp_path, group, rollback, (resume, again + 1, 0), execute=True)
    received = _drain(cluster, group, story.topic)
    # From 4 on: 4, 9 and later (never done), 5-8 (done before the reset: the note's
    # count), and the first drain's sentinel (done since).
    assert received[0] == set(range(resume, _ends(undo)[0]))
    assert len(received[0] & (DONE | {sentinel})) == undo["redelivered"] == again + 1
    assert received[1] == set()


def test_the_rollback_of_a_reset_to_earliest_delivers_again_what_its_note_says(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, story: Story
) -> None:
    group = story.groups["undo-earliest"]
    document, result = _reset(kshare, tmp_path, group, "--topic", story.topic, "--to-earliest")
    resume, again = min(RELEASED), _done_from(min(RELEASED))
    assert document["rollback_redelivers"] == again
    assert f"delivers again {again} record(s) acknowledged or archived before" in result.stderr
    rollback = tmp_path / f"{group}-rollback.csv"
    assert _noted_again(rollback) == again
    # The reset cleared every state from 0: the state topic alone would say that moving
    # to 4 skips 0-3 and delivers nothing again; the group had finished 0-3, and 5-8.
    for execute in (False, True):
        undo = _rollback(kshare, tmp_path, group, rollback, (resume, again, 0), execute=execute)
    received = _drain(cluster, group, story.topic)
    assert received[0] == set(range(resume, _ends(undo)[0]))
    assert len(received[0] & DONE) == again
    # Partition 1 had no start offset, which no rollback restores: the reset's 0 stays.
    assert received[1] == set(range(_ends(document)[1]))


def test_to_current_delivers_again_what_the_trailing_start_offset_hides(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, story: Story
) -> None:
    group = story.groups["current"]
    document, _ = _reset(kshare, tmp_path, group, "--topic", story.topic, "--to-current")
    counts, ends = _counts(document), _ends(document)
    start = counts[0][0]
    assert start is not None and start <= min(RELEASED)
    assert counts == {
        0: (start, start, _done_from(start), 0),
        1: (None, ends[1], 0, ends[1]),
    }
    received = _drain(cluster, group, story.topic)
    assert received == {0: set(range(start, ends[0])), 1: set()}
    assert len(received[0] & DONE) == _done_from(start)


def test_to_offset_counts_both_sides_of_the_new_start(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, story: Story
) -> None:
    group = story.groups["offset"]
    document, _ = _reset(kshare, tmp_path, group, "--topic", f"{story.topic}:0", "--to-offset", "6")
    (counts,) = _counts(document).values()
    assert counts[1:] == (6, _done_from(6), _not_done_below(6))  # 6-8 again, 4 skipped
    assert counts[1:] == (6, 3, 1)
    received = _drain(cluster, group, story.topic)
    assert received[0] == set(range(6, _ends(document)[0]))
    assert len(received[0] & DONE) == _done_from(6)


def test_to_first_unacknowledged_resumes_without_skipping(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, story: Story
) -> None:
    group = story.groups["first-unacknowledged"]
    document, _ = _reset(
        kshare, tmp_path, group, "--topic", story.topic, "--to-first-unacknowledged"
    )
    counts, ends = _counts(document), _ends(document)
    resume = min(RELEASED)
    # 5-8 were done after the first unfinished record: a reset cannot keep their states.
    assert {p: c[1:] for p, c in counts.items()} == {
        0: (resume, _done_from(resume), 0),
        1: (0, 0, 0),
    }
    received = _drain(cluster, group, story.topic)
    assert received == {0: set(range(resume, ends[0])), 1: set(range(ends[1]))}
    assert len(received[0] & DONE) == _done_from(resume)


def _noted_again(rollback: Path) -> int:
    """How many records the rollback plan's note says applying it delivers again."""
    note = rollback.read_text().splitlines()[1]
    found = re.search(r"delivers again (\d+) record\(s\) acknowledged or archived", note)
    assert found is not None, note
    return int(found[1])


def _rollback(
    kshare: Kshare,
    tmp_path: Path,
    group: str,
    rollback: Path,
    expected: tuple[int, int, int],
    *,
    execute: bool,
) -> dict[str, Any]:
    """Apply the rollback plan, or dry-run it; partition 0 (the plan's only one) must
    have the ``expected`` new offset and counts (delivered again, skipped), and so must
    the totals. A dry run's table must total as the JSON does and say where the counts
    come from. The JSON document."""
    undo = ("--execute", "--rollback-file", str(tmp_path / f"{group}-undo.csv"))
    args = ("reset-offsets", group, "--from-file", str(rollback))
    result = kshare.run(*args, *(undo if execute else ()), "-o", "json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    validate(document, "reset.schema.json")
    assert document["executed"] is execute and document["counts_exact"] is True
    assert _counts(document)[0][1:] == expected
    assert (document["redelivered"], document["skipped"]) == expected[1:]
    if not execute:
        table = kshare.run(*args)
        assert table.exit_code == 0, table.stderr
        text = " ".join(table.stdout.split())
        totals = f"skips {document['skipped']} record(s), re-delivers {document['redelivered']} "
        assert totals in text and "Counted with the rollback plan's record" in text, text
    return document
