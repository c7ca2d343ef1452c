"""``services.consume``: the delivery limit ``kshare consume --interactive`` shows comes from
the admin layer's one lookup, over the control plane, and a cluster that will not say
gets Kafka's default, said to be assumed, without failing the run.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.consumer.share_consume import consume as run_consumer
from kshare_cli.errors import UsageError
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.services.consume import (
    ConsumeOptions,
    DeliveryLimit,
    delivery_limit,
    make_deserializer,
    make_formatter,
)
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox import StartCluster
from tests.support.sandbox_thread import SandboxThread

GROUP_LIMIT = "share.delivery.count.limit"
BROKER_LIMIT = "group.share.delivery.count.limit"


def _settings(bootstrap: str, client_config: dict[str, str], directory: Path) -> ConnectionSettings:
    config = None
    if client_config:
        config = directory / "client.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in client_config.items()))
    return resolve_settings(bootstrap=bootstrap, command_config=config, profile=None, environ={})


def test_without_a_group_config_the_limit_is_the_brokers(
    sandbox_cluster: StartCluster, tmp_path: Path
) -> None:
    sandbox = sandbox_cluster(1, settings=BrokerGroupSettings(share_delivery_count_limit=3))
    settings = _settings(sandbox.bootstrap, {}, tmp_path)
    assert delivery_limit(settings, "no-config", 10) == DeliveryLimit(
        3, f"broker config {BROKER_LIMIT}"
    )


def test_a_group_config_wins_over_the_brokers(tmp_path: Path, unique: str) -> None:
    """Kafka 4.3's group config (4.2 answers ``Unknown group config name``): a sandbox in its
    4.3 profile, so the rule is tested on every bed, a real 4.2 cluster included."""
    group = f"limit-{unique}"
    with SandboxThread(kafka_version="4.3") as sandbox:
        settings = _settings(sandbox.bootstrap, {}, tmp_path)
        before = delivery_limit(settings, group, 10)
        assert before.source == f"broker config {BROKER_LIMIT}" and not before.assumed
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        entry = ConfigEntry(GROUP_LIMIT, "2", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)
        assert delivery_limit(settings, group, 10) == DeliveryLimit(
            2, f"group config {GROUP_LIMIT}"
        )


def test_a_cluster_that_will_not_say_gets_kafkas_default_assumed(
    rdkafka_mock: RdkafkaMockCluster, tmp_path: Path
) -> None:
    """librdkafka's mock answers no admin RPC: the lookup fails, the run would go on."""
    settings = _settings(rdkafka_mock.bootstrap_servers, {}, tmp_path)
    limit = delivery_limit(settings, "any", 10)
    assert limit.limit == 5 and limit.assumed
    assert limit.source.startswith("Kafka's default; the cluster did not say (")


def test_an_interactive_run_needs_the_delivery_limit() -> None:
    """The engine no longer guesses a limit of its own: the service must hand one over."""
    formatter = make_formatter("text", {}, make_deserializer("bytes"), make_deserializer("bytes"))
    with pytest.raises(UsageError, match="needs the delivery limit"):
        run_consumer(
            {"bootstrap.servers": "127.0.0.1:1"},
            ConsumeOptions(topics=("t",), interactive=True),
            formatter,
            io.BytesIO(),
            decide=lambda *_: None,
        )
