"""StateTailer against a broker: what a share consumer did shows up in the replayed windows.

A share consumer accepts, releases and rejects records; the tailer, reading
`__share_group_state` with a plain consumer, must then show exactly those
states and delivery counts. Kafka persists the start offset lazily (the
sandbox and a 4.2.0 broker keep it behind the work done), so every check is
made from the window's own start offset on, and the records below it must all
be finished.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    AcknowledgeType,
    Consumer,
    KafkaError,
    Producer,
    ShareConsumer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kshare_cli.state.partitioning import SHARE_STATE_TOPIC, state_partition_for
from kshare_cli.state.records import (
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    StateRecord,
    StateRecordKind,
    decode_record,
    encode_record,
)
from kshare_cli.state.replay import SharePartitionKey, ShareStateReplayer
from kshare_cli.state.tailer import StateTailer, StateTopicUnavailable
from kshare_cli.state.window import InFlightWindow, WindowState
from tests.support.golden import kafka_uuid
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import PROMPTLY_S

RECORDS = 10
REJECTED = frozenset({2, 3})
RELEASED = 5
DEADLINE_S = 40.0
K, X, A = WindowState.ACKNOWLEDGED, WindowState.ARCHIVED, WindowState.AVAILABLE

Expected = dict[int, tuple[WindowState, int]]

FIRST_ROUND: Expected = {
    offset: ((X if offset in REJECTED else A if offset == RELEASED else K), 1)
    for offset in range(RECORDS)
}
SECOND_ROUND: Expected = {**FIRST_ROUND, RELEASED: (X, 2)}


@dataclass
class Scenario:
    """One share group over one topic, consumed in two rounds by a share consumer kept open."""

    cluster: Cluster
    topic: str
    group: str
    key: SharePartitionKey
    consumer: ShareConsumer
    tailer: StateTailer
    first_round: InFlightWindow
    applied_after_first_round: int


def _admin(cluster: Cluster) -> AdminClient:
    return AdminClient(cluster.config())


def _create_topic(cluster: Cluster, topic: str) -> uuid.UUID:
    admin = _admin(cluster)
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    description = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    return kafka_uuid(str(description.topic_id))


def _start_at_earliest(cluster: Cluster, group: str) -> None:
    entry = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    admin = _admin(cluster)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _produce(cluster: Cluster, topic: str, values: list[tuple[bytes | None, bytes | None]]) -> None:
    producer = Producer(cluster.config(**{"linger.ms": 50, "acks": "all"}))
    for key, value in values:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def _consume_until(
    consumer: ShareConsumer, done: Callable[[int, int], AcknowledgeType | None], wanted: int
) -> None:
    """Poll and acknowledge with done(offset, delivery_count) until `wanted` records were seen."""
    seen = 0
    deadline = time.monotonic() + DEADLINE_S
    while seen < wanted:
        assert time.monotonic() < deadline, f"only {seen} of {wanted} deliveries arrived"
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            offset, count = message.offset(), message.delivery_count()
            assert offset is not None and count is not None
            action = done(offset, count)
            if action is None:
                continue
            consumer.acknowledge(message, action)
            seen += 1
    consumer.commit_sync()  # the acknowledgements are on the broker, and so persisted


def _wait_for_window(
    tailer: StateTailer, key: SharePartitionKey, condition: Callable[[InFlightWindow], bool]
) -> InFlightWindow:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        window = tailer.window(key)
        if window is not None and condition(window):
            return window
        assert time.monotonic() < deadline, f"the window never got there: {window}"
        tailer.poll(0.5)


def _matches(window: InFlightWindow, expected: Expected) -> bool:
    """From its start offset on the window is exactly `expected`; everything below is done."""
    start = window.start_offset
    if not 0 <= start <= RECORDS or window.end_offset != RECORDS:
        return False
    if any(expected[offset][0] not in (K, X) for offset in range(start)):
        return False
    shown = {
        offset: (run.state, run.delivery_count)
        for run in window.runs
        for offset in range(run.first_offset, run.last_offset + 1)
    }
    return shown == {offset: expected[offset] for offset in range(start, RECORDS)}


def _counts(window: InFlightWindow, expected: Expected) -> dict[WindowState, int]:
    counts = dict.fromkeys(WindowState, 0)
    for offset in range(window.start_offset, window.end_offset):
        counts[expected[offset][0]] += 1
    return counts


@pytest.fixture(scope="module")
def scenario(cluster: Cluster) -> Iterator[Scenario]:
    suffix = uuid.uuid4().hex[:10]
    topic, group = f"tailer-{suffix}", f"tailer-g-{suffix}"
    topic_id = _create_topic(cluster, topic)
    _start_at_earliest(cluster, group)
    _produce(cluster, topic, [(None, b"v%d" % offset) for offset in range(RECORDS)])
    consumer = ShareConsumer(
        cluster.config(**{"group.id": group, "share.acknowledgement.mode": "explicit"})
    )
    consumer.subscribe([topic])

    def first_round(offset: int, count: int) -> AcknowledgeType:
        assert count == 1
        if offset in REJECTED:
            return AcknowledgeType.REJECT
        return AcknowledgeType.RELEASE if offset == RELEASED else AcknowledgeType.ACCEPT

    key = SharePartitionKey(group, topic_id, 0)
    tailer = StateTailer(cluster.config(), group_ids={group})
    try:
        _consume_until(consumer, first_round, RECORDS)
        tailer.catch_up(30)
        window = _wait_for_window(tailer, key, lambda window: _matches(window, FIRST_ROUND))
        yield Scenario(cluster, topic, group, key, consumer, tailer, window, tailer.records_applied)
    finally:
        tailer.close()
        consumer.close()


# --------------------------------------------------------------------------- windows


def test_window_shows_what_the_share_consumer_did(scenario: Scenario) -> None:
    window = scenario.first_round

    # Offset 5 was released: it stays in the window, Available after one delivery.
    assert window.start_offset <= RELEASED
    (run,) = [run for run in window.runs if run.first_offset <= RELEASED <= run.last_offset]
    assert (run.state, run.delivery_count) == (A, 1)
    counts = _counts(window, FIRST_ROUND)
    assert window.available == counts[A] == 1
    assert window.acknowledged == counts[K]
    assert window.archived == counts[X]
    assert window.unrecorded == 0
    assert window.max_delivery_count == 1
    assert window.delivery_complete_count == window.acknowledged + window.archived
    assert window.queued(RECORDS) == RECORDS - window.end_offset
    if scenario.cluster.sandbox is not None:
        # The sandbox, like Kafka 4.2.0, persisted the start offset before the acks moved it.
        assert window.start_offset == 0
        assert (window.acknowledged, window.archived) == (7, 2)


def test_poll_picks_up_the_next_acknowledgements(scenario: Scenario) -> None:
    def second_round(offset: int, count: int) -> AcknowledgeType | None:
        return AcknowledgeType.REJECT if (offset, count) == (RELEASED, 2) else None

    _consume_until(scenario.consumer, second_round, 1)

    window = _wait_for_window(
        scenario.tailer, scenario.key, lambda window: window != scenario.first_round
    )
    window = _wait_for_window(
        scenario.tailer, scenario.key, lambda window: _matches(window, SECOND_ROUND)
    )

    assert scenario.tailer.records_applied > scenario.applied_after_first_round
    assert scenario.tailer.corrupt_records == 0
    assert window.available == 0
    if window.start_offset <= RELEASED:
        assert window.max_delivery_count == 2
        assert window.most_delivered(1)[0].first_offset == RELEASED
        assert window.delivery_histogram() == {1: window.acknowledged + window.archived - 1, 2: 1}
    assert window.delivery_complete_count == window.acknowledged + window.archived


def test_a_group_filter_keeps_other_groups_out(scenario: Scenario) -> None:
    assert {key.group_id for key in scenario.tailer.states()} == {scenario.group}

    with StateTailer(scenario.cluster.config(), group_ids={f"not-{scenario.group}"}) as other:
        other.catch_up(30)

        assert scenario.key not in other.states()
        assert other.window(scenario.key) is None
        assert all(key.group_id == f"not-{scenario.group}" for key in other.states())

    with StateTailer(scenario.cluster.config()) as everything:
        everything.catch_up(30)

        assert everything.window(scenario.key) is not None
        assert everything.records_applied >= scenario.applied_after_first_round


def test_sandbox_written_state_records_decode_and_reencode_byte_for_byte(
    scenario: Scenario,
) -> None:
    records = _raw_state_records(scenario.cluster, scenario.key)

    decoded = [decode_record(key, value) for key, value in records]

    assert [encode_record(record) for record in decoded] == records
    assert decoded[0].key == ShareStateKey(
        StateRecordKind.SNAPSHOT, scenario.group, scenario.key.topic_id, 0
    )
    assert isinstance(decoded[0].value, ShareSnapshotValue)
    assert decoded[0].value.state_batches == ()  # InitializeShareGroupState
    updates = [record.value for record in decoded if isinstance(record.value, ShareUpdateValue)]
    assert updates, "acknowledgements are persisted as ShareUpdate records"
    persisted = {
        (batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        for value in updates
        for batch in value.state_batches
    }
    assert any(first <= RELEASED <= last and state == 0 for first, last, state, _ in persisted)
    replayer = ShareStateReplayer()
    replayer.apply_all(decoded)
    assert replayer.state(scenario.key) == scenario.tailer.states()[scenario.key]


def _raw_state_records(cluster: Cluster, key: SharePartitionKey) -> list[tuple[bytes, bytes]]:
    """The share-partition's records, as bytes, from the state partition Kafka places it on."""
    reader = Consumer(
        cluster.config(**{"group.id": f"raw-{uuid.uuid4().hex}", "enable.auto.commit": False})
    )
    try:
        metadata = reader.list_topics(SHARE_STATE_TOPIC, timeout=30)
        partitions = len(metadata.topics[SHARE_STATE_TOPIC].partitions)
        partition = state_partition_for(key, partitions)
        _, end = reader.get_watermark_offsets(TopicPartition(SHARE_STATE_TOPIC, partition), 30)
        reader.assign([TopicPartition(SHARE_STATE_TOPIC, partition, OFFSET_BEGINNING)])
        records: list[tuple[bytes, bytes]] = []
        position = 0
        deadline = time.monotonic() + DEADLINE_S
        while position < end:
            assert time.monotonic() < deadline, f"stuck at {position} of {end}"
            message = reader.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            offset = message.offset()
            assert offset is not None
            position = offset + 1
            raw_key, raw_value = message.key(), message.value()
            assert isinstance(raw_key, bytes)
            record = decode_record(raw_key, raw_value)
            if SharePartitionKey.of(record.key) == key:
                assert isinstance(raw_value, bytes), "no tombstone while the group lives"
                records.append((raw_key, raw_value))
        assert records, f"nothing for {key} in {SHARE_STATE_TOPIC}-{partition}"
        return records
    finally:
        reader.close()


# --------------------------------------------------------------------------- decoding


def test_records_that_do_not_decode_are_counted_and_skipped(cluster: Cluster, unique: str) -> None:
    # Any topic will do as the tailer's source; this one holds good records and bad ones.
    topic = f"fake-state-{unique}"
    _create_topic(cluster, topic)
    key = SharePartitionKey("g", uuid.UUID(int=7), 0)
    snapshot = StateRecord(
        key.record_key(StateRecordKind.SNAPSHOT),
        ShareSnapshotValue(0, 1, 0, 3, 1, 10, 20, (StateBatch(4, 4, 2, 1),)),
    )
    good_key, good_value = encode_record(snapshot)
    _produce(
        cluster,
        topic,
        [
            (b"\x00\x09junk", b"junk"),  # unknown record type
            (None, good_value),  # no key at all
            (good_key, good_value[:5]),  # truncated value
            (good_key, good_value),
        ],
    )

    with StateTailer(cluster.config(), topic=topic) as tailer:
        applied = tailer.catch_up(30)

        assert (applied, tailer.records_applied, tailer.corrupt_records) == (1, 1, 3)
        window = tailer.window(key)
        assert window is not None
        assert (window.start_offset, window.acknowledged, window.unrecorded) == (3, 1, 1)
        assert window.write_timestamp == 20


def test_poll_returns_promptly_while_state_records_keep_arriving(
    cluster: Cluster, unique: str
) -> None:
    """A busy cluster's state topic is never quiet: poll takes what is there and returns."""
    import threading

    from confluent_kafka import Producer

    topic = f"busy-state-{unique}"
    _create_topic(cluster, topic)
    key = SharePartitionKey("g", uuid.UUID(int=9), 0)
    stop = threading.Event()

    def write_updates() -> None:
        producer = Producer(cluster.config(**{"linger.ms": 1}))
        offset = 0
        while not stop.is_set():
            update = StateRecord(
                key.record_key(StateRecordKind.UPDATE),
                ShareUpdateValue(0, -1, offset, 0, (StateBatch(offset, offset, 2, 1),)),
            )
            record_key, record_value = encode_record(update)
            producer.produce(topic, record_value, record_key)
            producer.poll(0)
            offset += 1
            time.sleep(0.005)
        producer.flush(10)

    _produce(
        cluster,
        topic,
        [encode_record(StateRecord(key.record_key(StateRecordKind.SNAPSHOT),
                                   ShareSnapshotValue(0, 1, 0, 0, 0, 1, 1, ())))],
    )  # fmt: skip
    writer = threading.Thread(target=write_updates, daemon=True)
    writer.start()
    try:
        with StateTailer(cluster.config(), topic=topic) as tailer:
            tailer.catch_up(30)
            time.sleep(0.3)
            took = []
            for _ in range(3):
                started = time.monotonic()
                tailer.poll(20)
                took.append(time.monotonic() - started)
                time.sleep(0.1)
            assert max(took) < PROMPTLY_S, took  # what arrived, not the 20 s budget
            assert tailer.records_applied > 3
    finally:
        stop.set()
        writer.join(15)


# --------------------------------------------------------------------------- no state topic


def test_a_state_topic_that_does_not_exist_is_not_an_error(cluster: Cluster, unique: str) -> None:
    with StateTailer(cluster.config(), topic=f"no-such-state-{unique}") as tailer:
        assert tailer.catch_up(15) == 0
        assert tailer.poll(0.2) == 0
        assert tailer.states() == {}
        assert tailer.window(SharePartitionKey("g", uuid.UUID(int=1), 0)) is None


def test_a_cluster_where_no_share_group_was_ever_used(cluster: Cluster) -> None:
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: it has its own state topic; this needs a fresh broker")
    # A broker without share groups has no share coordinator and so no state topic at all.
    with SandboxThread(share_groups=False) as bare:
        with StateTailer({"bootstrap.servers": bare.bootstrap}) as tailer:
            assert tailer.catch_up(15) == 0
            assert tailer.poll(0.2) == 0
            assert tailer.states() == {}
    # One with share groups where none was used yet: the topic is there and empty.
    with SandboxThread() as fresh:
        with StateTailer({"bootstrap.servers": fresh.bootstrap}) as tailer:
            began = time.monotonic()
            assert tailer.catch_up(15) == 0
            assert tailer.poll(30.0) == 0
            # Nothing new: poll does not sit out its 30 s budget.
            assert time.monotonic() - began < PROMPTLY_S
            assert tailer.states() == {}


# --------------------------------------------------------------------------- failures


def test_an_unreachable_cluster_is_one_line_saying_so(capfd: pytest.CaptureFixture[str]) -> None:
    with StateTailer({"bootstrap.servers": "127.0.0.1:1"}) as tailer:
        with pytest.raises(StateTopicUnavailable) as raised:
            tailer.catch_up(10)

    reason = raised.value.reason
    assert reason.startswith("cannot reach 127.0.0.1:1 to read __share_group_state: ")
    assert "\n" not in reason
    # librdkafka's own log lines ("Connect to ... failed") stay off stderr. (Only this
    # tailer's: a client another test left to be collected may still log to the same fd.)
    assert "127.0.0.1:1/" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("api_key", "records"),
    [(3, 0), (2, 0), (1, 1)],
    ids=["metadata", "list-offsets", "fetch"],
)
def test_no_permission_on_the_state_topic_is_one_line_saying_which(
    api_key: int, records: int
) -> None:
    # librdkafka's mock answers as Kafka does for a principal without DESCRIBE (Metadata,
    # ListOffsets) or without READ (Fetch) on the topic; the sandbox has no ACLs.
    with RdkafkaMockCluster() as mock:
        mock.create_topic(SHARE_STATE_TOPIC, 3)
        if records:
            producer = Producer({"bootstrap.servers": mock.bootstrap_servers})
            producer.produce(SHARE_STATE_TOPIC, key=b"k", value=b"v", partition=1)
            assert producer.flush(10) == 0
        mock.push_request_errors(api_key, [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 50)
        with StateTailer({"bootstrap.servers": mock.bootstrap_servers}) as tailer:
            with pytest.raises(StateTopicUnavailable) as raised:
                tailer.catch_up(15)

    assert raised.value.reason == (
        "not authorized to read __share_group_state (needs DESCRIBE and READ on the topic); "
        "in-flight windows cannot be shown"
    )
