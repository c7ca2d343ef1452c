"""Every documented exit code of ``kshare list`` and ``kshare describe``, as a script sees it.

0 ok, 1 partial, 2 usage, 3 connection (unreachable, refused credentials or
certificate, no share-group APIs), 4 timeout, 5 not found, 130 interrupted. Each
failure is exactly one line on stderr and never a traceback (unless ``--debug``,
and then with every secret replaced by ``***``); stdout stays empty when nothing
could be described. No password from a command-config file ever reaches the
terminal.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.errors import ExitCode
from kshare_cli.kafka.api_keys import SHARE_GROUP_DESCRIBE
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from tests.cli.conftest import (
    KSHARE,
    Kshare,
    ShareGroups,
    assert_one_error_line,
    process_env,
    validate,
    write_properties,
)
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import SecureSandbox, TlsMaterial
from tests.support.waiting import PROMPTLY_S
from tests.wire.conftest import Handler, replaced_handler

WRONG_PASSWORD = "wr0ng-Pa55word-x"


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


@dataclass
class SilentServer:
    """Accepts connections and reads whatever arrives; never writes a byte."""

    listener: socket.socket
    connected: threading.Event = field(default_factory=threading.Event)
    connections: list[socket.socket] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.listener.getsockname()[1]}"

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # the listener was closed: the test is over
            self.connections.append(connection)
            self.connected.set()
            threading.Thread(target=self._drain, args=(connection,), daemon=True).start()

    @staticmethod
    def _drain(connection: socket.socket) -> None:
        try:
            while connection.recv(65536):
                pass
        except OSError:
            return


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    server = SilentServer(listener)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield server
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in serve()
    listener.close()
    for connection in server.connections:
        connection.close()
    thread.join(5)


@pytest.fixture
def offline(tmp_path: Path) -> Kshare:
    """A kshare with nowhere configured to connect (tests name the broker themselves)."""
    return Kshare("127.0.0.1:1", None, tmp_path / "no-profiles" / "config.toml")


def on(kshare: Kshare, bootstrap: str, command_config: Path | None = None) -> Kshare:
    return dataclasses.replace(kshare, bootstrap=bootstrap, command_config=command_config)


# --------------------------------------------------------------------------- 0, 5 and 1


def test_ok_is_0_with_nothing_on_stderr(kshare: Kshare, share_groups: ShareGroups) -> None:
    result = kshare.run("describe", share_groups.drained)
    assert result.exit_code == ExitCode.OK
    assert result.stderr == ""
    assert share_groups.drained in result.stdout


def test_unknown_group_is_5_naming_the_group(kshare: Kshare, share_groups: ShareGroups) -> None:
    for view in ("--offsets", "--members", "--state"):
        result = kshare.run("describe", share_groups.missing, view)
        assert result.exit_code == ExitCode.NOT_FOUND, (view, result.stderr)
        assert result.stdout == ""
        assert_one_error_line(result.stderr, f"'{share_groups.missing}'", "not found")


def test_unknown_group_in_json_is_data_and_still_5(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    """Partial failure is data: the JSON carries the group's error, the exit code says 5."""
    result = kshare.run("describe", share_groups.missing, "-o", "json")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert_one_error_line(result.stderr, share_groups.missing)
    document = json.loads(result.stdout)
    validate(document, "offsets.schema.json")
    (group,) = document["groups"]
    assert group["group_id"] == share_groups.missing
    assert group["error"]["name"] == "GROUP_ID_NOT_FOUND"


def test_found_and_unknown_together_print_the_found_and_exit_5(
    kshare: Kshare, share_groups: ShareGroups
) -> None:
    """describe_cmd: 5 when every failure is "not found", even beside groups described fine.

    (Kafka's tool exits 0 here; kshare tells a script that something was missing.)
    """
    result = kshare.run("describe", share_groups.drained, share_groups.missing)
    assert result.exit_code == ExitCode.NOT_FOUND
    assert_one_error_line(result.stderr, share_groups.missing)
    rows = [line.split() for line in result.stdout.splitlines()]
    assert [share_groups.drained, share_groups.topic, "0"] == rows[2][:3]
    assert share_groups.missing not in result.stdout

    members = kshare.run("describe", share_groups.live, share_groups.missing, "--members")
    assert members.exit_code == ExitCode.NOT_FOUND
    assert_one_error_line(members.stderr, share_groups.missing)
    assert share_groups.live_client_id in members.stdout


def _denying(prefix: str) -> Any:
    """ShareGroupDescribe answering GROUP_AUTHORIZATION_FAILED for groups named ``prefix*``."""

    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            groups = tuple(
                dataclasses.replace(
                    group,
                    error_code=ErrorCode.group_authorization_failed,
                    error_message="Not authorized to describe the group.",
                )
                if group.group_id.startswith(prefix)
                else group
                for group in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    return make


def test_a_refused_group_is_6_and_a_mix_of_failures_is_1_beside_what_was_described(
    kshare: Kshare, share_groups: ShareGroups, cluster: Cluster, unique: str
) -> None:
    """GROUP_AUTHORIZATION_FAILED alone is exit 6 (issue 24); beside a missing group, 1."""
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: a refusal can only be injected into the sandbox")
    denied = f"denied-{unique}"
    with replaced_handler(cluster.sandbox, SHARE_GROUP_DESCRIBE, _denying("denied-")):
        alone = kshare.run("describe", denied, "--state")
        mixed = kshare.run("describe", share_groups.live, denied, share_groups.missing, "--members")
    assert alone.exit_code == ExitCode.NOT_AUTHORIZED
    assert alone.stdout == ""
    assert_one_error_line(alone.stderr, denied, "GROUP_AUTHORIZATION_FAILED")

    assert mixed.exit_code == ExitCode.PARTIAL
    assert share_groups.live_client_id in mixed.stdout
    lines = mixed.stderr.splitlines()
    assert "Traceback" not in mixed.stderr
    assert len(lines) == 2, mixed.stderr  # one line per failed group
    assert any(denied in line for line in lines)
    assert any(share_groups.missing in line for line in lines)


# --------------------------------------------------------------------------- 2: usage


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["describe"], "--all-groups"),
        (["describe", "g", "--all-groups"], "not both"),
        (["describe", "g", "--offsets", "--members"], "mutually exclusive"),
        (["describe", "g", "--timeout", "soon"], "--timeout"),
        (["describe", "g", "--timeout", "0s"], "--timeout"),
        (["list", "--timeout", "-5"], "--timeout"),
        (["list", "--state", "Reconciling"], "Reconciling"),
    ],
    ids=[
        "no-group",
        "groups-and-all-groups",
        "offsets-and-members",
        "timeout-not-a-duration",
        "timeout-zero",
        "timeout-negative",
        "state-share-groups-cannot-be-in",
    ],
)
def test_usage_errors_are_2_before_any_connection(
    offline: Kshare, args: list[str], fragment: str
) -> None:
    # The broker is a closed port: a usage error must be found before connecting.
    result = offline.run(*args, "-b", closed_port(), connect=False)
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "kshare: error:", fragment)


@pytest.mark.parametrize("command", [["list"], ["describe", "g"]])
def test_no_bootstrap_configured_anywhere_is_2(offline: Kshare, command: list[str]) -> None:
    result = offline.run(*command, connect=False)
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "--bootstrap-server", "KSHARE_BOOTSTRAP_SERVERS")


BAD_JAAS = [
    # no terminating semicolon
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
    'password="{password}"',
    # an unterminated quote
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
    'password="{password};',
    # no control flag
    'org.apache.kafka.common.security.plain.PlainLoginModule username="alice" '
    'password="{password}";',
]


@pytest.mark.parametrize("jaas", BAD_JAAS, ids=["no-semicolon", "open-quote", "no-flag"])
@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_malformed_command_config_is_2_and_keeps_the_password(
    offline: Kshare, tmp_path: Path, jaas: str, debug: bool
) -> None:
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": jaas.format(password=WRONG_PASSWORD),
        },
    )
    args = ["list", "-b", closed_port(), "--command-config", str(config)]
    result = offline.run(*args, *(["--debug"] if debug else []), connect=False)
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert WRONG_PASSWORD not in result.stderr
    if debug:
        assert "Traceback" in result.stderr
        assert result.stderr.splitlines()[-1].startswith("kshare: error: sasl.jaas.config")
    else:
        assert_one_error_line(result.stderr, "sasl.jaas.config", "client.properties")


def test_a_bad_option_value_is_2_without_a_traceback(offline: Kshare) -> None:
    result = offline.run("list", "-o", "xml", connect=False)
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert "xml" in result.stderr


# --------------------------------------------------------------------------- 3: connection


def test_unreachable_broker_is_3(offline: Kshare) -> None:
    address = closed_port()
    for command in (["list"], ["describe", "g"]):
        result = on(offline, address).run(*command)
        assert result.exit_code == ExitCode.CONNECTION, result.stderr
        assert result.stdout == ""
        assert_one_error_line(result.stderr, address)


def test_wrong_sasl_password_is_3_and_never_printed(
    offline: Kshare, secure_sandbox: SecureSandbox, tmp_path: Path
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
    kshare = on(offline, sandbox.bootstrap, config)
    for command in (["list"], ["describe", "g", "--members"]):
        result = kshare.run(*command)
        assert result.exit_code == ExitCode.CONNECTION, result.stderr
        assert result.stdout == ""
        line = assert_one_error_line(result.stderr, "kshare: error:")
        assert "authentication" in line.lower() or "sasl" in line.lower(), line
        assert WRONG_PASSWORD not in result.stderr

    debug = kshare.run("list", "--debug")
    assert debug.exit_code == ExitCode.CONNECTION
    assert WRONG_PASSWORD not in debug.stderr
    assert "Traceback" in debug.stderr
    assert debug.stderr.splitlines()[-1].startswith("kshare: error:")


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_a_password_inside_an_error_is_printed_as_stars(
    offline: Kshare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, debug: bool
) -> None:
    """Whatever carries the password into an error (a broker echoing it, a bug), stderr has ***."""
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="alice" password="{WRONG_PASSWORD}";',
        },
    )

    async def echoing_broker(*_: object) -> None:
        raise RuntimeError(f"broker said: bad password {WRONG_PASSWORD!r} for alice")

    monkeypatch.setattr("kshare_cli.services.groups.list_groups", echoing_broker)
    result = on(offline, closed_port(), config).run("list", *(["--debug"] if debug else []))
    assert result.exit_code == ExitCode.PARTIAL  # an internal error
    assert result.stdout == ""
    assert WRONG_PASSWORD not in result.stderr
    assert "bad password '***' for alice" in result.stderr
    if debug:
        assert "Traceback" in result.stderr and "echoing_broker" in result.stderr
    else:
        assert_one_error_line(result.stderr, "internal error: RuntimeError", "--debug")


def test_untrusted_certificate_is_3(
    offline: Kshare, secure_sandbox: SecureSandbox, tls_material: TlsMaterial, tmp_path: Path
) -> None:
    sandbox = secure_sandbox("SSL")
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls_material.untrusted_ca_pem),
        },
    )
    result = on(offline, sandbox.bootstrap, config).run("list")
    assert result.exit_code == ExitCode.CONNECTION, result.stderr
    assert result.stdout == ""
    line = assert_one_error_line(result.stderr, "kshare: error:")
    assert "certificate" in line.lower(), line


@pytest.mark.parametrize(
    "command",
    [["list"], ["describe", "--all-groups"], ["describe", "g"], ["describe", "g", "--state"]],
    ids=["list", "describe-all-groups", "describe-offsets", "describe-state"],
)
def test_broker_without_share_group_apis_is_3(offline: Kshare, command: list[str]) -> None:
    """Not "no share groups" (such a broker still answers ListGroups): the API is named."""
    with SandboxThread(share_groups=False) as old_broker:
        result = on(offline, old_broker.bootstrap).run(*command)
    assert result.exit_code == ExitCode.CONNECTION, (command, result.stdout, result.stderr)
    assert result.stdout == ""
    assert_one_error_line(result.stderr, "ShareGroupDescribe (API 77)", "Kafka 4.1")


# --------------------------------------------------------------------------- 4 and 130


def test_a_broker_that_never_answers_is_4_within_the_timeout(
    offline: Kshare, silent_server: SilentServer
) -> None:
    kshare = on(offline, silent_server.address)
    for command in (["list"], ["describe", "g"]):
        started = time.monotonic()
        result = kshare.run(*command, "--timeout", "1s")
        elapsed = time.monotonic() - started
        assert result.exit_code == ExitCode.TIMEOUT, result.stderr
        assert result.stdout == ""
        assert_one_error_line(result.stderr, "--timeout")
        assert elapsed < 1 + PROMPTLY_S, elapsed  # the 1 s, not the default 30 s
    assert silent_server.connected.is_set()


def test_interrupt_is_130_with_one_line(offline: Kshare, silent_server: SilentServer) -> None:
    argv = [str(KSHARE), "describe", "g", "-b", silent_server.address, "--timeout", "60s"]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env(offline.environment()),
    )
    try:
        assert silent_server.connected.wait(30), "kshare never connected"
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == ExitCode.INTERRUPTED
    assert time.monotonic() - started < 10
    assert stdout == ""
    assert_one_error_line(stderr, "interrupted")


def test_debug_on_a_timeout_shows_a_traceback(offline: Kshare, silent_server: SilentServer) -> None:
    result = on(offline, silent_server.address).run("list", "--timeout", "500ms", "--debug")
    assert result.exit_code == ExitCode.TIMEOUT
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("kshare: error:")


def test_a_profiles_inline_password_never_reaches_stderr(
    offline: Kshare, secure_sandbox: SecureSandbox, tmp_path: Path
) -> None:
    """A wrong password stored inline in a profile is kept out of stderr, --debug included."""
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    added = offline.run(
        "profile",
        "add",
        "secure",
        "-b",
        sandbox.bootstrap,
        "--property",
        "security.protocol=SASL_PLAINTEXT",
        "--property",
        "sasl.mechanism=PLAIN",
        "--property",
        "sasl.username=alice",
        "--property",
        f"sasl.password={WRONG_PASSWORD}",
        "--use",
        connect=False,
    )
    assert added.exit_code == 0, added.stderr
    for extra in ([], ["--debug"]):
        result = offline.run("list", *extra, connect=False)
        assert result.exit_code == ExitCode.CONNECTION, result.stderr
        assert WRONG_PASSWORD not in result.stderr
        if not extra:
            assert_one_error_line(result.stderr, "kshare: error:")


def test_a_hung_first_bootstrap_server_costs_seconds_not_half_the_timeout(
    kshare: Kshare, silent_server: SilentServer
) -> None:
    """``kshare list -b HUNG,GOOD``: the good server is tried 0.5 s later, not after 15 s."""
    started = time.monotonic()
    result = on(kshare, f"{silent_server.address},{kshare.bootstrap}").run(
        "list", "--timeout", "30s"
    )
    elapsed = time.monotonic() - started
    assert result.exit_code == ExitCode.OK, result.stderr
    assert result.stderr == ""
    assert silent_server.connected.is_set()  # it really was asked first
    assert elapsed < 5.0
