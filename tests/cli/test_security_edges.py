"""TLS and SASL edges on every plane (issue 19): each fails at once, in one line, with the fix.

The same mistake must read the same whichever command meets it: ``list`` goes
through kshare's own client, ``consume`` and ``produce`` through librdkafka, whose
words are weaker (a hostname mismatch blamed on the CA, a SASL listener reported
as "all brokers are down"), so the data plane asks the control plane's
connection check and reports its line. Every case runs the installed ``kshare``
in a subprocess with a 30 s ``--timeout`` and asserts the README's exit code,
one stderr line naming the cause and the fix, no traceback, no secret, and a
failure well inside 5 s.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kshare_cli.errors import ExitCode
from kshare_cli.sandbox.security import ListenerSecurity, server_ssl_context
from tests.cli.conftest import KSHARE, Kshare, assert_one_error_line, process_env, write_properties
from tests.support.sandbox import read_properties, skip_on_real_cluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import USERS, SecureSandbox, TlsMaterial
from tests.support.waiting import PROMPTLY_S

#: Every command that connects, each with what it needs to get as far as connecting.
COMMANDS = {
    "list": ["list"],
    "consume": ["consume", "-t", "edges", "-g", "edges"],
    "produce": ["produce", "-t", "edges"],
}


def run(
    kshare: Kshare, command: str, bootstrap: str, config: Path | None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``kshare <command>`` as an operator runs it, with --timeout 30s; (result, seconds)."""
    argv = [str(KSHARE), *COMMANDS[command], "-b", bootstrap, "--timeout", "30s"]
    if config is not None:
        argv += ["--command-config", str(config)]
    started = time.monotonic()
    result = subprocess.run(
        argv,
        input="a record\n",
        capture_output=True,
        text=True,
        env=process_env(kshare.environment()),
        timeout=60,
        check=False,
    )
    return result, time.monotonic() - started


def jwt(**claims: float | str) -> str:
    """An unsigned JWT with ``claims``, as an identity provider's token looks to kshare."""

    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': 'alice', **claims})}."


def utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@pytest.fixture
def closed_port() -> Iterator[str]:
    """An address nothing listens on: a command that connects fails there with exit 3."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"127.0.0.1:{port}"


# -- 1. an OAUTHBEARER token whose claims say no broker will take it --------------------------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ({"exp": -3600}, "the OAUTHBEARER token expired at {exp} (60 min ago)"),
        ({"exp": 7200, "nbf": 3600}, "the OAUTHBEARER token is not valid before {nbf} (in 60 min)"),
        ({"exp": 7200, "iat": 3600}, "the OAUTHBEARER token was issued in the future, at {iat}"),
    ],
    ids=["expired", "not-yet-valid", "issued-in-the-future"],
)
def test_a_token_whose_claims_refuse_it_fails_at_once_naming_the_claim(
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tmp_path: Path,
    command: str,
    claims: dict[str, int],
    words: str,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    now = int(time.time())
    times = {name: now + offset for name, offset in claims.items()}
    token = jwt(**times)
    config = write_properties(
        tmp_path / "oauth.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "kshare.oauthbearer.token": token,
        },
    )
    result, elapsed = run(kshare, command, sandbox.bootstrap, config)
    assert result.returncode == ExitCode.CONNECTION, result.stderr
    expected = words.format(**{name: utc(value) for name, value in times.items()})
    assert_one_error_line(
        result.stderr, f"kshare: error: {expected}", "set kshare.oauthbearer.token to a fresh token"
    )
    assert token not in result.stderr and token.split(".")[1] not in result.stderr
    assert elapsed < PROMPTLY_S, elapsed


# -- 2. no SASL on a SASL listener: Kafka answers ApiVersions, then hangs up ------------------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_client_without_sasl_on_a_sasl_listener_is_told_to_set_it(
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    tmp_path: Path,
    command: str,
    listener: str,
) -> None:
    sandbox = secure_sandbox(listener, mechanisms=("SCRAM-SHA-512",))
    config = None
    if listener == "SASL_SSL":  # a TLS-only client: the handshake and ApiVersions succeed
        config = write_properties(
            tmp_path / "ssl.properties",
            {"security.protocol": "SSL", "ssl.ca.location": str(tls_material.ca_pem)},
        )
    result, elapsed = run(kshare, command, sandbox.bootstrap, config)
    assert result.returncode == ExitCode.CONNECTION, result.stderr
    assert_one_error_line(
        result.stderr,
        f"kshare: error: {sandbox.bootstrap} closed the connection at the first request after "
        "ApiVersions",
        "(it offers SCRAM-SHA-512)",
        f"set security.protocol={listener} and sasl.mechanism",
    )
    assert elapsed < PROMPTLY_S, elapsed


def _real_sasl_cluster() -> tuple[str, str, dict[str, str]] | None:
    """(bootstrap, protocol, its properties without SASL) when the real test cluster is SASL.

    With ``KSHARE_TEST_BOOTSTRAP`` and a ``KSHARE_TEST_COMMAND_CONFIG`` whose
    ``security.protocol`` is SASL_PLAINTEXT or SASL_SSL, the same mistake is made against
    that cluster: its own properties, less every ``sasl.*`` one, with the protocol left as
    PLAINTEXT or SSL (the TLS settings kept).
    """
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
    if not bootstrap or not config_path:
        return None
    properties = read_properties(config_path)
    protocol = properties.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return None
    kept = {key: value for key, value in properties.items() if not key.startswith("sasl.")}
    kept["security.protocol"] = "SSL" if protocol == "SASL_SSL" else "PLAINTEXT"
    return bootstrap, protocol, kept


REAL_SASL_CLUSTER = _real_sasl_cluster()


if REAL_SASL_CLUSTER is not None:  # defined only where there is such a cluster: never a skip

    @pytest.mark.parametrize("command", COMMANDS)
    def test_a_client_without_sasl_on_the_real_clusters_listener_is_told_to_set_it(
        kshare: Kshare, tmp_path: Path, command: str
    ) -> None:
        assert REAL_SASL_CLUSTER is not None
        bootstrap, protocol, properties = REAL_SASL_CLUSTER
        config = write_properties(tmp_path / "no-sasl.properties", properties)
        result, elapsed = run(kshare, command, bootstrap, config)
        assert result.returncode == ExitCode.CONNECTION, result.stderr
        assert_one_error_line(
            result.stderr,
            "kshare: error: ",
            "closed the connection at the first request after ApiVersions",
            f"set security.protocol={protocol} and sasl.mechanism",
        )
        assert elapsed < PROMPTLY_S, elapsed


# -- 3. a login module that cannot log in with the mechanism ----------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_a_mechanism_the_login_module_cannot_serve_is_refused_before_connecting(
    kshare: Kshare, closed_port: str, tmp_path: Path, command: str
) -> None:
    """Java: ``Failed to create SaslClient with mechanism SCRAM-SHA-512`` (PlainLoginModule
    registers no SCRAM client). Exit 2 on a port where connecting would have been exit 3."""
    password = USERS["alice"]
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="alice" password="{password}";',
        },
    )
    result, elapsed = run(kshare, command, closed_port, config)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert_one_error_line(
        result.stderr,
        "kshare: error: ",
        "sasl.jaas.config",
        "PlainLoginModule does not log in with sasl.mechanism=SCRAM-SHA-512",
        '"Failed to create SaslClient with mechanism SCRAM-SHA-512"',
        "use org.apache.kafka.common.security.scram.ScramLoginModule, or set sasl.mechanism=PLAIN",
    )
    assert password not in result.stderr
    assert elapsed < PROMPTLY_S, elapsed


# -- 4. TLS failures in the data plane, in the control plane's words --------------------------


@pytest.fixture
def misnamed_broker(tls_material: TlsMaterial, tmp_path: Path) -> Iterator[SandboxThread]:
    """An SSL listener on 127.0.0.1 whose certificate (from the trusted CA) names another host."""
    leaf = tls_material.ca.issue_cert("broker.example.com")
    cert, key = tmp_path / "misnamed.pem", tmp_path / "misnamed.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key.write_bytes(leaf.private_key_pem.bytes())
    sandbox = SandboxThread(
        security=ListenerSecurity(protocol="SSL", ssl_context=server_ssl_context(cert, key))
    )
    sandbox.start()
    yield sandbox
    sandbox.stop()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_hostname_mismatch_is_named_on_every_plane(
    kshare: Kshare,
    misnamed_broker: SandboxThread,
    tls_material: TlsMaterial,
    tmp_path: Path,
    command: str,
) -> None:
    config = write_properties(
        tmp_path / "ssl.properties",
        {"security.protocol": "SSL", "ssl.ca.location": str(tls_material.ca_pem)},
    )
    result, elapsed = run(kshare, command, misnamed_broker.bootstrap, config)
    assert result.returncode == ExitCode.CONNECTION, result.stderr
    line = assert_one_error_line(
        result.stderr,
        "kshare: error: TLS: certificate verify failed: IP address mismatch, certificate is not "
        "valid for '127.0.0.1'",
        misnamed_broker.bootstrap,
    )
    assert "ssl.ca.location" not in line  # librdkafka's guess: the CA is fine
    assert elapsed < PROMPTLY_S, elapsed


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_client_certificate_is_named_on_every_plane(
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    tmp_path: Path,
    command: str,
) -> None:
    sandbox = secure_sandbox("SSL", require_client_cert=True)
    config = write_properties(
        tmp_path / "ssl.properties",
        {"security.protocol": "SSL", "ssl.ca.location": str(tls_material.ca_pem)},
    )
    result, elapsed = run(kshare, command, sandbox.bootstrap, config)
    assert result.returncode == ExitCode.CONNECTION, result.stderr
    line = assert_one_error_line(
        result.stderr,
        f"kshare: error: TLS: {sandbox.bootstrap} closed the connection",
        "the broker may require a client certificate (ssl.client.auth=required)",
    )
    assert "alert number 42" not in line
    assert elapsed < PROMPTLY_S, elapsed


# -- 5. a TLS listener reached without TLS (issue 24) -----------------------------------------

TLS_LISTENER = "a TLS listener; set security.protocol=SSL or SASL_SSL"
#: librdkafka reconnects to a TLS listener dozens of times a second and calls it only "all
#: brokers are down": the data plane must stop as soon as the control plane says what it is,
#: within PROMPTLY_S of a 30 s --timeout.


def _real_tls_cluster() -> tuple[str, dict[str, str]] | None:
    """(bootstrap, its properties without TLS or SASL) when the real test cluster is TLS."""
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
    if not bootstrap or not config_path:
        return None
    properties = read_properties(config_path)
    if properties.get("security.protocol", "PLAINTEXT").upper() not in ("SSL", "SASL_SSL"):
        return None
    kept = {
        key: value
        for key, value in properties.items()
        if not key.startswith(("ssl.", "sasl.")) and key != "security.protocol"
    }
    return bootstrap, kept


@pytest.fixture
def tls_listener(secure_sandbox: SecureSandbox, tmp_path: Path) -> tuple[str, Path | None]:
    """(bootstrap, a plaintext --command-config or None): a real TLS cluster, else the sandbox."""
    real = _real_tls_cluster()
    if real is not None:
        bootstrap, properties = real
        return bootstrap, write_properties(tmp_path / "plaintext.properties", properties)
    return secure_sandbox("SSL").bootstrap, None


@pytest.mark.parametrize("command", COMMANDS)
def test_a_tls_listener_reached_without_tls_is_named_at_once_on_every_plane(
    kshare: Kshare, tls_listener: tuple[str, Path | None], command: str
) -> None:
    """consume and produce waited out --timeout (exit 4) while list said this in 0.5 s."""
    bootstrap, config = tls_listener
    result, elapsed = run(kshare, command, bootstrap, config)
    assert result.returncode == ExitCode.CONNECTION, result.stderr
    assert_one_error_line(
        result.stderr, "kshare: error: ", "does not answer as a Kafka broker", TLS_LISTENER
    )
    assert elapsed < PROMPTLY_S, elapsed


# -- 6. mistakes in the TLS files: one wording for every command (issue 24) --------------------

WRONG_SECRET = "Wr0ng-secret-24"


def _secured_bootstrap(secure_sandbox: SecureSandbox) -> str:
    """Where the command would connect: these mistakes are refused before it does."""
    return (
        os.environ.get("KSHARE_TEST_BOOTSTRAP")
        or secure_sandbox("SSL", require_client_cert=True).bootstrap
    )


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("store", ["pem-key", "pkcs12-keystore"])
def test_a_wrong_key_or_keystore_password_reads_the_same_on_every_plane(
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    tmp_path: Path,
    command: str,
    store: str,
) -> None:
    """consume and produce said librdkafka's ``ssl.key.location failed: ... PEM lib``."""
    properties = {"security.protocol": "SSL", "ssl.ca.location": str(tls_material.ca_pem)}
    if store == "pem-key":
        properties |= {
            "ssl.certificate.location": str(tls_material.client_cert),
            "ssl.key.location": str(tls_material.client_key_encrypted),
            "ssl.key.password": WRONG_SECRET,
        }
        expected = (
            f"kshare: error: cannot load the private key in {tls_material.client_key_encrypted}: "
            "wrong ssl.key.password"
        )
    else:
        properties |= {
            "ssl.keystore.location": str(tls_material.keystore),
            "ssl.keystore.password": WRONG_SECRET,
        }
        expected = (
            f"kshare: error: cannot open the PKCS12 keystore {tls_material.keystore}: wrong or "
            "missing ssl.keystore.password"
        )
    config = write_properties(tmp_path / "mtls.properties", properties)
    result, elapsed = run(kshare, command, _secured_bootstrap(secure_sandbox), config)
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = assert_one_error_line(result.stderr, expected)
    assert "PEM lib" not in line and "PKCS12 routines" not in line
    assert WRONG_SECRET not in result.stderr
    assert elapsed < PROMPTLY_S, elapsed


@pytest.mark.parametrize("command", COMMANDS)
def test_a_keystore_given_as_the_truststore_is_refused(
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tls_material: TlsMaterial,
    tmp_path: Path,
    command: str,
) -> None:
    """Java's TrustManagerFactory finds no trusted entry in a keystore; kshare trusted the
    key's own certificate chain, so any broker that certificate's CA signed."""
    config = write_properties(
        tmp_path / "truststore.properties",
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(tls_material.keystore),
            "ssl.truststore.password": tls_material.keystore_password,
            "ssl.truststore.type": "PKCS12",
        },
    )
    result, elapsed = run(kshare, command, _secured_bootstrap(secure_sandbox), config)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert_one_error_line(
        result.stderr,
        f"kshare: error: ssl.truststore.location {tls_material.keystore} is a keystore "
        "(it holds a private key)",
        "ssl.keystore.location",
    )
    assert tls_material.keystore_password not in result.stderr
    assert elapsed < PROMPTLY_S, elapsed


# -- 7. SASL settings that cannot work, named for what they are (issue 24) ---------------------


def _sasl_bootstrap(secure_sandbox: SecureSandbox) -> str:
    return (
        os.environ.get("KSHARE_TEST_BOOTSTRAP")
        or secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN", "OAUTHBEARER")).bootstrap
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_a_misspelt_sasl_jaas_config_is_named_as_the_cause(
    kshare: Kshare, secure_sandbox: SecureSandbox, tmp_path: Path, command: str
) -> None:
    """Other misspelt keys got "did you mean"; this one only "needs a username and password"."""
    password = USERS["alice"]
    config = write_properties(
        tmp_path / "typo.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.confg": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="alice" password="{password}";',
        },
    )
    result, elapsed = run(kshare, command, _sasl_bootstrap(secure_sandbox), config)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert_one_error_line(
        result.stderr,
        "kshare: error: SASL/PLAIN needs a username and password",
        "unknown property sasl.jaas.confg (did you mean sasl.jaas.config?)",
    )
    assert password not in result.stderr
    assert elapsed < PROMPTLY_S, elapsed


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("options", "words", "hint"),
    [
        (
            'unsecuredLoginLifetimeSeconds="0"',
            "the OAUTHBEARER token expired at",
            "minted from sasl.jaas.config with unsecuredLoginLifetimeSeconds=0: set it to a "
            "positive number of seconds",
        ),
        (
            'unsecuredLoginNumberClaim_nbf="4102444800"',
            "the OAUTHBEARER token is not valid before 2100-01-01T00:00:00Z",
            "minted from sasl.jaas.config's unsecuredLogin* options: fix the claim there",
        ),
    ],
    ids=["expired", "not-yet-valid"],
)
def test_a_minted_token_that_no_broker_takes_names_the_login_modules_options(
    kshare: Kshare,
    secure_sandbox: SecureSandbox,
    tmp_path: Path,
    command: str,
    options: str,
    words: str,
    hint: str,
) -> None:
    """No static token is configured, so "set kshare.oauthbearer.token" was the wrong fix."""
    config = write_properties(
        tmp_path / "unsecured.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
            f'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice" {options};',
        },
    )
    result, elapsed = run(kshare, command, _sasl_bootstrap(secure_sandbox), config)
    assert result.returncode == ExitCode.CONNECTION, result.stderr
    line = assert_one_error_line(result.stderr, f"kshare: error: {words}", hint)
    assert "kshare.oauthbearer.token" not in line
    assert elapsed < PROMPTLY_S, elapsed


# -- 8. a static OAUTHBEARER token's start-up (issue 24) ---------------------------------------


def test_consume_with_a_static_token_builds_its_two_clients_side_by_side(
    kshare: Kshare, secure_sandbox: SecureSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """confluent-kafka builds a client that has an ``oauth_cb`` in whole seconds (it sleeps 1 s
    before the first token can be set), so the share consumer and the preflight's AdminClient,
    built in turn, cost a static token's ``kshare consume`` 2 s where PLAIN's took 0.2 s. The
    fact that cannot be a race: while one of them is being built, so is the other.
    """
    from kshare_cli.dataplane.clients import new_admin, new_share_consumer

    skip_on_real_cluster("watches kshare's own client constructions in-process")
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    now = int(time.time())
    config = write_properties(
        tmp_path / "oauth.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "kshare.oauthbearer.token": jwt(exp=now + 3600, iat=now),
        },
    )
    building: dict[str, tuple[float, float]] = {}

    def timed(name: str, build: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def wrapper(settings: Any) -> Any:
            started = time.monotonic()
            try:
                return build(settings)
            finally:
                building[name] = (started, time.monotonic())

        return wrapper

    monkeypatch.setattr(
        "kshare_cli.consumer.share_consume.new_share_consumer",
        timed("consumer", new_share_consumer),
    )
    monkeypatch.setattr("kshare_cli.consumer.preflight.new_admin", timed("admin", new_admin))
    result = kshare.run(
        "consume", "-t", "no-such-topic", "-g", "g", "-b", sandbox.bootstrap,
        "--command-config", str(config), "--timeout", "30s", connect=False,
    )  # fmt: skip
    assert result.exit_code == ExitCode.NOT_FOUND, result.stderr
    assert "oauth" not in result.stderr.lower()
    (consumer_from, consumer_to), (admin_from, admin_to) = building["consumer"], building["admin"]
    assert consumer_from < admin_to and admin_from < consumer_to, building
