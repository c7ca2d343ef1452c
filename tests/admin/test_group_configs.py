"""Group configs: the converters and the RPCs.

The checks before an alter are tested in ``test_config_checks.py``; the converters
against the golden corpus's recorded DescribeConfigs and IncrementalAlterConfigs
exchanges of kafka-configs.sh (scenario A step 6); the RPCs against the ``cluster``
fixture (the sandbox, or ``KSHARE_TEST_BOOTSTRAP``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kshare_cli.admin.group_configs import (
    BrokerSettings,
    ConfigOperation,
    GroupConfigAdmin,
    GroupConfigs,
    alter_error_from,
    broker_settings_from,
    describe_result_for,
    group_configs_from,
)
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.errors import Refused
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.errors import KafkaError
from tests.support.golden import GOLDEN
from tests.support.golden_admin import response
from tests.support.sandbox import Cluster

T = TypeVar("T")

CONFIGS_OUTPUT = GOLDEN / "tool-output" / "kafka-configs"
#: Recorded lines of decoded/scenario-a.wire.jsonl: kafka-configs.sh 01-04.
ALTER_01_DESCRIBE, ALTER_01 = 396, 397
DESCRIBE_02 = 404
ALTER_03_DESCRIBE, ALTER_03 = 408, 409
DESCRIBE_04 = 413


# --------------------------------------------------------------------------- converters


def test_recorded_describe_converts_with_sources_and_synonyms() -> None:
    configs = group_configs_from(
        describe_result_for(response(DESCRIBE_02), 32, "golden-h"), "golden-h"
    )
    assert [entry.name for entry in configs.entries] == sorted(
        entry.name for entry in configs.entries
    )
    assert len(configs.entries) == 11
    assert [(e.name, e.value) for e in configs.dynamic()] == [
        ("share.auto.offset.reset", "earliest"),
        ("share.record.lock.duration.ms", "20000"),
    ]
    lock = configs.get("share.record.lock.duration.ms")
    assert lock is not None and lock.config_type == "INT" and not lock.sensitive
    assert [(s.source, s.value) for s in lock.synonyms] == [("DYNAMIC_GROUP_CONFIG", "20000")]
    level = configs.get("share.isolation.level")
    assert level is not None and level.source == "DEFAULT_CONFIG" and not level.dynamic
    assert len(configs.share()) == 5


def test_recorded_refusal_converts_to_kafkas_code_and_message() -> None:
    error = alter_error_from(response(ALTER_03), "golden-h")
    assert error is not None and (error.code, error.name) == (40, "INVALID_CONFIG")
    recorded = (CONFIGS_OUTPUT / "03-alter-golden-h-out-of-bounds.err").read_text()
    assert f"InvalidConfigurationException: {error.message}\n" in recorded
    assert alter_error_from(response(ALTER_01), "golden-h") is None
    # A response that does not name the group is not success.
    assert alter_error_from(response(ALTER_01), "other") is not None


def test_broker_settings_from_an_error_or_a_result() -> None:
    error = KafkaError.of(31, "Cluster authorization failed.")
    assert broker_settings_from(error, 3) == BrokerSettings(3, (), error)
    missing = describe_result_for(response(DESCRIBE_02), 4, "1")
    assert isinstance(missing, KafkaError)


# --------------------------------------------------------------------------- against the cluster


def run(cluster: Cluster, work: Callable[[GroupConfigAdmin], Coroutine[Any, Any, T]]) -> T:
    config = os.environ.get("KSHARE_TEST_COMMAND_CONFIG") if cluster.sandbox is None else None
    settings = resolve_settings(
        bootstrap=cluster.bootstrap,
        command_config=Path(config) if config else None,
        profile=None,
        environ={},
    )

    async def go() -> T:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            return await work(GroupConfigAdmin(client))

    return asyncio.run(go())


def test_the_brokers_refusal_is_its_own_message(cluster: Cluster, unique: str) -> None:
    """Sent as kafka-configs.sh sent it (golden 03), past kshare's checks: Kafka's words."""
    group = f"kshare-cfg-refused-{unique}"

    async def work(admin: GroupConfigAdmin) -> tuple[str, GroupConfigs]:
        with pytest.raises(Refused) as refused:
            await admin.alter(
                group, [ConfigOperation("share.record.lock.duration.ms", "set", "999999999")]
            )
        return str(refused.value), await admin.describe(group)

    message, after = run(cluster, work)
    assert message == (
        f"the broker refused to update group {group!r}: INVALID_CONFIG: "
        "share.record.lock.duration.ms must be less than or equal to "
        "group.share.max.record.lock.duration.ms"
    )
    assert after.dynamic() == ()


def test_bounds_are_read_from_the_broker_asked(cluster: Cluster, unique: str) -> None:
    async def work(admin: GroupConfigAdmin) -> tuple[int, GroupConfigs, BrokerSettings]:
        node = await admin.any_broker()
        configs, broker = await admin.describe_with_broker(f"kshare-cfg-{unique}", node)
        return node, configs, broker

    node, configs, broker = run(cluster, work)
    assert broker.node_id == node and broker.error is None
    for setting in ("group.share.min.record.lock.duration.ms",
                    "group.share.max.record.lock.duration.ms",
                    "group.share.max.session.timeout.ms"):  # fmt: skip
        assert isinstance(broker.value(setting), int), setting
    assert {"share.record.lock.duration.ms", "share.auto.offset.reset"} <= configs.names()


def test_a_missing_group_without_configs_is_known_not_to_exist(
    cluster: Cluster, unique: str
) -> None:
    configs = run(
        cluster, lambda admin: admin.describe(f"kshare-cfg-nobody-{unique}", check_exists=True)
    )
    assert configs.exists is False
    assert configs.dynamic() == ()
    assert all(entry.source == "DEFAULT_CONFIG" for entry in configs.entries)


def test_set_and_unset_through_the_admin(cluster: Cluster, unique: str) -> None:
    group = f"kshare-cfg-admin-{unique}"

    async def work(admin: GroupConfigAdmin) -> list[Any]:
        dry = await admin.set_configs(
            group, ["share.isolation.level=read_committed"], validate_only=True
        )
        after_dry = await admin.describe(group)
        done = await admin.set_configs(group, ["share.isolation.level=read_committed"])
        after_set = await admin.describe(group)
        unset = await admin.unset_configs(
            group, ["share.isolation.level", "share.auto.offset.reset"]
        )
        after_unset = await admin.describe(group)
        return [dry, after_dry, done, after_set, unset, after_unset]

    dry, after_dry, done, after_set, unset, after_unset = run(cluster, work)
    assert dry.validate_only and after_dry.dynamic() == ()
    (change,) = done.changes
    assert (change.value, change.previous_value, change.previous_source) == (
        "read_committed",
        "read_uncommitted",
        "DEFAULT_CONFIG",
    )
    assert [(e.name, e.value) for e in after_set.dynamic()] == [
        ("share.isolation.level", "read_committed")
    ]
    assert [(c.name, c.operation, c.value) for c in unset.changes] == [
        ("share.isolation.level", "delete", None)
    ]
    assert unset.notes == (
        f"share.auto.offset.reset is not set on group {group!r}: it already has its default",
    )
    assert after_unset.dynamic() == ()


def test_another_brokers_resource_is_refused_as_kafka_does(cluster: Cluster) -> None:
    """ConfigHelper: a BROKER resource is described only by that broker itself."""

    async def work(admin: GroupConfigAdmin) -> Any:
        node = await admin.any_broker()
        _, answer = await admin.client.request(
            32,
            {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": str(node + 1000),
                        "configuration_keys": None,
                    }
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
            node=node,
            min_version=1,
        )
        return node, describe_result_for(answer, 4, str(node + 1000))

    node, result = run(cluster, work)
    assert isinstance(result, KafkaError) and result.name == "INVALID_REQUEST"
    assert result.message == (
        f"Unexpected broker id, expected {node} or empty string, but received {node + 1000}"
    )
