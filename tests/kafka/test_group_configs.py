"""One group-config table: the client's checks and the sandbox broker read the same entries."""

from __future__ import annotations

import pytest

from kshare_cli.admin import config_checks as client
from kshare_cli.kafka.group_configs import (
    GROUP_CONFIG_KEYS,
    SHARE_CONFIG_KEYS,
    ConfigValueError,
    group_config_key,
    parse_value,
    share_config_key,
    validate_value,
)
from kshare_cli.sandbox.group_configs import GroupConfigStore


def test_the_sandbox_answers_from_the_same_entries() -> None:
    store = GroupConfigStore(kafka_version="4.3")
    assert all(group_config_key(key.name) is key for key in store.definitions)
    # Kafka 4.3's assignment interval is the one key the sandbox does not emulate yet.
    assert {key.name for key in GROUP_CONFIG_KEYS} - {key.name for key in store.definitions} == {
        "share.assignment.interval.ms"
    }


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
