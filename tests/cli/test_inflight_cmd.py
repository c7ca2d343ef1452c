"""``kshare inflight`` against a broker, over share groups a confluent-kafka ShareConsumer drove.

What the command shows is checked against what an independent client did: a
ShareConsumer in explicit mode accepts, releases and rejects chosen records, and
``kshare inflight`` must show exactly those records as acknowledged, available
(with the delivery count the consumer saw) and archived; a record the consumer
still holds must show as unrecorded (Kafka persists no acquisition), and as
available once the consumer has gone. Lag must be ``kshare describe``'s.

Two share groups are made once for the module, side by side (a share consumer's
join costs a heartbeat interval): ``main`` consumes topics ``a`` (2 partitions)
and ``b``, then leaves; ``held`` consumes topic ``c`` and keeps one record
acquired while its windows are read.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    AcknowledgeType,
    Consumer,
    Message,
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
from kio.schema.errors import ErrorCode

from kshare_cli.errors import ExitCode
from kshare_cli.kafka.api_keys import FETCH, METADATA
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from tests.cli.conftest import KSHARE, Kshare, assert_one_error_line, process_env, validate
from tests.support.records import produce
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for
from tests.wire.conftest import Handler, replaced_handler

ROOT = Path(__file__).resolve().parents[2]
STATE_TOPIC = "__share_group_state"

ACCEPT, RELEASE, REJECT, HOLD = "accept", "release", "reject", "hold"
STATE_OF = {ACCEPT: "acknowledged", RELEASE: "available", REJECT: "archived"}
GLYPH_OF = {ACCEPT: "█", RELEASE: "░", REJECT: "╳"}

#: Records per (topic, partition) and what the main group's consumer does with each
#: offset (anything not named is accepted). Offset 0 of each partition of ``a`` is
#: released, so its start offset stays at 0 and every decision stays in the window.
MAIN_RECORDS = {("a", 0): 10, ("a", 1): 6, ("b", 0): 4}
MAIN_PLAN = {
    ("a", 0): {0: RELEASE, 3: REJECT, 4: REJECT, 5: RELEASE},
    ("a", 1): {0: RELEASE, 2: REJECT},
    ("b", 0): {1: REJECT},
}
#: Produced to a:0 after the main consumer left: queued, never delivered.
QUEUED = 3
HELD_RECORDS = 5
HELD_PLAN = {2: HOLD, 4: REJECT}


@dataclass(frozen=True)
class Scenario:
    """The module's groups and what their consumers did (hence what kshare must show)."""

    main: str
    held: str
    topics: Mapping[str, str]  # "a", "b", "c" -> the topic's real name
    # (topic, partition, offset) -> (what the consumer last did, the delivery count it saw)
    last_delivery: Mapping[tuple[str, int, int], tuple[str, int]]
    held_json: Mapping[str, Any]  # `inflight held -o json` while the record was held
    held_table: str
    released_json: Mapping[str, Any]  # the same after the consumer closed


def _produce(cluster: Cluster, topic: str, partition: int, count: int) -> None:
    # One produce request per partition: the records form one batch, which a broker
    # hands to one consumer in one go.
    produce(
        cluster.config(**{"linger.ms": 100}),
        topic,
        {partition: count},
        value=lambda partition, index: f"{topic}-{partition}-{index}".encode(),
    )


def _inflight_json(checker: Kshare, group: str, *args: str) -> dict[str, Any]:
    result = checker.run("inflight", group, "-o", "json", *args)
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _window_of(document: Mapping[str, Any], topic: str, partition: int) -> Any:
    for entry in document["partitions"]:
        if entry["topic"] == topic and entry["partition"] == partition:
            return entry["window"]
    return None


def _offset_state(window: Mapping[str, Any], offset: int) -> tuple[str, int] | None:
    for run in window["runs"]:
        if run["first_offset"] <= offset <= run["last_offset"]:
            return run["state"], run["delivery_count"]
    return None


@pytest.fixture(scope="module")
def scenario(
    cluster: Cluster, cluster_command_config: Path | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    suffix = uuid.uuid4().hex[:8]
    topics = {name: f"kshare-inflight-{name}-{suffix}" for name in ("a", "b", "c")}
    main, held = f"kshare-inflight-main-{suffix}", f"kshare-inflight-held-{suffix}"
    admin = AdminClient(cluster.config())
    new = [NewTopic(topics["a"], 2, 1), NewTopic(topics["b"], 1, 1), NewTopic(topics["c"], 1, 1)]
    for future in admin.create_topics(new).values():
        future.result(30)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resources = [
        ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[earliest])
        for group in (main, held)
    ]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)
    for (name, partition), count in MAIN_RECORDS.items():
        _produce(cluster, topics[name], partition, count)
    _produce(cluster, topics["c"], 0, HELD_RECORDS)

    checker = Kshare(
        cluster.bootstrap,
        cluster_command_config,
        tmp_path_factory.mktemp("inflight-profiles") / "config.toml",
    )
    explicit = {"share.acknowledgement.mode": "explicit"}
    main_consumer = ShareConsumer(cluster.config(**{"group.id": main, **explicit}))
    held_consumer = ShareConsumer(cluster.config(**{"group.id": held, **explicit}))
    main_consumer.subscribe([topics["a"], topics["b"]])
    held_consumer.subscribe([topics["c"]])
    name_of = {real: name for name, real in topics.items()}
    last_delivery: dict[tuple[str, int, int], tuple[str, int]] = {}
    held_batch: list[Message] = []
    main_open = held_open = True
    try:

        def act(message: Message) -> None:
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            topic = name_of[str(message.topic())]
            action = MAIN_PLAN[(topic, partition)].get(offset, ACCEPT)
            # A released record that comes back is released again: its last delivery
            # count is then what the window must show.
            kind = {RELEASE: AcknowledgeType.RELEASE, REJECT: AcknowledgeType.REJECT}
            main_consumer.acknowledge(message, kind.get(action, AcknowledgeType.ACCEPT))
            last_delivery[(topic, partition, offset)] = (action, message.delivery_count())

        def both_consumed() -> bool:
            records = [m for m in main_consumer.poll(0.1) if m.error() is None]
            for message in records:
                act(message)
            if records:
                assert not any(main_consumer.commit_sync(10).values())
            if not held_batch:
                held_batch.extend(m for m in held_consumer.poll(0.1) if m.error() is None)
            return len(last_delivery) == sum(MAIN_RECORDS.values()) and bool(held_batch)

        wait_for(both_consumed, timeout=90, interval=0, what="both groups' records delivered")
        main_consumer.close()
        main_open = False
        _produce(cluster, topics["a"], 0, QUEUED)

        # The held group: one poll brought the whole batch (one produce request); all
        # but one record are acknowledged, and an explicit-mode consumer may then not
        # poll again, so the held record stays acquired until the consumer closes.
        offsets = sorted(message.offset() or 0 for message in held_batch)
        assert offsets == list(range(HELD_RECORDS)), f"the batch came in parts: {offsets}"
        for message in held_batch:
            action = HELD_PLAN.get(message.offset() or 0, ACCEPT)
            if action == REJECT:
                held_consumer.acknowledge(message, AcknowledgeType.REJECT)
            elif action == ACCEPT:
                held_consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        assert not any(held_consumer.commit_sync(10).values())

        def held_written() -> dict[str, Any] | None:
            document = _inflight_json(checker, held)
            window = _window_of(document, topics["c"], 0)
            return document if window and window["end_offset"] == HELD_RECORDS else None

        held_json = wait_for(held_written, timeout=30, what="the held group's acknowledgements")
        held_table = checker.run("inflight", held).stdout
        held_consumer.close()
        held_open = False

        def released() -> dict[str, Any] | None:
            document = _inflight_json(checker, held)
            window = _window_of(document, topics["c"], 0)
            state = None if window is None else _offset_state(window, 2)
            return document if state is not None and state[0] == "available" else None

        released_json = wait_for(released, timeout=30, what="the held record released")

        def main_written() -> bool:
            document = _inflight_json(checker, main)
            for (name, partition), count in MAIN_RECORDS.items():
                window = _window_of(document, topics[name], partition)
                if window is None or max(window["end_offset"], window["start_offset"]) < count:
                    return False
            return True

        wait_for(main_written, timeout=30, what="the main group's acknowledgements")
        yield Scenario(main, held, topics, last_delivery, held_json, held_table, released_json)
    finally:
        if main_open:
            main_consumer.close()
        if held_open:
            held_consumer.close()


# --------------------------------------------------------------------------- what it shows


def test_json_shows_what_the_consumer_did_to_each_record(
    kshare: Kshare, scenario: Scenario
) -> None:
    document = _inflight_json(kshare, scenario.main)
    validate(document, "inflight.schema.json")
    assert document["group_id"] == scenario.main
    assert document["state"] == "Empty"
    assert document["members"] == 0
    assert document["window_note"] is None
    assert [(p["topic"], p["partition"]) for p in document["partitions"]] == sorted(
        (scenario.topics[name], partition) for name, partition in MAIN_RECORDS
    )
    for (name, partition), count in MAIN_RECORDS.items():
        window = _window_of(document, scenario.topics[name], partition)
        start = window["start_offset"]
        # Everything below the start offset is done; everything from it on is in a run.
        decided = {
            offset: scenario.last_delivery[(name, partition, offset)]
            for offset in range(start, count)
        }
        for offset, (action, delivery_count) in decided.items():
            assert _offset_state(window, offset) == (STATE_OF[action], delivery_count), (
                name,
                partition,
                offset,
            )
        expected = {
            state: sum(1 for action, _ in decided.values() if STATE_OF[action] == state)
            for state in ("available", "acknowledged", "archived")
        }
        assert {key: window[key] for key in expected} == expected, (name, partition)
        assert window["unrecorded"] == 0
        assert window["max_delivery_count"] == max((dc for _, dc in decided.values()), default=0)
        assert window["delivery_complete_count"] == expected["acknowledged"] + expected["archived"]
    # a:0 keeps offset 0 available, so its start offset cannot have moved: exact counts.
    window = _window_of(document, scenario.topics["a"], 0)
    assert window["start_offset"] == 0
    assert (window["available"], window["acknowledged"], window["archived"]) == (2, 6, 2)
    assert window["queued"] == QUEUED
    seen = [scenario.last_delivery[("a", 0, offset)][1] for offset in range(10)]
    assert window["delivery_histogram"] == [
        {"delivery_count": count, "records": seen.count(count)} for count in sorted(set(seen))
    ]


def test_lag_is_describes_and_follows_from_the_window(kshare: Kshare, scenario: Scenario) -> None:
    inflight = _inflight_json(kshare, scenario.main)
    described = json.loads(kshare.run("describe", scenario.main, "-o", "json").stdout)
    (group,) = described["groups"]
    by_partition = {(p["topic"], p["partition"]): p for p in group["partitions"]}
    for entry in inflight["partitions"]:
        same = by_partition[(entry["topic"], entry["partition"])]
        for key in ("start_offset", "end_offset", "lag", "lag_source"):
            assert entry[key] == same[key], (entry["topic"], entry["partition"], key)
        window = entry["window"]
        if window["start_offset"] == entry["start_offset"]:
            # KIP-1226: lag = log end offset - start offset - delivery-complete count
            expected = entry["end_offset"] - window["start_offset"]
            assert entry["lag"] == expected - window["delivery_complete_count"]
    assert inflight["total_lag"] == group["total_lag"]
    assert inflight["delivery_count_limit"] == 5


#: Every shade of available as the lightest: what was decided, whatever the delivery count.
_UNSHADED = str.maketrans("▒▓", "░░")


def _glyph(action: str, delivery_count: int, limit: int = 5) -> str:
    """The strip's character for what the consumer last did to a record.

    An available record is shaded by its delivery count (``░`` delivered at most once,
    ``▓`` at ``limit - 1`` or more, ``▒`` between). How often a released record came back
    before the consumer had seen every record is up to the broker's timing: on Kafka
    4.2 a partition's records can come a poll apart, so a record released early is
    acquired again (``SharePartition.acquire``, delivery count + 1) meanwhile; the
    count the consumer saw last is what Kafka persisted (the JSON test checks that).
    """
    if action != RELEASE:
        return GLYPH_OF[action]
    if delivery_count <= 1:
        return "░"
    return "▓" if delivery_count >= limit - 1 else "▒"


def _strip(scenario: Scenario, name: str, partition: int, count: int) -> str:
    return "".join(
        _glyph(*scenario.last_delivery[(name, partition, offset)]) for offset in range(count)
    )


def _most(scenario: Scenario, name: str, partition: int, count: int) -> str:
    """MAX-DELIVERY as the consumer saw it."""
    return str(max(scenario.last_delivery[(name, partition, o)][1] for o in range(count)))


def test_table_has_a_strip_and_counts_per_share_partition(
    kshare: Kshare, scenario: Scenario
) -> None:
    result = kshare.run("inflight", scenario.main)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert "\x1b" not in result.stdout
    rows = {
        line.split()[0]: line.split()
        for line in result.stdout.splitlines()
        if line.startswith("kshare-inflight-")
    }
    assert len(rows) == len(MAIN_RECORDS)
    # a:0, one character per offset: 10 decided records, then the queued ones.
    strip = _strip(scenario, "a", 0, 10) + "·" * QUEUED
    # What was decided for each offset; an available record's shade is its delivery count.
    assert strip.translate(_UNSHADED) == "░██╳╳░████···"
    row = rows[f"{scenario.topics['a']}:0"]
    # START-OFFSET WINDOW END-OFFSET AVAILABLE ACKNOWLEDGED ARCHIVING ARCHIVED UNRECORDED
    # DELETED QUEUED MAX-DELIVERY LAG; QUEUED counts the strip's trailing ·, produced and
    # never delivered; ARCHIVING (Kafka 4.4) and DELETED (below the log start) are 0 here.
    most = _most(scenario, "a", 0, 10)
    assert row[1:] == ["0", strip, "13", "2", "6", "0", "2", "0", "0", str(QUEUED), most, "5"]
    row = rows[f"{scenario.topics['a']}:1"]
    strip = _strip(scenario, "a", 1, 6)
    assert strip.translate(_UNSHADED) == "░█╳███"
    most = _most(scenario, "a", 1, 6)
    assert row[1:] == ["0", strip, "6", "1", "4", "0", "1", "0", "0", "0", most, "1"]
    assert "acquired records are not persisted" in result.stdout
    assert "(limit 5)" in result.stdout


def test_narrow_strips(kshare: Kshare, scenario: Scenario) -> None:
    result = kshare.run("inflight", scenario.main, "--width", "5", "--topic", scenario.topics["a"])
    assert result.exit_code == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(scenario.topics["a"]))
    # 13 offsets in cells of 3, each showing the most important state it holds (archived,
    # then available, acknowledged, unrecorded, queued): [0-2] an available record among
    # acked ones, [3-5] archived, [6-8] acked, [9-11] an acked one among queued ones,
    # [12] queued.
    assert row.split()[2].translate(_UNSHADED) == "░╳██·"


def test_a_held_record_is_unrecorded_until_its_consumer_leaves(scenario: Scenario) -> None:
    topic = scenario.topics["c"]
    window = _window_of(scenario.held_json, topic, 0)
    start = window["start_offset"]
    assert start <= 2  # the held record keeps the start offset from passing it
    assert _offset_state(window, 2) == ("unrecorded", 0)
    assert window["unrecorded"] == 1
    assert _offset_state(window, 3) == ("acknowledged", 1)
    assert _offset_state(window, 4) == ("archived", 1)
    row = next(line for line in scenario.held_table.splitlines() if line.startswith(topic))
    assert row.split()[2] == "██·█╳"[start:]
    released = _window_of(scenario.released_json, topic, 0)
    assert _offset_state(released, 2) == ("available", 1)
    assert released["unrecorded"] == 0


def test_topic_filter(kshare: Kshare, scenario: Scenario) -> None:
    document = _inflight_json(kshare, scenario.main, "--topic", scenario.topics["b"])
    assert [(p["topic"], p["partition"]) for p in document["partitions"]] == [
        (scenario.topics["b"], 0)
    ]
    both = _inflight_json(
        kshare, scenario.main, "-t", scenario.topics["a"], "-t", scenario.topics["b"]
    )
    assert len(both["partitions"]) == 3


def test_a_topic_that_does_not_exist_is_5_said_on_stderr_not_stdout(
    kshare: Kshare, scenario: Scenario
) -> None:
    missing = f"kshare-inflight-nothing-{uuid.uuid4().hex[:6]}"
    alone = kshare.run("inflight", scenario.main, "-t", missing)
    assert alone.exit_code == ExitCode.NOT_FOUND
    assert alone.stdout == ""
    assert_one_error_line(alone.stderr, "kshare: error:", f"topic '{missing}' does not exist")

    beside = kshare.run("inflight", scenario.main, "--topic", scenario.topics["b"], "-t", missing)
    assert beside.exit_code == ExitCode.NOT_FOUND
    rows = [line.split()[0] for line in beside.stdout.splitlines() if line.startswith("kshare-")]
    assert rows == [f"{scenario.topics['b']}:0"]
    assert_one_error_line(beside.stderr, "kshare: error:", f"topic '{missing}' does not exist")


def test_an_existing_topic_without_share_partitions_of_the_group_is_5_and_said_so(
    kshare: Kshare, scenario: Scenario
) -> None:
    other = scenario.topics["c"]  # exists; only the held group consumes it
    table = kshare.run("inflight", scenario.main, "-t", other)
    assert table.exit_code == ExitCode.NOT_FOUND
    assert table.stdout == ""
    assert_one_error_line(
        table.stderr,
        "kshare: error:",
        f"share group '{scenario.main}' has no share-partition of topic '{other}'",
        "the topic exists",
    )
    document = kshare.run("inflight", scenario.main, "-t", other, "-o", "json")
    assert document.exit_code == ExitCode.NOT_FOUND
    parsed = json.loads(document.stdout)
    validate(parsed, "inflight.schema.json")
    assert parsed["partitions"] == []


def test_a_group_without_share_partitions_prints_no_table_and_says_why_on_stderr(
    kshare: Kshare, scenario: Scenario, tmp_path: Path
) -> None:
    group = f"kshare-inflight-bare-{uuid.uuid4().hex[:6]}"
    topic = scenario.topics["b"]
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{topic},0,0\n")
    made = kshare.run(
        "reset-offsets",
        group,
        "--from-file",
        str(plan),
        "--execute",
        "--allow-new-group",
        "--rollback-file",
        str(tmp_path / "rollback.csv"),
    )
    assert made.exit_code == 0, made.stderr
    emptied = kshare.run("delete-offsets", group, "-t", topic, "--execute", "--yes")
    assert emptied.exit_code == 0, emptied.stderr

    result = kshare.run("inflight", group)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, f"kshare: share group '{group}' has no share-partitions")


def test_jsonl_and_csv(kshare: Kshare, scenario: Scenario) -> None:
    result = kshare.run("inflight", scenario.main, "-o", "jsonl")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == len(MAIN_RECORDS)
    for row in rows:
        validate(row, "inflight-row.schema.json")
    first = rows[0]
    assert (first["available"], first["acknowledged"], first["archived"]) == (2, 6, 2)
    table = kshare.run("inflight", scenario.main, "-o", "csv").stdout.splitlines()
    assert table[0].split(",") == list(first)
    assert len(table) == 1 + len(MAIN_RECORDS)


# --------------------------------------------------------------------------- failures


def test_unknown_group_is_5_as_describe(kshare: Kshare, cluster: Cluster, unique: str) -> None:
    missing = f"kshare-inflight-missing-{unique}"
    result = kshare.run("inflight", missing)
    described = kshare.run("describe", missing)
    assert result.exit_code == described.exit_code == ExitCode.NOT_FOUND
    assert result.stdout == ""
    assert result.stderr == described.stderr
    assert_one_error_line(result.stderr, f"'{missing}'", "not found")


def test_a_consumer_group_is_not_a_share_group_as_describe(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    group = f"kshare-inflight-classic-{unique}"
    topic = f"kshare-inflight-classic-{unique}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    consumer = Consumer(cluster.config(**{"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    result = kshare.run("inflight", group)
    described = kshare.run("describe", group)
    # It exists: exit 1 (not 5, "no such group"), one line naming what it is.
    assert result.exit_code == described.exit_code == ExitCode.PARTIAL
    assert result.stdout == ""
    assert result.stderr == described.stderr
    assert_one_error_line(result.stderr, f"group '{group}' is not a share group")


def _denying_state_topic(api_key: int) -> Any:
    """Fetch or Metadata answering TOPIC_AUTHORIZATION_FAILED for the state topic only.

    As Kafka answers a principal without READ (Fetch) or without DESCRIBE (Metadata)
    on ``__share_group_state``; every other topic is served as usual.
    """

    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            state = broker.topic(STATE_TOPIC)
            state_id = None if state is None else state.topic_id
            denied = ErrorCode.topic_authorization_failed
            if api_key == FETCH:

                def refuse(topic: Any) -> Any:
                    name, topic_id = getattr(topic, "topic", None), getattr(topic, "topic_id", None)
                    if name != STATE_TOPIC and (topic_id is None or topic_id != state_id):
                        return topic
                    partitions = tuple(
                        dataclasses.replace(part, error_code=denied, records=b"", high_watermark=-1)
                        for part in topic.partitions
                    )
                    return dataclasses.replace(topic, partitions=partitions)

                return dataclasses.replace(
                    response, responses=tuple(refuse(t) for t in response.responses)
                )
            topics = tuple(
                dataclasses.replace(topic, error_code=denied, partitions=())
                if topic.name == STATE_TOPIC
                else topic
                for topic in response.topics
            )
            return dataclasses.replace(response, topics=topics)

        return handler

    return make


@pytest.mark.parametrize(
    ("api_key", "permission"), [(FETCH, "READ"), (METADATA, "DESCRIBE")], ids=["read", "describe"]
)
def test_unreadable_state_topic_blanks_the_strips_warns_once_and_exits_0(
    kshare: Kshare, scenario: Scenario, cluster: Cluster, api_key: int, permission: str
) -> None:
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: a missing ACL can only be injected into the sandbox")
    del permission  # the id says which ACL the refusal stands for
    with replaced_handler(cluster.sandbox, api_key, _denying_state_topic(api_key)):
        table = kshare.run("inflight", scenario.main, "--timeout", "10s")
        document = kshare.run("inflight", scenario.main, "-o", "json", "--timeout", "10s")
    assert table.exit_code == 0, table.stderr
    warning = assert_one_error_line(table.stderr, "kshare: warning:", "not authorized", STATE_TOPIC)
    rows = [line.split() for line in table.stdout.splitlines() if line.startswith("kshare-")]
    assert len(rows) == len(MAIN_RECORDS)
    for row in rows:
        # no strip: START-OFFSET END-OFFSET, eight unknown counts (ARCHIVING and DELETED
        # among them), then the lag
        assert len(row) == 12 and row[3:11] == ["-"] * 8, row
    assert f"No windows: {warning.split('no in-flight windows: ', 1)[1]}." in table.stdout
    assert document.exit_code == 0
    parsed = json.loads(document.stdout)
    validate(parsed, "inflight.schema.json")
    assert "not authorized" in parsed["window_note"]
    assert all(entry["window"] is None for entry in parsed["partitions"])
    assert all(entry["lag"] is not None for entry in parsed["partitions"])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["inflight", "g", "--width", "0"], "--width"),
        (["inflight", "g", "--width", "1001"], "--width"),
        (["inflight", "g", "-o", "plain"], "plain"),
        (["inflight", " "], "group id"),
        (["inflight", "g", "--topic", ""], "--topic"),
        (["inflight", "g", "--timeout", "soon"], "--timeout"),
    ],
    ids=["width-0", "width-too-wide", "plain", "blank-group", "blank-topic", "bad-timeout"],
)
def test_usage_errors_are_2_before_any_connection(
    kshare: Kshare, args: list[str], fragment: str
) -> None:
    # The broker is a closed port: a usage error must be found before connecting.
    result = kshare.run(*args, "-b", "127.0.0.1:1", connect=False)
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error:", fragment)


def test_a_width_that_is_not_a_number_is_2_in_one_line(kshare: Kshare) -> None:
    result = kshare.subprocess(
        "inflight", "g", "--width", "wide", "-b", "127.0.0.1:1", connect=False
    )
    assert result.returncode == ExitCode.USAGE
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error:", "--width")


def test_missing_group_argument_is_2(kshare: Kshare) -> None:
    result = subprocess.run(
        [str(KSHARE), "inflight", "-b", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        env=process_env(kshare.environment()),
        timeout=60,
        check=False,
    )
    assert result.returncode == ExitCode.USAGE
    assert_one_error_line(result.stderr, "GROUP")


def test_help_offers_only_the_formats_inflight_has(kshare: Kshare) -> None:
    result = kshare.run("inflight", "--help", connect=False)
    assert result.exit_code == 0
    assert "-o, --output <table|json|jsonl|csv|yaml>" in result.stdout
    assert "plain" not in result.stdout


def test_help_loads_nothing_heavy() -> None:
    heavy = (
        "asyncio",
        "kio",
        "rich",
        "confluent_kafka",
        "kshare_cli.wire",
        "kshare_cli.admin",
        "kshare_cli.render",
        "kshare_cli.state",
    )
    code = (
        "import sys\n"
        "sys.argv = ['kshare', 'inflight', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"heavy = {heavy!r}\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "--width" in result.stdout
    assert result.stderr == "[]"
