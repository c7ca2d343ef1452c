"""The sandbox's group configs against Kafka 4.2's recorded DescribeConfigs/IncrementalAlterConfigs.

The golden corpus recorded ``kafka-configs.sh`` altering and describing group
``golden-h`` on a real 4.2.0 broker; the sandbox must give the same entries in the
same order, the same error code and message for an out-of-bounds value, and the
same DEFAULT/DYNAMIC_GROUP sources the tool printed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.group_configs import (
    AlterConfigOpType,
    AutoOffsetReset,
    ConfigSource,
    ConfigType,
    parse_java_duration_ms,
)
from kshare_cli.sandbox.group_configs import (
    BrokerGroupSettings,
    ConfigEntry,
    GroupConfigError,
    GroupConfigStore,
    java_hashmap_order,
)
from tests.support.golden import GOLDEN

SCENARIO_A = GOLDEN / "decoded" / "scenario-a.wire.jsonl"
CONFIGS_TOOL = GOLDEN / "tool-output" / "kafka-configs"

SET = AlterConfigOpType.SET
DELETE = AlterConfigOpType.DELETE


def _line(number: int) -> dict[str, Any]:
    for raw in SCENARIO_A.read_text().splitlines():
        entry: dict[str, Any] = json.loads(raw)
        if entry["line"] == number:
            return entry
    raise AssertionError(f"no line {number} in {SCENARIO_A}")


def _as_wire(entry: ConfigEntry) -> dict[str, Any]:
    """Our entry in the field names Kafka's JSON converter uses for DescribeConfigs v4."""
    return {
        "name": entry.name,
        "value": entry.value,
        "readOnly": entry.read_only,
        "configSource": int(entry.source),
        "isSensitive": entry.is_sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": int(s.source)} for s in entry.synonyms
        ],
        "configType": int(entry.config_type),
        "documentation": entry.documentation,
    }


def _alter_ops(line: dict[str, Any]) -> list[tuple[str, int, str | None]]:
    resource = line["request"]["resources"][0]
    return [(c["name"], c["configOperation"], c["value"]) for c in resource["configs"]]


def _describe_like(store: GroupConfigStore, line: dict[str, Any]) -> list[dict[str, Any]]:
    request = line["request"]
    resource = request["resources"][0]
    entries = store.describe(
        resource["resourceName"],
        resource["configurationKeys"],
        request["includeDocumentation"],
        include_synonyms=request["includeSynonyms"],
    )
    return [_as_wire(e) for e in entries]


def _recorded_configs(line: dict[str, Any]) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = line["response"]["results"][0]["configs"]
    return configs


def test_describe_before_any_alter_matches_recorded_defaults() -> None:
    store = GroupConfigStore()
    recorded = _line(396)
    assert _describe_like(store, recorded) == _recorded_configs(recorded)


def test_alter_then_describe_matches_the_recorded_exchange_field_for_field() -> None:
    store = GroupConfigStore()
    alter = _line(397)
    recorded_response = alter["response"]["responses"][0]
    assert store.incremental_alter("golden-h", _alter_ops(alter), False) == (
        recorded_response["errorCode"],
        recorded_response["errorMessage"],
    )
    with_synonyms = _line(404)
    assert _describe_like(store, with_synonyms) == _recorded_configs(with_synonyms)
    without_synonyms = _line(408)
    assert _describe_like(store, without_synonyms) == _recorded_configs(without_synonyms)


def test_out_of_bounds_lock_duration_is_refused_with_kafkas_code_and_message() -> None:
    store = GroupConfigStore()
    store.incremental_alter("golden-h", _alter_ops(_line(397)), False)
    refused = _line(409)
    recorded = refused["response"]["responses"][0]
    assert recorded["errorCode"] == ErrorCode.invalid_config
    assert store.incremental_alter("golden-h", _alter_ops(refused), False) == (
        recorded["errorCode"],
        recorded["errorMessage"],
    )
    after = _line(413)
    assert _describe_like(store, after) == _recorded_configs(after)
    assert store.record_lock_duration_ms("golden-h") == 20000


def test_tool_output_sources_match_describe_all() -> None:
    """``kafka-configs --describe --all`` printed name=value and DEFAULT/DYNAMIC_GROUP sources."""
    store = GroupConfigStore()
    store.incremental_alter("golden-h", _alter_ops(_line(397)), False)
    printed = (CONFIGS_TOOL / "04-describe-golden-h-all.out").read_text().splitlines()[1:]
    pattern = re.compile(r"  (\S+)=(\S+) sensitive=false synonyms=\{(\w+):(\S+)=(\S+)\}")
    tool_sources = {
        "DEFAULT_CONFIG": ConfigSource.DEFAULT_CONFIG,
        "DYNAMIC_GROUP_CONFIG": ConfigSource.GROUP_CONFIG,
    }
    expected = set()
    for text in printed:
        match = pattern.fullmatch(text)
        assert match is not None, text
        expected.add((match[1], match[2], tool_sources[match[3]]))
    ours = {(e.name, e.value, e.source) for e in store.describe("golden-h", None, False)}
    assert ours == expected


def test_describe_reproduces_java_hashmap_order_and_filters_keys() -> None:
    store = GroupConfigStore()
    names = [e.name for e in store.describe("g", None, False)]
    assert names == java_hashmap_order([d.name for d in store.definitions])
    assert names[:3] == [
        "consumer.session.timeout.ms",
        "streams.heartbeat.interval.ms",
        "share.auto.offset.reset",
    ]
    only = store.describe("g", ["share.record.lock.duration.ms", "no.such.key"], False)
    assert [e.name for e in only] == ["share.record.lock.duration.ms"]


def test_documentation_only_when_asked() -> None:
    store = GroupConfigStore()
    entry = store.describe("g", ["share.record.lock.duration.ms"], True)[0]
    assert entry.documentation == (
        "The record acquisition lock duration in milliseconds for share groups."
    )
    reset = store.describe("g", ["share.auto.offset.reset"], True)[0]
    assert reset.documentation is not None
    assert "by_duration:&lt;duration&gt;" in reset.documentation
    assert reset.config_type == ConfigType.STRING
    assert store.describe("g", ["share.auto.offset.reset"], False)[0].documentation is None


def test_describe_of_empty_group_name_is_invalid_request() -> None:
    with pytest.raises(GroupConfigError) as caught:
        GroupConfigStore().describe("", None, False)
    assert caught.value.error_code == ErrorCode.invalid_request
    assert caught.value.message == "Group name must not be empty"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "share.record.lock.duration.ms",
            "14999",
            "share.record.lock.duration.ms must be greater than or equal to "
            "group.share.min.record.lock.duration.ms",
        ),
        (
            "share.record.lock.duration.ms",
            "60001",
            "share.record.lock.duration.ms must be less than or equal to "
            "group.share.max.record.lock.duration.ms",
        ),
        (
            "share.record.lock.duration.ms",
            "999",
            "Invalid value 999 for configuration share.record.lock.duration.ms: "
            "Value must be at least 1000",
        ),
        (
            "share.record.lock.duration.ms",
            "abc",
            "Invalid value abc for configuration share.record.lock.duration.ms: "
            "Not a number of type INT",
        ),
        (
            "share.record.lock.duration.ms",
            "99999999999",
            "Invalid value 99999999999 for configuration share.record.lock.duration.ms: "
            "Not a number of type INT",
        ),
        (
            "share.session.timeout.ms",
            "44999",
            "share.session.timeout.ms must be greater than or equal to "
            "group.share.min.session.timeout.ms",
        ),
        (
            "share.heartbeat.interval.ms",
            "15001",
            "share.heartbeat.interval.ms must be less than or equal to "
            "group.share.max.heartbeat.interval.ms",
        ),
        (
            "share.isolation.level",
            "serializable",
            "Invalid value serializable for configuration share.isolation.level: "
            "String must be one of: read_committed, read_uncommitted",
        ),
        (
            "share.auto.offset.reset",
            "none",
            "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` "
            "for configuration share.auto.offset.reset. The value must be either 'earliest', "
            "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        ),
        (
            "share.delivery.count.limit",
            "3",
            "Unknown group config name: share.delivery.count.limit",
        ),
        (
            "share.partition.max.record.locks",
            "500",
            "Unknown group config name: share.partition.max.record.locks",
        ),
        (
            "share.renew.acknowledge.enable",
            "false",
            "Unknown group config name: share.renew.acknowledge.enable",
        ),
        (
            "streams.num.standby.replicas",
            "3",
            "streams.num.standby.replicas must be less than or equal to "
            "group.streams.max.standby.replicas",
        ),
    ],
)
def test_invalid_values_are_refused_with_kafka_messages(key: str, value: str, message: str) -> None:
    store = GroupConfigStore()
    assert store.incremental_alter("g", [(key, SET, value)], False) == (
        ErrorCode.invalid_config,
        message,
    )
    assert store.overrides("g") == {}


@pytest.mark.parametrize(
    "value",
    [
        "EARLIEST",
        "by_duration",
        "by_duration:",
        "by_duration:P1Y",
        "by_duration:-PT1H",
        "by_duration:PT",
        "by_duration:P",
        "by_duration:1H",
    ],
)
def test_auto_offset_reset_spellings_kafka_refuses(value: str) -> None:
    code, _ = GroupConfigStore().incremental_alter(
        "g", [("share.auto.offset.reset", SET, value)], False
    )
    assert code == ErrorCode.invalid_config


def test_auto_offset_reset_by_duration_is_parsed_like_java() -> None:
    store = GroupConfigStore()
    assert store.incremental_alter(
        "g", [("share.auto.offset.reset", SET, " by_duration:P1DT2H30M ")], False
    ) == (0, None)
    assert store.auto_offset_reset("g") == "by_duration:P1DT2H30M"
    strategy = store.auto_offset_reset_strategy("g")
    assert strategy == AutoOffsetReset("by_duration", 95_400_000)
    assert strategy.timestamp(100_000_000_000) == 100_000_000_000 - 95_400_000


def test_java_duration_grammar() -> None:
    assert parse_java_duration_ms("PT0.5S") == 500
    assert parse_java_duration_ms("pt1m") == 60_000
    assert parse_java_duration_ms("P2D") == 2 * 86_400_000
    assert parse_java_duration_ms("PT-1.5S") == -1500
    assert parse_java_duration_ms("-PT1H") == -3_600_000
    assert parse_java_duration_ms("P1W") is None
    assert parse_java_duration_ms("PT1H2") is None


def test_earliest_and_latest_timestamps() -> None:
    store = GroupConfigStore()
    assert store.auto_offset_reset("g") == "latest"
    assert store.auto_offset_reset_strategy("g").timestamp(123) == -1
    store.incremental_alter("g", [("share.auto.offset.reset", SET, "earliest")], False)
    assert store.auto_offset_reset_strategy("g").timestamp(123) == -2


def test_alter_is_all_or_nothing_and_validate_only_stores_nothing() -> None:
    store = GroupConfigStore()
    code, message = store.incremental_alter(
        "g",
        [
            ("share.auto.offset.reset", SET, "earliest"),
            ("share.record.lock.duration.ms", SET, "999999999"),
        ],
        False,
    )
    assert code == ErrorCode.invalid_config
    assert message is not None and message.startswith("share.record.lock.duration.ms")
    assert store.auto_offset_reset("g") == "latest"
    assert store.incremental_alter("g", [("share.auto.offset.reset", SET, "earliest")], True) == (
        0,
        None,
    )
    assert store.auto_offset_reset("g") == "latest"
    assert store.configured_groups() == []


def test_delete_returns_a_key_to_its_default() -> None:
    store = GroupConfigStore()
    store.incremental_alter("g", [("share.record.lock.duration.ms", SET, "20000")], False)
    entry = store.describe("g", ["share.record.lock.duration.ms"], False)[0]
    assert (entry.value, entry.source) == ("20000", ConfigSource.GROUP_CONFIG)
    assert store.incremental_alter(
        "g", [("share.record.lock.duration.ms", DELETE, None)], False
    ) == (0, None)
    entry = store.describe("g", ["share.record.lock.duration.ms"], False)[0]
    assert (entry.value, entry.source) == ("30000", ConfigSource.DEFAULT_CONFIG)
    assert store.configured_groups() == []


def test_request_level_errors() -> None:
    store = GroupConfigStore()
    key = "share.isolation.level"
    assert store.incremental_alter(
        "g", [(key, SET, "read_committed"), (key, DELETE, None)], False
    ) == (ErrorCode.invalid_request, "Error due to duplicate config keys")
    assert store.incremental_alter("g", [(key, SET, None)], False) == (
        ErrorCode.invalid_request,
        "Null value not supported for : share.isolation.level",
    )
    assert store.incremental_alter("g", [(key, AlterConfigOpType.APPEND, "x")], False) == (
        ErrorCode.invalid_config,
        "Can't APPEND to key share.isolation.level because its type is not LIST.",
    )
    assert store.incremental_alter("", [(key, SET, "read_committed")], False) == (
        ErrorCode.invalid_request,
        "Default group resources are not allowed.",
    )


def test_session_must_exceed_heartbeat() -> None:
    broker = BrokerGroupSettings(
        share_min_session_timeout_ms=1000,
        share_min_heartbeat_interval_ms=1000,
    )
    store = GroupConfigStore(broker)
    assert store.incremental_alter(
        "g",
        [("share.session.timeout.ms", SET, "10000"), ("share.heartbeat.interval.ms", SET, "10000")],
        False,
    ) == (
        ErrorCode.invalid_config,
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms",
    )


def test_broker_defaults_feed_describe_and_getters() -> None:
    broker = BrokerGroupSettings(
        share_session_timeout_ms=3000,
        share_min_session_timeout_ms=1000,
        share_heartbeat_interval_ms=500,
        share_min_heartbeat_interval_ms=100,
        share_record_lock_duration_ms=20000,
        share_delivery_count_limit=3,
        share_partition_max_record_locks=200,
    )
    store = GroupConfigStore(broker)
    described = {e.name: e.value for e in store.describe("g", None, False)}
    assert described["share.session.timeout.ms"] == "3000"
    assert described["share.heartbeat.interval.ms"] == "500"
    assert described["share.record.lock.duration.ms"] == "20000"
    assert store.session_timeout_ms("g") == 3000
    assert store.heartbeat_interval_ms("g") == 500
    assert store.record_lock_duration_ms("g") == 20000
    assert store.delivery_count_limit("g") == 3
    assert store.max_record_locks("g") == 200
    assert store.isolation_level("g") == "read_uncommitted"


def test_42_validates_unset_keys_against_static_defaults_but_43_uses_broker_values() -> None:
    """A broker max below a static default blocks every 4.2 alter; 4.3 fixed that."""
    broker = BrokerGroupSettings(
        share_session_timeout_ms=10000,
        share_min_session_timeout_ms=1000,
        share_max_session_timeout_ms=30000,
    )
    op = [("share.auto.offset.reset", SET, "earliest")]
    assert GroupConfigStore(broker).incremental_alter("g", op, False) == (
        ErrorCode.invalid_config,
        "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms",
    )
    assert GroupConfigStore(broker, kafka_version="4.3").incremental_alter("g", op, False) == (
        0,
        None,
    )


def test_43_group_level_delivery_limit_and_record_locks() -> None:
    store = GroupConfigStore(kafka_version="4.3")
    names = {e.name for e in store.describe("g", None, False)}
    assert {
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.renew.acknowledge.enable",
    } <= names
    assert store.incremental_alter(
        "g",
        [
            ("share.delivery.count.limit", SET, "3"),
            ("share.partition.max.record.locks", SET, "500"),
        ],
        False,
    ) == (0, None)
    assert store.delivery_count_limit("g") == 3
    assert store.max_record_locks("g") == 500
    assert store.delivery_count_limit("other") == 5
    assert store.incremental_alter("g", [("share.delivery.count.limit", SET, "11")], False) == (
        ErrorCode.invalid_config,
        "share.delivery.count.limit must be less than or equal to "
        "group.share.max.delivery.count.limit",
    )
    assert store.incremental_alter("g", [("share.delivery.count.limit", SET, "1")], False) == (
        ErrorCode.invalid_config,
        "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2",
    )
    assert store.incremental_alter(
        "g", [("share.renew.acknowledge.enable", SET, "maybe")], False
    ) == (
        ErrorCode.invalid_config,
        "Invalid value maybe for configuration share.renew.acknowledge.enable: "
        "Expected value to be either true or false",
    )


def test_broker_settings_kafka_would_not_start_with_are_refused() -> None:
    with pytest.raises(ValueError, match="group.share.session.timeout.ms must be greater than or"):
        BrokerGroupSettings(share_session_timeout_ms=1000)
    with pytest.raises(ValueError, match="group.share.max.record.lock.duration.ms"):
        BrokerGroupSettings(share_record_lock_duration_ms=70000)


def test_only_applied_changes_reach_on_change_and_restore_gives_them_back() -> None:
    store = GroupConfigStore()
    saved: list[dict[str, dict[str, str]]] = []
    store.on_change = lambda: saved.append(store.snapshot())
    assert store.incremental_alter("g", [("share.record.lock.duration.ms", SET, "20000")]) == (
        0,
        None,
    )
    store.incremental_alter("g", [("share.isolation.level", SET, "read_committed")], True)
    code, _ = store.incremental_alter("g", [("share.record.lock.duration.ms", SET, "5")])
    assert code == ErrorCode.invalid_config
    assert saved == [{"g": {"share.record.lock.duration.ms": "20000"}}]

    restored = GroupConfigStore()
    # A 4.3-only key (kept by a 4.3 run) is unknown to 4.2 and dropped on restore.
    restored.restore({**saved[-1], "h": {"share.delivery.count.limit": "3"}})
    assert restored.snapshot() == saved[-1]
    assert restored.record_lock_duration_ms("g") == 20000
    restored.incremental_alter("h", [("share.auto.offset.reset", SET, "earliest")])
    assert restored.auto_offset_reset("h") == "earliest"


# --------------------------------------------------------------------------- Kafka 4.4


RECORDED_44 = GOLDEN.parent / "kafka-4.4" / "tool-output" / "kafka-configs"


def _plain(entries: list[ConfigEntry]) -> list[str]:
    """Entries as kafka-configs.sh prints them (its source names, as kshare's converter maps)."""
    names = {
        ConfigSource.GROUP_CONFIG: "DYNAMIC_GROUP_CONFIG",
        ConfigSource.TOPIC_CONFIG: "DYNAMIC_TOPIC_CONFIG",
    }
    return [
        f"  {e.name}={e.value} sensitive=false synonyms={{"
        + ", ".join(f"{names.get(s.source, s.source.name)}:{s.name}={s.value}" for s in e.synonyms)
        + "}"
        for e in sorted(entries, key=lambda entry: entry.name)
    ]


def test_44_describe_all_is_the_recorded_one() -> None:
    store = GroupConfigStore(kafka_version="4.4")
    assert store.incremental_alter(
        "golden-dh",
        [
            ("errors.deadletterqueue.copy.record.enable", SET, "true"),
            ("errors.deadletterqueue.topic.name", SET, "golden-dh-dead"),
        ],
    ) == (0, None)
    recorded = (RECORDED_44 / "08-describe-golden-dh-all.out").read_text().splitlines()[1:]
    assert _plain(store.describe("golden-dh", include_synonyms=True)) == recorded
    assert (store.dlq_topic_name("golden-dh"), store.dlq_copy_record("golden-dh")) == (
        "golden-dh-dead",
        True,
    )
    assert GroupConfigStore(kafka_version="4.3").dlq_topic_name("golden-dh") == ""


def test_44_validates_only_the_keys_set_with_its_messages() -> None:
    store = GroupConfigStore(kafka_version="4.4")
    for ops, message in (
        ([("share.delivery.count.limit", SET, "11")],
         "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
        ([("streams.num.standby.replicas", SET, "3")],
         "streams.num.standby.replicas must be less than or equal to 2"),
        ([("errors.deadletterqueue.topic.name", SET, "__golden-dh")],
         "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"),
    ):  # fmt: skip
        assert store.incremental_alter("g", ops) == (ErrorCode.invalid_config, message)
    # A broker whose lock-duration maximum is below the static default: 4.4 does not care
    # about a key the group leaves unset (4.2 refused every alter, see above).
    low = GroupConfigStore(
        BrokerGroupSettings(
            share_record_lock_duration_ms=20000, share_max_record_lock_duration_ms=20000
        ),
        kafka_version="4.4",
    )
    assert low.incremental_alter("g", [("share.auto.offset.reset", SET, "earliest")]) == (0, None)


def test_44_dlq_cluster_configs_static_and_dynamic_defaults() -> None:
    store = GroupConfigStore(kafka_version="4.4")
    assert (store.dlq_topic_name_prefix, store.dlq_auto_create_topics) == ("dlq.", False)
    ops = [
        ("errors.deadletterqueue.auto.create.topics.enable", SET, "true"),
        ("errors.deadletterqueue.topic.name.prefix", SET, "dlq."),
    ]
    assert store.alter_cluster_defaults(ops) == (0, None)
    recorded = (RECORDED_44 / "14-describe-broker-default.out").read_text().splitlines()[1:]
    described = store.describe_cluster_defaults(include_synonyms=True)
    # min.insync.replicas was the controller's, not the recording's: the sandbox has none.
    assert [
        f"  {e.name}={e.value} sensitive=false synonyms={{"
        + ", ".join(f"{s.source.name}:{s.name}={s.value}" for s in e.synonyms)
        + "}"
        for e in described
    ] == [line for line in recorded if "min.insync.replicas" not in line]
    assert store.dlq_auto_create_topics is True
    (flag,) = store.describe_broker(
        ["errors.deadletterqueue.auto.create.topics.enable"], include_synonyms=True
    )
    assert [(s.source, s.value) for s in flag.synonyms] == [
        (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, "true"),
        (ConfigSource.DEFAULT_CONFIG, "false"),
    ]
    deleted = [(name, DELETE, None) for name, _, _ in ops]
    assert store.alter_cluster_defaults(deleted) == (0, None)
    assert store.describe_cluster_defaults() == []
    assert store.alter_cluster_defaults(
        [("errors.deadletterqueue.auto.create.topics.enable", SET, "maybe")]
    ) == (
        ErrorCode.invalid_config,
        "Invalid value maybe for configuration errors.deadletterqueue.auto.create.topics.enable: "
        "Expected value to be either true or false",
    )
    # Static, as in server.properties.
    static = GroupConfigStore(
        kafka_version="4.4", cluster_configs={"errors.deadletterqueue.topic.name.prefix": ""}
    )
    assert static.dlq_topic_name_prefix == ""
    # 4.2 and 4.3 have no DLQ cluster configs.
    assert GroupConfigStore(kafka_version="4.3").cluster_config_names() == ()
    assert GroupConfigStore().alter_cluster_defaults(ops)[0] == ErrorCode.invalid_request


def test_create_topics_checks_the_dlq_flag_as_kafka() -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.support.sandbox_thread import SandboxThread, kafka_44

    def create(bootstrap: str, name: str, value: str) -> str | None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = NewTopic(name, 1, 1, config={"errors.deadletterqueue.group.enable": value})
        (future,) = admin.create_topics([topic]).values()
        try:
            future.result(30)
        except Exception as error:  # noqa: BLE001 -- the refusal is what is asserted
            return str(error.args[0].str())
        return None

    with SandboxThread(kafka_version="4.2") as sandbox:
        assert create(sandbox.bootstrap, "t42", "true") == (
            "Unknown topic config name: errors.deadletterqueue.group.enable"
        )
    with kafka_44() as sandbox:
        assert create(sandbox.bootstrap, "t44", "maybe") == (
            "Invalid value maybe for configuration errors.deadletterqueue.group.enable: "
            "Expected value to be either true or false"
        )
        assert create(sandbox.bootstrap, "dlq.t44", "true") is None
        configs = sandbox.call(lambda broker: dict(broker.topic("dlq.t44").configs))
    assert configs == {"errors.deadletterqueue.group.enable": "true"}
