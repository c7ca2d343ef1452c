"""One group-config table: the client's checks and the sandbox broker read the same entries."""

from __future__ import annotations

import pytest

from kshare_cli.admin import config_checks as client
from kshare_cli.kafka.group_configs import (
    GROUP_CONFIG_KEYS,
    SHARE_CONFIG_KEYS,
    ConfigValueError,
    check_dlq_topic_name,
    group_config_key,
    is_share_group_config,
    parse_value,
    share_config_key,
    validate_value,
)
from kshare_cli.sandbox.group_configs import GroupConfigStore
from tests.support.golden import GOLDEN

GOLDEN_44 = GOLDEN.parent / "kafka-4.4"


def test_the_sandbox_answers_from_the_same_entries() -> None:
    for version in ("4.2", "4.3", "4.4"):
        store = GroupConfigStore(kafka_version=version)
        assert all(group_config_key(key.name) is key for key in store.definitions)
    assert GroupConfigStore(kafka_version="4.4").definitions == GROUP_CONFIG_KEYS
    # What 4.4 added: the DLQ's group configs and two of Streams'.
    assert {key.name for key in GROUP_CONFIG_KEYS} - {
        key.name for key in GroupConfigStore(kafka_version="4.3").definitions
    } == {
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.copy.record.enable",
        "streams.assignor.name",
        "streams.rack.aware.assignment.tags",
    }


def test_44_lists_every_group_config_of_the_recording() -> None:
    """The 4.4 recording's ``--describe --all`` names exactly the table's keys."""
    recorded = (
        GOLDEN_44 / "tool-output" / "kafka-configs" / "00-describe-golden-dg-all.out"
    ).read_text()
    names = {line.split("=", 1)[0].strip() for line in recorded.splitlines()[1:]}
    assert names == {key.name for key in GROUP_CONFIG_KEYS}
    for key in GROUP_CONFIG_KEYS:
        line = next(row for row in recorded.splitlines() if row.startswith(f"  {key.name}="))
        if "DYNAMIC_GROUP_CONFIG" not in line:
            assert line.startswith(f"  {key.name}={key.default} "), line
        assert f"DEFAULT_CONFIG:{key.default_from or key.name}={key.default}}}" in line, line


def test_the_dlq_name_rule_is_kafkas() -> None:
    check_dlq_topic_name("dlq.g")
    check_dlq_topic_name("")
    with pytest.raises(ConfigValueError) as refused:
        check_dlq_topic_name("__golden-dh")
    recorded = (
        GOLDEN_44 / "tool-output" / "kafka-configs" / "05-alter-golden-dh-dlq-name-reserved.err"
    ).read_text()
    assert f"InvalidConfigurationException: {refused.value.message}\n" in recorded
    assert is_share_group_config("errors.deadletterqueue.topic.name")
    assert not is_share_group_config("errors.deadletterqueue.group.enable".replace("errors", "x"))


def test_the_client_checks_the_share_keys_of_the_same_table() -> None:
    assert client.SHARE_CONFIG_KEYS is SHARE_CONFIG_KEYS
    assert share_config_key("consumer.session.timeout.ms") is None
    assert share_config_key("share.isolation.level") is group_config_key("share.isolation.level")


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        (
            "share.record.lock.duration.ms",
            "1e3",
            "Invalid value 1e3 for configuration share.record.lock.duration.ms: "
            "Not a number of type INT",
        ),
        (
            "share.record.lock.duration.ms",
            "999",
            "Invalid value 999 for configuration share.record.lock.duration.ms: "
            "Value must be at least 1000",
        ),
        (
            "share.renew.acknowledge.enable",
            "yes",
            "Invalid value yes for configuration share.renew.acknowledge.enable: "
            "Expected value to be either true or false",
        ),
    ],
)
def test_configdef_messages_are_kafkas(name: str, raw: str, message: str) -> None:
    key = group_config_key(name)
    assert key is not None
    with pytest.raises(ConfigValueError) as refused:
        validate_value(key, parse_value(key, raw))
    assert refused.value.message == message
