"""``kshare audit`` against a broker, over a share group whose story is scripted record by record.

A confluent-kafka ShareConsumer in explicit mode drives one share group over
ten records of a one-partition topic: most are accepted at once; one is released
twice and then accepted; one is released until the delivery count limit
archives it; one is rejected; one is held until its acquisition lock expires
and then accepted; one is held, released, held ... until a lock expiry at the
limit archives it. A consumer that holds a record may not poll again, so
each hold hands over to a new consumer of the group; with one partition every
member shares it (Kafka's simple assignor splits partitions between members
until members outnumber them, which would strand records with a consumer
that stopped polling). Every delivery is recorded as the consumer saw it, so the
expected outcome of each record is known before the audit runs: the
deliveries and archived audits must give exactly that, record for record;
``--dlq-topic`` must produce exactly the archived records with Kafka's DLQ
headers (read back with a plain Consumer); the HTML report's chart points and
bars must be the data. The ``--follow`` tests use a queue of their own (the
story stays as scripted): records are added while the audit follows, and it
must print the rows of the state records written after it started, and
report each newly archived record exactly once.

The broker is the sandbox with short locks (1.5 s) and heartbeats, and a
delivery count limit of 3, or a real cluster with KSHARE_TEST_BOOTSTRAP (its
own limit, its minimum lock duration). Spark runs in the suite's one
``local[1]`` session; the ``--follow`` and missing-PySpark runs are real
subprocesses.
"""

from __future__ import annotations

import json
import operator
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    AcknowledgeType,
    Consumer,
    Message,
    Producer,
    ShareConsumer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from tests.cli.conftest import (
    KSHARE,
    Kshare,
    assert_one_error_line,
    process_env,
    write_properties,
)
from tests.support.report import ReportParser
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import USERS, SecureSandbox, TlsMaterial, librdkafka_config
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
LOCK_MS = 1_500
HEARTBEAT_MS = 100
SANDBOX_LIMIT = 3
MASTER = "local[1]"

ACCEPT, RELEASE, REJECT, HOLD = "accept", "release", "reject", "hold"
ACK_TYPES = {ACCEPT: AcknowledgeType.ACCEPT, RELEASE: AcknowledgeType.RELEASE}
ACK_TYPES[REJECT] = AcknowledgeType.REJECT


# --------------------------------------------------------------------------- the bed


@dataclass
class Bed:
    """Where the scenario runs: a broker, its delivery count limit and lock duration."""

    cluster: Cluster
    limit: int
    lock_ms: int
    sandbox: SandboxThread | None = None


def _broker_config(admin: AdminClient, name: str) -> int:
    metadata = admin.list_topics(timeout=30)
    broker = str(min(metadata.brokers))
    resource = ConfigResource(ConfigResource.Type.BROKER, broker)
    (future,) = admin.describe_configs([resource]).values()
    return int(future.result(30)[name].value)


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    real = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if real:
        from tests.support.sandbox import read_properties

        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        cluster = Cluster(real, read_properties(config_path) if config_path else {})
        admin = AdminClient(cluster.config())
        yield Bed(
            cluster,
            _broker_config(admin, "group.share.delivery.count.limit"),
            _broker_config(admin, "group.share.min.record.lock.duration.ms"),
        )
        return
    settings = BrokerGroupSettings(
        share_heartbeat_interval_ms=HEARTBEAT_MS,
        share_min_heartbeat_interval_ms=HEARTBEAT_MS,
        share_min_record_lock_duration_ms=1_000,
        share_delivery_count_limit=SANDBOX_LIMIT,
    )
    with SandboxThread(settings=settings) as sandbox:
        yield Bed(Cluster(sandbox.bootstrap, {}, sandbox), SANDBOX_LIMIT, LOCK_MS, sandbox)


@pytest.fixture
def kshare(bed: Bed, tmp_path: Path) -> Kshare:
    command_config = None
    if bed.cluster.client_config:
        command_config = tmp_path / "client.properties"
        command_config.write_text(
            "".join(f"{key}={value}\n" for key, value in bed.cluster.client_config.items())
        )
    return Kshare(bed.cluster.bootstrap, command_config, tmp_path / "kshare" / "config.toml")


# --------------------------------------------------------------------------- the story


@dataclass
class Record:
    """A produced record, where it landed, and what the consumer did with each delivery."""

    index: int
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]
    actions: list[tuple[int, str]] = field(default_factory=list)


def plan(index: int, delivery_count: int, limit: int) -> str:
    """What the consumer does with record `index` on its delivery_count-th delivery."""
    if index == 1:  # released twice, accepted on the third delivery
        return RELEASE if delivery_count < 3 else ACCEPT
    if index == 2:  # released until the limit archives it
        return RELEASE
    if index == 3:  # rejected
        return REJECT
    if index == 4:  # its lock expires once, then it is accepted
        return HOLD if delivery_count == 1 else ACCEPT
    if index == 5:  # lock expiries and releases in turn; the expiry at the limit archives it
        return HOLD if delivery_count == limit or delivery_count % 2 == 1 else RELEASE
    return ACCEPT


def expected_outcome(record: Record, limit: int) -> tuple[int, str]:
    """(highest delivery count, final state) the broker must have recorded."""
    highest = max(count for count, _ in record.actions)
    last = record.actions[-1][1]
    if last == ACCEPT:
        return highest, "acknowledged"
    if last == REJECT or highest == limit:
        return highest, "archived"
    raise AssertionError(f"record {record.index} has no final state: {record.actions}")


@dataclass
class Story:
    topic: str
    group: str
    dlq_topic: str
    records: list[Record]
    limit: int

    def by_position(self) -> dict[tuple[int, int], Record]:
        return {(record.partition, record.offset): record for record in self.records}

    def archived(self) -> list[Record]:
        return [
            record
            for record in self.records
            if expected_outcome(record, self.limit)[1] == "archived"
        ]


def _set_group_configs(admin: AdminClient, group: str, configs: dict[str, str]) -> None:
    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()
    ]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _produce(cluster: Cluster, topic: str, indexes: range) -> list[Record]:
    producer = Producer(cluster.config(**{"linger.ms": 0}))
    records: list[Record] = []
    failures: list[str] = []
    for index in indexes:
        key, value = f"k{index}".encode(), f"v{index}".encode()
        headers = [("i", str(index).encode())]

        def landed(error: Any, message: Message, index: int = index) -> None:
            if error is not None:
                failures.append(str(error))
                return
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            records.append(
                Record(
                    index,
                    partition,
                    offset,
                    f"k{index}".encode(),
                    f"v{index}".encode(),
                    [("i", str(index).encode())],
                )
            )

        producer.produce(
            topic, key=key, value=value, headers=headers, partition=0, on_delivery=landed
        )
        producer.flush(30)
    assert failures == [] and len(records) == len(indexes)
    return sorted(records, key=lambda record: record.index)


def _share_consumer(cluster: Cluster, group: str, topic: str, name: str) -> ShareConsumer:
    consumer = ShareConsumer(
        cluster.config(
            **{
                "group.id": group,
                "client.id": name,
                "share.acknowledgement.mode": "explicit",
            }
        )
    )
    consumer.subscribe([topic])
    return consumer


def drive(
    cluster: Cluster,
    group: str,
    topic: str,
    records: list[Record],
    limit: int,
    *,
    done: Any,
    timeout: float,
) -> list[ShareConsumer]:
    """Poll with one consumer at a time, acting by plan; a consumer that holds a record
    stops polling (it may not poll with a record unacknowledged) and a new one takes over.
    Returns every consumer opened (the caller closes them: closing a holder would release
    what it holds, which is not a lock expiry)."""
    by_value = {record.value: record for record in records}
    consumers = [_share_consumer(cluster, group, topic, f"audit-0-{group}")]
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"the scenario did not finish: {records}"
        active = consumers[-1]
        messages = [message for message in active.poll(0.1) if message.error() is None]
        holding = False
        for message in messages:
            record = by_value[message.value() or b""]
            count = message.delivery_count() or 0
            action = plan(record.index, count, limit)
            record.actions.append((count, action))
            if action == HOLD:
                holding = True
            else:
                active.acknowledge(message, ACK_TYPES[action])
        if messages:
            for partition, error in active.commit_sync(10).items():
                assert error is None, (partition, error)
        if holding:
            consumers.append(
                _share_consumer(cluster, group, topic, f"audit-{len(consumers)}-{group}")
            )
    return consumers


def _settled(records: list[Record], limit: int) -> bool:
    for record in records:
        if not record.actions:
            return False
        count, action = record.actions[-1]
        if action in (ACCEPT, REJECT):
            continue
        if count < limit:
            return False
    return True


def _describe(kshare: Kshare, group: str) -> dict[str, Any]:
    result = kshare.run("describe", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (found,) = json.loads(result.stdout)["groups"]
    document: dict[str, Any] = found
    return document


@pytest.fixture(scope="module")
def story(bed: Bed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    suffix = uuid.uuid4().hex[:8]
    topic, group, dlq = f"audit-{suffix}", f"audit-g-{suffix}", f"audit-dlq-{suffix}"
    cluster = bed.cluster
    admin = AdminClient(cluster.config())
    # Three partitions for the dead letters: Kafka puts each in source partition % 3.
    for future in admin.create_topics([NewTopic(topic, 1, 1), NewTopic(dlq, 3, 1)]).values():
        future.result(30)
    checker = Kshare(cluster.bootstrap, None, tmp_path_factory.mktemp("audit") / "config.toml")
    # The lock duration through kshare's own command; earliest through the admin API.
    set_lock = checker.run("config", "set", group, f"share.record.lock.duration.ms={bed.lock_ms}")
    assert set_lock.exit_code == 0, set_lock.stderr
    _set_group_configs(admin, group, {"share.auto.offset.reset": "earliest"})
    records = _produce(cluster, topic, range(10))
    consumers = drive(
        cluster,
        group,
        topic,
        records,
        bed.limit,
        done=lambda: _settled(records, bed.limit),
        timeout=60 + bed.limit * bed.lock_ms / 1000 * 3,
    )
    try:
        # The last hold ends in a lock expiry at the limit: the record is archived once every
        # record is terminal, which describe's lag (LEO - start offset - complete) says.
        def all_terminal() -> bool:
            partitions = _describe(checker, group).get("partitions") or []
            return len(partitions) == 1 and all(each["lag"] == 0 for each in partitions)

        wait_for(
            all_terminal,
            timeout=30 + bed.lock_ms / 1000 * 2,
            interval=0.2,
            what="every record acknowledged or archived",
        )
        yield Story(topic, group, dlq, records, bed.limit)
    finally:
        for consumer in consumers:
            consumer.close()


def _audit(kshare: Kshare, *args: str) -> Any:
    result = kshare.run("audit", *args, "--master", MASTER)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


# --------------------------------------------------------------------------- deliveries


def test_the_story_is_what_was_scripted(story: Story) -> None:
    """The consumer's own record: the scenario did what the audit is checked against."""
    by_index = {record.index: record for record in story.records}
    limit = story.limit
    assert [count for count, _ in by_index[1].actions] == [1, 2, 3]
    assert by_index[2].actions == [(count, RELEASE) for count in range(1, limit + 1)]
    assert by_index[3].actions == [(1, REJECT)]
    assert by_index[4].actions == [(1, HOLD), (2, ACCEPT)]
    assert [count for count, _ in by_index[5].actions] == list(range(1, limit + 1))
    assert by_index[5].actions[-1] == (limit, HOLD)
    for index in (0, 6, 7, 8, 9):
        assert by_index[index].actions == [(1, ACCEPT)]


def test_deliveries_match_the_story_record_for_record(
    spark: Any, story: Story, kshare: Kshare
) -> None:
    result = _audit(kshare, "deliveries", "--group", story.group, "-o", "json")

    document = json.loads(result.stdout)
    assert document["job"] == "deliveries" and document["group_id"] == story.group
    per_offset = {}
    for each in document["deliveries"]:
        assert each["topic"] == story.topic
        for offset in range(each["first_offset"], each["last_offset"] + 1):
            per_offset[(each["partition"], offset)] = (
                each["max_delivery_count"],
                each["final_state"],
            )
    assert per_offset == {
        position: expected_outcome(record, story.limit)
        for position, record in story.by_position().items()
    }


def test_archived_records_are_exactly_the_archived_ones_with_their_records(
    spark: Any, story: Story, kshare: Kshare
) -> None:
    result = _audit(kshare, "archived", "--group", story.group, "-o", "jsonl")

    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [
        (
            row["topic"],
            row["partition"],
            row["offset"],
            row["delivery_count"],
            row["key"],
            row["value"],
            row["headers"],
            row["record_found"],
            row["state"],
            row["reason"],
        )
        for row in rows
    ] == [
        (
            story.topic,
            record.partition,
            record.offset,
            expected_outcome(record, story.limit)[0],
            record.key.decode(),
            record.value.decode(),
            [{"key": "i", "value": str(record.index)}],
            True,
            "archived",
            "rejected"
            if expected_outcome(record, story.limit)[0] < story.limit
            else "delivery_limit",
        )
        for record in sorted(story.archived(), key=lambda r: (r.partition, r.offset))
    ]
    assert {row["group_id"] for row in rows} == {story.group}


def test_timeline_follows_the_story_and_ends_where_describe_is(
    spark: Any, story: Story, kshare: Kshare
) -> None:
    result = _audit(kshare, "timeline", "--group", story.group, "-o", "json")

    points = json.loads(result.stdout)["timeline"]
    described = {each["partition"]: each for each in _describe(kshare, story.group)["partitions"]}
    for partition in (0,):
        rows = [point for point in points if point["partition"] == partition]
        assert rows and all(point["topic"] == story.topic for point in rows)
        assert [point["time"] for point in rows] == sorted(point["time"] for point in rows)
        last = rows[-1]
        # The latest state is the state now: describe's start offset and lag.
        assert last["lag_basis"] == "end_offsets"
        assert (last["start_offset"], last["lag"]) == (
            described[partition]["start_offset"],
            described[partition]["lag"],
        )
        for point in rows:
            if point["start_offset"] is None or point["start_offset"] < 0:
                continue
            in_window = point["end_offset"] - point["start_offset"]
            assert in_window == sum(
                point[state] for state in ("available", "acknowledged", "archived", "unrecorded")
            ), point
            if point is not last and point["lag"] is not None:
                assert point["lag_basis"] == "record_timestamps" and point["lag"] >= 0
        # Every record was produced before the first state record: dated by their timestamps,
        # the log end offset is the partition's record count at every point, and the lag
        # only falls as records are acknowledged or archived.
        produced = sum(1 for record in story.records if record.partition == partition)
        known = [point for point in rows if point["lag"] is not None]
        assert known and {point["log_end_offset"] for point in known} == {produced}
        lags = [point["lag"] for point in known]
        assert lags == sorted(lags, reverse=True) and lags[-1] == 0


# --------------------------------------------------------------------------- loads


# The texts of Kafka 4.4's ShareGroupDLQManager.CLIENT_REJECT and DELIVERY_COUNT_EXCEEDED.
REJECTED = b"Offset rejected by client."
EXCEEDED = b"Offset delivery count exceeded the threshold."


def dlq_headers(
    record: Record, topic: str, group: str, count: int, limit: int, *, own: bool = False
) -> tuple[tuple[str, bytes], ...]:
    """The headers a record's dead letter must carry: Kafka's, in Kafka's order
    (ShareGroupDLQRecordHelper: numbers as decimal text, the cause's message last); with
    own (--keep-headers) the record's own first."""
    return (
        *(record.headers if own else ()),
        ("__dlq.errors.topic", topic.encode()),
        ("__dlq.errors.partition", str(record.partition).encode()),
        ("__dlq.errors.offset", str(record.offset).encode()),
        ("__dlq.errors.group", group.encode()),
        ("__dlq.errors.delivery.count", str(count).encode()),
        ("__dlq.errors.message", EXCEEDED if count >= limit else REJECTED),
    )


def _dlq_end_offsets(cluster: Cluster, topic: str) -> dict[int, int]:
    """Each partition's end offset: what a run that produces nothing leaves as it was."""
    consumer = Consumer(cluster.config(**{"group.id": f"dlq-ends-{uuid.uuid4().hex}"}))
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        return {
            partition: consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)[1]
            for partition in partitions
        }
    finally:
        consumer.close()


@pytest.mark.parametrize("copied", [False, True], ids=["kafkas-format", "copy-record-keep-headers"])
def test_dlq_topic_gets_exactly_the_archived_records_with_kafkas_headers(
    spark: Any, story: Story, kshare: Kshare, bed: Bed, copied: bool
) -> None:
    """Each archived record once, in the DLQ partition Kafka picks (source partition modulo
    the DLQ's partitions: 0 of 3), with Kafka's __dlq.errors.* headers, the message saying
    why: rejected, or over the delivery limit. By default as Kafka 4.4 writes it (a 4.2
    group has no copy.record.enable): null key and value, no original header; with
    --copy-record --keep-headers the key, value and headers as they were, ahead of Kafka's."""
    dlq = story.dlq_topic
    options: list[str] = []
    if copied:
        dlq, options = f"{story.dlq_topic}-copied", ["--copy-record", "--keep-headers"]
        admin = AdminClient(bed.cluster.config())
        for future in admin.create_topics([NewTopic(dlq, 3, 1)]).values():
            future.result(30)
    result = _audit(kshare, "archived", "--group", story.group, "--dlq-topic", dlq, *options)

    archived = story.archived()
    assert {expected_outcome(record, story.limit)[0] < story.limit for record in archived} == {
        True,
        False,
    }, "the story archives records both ways"
    assert result.stdout == ""
    assert f"produced {len(archived)} archived records to {dlq}\n" in result.stderr
    assert "the broker writes" not in result.stderr  # Kafka 4.2: no broker DLQ
    read = _read_all(bed.cluster, dlq)
    assert {message.partition() for message in read} == {0}
    assert sorted(
        (message.key(), message.value(), tuple(message.headers() or ())) for message in read
    ) == sorted(
        (
            record.key if copied else None,
            record.value if copied else None,
            dlq_headers(
                record,
                story.topic,
                story.group,
                expected_outcome(record, story.limit)[0],
                story.limit,
                own=copied,
            ),
        )
        for record in archived
    )


def test_a_second_run_with_the_same_dlq_topic_produces_nothing_twice(
    spark: Any, story: Story, kshare: Kshare, bed: Bed
) -> None:
    """What the DLQ topic already holds for the group (by its __dlq.errors.group, .topic,
    .partition and .offset headers) is not produced again, and stderr says how many: a
    dead letter written before the first run (in another partition, as another producer
    may have) counts, another group's dead letter for the same offset does not; a second
    run then produces nothing and leaves every partition's end offset as it was."""
    dlq = f"{story.dlq_topic}-again"
    admin = AdminClient(bed.cluster.config())
    for future in admin.create_topics([NewTopic(dlq, 3, 1)]).values():
        future.result(30)
    archived = story.archived()
    earlier, other = archived[0], archived[1]
    producer = Producer(bed.cluster.config())
    for group, record in ((story.group, earlier), (f"{story.group}-other", other)):
        count = expected_outcome(record, story.limit)[0]
        producer.produce(
            dlq,
            key=record.key,
            value=record.value,
            headers=list(dlq_headers(record, story.topic, group, count, story.limit)),
            partition=2,
        )
    assert producer.flush(30) == 0

    first = _audit(kshare, "archived", "--group", story.group, "--dlq-topic", dlq)

    assert (
        f"produced {len(archived) - 1} archived records to {dlq}; skipped 1 already there\n"
        in first.stderr
    )
    ends = _dlq_end_offsets(bed.cluster, dlq)
    assert sum(ends.values()) == len(archived) + 1

    second = _audit(kshare, "archived", "--group", story.group, "--dlq-topic", dlq)

    assert second.stdout == ""
    assert (
        f"produced 0 archived records to {dlq}; skipped {len(archived)} already there\n"
        in second.stderr
    )
    assert _dlq_end_offsets(bed.cluster, dlq) == ends
    ours = [
        dict(message.headers() or ())
        for message in _read_all(bed.cluster, dlq)
        if dict(message.headers() or ()).get("__dlq.errors.group") == story.group.encode()
    ]
    assert sorted(int(headers["__dlq.errors.offset"]) for headers in ours) == sorted(
        record.offset for record in archived
    )


@pytest.mark.parametrize("spelling", ["--output-dir", "--output"])
def test_output_dir_writes_the_rows_as_parquet(
    spark: Any, story: Story, kshare: Kshare, tmp_path: Path, spelling: str
) -> None:
    """--output-dir DIR; and the old --output DIR still writes there, saying once on stderr
    what it is called now."""
    directory = tmp_path / "archived"
    result = _audit(kshare, "archived", "--group", story.group, spelling, str(directory))

    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[-1] == f"kshare: wrote the archived rows to {directory}"
    deprecation = ["kshare: warning: --output DIR is now --output-dir DIR"]
    assert lines[:-1] == (deprecation if spelling == "--output" else [])
    rows = spark.read.parquet(str(directory)).collect()
    assert sorted((row["partition"], row["offset"], bytes(row["value"])) for row in rows) == sorted(
        (record.partition, record.offset, record.value) for record in story.archived()
    )


def test_report_charts_are_the_data(
    spark: Any, story: Story, kshare: Kshare, tmp_path: Path
) -> None:
    report = tmp_path / "audit.html"
    timeline = json.loads(_audit(kshare, "timeline", "--group", story.group, "-o", "json").stdout)[
        "timeline"
    ]

    _audit(kshare, "deliveries", "--group", story.group, "--report", str(report), "-o", "csv")

    parser = ReportParser()
    parser.feed(report.read_text(encoding="utf-8"))
    assert parser.outside == []
    expected_points: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for point in timeline:
        if point["lag"] is not None:
            moment = point["time"]
            milliseconds = _epoch_ms(moment)
            expected_points.setdefault((point["topic"], point["partition"]), []).append(
                (milliseconds, point["lag"])
            )
    assert parser.points == {key: sorted(values) for key, values in expected_points.items()}
    histogram: dict[int, int] = {}
    for record in story.records:
        highest = expected_outcome(record, story.limit)[0]
        histogram[highest] = histogram.get(highest, 0) + 1
    assert parser.bars == histogram
    assert sorted(parser.rows) == sorted(
        (record.partition, record.offset) for record in story.archived()
    )


def _epoch_ms(iso: str) -> int:
    import datetime

    moment = datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ")
    return round(moment.replace(tzinfo=datetime.UTC).timestamp() * 1000)


# --------------------------------------------------------------------------- follow


@dataclass
class Queue:
    """A topic and a share group of their own, for the tests that add records as they go."""

    bed: Bed
    topic: str
    group: str
    produced: int = 0

    def feed(self, decide: dict[int, str]) -> list[Record]:
        """Produce one record per key of decide (indexes from self.produced on) and have a
        consumer act on each by decide, until every record got its final action."""
        indexes = range(self.produced, self.produced + len(decide))
        self.produced += len(decide)
        records = _produce(self.bed.cluster, self.topic, indexes)
        by_value = {record.value: record for record in records}
        consumer = _share_consumer(self.bed.cluster, self.group, self.topic, "audit-feed")
        try:

            def acted() -> bool:
                messages = [m for m in consumer.poll(0.1) if m.error() is None]
                for message in messages:
                    record = by_value[message.value() or b""]
                    action = decide[record.index - indexes[0]]
                    record.actions.append((message.delivery_count() or 0, action))
                    consumer.acknowledge(message, ACK_TYPES[action])
                if messages:
                    consumer.commit_sync(10)
                return all(record.actions for record in records)

            wait_for(acted, timeout=60, interval=0, what="the records acted on")
        finally:
            consumer.close()
        return records


@pytest.fixture
def queue(bed: Bed) -> Queue:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"audit-q-{suffix}", f"audit-qg-{suffix}"
    admin = AdminClient(bed.cluster.config())
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    _set_group_configs(admin, group, {"share.auto.offset.reset": "earliest"})
    return Queue(bed, topic, group)


def test_follow_prints_the_rows_of_new_state_records_until_sigint(
    queue: Queue, kshare: Kshare
) -> None:
    queue.feed({0: ACCEPT, 1: ACCEPT})
    argv = [
        str(KSHARE),
        "audit",
        "timeline",
        "--group",
        queue.group,
        "--topic",
        queue.topic,
        "--follow",
        "-o",
        "jsonl",
        "--master",
        MASTER,
        *kshare.connection_args(),
    ]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env(kshare.environment()),
    )
    lines: list[dict[str, Any]] = []
    reader = threading.Thread(
        target=lambda: [lines.append(json.loads(line)) for line in process.stdout or ()],
        daemon=True,
    )
    reader.start()
    try:
        # The rows so far come first (the batch prints them at once), ending with the one
        # row it dates by the log end offsets (one share-partition: its last state) ...
        wait_for(
            lambda: any(line["lag_basis"] == "end_offsets" for line in lines),
            timeout=240,
            interval=0.2,
            what="the batch's rows up to its last",
        )
        before = len(lines)
        newest = max(line["state_offset"] for line in lines)
        assert lines[-1]["log_end_offset"] == 2 and lines[-1]["lag"] == 0
        # ... then two more records are produced and accepted: their state records' rows.
        queue.feed({0: ACCEPT, 1: ACCEPT})

        def caught_up() -> bool:
            return any(
                line["state_offset"] > newest
                and line["log_end_offset"] == 4
                and line["lag"] == 0
                and line["lag_basis"] == "end_offsets"
                for line in lines[before:]
            )

        wait_for(caught_up, timeout=120, interval=0.2, what="rows of the new state records")
        assert all(line["group_id"] == queue.group for line in lines)
        assert all(line["state_offset"] > newest for line in lines[before:])
        # Ctrl-C while records keep coming, so that it likely lands inside a micro-batch
        # (inside a py4j call): still a clean stop, exit 0, nothing on stderr.
        feeding = threading.Event()
        feeder = threading.Thread(
            target=lambda: [queue.feed({0: ACCEPT}) for _ in iter(feeding.is_set, True)],
            daemon=True,
        )
        feeder.start()
        seen = len(lines)
        wait_for(lambda: len(lines) > seen, timeout=120, interval=0.1, what="rows while feeding")
        process.send_signal(signal.SIGINT)
        code = process.wait(60)
        feeding.set()
        feeder.join(60)
        errors = process.stderr.read() if process.stderr else ""
        assert (code, errors) == (ExitCode.OK, "")
        reader.join(10)
        assert all(line["group_id"] == queue.group for line in lines)  # each line whole JSON
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _settings(kshare: Kshare) -> Any:
    """The connection settings the command would resolve, for calling its service."""
    from kshare_cli.connect.resolve import resolve_settings

    return resolve_settings(
        bootstrap=kshare.bootstrap,
        command_config=kshare.command_config,
        profile=None,
        environ={},
        profiles_path=kshare.profiles,
    )


def _service(
    spark: Any, kshare: Kshare, group: str, job: str, *, follow: bool = False, between: Any = None
) -> tuple[Any, Any, list[Any]]:
    """The command's two phases, in-process: ask the cluster, (call between), run the job.
    Returns (result, the follow or None, the list its micro-batches' rows go to)."""
    import asyncio

    from kshare_cli.pipeline.models import AuditJob
    from kshare_cli.services import audit as audit_service

    settings = _settings(kshare)
    request = audit_service.AuditRequest(
        job=AuditJob(job), group_id=group, master=MASTER, follow=follow
    )
    resolved = asyncio.run(audit_service.resolve_scope(settings, request, 30))
    if between is not None:
        between()
    emitted: list[Any] = []
    result, running = audit_service.run_audit(
        spark, settings, request, resolved, emit=lambda job, rows: emitted.extend(rows)
    )
    return result, running, emitted


def test_the_latest_lag_is_of_one_moment_not_of_the_log_seconds_later(
    spark: Any, queue: Queue, kshare: Kshare
) -> None:
    """The state is read up to the state topic's end when the command asked the cluster;
    records produced while Spark starts must not count against that older state."""
    queue.feed({0: ACCEPT, 1: ACCEPT})

    result, _, _ = _service(
        spark,
        kshare,
        queue.group,
        "timeline",
        # Produced after the cluster was asked, before Spark runs; nobody consumes them yet.
        between=lambda: _produce(queue.bed.cluster, queue.topic, range(100, 103)),
    )

    last = result.timeline[-1]
    assert (last.log_end_offset, last.lag, last.lag_basis) == (2, 0, "end_offsets")


def test_follow_archived_emits_each_newly_archived_record_once(
    spark: Any, queue: Queue, kshare: Kshare
) -> None:
    """In-process, through the service the command uses: after the batch, each micro-batch
    gives only the offsets archived since, with their records -- what --dlq-topic produces."""
    first = queue.feed({0: REJECT, 1: ACCEPT})
    result, follow, emitted = _service(spark, kshare, queue.group, "archived", follow=True)
    assert [(each.offset, each.value) for each in result.archived] == [(0, first[0].value)]
    assert follow is not None
    follow.start()
    try:
        second = queue.feed({0: ACCEPT, 1: REJECT, 2: REJECT})
        wait_for(lambda: len(emitted) >= 2, timeout=120, interval=0.2, what="new archived rows")
        # Spark runs a micro-batch only for new state records: a third round's record,
        # rejected after the second round's rows came, is carried by a later micro-batch
        # than theirs; once its row is there, those micro-batches have passed.
        (third,) = queue.feed({0: REJECT})
        wait_for(
            lambda: third.offset in [each.offset for each in emitted],
            timeout=120,
            interval=0.2,
            what="the third round's archived row",
        )
    finally:
        follow.stop()
    assert follow.failure is None
    # Each archived record once: the micro-batches after the second round's repeated none.
    assert sorted((each.offset, each.value, each.delivery_count) for each in emitted) == [
        (record.offset, record.value, 1) for record in [*second[1:], third]
    ]


def test_follow_deliveries_emits_only_the_ranges_whose_outcome_changed(
    spark: Any, queue: Queue, kshare: Kshare
) -> None:
    """In-process, through the service the command uses: after the batch, each micro-batch
    gives the offset ranges whose outcome (highest count, final state, complete) changed,
    each once, and no range the batch already gave unchanged."""
    first = queue.feed({0: ACCEPT, 1: ACCEPT})
    result, follow, emitted = _service(spark, kshare, queue.group, "deliveries", follow=True)

    def per_offset(ranges: Any) -> dict[int, tuple[int, str]]:
        return {
            offset: (each.max_delivery_count, each.final_state)
            for each in ranges
            for offset in range(each.first_offset, each.last_offset + 1)
        }

    assert per_offset(result.deliveries) == {record.offset: (1, "acknowledged") for record in first}
    assert follow is not None
    follow.start()
    try:
        second = queue.feed({0: REJECT, 1: ACCEPT})
        wanted = {second[0].offset: (1, "archived"), second[1].offset: (1, "acknowledged")}

        def arrived() -> bool:
            got = per_offset(emitted)
            return all(got.get(offset) == outcome for offset, outcome in wanted.items())

        wait_for(arrived, timeout=120, interval=0.2, what=f"the new ranges {wanted}")
        # Spark runs a micro-batch only for new state records: a third round's record,
        # rejected after the second round's ranges came, is carried by a later micro-batch
        # than theirs (with the write that moves the start offset past the second round);
        # once its range is there, those micro-batches have passed.
        (third,) = queue.feed({0: REJECT})
        wanted[third.offset] = (1, "archived")
        wait_for(arrived, timeout=120, interval=0.2, what=f"the third round's range {wanted}")
    finally:
        follow.stop()
    assert follow.failure is None
    # A finished range is complete at once, although Kafka persists a start offset's
    # advance only with the write after the acknowledgement: the first records' range does
    # not come again when that write moves the start offset past it; nothing else does.
    assert [each for each in emitted if each.last_offset < second[0].offset] == []
    outcome = operator.attrgetter(
        "first_offset", "last_offset", "max_delivery_count", "final_state", "complete"
    )
    batch = {outcome(each) for each in result.deliveries}
    assert [outcome(each) for each in emitted if outcome(each) in batch] == []
    assert len({outcome(each) for each in emitted}) == len(emitted)
    latest = {(each.first_offset, each.last_offset): each for each in result.deliveries}
    latest.update({(each.first_offset, each.last_offset): each for each in emitted})
    assert per_offset(latest.values()) == {
        **{record.offset: (1, "acknowledged") for record in first},
        **wanted,
    }
    assert {
        offset
        for each in emitted
        if each.first_offset < second[0].offset
        for offset in range(each.first_offset, each.last_offset + 1)
    } <= {record.offset for record in first}
    assert {each.topic for each in emitted} == {queue.topic}


def _read_all(cluster: Cluster, topic: str) -> list[Message]:
    """Every record of every partition of topic, read to its end with a plain Consumer."""
    consumer = Consumer(
        cluster.config(
            **{"group.id": f"dlq-reader-{uuid.uuid4().hex}", "enable.partition.eof": True}
        )
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, partition, 0) for partition in partitions])
    read: list[Message] = []
    ended: set[int | None] = set()
    deadline = time.monotonic() + 30
    try:
        while len(ended) < len(partitions):
            assert time.monotonic() < deadline, f"{topic} did not answer to its end"
            # consume() waits its whole timeout unless 100 arrive: short slices.
            messages = consumer.consume(100, 0.2)
            read += [message for message in messages if message.error() is None]
            ended |= {message.partition() for message in messages if message.error() is not None}
        return read
    finally:
        consumer.close()


def test_follow_with_dlq_topic_produces_each_archived_record_once_until_sigint(
    queue: Queue, kshare: Kshare, bed: Bed
) -> None:
    """The command in a process of its own: the batch produces what was archived before it
    started, the follow what is archived after; SIGINT ends it with exit 0; the dead-letter
    topic then holds each archived record exactly once, with Kafka's headers."""
    dlq = f"{queue.topic}-dlq"
    admin = AdminClient(bed.cluster.config())
    for future in admin.create_topics([NewTopic(dlq, 1, 1)]).values():
        future.result(30)
    first = queue.feed({0: REJECT, 1: ACCEPT})
    argv = [
        str(KSHARE),
        "audit",
        "archived",
        "--group",
        queue.group,
        "--follow",
        "--dlq-topic",
        dlq,
        "--master",
        MASTER,
        *kshare.connection_args(),
    ]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env(kshare.environment()),
    )
    errors: list[str] = []
    reader = threading.Thread(
        target=lambda: [errors.append(line) for line in process.stderr or ()], daemon=True
    )
    reader.start()
    try:
        wait_for(
            lambda: any("produced 1 archived records" in line for line in errors),
            timeout=240,
            interval=0.2,
            what=f"the batch's dead letter (stderr: {errors})",
        )
        # The follow reads the state topic from where the batch stopped: no head start.
        second = queue.feed({0: ACCEPT, 1: REJECT, 2: REJECT})
        wait_for(
            lambda: len(_read_all(bed.cluster, dlq)) >= 3,
            timeout=120,
            interval=0.5,
            what="the follow's dead letters",
        )
        # Spark runs a micro-batch only for new state records: a third round's record,
        # rejected once the second round's dead letters are there, is carried by a later
        # micro-batch than theirs; once its dead letter is there, those have passed.
        third = queue.feed({0: REJECT})
        its_offset = ("__dlq.errors.offset", str(third[0].offset).encode())
        wait_for(
            lambda: any(its_offset in (m.headers() or ()) for m in _read_all(bed.cluster, dlq)),
            timeout=120,
            interval=0.5,
            what="the third round's dead letter",
        )
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == ExitCode.OK, errors
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert process.stdout is not None and process.stdout.read() == ""
    archived = [first[0], second[1], second[2], third[0]]
    assert sorted(
        (message.key(), message.value(), tuple(message.headers() or ()))
        for message in _read_all(bed.cluster, dlq)
    ) == sorted(
        (None, None, dlq_headers(record, queue.topic, queue.group, 1, bed.limit))
        for record in archived
    )


def test_since_keeps_only_what_happened_from_then_on(
    spark: Any, queue: Queue, kshare: Kshare
) -> None:
    """--since is taken from the broker's own clock (the last state record's time after
    the first records were acted on, plus 1 ms), so it holds on a real cluster too: the
    deliveries, the archived records and the timeline after it are the second records'."""
    import datetime

    first = queue.feed({0: ACCEPT, 1: REJECT})
    before = json.loads(_audit(kshare, "timeline", "--group", queue.group, "-o", "json").stdout)[
        "timeline"
    ]
    since_ms = max(_epoch_ms(point["time"]) for point in before) + 1
    since = datetime.datetime.fromtimestamp(since_ms / 1000, tz=datetime.UTC).isoformat()
    time.sleep(0.2)
    second = queue.feed({0: ACCEPT, 1: REJECT})

    ranges = json.loads(
        _audit(kshare, "deliveries", "--group", queue.group, "--since", since, "-o", "json").stdout
    )["deliveries"]
    archived = [
        json.loads(line)
        for line in _audit(
            kshare, "archived", "--group", queue.group, "--since", since, "-o", "jsonl"
        ).stdout.splitlines()
    ]
    points = json.loads(
        _audit(kshare, "timeline", "--group", queue.group, "--since", since, "-o", "json").stdout
    )["timeline"]

    assert {
        offset: (each["max_delivery_count"], each["final_state"])
        for each in ranges
        for offset in range(each["first_offset"], each["last_offset"] + 1)
    } == {second[0].offset: (1, "acknowledged"), second[1].offset: (1, "archived")}
    assert [(row["offset"], row["value"]) for row in archived] == [
        (second[1].offset, second[1].value.decode())
    ]
    assert points and all(_epoch_ms(point["time"]) >= since_ms for point in points)
    assert {point["state_offset"] for point in points}.isdisjoint(
        point["state_offset"] for point in before
    )
    assert first[1].offset not in [row["offset"] for row in archived]


@pytest.mark.parametrize("moment", ["starting", "running"])
def test_ctrl_c_while_spark_starts_or_runs_is_one_line_exit_130(
    story: Story, kshare: Kshare, tmp_path: Path, moment: str
) -> None:
    """SIGINT while the JVM starts (its log file exists, in this test's TMPDIR, Spark's launcher
    runs java, and no Python worker yet) or while a job runs (the JVM has started its first
    Python worker, which the Kafka source's read needs): one line, exit 130, no py4j traces,
    no JVM left behind, and no Spark job ran to its end after the SIGINT (Spark's event log
    says so: the Python worker plans the Kafka source's read before any job, and the audit's
    jobs all ran to their end after a Ctrl-C there, minutes on a real cluster's state
    topic)."""
    argv = [
        str(KSHARE),
        "audit",
        "deliveries",
        "--group",
        story.group,
        "--master",
        MASTER,
        *kshare.connection_args(),
    ]
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    events = tmp_path / "events"
    events.mkdir()
    configuration = tmp_path / "spark-conf"
    configuration.mkdir()
    (configuration / "spark-defaults.conf").write_text(
        "spark.eventLog.enabled true\n"
        f"spark.eventLog.dir {events.as_uri()}\n"
        "spark.eventLog.compress false\n"
        "spark.eventLog.rolling.enabled false\n"
    )
    kshare.extra_env["SPARK_CONF_DIR"] = str(configuration)
    with _spark_starting(argv, kshare, temporary) as process:
        if moment == "starting":
            wait_for(
                lambda: _jvms_of(process.pid) or process.poll() is not None,
                timeout=120,
                interval=0.05,
                what="Spark's launcher to run java",
            )
            assert not _python_workers_of(process.pid), "the JVM started too soon"
        else:
            wait_for(
                lambda: _python_workers_of(process.pid) or process.poll() is not None,
                timeout=120,
                interval=0.05,
                what="a Spark job's Python worker",
            )
        assert process.poll() is None, "the job ended before it could be interrupted"
        interrupted_ms = time.time() * 1000
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=300)  # a failure bound: see the jobs
    assert (process.returncode, stdout, stderr) == (130, "", "kshare: interrupted\n")
    jobs = _spark_jobs(events)
    assert moment == "starting" or jobs, "no Spark job was started to cancel"
    assert [
        (job, result)
        for job, (submitted, result) in jobs.items()
        if submitted >= interrupted_ms and result != "JobFailed"
    ] == [], jobs
    # And no JVM outlives it (PySpark's launcher would leave one, ignoring SIGINT, holding
    # the log file as its stderr).
    wait_for(
        lambda: not _holders(temporary),
        timeout=30,
        interval=0.2,
        what=f"the JVM to exit: {_holders(temporary)}",
    )


@contextmanager
def _spark_starting(
    argv: list[str], kshare: Kshare, temporary: Path
) -> Iterator[subprocess.Popen[str]]:
    """argv running with TMPDIR temporary, once its Spark log is there (the JVM is starting)
    or it has ended; killed if still running after the block."""
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env({**kshare.environment(), "TMPDIR": str(temporary)}),
    )
    try:
        wait_for(
            lambda: list(temporary.glob("kshare-audit-*/spark.log")) or process.poll() is not None,
            timeout=120,
            interval=0.05,
            what="Spark to start",
        )
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _spark_jobs(events: Path) -> dict[int, tuple[int, str | None]]:
    """Each Spark job of the event logs in ``events``: its submission time (epoch ms) and
    result (JobSucceeded, JobFailed, None: no end recorded)."""
    jobs: dict[int, tuple[int, str | None]] = {}
    for log in events.iterdir():
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerJobStart":
                jobs[event["Job ID"]] = (event["Submission Time"], None)
            elif event["Event"] == "SparkListenerJobEnd":
                submitted, _ = jobs[event["Job ID"]]
                jobs[event["Job ID"]] = (submitted, event["Job Result"]["Result"])
    return jobs


def _python_workers_of(pid: int) -> list[int]:
    """PySpark's Python worker daemons descending from process pid."""
    return _descendants_of(
        pid, lambda command: b"pyspark.daemon" in command or b"pyspark.worker" in command
    )


def _jvms_of(pid: int) -> list[int]:
    """The java processes descending from process pid (Spark's launcher, then its JVM;
    kshare's own ``java -version`` check has ended before Spark's log file exists)."""
    return _descendants_of(pid, lambda command: command.split(b"\0")[0].endswith(b"java"))


def _descendants_of(pid: int, runs: Callable[[bytes], bool]) -> list[int]:
    """The processes descending from process pid whose command line (NUL-separated
    arguments) runs accepts (Linux's /proc)."""
    parents: dict[int, int] = {}
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        child = int(stat.parent.name)
        parents[child] = int(fields[1])
        if runs(command):
            found.append(child)

    def descends(child: int) -> bool:
        while child > 1:
            child = parents.get(child, 0)
            if child == pid:
                return True
        return False

    return [each for each in found if descends(each)]


def _holders(directory: Path) -> list[int]:
    """Processes with a file under directory open (Linux's /proc)."""
    holders = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            targets = [os.readlink(fd) for fd in fd_dir.iterdir()]
        except OSError:
            continue
        if any(target.startswith(str(directory)) for target in targets):
            holders.append(int(fd_dir.parent.name))
    return holders


@pytest.mark.parametrize("command", ["deliveries", "capture"])
def test_ctrl_c_while_spark_starts_leaves_no_spark_log_behind(
    story: Story, kshare: Kshare, tmp_path: Path, command: str
) -> None:
    """A Ctrl-C while the JVM starts is no failure to look into: the jobs and the capture
    share one Spark lifecycle, which stops Spark, exits 130 and removes the log directory
    it made (the capture used to leave it in TMPDIR)."""
    target = (
        ["--group", story.group]
        if command == "deliveries"
        else ["--all-groups", "--to", str(tmp_path / "capture"), "--until-caught-up"]
    )
    argv = [str(KSHARE), "audit", command, *target, "--master", MASTER, *kshare.connection_args()]
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    with _spark_starting(argv, kshare, temporary) as process:
        assert process.poll() is None, "the command ended before it could be interrupted"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stdout, stderr) == (130, "", "kshare: interrupted\n")
    assert list(temporary.glob("kshare-audit-*")) == []


def test_audits_over_sasl_ssl_with_scram_and_refuses_a_wrong_password(
    spark: Any,
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    tmp_path: Path,
) -> None:
    """The secrets and the CA reach Spark's Python workers: the archived record is read over
    SASL_SSL with SCRAM; a wrong password is one line (without it), exit 3, before Spark."""
    sandbox = secure_sandbox(
        "SASL_SSL",
        mechanisms=("SCRAM-SHA-256",),
        settings=BrokerGroupSettings(
            share_heartbeat_interval_ms=HEARTBEAT_MS,
            share_min_heartbeat_interval_ms=HEARTBEAT_MS,
        ),
    )
    client = librdkafka_config(sandbox, tls_material, mechanism="SCRAM-SHA-256", username="alice")
    cluster = Cluster(
        sandbox.bootstrap,
        {key: str(value) for key, value in client.items() if key != "bootstrap.servers"},
        sandbox,
    )
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"audit-s-{suffix}", f"audit-sg-{suffix}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    _set_group_configs(admin, group, {"share.auto.offset.reset": "earliest"})
    records = Queue(Bed(cluster, SANDBOX_LIMIT, LOCK_MS), topic, group).feed(
        {0: ACCEPT, 1: REJECT, 2: ACCEPT}
    )

    def command_config(password: str) -> Path:
        return write_properties(
            tmp_path / f"{password}.properties",
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "alice",
                "sasl.password": password,
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(tls_material.ca_pem),
            },
        )

    def audit(password: str) -> Any:
        return kshare.run(
            "audit",
            "archived",
            "--group",
            group,
            "-o",
            "jsonl",
            "--master",
            MASTER,
            "-b",
            sandbox.bootstrap,
            "--command-config",
            str(command_config(password)),
            connect=False,
        )

    result = audit(USERS["alice"])
    assert result.exit_code == 0, result.stderr
    assert [
        (row["offset"], row["value"], row["record_found"])
        for row in map(json.loads, result.stdout.splitlines())
    ] == [(records[1].offset, records[1].value.decode(), True)]

    refused = audit("not-" + USERS["alice"])
    assert refused.exit_code == ExitCode.CONNECTION
    line = assert_one_error_line(refused.stderr, "authentication as 'alice' failed")
    assert USERS["alice"] not in line


# --------------------------------------------------------------------------- refusals


def test_without_pyspark_one_line_names_the_extra(tmp_path: Path) -> None:
    fake = tmp_path / "no-spark" / "pyspark"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no pyspark here')\n")
    env = process_env({"PYTHONPATH": str(fake.parent), "KSHARE_BOOTSTRAP_SERVERS": None})
    result = subprocess.run(
        [str(KSHARE), "audit", "timeline", "--group", "g", "-b", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )

    assert result.returncode == ExitCode.USAGE
    assert result.stdout == ""
    # The package is not on the index: what works is the clone's own editable install.
    assert_one_error_line(
        result.stderr,
        "kshare audit needs the spark extra",
        "about 800 MB",
        "Java 17+ runtime",
        "from a clone: .venv/bin/pip install -e '.[spark]'",
    )
    assert "kshare-cli[spark]" not in result.stderr


# --------------------------------------------------------------------------- before Spark


@dataclass
class JavaShim:
    """A ``java`` first on PATH that writes down every command line it is run with.

    Spark's launcher runs ``java`` to start its JVM, so the file shows whether
    Spark started: kshare's own check runs only ``java -version``. ``real``
    is the java it passes on to (None: it answers -version as ``version`` says
    and runs nothing).
    """

    directory: Path
    real: Path | None = None
    version: str = ""

    def __post_init__(self) -> None:
        (self.directory / "bin").mkdir(parents=True)
        script = self.directory / "bin" / "java"
        then = (
            f'exec "{self.real}" "$@"\n'
            if self.real is not None
            else f"echo '{self.version}' >&2\n"
        )
        script.write_text(f'#!/bin/sh\nprintf \'%s\\n\' "$*" >> "{self.calls}"\n{then}')
        script.chmod(0o755)

    @property
    def calls(self) -> Path:
        return self.directory / "calls"

    def command_lines(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def environment(self, tmp: Path) -> dict[str, str | None]:
        """Only this java: first on PATH, no JAVA_HOME; TMPDIR where Spark's log would go."""
        return {
            "PATH": f"{self.directory / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            "JAVA_HOME": None,
            "TMPDIR": str(tmp),
        }


def _real_java() -> Path:
    """The java Spark would run here; the tests that wrap it need one, and PySpark."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if found is None or not os.access(found, os.X_OK):
        pytest.skip("needs a Java runtime to wrap (none at JAVA_HOME or on PATH)")
    return Path(found)


def _spark_logs(tmp: Path) -> list[Path]:
    """The log directories of every Spark session the command started."""
    return list(tmp.glob("kshare-audit-*"))


@pytest.mark.parametrize("java", ["none on PATH", "JAVA_HOME without it", "Java 11"])
def test_without_java_17_one_line_says_what_to_install_before_spark(
    kshare: Kshare, tmp_path: Path, java: str
) -> None:
    """Without a Java 17+ runtime Spark's launcher dies and PySpark says only
    [JAVA_GATEWAY_EXITED]: the command says instead, before connecting, and Spark's
    launcher never runs the java there is."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    old = JavaShim(tmp_path / "old-java", version='openjdk version "11.0.2" 2019-01-15')
    env: dict[str, str | None] = {"TMPDIR": str(temporary), "JAVA_HOME": None}
    if java == "none on PATH":
        empty = tmp_path / "empty"
        empty.mkdir()
        env["PATH"] = str(empty)
    elif java == "JAVA_HOME without it":
        env = {**old.environment(temporary), "JAVA_HOME": str(tmp_path)}
    else:
        env = old.environment(temporary)

    started = time.monotonic()
    result = kshare.subprocess("audit", "archived", "--group", f"g-{uuid.uuid4().hex}", env=env)
    elapsed = time.monotonic() - started

    assert result.returncode == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    line = assert_one_error_line(
        result.stderr,
        "kshare audit needs a Java 17+ runtime",
        "apt-get install openjdk-17-jre-headless",
        "JAVA_HOME",
    )
    if java == "Java 11":
        assert f"{old.directory / 'bin' / 'java'} is Java 11" in line
        assert old.command_lines() == ["-version"]
    else:
        assert old.command_lines() == []
    assert _spark_logs(temporary) == []
    assert elapsed < 15, f"{elapsed:.1f} s: the check must cost no JVM start"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--since", "the day before"], "--since"),
        (["--master", "nowhere"], "--master"),
        (["--output-dir", "{tmp}/out", "--dlq-topic", "t"], "--output-dir and --dlq-topic"),
        (["--copy-record"], "--copy-record shapes what --dlq-topic writes"),
        (["--keep-headers", "-o", "json"], "--keep-headers shapes what --dlq-topic writes"),
        (["--follow", "--report", "{tmp}/r.html"], "--report"),
        (["--follow", "-o", "json"], "-o jsonl"),
        (["--follow", "--output=json"], "-o jsonl"),
        (["--output-dir", "{tmp}/full"], "not empty"),
        (["--report", "{tmp}/no/such/dir/r.html"], "does not exist"),
        (["--group", " "], "group id cannot be empty"),
    ],
)
def test_bad_input_is_refused_before_anything_starts(
    kshare: Kshare, tmp_path: Path, args: list[str], fragment: str
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    if "--group" not in argv:
        argv = ["--group", "g", *argv]

    result = kshare.run("audit", "archived", *argv, env={"KSHARE_BOOTSTRAP_SERVERS": None})

    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, fragment)


@pytest.mark.parametrize(
    ("args", "warning", "error"),
    [
        (
            ["--output", "{tmp}/full"],
            "--output DIR is now --output-dir DIR",
            "--output-dir {tmp}/full: the directory is not empty",
        ),
        (
            ["--output={tmp}/out", "--dlq-topic", "t"],
            "--output DIR is now --output-dir DIR",
            "--output-dir and --dlq-topic cannot be used together: choose one",
        ),
        (
            ["--format", "json", "--follow"],
            "--format is now -o/--output",
            "-o json is one document: use -o jsonl with --follow",
        ),
    ],
)
def test_old_spellings_still_mean_what_they_meant_with_a_warning(
    kshare: Kshare, tmp_path: Path, args: list[str], warning: str, error: str
) -> None:
    """Before -o/--output was the format here as in every command, --output DIR was the
    directory and --format the format: they still are, with one warning line each."""
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]

    result = kshare.run(
        "audit", "archived", "--group", "g", *argv, env={"KSHARE_BOOTSTRAP_SERVERS": None}
    )

    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kshare: warning: {warning}",
        f"kshare: error: {error.replace('{tmp}', str(tmp_path))}",
    ]


@pytest.mark.parametrize("value", ["{tmp}/out", "yaml"])
def test_o_is_only_ever_a_format(kshare: Kshare, tmp_path: Path, value: str) -> None:
    """-o never meant a directory, and --output yaml is another command's format: both are a
    wrong format (one line, exit 2), not a directory to write files into."""
    value = value.replace("{tmp}", str(tmp_path))
    option = "-o" if value.startswith(str(tmp_path)) else "--output"

    result = kshare.subprocess(
        "audit",
        "archived",
        "--group",
        "g",
        option,
        value,
        connect=False,
        env={"KSHARE_BOOTSTRAP_SERVERS": None},
    )

    assert result.returncode == ExitCode.USAGE, result.stderr
    assert_one_error_line(result.stderr, f"'{value}' is not one of 'table', 'json', 'jsonl', 'csv'")
    assert not (tmp_path / "out").exists()


def test_a_topic_that_does_not_exist_exits_5_before_spark(kshare: Kshare, story: Story) -> None:
    result = kshare.run("audit", "deliveries", "--group", story.group, "--topic", "no-such-topic")

    assert result.exit_code == ExitCode.NOT_FOUND
    assert_one_error_line(result.stderr, "topic 'no-such-topic' does not exist")


def test_a_group_nobody_knows_exits_5_in_seconds_without_starting_spark(
    kshare: Kshare, tmp_path: Path
) -> None:
    """The cluster is asked before Spark starts (a minute's read to find nothing): the
    java Spark's launcher would run is run only for its version, and the answer takes
    seconds."""
    shim = JavaShim(tmp_path / "java", real=_real_java())
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    group = f"nobody-{uuid.uuid4().hex}"

    started = time.monotonic()
    result = kshare.subprocess(
        "audit", "archived", "--group", group, env=shim.environment(temporary)
    )
    elapsed = time.monotonic() - started

    assert result.returncode == ExitCode.NOT_FOUND, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, f"share group '{group}': not found")
    assert shim.command_lines() == ["-version"]
    assert _spark_logs(temporary) == []
    assert elapsed < 15, f"{elapsed:.1f} s"


def test_a_topic_the_group_has_no_share_partitions_of_exits_5_without_starting_spark(
    kshare: Kshare, story: Story, tmp_path: Path
) -> None:
    """The dead-letter topic exists, and the story's group never consumed it: the state
    topic holds nothing of the group there, which the cluster says before Spark starts."""
    shim = JavaShim(tmp_path / "java", real=_real_java())
    temporary = tmp_path / "tmp"
    temporary.mkdir()

    result = kshare.subprocess(
        "audit",
        "deliveries",
        "--group",
        story.group,
        "--topic",
        story.dlq_topic,
        env=shim.environment(temporary),
    )

    assert result.returncode == ExitCode.NOT_FOUND, result.stderr
    assert result.stdout == ""
    assert_one_error_line(
        result.stderr,
        f"share group '{story.group}' has no share-partitions of topic '{story.dlq_topic}' "
        f"(it has {story.topic})",
    )
    assert shim.command_lines() == ["-version"]
    assert _spark_logs(temporary) == []


def test_connector_spark_without_sparks_kafka_connector_is_one_line_exit_2(
    spark: Any, kshare: Kshare, story: Story
) -> None:
    """The suite's session has no spark-sql-kafka jar: asking for Spark's connector reaches
    Spark's "kafka" format (no such data source) and says how to add it."""
    result = kshare.run(
        "audit", "deliveries", "--group", story.group, "--connector", "spark", "--master", MASTER
    )

    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "--connector spark: this Spark session has no Kafka")
    assert "spark-sql-kafka-0-10_2.13" in result.stderr and "--connector kshare" in result.stderr


def test_connector_spark_refuses_librdkafka_only_settings_before_connecting(
    kshare: Kshare, tmp_path: Path
) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SSL\nenable.ssl.certificate.verification=false\n")

    result = kshare.run(
        "audit",
        "archived",
        "--group",
        "g",
        "--connector",
        "spark",
        "-b",
        "127.0.0.1:1",
        "--command-config",
        str(config),
        connect=False,
        env={"KSHARE_BOOTSTRAP_SERVERS": None},
    )

    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert_one_error_line(
        result.stderr,
        "--connector spark: Spark's Kafka connector cannot take these librdkafka "
        "properties: enable.ssl.certificate.verification",
    )
