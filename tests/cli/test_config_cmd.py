"""``kshare config get|set|unset`` against the sandbox (or ``KSHARE_TEST_BOOTSTRAP``).

What an operator sees: Kafka's kafka-configs.sh output byte for byte in ``-o
plain``, every bad value refused before anything is sent (exit 2, one stderr
line, the group's configs unchanged when described afterwards), the broker's own
refusal with its message (exit 1), and ``--dry-run`` changing nothing. The tests
that need broker settings a shared cluster cannot have (a lowered maximum, a
Kafka 4.3 broker) start their own sandbox.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from referencing import Registry, Resource

from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.errors import ExitCode
from kshare_cli.kafka.api_keys import ALTER_SHARE_GROUP_OFFSETS
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.cluster import BrokerNode
from tests.cli.conftest import SCHEMAS, Kshare, assert_one_error_line, validate
from tests.support.golden import GOLDEN
from tests.support.kafka_tools import run_kafka_tool
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.share_offsets import alter_share_group_offsets

CONFIGS_OUTPUT = GOLDEN / "tool-output" / "kafka-configs"


def golden(name: str, group: str) -> str:
    """A recorded kafka-configs.sh stdout, with golden-h replaced by ``group``."""
    text = (CONFIGS_OUTPUT / f"{name}.out").read_text(encoding="utf-8")
    return text.replace("golden-h", group)


def configs_of(kshare: Kshare, group: str, *extra: str) -> dict[str, dict[str, Any]]:
    """``config get -o json``, by name (validated against the schema on the way)."""
    result = kshare.run("config", "get", group, "-o", "json", *extra)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document, "group-configs.schema.json")
    return {config["name"]: config for config in document["configs"]}


def dynamic_of(kshare: Kshare, group: str) -> dict[str, str]:
    return {
        name: config["value"]
        for name, config in configs_of(kshare, group, "--all").items()
        if config["dynamic"]
    }


def validate_def(instance: object, definition: str) -> None:
    import jsonschema

    schema = json.loads((SCHEMAS / "group-configs.schema.json").read_text())
    registry: Registry[Any] = Registry().with_resource(
        schema["$id"], Resource.from_contents(schema)
    )
    jsonschema.Draft202012Validator(
        {"$ref": f"{schema['$id']}#/$defs/{definition}"}, registry=registry
    ).validate(instance)


def own_kshare(sandbox: SandboxThread, tmp_path: Path) -> Kshare:
    return Kshare(sandbox.bootstrap, None, tmp_path / "kshare" / "config.toml")


# --------------------------------------------------------------------------- set, get, unset


def kafka_configs_listing(cluster: Cluster, recording: str, group: str, *args: str) -> str | None:
    """What ``kafka-configs.sh --describe`` prints for ``group``: the 4.2 recording on the
    suite's sandbox (a Kafka 4.2), Kafka's own tool on a real cluster when
    ``KSHARE_TEST_KAFKA_HOME`` names one (each release lists other configs and synonyms),
    else None: no source can say the bytes."""
    if cluster.sandbox is not None:
        return golden(recording, group)
    run = run_kafka_tool(
        "kafka-configs", "--entity-type", "groups", "--entity-name", group, "--describe", *args
    )
    if run is None:
        return None
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_set_then_get_is_kafka_configs_byte_for_byte(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    group = f"kshare-cfg-{unique}"
    done = kshare.run(
        "config",
        "set",
        group,
        "share.record.lock.duration.ms=20000",
        "share.auto.offset.reset=earliest",
        "-o",
        "plain",
    )
    assert (done.exit_code, done.stderr) == (0, "")
    assert done.stdout == golden("01-alter-golden-h", group)

    for recording, extra, heading in (
        ("02-describe-golden-h", (), "Dynamic"),
        ("04-describe-golden-h-all", ("--all",), "All"),
    ):
        listing = kshare.run("config", "get", group, *extra, "-o", "plain")
        assert (listing.exit_code, listing.stderr) == (0, "")
        expected = kafka_configs_listing(cluster, recording, group, *extra)
        if expected is not None:
            assert listing.stdout == expected
            continue
        # A real cluster of a release without its tools at hand: what every release prints.
        lines = listing.stdout.splitlines()
        assert lines[0] == f"{heading} configs for group {group} are:"
        for name, value in (
            ("share.auto.offset.reset", "earliest"),
            ("share.record.lock.duration.ms", "20000"),
        ):
            dynamic = (
                f"  {name}={value} sensitive=false synonyms={{DYNAMIC_GROUP_CONFIG:{name}={value}"
            )
            assert any(line.startswith(dynamic) for line in lines), listing.stdout

    table = kshare.run("config", "get", group)
    assert table.exit_code == 0, table.stderr
    rows = {line.split()[0]: line.split()[1:] for line in table.stdout.splitlines()[2:]}
    assert rows["share.record.lock.duration.ms"] == ["20000", "DYNAMIC_GROUP_CONFIG"]
    assert rows["share.auto.offset.reset"] == ["earliest", "DYNAMIC_GROUP_CONFIG"]
    assert rows["share.isolation.level"] == ["read_uncommitted", "DEFAULT_CONFIG"]
    assert not any(name.startswith(("consumer.", "streams.")) for name in rows)


def test_unset_restores_the_default(kshare: Kshare, unique: str) -> None:
    group = f"kshare-cfg-unset-{unique}"
    done = kshare.run(
        "config",
        "set",
        group,
        "share.record.lock.duration.ms=20000",
        "share.isolation.level=read_committed",
    )
    assert (done.exit_code, done.stdout) == (0, f"Completed updating config for group {group}.\n")
    assert dynamic_of(kshare, group) == {
        "share.record.lock.duration.ms": "20000",
        "share.isolation.level": "read_committed",
    }

    unset = kshare.run("config", "unset", group, "share.record.lock.duration.ms", "-o", "json")
    assert (unset.exit_code, unset.stderr) == (0, "")
    document = json.loads(unset.stdout)
    validate_def(document, "update")
    assert document["changes"] == [
        {
            "name": "share.record.lock.duration.ms",
            "operation": "delete",
            "value": None,
            "previous_value": "20000",
            "previous_source": "DYNAMIC_GROUP_CONFIG",
        }
    ]
    configs = configs_of(kshare, group)
    assert configs["share.record.lock.duration.ms"]["value"] == "30000"
    assert configs["share.record.lock.duration.ms"]["source"] == "DEFAULT_CONFIG"
    assert dynamic_of(kshare, group) == {"share.isolation.level": "read_committed"}

    # Unsetting what the group does not set changes nothing and says so (Kafka's tool fails).
    again = kshare.run("config", "unset", group, "share.record.lock.duration.ms")
    assert again.exit_code == 0
    assert again.stdout == f"Completed updating config for group {group}.\n"
    assert_one_error_line(again.stderr, "warning", "not set", "already has its default")
    assert dynamic_of(kshare, group) == {"share.isolation.level": "read_committed"}


OUT_OF_BOUNDS = [
    ("share.record.lock.duration.ms", "999", "Value must be at least 1000"),
    (
        "share.record.lock.duration.ms",
        "14999",
        "must be greater than or equal to group.share.min.record.lock.duration.ms (15000 on",
    ),
    (
        "share.record.lock.duration.ms",
        "60001",
        "must be less than or equal to group.share.max.record.lock.duration.ms (60000 on",
    ),
    ("share.session.timeout.ms", "0", "Value must be at least 1"),
    (
        "share.session.timeout.ms",
        "44999",
        "must be greater than or equal to group.share.min.session.timeout.ms (45000 on",
    ),
    (
        "share.session.timeout.ms",
        "60001",
        "must be less than or equal to group.share.max.session.timeout.ms (60000 on",
    ),
    ("share.heartbeat.interval.ms", "0", "Value must be at least 1"),
    (
        "share.heartbeat.interval.ms",
        "4999",
        "must be greater than or equal to group.share.min.heartbeat.interval.ms (5000 on",
    ),
    (
        "share.heartbeat.interval.ms",
        "15001",
        "must be less than or equal to group.share.max.heartbeat.interval.ms (15000 on",
    ),
    ("share.record.lock.duration.ms", "20s", "Not a number of type INT"),
    ("share.isolation.level", "serializable", "String must be one of"),
    ("share.auto.offset.reset", "by_duration:-PT1H", "'by_duration:<PnDTnHnMn.nS>'"),
]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    OUT_OF_BOUNDS,
    ids=[f"{name}={value}" for name, value, _ in OUT_OF_BOUNDS],
)
def test_a_value_out_of_bounds_changes_nothing(
    kshare: Kshare, unique: str, name: str, value: str, message: str
) -> None:
    group = f"kshare-cfg-bounds-{unique}"
    # A valid companion: the update is all or nothing, so it must not be applied either.
    companion = (
        "share.auto.offset.reset=earliest"
        if name != "share.auto.offset.reset"
        else "share.isolation.level=read_committed"
    )
    result = kshare.run("config", "set", group, companion, f"{name}={value}")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error:", name, message)
    assert dynamic_of(kshare, group) == {}


def test_dry_run_changes_nothing(kshare: Kshare, unique: str) -> None:
    group = f"kshare-cfg-dry-{unique}"
    dry = kshare.run("config", "set", group, "share.record.lock.duration.ms=20000", "--dry-run")
    assert (dry.exit_code, dry.stderr) == (0, "")
    lines = dry.stdout.splitlines()
    assert lines[2].split() == [
        "share.record.lock.duration.ms",
        "SET",
        "30000",
        "DEFAULT_CONFIG",
        "20000",
    ]
    assert (
        lines[-1]
        == f"Dry run: the broker accepted the update of group {group}; nothing was changed."
    )
    assert dynamic_of(kshare, group) == {}

    assert kshare.run("config", "set", group, "share.isolation.level=read_committed").exit_code == 0
    dry_unset = kshare.run(
        "config", "unset", group, "share.isolation.level", "--dry-run", "-o", "jsonl"
    )
    assert (dry_unset.exit_code, dry_unset.stderr) == (0, "")
    (row,) = [json.loads(line) for line in dry_unset.stdout.splitlines()]
    validate_def(row, "update_row")
    assert (row["operation"], row["previous_value"], row["dry_run"]) == (
        "delete",
        "read_committed",
        True,
    )
    assert dynamic_of(kshare, group) == {"share.isolation.level": "read_committed"}


def test_get_formats_follow_the_schema(kshare: Kshare, unique: str) -> None:
    group = f"kshare-cfg-formats-{unique}"
    done = kshare.run("config", "set", group, "share.session.timeout.ms=50000", "-o", "jsonl")
    assert done.exit_code == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    validate_def(row, "update_row")
    assert (row["value"], row["previous_value"], row["dry_run"]) == ("50000", "45000", False)

    configs = configs_of(kshare, group)
    assert configs["share.session.timeout.ms"]["value"] == "50000"
    # The share-group configs, and Kafka 4.4's dead-letter queue's where the broker has them.
    assert all(name.startswith(("share.", "errors.deadletterqueue.")) for name in configs)
    jsonl = kshare.run("config", "get", group, "-o", "jsonl")
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    for item in rows:
        validate_def(item, "config_row")
    assert [item["name"] for item in rows] == sorted(configs)
    table = list(csv.reader(io.StringIO(kshare.run("config", "get", group, "-o", "csv").stdout)))
    assert table[0][:4] == ["group_id", "name", "value", "source"]
    assert ["share.session.timeout.ms", "50000", "DYNAMIC_GROUP_CONFIG"] in [r[1:4] for r in table]
    import yaml

    yaml_document = yaml.safe_load(kshare.run("config", "get", group, "-o", "yaml").stdout)
    validate(yaml_document, "group-configs.schema.json")


# --------------------------------------------------------------------------- groups


def test_a_group_that_neither_exists_nor_has_configs(kshare: Kshare, unique: str) -> None:
    group = f"kshare-cfg-nobody-{unique}"
    plain = kshare.run("config", "get", group, "-o", "plain")
    assert (plain.exit_code, plain.stderr) == (0, "")
    assert plain.stdout == f"The group '{group}' doesn't exist and doesn't have dynamic config.\n"
    table = kshare.run("config", "get", group)
    assert table.exit_code == 0
    assert "share.record.lock.duration.ms" in table.stdout
    assert_one_error_line(table.stderr, "warning", "does not exist", "defaults")


def test_an_existing_group_without_configs_has_none_of_its_own(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    group, topic = f"kshare-cfg-empty-{unique}", f"kshare-cfg-t-{unique}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    config = os.environ.get("KSHARE_TEST_COMMAND_CONFIG") if cluster.sandbox is None else None
    settings = resolve_settings(
        bootstrap=cluster.bootstrap,
        command_config=Path(config) if config else None,
        profile=None,
        environ={},
    )

    async def make_group() -> None:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            await alter_share_group_offsets(client, group, {topic: [0]})

    asyncio.run(make_group())
    plain = kshare.run("config", "get", group, "-o", "plain")
    assert (plain.exit_code, plain.stdout, plain.stderr) == (
        0,
        f"Dynamic configs for group {group} are:\n",
        "",
    )
    table = kshare.run("config", "get", group)
    assert (table.exit_code, table.stderr) == (0, "")


def test_a_group_altered_only_on_unknown_topics_is_not_made(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    """Kafka 4.2 persists the new group only with a known topic (alterShareGroupOffsets)."""
    group, topic = f"kshare-cfg-none-{unique}", f"kshare-cfg-missing-{unique}"
    config = os.environ.get("KSHARE_TEST_COMMAND_CONFIG") if cluster.sandbox is None else None
    settings = resolve_settings(
        bootstrap=cluster.bootstrap,
        command_config=Path(config) if config else None,
        profile=None,
        environ={},
    )

    async def alter() -> list[int]:
        async with await KafkaClient.connect(settings, timeout_s=15) as client:
            coordinator = (await client.find_coordinators([group]))[group]
            assert isinstance(coordinator, BrokerNode), coordinator
            body = {
                "group_id": group,
                "topics": [
                    {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 0}]}
                ],
            }
            _, response = await client.request(
                ALTER_SHARE_GROUP_OFFSETS, body, node=coordinator.node_id
            )
            assert int(response.error_code) == 0, response
            return [int(p.error_code) for t in response.responses for p in t.partitions]

    assert asyncio.run(alter()) == [ErrorCode.unknown_topic_or_partition]
    plain = kshare.run("config", "get", group, "-o", "plain")
    assert (plain.exit_code, plain.stdout, plain.stderr) == (
        0,
        f"The group '{group}' doesn't exist and doesn't have dynamic config.\n",
        "",
    )


# --------------------------------------------------------------------------- usage errors


USAGE = [
    (["set", "g", "share.lock.ms=1"], ["unknown share-group config 'share.lock.ms'", "valid keys"]),
    (["set", "g", "share.record.lock.duration.ms"], ["expected KEY=VALUE"]),
    (["set", "g", "=20000"], ["expected KEY=VALUE"]),
    (["set", "g", "consumer.session.timeout.ms=50000"], ["consumer-group config", "share.*"]),
    (["set", "g", "streams.num.standby.replicas=1"], ["streams-group config"]),
    (
        [
            "set",
            "g",
            "share.isolation.level=read_committed",
            "share.isolation.level=read_uncommitted",
        ],
        ["given more than once"],
    ),
    (["set", "g", "share.renew.acknowledge.enable=yes"], ["either true or false"]),
    (["set", "", "share.isolation.level=read_committed"], ["group id cannot be empty"]),
    (["unset", "g", "share.isolation.level=read_committed"], ["not KEY=VALUE"]),
    (["unset", "g", "share.nothing"], ["unknown share-group config"]),
]


@pytest.mark.parametrize(("args", "fragments"), USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_bad_input_is_a_usage_error_before_anything_is_sent(
    kshare: Kshare, args: list[str], fragments: list[str]
) -> None:
    # Port 1 answers nothing: a command that tried to connect would exit 3, not 2.
    result = kshare.run("config", *args, "-b", "127.0.0.1:1", connect=False)
    assert result.exit_code == ExitCode.USAGE, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error:", *fragments)


def test_a_43_key_on_a_42_cluster_is_named(kshare: Kshare, unique: str) -> None:
    group = f"kshare-cfg-43-{unique}"
    if "share.delivery.count.limit" in configs_of(kshare, group):
        pytest.skip("on a real cluster: this broker is Kafka 4.3+, which has the key")
    result = kshare.run("config", "set", group, "share.delivery.count.limit=3")
    assert result.exit_code == ExitCode.USAGE
    assert_one_error_line(result.stderr, "share.delivery.count.limit", "needs Kafka 4.3")
    assert dynamic_of(kshare, group) == {}


# --------------------------------------------------------------------------- own brokers


def test_the_brokers_bounds_and_the_brokers_own_refusal(tmp_path: Path, unique: str) -> None:
    """A broker whose record-lock maximum (20000) is below Kafka 4.2's static default 30000.

    kshare reads that maximum from the broker (exit 2 for 25000, naming 20000). The
    broker itself refuses any update of a group that does not set its own lock
    duration: 4.2 validates the keys a group leaves unset against the static
    defaults. kshare shows the broker's message and exits 1; nothing changes.
    """
    settings = BrokerGroupSettings(
        share_record_lock_duration_ms=20000, share_max_record_lock_duration_ms=20000
    )
    group = f"kshare-cfg-refusal-{unique}"
    with SandboxThread(settings=settings, kafka_version="4.2") as sandbox:
        kshare = own_kshare(sandbox, tmp_path)
        above = kshare.run("config", "set", group, "share.record.lock.duration.ms=25000")
        assert above.exit_code == ExitCode.USAGE
        assert_one_error_line(
            above.stderr, "group.share.max.record.lock.duration.ms (20000 on broker 1)"
        )

        refusal = (
            "kshare: error: the broker refused to update group "
            f"'{group}': INVALID_CONFIG: share.record.lock.duration.ms must be less than or "
            "equal to group.share.max.record.lock.duration.ms"
        )
        for extra in ([], ["--dry-run"]):
            refused = kshare.run("config", "set", group, "share.auto.offset.reset=earliest", *extra)
            assert (refused.exit_code, refused.stdout) == (ExitCode.PARTIAL, "")
            assert assert_one_error_line(refused.stderr) == refusal
        assert dynamic_of(kshare, group) == {}

        accepted = kshare.run(
            "config",
            "set",
            group,
            "share.record.lock.duration.ms=18000",
            "share.auto.offset.reset=earliest",
        )
        assert (accepted.exit_code, accepted.stderr) == (0, "")
        assert dynamic_of(kshare, group) == {
            "share.record.lock.duration.ms": "18000",
            "share.auto.offset.reset": "earliest",
        }


def test_the_43_keys_on_a_43_broker(tmp_path: Path, unique: str) -> None:
    group = f"kshare-cfg-43-{unique}"
    with SandboxThread(kafka_version="4.3") as sandbox:
        kshare = own_kshare(sandbox, tmp_path)
        done = kshare.run(
            "config",
            "set",
            group,
            "share.delivery.count.limit=3",
            "share.partition.max.record.locks=150",
            "share.renew.acknowledge.enable=false",
        )
        assert (done.exit_code, done.stderr) == (0, "")
        assert dynamic_of(kshare, group) == {
            "share.delivery.count.limit": "3",
            "share.partition.max.record.locks": "150",
            "share.renew.acknowledge.enable": "false",
        }
        for pair, bound in (
            ("share.delivery.count.limit=11",
             "group.share.max.delivery.count.limit (10 on broker 1)"),
            ("share.delivery.count.limit=1", "Value must be at least 2"),
            ("share.partition.max.record.locks=4001",
             "group.share.max.partition.max.record.locks (4000 on broker 1)"),
            ("share.partition.max.record.locks=99", "Value must be at least 100"),
        ):  # fmt: skip
            refused = kshare.run("config", "set", group, pair)
            assert refused.exit_code == ExitCode.USAGE, pair
            assert_one_error_line(refused.stderr, bound)
        unset = kshare.run("config", "unset", group, "share.delivery.count.limit")
        assert unset.exit_code == 0, unset.stderr
        after = configs_of(kshare, group)
        assert (
            after["share.delivery.count.limit"]["value"],
            after["share.delivery.count.limit"]["source"],
        ) == ("5", "DEFAULT_CONFIG")
        assert after["share.partition.max.record.locks"]["value"] == "150"


# --------------------------------------------------------------------------- startup


def test_config_help_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['kshare', 'config', 'set', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('asyncio', 'kio', 'rich', 'kshare_cli.wire', 'kshare_cli.admin',\n"
        "         'kshare_cli.render', 'kshare_cli.connect', 'kshare_cli.sandbox')\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert "KEY=VALUE" in result.stdout
    assert result.stderr == "[]"
