"""ClusterFacts: the features and share-related cluster configs a command looks up once.

Read from a sandbox in its 4.2 profile and in a 4.4 one (feature levels as the
4.4 recording's ``kafka-features.sh describe``: metadata.version 4.3-IV0,
share.version 1 then 2), and from the session, which asks only once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kshare_cli.admin.cluster_facts import ClusterFacts, read_cluster_facts
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.kafka.features import kafka_line_of, metadata_version_name
from kshare_cli.services.session import Session
from kshare_cli.wire.client import KafkaClient
from tests.support.sandbox_thread import SandboxThread, kafka_44

T = TypeVar("T")

RECORDED_FEATURES = (
    Path(__file__).resolve().parents[1] / "golden" / "kafka-4.4" / "tool-output" / "kafka-features"
)


def _with_client(bootstrap: str, work: Callable[[KafkaClient], Coroutine[Any, Any, T]]) -> T:
    settings = resolve_settings(bootstrap=bootstrap, command_config=None, profile=None, environ={})

    async def run() -> T:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            return await work(client)

    return asyncio.run(run())


def test_the_kafka_line_from_the_features() -> None:
    # The recorded 4.4 snapshot: metadata.version 4.3-IV0 (30), share.version up to 2.
    recorded = (RECORDED_FEATURES / "01-describe.out").read_text()
    assert "metadata.version" in recorded and "FinalizedVersionLevel: 4.3-IV0" in recorded
    assert metadata_version_name(30) == "4.3-IV0"
    assert kafka_line_of(30, 2) == "4.4"
    assert kafka_line_of(30, 1) == "4.3"
    assert kafka_line_of(28, 1) == "4.2"
    assert kafka_line_of(None, None) is None
    assert metadata_version_name(99) == "level 99"


def test_what_the_cluster_lacks_is_said_plainly() -> None:
    one = ClusterFacts(1, (("share.version", 1),))
    assert one.dead_letter_queue_lacking() == (
        "this cluster's share.version is 1: the dead-letter queue needs 2 "
        "(`kafka-features.sh upgrade --feature share.version=2`)"
    )
    assert ClusterFacts(1, (("share.version", 2),)).dead_letter_queue_lacking() is None
    assert "does not report share.version" in (ClusterFacts(1).dead_letter_queue_lacking() or "")


@pytest.mark.parametrize("share_version", [1, 2])
def test_facts_of_a_44_cluster(share_version: int) -> None:
    with kafka_44(share_version=share_version) as sandbox:
        facts = _with_client(sandbox.bootstrap, read_cluster_facts)
    assert (facts.share_version, facts.metadata_version, facts.kafka_line) == (
        share_version,
        "4.3-IV0",
        "4.4",
    )
    assert facts.dead_letter_queue is (share_version == 2)
    assert (facts.dlq_topic_name_prefix, facts.dlq_auto_create_topics) == ("dlq.", False)
    bounds = facts.bounds()
    assert bounds.error is None and bounds.node_id == 1
    assert bounds.value("group.share.max.delivery.count.limit") == 10
    assert bounds.value("group.share.max.record.lock.duration.ms") == 60000
    assert facts.document() == {
        "kafka_line": "4.4",
        "metadata_version": "4.3-IV0",
        "share_version": share_version,
        "dead_letter_queue": share_version == 2,
    }


def test_facts_of_a_42_cluster_have_no_dlq_configs() -> None:
    with SandboxThread(kafka_version="4.2") as sandbox:
        facts = _with_client(sandbox.bootstrap, read_cluster_facts)
    assert facts.share_version == 1
    assert facts.dlq_topic_name_prefix is None and facts.dlq_auto_create_topics is None
    assert facts.bounds().value("group.share.max.record.lock.duration.ms") == 60000
    # 4.2 has no group.share.max.delivery.count.limit: the bound is missing, not made up.
    assert facts.bounds().value("group.share.max.delivery.count.limit") is None


def test_the_session_looks_the_facts_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from kshare_cli.admin import cluster_facts

    lookups: list[ClusterFacts] = []

    async def counted(client: KafkaClient, *, configs: bool = True) -> ClusterFacts:
        lookups.append(await read_cluster_facts(client, configs=configs))
        return lookups[-1]

    monkeypatch.setattr(cluster_facts, "read_cluster_facts", counted)
    with kafka_44() as sandbox:
        settings = resolve_settings(
            bootstrap=sandbox.bootstrap, command_config=None, profile=None, environ={}
        )
        session = Session(settings, 15)

        async def twice(admin: ShareGroupAdmin) -> tuple[ClusterFacts, ClusterFacts]:
            return await session.cluster_facts(admin), await session.cluster_facts(admin)

        first, second = asyncio.run(session.ask("facts", twice))
    assert first is second and session.known_cluster_facts is first
    assert lookups == [first]
