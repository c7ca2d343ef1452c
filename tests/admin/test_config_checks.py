"""kshare's checks before a group-config alter: Kafka's table, ConfigDef, the broker's bounds.

The validator is checked at both sides of every bound (Kafka's static ConfigDef
bounds, and each broker bound, read from the broker or defaulted).
"""

from __future__ import annotations

import pytest

from kshare_cli.admin.config_checks import (
    BOUND_SETTINGS,
    CheckedValue,
    check_against_broker,
    check_assignments,
    check_names,
    check_supported,
    check_value,
    parse_assignment,
)
from kshare_cli.admin.group_configs import BrokerSettings, GroupConfigEntry, GroupConfigs
from kshare_cli.errors import UsageError
from kshare_cli.kafka.group_configs import SHARE_CONFIG_KEYS, GroupConfigKey, share_config_key
from kshare_cli.wire.errors import KafkaError


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


def test_the_table_is_kafkas_share_configs_of_42_43_and_44() -> None:
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
    names_44 = {"errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable"}
    assert {k.name for k in SHARE_CONFIG_KEYS if k.since == "4.1"} == names_42
    assert {k.name for k in SHARE_CONFIG_KEYS if k.since == "4.3"} == names_43
    assert {k.name for k in SHARE_CONFIG_KEYS if k.since == "4.4"} == names_44
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
