"""Group configs: the validator on Kafka's bounds table, the converters, and the RPCs.

The validator is checked at both sides of every bound (Kafka's static ConfigDef
bounds, and each broker bound, read from the broker or defaulted); the converters
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
    BOUND_SETTINGS,
    SHARE_CONFIG_KEYS,
    BrokerSettings,
    CheckedValue,
    ConfigOperation,
    GroupConfigAdmin,
    GroupConfigEntry,
    GroupConfigs,
    alter_error_from,
    broker_settings_from,
    check_against_broker,
    check_assignments,
    check_names,
    check_supported,
    check_value,
    describe_result_for,
    group_configs_from,
    parse_assignment,
    share_config_key,
)
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.errors import Refused, UsageError
from kshare_cli.kafka.group_configs import GroupConfigKey
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


def key(name: str) -> GroupConfigKey:
    found = share_config_key(name)
    assert found is not None, name
    return found


def checked(name: str, value: str) -> CheckedValue:
    (result,) = check_assignments([f"{name}={value}"])
    return result


#: Kafka 4.2/4.3's broker defaults, as a broker that reports them all would.
DEFAULT_BROKER = BrokerSettings(
    1,
    tuple((bound.setting, bound.default) for k in SHARE_CONFIG_KEYS for bound in k.bounds),
)
#: A broker that would not say (no DESCRIBE_CONFIGS on the cluster).
SILENT_BROKER = BrokerSettings(1, (), KafkaError.of(31, "Cluster authorization failed."))
#: The group configs of a fresh group on a 4.3 broker: every key known, defaults.
FRESH_43 = GroupConfigs(
    "g",
    tuple(GroupConfigEntry(k.name, k.default, "DEFAULT_CONFIG") for k in SHARE_CONFIG_KEYS),
)


# --------------------------------------------------------------------------- the table


def test_the_table_is_kafkas_share_configs_of_42_and_43() -> None:
    names_42 = {
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.auto.offset.reset",
        "share.isolation.level",
    }
    names_43 = {
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.renew.acknowledge.enable",
        "share.assignment.interval.ms",
    }
    assert {k.name for k in SHARE_CONFIG_KEYS if k.since != "4.3"} == names_42
    assert {k.name for k in SHARE_CONFIG_KEYS if k.since == "4.3"} == names_43
    # The broker bounds, with Kafka's defaults (GroupCoordinatorConfig, ShareGroupConfig).
    bounds = {
        k.name: (k.at_least, k.minimum and k.minimum.default, k.maximum and k.maximum.default)
        for k in SHARE_CONFIG_KEYS
    }
    assert bounds["share.session.timeout.ms"] == (1, 45000, 60000)
    assert bounds["share.heartbeat.interval.ms"] == (1, 5000, 15000)
    assert bounds["share.record.lock.duration.ms"] == (1000, 15000, 60000)
    assert bounds["share.delivery.count.limit"] == (2, 2, 10)
    assert bounds["share.partition.max.record.locks"] == (100, 100, 4000)
    assert bounds["share.assignment.interval.ms"] == (0, 0, 15000)
    assert len(set(BOUND_SETTINGS)) == len(BOUND_SETTINGS) == 12


# --------------------------------------------------------------------------- static checks


STATIC_BOUNDS = [(k.name, k.at_least) for k in SHARE_CONFIG_KEYS if k.at_least is not None]


@pytest.mark.parametrize(("name", "at_least"), STATIC_BOUNDS)
def test_static_at_least_bound_on_both_sides(name: str, at_least: int) -> None:
    assert check_value(key(name), str(at_least)) == at_least
    with pytest.raises(UsageError) as refused:
        check_value(key(name), str(at_least - 1))
    assert str(refused.value) == (
        f"Invalid value {at_least - 1} for configuration {name}: Value must be at least {at_least}"
    )


@pytest.mark.parametrize(
    "raw",
    ["abc", "", "1.5", "1_000", "2147483648", "-2147483649", "0x10", "20 000"],
)
def test_ints_parse_as_javas_integer(raw: str) -> None:
    with pytest.raises(UsageError, match="Not a number of type INT"):
        check_value(key("share.record.lock.duration.ms"), raw)


def test_ints_are_trimmed_and_signed_as_java_does() -> None:
    lock = key("share.record.lock.duration.ms")
    assert check_value(lock, " 20000\t") == 20000
    assert check_value(lock, "+20000") == 20000
    assert check_value(lock, "2147483647") == 2**31 - 1


@pytest.mark.parametrize(("raw", "expected"), [("true", True), ("FALSE", False), (" True ", True)])
def test_booleans_as_configdef(raw: str, expected: bool) -> None:
    assert check_value(key("share.renew.acknowledge.enable"), raw) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "", "t"])
def test_other_booleans_are_refused(raw: str) -> None:
    with pytest.raises(UsageError, match="Expected value to be either true or false"):
        check_value(key("share.renew.acknowledge.enable"), raw)


def test_isolation_level_is_one_of_two() -> None:
    level = key("share.isolation.level")
    assert check_value(level, " read_committed ") == "read_committed"
    with pytest.raises(UsageError) as refused:
        check_value(level, "READ_COMMITTED")
    assert str(refused.value) == (
        "Invalid value READ_COMMITTED for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted"
    )


@pytest.mark.parametrize(
    "raw",
    ["earliest", "latest", " latest ", "by_duration:PT1H", "by_duration:P1DT2H3M4.5S",
     "by_duration:pt0s", "by_duration:PT1H-2M", "by_duration:PT1,5S"],
)  # fmt: skip
def test_auto_offset_reset_spellings_kafka_accepts(raw: str) -> None:
    assert check_value(key("share.auto.offset.reset"), raw) == raw.strip()


@pytest.mark.parametrize(
    "raw",
    ["none", "EARLIEST", "by_duration", "by_duration:", "by_duration:PT", "by_duration:P",
     "by_duration:-PT1H", "by_duration:PT-1S", "by_duration:PT-1H+2M", "by_duration:P1W",
     "by_duration:1h", ""],
)  # fmt: skip
def test_auto_offset_reset_spellings_kafka_refuses(raw: str) -> None:
    with pytest.raises(UsageError, match="'by_duration:<PnDTnHnMn.nS>'"):
        check_value(key("share.auto.offset.reset"), raw)


def test_pairs_names_and_their_errors() -> None:
    assert parse_assignment("share.auto.offset.reset=by_duration:PT1H") == (
        "share.auto.offset.reset",
        "by_duration:PT1H",
    )
    assert parse_assignment("k=a=b") == ("k", "a=b")
    for malformed in ("share.auto.offset.reset", "=earliest", " =1"):
        with pytest.raises(UsageError, match="expected KEY=VALUE"):
            parse_assignment(malformed)
    with pytest.raises(UsageError, match="share.isolation.level is given more than once"):
        check_assignments(["share.isolation.level=read_committed"] * 2)
    with pytest.raises(UsageError, match="at least one"):
        check_assignments([])
    with pytest.raises(UsageError) as unknown:
        check_assignments(["share.lock.duration.ms=1"])
    message = str(unknown.value)
    assert "unknown share-group config 'share.lock.duration.ms'" in message
    assert all(k.name in message for k in SHARE_CONFIG_KEYS)
    for other in ("consumer.session.timeout.ms=50000", "streams.num.standby.replicas=1"):
        with pytest.raises(UsageError, match=r"share-group configs \(share\.\*\) only"):
            check_assignments([other])
    assert [k.name for k in check_names(["share.isolation.level"])] == ["share.isolation.level"]
    with pytest.raises(UsageError, match="not KEY=VALUE"):
        check_names(["share.isolation.level=read_committed"])
    with pytest.raises(UsageError, match="given more than once"):
        check_names(["share.isolation.level", "share.isolation.level"])


# --------------------------------------------------------------------------- broker bounds


BROKER_BOUNDS = [
    (k.name, bound.setting, bound.default, bound is k.minimum)
    for k in SHARE_CONFIG_KEYS
    for bound in k.bounds
]


@pytest.mark.parametrize(("name", "setting", "limit", "is_minimum"), BROKER_BOUNDS)
@pytest.mark.parametrize("broker", [DEFAULT_BROKER, SILENT_BROKER], ids=["read", "defaulted"])
def test_broker_bound_on_both_sides(
    name: str, setting: str, limit: int, is_minimum: bool, broker: BrokerSettings
) -> None:
    inside, outside = (limit, limit - 1) if is_minimum else (limit, limit + 1)
    # Built directly: where a broker minimum equals the static atLeast, the static check
    # would refuse ``outside`` first; this checks the broker bound on its own.
    notes = check_against_broker([CheckedValue(key(name), str(inside), inside)], FRESH_43, broker)
    if broker is SILENT_BROKER:
        assert any(setting in note and "Kafka's default" in note for note in notes), notes
    else:
        assert notes == ()
    with pytest.raises(UsageError) as refused:
        check_against_broker([CheckedValue(key(name), str(outside), outside)], FRESH_43, broker)
    relation = "greater than or equal to" if is_minimum else "less than or equal to"
    message = str(refused.value)
    # Kafka's own words (GroupConfig.validateValues), then where the bound came from.
    assert f"{name} must be {relation} {setting} ({limit}" in message, message
    if broker is SILENT_BROKER:
        assert "Kafka's default" in message and "CLUSTER_AUTHORIZATION_FAILED" in message
    else:
        assert f"({limit} on broker 1)" in message


def test_the_brokers_own_bound_wins_over_kafkas_default() -> None:
    lowered = BrokerSettings(1, (("group.share.max.record.lock.duration.ms", 40000),))
    notes = check_against_broker(
        [checked("share.record.lock.duration.ms", "40000")], FRESH_43, lowered
    )
    # The maximum was read; the minimum was not, so that one is Kafka's, with a note.
    assert notes == (
        "share.record.lock.duration.ms=40000 was checked against Kafka's default "
        "group.share.min.record.lock.duration.ms=15000: broker 1 did not report its own",
    )
    with pytest.raises(UsageError, match=r"\(40000 on broker 1\)"):
        check_against_broker([checked("share.record.lock.duration.ms", "40001")], FRESH_43, lowered)


def test_session_must_exceed_heartbeat_with_the_groups_current_values() -> None:
    wide = BrokerSettings(
        1,
        (
            ("group.share.min.session.timeout.ms", 1000),
            ("group.share.max.session.timeout.ms", 60000),
            ("group.share.min.heartbeat.interval.ms", 1000),
            ("group.share.max.heartbeat.interval.ms", 60000),
        ),
    )
    current = GroupConfigs(
        "g",
        (
            GroupConfigEntry("share.session.timeout.ms", "20000", "DYNAMIC_GROUP_CONFIG"),
            GroupConfigEntry("share.heartbeat.interval.ms", "5000", "DEFAULT_CONFIG"),
        ),
    )
    assert (
        check_against_broker([checked("share.heartbeat.interval.ms", "19999")], current, wide) == ()
    )
    with pytest.raises(UsageError) as refused:
        check_against_broker([checked("share.heartbeat.interval.ms", "20000")], current, wide)
    assert str(refused.value) == (
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms "
        "(it would be 20000 <= 20000 for this group)"
    )
    # Both given: the new values, not the current ones.
    both = check_assignments(
        ["share.session.timeout.ms=30000", "share.heartbeat.interval.ms=25000"]
    )
    assert check_against_broker(both, current, wide) == ()


def test_a_43_key_on_a_42_broker_is_named() -> None:
    fresh_42 = GroupConfigs(
        "g",
        tuple(
            GroupConfigEntry(k.name, k.default, "DEFAULT_CONFIG")
            for k in SHARE_CONFIG_KEYS
            if k.since != "4.3"
        ),
    )
    check_supported(fresh_42, [key("share.record.lock.duration.ms")])
    with pytest.raises(UsageError) as refused:
        check_supported(fresh_42, [key("share.delivery.count.limit")])
    assert str(refused.value) == (
        "share.delivery.count.limit is not a group config on this cluster: it needs Kafka 4.3 "
        "or later (until then the broker's group.share.delivery.count.limit applies to every "
        "group)"
    )
    check_supported(FRESH_43, [key("share.delivery.count.limit")])


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
