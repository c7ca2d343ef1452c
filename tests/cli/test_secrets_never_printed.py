"""No secret of the settings reaches stdout, stderr or ``--debug`` output, on any error path.

The settings hold a SASL password (in a JAAS line), an SSL key password (the client
key is encrypted with it) and an OAuth client secret (a property kshare does not
use, which it names in a warning), and a misspelt key with a secret-looking value.
They come once from a ``--command-config`` file and once from a profile's inline
properties. Every command then meets each error path as an operator meets it --
the installed ``kshare`` in a subprocess, so librdkafka's own output would be seen
too -- with ``--debug`` (tracebacks and librdkafka's log lines): a bad
``--timeout``, an unreachable broker, a wrong SASL password, a wrong SSL key
password, a group that does not exist; and an internal error, in process, whose
message and traceback carry the password. Each run exits with the README's code,
and no secret appears in anything it wrote.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kshare_cli.cli.app import app
from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.security import ListenerSecurity
from tests.cli.conftest import CONNECTION_ENV, KSHARE, process_env, write_properties
from tests.support.sandbox import skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import KEY_PASSWORD, TlsMaterial

SASL_PASSWORD = "sasl-pw-Q7x2Lm9"
WRONG_SASL_PASSWORD = "wrong-pw-K3v8Rt"
WRONG_KEY_PASSWORD = "wrong-key-pass-P5n"
OAUTH_CLIENT_SECRET = "oauth-client-secret-Z81"
MISSPELT_SECRET = "misspelt-secret-H4w"
SECRETS = (
    SASL_PASSWORD,
    WRONG_SASL_PASSWORD,
    WRONG_KEY_PASSWORD,
    KEY_PASSWORD,
    OAUTH_CLIENT_SECRET,
    MISSPELT_SECRET,
)

GROUP = "sweep-missing-group"
TOPIC = "sweep-topic"

#: Every command, with what it needs to get as far as connecting.
COMMANDS: Mapping[str, tuple[str, ...]] = {
    "list": ("list",),
    "describe": ("describe", GROUP),
    "inflight": ("inflight", GROUP),
    "health": ("health", GROUP),
    "delete": ("delete", GROUP),
    "delete-offsets": ("delete-offsets", GROUP, "-t", TOPIC),
    "reset-offsets": ("reset-offsets", GROUP, "--all-topics", "--to-earliest"),
    "config get": ("config", "get", GROUP),
    "config set": ("config", "set", GROUP, "share.auto.offset.reset=earliest"),
    "config unset": ("config", "unset", GROUP, "share.auto.offset.reset"),
    "dlq show": ("dlq", "show", GROUP),
    "dlq redrive": ("dlq", "redrive", GROUP),
    "consume": ("consume", "-g", GROUP, "-t", TOPIC, "--max-messages", "1"),
    "produce": ("produce", "-t", TOPIC),
    "dashboard": ("dashboard", GROUP),
}
#: Long-running or Spark commands: only their refusals before connecting are swept.
REFUSING_ONLY: Mapping[str, tuple[str, ...]] = {
    "exporter": ("exporter", "--listen", "127.0.0.1:0"),
    "audit timeline": ("audit", "timeline", "-g", GROUP),
}


def properties(
    material: TlsMaterial,
    *,
    sasl_password: str = SASL_PASSWORD,
    key_password: str = KEY_PASSWORD,
) -> dict[str, str]:
    """SASL_SSL with PLAIN and a client certificate whose key is encrypted."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="alice" password="{sasl_password}";',
        "ssl.ca.location": str(material.ca_pem),
        "ssl.certificate.location": str(material.client_cert),
        "ssl.key.location": str(material.client_key_encrypted),
        "ssl.key.password": key_password,
        # Not used with these settings: named in a warning, never shown.
        "sasl.oauthbearer.client.secret": OAUTH_CLIENT_SECRET,
        # A misspelt key (ssl.key.password): named with the nearest known one.
        "ssl.key.pasword": MISSPELT_SECRET,
    }


@pytest.fixture(scope="module")
def sandbox(tls_material: TlsMaterial) -> Iterator[SandboxThread]:
    """A SASL_SSL listener that requires a client certificate; alice's password is known."""
    skip_on_real_cluster("the sweep needs a listener whose passwords the test sets")
    security = ListenerSecurity(
        protocol="SASL_SSL",
        ssl_context=tls_material.server_context(require_client_cert=True),
        require_client_cert=True,
        users={"alice": SASL_PASSWORD},
        mechanisms=("PLAIN",),
    )
    with SandboxThread(security=security) as started:
        yield started


@pytest.fixture(scope="module")
def closed_port() -> str:
    """An address nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


@dataclass(frozen=True)
class Sweep:
    """How the settings reach a command: ``--command-config FILE`` or ``--profile NAME``."""

    profiles: Path
    directory: Path
    via: str

    def environment(self) -> dict[str, str]:
        clean: dict[str, str | None] = dict.fromkeys(CONNECTION_ENV)
        clean["KSHARE_CONFIG"] = str(self.profiles)
        return process_env(clean)

    def connection(self, name: str, bootstrap: str, settings: Mapping[str, str]) -> list[str]:
        """Arguments that give a command ``settings`` and ``bootstrap``, the sweep's way."""
        if self.via == "command-config":
            path = write_properties(self.directory / f"{name}.properties", settings)
            return ["-b", bootstrap, "--command-config", str(path)]
        added = self.kshare(
            "profile",
            "add",
            name,
            "-b",
            bootstrap,
            *(f"--property={key}={value}" for key, value in settings.items()),
            "--replace",
        )
        assert added.returncode == 0, added.stderr
        return ["-p", name]

    def kshare(self, *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(KSHARE), *argv],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.environment(),
            timeout=90,
            check=False,
        )
        assert_no_secret(argv, done)
        return done


def assert_no_secret(argv: tuple[str, ...], done: subprocess.CompletedProcess[str]) -> None:
    for secret in SECRETS:
        assert secret not in done.stdout, (argv, done.stdout)
        assert secret not in done.stderr, (argv, done.stderr)


@pytest.fixture(params=["command-config", "profile"])
def sweep(request: pytest.FixtureRequest, tmp_path: Path) -> Sweep:
    return Sweep(tmp_path / "kshare" / "config.toml", tmp_path, request.param)


def run_all(
    sweep: Sweep, commands: Mapping[str, tuple[str, ...]], connection: list[str], *extra: str
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every command with ``connection`` and ``--debug``; each run checked for secrets."""
    return {
        name: sweep.kshare(*argv, *connection, "--debug", *extra, stdin="a record\n")
        for name, argv in commands.items()
    }


def exit_codes(runs: Mapping[str, subprocess.CompletedProcess[str]]) -> dict[str, int]:
    return {name: done.returncode for name, done in runs.items()}


def test_a_bad_timeout_is_refused_without_a_secret(
    sweep: Sweep, sandbox: SandboxThread, tls_material: TlsMaterial
) -> None:
    connection = sweep.connection("good", sandbox.bootstrap, properties(tls_material))
    runs = run_all(sweep, {**COMMANDS, **REFUSING_ONLY}, connection, "--timeout", "soon")
    assert exit_codes(runs) == dict.fromkeys([*COMMANDS, *REFUSING_ONLY], ExitCode.USAGE)
    for done in runs.values():
        # --debug: the refusal's traceback, then its one line.
        assert done.stderr.splitlines()[-1].startswith("kshare: error: --timeout"), done.stderr


def test_an_unreachable_broker_is_exit_3_without_a_secret(
    sweep: Sweep, closed_port: str, tls_material: TlsMaterial
) -> None:
    connection = sweep.connection("down", closed_port, properties(tls_material))
    runs = run_all(sweep, COMMANDS, connection, "--timeout", "10s")
    assert exit_codes(runs) == dict.fromkeys(COMMANDS, ExitCode.CONNECTION)
    for done in runs.values():
        if sweep.via == "command-config":
            # The misspelt key and the unused OAuth secret are named by key (a profile's
            # are named once, when it is saved).
            assert "ssl.key.pasword" in done.stderr, done.stderr
            assert "sasl.oauthbearer.client.secret" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("wrong", "code", "named"),
    [
        (
            {"sasl_password": WRONG_SASL_PASSWORD},
            ExitCode.CONNECTION,
            "SASL PLAIN authentication as 'alice' failed",
        ),
        ({"key_password": WRONG_KEY_PASSWORD}, ExitCode.USAGE, "wrong ssl.key.password"),
    ],
    ids=["sasl-password", "ssl-key-password"],
)
def test_a_wrong_password_is_refused_without_either_password(
    sweep: Sweep,
    sandbox: SandboxThread,
    tls_material: TlsMaterial,
    wrong: dict[str, str],
    code: ExitCode,
    named: str,
) -> None:
    settings = properties(tls_material, **wrong)
    connection = sweep.connection("wrong", sandbox.bootstrap, settings)
    runs = run_all(sweep, COMMANDS, connection, "--timeout", "10s")
    assert exit_codes(runs) == dict.fromkeys(COMMANDS, code)
    for done in runs.values():
        last = done.stderr.splitlines()[-1]
        assert last.startswith("kshare: error: ") and named in last, done.stderr


def test_a_missing_group_is_named_without_a_secret(
    sweep: Sweep, sandbox: SandboxThread, tls_material: TlsMaterial
) -> None:
    connection = sweep.connection("good", sandbox.bootstrap, properties(tls_material))
    runs = run_all(sweep, COMMANDS, connection, "--timeout", "10s")
    # list names no group and, as in Kafka, a group need not exist to be configured;
    # consume and produce meet the missing topic first.
    configured = ("list", "config get", "config set", "config unset")
    expected = {name: ExitCode.OK if name in configured else ExitCode.NOT_FOUND for name in runs}
    assert exit_codes(runs) == expected
    for name, done in runs.items():
        if name in configured:
            continue
        named = TOPIC if name in ("consume", "produce") else GROUP
        errors = [line for line in done.stderr.splitlines() if line.startswith("kshare: error:")]
        assert len(errors) == 1 and named in errors[0], (name, done.stderr)


def test_profile_add_and_show_print_no_secret(
    sweep: Sweep, sandbox: SandboxThread, tls_material: TlsMaterial
) -> None:
    settings = properties(tls_material)
    sweep.connection("shown", sandbox.bootstrap, settings)
    if sweep.via == "command-config":
        path = sweep.directory / "shown.properties"
        added = sweep.kshare(
            "profile", "add", "shown", "-b", sandbox.bootstrap, "--command-config", str(path)
        )
        assert added.returncode == 0, added.stderr
    shown = sweep.kshare("profile", "show", "shown")
    assert shown.returncode == 0, shown.stderr
    assert "sasl.mechanism: PLAIN" in shown.stdout
    as_json = sweep.kshare("profile", "show", "shown", "-o", "json")
    assert as_json.returncode == 0, as_json.stderr


def test_an_internal_error_with_debug_hides_the_password_in_its_line_and_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tls_material: TlsMaterial, closed_port: str
) -> None:
    """A bug whose message carries the password (a broker's answer echoed, a repr of a
    revealed value) is an internal error, exit 1: its line and its traceback say ***."""
    from kshare_cli.connect.settings import ConnectionSettings

    def broken(self: ConnectionSettings) -> None:
        raise RuntimeError(f"unexpected answer for password {SASL_PASSWORD}")

    # The first thing either plane asks of the settings when it connects.
    monkeypatch.setattr(ConnectionSettings, "ssl_context", broken)
    monkeypatch.setattr(ConnectionSettings, "confluent_config", broken)
    config = write_properties(tmp_path / "client.properties", properties(tls_material))
    environment: dict[str, str | None] = dict.fromkeys(CONNECTION_ENV)
    environment["KSHARE_CONFIG"] = str(tmp_path / "config.toml")
    for name, command in COMMANDS.items():
        argv = [*command, "-b", closed_port, "--command-config", str(config), "--debug"]
        result = CliRunner().invoke(app, argv, env=environment, input="a record\n")
        assert result.exit_code == ExitCode.PARTIAL, (name, result.stderr)
        assert "Traceback (most recent call last):" in result.stderr, (name, result.stderr)
        assert result.stderr.endswith(
            "RuntimeError: unexpected answer for password ***\n"
            "kshare: error: internal error: RuntimeError: unexpected answer for password ***\n"
        ), (name, result.stderr)
        for secret in SECRETS:
            assert secret not in result.stdout + result.stderr, (name, result.stderr)
