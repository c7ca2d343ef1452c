"""``kshare consume`` as an operator runs it: options, exit codes, Kafka's output, the prompt.

Bad options are refused with one stderr line and exit 2 before anything connects
(the bootstrap given is a closed port: a command that tried to connect would exit
3). The runs that join a group use a sandbox with fast heartbeats (or the cluster
``KSHARE_TEST_BOOTSTRAP`` names); the golden run reproduces, byte for byte, what
Kafka 4.2's ``kafka-console-share-consumer.sh`` printed for the same six records.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kshare_cli.kafka.api_keys import SHARE_ACKNOWLEDGE, SHARE_FETCH
from kshare_cli.sandbox.group_configs import BrokerGroupSettings
from kshare_cli.sandbox.share_consumer_rpcs import carries_acknowledgements
from tests.cli.conftest import (
    KSHARE,
    Kshare,
    assert_one_error_line,
    process_env,
    write_properties,
)
from tests.cli.test_produce_cmd import GIVES_UP_EARLY, silent_listener
from tests.support.consume_beds import (
    FAST_HEARTBEAT_MS,
    FIRST_RECORD_MS,
    Bed,
    Record,
    drain,
    mock_bed,
    sandbox_bed,
    values,
)
from tests.support.golden import GOLDEN, read_jsonl
from tests.support.rdkafka_mock import RdkafkaMockCluster
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import USERS, SecureSandbox, TlsMaterial, librdkafka_config
from tests.support.waiting import wait_for

CONSOLE = GOLDEN / "tool-output" / "console-share-consumer"
NOWHERE = "127.0.0.1:1"  # nothing listens: a command that connected would exit 3


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    with sandbox_bed() as sandbox:
        yield sandbox


@pytest.fixture
def fast(bed: Bed, tmp_path: Path) -> Kshare:
    """``kshare`` against the fast bed (``run``/``subprocess`` add its connection options)."""
    args = bed.kshare_args(tmp_path)
    config = Path(args[3]) if len(args) > 2 else None
    return Kshare(bed.bootstrap, config, tmp_path / "kshare" / "config.toml")


def _run(kshare: Kshare, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """The console script with bytes out (records are bytes), connection options added."""
    return subprocess.run(
        [str(KSHARE), "consume", *args, *kshare.connection_args()],
        capture_output=True,
        env=process_env(kshare.environment()),
        timeout=timeout,
        check=False,
    )


def _offsets_view(kshare: Kshare, group: str) -> dict[str, Any]:
    """``kshare describe GROUP -o json``: the group's share-partitions, start offsets and lag."""
    result = kshare.run("describe", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (group_offsets,) = json.loads(result.stdout)["groups"]
    view: dict[str, Any] = group_offsets
    return view


# --------------------------------------------------------------------------- options


def _kafka_options() -> list[str]:
    help_text = (CONSOLE / "00-help.err").read_text()
    return re.findall(r"^(--[a-z][a-z-]*)", help_text, flags=re.MULTILINE)


def test_help_loads_nothing_heavy() -> None:
    """``kshare consume --help`` builds without librdkafka, asyncio or the consumer modules."""
    code = (
        "import sys\n"
        "sys.argv = ['kshare', 'consume', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('asyncio', 'confluent_kafka', 'kshare_cli.consumer', 'kshare_cli.connect')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or "
        "any(m.startswith(h + '.') or m == h for h in heavy)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [str(KSHARE.with_name("python")), "-c", code], capture_output=True, text=True, timeout=60
    )
    assert "--interactive" in result.stdout
    assert result.stderr.strip() == "[]"


def test_help_offers_every_option_of_kafkas_tool(kshare: Kshare) -> None:
    result = kshare.run("consume", "--help", connect=False)
    assert result.exit_code == 0
    # --formatter takes a Java class; --enable-systest-events is for Kafka's system
    # tests; --version and --help are kshare's own, at the top level.
    not_here = {"--formatter", "--enable-systest-events", "--version", "--help"}
    kafka = [option for option in _kafka_options() if option not in not_here]
    assert len(kafka) >= 15
    for option in kafka:
        assert re.search(rf"{option}\b", result.stdout), option


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "--topic"),
        (["-t", "a b"], "topic"),
        (["-t", "t", "--release", "--reject"], "at most one of --reject and --release"),
        (["-t", "t", "--ack", "accept", "--release"], "contradicts --release"),
        (["-t", "t", "--max-messages", "0"], "--max-messages must be at least 1"),
        (["-t", "t", "--timeout-ms", "-5"], "--timeout-ms cannot be negative"),
        (["-t", "t", "--property", "print.key=maybe"], "print.key"),
        (["-t", "t", "--property", "print.colour=true"], "print.colour"),
        (["-t", "t", "--property", "print.key"], "KEY=VALUE"),
        (["-t", "t", "--value-deserializer", "yaml"], "yaml"),
        (["-t", "t", "--value-deserializer", "avro"], "schema registry"),
        (["-t", "t", "--format", "jsonl", "--property", "print.key=true"], "-o text"),
        (["-t", "t", "-g", "a", "--command-property", "group.id=b"], "do not match"),
        (["-t", "t", "--command-property", "share.acknowledgement.mode=implicit"], "explicitly"),
        (["-t", "t", "--command-property", "no.such.property=1"], "no.such.property"),
        (["-t", "t", "--timeout", "soon"], "--timeout"),
        (["-t", "t", "--interactive"], "needs a terminal"),
    ],
)
def test_bad_options_are_refused_before_connecting(
    kshare: Kshare, args: list[str], fragment: str
) -> None:
    result = kshare.run("consume", *args, "-b", NOWHERE, connect=False)
    assert result.exit_code == 2, result.stderr
    line = assert_one_error_line(result.stderr, fragment)
    assert line.startswith("kshare: error: ")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (
            ["-g", "jobs", "--command-property", "auto.offset.reset=earliest"],
            "kshare config set jobs share.auto.offset.reset=earliest",
        ),
        (
            [
                "--consumer-property",
                "group.id=feed",
                "--consumer-property",
                "auto.offset.reset=latest",
            ],
            "kshare config set feed share.auto.offset.reset=latest",
        ),
        (
            ["--command-property", "share.auto.offset.reset=earliest"],
            "kshare config set console-share-consumer share.auto.offset.reset=earliest",
        ),
    ],
    ids=["group-option", "group-property", "share-spelling"],
)
def test_auto_offset_reset_is_refused_pointing_to_the_group_config(
    kshare: Kshare, args: list[str], command: str
) -> None:
    result = kshare.run("consume", "-t", "t", *args, "-b", NOWHERE, connect=False)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    line = assert_one_error_line(result.stderr, "share.auto.offset.reset")
    assert line.startswith("kshare: error: --command-property ")
    assert line.endswith(f": {command}"), line


def test_the_suggested_offset_reset_command_sets_the_group_config(
    kshare: Kshare, unique: str
) -> None:
    group = f"cli-reset-hint-{unique}"
    refused = kshare.run(
        "consume",
        "-t",
        "t",
        "-g",
        group,
        "--command-property",
        "auto.offset.reset=earliest",
        "-b",
        NOWHERE,
        connect=False,
    )
    assert refused.exit_code == 2
    suggested = shlex.split(refused.stderr.strip().rpartition(": ")[2])
    assert suggested[:3] == ["kshare", "config", "set"]
    applied = kshare.run(*suggested[1:])
    assert applied.exit_code == 0, applied.stderr
    shown = kshare.run("config", "get", group, "-o", "json")
    assert shown.exit_code == 0, shown.stderr
    configs = {entry["name"]: entry for entry in json.loads(shown.stdout)["configs"]}
    reset = configs["share.auto.offset.reset"]
    assert (reset["value"], reset["source"]) == ("earliest", "DYNAMIC_GROUP_CONFIG")


def test_the_group_in_the_command_config_must_match(kshare: Kshare, tmp_path: Path) -> None:
    config = write_properties(tmp_path / "consumer.properties", {"group.id": "from-file"})
    result = kshare.run(
        "consume",
        "-t",
        "t",
        "-g",
        "other",
        "--command-config",
        str(config),
        "-b",
        NOWHERE,
        connect=False,
    )
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "'from-file'", "'other'")


# --------------------------------------------------------------------------- failures


def test_unreachable_cluster_is_exit_3(kshare: Kshare) -> None:
    result = kshare.run("consume", "-t", "t", "-b", NOWHERE, connect=False)
    assert result.exit_code == 3
    assert_one_error_line(result.stderr, "cannot connect to 127.0.0.1:1", "refused")


def test_a_broker_that_never_answers_is_exit_4_after_the_timeout(kshare: Kshare) -> None:
    """Even when librdkafka gives up first and says "all brokers are down": not a refusal."""
    with silent_listener() as address:
        started = time.monotonic()
        result = kshare.run(
            "consume", "-t", "t", "-b", address, "--timeout", "2s", *GIVES_UP_EARLY, connect=False
        )
        elapsed = time.monotonic() - started
    assert result.exit_code == 4, result.stderr
    assert_one_error_line(
        result.stderr, f"kshare: error: no metadata from {address} within 2 s (--timeout)"
    )
    assert 2 <= elapsed < 5, elapsed


def test_unknown_topic_is_exit_5_and_joins_nothing(fast: Kshare, bed: Bed) -> None:
    _, group = bed.names("cli-missing")
    result = fast.run("consume", "-t", f"no-such-topic-{group}", "-g", group)
    assert result.exit_code == 5
    assert_one_error_line(result.stderr, "does not exist")
    described = fast.run("describe", group, "--state", "-o", "json")
    assert described.exit_code == 5, described.stdout  # no share group was created


def test_refused_credentials_are_exit_3(
    kshare: Kshare, secure_sandbox: SecureSandbox, tmp_path: Path
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    config = write_properties(
        tmp_path / "bad.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "not-" + USERS["alice"],
        },
    )
    result = kshare.run(
        "consume",
        "-t",
        "t",
        "-b",
        sandbox.bootstrap,
        "--command-config",
        str(config),
        connect=False,
    )
    assert result.exit_code == 3
    line = assert_one_error_line(result.stderr, "uthentication")
    assert USERS["alice"] not in line


def test_consumes_over_sasl_ssl_with_the_command_config(
    kshare: Kshare, secure_sandbox: SecureSandbox, tls_material: TlsMaterial, tmp_path: Path
) -> None:
    """The --command-config that configures TLS and SASL for admin commands serves consume too."""
    sandbox = secure_sandbox(
        "SASL_SSL",
        mechanisms=("SCRAM-SHA-256",),
        settings=BrokerGroupSettings(
            share_heartbeat_interval_ms=FAST_HEARTBEAT_MS,
            share_min_heartbeat_interval_ms=FAST_HEARTBEAT_MS,
        ),
    )
    client = librdkafka_config(sandbox, tls_material, mechanism="SCRAM-SHA-256", username="alice")
    bed = Bed(
        "secure",
        sandbox.bootstrap,
        {k: str(v) for k, v in client.items() if k != "bootstrap.servers"},
    )
    topic, group = bed.names("cli-sasl")
    bed.produce(topic, values(2))
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="alice" password="{USERS["alice"]}";'
            ),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls_material.ca_pem),
        },
    )
    result = kshare.run(
        "consume",
        "-t",
        topic,
        "-g",
        group,
        "--max-messages",
        "2",
        "-b",
        sandbox.bootstrap,
        "--command-config",
        str(config),
        connect=False,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "r-00000\nr-00001\n"
    assert result.stderr == "Processed a total of 2 messages\n"


# --------------------------------------------------------------------------- Kafka's output


# 01 is Kafka's default layout, which kshare writes without building a record object.
#: Every recorded console-share-consumer run (09 and 10 acknowledge with release / reject).
GOLDEN_RUNS = [
    "01-default",
    "02-print-key",
    "03-key-offset-partition-delivery",
    "04-timestamp-headers-key",
    "05-value-false-key",
    "06-key-separator-null-literal",
    "07-headers-separator",
    "08-print-epoch",
    "09-release",
    "10-reject",
]


def _golden_records() -> list[Record]:
    def data(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    return [
        Record(
            value=data(row["value"]),
            key=data(row["key"]),
            headers=tuple((name, data(value)) for name, value in row["headers"]),
            timestamp=row["timestamp"],
        )
        for row in read_jsonl("console-share-consumer-produced.jsonl")
    ]


@pytest.mark.parametrize("name", GOLDEN_RUNS)
def test_output_is_kafkas_byte_for_byte(fast: Kshare, bed: Bed, name: str) -> None:
    _golden_run(fast, bed, name)


@pytest.mark.parametrize("name", GOLDEN_RUNS)
def test_output_is_kafkas_byte_for_byte_on_librdkafkas_mock(
    rdkafka_mock: RdkafkaMockCluster, tmp_path: Path, name: str
) -> None:
    bed = mock_bed(rdkafka_mock)
    _golden_run(Kshare(bed.bootstrap, None, tmp_path / "kshare" / "config.toml"), bed, name)


def _golden_run(fast: Kshare, bed: Bed, name: str) -> None:
    (command,) = [
        command
        for command in json.loads((CONSOLE / "commands.json").read_text())
        if command["name"] == name
    ]
    topic, group = bed.names("golden-fmt")
    bed.produce(topic, _golden_records())
    args = list(command["args"])
    # Kafka's own arguments, but our topic and group (and the bed's bootstrap).
    at = args.index("--bootstrap-server")
    del args[at : at + 2]
    args[args.index("--topic") + 1] = topic
    args[args.index("--group") + 1] = group
    result = _run(fast, *args)
    assert result.stdout == (CONSOLE / f"{name}.out").read_bytes()
    assert result.stderr == (CONSOLE / f"{name}.err").read_bytes()
    assert str(result.returncode) == (CONSOLE / f"{name}.rc").read_text().strip()


@pytest.mark.parametrize("spelling", ["-o", "--output", "--format", "-f"])
def test_the_output_format_is_dash_o_as_everywhere_and_format_still_works(
    fast: Kshare, bed: Bed, spelling: str
) -> None:
    topic, group = bed.names("cli-output")
    bed.produce(topic, values(2))
    result = _run(fast, "-t", topic, "-g", group, "--max-messages", "2", spelling, "jsonl")
    assert result.returncode == 0, result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(document["topic"], document["value"]) for document in documents] == [
        (topic, "r-00000"),
        (topic, "r-00001"),
    ]
    assert result.stderr == b"Processed a total of 2 messages\n"


# --------------------------------------------------------------------------- acknowledgements


def test_accepted_records_leave_no_lag(fast: Kshare, bed: Bed) -> None:
    if not bed.admin_rpcs:
        pytest.skip("the bed answers no DescribeShareGroupOffsets")
    topic, group = bed.names("cli-accept")
    bed.produce(topic, values(4))
    result = _run(fast, "-t", topic, "-g", group, "--max-messages", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"r-{index:05d}".encode() for index in range(4)]
    assert result.stderr == b"Processed a total of 4 messages\n"
    (partition,) = _offsets_view(fast, group)["partitions"]
    assert partition["lag"] == 0
    assert drain(bed, topic, group) == []


def test_released_records_stay_in_the_lag_and_come_back(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-release")
    bed.produce(topic, values(3))
    result = _run(fast, "-t", topic, "-g", group, "--max-messages", "3", "--release")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3
    (partition,) = _offsets_view(fast, group)["partitions"]
    assert partition["lag"] == 3
    again = _run(
        fast, "-t", topic, "-g", group, "--max-messages", "3", "--property", "print.delivery=true"
    )
    assert [line.split(b"\t")[0] for line in again.stdout.splitlines()] == [b"Delivery:2"] * 3


def test_rejected_records_are_gone(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-reject")
    bed.produce(topic, values(3))
    result = _run(fast, "-t", topic, "-g", group, "--max-messages", "3", "--ack", "reject")
    assert result.returncode == 0, result.stderr
    (partition,) = _offsets_view(fast, group)["partitions"]
    assert partition["lag"] == 0
    assert drain(bed, topic, group) == []


def _lost_answer_bed(bed: Bed) -> SandboxThread:
    """The bed's sandbox, whose ``drop_answer`` loses an applied acknowledgement's answer."""
    skip_on_real_cluster("it makes the broker apply an acknowledgement and drop the answer")
    assert bed.sandbox is not None
    return bed.sandbox


def _first_deliveries(count: int) -> list[bytes]:
    """``print.delivery=true`` lines of ``values(count)``, each printed on its first delivery."""
    return [f"Delivery:1\tr-{index:05d}".encode() for index in range(count)]


def _assert_unknown_outcome(stderr: bytes, topic: str, records: int) -> None:
    """One failure line saying the outcome is unknown, and never that the records come back."""
    text = stderr.decode()
    (failure,) = [line for line in text.splitlines() if line.startswith("kshare: error: ")]
    assert failure == (
        f"kshare: error: acknowledging {records} records of {topic}-0 failed "
        "(Local: Broker transport failure): "
        "unknown whether applied; they may or may not be delivered again"
    )
    assert "will be delivered again" not in text


def test_an_acknowledgement_applied_but_unanswered_is_reported_as_unknown(
    fast: Kshare, bed: Bed
) -> None:
    """The last ShareAcknowledge is applied and its connection lost: librdkafka reports
    ``_TRANSPORT``; the message must not promise a redelivery that will not happen."""
    sandbox = _lost_answer_bed(bed)
    topic, group = bed.names("cli-ack-lost")
    bed.produce(topic, values(3))
    sandbox.drop_answer(
        lambda request: request.api_key == SHARE_ACKNOWLEDGE and carries_acknowledgements(request)
    )
    result = _run(
        fast, "-t", topic, "-g", group, "--max-messages", "3", "--property", "print.delivery=true"
    )
    assert sandbox.answers_dropped == 1
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == _first_deliveries(3)
    _assert_unknown_outcome(result.stderr, topic, 3)
    assert result.stderr.endswith(b"Processed a total of 3 messages\n")
    # The broker did apply them: nothing comes back.
    assert drain(bed, topic, group) == []


def test_acknowledgements_on_a_fetch_applied_but_unanswered_are_reported_as_unknown(
    fast: Kshare, bed: Bed
) -> None:
    """The acknowledgements ride on the next ShareFetch, which is applied and its connection
    lost; the run goes on (librdkafka reconnects) and reports them as unknown at the end."""
    sandbox = _lost_answer_bed(bed)
    topic, group = bed.names("cli-fetch-lost")
    bed.produce(topic, values(3))
    sandbox.drop_answer(
        lambda request: request.api_key == SHARE_FETCH and carries_acknowledgements(request)
    )
    options = f"-t {topic} -g {group} --max-messages 4 --property print.delivery=true"
    process = subprocess.Popen(
        [str(KSHARE), "consume", *shlex.split(options), *fast.connection_args()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env(fast.environment()),
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        # Read as a pipe's reader does: kshare waits for its lines to be taken.
        printed = [process.stdout.readline() for _ in range(3)]
        # The next poll's ShareFetch carries their acceptances; only then the fourth record.
        wait_for(lambda: sandbox.answers_dropped == 1, 30, what="the acknowledging ShareFetch")
        bed.produce(topic, [Record(b"r-00003")])
        printed += process.stdout.read().splitlines(keepends=True)
        assert process.wait(60) == 1
        stderr = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert [line.rstrip(b"\n") for line in printed] == _first_deliveries(4)
    _assert_unknown_outcome(stderr, topic, 3)
    assert drain(bed, topic, group) == []


def test_idle_timeout_exits_0_with_the_count(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-idle")
    bed.produce(topic, values(2))
    result = _run(fast, "-t", topic, "-g", group, "--timeout-ms", str(FIRST_RECORD_MS))
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 2
    assert result.stderr == b"Processed a total of 2 messages\n"


def test_unreadable_record_stops_with_one_error_unless_rejected(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-unreadable")
    bed.produce(topic, [Record(b"\x00\x00\x00\x01"), Record(b"abc"), Record(b"\x00\x00\x00\x03")])
    stopped = _run(fast, "-t", topic, "-g", group, "--value-deserializer", "int")
    assert stopped.returncode == 1
    assert stopped.stdout == b"1\n"
    error, summary = stopped.stderr.decode().splitlines()
    assert error.startswith("kshare: error: ") and "--reject-on-error" in error
    assert summary == "Processed a total of 1 messages"
    rejecting = _run(
        fast,
        "-t",
        topic,
        "-g",
        group,
        "--value-deserializer",
        "int",
        "--reject-message-on-error",
        "--max-messages",
        "2",
    )
    assert rejecting.returncode == 0
    assert rejecting.stdout == b"3\n"
    rejected, summary = rejecting.stderr.decode().splitlines()
    assert rejected.startswith("kshare: error: rejected: ") and "offset 1" in rejected
    assert summary == "Processed a total of 2 messages"
    assert drain(bed, topic, group) == []


def test_group_from_the_command_config(fast: Kshare, bed: Bed, tmp_path: Path) -> None:
    topic, group = bed.names("cli-file-group")
    bed.produce(topic, values(1))
    properties = dict(bed.client_config)
    properties["group.id"] = group
    config = write_properties(tmp_path / "consumer.properties", properties)
    result = subprocess.run(
        [
            str(KSHARE),
            "consume",
            "-t",
            topic,
            "--max-messages",
            "1",
            "-b",
            bed.bootstrap,
            "--consumer-config",
            str(config),
        ],
        capture_output=True,
        env=process_env(fast.environment()),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == b"Processed a total of 1 messages\n"  # no "ignored: group.id"
    assert drain(bed, topic, group) == []  # consumed by that group, not the default one


# --------------------------------------------------------------------------- stops


def test_a_closed_stdout_ends_quietly_and_releases_what_was_not_read(
    fast: Kshare, bed: Bed
) -> None:
    topic, group = bed.names("cli-head")
    offsets = bed.produce(topic, values(50))
    process = subprocess.Popen(
        [str(KSHARE), "consume", "-t", topic, "-g", group, *fast.connection_args()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env(fast.environment()),
    )
    assert process.stdout is not None and process.stderr is not None
    line_length = len(b"r-00000\n")
    taken = b""
    while len(taken) < 2 * line_length:  # `| head -n 2`, reading no further
        taken += os.read(process.stdout.fileno(), 2 * line_length - len(taken))
    process.stdout.close()
    assert process.wait(30) == 0
    assert process.stderr.read() == b"Processed a total of 2 messages\n"
    rest = drain(bed, topic, group)
    assert [line["offset"] for line in rest] == offsets[2:]


def test_sigterm_stops_with_130_and_the_count(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-term")
    process = subprocess.Popen(
        [str(KSHARE), "consume", "-t", topic, "-g", group, *fast.connection_args()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env(fast.environment()),
    )
    assert process.stdout is not None and process.stderr is not None
    bed.produce(topic, values(1))
    assert process.stdout.readline() == b"r-00000\n"
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 130
    assert process.stderr.read() == b"Processed a total of 1 messages\n"


# --------------------------------------------------------------------------- interactive


# A terminal ends lines with CR LF.
_PROMPT = re.compile(
    rb"(\S+)-(\d+) offset (\d+), delivery (\d+) of (\d+)([^\r\n]*)\r?\n(?:[^\n]*\n)?"
    rb"\[a\]ccept \[r\]elease re\[x\]ect \[q\]uit \(Enter: \w+\)\? $"
)


def _interactive(kshare: Kshare, argv: list[str], answer: Any) -> tuple[int, str]:
    """Run on a pseudo-terminal; ``answer(offset, delivery, limit, note)`` types one key."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(KSHARE), *argv, *kshare.connection_args()],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=process_env({**kshare.environment(), "NO_COLOR": "1"}),
        close_fds=True,
    )
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed: the process ended
                    break
                if not chunk:
                    break
                screen += chunk
                asked = _PROMPT.search(screen[-600:])
                if asked:
                    offset, delivery, limit = (int(asked.group(n)) for n in (3, 4, 5))
                    os.write(leader, answer(offset, delivery, limit, asked.group(6).decode()))
            elif process.poll() is not None:
                break
        code = process.wait(timeout=30)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return code, screen.decode(errors="replace")


def test_interactive_acknowledges_record_by_record(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-interactive")
    offsets = bed.produce(topic, values(3))
    notes: dict[tuple[int, int], str] = {}
    limits: set[int] = set()

    def answer(offset: int, delivery: int, limit: int, note: str) -> bytes:
        notes[(offset, delivery)] = note
        limits.add(limit)
        if offset == offsets[0]:
            return b"r" if delivery < limit else b"a"  # released until its last delivery
        if offset == offsets[1]:
            return b"x"
        return b"\r"  # Enter: the default, accept

    code, screen = _interactive(
        fast,
        ["consume", "-t", topic, "-g", group, "-i", "--timeout-ms", str(FIRST_RECORD_MS)],
        answer,
    )
    assert code == 0, screen
    (limit,) = limits
    assert f"Delivery limit {limit}" in screen
    assert [delivery for offset, delivery in sorted(notes) if offset == offsets[0]] == list(
        range(1, limit + 1)
    )
    assert notes[(offsets[0], limit - 1)] == ": near the delivery limit"
    assert notes[(offsets[0], limit)] == ": last delivery, a release archives it"
    assert notes[(offsets[0], 1)] == ""
    assert "r-00000" in screen and "r-00002" in screen  # each record shown before the question
    assert f"Processed a total of {limit + 2} messages" in screen
    if bed.admin_rpcs:
        (partition,) = _offsets_view(fast, group)["partitions"]
        assert partition["lag"] == 0
    assert drain(bed, topic, group) == []


def test_interactive_q_releases_and_stops(fast: Kshare, bed: Bed) -> None:
    topic, group = bed.names("cli-quit")
    offsets = bed.produce(topic, values(2))
    code, screen = _interactive(fast, ["consume", "-t", topic, "-g", group, "-i"], lambda *_: b"q")
    assert code == 0, screen
    assert "quit" in screen
    assert "Processed a total of 1 messages" in screen
    rest = drain(bed, topic, group)
    # The record on screen was printed but neither accepted nor rejected: it is back.
    assert [line["offset"] for line in rest] == offsets


def test_interactive_on_a_cluster_that_keeps_its_limit_to_itself(
    rdkafka_mock: RdkafkaMockCluster, tmp_path: Path
) -> None:
    """librdkafka's mock answers no DescribeConfigs: the prompt says the limit is assumed."""
    bed = mock_bed(rdkafka_mock)
    topic, group = bed.names("cli-mock-interactive")
    bed.produce(topic, values(1))
    kshare = Kshare(bed.bootstrap, None, tmp_path / "kshare" / "config.toml")
    code, screen = _interactive(
        kshare, ["consume", "-t", topic, "-g", group, "-i", "--max-messages", "1"], lambda *_: b"a"
    )
    assert code == 0, screen
    assert "Delivery limit 5 (assumed): Kafka's default" in screen
    assert "delivery 1 of 5" in screen
    assert "Processed a total of 1 messages" in screen
    assert drain(bed, topic, group) == []


@pytest.mark.parametrize(
    ("stopped_by", "error", "failures", "code"),
    [
        ("max-messages", None, 0, 0),
        ("idle", None, 0, 0),
        ("output-closed", None, 0, 0),
        ("quit", None, 0, 0),
        ("interrupted", None, 0, 130),
        ("idle", None, 1, 1),
        ("error", "unreadable", 0, 1),
        ("error", "connection", 0, 3),
    ],
)
def test_exit_codes(stopped_by: str, error: str | None, failures: int, code: int) -> None:
    from kshare_cli.cli.consume_cmd import exit_code
    from kshare_cli.consumer.share_consume import (
        AcknowledgementFailure,
        ConsumeResult,
        RecordUnreadable,
    )
    from kshare_cli.errors import ConnectionFailed

    errors = {"unreadable": RecordUnreadable("x"), "connection": ConnectionFailed("x")}
    result = ConsumeResult(
        processed=1,
        accepted=1,
        released=0,
        rejected=0,
        returned=0,
        stopped_by=stopped_by,  # type: ignore[arg-type]
        error=errors[error] if error else None,
        acknowledgement_failures=(AcknowledgementFailure("t", 0, 1, "lock expired"),) * failures,
    )
    assert exit_code(result) == code
