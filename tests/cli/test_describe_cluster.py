"""``describe --state -o json`` names the cluster: its Kafka line and ``share.version``.

An operator reading a group's state on a 4.4 cluster must see whether the
cluster acts on the dead-letter queue (``share.version`` 2) without another
tool. The features come with ApiVersions, so the describe sends nothing more.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.wire.client import KafkaClient
from tests.cli.conftest import Kshare, validate
from tests.support.sandbox_thread import SandboxThread, kafka_44
from tests.support.share_offsets import alter_share_group_offsets


def _make_group(bootstrap: str, group: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    settings = resolve_settings(bootstrap=bootstrap, command_config=None, profile=None, environ={})

    async def make() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            await alter_share_group_offsets(client, group, {topic: [0]})

    asyncio.run(make())


@pytest.mark.parametrize(("share_version", "dead_letter_queue"), [(2, True), (1, False)])
def test_state_json_shows_the_kafka_line_and_share_version(
    tmp_path: Path, share_version: int, dead_letter_queue: bool
) -> None:
    with kafka_44(share_version=share_version) as sandbox:
        _make_group(sandbox.bootstrap, "g", "t")
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
        result = kshare.run("describe", "g", "--state", "-o", "json")
        members = kshare.run("describe", "g", "--members", "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "describe.schema.json")
    assert document["cluster"] == {
        "kafka_line": "4.4",
        "metadata_version": "4.3-IV0",
        "share_version": share_version,
        "dead_letter_queue": dead_letter_queue,
    }
    assert [group["group_id"] for group in document["groups"]] == ["g"]
    # The members view is unchanged.
    assert members.exit_code == 0, members.stderr
    assert "cluster" not in json.loads(members.stdout)


def test_state_json_on_a_42_cluster(tmp_path: Path) -> None:
    with SandboxThread(kafka_version="4.2") as sandbox:
        _make_group(sandbox.bootstrap, "g", "t")
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
        result = kshare.run("describe", "g", "--state", "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "describe.schema.json")
    # The sandbox's 4.2 profile reports share.version 1 and no metadata.version.
    assert document["cluster"]["share_version"] == 1
    assert document["cluster"]["dead_letter_queue"] is False
