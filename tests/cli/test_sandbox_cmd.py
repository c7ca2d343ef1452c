"""``kshare sandbox`` as an operator runs it: a real process, its output, its exit codes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from typer.testing import CliRunner, Result

from kshare_cli.cli.app import app
from tests.cli.conftest import Kshare, ShareGroups, assert_one_error_line
from tests.support.raw import call
from tests.support.sandbox import Cluster
from tests.support.waiting import wait_for

KSHARE = [sys.executable, "-m", "kshare_cli"]


@contextmanager
def running_sandbox(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [*KSHARE, "sandbox", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        assert bootstrap.startswith("127.0.0.1:"), bootstrap
        yield process, bootstrap
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def _offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    response = call(
        bootstrap,
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)
        ),
    )
    return {
        (topic.topic_name, partition.partition_index): (partition.start_offset, partition.lag)
        for group_result in response.groups
        for topic in group_result.topics
        for partition in topic.partitions
    }


def _demo_members(bootstrap: str) -> int:
    response = call(
        bootstrap,
        ShareGroupDescribeRequest(group_ids=("demo-group",), include_authorized_operations=False),
    )
    group = response.groups[0]
    return len(group.members) if group.error_code == 0 else 0


def test_demo_serves_live_share_traffic_and_sigint_exits_130() -> None:
    with running_sandbox("--demo") as (process, bootstrap):
        wait_for(lambda: _demo_members(bootstrap) == 3, timeout=30, what="three demo consumers")
        wait_for(
            lambda: any(start > 0 for start, _ in _offsets(bootstrap, "demo-group").values()),
            timeout=30,
            what="the demo group's start offsets to move",
        )
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130
        assert process.stderr is not None
        stderr = process.stderr.read()
        assert "EMULATOR for tests and demos" in stderr
        assert "not Apache Kafka" in stderr
        assert "Traceback" not in stderr


def test_demo_prints_no_librdkafka_preview_notices() -> None:
    with running_sandbox("--demo") as (process, bootstrap):
        # The notice came once per demo share consumer, as each was made; all three
        # were made once they are members of the group.
        wait_for(lambda: _demo_members(bootstrap) == 3, timeout=30, what="three demo consumers")
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "preview" not in (stdout + stderr).lower(), stderr
    assert stderr.splitlines()[-1].startswith("demo: topic 'demo-orders'"), stderr


def test_restart_with_data_dir_keeps_share_partition_state(tmp_path: Path) -> None:
    topic, group = "restart-t", "restart-g"
    with running_sandbox("--data-dir", str(tmp_path)) as (process, bootstrap):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(10)
        resource = ConfigResource(
            ConfigResource.Type.GROUP,
            group,
            incremental_configs=[
                ConfigEntry(
                    "share.auto.offset.reset",
                    "earliest",
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(10)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(20):
            producer.produce(topic, value=f"v{i}".encode(), partition=0)
        assert producer.flush(10) == 0
        # Accept 0-4, release 5 once, reject 6, accept 7; leave 8.. untouched.
        consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "share.acknowledgement.mode": "explicit",
                "max.poll.records": 8,
            }
        )
        consumer.subscribe([topic])
        handled: set[int] = set()
        deadline = time.monotonic() + 30
        while len(handled) < 8 and time.monotonic() < deadline:
            for message in consumer.poll(1.0):
                offset = message.offset()
                if offset > 7 or offset in handled:
                    consumer.acknowledge(message, AcknowledgeType.RELEASE)
                    continue
                action = {5: AcknowledgeType.RELEASE, 6: AcknowledgeType.REJECT}.get(
                    offset, AcknowledgeType.ACCEPT
                )
                consumer.acknowledge(message, action)
                handled.add(offset)
            consumer.commit_sync()
        consumer.close()
        assert handled == set(range(8))
        before = _offsets(bootstrap, group)
        process.kill()
        process.wait(10)
    with running_sandbox("--data-dir", str(tmp_path)) as (process, bootstrap):
        assert _offsets(bootstrap, group) == before
        # Kafka persists the start offset as it stood before each acknowledgement, so the
        # persisted start may trail the accepted records; what matters is that it survives.
        assert before[(topic, 0)][0] in range(0, 6)
        consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "share.acknowledgement.mode": "explicit",
            }
        )
        consumer.subscribe([topic])
        delivered: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while len(delivered) < 13 and time.monotonic() < deadline:
            for message in consumer.poll(1.0):
                delivered[message.offset()] = message.delivery_count()
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        consumer.close()
        # Offsets 0-4 and 6-7 were finished before the restart and never come back;
        # the released record 5 does, on its second delivery.
        assert sorted(delivered) == [5, *range(8, 20)]
        assert delivered[5] == 2
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0


def test_port_in_use_is_one_line_and_exit_3() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [*KSHARE, "sandbox", "--port", str(port)], capture_output=True, text=True, timeout=30
        )
    assert result.returncode == 3
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"kshare: error: cannot listen on 127.0.0.1:{port}: ")
    assert "in use" in result.stderr


def test_data_dir_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    result = subprocess.run(
        [*KSHARE, "sandbox", "--port", "0", "--data-dir", str(target)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_help_names_every_value_with_a_metavar_not_a_click_type() -> None:
    result = CliRunner().invoke(app, ["sandbox", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    # Click's fallbacks (<str>, <int range>, <directory>) tell the reader nothing.
    assert re.findall(r"<[a-z][a-z ]*>", result.stdout) == []
    options = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^\s+(--[a-z-]+) ([A-Z][A-Z:,.]*)", result.stdout, re.M)
    }
    assert options["--host"] == "HOST"
    assert options["--port"] == "PORT"
    assert options["--data-dir"] == "DIR"


def _group_config(kshare: Kshare, group: str) -> dict[str, tuple[str, str]]:
    result = kshare.run("config", "get", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    return {entry["name"]: (entry["value"], entry["source"]) for entry in document["configs"]}


def test_restart_with_data_dir_keeps_group_configs(tmp_path: Path) -> None:
    data_dir, group = tmp_path / "data", "configured-g"
    profiles = tmp_path / "kshare" / "config.toml"
    with running_sandbox("--data-dir", str(data_dir)) as (process, bootstrap):
        kshare = Kshare(bootstrap, None, profiles)
        result = kshare.run(
            "config", "set", group, "share.auto.offset.reset=earliest",
            "share.record.lock.duration.ms=20000",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        result = kshare.run("config", "set", "unset-later", "share.isolation.level=read_committed")
        assert result.exit_code == 0, result.stderr
        assert kshare.run("config", "unset", "unset-later", "share.isolation.level").exit_code == 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    with running_sandbox("--data-dir", str(data_dir)) as (process, bootstrap):
        kshare = Kshare(bootstrap, None, profiles)
        configs = _group_config(kshare, group)
        assert configs["share.auto.offset.reset"][0] == "earliest"
        assert configs["share.record.lock.duration.ms"][0] == "20000"
        assert configs["share.isolation.level"][0] == "read_uncommitted"
        assert _group_config(kshare, "unset-later")["share.isolation.level"][0] == (
            "read_uncommitted"
        )
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130


def test_unreadable_group_configs_in_data_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "group-configs.json").write_text("{not json")
    result = subprocess.run(
        [*KSHARE, "sandbox", "--port", "0", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kshare: error: cannot use --data-dir {tmp_path}: {tmp_path / 'group-configs.json'} "
        "is not a kshare sandbox group-config file"
    ]


def test_kshare_never_creates_a_topic_it_is_asked_about(
    kshare: Kshare, cluster: Cluster, share_groups: ShareGroups
) -> None:
    """The sandbox auto-creates topics as Kafka does; kshare's Metadata requests must not."""
    unknown = f"kshare-never-created-{share_groups.suffix}"
    inflight = kshare.run("inflight", share_groups.drained, "-t", unknown)
    reset = kshare.run(
        "reset-offsets", f"new-{share_groups.suffix}", "-t", unknown, "--to-earliest",
        "--allow-new-group",
    )  # fmt: skip
    consume = kshare.run("consume", "-g", share_groups.drained, "-t", unknown, "--timeout", "10s")
    for result in (inflight, reset, consume):
        assert result.exit_code == 5
        assert_one_error_line(result.stderr, f"kshare: error: topic '{unknown}' does not exist")
    topics = AdminClient(cluster.config()).list_topics(timeout=30).topics
    assert unknown not in topics


def _produce(kshare: Kshare, *args: str, stdin: bytes) -> Result:
    argv = ["produce", *args, *kshare.connection_args()]
    return CliRunner().invoke(app, argv, input=stdin, env=kshare.environment())


def test_kshare_produce_may_create_a_topic_on_the_sandbox(kshare: Kshare, cluster: Cluster) -> None:
    """A first topic: kshare produce refuses a missing topic unless asked to create it."""
    if cluster.sandbox is None:
        pytest.skip("whether a real cluster creates topics is its auto.create.topics.enable")
    sandbox = cluster.sandbox
    topic = f"first-topic-{uuid.uuid4().hex[:8]}"
    refused = _produce(kshare, "-t", topic, stdin=b"x\n")
    assert refused.exit_code == 5
    assert_one_error_line(refused.stderr, f"kshare: error: topic '{topic}' does not exist")
    assert sandbox.call(lambda broker: broker.topic(topic)) is None

    created = _produce(
        kshare, "-t", topic, "--command-property", "allow.auto.create.topics=true",
        stdin=b"one\ntwo\nthree\n",
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    assert created.stderr.splitlines() == ["Produced a total of 3 messages"]
    assert sandbox.call(lambda broker: broker.partition_log(topic, 0).log_end_offset) == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        (
            "share.coordinator.state.topic.prune.interval.ms=0",
            "Invalid value 0 for configuration share.coordinator.state.topic.prune.interval.ms: "
            "Value must be at least 1",
        ),
        (
            "share.coordinator.cold.partition.snapshot.interval.ms=5m",
            "Invalid value 5m for configuration "
            "share.coordinator.cold.partition.snapshot.interval.ms: Not a number of type INT",
        ),
        (
            "share.coordinator.snapshot.update.records.per.snapshot=-1",
            "Value must be at least 0",
        ),
        ("share.coordinator.prune.interval.ms=100", "unknown broker config"),
        ("auto.create.topics.enable=yes", "Expected value to be either true or false"),
        ("num.partitions=0", "Value must be at least 1"),
        ("share.coordinator.state.topic.prune.interval.ms", "is not KEY=VALUE"),
    ],
)
def test_a_bad_config_is_one_line_and_exit_2_before_anything_starts(
    tmp_path: Path, config: str, fragment: str
) -> None:
    data_dir = tmp_path / "data"
    result = CliRunner().invoke(
        app, ["sandbox", "--port", "0", "--data-dir", str(data_dir), "--config", config]
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error: --config: ", fragment)
    assert not data_dir.exists()


def test_config_reaches_the_broker() -> None:
    """num.partitions=3: the topic a producer's Metadata request creates has three partitions."""
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    name = f"configured-{uuid.uuid4().hex[:8]}"
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name),),  # type: ignore[arg-type]
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    with running_sandbox(
        "--config", "num.partitions=3",
        "--config", "share.coordinator.state.topic.prune.interval.ms=1000",
    ) as (process, bootstrap):  # fmt: skip
        call(bootstrap, request)  # creates it
        (topic,) = call(bootstrap, request).topics
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    assert topic.error_code == 0
    assert len(topic.partitions) == 3


def _free_port_run(count: int) -> int:
    """A first port with ``count`` free consecutive ports after it (bound and released)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = int(probe.getsockname()[1])
        if first + count > 65535:
            continue
        sockets = []
        try:
            for offset in range(count):
                held = socket.socket()
                sockets.append(held)
                held.bind(("127.0.0.1", first + offset))
        except OSError:
            continue
        finally:
            for held in sockets:
                held.close()
        return first
    raise AssertionError(f"no {count} consecutive free ports")


def test_brokers_3_prints_three_addresses_and_kshare_list_asks_every_coordinator(
    tmp_path: Path,
) -> None:
    """Three nodes on consecutive ports; groups coordinated by different nodes all get listed."""
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsRequestPartition,
        AlterShareGroupOffsetsRequestTopic,
    )
    from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
    from kio.schema.metadata.v12.request import MetadataRequest

    first = _free_port_run(3)
    process = subprocess.Popen(
        [*KSHARE, "sandbox", "--brokers", "3", "--port", str(first)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        addresses = line.split(",")
        assert addresses == [f"127.0.0.1:{first + offset}" for offset in range(3)]
        metadata = call(
            addresses[0],
            MetadataRequest(
                topics=None, allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )  # fmt: skip
        assert sorted((b.node_id, b.port) for b in metadata.brokers) == [
            (node, first + node - 1) for node in (1, 2, 3)
        ]
        topic = f"listed-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": addresses[0]})
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(15)
        groups = [f"cluster-list-{index}-{uuid.uuid4().hex[:6]}" for index in range(8)]
        coordinators = set()
        for group in groups:
            (coordinator,) = call(
                addresses[0],
                FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)),  # type: ignore[arg-type]
            ).coordinators
            coordinators.add(coordinator.node_id)
            altered = call(
                f"{coordinator.host}:{coordinator.port}",
                AlterShareGroupOffsetsRequest(
                    group_id=group,  # type: ignore[arg-type]
                    topics=(
                        AlterShareGroupOffsetsRequestTopic(
                            topic_name=topic,  # type: ignore[arg-type]
                            partitions=(
                                AlterShareGroupOffsetsRequestPartition(
                                    partition_index=0,  # type: ignore[arg-type]
                                    start_offset=0,  # type: ignore[arg-type]
                                ),
                            ),
                        ),
                    ),
                ),
            )
            assert altered.error_code == 0
        assert len(coordinators) > 1
        kshare = Kshare(addresses[0], None, tmp_path / "config.toml")
        listed = kshare.subprocess("list", "-o", "plain")
        assert listed.returncode == 0, listed.stderr
        assert set(groups) <= set(listed.stdout.split())
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stderr is not None
        stderr = process.stderr.read()
        assert "cluster of 3 nodes" in stderr
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def test_demo_runs_on_three_nodes() -> None:
    with running_sandbox("--brokers", "3", "--demo") as (process, bootstrap):
        assert len(bootstrap.split(",")) == 3
        wait_for(lambda: _demo_members(bootstrap) == 3, timeout=60, what="three demo members")
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--brokers", "2", "--config", "default.replication.factor=3"], "needs at least 3"),
        (["--brokers", "0"], "--brokers"),
        (["--brokers", "3", "--port", "65534"], "leaves no room for 3 brokers"),
        (["--config", "broker.session.timeout.ms=soon"], "Not a number of type INT"),
    ],
)
def test_a_cluster_that_cannot_be_built_is_a_usage_error(args: list[str], fragment: str) -> None:
    result = CliRunner().invoke(app, ["sandbox", *args])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert fragment in result.stderr


@pytest.mark.parametrize(
    ("args", "metadata_level", "share_range", "share_level"),
    [
        ([], 30, (0, 2), 2),  # the default: the newest, Kafka 4.4 with share.version 2
        (["--kafka-version", "4.2"], 29, (0, 1), 1),
        (["--kafka-version", "4.3"], 30, (0, 1), 1),
        (["--kafka-version", "4.4"], 30, (0, 2), 2),
        (["--kafka-version", "4.4", "--share-version", "1"], 30, (0, 2), 1),
    ],
)
def test_kafka_version_sets_the_features_apiversions_reports(
    args: list[str], metadata_level: int, share_range: tuple[int, int], share_level: int
) -> None:
    """The recorded levels: 4.2's metadata.version 29, 4.3's and the 4.4 snapshot's 30
    (kafka-features in tests/golden/kafka-4.4), share.version 2 only on 4.4."""
    from kio.schema.api_versions.v4.request import ApiVersionsRequest

    with running_sandbox(*args) as (process, bootstrap):
        response = call(
            bootstrap,
            ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stderr is not None
        stderr = process.stderr.read()
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    finalized = {f.name: f.max_version_level for f in response.finalized_features}
    assert supported["metadata.version"] == (7, metadata_level)
    assert finalized["metadata.version"] == metadata_level
    assert supported["share.version"] == share_range
    assert finalized["share.version"] == share_level
    assert f"(share.version {share_level})" in stderr


def test_share_version_2_before_kafka_44_is_a_usage_error() -> None:
    result = subprocess.run(
        [*KSHARE, "sandbox", "--port", "0", "--kafka-version", "4.3", "--share-version", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "kshare: error: --share-version 2: Kafka 4.3 supports share.version 1 "
        "(2, the dead-letter queue, is Kafka 4.4's)"
    )
