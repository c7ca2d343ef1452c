"""``kshare produce`` as an operator runs it: stdin in, records out, stderr and exit codes.

What the cluster holds afterwards is read back with confluent-kafka's own
consumer; errors are held to one ``kshare: error:`` line and the documented exit
code, and bad options are refused before any connection (a cluster address that
refuses connections would turn them into exit 3).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kshare_cli.cli.app import app
from kshare_cli.cli.produce_cmd import parse_command_properties
from tests.cli.conftest import (
    KSHARE,
    Kshare,
    assert_one_error_line,
    process_env,
    write_properties,
)
from tests.consumer.test_produce import end_offsets, read_back
from tests.support.records import create_topic
from tests.support.sandbox import Cluster
from tests.support.tls import SecureSandbox
from tests.support.waiting import PROMPTLY_S

ROOT = Path(__file__).resolve().parents[2]
REFUSING = "127.0.0.1:1"  # nothing listens there: connecting would be exit 3
WRONG_PASSWORD = "wr0ng-Pa55word-x"


def produce(kshare: Kshare, *args: str, stdin: bytes = b"", connect: bool = True) -> Result:
    argv = ["produce", *args, *(kshare.connection_args() if connect else [])]
    return CliRunner().invoke(app, argv, input=stdin, env=kshare.environment())


def test_stdin_lines_become_records(kshare: Kshare, cluster: Cluster, unique: str) -> None:
    topic = f"cli-produce-{unique}"
    create_topic(cluster, topic, 2)
    completed = subprocess.run(
        [
            str(KSHARE),
            "produce",
            "--topic",
            topic,
            "--key-separator",
            "\\t",
            "-H",
            "trace=abc",
            "--header",
            "empty=",
            "--partition",
            "1",
            *kshare.connection_args(),
        ],
        input=b"k1\tv1\nk2\tv2\n\tno key\n",
        capture_output=True,
        env=process_env(kshare.environment()),
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == b""
    assert completed.stderr == b"Produced a total of 3 messages\n"
    records = read_back(cluster.config(), topic, [1], 3)
    assert [(m.key(), m.value(), m.headers()) for m in records] == [
        (key, value, [("trace", b"abc"), ("empty", b"")])
        for key, value in ((b"k1", b"v1"), (b"k2", b"v2"), (b"", b"no key"))
    ]
    assert end_offsets(cluster.config(), topic, 2) == [0, 3]


def test_rate_and_command_properties_reach_the_producer(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    topic = f"cli-produce-rate-{unique}"
    create_topic(cluster, topic, 1)
    started = time.monotonic()
    result = produce(
        kshare,
        "-t",
        topic,
        "--rate",
        "50",
        "--command-property",
        "compression.type=gzip",
        "--command-property",
        "linger.ms=0",
        stdin=b"".join(b"%d\n" % i for i in range(20)),
    )
    assert result.exit_code == 0, result.stderr
    assert time.monotonic() - started >= 19 / 50  # paced: one token at the start
    records = read_back(cluster.config(), topic, [0], 20)
    assert [m.value() for m in records] == [b"%d" % i for i in range(20)]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--rate", "0"], "--rate must be a positive number"),
        (["--rate", "fast"], "--rate: 'fast' is not a number"),
        (["--rate", "inf"], "--rate must be a positive number"),
        (["--header", "novalue"], "--header 'novalue': expected KEY=VALUE"),
        (["--header", "=v"], "the header key cannot be empty"),
        (["--key-separator", ""], "--key-separator cannot be empty"),
        (["--partition", "-1"], "--partition cannot be negative"),
        (["--timeout", "0"], "--timeout must be greater than zero"),
        (["--command-property", "linger.ms"], "--command-property expects KEY=VALUE"),
        (["--command-property", "bootstrap.servers=x:1"], "use --bootstrap-server"),
        (["--command-property", "no.such=1"], 'No such configuration property: "no.such"'),
        (["--command-property", "linger.ms=soon"], "Invalid value for configuration property"),
        (["--command-property", "security.protocol=BOGUS"], "'BOGUS' is not one of PLAINTEXT"),
    ],
)
def test_bad_options_are_refused_before_connecting(
    kshare: Kshare, args: list[str], fragment: str
) -> None:
    result = produce(kshare, "-t", "t", *args, "-b", REFUSING, connect=False, stdin=b"x\n")
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error:", fragment)


@pytest.mark.parametrize("topic", ["has space", "..", "x" * 250, "a/b"])
def test_an_invalid_topic_name_is_a_usage_error(kshare: Kshare, topic: str) -> None:
    result = produce(kshare, "-t", topic, "-b", REFUSING, connect=False)
    assert result.exit_code == 2, result.stderr
    assert_one_error_line(result.stderr, "kshare: error: --topic")


def test_a_missing_topic_option_is_one_line(kshare: Kshare) -> None:
    completed = kshare.subprocess("produce", "-b", REFUSING, connect=False)
    assert completed.returncode == 2
    assert_one_error_line(completed.stderr, "Missing option '--topic'")


def test_an_unknown_topic_exits_5_and_is_not_created(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    topic = f"cli-produce-missing-{unique}"
    result = produce(kshare, "-t", topic, stdin=b"x\n")
    assert result.exit_code == 5, result.stderr
    assert_one_error_line(result.stderr, f"kshare: error: topic '{topic}' does not exist")
    from confluent_kafka.admin import AdminClient

    assert topic not in AdminClient(cluster.config()).list_topics(timeout=10).topics


def test_an_unknown_partition_exits_5(kshare: Kshare, cluster: Cluster, unique: str) -> None:
    topic = f"cli-produce-partition-{unique}"
    create_topic(cluster, topic, 1)
    result = produce(kshare, "-t", topic, "--partition", "3", stdin=b"x\n")
    assert result.exit_code == 5, result.stderr
    assert_one_error_line(result.stderr, "has 1 partition (0-0); there is no partition 3")
    assert end_offsets(cluster.config(), topic, 1) == [0]


def closed_port() -> str:
    """An address nothing listens on: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


@contextmanager
def silent_listener() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers a byte."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_refused_connection_exits_3_at_once_naming_the_broker(kshare: Kshare) -> None:
    """librdkafka knows in milliseconds; kshare must not wait out the 30 s --timeout."""
    address = closed_port()
    started = time.monotonic()
    result = produce(kshare, "-t", "t", "-b", address, connect=False, stdin=b"x\n")
    elapsed = time.monotonic() - started
    assert result.exit_code == 3, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, f"kshare: error: cannot connect to {address}", "refused")
    assert elapsed < PROMPTLY_S, elapsed  # the --timeout is 30 s


def test_a_wrong_sasl_password_exits_3_at_once_and_is_never_printed(
    kshare: Kshare, secure_sandbox: SecureSandbox, tmp_path: Path
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-256",))
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="alice" password="{WRONG_PASSWORD}";',
        },
    )
    started = time.monotonic()
    result = produce(
        kshare,
        "-t",
        "t",
        "-b",
        sandbox.bootstrap,
        "--command-config",
        str(config),
        connect=False,
        stdin=b"x\n",
    )
    elapsed = time.monotonic() - started
    assert result.exit_code == 3, result.stderr
    assert result.stdout == ""
    # The control plane's words, as `kshare list` says it (the data plane asks it).
    assert_one_error_line(
        result.stderr,
        "kshare: error: SASL SCRAM-SHA-256 authentication as 'alice' failed at "
        f"{sandbox.bootstrap}",
    )
    assert WRONG_PASSWORD not in result.stderr
    assert elapsed < 5, elapsed


#: librdkafka gives up on a silent broker after api.version.request.timeout.ms (10 s) and
#: reports "all brokers are down" with no cause: still a timeout, not a refusal.
GIVES_UP_EARLY = ["--command-property", "api.version.request.timeout.ms=200"]


@pytest.mark.parametrize("extra", [[], GIVES_UP_EARLY], ids=["silent", "librdkafka-gave-up"])
def test_a_broker_that_never_answers_exits_4_after_the_timeout(
    kshare: Kshare, extra: list[str]
) -> None:
    with silent_listener() as address:
        started = time.monotonic()
        result = produce(
            kshare,
            "-t",
            "t",
            "-b",
            address,
            "--timeout",
            "2s",
            *extra,
            connect=False,
            stdin=b"x\n",
        )
        elapsed = time.monotonic() - started
    assert result.exit_code == 4, result.stderr
    assert result.stdout == ""
    assert_one_error_line(
        result.stderr, f"kshare: error: no metadata from {address} within 2 s (--timeout)"
    )
    assert 2 <= elapsed < 5, elapsed


def test_a_line_without_the_separator_after_records_exits_1_saying_how_many_were_produced(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    """Exit 2 would claim nothing was changed: the two records before line 3 are in the topic."""
    topic = f"cli-produce-malformed-{unique}"
    create_topic(cluster, topic, 1)
    result = produce(kshare, "-t", topic, "--key-separator", "=", stdin=b"a=1\nb=2\nthree\nc=4\n")
    assert result.exit_code == 1, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "kshare: error: line 3: no key separator '=' found in 'three'; "
        "stopped there after producing the 2 records before it"
    ]
    records = read_back(cluster.config(), topic, [0], 2)
    assert [(m.key(), m.value()) for m in records] == [(b"a", b"1"), (b"b", b"2")]
    assert end_offsets(cluster.config(), topic, 1) == [2]


def test_a_line_without_the_separator_counts_only_the_records_delivered_before_it(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    topic = f"cli-produce-malformed-refused-{unique}"
    create_topic(cluster, topic, 1)
    result = produce(
        kshare,
        "-t",
        topic,
        "--key-separator",
        "=",
        "--command-property",
        "message.max.bytes=2000",
        stdin=b"a=1\nb=" + b"x" * 5000 + b"\nthree\n",
    )
    assert result.exit_code == 1, result.stderr
    refused, stopped = result.stderr.splitlines()
    assert refused.startswith("kshare: error: line 2: not produced: ")
    assert stopped == (
        "kshare: error: line 3: no key separator '=' found in 'three'; "
        "stopped there after producing 1 of the 2 records before it"
    )
    assert [m.value() for m in read_back(cluster.config(), topic, [0], 1)] == [b"1"]
    assert end_offsets(cluster.config(), topic, 1) == [1]


def test_a_first_line_without_the_separator_exits_2_and_nothing_was_produced(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    topic = f"cli-produce-malformed-first-{unique}"
    create_topic(cluster, topic, 1)
    result = produce(kshare, "-t", topic, "--key-separator", "\\t", stdin=b"no tab\nk\tv\n")
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "kshare: error: line 1: no key separator '\\t' found in 'no tab'; nothing was produced"
    ]
    assert end_offsets(cluster.config(), topic, 1) == [0]


def test_a_refused_record_is_one_line_and_exit_1(
    kshare: Kshare, cluster: Cluster, unique: str
) -> None:
    topic = f"cli-produce-large-{unique}"
    create_topic(cluster, topic, 1)
    big = b"x" * 5000
    result = produce(
        kshare,
        "-t",
        topic,
        "--command-property",
        "message.max.bytes=2000",
        stdin=b"ok\n" + big + b"\nok too\n",
    )
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("kshare: error: line 2: not produced: ")
    assert lines[0].endswith("(MSG_SIZE_TOO_LARGE)")
    assert lines[1] == "Produced a total of 2 messages"
    assert [m.value() for m in read_back(cluster.config(), topic, [0], 2)] == [b"ok", b"ok too"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_flushes_what_was_read_and_exits_130(
    kshare: Kshare, cluster: Cluster, unique: str, signum: signal.Signals
) -> None:
    topic = f"cli-produce-signal-{signum.name.lower()}-{unique}"
    create_topic(cluster, topic, 1)
    process = subprocess.Popen(
        [str(KSHARE), "produce", "-t", topic, *kshare.connection_args()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env(kshare.environment()),
    )
    try:
        assert process.stdin is not None
        process.stdin.write(b"one\ntwo\nthree\n")
        process.stdin.flush()
        # stdin stays open (as at a prompt): kshare waits for more until the signal.
        deadline = time.monotonic() + 30
        while end_offsets(cluster.config(), topic, 1) != [3]:
            assert time.monotonic() < deadline, "the three lines never reached the topic"
            time.sleep(0.05)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr
    assert stdout == b""
    assert stderr == b"Produced a total of 3 messages\n"


def test_command_properties_split_connection_from_producer_settings() -> None:
    split = parse_command_properties(
        [
            "acks=all",
            "security.protocol=SASL_SSL",
            "sasl.mechanism=PLAIN",
            "ssl.ca.location=/ca.pem",
            "linger.ms=5",
            "client.id=feeder",
            "x=a=b",
        ]
    )
    assert split.connection == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
    }
    assert split.producer == {"acks": "all", "linger.ms": "5", "client.id": "feeder", "x": "a=b"}


def test_help_loads_nothing_heavy() -> None:
    """``kshare produce --help`` must stay as light as every other command's help."""
    code = (
        "import sys\n"
        "sys.argv = ['kshare', 'produce', '--help']\n"
        "from kshare_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('asyncio', 'confluent_kafka', 'kio', 'rich', 'kshare_cli.connect',\n"
        "         'kshare_cli.consumer.produce', 'kshare_cli.wire', 'kshare_cli.services',\n"
        "         'kshare_cli.dataplane')\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "Usage: kshare produce" in completed.stdout
    assert completed.stderr == "[]"
