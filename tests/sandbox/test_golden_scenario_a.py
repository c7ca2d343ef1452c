"""Golden scenario A, replayed live: the sandbox must do what Kafka 4.2.0 did.

The same client actions as the recording (README "Scenario A"): confluent-kafka creates
``golden-a``, sets ``share.auto.offset.reset=earliest`` for ``golden-g``, produces the 30
recorded records and consumes them with a ShareConsumer in explicit mode, releasing,
rejecting and accepting exactly as recorded. Then the Java tools' recorded admin requests
(client ``adminclient-1``) are sent at the same points -- while the consumer is a member,
after it closed -- with the broker-assigned ids substituted, and every response must decode
to the recorded content. Last, ``__share_group_state`` read back with a plain Consumer must
hold the records Kafka wrote for ``golden-g``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from typing import Any

from confluent_kafka import (
    AcknowledgeType,
    Consumer,
    Producer,
    ShareConsumer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.state.records import (
    DELIVERY_COMPLETE_COUNT_UNKNOWN,
    ShareSnapshotValue,
    StateRecordKind,
    decode_record,
)
from tests.support.golden import (
    GOLDEN,
    RawConnection,
    WireLine,
    kafka_uuid,
    normalise,
    plain,
    read_jsonl,
    substitute,
    wire_lines,
)
from tests.support.sandbox import Cluster, skip_on_real_cluster
from tests.support.waiting import wait_for

TOPIC = "golden-a"
GROUP = "golden-g"
CONFIG_GROUP = "golden-h"
# Groups the recording broker already held (g1, perf-*, p4-*) are not part of the scenario;
# the tools also described a group that does not exist.
SCENARIO_GROUPS = frozenset({GROUP, CONFIG_GROUP, "no-such-group"})
ADMIN_CLIENT = "adminclient-1"
ADMIN_APIS = frozenset({16, 77, 90, 91, 92, 42, 32, 44})
STATE_TOPIC = "__share_group_state"
STATE_PARTITIONS = 50
DELIVERY_LIMIT = 5
# After the 5th release the record is archived; poll this long to see it never comes back.
NO_REDELIVERY_S = 3.0

ACTIONS = {
    "accept": AcknowledgeType.ACCEPT,
    "release": AcknowledgeType.RELEASE,
    "reject": AcknowledgeType.REJECT,
}


# --------------------------------------------------------------------------- recorded data


def _recorded_deliveries() -> list[dict[str, Any]]:
    return read_jsonl("scenario-a-deliveries.jsonl")


def _recorded_topic_id() -> uuid.UUID:
    """golden-a's id on the recording broker, as its DescribeShareGroupOffsets answers name it."""
    ids = {
        topic.topic_id
        for line in wire_lines("scenario-a")
        if line.api_key == DESCRIBE_SHARE_GROUP_OFFSETS
        for group in line.response.groups
        for topic in group.topics
        if topic.topic_name == TOPIC
    }
    (topic_id,) = ids
    assert isinstance(topic_id, uuid.UUID)
    return topic_id


def _leave_line() -> int:
    """The capture line of the share consumer's leave heartbeat (member epoch -1)."""
    for line in wire_lines("scenario-a"):
        if line.api_key == SHARE_GROUP_HEARTBEAT and int(line.request.member_epoch) == -1:
            return line.line
    raise AssertionError("no leave heartbeat in the capture")


def _about_scenario(line: WireLine) -> bool:
    """False for requests only about groups that pre-existed on the recording broker."""
    if line.api_key == DESCRIBE_SHARE_GROUP_OFFSETS:
        return any(group.group_id in SCENARIO_GROUPS for group in line.request.groups)
    return True


def _admin_lines() -> tuple[list[WireLine], list[WireLine]]:
    """The tools' recorded admin requests: (while the consumer was a member, after it left)."""
    leave = _leave_line()
    admin = [
        line
        for line in wire_lines("scenario-a")
        if line.api_key in ADMIN_APIS and line.client_id == ADMIN_CLIENT and _about_scenario(line)
    ]
    return [a for a in admin if a.line < leave], [a for a in admin if a.line > leave]


# --------------------------------------------------------------------------- client actions


def _setup(cluster: Cluster) -> uuid.UUID:
    admin = AdminClient(cluster.config())  # type: ignore[arg-type]
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(15)
    resource = ConfigResource(
        ResourceType.GROUP,
        GROUP,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset",
                "earliest",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)
    description = admin.describe_topics(TopicCollection([TOPIC]))[TOPIC].result(15)
    return kafka_uuid(str(description.topic_id))


def _produce(cluster: Cluster) -> None:
    producer = Producer(cluster.config(**{"acks": "all", "linger.ms": 1000}))
    delivered: list[tuple[int, int]] = []

    def on_delivery(error: object, message: Any) -> None:
        assert error is None, error
        delivered.append((message.partition(), message.offset()))

    produced = read_jsonl("scenario-a-produced.jsonl")
    for record in produced:
        producer.produce(
            TOPIC,
            key=None if record["key"] is None else record["key"].encode(),
            value=record["value"].encode(),
            partition=record["partition"],
            timestamp=record["timestamp"],
            headers=[(name, value.encode()) for name, value in record["headers"]] or None,
            on_delivery=on_delivery,
        )
    assert producer.flush(15) == 0
    assert sorted(delivered) == sorted((r["partition"], r["offset"]) for r in produced)


def _headers(message: Any) -> list[tuple[str, str]]:
    return [(str(name), bytes(value).decode()) for name, value in message.headers() or []]


def _consume(cluster: Cluster) -> tuple[ShareConsumer, list[dict[str, Any]]]:
    """Consume with the recorded actions; returns the still-open consumer and its deliveries."""
    recorded = _recorded_deliveries()
    actions = {(d["partition"], d["offset"], d["delivery_count"]): d["action"] for d in recorded}
    produced = {(r["partition"], r["offset"]): r for r in read_jsonl("scenario-a-produced.jsonl")}
    consumer = ShareConsumer(
        cluster.config(
            **{
                "group.id": GROUP,
                "client.id": "golden-a-share-consumer",
                "share.acknowledgement.mode": "explicit",
            }
        )
    )
    consumer.subscribe([TOPIC])
    deliveries: list[dict[str, Any]] = []
    deadline = time.monotonic() + 40
    quiet_until: float | None = None
    while True:
        now = time.monotonic()
        if quiet_until is None and len(deliveries) >= len(recorded):
            quiet_until = now + NO_REDELIVERY_S
        if (quiet_until is not None and now >= quiet_until) or now >= deadline:
            break
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            partition, offset = message.partition(), message.offset()
            count = message.delivery_count()
            action = actions.get((partition, offset, count), "unexpected")
            record = produced[(partition, offset)]
            headers = _headers(message)
            deliveries.append(
                {
                    "partition": partition,
                    "offset": offset,
                    "delivery_count": count,
                    "action": action,
                    # What came back must be what was produced.
                    "record": (
                        message.key(),
                        message.value(),
                        headers,
                        message.timestamp()[1],
                    ),
                    "produced": (
                        None if record["key"] is None else record["key"].encode(),
                        record["value"].encode(),
                        [tuple(h) for h in record["headers"]],
                        record["timestamp"],
                    ),
                }
            )
            consumer.acknowledge(message, ACTIONS.get(action, AcknowledgeType.ACCEPT))
    # Every acknowledgement already rode on a ShareFetch: nothing is left to commit.
    assert consumer.commit_sync() == {}
    return consumer, deliveries


def _final_states(deliveries: list[dict[str, Any]]) -> dict[str, str]:
    final: dict[str, str] = {}
    for d in deliveries:
        key = f"{d['partition']}:{d['offset']}"
        if d["action"] == "accept":
            final[key] = "accepted"
        elif d["action"] == "reject":
            final[key] = "rejected"
        elif d["action"] == "release" and d["delivery_count"] >= DELIVERY_LIMIT:
            final[key] = "archived"
    return final


# --------------------------------------------------------------------------- admin replay


class AdminReplay:
    """Sends recorded admin requests with live ids and compares the answers with Kafka's."""

    def __init__(self, cluster: Cluster, recorded_topic_id: uuid.UUID, topic_id: uuid.UUID):
        self._connection = RawConnection(cluster.bootstrap)
        self._topic_ids = {recorded_topic_id: topic_id}
        self._names = {str(recorded_topic_id): f"<{TOPIC}>", str(topic_id): f"<{TOPIC}>"}
        self.mismatches: list[str] = []
        self.answers: dict[int, Any] = {}

    def send(self, line: WireLine) -> Any:
        request = substitute(line.request, self._topic_ids, {})
        return self._connection.send(request, line.client_id)

    def replay(self, line: WireLine) -> Any:
        ours = normalise(plain(self.send(line)), topic_ids=self._names, keep_groups=SCENARIO_GROUPS)
        kafka = normalise(plain(line.response), topic_ids=self._names, keep_groups=SCENARIO_GROUPS)
        self.answers[line.line] = ours
        if ours != kafka:
            self.mismatches.append(
                f"line {line.line} {type(line.request).__name__}:\n"
                f"  kafka:   {json.dumps(kafka, default=repr)}\n"
                f"  sandbox: {json.dumps(ours, default=repr)}"
            )
        return ours

    def close(self) -> None:
        self._connection.close()


def _group_state(replay: AdminReplay, describe: WireLine) -> str:
    (group,) = plain(replay.send(describe))["groups"]
    return str(group["group_state"])


def _assert_key_facts(answers: dict[int, Any]) -> None:
    """What the recording shows, spelled out (the sandbox's answers, by golden line)."""

    def offsets(line: int) -> list[tuple[int, int, int]]:
        (group,) = answers[line]["groups"]
        return [
            (p["partition_index"], p["start_offset"], p["lag"])
            for topic in group["topics"]
            for p in topic["partitions"]
        ]

    # With the member present and after close: the persisted start offsets stay at the two
    # redelivered records, and the lag is 0.
    assert offsets(143) == offsets(298) == [(0, 2, 0), (1, 5, 0)]
    # Reset to earliest: lag unknown (-1); then golden-a:1 to 2026-01-01T00:00:10Z: offset 5.
    assert offsets(337) == [(0, 0, -1), (1, 0, -1)]
    assert offsets(360) == [(0, 0, -1), (1, 5, -1)]
    # Delete offsets: no offset information; then the group is deleted and gone.
    assert offsets(380) == []
    assert answers[387]["results"] == [{"group_id": GROUP, "error_code": 0}]
    assert GROUP not in [g["group_id"] for g in answers[392]["groups"]]
    # golden-h: the alter within bounds succeeds, the one above the broker maximum does not.
    assert answers[397]["responses"][0]["error_code"] == 0
    (refused,) = answers[409]["responses"]
    assert (refused["error_code"], refused["error_message"]) == (
        40,
        "share.record.lock.duration.ms must be less than or equal to "
        "group.share.max.record.lock.duration.ms",
    )


# --------------------------------------------------------------------------- state topic


def _read_state_topic(cluster: Cluster) -> list[tuple[int, int, bytes, bytes | None]]:
    """Every record of ``__share_group_state``: (partition, offset, key, value).

    From each partition's log start, not offset 0: the share coordinator prunes the
    topic (every five minutes on Kafka and in a long-running sandbox).
    """
    consumer = Consumer(
        cluster.config(
            **{
                "group.id": f"golden-state-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "client.id": "golden-state-reader",
            }
        )
    )
    try:
        ends = {}
        positions = {}
        for partition in range(STATE_PARTITIONS):
            low, high = consumer.get_watermark_offsets(TopicPartition(STATE_TOPIC, partition), 15)
            if high > low:
                ends[partition], positions[partition] = high, low
        consumer.assign([TopicPartition(STATE_TOPIC, p, positions[p]) for p in ends])
        records: list[tuple[int, int, bytes, bytes | None]] = []
        deadline = time.monotonic() + 20
        while any(positions[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"state topic read stuck at {positions} of {ends}"
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            state_partition, offset = message.partition(), message.offset()
            assert state_partition is not None and offset is not None
            key = message.key()
            assert isinstance(key, bytes)
            value = message.value()
            records.append((state_partition, offset, key, None if value is None else bytes(value)))
            positions[state_partition] = offset + 1
        return records
    finally:
        consumer.close()


def _record_content(kind: int, value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A state record's value content, timestamps and topic id aside."""
    if value is None:
        return {"kind": kind, "tombstone": True}
    content = {
        "kind": kind,
        "snapshot_epoch": value["snapshot_epoch"],
        "leader_epoch": value["leader_epoch"],
        "start_offset": value["start_offset"],
        "delivery_complete_count": value["delivery_complete_count"],
        "state_batches": [
            (b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in value["state_batches"]
        ],
    }
    if kind == StateRecordKind.SNAPSHOT:
        content["state_epoch"] = value["state_epoch"]
    return content


def _recorded_state_records() -> dict[int, list[dict[str, Any] | None]]:
    """golden-g's records per share-partition, in log order, from Kafka's own decoding."""
    by_partition: dict[int, list[dict[str, Any] | None]] = {}
    for line in read_jsonl("decoded/share-group-state.jsonl"):
        if line["key"]["groupId"] != GROUP:
            continue
        value = line["value"]
        converted = None
        if value is not None:
            converted = {
                "snapshot_epoch": value["snapshotEpoch"],
                "state_epoch": value.get("stateEpoch"),
                "leader_epoch": value["leaderEpoch"],
                "start_offset": value["startOffset"],
                "delivery_complete_count": value.get(
                    "deliveryCompleteCount", DELIVERY_COMPLETE_COUNT_UNKNOWN
                ),
                "state_batches": [
                    {
                        "first_offset": b["firstOffset"],
                        "last_offset": b["lastOffset"],
                        "delivery_state": b["deliveryState"],
                        "delivery_count": b["deliveryCount"],
                    }
                    for b in value["stateBatches"]
                ],
            }
        by_partition.setdefault(line["key"]["partition"], []).append(
            _record_content(line["key_type"], converted)
        )
    return by_partition


def _live_state_records(
    cluster: Cluster, topic_id: uuid.UUID
) -> dict[int, list[dict[str, Any] | None]]:
    by_partition: dict[int, list[dict[str, Any] | None]] = {}
    for _, _, key, value in sorted(_read_state_topic(cluster), key=lambda r: (r[0], r[1])):
        record = decode_record(key, value)
        if record.key.group_id != GROUP:
            continue
        assert record.key.topic_id == topic_id
        fields: dict[str, Any] | None = None
        if record.value is not None:
            fields = {
                "snapshot_epoch": record.value.snapshot_epoch,
                "state_epoch": (
                    record.value.state_epoch
                    if isinstance(record.value, ShareSnapshotValue)
                    else None
                ),
                "leader_epoch": record.value.leader_epoch,
                "start_offset": record.value.start_offset,
                "delivery_complete_count": record.value.delivery_complete_count,
                "state_batches": [
                    {
                        "first_offset": b.first_offset,
                        "last_offset": b.last_offset,
                        "delivery_state": b.delivery_state,
                        "delivery_count": b.delivery_count,
                    }
                    for b in record.value.state_batches
                ],
            }
        by_partition.setdefault(record.key.partition, []).append(
            _record_content(int(record.key.kind), fields)
        )
    return by_partition


# --------------------------------------------------------------------------- the scenario


def test_golden_scenario_a(cluster: Cluster) -> None:
    skip_on_real_cluster(
        "the replay needs a fresh sandbox: the recorded requests name golden-a, golden-g "
        "and golden-h, and their responses and the state-topic records are compared with "
        "the recording, which a shared broker that already holds those names cannot give"
    )
    assert GOLDEN.is_dir(), f"golden corpus missing at {GOLDEN}"
    recorded_topic_id = _recorded_topic_id()
    member_lines, closed_lines = _admin_lines()

    # 1-2. Setup and produce, as the recording's Python clients did.
    topic_id = _setup(cluster)
    _produce(cluster)

    # 3. Consume with the recorded actions.
    consumer, deliveries = _consume(cluster)
    replay = AdminReplay(cluster, recorded_topic_id, topic_id)
    try:
        delivered = Counter(
            (d["partition"], d["offset"], d["delivery_count"], d["action"]) for d in deliveries
        )
        expected = Counter(
            (d["partition"], d["offset"], d["delivery_count"], d["action"])
            for d in _recorded_deliveries()
        )
        assert delivered == expected, (
            f"missing {expected - delivered}, unexpected {delivered - expected}"
        )
        assert [d["record"] for d in deliveries] == [d["produced"] for d in deliveries]
        final = json.loads((GOLDEN / "scenario-a-final-states.json").read_text())
        assert _final_states(deliveries) == final

        # 4. The tools while the consumer is a member. The tool never sent its refused
        # dry run; the broker itself refuses an alter of a group with members too.
        (first_alter,) = [
            line for line in closed_lines if line.api_key == ALTER_SHARE_GROUP_OFFSETS
        ][:1]
        refused = plain(replay.send(first_alter))
        assert (refused["error_code"], refused["responses"]) == (ErrorCode.non_empty_group, [])
        for line in member_lines:
            replay.replay(line)
    finally:
        consumer.close()

    # 5-6. After close: the group empties, then resets, delete-offsets, delete, configs.
    describe = next(line for line in closed_lines if line.api_key == SHARE_GROUP_DESCRIBE)
    wait_for(lambda: _group_state(replay, describe) == "Empty", 15, what="golden-g to be Empty")
    for line in closed_lines:
        replay.replay(line)
    replay.close()
    assert not replay.mismatches, "\n".join(replay.mismatches)
    _assert_key_facts(replay.answers)

    # 7. __share_group_state read back with a plain Consumer.
    live = _live_state_records(cluster, topic_id)
    recorded = _recorded_state_records()
    assert sorted(live) == sorted(recorded) == [0, 1]
    for partition, records in recorded.items():
        # One JSON line per record, so that a difference shows as the records that differ.
        assert [json.dumps(r, sort_keys=True) for r in live[partition]] == [
            json.dumps(r, sort_keys=True) for r in records
        ], f"golden-g:{TOPIC}:{partition} in {STATE_TOPIC}"
