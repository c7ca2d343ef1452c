"""``kshare list`` as an operator runs it: rows on stdout, nothing on stderr, exit 0.

The groups are made by confluent-kafka share consumers (``share_groups``); the
listing is checked in every output format, the structured ones against the
JSON Schemas of ``docs/schemas/``. Connection settings come from flags, a
profile, the environment, and ``--command-config`` files for every security
protocol, written as an operator writes them for kafka-share-groups.sh.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import yaml
from confluent_kafka import ShareConsumer

from tests.cli.conftest import (
    Kshare,
    ShareGroups,
    validate,
    write_properties,
)
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import (
    TRUSTSTORE_PASSWORD,
    USERS,
    SecureSandbox,
    TlsMaterial,
    librdkafka_config,
)
from tests.support.waiting import wait_for


def rows(stdout: str) -> dict[str, list[str]]:
    """Table or plain lines keyed by their first cell."""
    return {line.split()[0]: line.split() for line in stdout.splitlines() if line.strip()}


# --------------------------------------------------------------------------- formats


def test_table_shows_each_group_with_its_state(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("list")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    table = rows(result.stdout)
    assert table["GROUP"] == ["GROUP", "STATE"]
    assert table[share_groups.live] == [share_groups.live, "Stable"]
    assert table[share_groups.drained] == [share_groups.drained, "Empty"]
    assert share_groups.missing not in result.stdout


def test_plain_is_kafkas_bare_group_ids_sorted(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("list", "-o", "plain")
    assert result.exit_code == 0 and result.stderr == ""
    ids = result.stdout.splitlines()
    assert {share_groups.live, share_groups.drained} <= set(ids)
    assert ids == sorted(ids)
    assert share_groups.missing not in ids


def test_state_all_plain_is_kafkas_group_state_layout(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    result = kshare.run("list", "--state", "all", "-o", "plain")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    listed = [line.split()[0] for line in lines[1:]]
    # printGroupInfo: the GROUP column is as wide as the longest id, at least 15.
    width = max(15, *(len(group_id) for group_id in listed))
    assert lines[0] == f"{'GROUP':<{width}} STATE"
    assert f"{share_groups.live:<{width}} Stable" in lines
    assert f"{share_groups.drained:<{width}} Empty" in lines
    assert listed == sorted(listed)


def test_state_filter_keeps_only_groups_in_that_state(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    result = kshare.run("list", "--state", "Stable", "-o", "json")
    assert result.exit_code == 0 and result.stderr == ""
    document = json.loads(result.stdout)
    validate(document, "list.schema.json")
    assert document["states_filter"] == ["Stable"]
    states = {group["group_id"]: group["state"] for group in document["groups"]}
    assert states[share_groups.live] == "Stable"
    assert share_groups.drained not in states
    assert set(states.values()) == {"Stable"}

    both = kshare.run("list", "--state", "empty", "--state", "STABLE", "-o", "plain")
    assert both.exit_code == 0
    table = rows(both.stdout)
    assert table[share_groups.live][1] == "Stable"
    assert table[share_groups.drained][1] == "Empty"


def test_json_is_the_documented_document(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("list", "-o", "json")
    assert result.exit_code == 0 and result.stderr == ""
    document = json.loads(result.stdout)
    validate(document, "list.schema.json")
    assert document["states_filter"] == [] and document["broker_errors"] == []
    assert {"group_id": share_groups.live, "state": "Stable"} in document["groups"]
    assert {"group_id": share_groups.drained, "state": "Empty"} in document["groups"]
    ids = [group["group_id"] for group in document["groups"]]
    assert ids == sorted(ids)


def test_jsonl_csv_and_yaml_carry_the_same_rows(kshare: Kshare, share_groups: ShareGroups) -> None:
    ours = {share_groups.live: "Stable", share_groups.drained: "Empty"}

    jsonl = kshare.run("list", "-o", "jsonl")
    assert jsonl.exit_code == 0 and jsonl.stderr == ""
    objects = [json.loads(line) for line in jsonl.stdout.splitlines()]
    for item in objects:
        validate(item, "list-row.schema.json")
    assert {o["group_id"]: o["state"] for o in objects if o["group_id"] in ours} == ours

    as_csv = kshare.run("list", "-o", "csv")
    assert as_csv.exit_code == 0 and as_csv.stderr == ""
    table = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert table[0] == ["group_id", "state"]
    assert {row[0]: row[1] for row in table[1:] if row[0] in ours} == ours

    as_yaml = kshare.run("list", "-o", "yaml")
    assert as_yaml.exit_code == 0 and as_yaml.stderr == ""
    document = yaml.safe_load(as_yaml.stdout)
    validate(document, "list.schema.json")
    assert {g["group_id"]: g["state"] for g in document["groups"] if g["group_id"] in ours} == ours


def test_console_script_end_to_end(kshare: Kshare, share_groups: ShareGroups) -> None:
    """The installed ``kshare`` script, as cron or CI runs it: JSON on stdout, nothing else."""
    completed = kshare.subprocess("list", "-o", "json")
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    document = json.loads(completed.stdout)
    validate(document, "list.schema.json")
    assert {"group_id": share_groups.live, "state": "Stable"} in document["groups"]


# ------------------------------------------------------------- where the cluster comes from


def test_current_profile_replaces_the_connection_flags(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    add = ["profile", "add", "prod", "--bootstrap-server", kshare.bootstrap, "--use"]
    if kshare.command_config is not None:
        add += ["--command-config", str(kshare.command_config)]
    added = kshare.run(*add, connect=False)
    assert added.exit_code == 0, added.stderr
    assert "made it current" in added.stderr

    listed = kshare.run("list", "-o", "plain", connect=False)
    assert listed.exit_code == 0, listed.stderr
    assert share_groups.live in listed.stdout.splitlines()

    # The real script, reading the same profile file.
    completed = kshare.subprocess("list", "-o", "plain", connect=False)
    assert completed.returncode == 0, completed.stderr
    assert share_groups.live in completed.stdout.splitlines()


def test_bootstrap_from_the_environment(kshare: Kshare, share_groups: ShareGroups) -> None:
    env: dict[str, str | None] = {"KSHARE_BOOTSTRAP_SERVERS": kshare.bootstrap}
    if kshare.command_config is not None:
        env["KSHARE_COMMAND_CONFIG"] = str(kshare.command_config)
    result = kshare.run("list", "-o", "plain", connect=False, env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert share_groups.live in result.stdout.splitlines()


# --------------------------------------------------------------------------- secured clusters


JAAS = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def operator_properties(
    protocol: str,
    material: TlsMaterial,
    *,
    mechanism: str | None = None,
    password: str = USERS["alice"],
    pkcs12_truststore: bool = False,
) -> dict[str, str]:
    """Client properties in Kafka's (Java) names, as kafka-share-groups.sh takes them."""
    properties = {"security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        if pkcs12_truststore:
            properties["ssl.truststore.location"] = str(material.truststore)
            properties["ssl.truststore.password"] = TRUSTSTORE_PASSWORD
            properties["ssl.truststore.type"] = "PKCS12"
        else:
            properties["ssl.truststore.type"] = "PEM"
            properties["ssl.truststore.location"] = str(material.ca_pem)
    if mechanism == "OAUTHBEARER":
        properties["sasl.mechanism"] = mechanism
        properties["sasl.jaas.config"] = (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="alice";'
        )
    elif mechanism is not None:
        properties["sasl.mechanism"] = mechanism
        properties["sasl.jaas.config"] = (
            f'{JAAS[mechanism]} required username="alice" password="{password}";'
        )
    return properties


JoinGroup = Callable[[Mapping[str, object], str], ShareConsumer]


@pytest.fixture
def share_group_on(unique: str) -> Iterator[JoinGroup]:
    """Factory: join a share group on a secured sandbox with confluent-kafka; closed at teardown."""
    consumers: list[ShareConsumer] = []

    def join(config: Mapping[str, object], group: str) -> ShareConsumer:
        consumer = ShareConsumer({**config, "group.id": group, "client.id": f"secure-{unique}"})
        consumer.subscribe([f"secure-topic-{unique}"])
        consumers.append(consumer)
        return consumer

    yield join
    for consumer in consumers:
        consumer.close()


SECURED = [
    pytest.param("SSL", None, False, id="SSL-PEM-truststore"),
    pytest.param("SSL", None, True, id="SSL-PKCS12-truststore"),
    pytest.param("SASL_SSL", "SCRAM-SHA-512", False, id="SASL_SSL-SCRAM-SHA-512"),
    pytest.param("SASL_PLAINTEXT", "PLAIN", False, id="SASL_PLAINTEXT-PLAIN"),
    pytest.param("SASL_PLAINTEXT", "OAUTHBEARER", False, id="SASL_PLAINTEXT-OAUTHBEARER"),
]


@pytest.mark.parametrize(("protocol", "mechanism", "pkcs12"), SECURED)
def test_list_over_a_secured_listener(
    protocol: str,
    mechanism: str | None,
    pkcs12: bool,
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    share_group_on: JoinGroup,
    unique: str,
    tmp_path: Path,
) -> None:
    mechanisms = (mechanism,) if mechanism else ("PLAIN",)
    sandbox: SandboxThread = secure_sandbox(protocol, mechanisms=mechanisms)
    group = f"secure-group-{unique}"
    consumer = share_group_on(librdkafka_config(sandbox, tls_material, mechanism=mechanism), group)
    config = write_properties(
        tmp_path / "client.properties",
        operator_properties(protocol, tls_material, mechanism=mechanism, pkcs12_truststore=pkcs12),
    )
    kshare = Kshare(sandbox.bootstrap, config, tmp_path / "profiles.toml")

    def listed() -> bool:
        consumer.poll(0.05)  # its first heartbeat creates the group
        result = kshare.run("list", "-o", "plain")
        assert result.exit_code == 0, result.stderr
        assert result.stderr == ""
        return group in result.stdout.splitlines()

    wait_for(listed, timeout=30, interval=0, what=f"{group} listed over {protocol}")
