"""What differs between the sandbox's Kafka profiles, on every profile it differs on.

The releases' differences as measured (``kshare_cli/sandbox/profile.py``; DESIGN.md's
facts; ``tests/golden/kafka-4.4/README.md``): the group configs a broker lists (4.2, 4.3
and 4.4 each their own), a reset's snapshot (deliveryCompleteCount -1 on 4.2, so
describe's LAG is ``-``; 0 from 4.3 on, so LAG is a number) and a share-partition's
first snapshot (state epoch 1 before 4.4, 2 on 4.4). Each is checked here on 4.2, 4.3
and 4.4, one sandbox per profile for the module; the dead-letter queue (4.4 with
share.version 2 only) is checked on each profile in ``tests/cli/test_config_cmd_kafka44``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.kafka.versions import KafkaVersion
from kshare_cli.sandbox.group_configs import GroupConfigStore
from kshare_cli.sandbox.group_coordinator import ShareGroupCoordinator
from kshare_cli.sandbox.profile import KafkaProfile
from kshare_cli.wire.client import KafkaClient
from tests.cli.conftest import Kshare
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import alter_share_group_offsets

VERSIONS: tuple[KafkaVersion, ...] = ("4.2", "4.3", "4.4")
TOPIC = "t"
RECORDS = 10


@pytest.fixture(scope="module", params=VERSIONS)
def profile_sandbox(request: pytest.FixtureRequest) -> Iterator[SandboxThread]:
    """A sandbox on one profile with topic ``t``: one partition, 10 records."""
    skip_on_real_cluster("it starts a sandbox on each Kafka profile")
    with SandboxThread(kafka_version=request.param) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": sandbox.bootstrap})
        for index in range(RECORDS):
            producer.produce(TOPIC, value=f"v{index}".encode(), partition=0)
        assert producer.flush(30) == 0
        yield sandbox


def _version(sandbox: SandboxThread) -> KafkaVersion:
    version: KafkaVersion = sandbox.call(lambda broker: broker.profile.kafka_version)
    return version


@pytest.fixture
def kshare(profile_sandbox: SandboxThread, tmp_path: Path) -> Kshare:
    return Kshare(profile_sandbox.bootstrap, None, tmp_path / "kshare" / "config.toml")


def test_describe_after_a_reset_shows_lag_from_4_3_on(
    profile_sandbox: SandboxThread, kshare: Kshare
) -> None:
    """A reset's snapshot carries deliveryCompleteCount -1 (unknown) on 4.2, so the broker
    answers no lag and describe's LAG is ``-`` as Kafka's tool prints it; 0 from 4.3 on
    (KAFKA-20034, in 4.3.0), so the broker's lag is 10 - 3."""
    group = f"reset-{_version(profile_sandbox)}"
    settings = resolve_settings(
        bootstrap=profile_sandbox.bootstrap, command_config=None, profile=None, environ={}
    )

    async def reset() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            await alter_share_group_offsets(client, group, {TOPIC: [0]}, start_offset=3)

    asyncio.run(reset())
    document = kshare.run("describe", group, "-o", "json")
    plain = kshare.run("describe", group, "-o", "plain")

    assert (document.exit_code, plain.exit_code) == (0, 0), document.stderr + plain.stderr
    ((partition,),) = [each["partitions"] for each in json.loads(document.stdout)["groups"]]
    header, row = plain.stdout.strip("\n").splitlines()
    cells = dict(zip(header.split(), row.split(), strict=True))
    numeric = _version(profile_sandbox) != "4.2"
    # Without the broker's lag kshare bounds it (nothing finished since the reset).
    assert (partition["start_offset"], partition["lag"], partition["lag_source"]) == (
        3,
        7,
        "broker" if numeric else "bound",
    )
    assert (cells["START-OFFSET"], cells["LAG"]) == ("3", "7" if numeric else "-")


def test_config_get_lists_the_releases_group_configs(
    profile_sandbox: SandboxThread, kshare: Kshare
) -> None:
    """4.2: the share.* configs of 4.2; 4.3 adds the delivery count limit, record locks,
    renew-acknowledge and assignment interval; 4.4 adds the dead-letter queue's."""
    version = _version(profile_sandbox)
    result = kshare.run("config", "get", f"configs-{version}", "--all", "-o", "json")

    assert result.exit_code == 0, result.stderr
    listed = {entry["name"] for entry in json.loads(result.stdout)["configs"]}
    shown = {name for name in listed if name.startswith(("share.", "errors."))}
    expected = {
        key.name
        for key in GroupConfigStore(kafka_version=version).definitions
        if key.name.startswith(("share.", "errors."))
    }
    assert shown == expected
    assert ("share.delivery.count.limit" in listed) is (version != "4.2")
    assert ("errors.deadletterqueue.topic.name" in listed) is (version == "4.4")


@pytest.mark.parametrize(("version", "state_epoch"), [("4.2", 1), ("4.3", 2), ("4.4", 2)])
def test_a_share_partitions_first_snapshot_has_the_releases_state_epoch(
    version: KafkaVersion, state_epoch: int
) -> None:
    """From 4.3 a new group starts at epoch 1 (KAFKA-20268, in 4.3.1), so the join's
    epoch is 2 and the initial snapshot's stateEpoch 2 (the 4.4 recording), 1 before
    (the 4.2 recording); the partitions come with the next heartbeat, one epoch on (Kafka's
    ShareGroupHeartbeatRequestTest: 2 then 3 from 4.3, 1 then 2 before)."""
    profile = KafkaProfile(version)
    coordinator = ShareGroupCoordinator(
        GroupConfigStore(kafka_version=version),
        initial_group_epoch=profile.initial_group_epoch,
        assignment_batching=profile.assignment_batching,
    )

    joined = coordinator.heartbeat(
        "g", "m", 0, None, "client-m", "/127.0.0.1", [TOPIC], 1_000_000, {TOPIC: 1}
    )
    assert (joined.member_epoch, joined.assignment) == (state_epoch, {})
    assert joined.initialization is not None
    assert (joined.initialization.state_epoch, joined.initialization.partitions) == (
        state_epoch,
        {TOPIC: [0]},
    )
    # Kafka's member heartbeats again a heartbeat interval later: the interval has passed.
    assigned = coordinator.heartbeat(
        "g", "m", joined.member_epoch, None, "client-m", "/127.0.0.1", None, 1_005_000,
        {TOPIC: 1},
    )  # fmt: skip
    assert (assigned.member_epoch, assigned.assignment) == (state_epoch + 1, {TOPIC: [0]})
