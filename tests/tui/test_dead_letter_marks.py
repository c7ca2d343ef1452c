"""The groups screen marks a group whose dead-letter queue grew in the last minute (Kafka 4.4).

Live, on the sandbox's 4.4 profile with ``share.version`` 2: a share consumer rejects
every record of group ``rejecting`` while the dashboard watches, the broker writes them
to ``dlq.rejecting``, and within two refreshes the group's row reads
``rejecting DLQ+10``; a minute later by the dashboard's clock (a fake one: the readings'
times, not a minute's sleep) the mark is gone. ``old-dead-letters`` had its records
dead-lettered before the dashboard opened, and is never marked; ``plain`` (no DLQ) is
never marked either; ``missing-dlq`` names a DLQ topic that does not exist, which marks
nothing and is said under the table. On Kafka 4.2, and on 4.4 at ``share.version`` 1,
nothing is marked and no DLQ is read, even while the topic a group's config names grows.

What cannot be read marks nothing and is named, the refresh going on: a DLQ topic the
principal may not DESCRIBE (the sandbox's deny list), a DLQ partition whose leader is
stopped (a fault test on three nodes). And the cost: thirty groups' DLQs are read with
one DescribeConfigs and one ListOffsets a refresh, counted where the broker receives them.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.kafka.api_keys import DESCRIBE_CONFIGS, LIST_OFFSETS
from kshare_cli.kafka.group_configs import GROUP_RESOURCE
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.sandbox.security import ListenerSecurity
from kshare_cli.sandbox.server import Connection
from kshare_cli.tui.app import DashboardApp, HelpScreen
from kshare_cli.tui.groups_screen import GroupsScreen
from kshare_cli.tui.source import LiveSource
from kshare_cli.wire.client import KafkaClient
from tests.support.sandbox import StartCluster, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import alter_share_group_offsets
from tests.support.waiting import wait_for
from tests.tui.scenario import FakeClock
from tests.tui.test_dashboard import SIZE, cells, loaded, run, status_of, text_of, until
from tests.tui.test_dashboard_faults import NEVER_FENCED_MS, every_node, live_leaders, produce_to
from tests.wire.conftest import Handler, replaced_handler

SOURCE = "marks-src"
RECORDS = 10
REJECTING = "rejecting"
OLD = "old-dead-letters"
PLAIN = "plain"
MISSING = "missing-dlq"
DLQ_TOPICS = {REJECTING: "dlq.rejecting", OLD: "dlq.old-dead-letters"}
DLQ_TOPIC_ENABLE = "errors.deadletterqueue.group.enable"
#: The node stopped in the fault test (not the first bootstrap server).
VICTIM = 2
#: Joining takes a heartbeat interval for librdkafka: a short one keeps the test short.
FAST_HEARTBEATS = BrokerGroupSettings(
    share_heartbeat_interval_ms=100, share_min_heartbeat_interval_ms=100
)


def _set_group_configs(admin: AdminClient, configs: dict[str, dict[str, str]]) -> None:
    resources = []
    for group, values in configs.items():
        entries = []
        for name, value in values.items():
            entry = ConfigEntry(name, value)
            entry.incremental_operation = AlterConfigOpType.SET
            entries.append(entry)
        resources.append(ConfigResource(ResourceType.GROUP, group, incremental_configs=entries))
    for future in admin.incremental_alter_configs(resources).values():
        future.result(15)


def _prepare(
    bootstrap: str,
    groups: list[str],
    dlq_topics: dict[str, str],
    create: dict[str, bool],
    *,
    client: Mapping[str, str] | None = None,
    command_config: Path | None = None,
) -> None:
    """The source topic with RECORDS records, the topics ``create`` names (True: as DLQ
    topics, ``errors.deadletterqueue.group.enable``), and each group reading from the
    earliest record, with its DLQ topic where ``dlq_topics`` names one. ``client`` and
    ``command_config``: how to connect (SASL), as librdkafka's and as kshare's."""
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap, **(client or {})}
    admin = AdminClient(config)
    topics = [NewTopic(SOURCE, 2, 1)] + [
        NewTopic(topic, 2, 1, config={DLQ_TOPIC_ENABLE: "true"} if dlq else {})
        for topic, dlq in create.items()
    ]
    for future in admin.create_topics(topics).values():
        future.result(15)
    configs = {group: {"share.auto.offset.reset": "earliest"} for group in groups}
    for group, topic in dlq_topics.items():
        configs[group]["errors.deadletterqueue.topic.name"] = topic
    _set_group_configs(admin, configs)
    asyncio.run(_make_groups(bootstrap, groups, command_config))
    producer = Producer({**config, "acks": "all"})
    for index in range(RECORDS):
        producer.produce(SOURCE, value=f"r{index}".encode(), partition=index % 2)
    assert producer.flush(15) == 0


async def _make_groups(bootstrap: str, groups: list[str], command_config: Path | None) -> None:
    """The groups exist (with start offset 0) before any consumer joins them."""
    settings = resolve_settings(
        bootstrap=bootstrap, command_config=command_config, profile=None, environ={}
    )
    async with await KafkaClient.connect(settings, timeout_s=15) as client:
        for group in groups:
            await alter_share_group_offsets(client, group, {SOURCE: [0, 1]})


def _reject_all(bootstrap: str, group: str, stop: threading.Event, rejected: list[int]) -> None:
    """A share consumer of ``group`` that rejects every record it gets, until stopped."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([SOURCE])
    try:
        while not stop.is_set():
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                consumer.acknowledge(message, AcknowledgeType.REJECT)
                rejected.append(1)
            consumer.commit_sync()
    finally:
        consumer.close()


def _records_in(bootstrap: str, topic: str) -> int:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "marks-watermarks"})
    try:
        return sum(
            reader.get_watermark_offsets(TopicPartition(topic, partition), 10)[1]
            for partition in (0, 1)
        )
    finally:
        reader.close()


@contextmanager
def _rejecting(bootstrap: str, group: str) -> Iterator[Callable[[], int]]:
    """While inside, a share consumer rejects ``group``'s records; yields their count."""
    stop = threading.Event()
    rejected: list[int] = []
    thread = threading.Thread(
        target=_reject_all, args=(bootstrap, group, stop, rejected), daemon=True
    )
    thread.start()
    try:
        yield lambda: len(rejected)
    finally:
        stop.set()
        thread.join(20)


def _dead_lettered(bootstrap: str, topic: str) -> None:
    """Wait until the broker wrote all RECORDS dead letters to ``topic``."""
    wait_for(
        lambda: _records_in(bootstrap, topic) >= RECORDS,
        timeout=30,
        what=f"{RECORDS} dead letters in {topic}",
        seen=lambda: _records_in(bootstrap, topic),
    )


@pytest.fixture(scope="module")
def sandbox_44() -> Iterator[SandboxThread]:
    """Kafka 4.4 at share.version 2: OLD's records already dead-lettered, REJECTING not yet."""
    skip_on_real_cluster("it starts a sandbox on the Kafka 4.4 profile at share.version 2")
    with SandboxThread(kafka_version="4.4", settings=FAST_HEARTBEATS) as sandbox:
        bootstrap = sandbox.bootstrap
        dlq_topics = {**DLQ_TOPICS, MISSING: "dlq.missing"}
        create = dict.fromkeys(DLQ_TOPICS.values(), True)
        _prepare(bootstrap, [REJECTING, OLD, PLAIN, MISSING], dlq_topics, create)
        with _rejecting(bootstrap, OLD):
            _dead_lettered(bootstrap, DLQ_TOPICS[OLD])
        with _rejecting(bootstrap, PLAIN) as rejected:
            # No DLQ: the broker archives plain's rejected records.
            wait_for(lambda: rejected() >= RECORDS, timeout=30, what="plain's rejects")
        yield sandbox


def _app(bootstrap: str, clock: FakeClock, command_config: Path | None = None) -> DashboardApp:
    settings = resolve_settings(
        bootstrap=bootstrap, command_config=command_config, profile=None, environ={}
    )
    return DashboardApp(LiveSource(settings, timeout_s=15), refresh_s=1.0, clock=clock)


async def _refresh(pilot: Pilot[Any], screen: GroupsScreen, clock: FakeClock, by: float) -> None:
    """Move the dashboard's clock on by ``by`` seconds and wait for that refresh's DLQ reading."""
    clock.now += by
    await until(
        pilot, lambda: screen.dead_letters_read_at == clock.now, what=f"the reading at {clock.now}"
    )


def _names(screen: GroupsScreen) -> dict[str, str]:
    table: DataTable[Any] = screen.query_one("#groups", DataTable)
    return {key: cells(table, key)[0] for key in (REJECTING, OLD, PLAIN, MISSING)}


@run
async def test_a_group_whose_dlq_grew_in_the_last_minute_is_marked(
    sandbox_44: SandboxThread,
) -> None:
    clock = FakeClock()
    app = _app(sandbox_44.bootstrap, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        await until(pilot, lambda: loaded(screen), what="the groups")
        await until(pilot, lambda: screen.dead_letters_read_at is not None, what="a DLQ reading")
        await _refresh(pilot, screen, clock, 2)
        # OLD's dead letters were written before the dashboard opened: nothing new.
        assert _names(screen) == {key: key for key in (REJECTING, OLD, PLAIN, MISSING)}
        failures = text_of(screen, "#failures")
        assert failures == ("DLQ not read: dlq.missing (of missing-dlq): the topic does not exist")

        with _rejecting(sandbox_44.bootstrap, REJECTING):
            await asyncio.to_thread(_dead_lettered, sandbox_44.bootstrap, DLQ_TOPICS[REJECTING])
        # Within two refreshes (the first may have read only part of them).
        await _refresh(pilot, screen, clock, 2)
        if _names(screen)[REJECTING] != f"{REJECTING} DLQ+{RECORDS}":
            await _refresh(pilot, screen, clock, 2)
        names = _names(screen)
        assert names[REJECTING] == f"{REJECTING} DLQ+{RECORDS}"
        assert names[OLD] == OLD
        assert names[PLAIN] == PLAIN
        assert names[MISSING] == MISSING
        assert "Share groups (4), 1 with new dead letters" == text_of(screen, "#title")

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "DLQ+12          the group's dead-letter queue topic got 12 records" in str(
            app.screen.query_one("#help", Static).render()
        )
        await pilot.press("escape")

        # Still marked 50 s on; gone once the growth is more than a minute old.
        await _refresh(pilot, screen, clock, 50)
        assert _names(screen)[REJECTING] == f"{REJECTING} DLQ+{RECORDS}"
        await _refresh(pilot, screen, clock, 11)
        assert _names(screen) == {key: key for key in (REJECTING, OLD, PLAIN, MISSING)}
        assert text_of(screen, "#title") == "Share groups (4)"


@pytest.mark.parametrize(
    ("kafka_version", "share_version"), [("4.2", None), ("4.4", 1)], ids=["4.2", "4.4-sv1"]
)
@run
async def test_no_mark_where_the_cluster_writes_no_dead_letters(
    kafka_version: str, share_version: int | None
) -> None:
    skip_on_real_cluster(f"it starts a sandbox on the Kafka {kafka_version} profile")
    profile: dict[str, Any] = {"kafka_version": kafka_version, "settings": FAST_HEARTBEATS}
    if share_version is not None:
        profile["share_version"] = share_version
    with SandboxThread(**profile) as sandbox:
        # 4.2 has no DLQ config to set; 4.4 at share.version 1 keeps it and ignores it.
        dlq_topics = {} if kafka_version == "4.2" else {REJECTING: DLQ_TOPICS[REJECTING]}
        dlq_topic = DLQ_TOPICS[REJECTING]
        await asyncio.to_thread(
            _prepare,
            sandbox.bootstrap,
            [REJECTING],
            dlq_topics,
            {dlq_topic: kafka_version != "4.2"},
        )
        clock = FakeClock()
        app = _app(sandbox.bootstrap, clock)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, GroupsScreen)
            await until(pilot, lambda: loaded(screen), what="the groups")
            table: DataTable[Any] = screen.query_one("#groups", DataTable)
            with _rejecting(sandbox.bootstrap, REJECTING) as rejected:
                await until(pilot, lambda: rejected() >= RECORDS, what="the rejects")
            # The topic the config names grows (the broker writes nothing there).
            producer = Producer({"bootstrap.servers": sandbox.bootstrap})
            for _ in range(RECORDS):
                producer.produce(dlq_topic, value=b"x")
            assert producer.flush(15) == 0
            for _ in range(3):
                await _next_refresh(pilot, screen, clock)
            assert cells(table, REJECTING)[0] == REJECTING
            assert text_of(screen, "#title") == "Share groups (1)"
            assert text_of(screen, "#failures") == ""
            assert screen.dead_letters_read_at is None
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            assert "DLQ+" not in str(app.screen.query_one("#help", Static).render())


async def _next_refresh(pilot: Pilot[Any], screen: GroupsScreen, clock: FakeClock) -> None:
    """Move the clock on by a refresh interval and wait for that refresh to be shown."""
    clock.now += 2
    await until(pilot, lambda: screen.freshness.received_at == clock.now, what="a refresh")
    await pilot.pause(0.2)  # time for a DLQ reading, were one started


USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def _sasl(user: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def _properties(path: Path, user: str) -> Path:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{USERS[user]}";'
    )
    path.write_text(
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n"
    )
    return path


@run
async def test_a_dlq_the_principal_may_not_describe_marks_nothing_and_is_named(
    tmp_path: Path,
) -> None:
    """bob may not DESCRIBE ``dlq.secret``: its group is not marked, the line under the
    table names the topic and Kafka's error, and ``open``'s DLQ, read in the same
    reading, is marked. The dead letters are produced as the broker writes them."""
    skip_on_real_cluster("needs a principal the cluster's ACLs refuse; the sandbox's deny list")
    security = ListenerSecurity(protocol="SASL_PLAINTEXT", users=USERS, mechanisms=("PLAIN",))
    deny = {"User:bob": [("TOPIC", "dlq.secret", "DESCRIBE")]}
    with SandboxThread(kafka_version="4.4", security=security, deny=deny) as sandbox:
        alice = _properties(tmp_path / "alice.properties", "alice")
        bob = _properties(tmp_path / "bob.properties", "bob")
        topics = {"secret": "dlq.secret", "open": "dlq.open"}
        await asyncio.to_thread(
            _prepare,
            sandbox.bootstrap,
            sorted(topics),
            topics,
            dict.fromkeys(topics.values(), True),
            client=_sasl("alice"),
            command_config=alice,
        )
        clock = FakeClock()
        app = _app(sandbox.bootstrap, clock, command_config=bob)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, GroupsScreen)
            await until(pilot, lambda: loaded(screen), what="the groups")
            await until(pilot, lambda: screen.dead_letters_read_at is not None, what="a reading")
            producer = Producer({"bootstrap.servers": sandbox.bootstrap, **_sasl("alice")})
            for topic in topics.values():
                for index in range(5):
                    producer.produce(
                        topic,
                        value=None,
                        partition=index % 2,
                        headers=[("__dlq.errors.group", b"g")],
                    )
            assert producer.flush(15) == 0
            await _refresh(pilot, screen, clock, 2)
            table: DataTable[Any] = screen.query_one("#groups", DataTable)
            assert cells(table, "open")[0] == "open DLQ+5"
            assert cells(table, "secret")[0] == "secret"
            assert text_of(screen, "#failures") == (
                "DLQ not read: dlq.secret (of secret): TOPIC_AUTHORIZATION_FAILED"
            )
            assert "failed" not in str(status_of(screen).render())


@pytest.mark.faults
def test_a_dlq_partition_whose_leader_is_down_is_named_and_the_rest_still_counts(
    sandbox_cluster: StartCluster,
) -> None:
    """Node 2, leader of one of ``dlq.down``'s partitions, stops: the readings go on over
    the others (their growth marks the group), the line under the table names the
    partition and the broker, and the refreshes keep answering."""
    sandbox = sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS, kafka_version="4.4")
    bootstrap = every_node(sandbox)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    dlq = NewTopic("dlq.down", 3, 1, config={DLQ_TOPIC_ENABLE: "true"})
    for future in admin.create_topics([dlq]).values():
        future.result(15)
    _prepare(bootstrap, ["down"], {"down": "dlq.down"}, {})
    alive = live_leaders(sandbox, "dlq.down", VICTIM)
    (stopped,) = sorted(set(range(3)) - set(alive))

    @run
    async def body() -> None:
        clock = FakeClock()
        app = _app(bootstrap, clock)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, GroupsScreen)
            await until(pilot, lambda: loaded(screen), what="the groups")
            await until(pilot, lambda: screen.dead_letters_read_at is not None, what="a reading")
            await asyncio.to_thread(sandbox.stop_node, VICTIM)
            await asyncio.to_thread(produce_to, sandbox, "dlq.down", alive, 5)
            await _refresh(pilot, screen, clock, 2)
            table: DataTable[Any] = screen.query_one("#groups", DataTable)
            # The group may be stale as well (node 2 may be its coordinator): both marks.
            name = cells(table, "down")[0]
            assert name.startswith("down ") and name.endswith(f" DLQ+{5 * len(alive)}"), name
            failures = text_of(screen, "#failures").splitlines()
            said = [line for line in failures if line.startswith("DLQ not read: dlq.down")]
            assert len(said) == 1, failures
            assert said[0].startswith(f"DLQ not read: dlq.down (of down): partition {stopped}: ")
            assert f"broker {VICTIM}" in said[0], said
            assert screen.freshness.received_at == clock.now

    body()


#: Groups each with a DLQ topic of its own, for the cost of a reading.
MANY = [f"many-{index:02d}" for index in range(30)]


@contextmanager
def _counting(sandbox: SandboxThread, sent: Counter[str]) -> Iterator[None]:
    """Count the requests the broker gets that read DLQs: a ListOffsets naming a ``dlq.``
    topic, a DescribeConfigs naming a group (answered as ever)."""

    def counting(name: str, reads_dlq: Callable[[Any], bool]) -> Callable[[Handler], Handler]:
        def make(original: Handler) -> Handler:
            async def counted(broker: Broker, request: Request, connection: Connection) -> Any:
                if reads_dlq(request.payload):
                    sent[name] += 1
                return await original(broker, request, connection)

            return counted

        return make

    offsets = counting(
        "ListOffsets", lambda body: any(t.name.startswith("dlq.") for t in body.topics)
    )
    configs = counting(
        "DescribeConfigs",
        lambda body: any(r.resource_type == GROUP_RESOURCE for r in body.resources),
    )
    with replaced_handler(sandbox, LIST_OFFSETS, offsets):
        with replaced_handler(sandbox, DESCRIBE_CONFIGS, configs):
            yield


@run
async def test_a_reading_of_every_groups_dlq_is_one_describe_configs_and_one_list_offsets() -> None:
    """Thirty groups, thirty DLQ topics, one broker: each refresh's reading is one
    DescribeConfigs and one ListOffsets (one per partition leader), not one per group,
    and it marks each of the groups whose DLQ grew with its own count."""
    skip_on_real_cluster("it counts the requests the sandbox's broker receives")
    with SandboxThread(kafka_version="4.4") as sandbox:
        topics = {group: f"dlq.{group}" for group in MANY}
        await asyncio.to_thread(
            _prepare, sandbox.bootstrap, MANY, topics, dict.fromkeys(topics.values(), True)
        )
        sent: Counter[str] = Counter()
        clock = FakeClock()
        app = _app(sandbox.bootstrap, clock)
        with _counting(sandbox, sent):
            async with app.run_test(size=SIZE) as pilot:
                screen = app.screen
                assert isinstance(screen, GroupsScreen)
                await until(pilot, lambda: loaded(screen), what="the groups")
                await until(pilot, lambda: screen.dead_letters_read_at is not None, what="one")
                producer = Producer({"bootstrap.servers": sandbox.bootstrap})
                for count, group in enumerate(MANY[:3], start=1):
                    for _ in range(count):
                        producer.produce(topics[group], value=None, partition=0)
                assert producer.flush(15) == 0
                sent.clear()
                for _ in range(3):
                    await _refresh(pilot, screen, clock, 2)
                assert sent == {"ListOffsets": 3, "DescribeConfigs": 3}
                table: DataTable[Any] = screen.query_one("#groups", DataTable)
                names = [cells(table, group)[0] for group in MANY]
                assert names[:4] == ["many-00 DLQ+1", "many-01 DLQ+2", "many-02 DLQ+3", "many-03"]
                assert names[3:] == MANY[3:]
