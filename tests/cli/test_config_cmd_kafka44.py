"""``kshare config`` against Kafka 4.4: the dead-letter-queue configs, as recorded.

The recording ran ``kafka-configs.sh`` on golden-dg, golden-dg2 and golden-dh
(``tests/golden/kafka-4.4/tool-output/kafka-configs/``); the same changes made
with kshare on a sandbox in its 4.4 profile must print the same ``-o plain``
bytes, refuse what Kafka refused with Kafka's reason (exit 2, nothing sent), and
warn -- exit 0 -- where Kafka accepts a setting it will not act on: a DLQ name
without the cluster's prefix, a DLQ topic that does not exist while auto-create
is off, a topic without ``errors.deadletterqueue.group.enable=true``, a cluster
whose ``share.version`` is 1. The 4.2 profile's outputs are
``test_config_cmd.py``'s.

``kafka_44`` starts a sandbox in its Kafka 4.4 profile (``share.version`` 2
unless asked for 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

from kshare_cli.errors import ExitCode
from kshare_cli.kafka.versions import KafkaVersion
from kshare_cli.sandbox.share import share_groups
from tests.cli.conftest import Kshare, assert_one_error_line, validate
from tests.support.golden import GOLDEN
from tests.support.records import create_topic
from tests.support.sandbox_thread import SandboxThread, kafka_44

RECORDED = GOLDEN.parent / "kafka-4.4" / "tool-output" / "kafka-configs"

#: What the warnings say, in parts a test can look for.
SHARE_VERSION_1 = (
    "kshare: warning: this cluster's share.version is 1: the dead-letter queue needs 2 "
    "(`kafka-features.sh upgrade --feature share.version=2`)"
)
NO_PREFIX = "does not start with the cluster's errors.deadletterqueue.topic.name.prefix 'dlq.'"
NO_TOPIC = "does not exist and errors.deadletterqueue.auto.create.topics.enable is false"
NOT_ENABLED = "does not have errors.deadletterqueue.group.enable=true"


def recorded(name: str) -> str:
    return next(RECORDED.glob(f"{name}-*.out")).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sandbox_44() -> Iterator[SandboxThread]:
    with kafka_44() as sandbox:
        create_topic(
            sandbox,
            "dlq.golden-dg",
            2,
            topic_config={"errors.deadletterqueue.group.enable": "true"},
        )
        create_topic(
            sandbox,
            "dlq.golden-dg2",
            2,
            topic_config={"errors.deadletterqueue.group.enable": "true"},
        )
        yield sandbox


@pytest.fixture
def kshare_44(sandbox_44: SandboxThread, tmp_path: Path) -> Kshare:
    return Kshare(sandbox_44.bootstrap, None, tmp_path / "kshare" / "config.toml")


# --------------------------------------------------------------------------- the recording


def test_the_recorded_dlq_groups_describe_byte_for_byte(kshare_44: Kshare) -> None:
    done = kshare_44.run(
        "config",
        "set",
        "golden-dg",
        "share.auto.offset.reset=earliest",
        "errors.deadletterqueue.topic.name=dlq.golden-dg",
        "-o",
        "plain",
    )
    # The DLQ topic exists with errors.deadletterqueue.group.enable=true, share.version is 2.
    assert (done.exit_code, done.stdout, done.stderr) == (
        0,
        "Completed updating config for group golden-dg.\n",
        "",
    )
    copy = kshare_44.run(
        "config",
        "set",
        "golden-dg2",
        "share.auto.offset.reset=earliest",
        "errors.deadletterqueue.topic.name=dlq.golden-dg2",
        "errors.deadletterqueue.copy.record.enable=true",
    )
    assert (copy.exit_code, copy.stderr) == (0, "")

    for args, name in (
        (["golden-dg", "--all"], "00"),
        (["golden-dg"], "01"),
        (["golden-dg2"], "02"),
    ):
        described = kshare_44.run("config", "get", *args, "-o", "plain")
        assert (described.exit_code, described.stderr) == (0, ""), args
        assert described.stdout == recorded(name), args


def test_the_recorded_golden_dh_runs(kshare_44: Kshare) -> None:
    """Runs 03-10: set, describe, the two refusals, the accepted name without prefix, delete."""
    done = kshare_44.run(
        "config",
        "set",
        "golden-dh",
        "errors.deadletterqueue.topic.name=dlq.golden-dh",
        "errors.deadletterqueue.copy.record.enable=true",
        "-o",
        "plain",
    )
    assert (done.exit_code, done.stdout) == (0, recorded("03"))
    # Kafka said nothing; kshare says the broker will write no dead letters there yet.
    line = assert_one_error_line(
        done.stderr, "kshare: warning: DLQ topic 'dlq.golden-dh'", NO_TOPIC
    )
    assert line.endswith("until it is created with errors.deadletterqueue.group.enable=true")
    assert kshare_44.run("config", "get", "golden-dh", "-o", "plain").stdout == recorded("04")

    reserved = kshare_44.run(
        "config", "set", "golden-dh", "errors.deadletterqueue.topic.name=__golden-dh"
    )
    assert (reserved.exit_code, reserved.stdout) == (ExitCode.USAGE, "")
    reason = assert_one_error_line(reserved.stderr).removeprefix("kshare: error: ")
    assert f"InvalidConfigurationException: {reason}\n" in (
        RECORDED / "05-alter-golden-dh-dlq-name-reserved.err"
    ).read_text(encoding="utf-8")

    not_boolean = kshare_44.run(
        "config", "set", "golden-dh", "errors.deadletterqueue.copy.record.enable=yes"
    )
    assert (not_boolean.exit_code, not_boolean.stdout) == (ExitCode.USAGE, "")
    reason = assert_one_error_line(not_boolean.stderr).removeprefix("kshare: error: ")
    assert f"InvalidConfigurationException: {reason}\n" in (
        RECORDED / "06-alter-golden-dh-copy-record-not-boolean.err"
    ).read_text(encoding="utf-8")

    without_prefix = kshare_44.run(
        "config", "set", "golden-dh", "errors.deadletterqueue.topic.name=golden-dh-dead"
    )
    assert (without_prefix.exit_code, without_prefix.stdout) == (
        0,
        "Completed updating config for group golden-dh.\n",
    )
    warnings = without_prefix.stderr.splitlines()
    assert len(warnings) == 2, without_prefix.stderr
    assert warnings[0].startswith(
        "kshare: warning: errors.deadletterqueue.topic.name=golden-dh-dead " + NO_PREFIX
    )
    assert "checks the prefix only when it writes a dead letter" in warnings[0]
    assert NO_TOPIC in warnings[1]
    assert kshare_44.run("config", "get", "golden-dh", "--all", "-o", "plain").stdout == recorded(
        "08"
    )

    deleted = kshare_44.run(
        "config",
        "unset",
        "golden-dh",
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.copy.record.enable",
        "-o",
        "plain",
    )
    assert (deleted.exit_code, deleted.stdout, deleted.stderr) == (0, recorded("09"), "")
    after = kshare_44.run("config", "get", "golden-dh", "-o", "plain")
    assert (after.exit_code, after.stdout, after.stderr) == (0, recorded("10"), "")


def test_the_table_and_json_show_the_dlq_configs(kshare_44: Kshare) -> None:
    assert (
        kshare_44.run(
            "config", "set", "golden-dj", "errors.deadletterqueue.topic.name=dlq.golden-dg"
        ).exit_code
        == 0
    )
    result = kshare_44.run("config", "get", "golden-dj", "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "group-configs.schema.json")
    configs = {config["name"]: config for config in document["configs"]}
    assert (configs["errors.deadletterqueue.topic.name"]["value"],
            configs["errors.deadletterqueue.topic.name"]["source"]) == (
        "dlq.golden-dg", "DYNAMIC_GROUP_CONFIG")  # fmt: skip
    assert configs["errors.deadletterqueue.copy.record.enable"]["value"] == "false"
    assert all(name.startswith(("share.", "errors.deadletterqueue.")) for name in configs)
    table = kshare_44.run("config", "get", "golden-dj")
    assert table.exit_code == 0, table.stderr
    rows = {line.split()[0]: line.split()[1:] for line in table.stdout.splitlines()[2:]}
    assert rows["errors.deadletterqueue.topic.name"] == ["dlq.golden-dg", "DYNAMIC_GROUP_CONFIG"]
    assert rows["errors.deadletterqueue.copy.record.enable"] == ["false", "DEFAULT_CONFIG"]
    assert rows["share.delivery.count.limit"] == ["5", "DEFAULT_CONFIG"]


def test_a_topic_without_group_enable_is_named(
    kshare_44: Kshare, sandbox_44: SandboxThread
) -> None:
    create_topic(sandbox_44, "dlq.plain", 2)
    result = kshare_44.run(
        "config", "set", "golden-dk", "errors.deadletterqueue.topic.name=dlq.plain"
    )
    assert (result.exit_code, result.stdout) == (
        0,
        "Completed updating config for group golden-dk.\n",
    )
    line = assert_one_error_line(
        result.stderr, "kshare: warning: DLQ topic 'dlq.plain'", NOT_ENABLED
    )
    assert "kafka-configs.sh --entity-type topics --entity-name dlq.plain --alter" in line

    # The fix the warning names, made the way Kafka's tool makes it, silences it.
    admin = AdminClient({"bootstrap.servers": sandbox_44.bootstrap})

    def alter(value: str) -> None:
        entry = ConfigEntry(
            "errors.deadletterqueue.group.enable",
            value,
            incremental_operation=AlterConfigOpType.SET,
        )
        resource = ConfigResource(
            ConfigResource.Type.TOPIC, "dlq.plain", incremental_configs=[entry]
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)

    # Kafka's refusal of a value that is not a boolean (the recorded run 12).
    with pytest.raises(KafkaException) as refused:
        alter("maybe")
    assert f"InvalidConfigurationException: {refused.value.args[0].str()}\n" in (
        RECORDED / "12-alter-topic-golden-d-dlq-group-enable-bad.err"
    ).read_text(encoding="utf-8")
    alter("true")
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "dlq.plain")])
    (future,) = described.values()
    entry = future.result(30)["errors.deadletterqueue.group.enable"]
    assert (entry.value, entry.source) == ("true", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    again = kshare_44.run(
        "config", "set", "golden-dk", "errors.deadletterqueue.topic.name=dlq.plain"
    )
    assert (again.exit_code, again.stderr) == (0, "")


# --------------------------------------------------------------------------- other clusters


def test_share_version_1_is_said_plainly(tmp_path: Path) -> None:
    with kafka_44(share_version=1) as sandbox:
        create_topic(
            sandbox, "dlq.g", 2, topic_config={"errors.deadletterqueue.group.enable": "true"}
        )
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
        result = kshare.run("config", "set", "g", "errors.deadletterqueue.topic.name=dlq.g")
        assert (result.exit_code, result.stdout) == (0, "Completed updating config for group g.\n")
        line = assert_one_error_line(result.stderr, SHARE_VERSION_1)
        assert line.endswith("the broker keeps the DLQ configs and ignores them "
                             "(rejected records are archived, nothing is written)")  # fmt: skip
        # Stored all the same, as Kafka stores it.
        described = kshare.run("config", "get", "g", "-o", "plain")
        assert "errors.deadletterqueue.topic.name=dlq.g " in described.stdout

        # A share.* config alone says nothing about the DLQ.
        other = kshare.run("config", "set", "g", "share.isolation.level=read_committed")
        assert (other.exit_code, other.stderr) == (0, "")


def test_auto_create_on_means_a_missing_topic_is_no_warning(tmp_path: Path) -> None:
    with kafka_44() as sandbox:

        def auto_create(broker: Any) -> None:
            # As server.properties would set it.
            configs = share_groups(broker).configs
            configs.static_cluster_configs["errors.deadletterqueue.auto.create.topics.enable"] = (
                "true"
            )

        sandbox.call(auto_create)
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
        result = kshare.run("config", "set", "g", "errors.deadletterqueue.topic.name=dlq.g")
        assert (result.exit_code, result.stderr) == (0, "")


@pytest.mark.parametrize("version", ["4.2", "4.3"])
def test_a_dlq_config_on_a_43_or_42_cluster_names_the_release(
    tmp_path: Path, version: KafkaVersion
) -> None:
    with SandboxThread(kafka_version=version) as sandbox:
        kshare = Kshare(sandbox.bootstrap, None, tmp_path / "config.toml")
        result = kshare.run("config", "set", "g", "errors.deadletterqueue.topic.name=dlq.g")
        assert (result.exit_code, result.stdout) == (ExitCode.USAGE, "")
        assert_one_error_line(
            result.stderr,
            "errors.deadletterqueue.topic.name is not a group config on this cluster",
            "needs Kafka 4.4 or later",
        )
        # The describe is unchanged: no DLQ configs (and on 4.2, 4.2's synonyms).
        everything = kshare.run("config", "get", "g", "--all", "-o", "plain")
        assert "errors.deadletterqueue" not in everything.stdout
        if version == "4.2":
            synonym = "synonyms={DEFAULT_CONFIG:share.session.timeout.ms=45000}"
            assert synonym in everything.stdout
