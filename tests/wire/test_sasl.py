"""SASL: the mechanisms' tokens byte for byte, and whole logins against SASL sandbox listeners.

The token tests pin the wire format (RFC 4616, RFC 7628, and SCRAM against
scramp's own server, forged signature included). The login tests run the client
against the sandbox's SASL_PLAINTEXT and SASL_SSL listeners, whose authenticator
follows Kafka's (its error messages included), and check what an operator is
told when a login fails -- and that no password ever appears in it.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import pytest
from scramp import ScramMechanism  # type: ignore[import-untyped, unused-ignore]

from kshare_cli.connect.sasl_settings import SaslSettings
from kshare_cli.connect.secret import Secret
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.connect.tls_settings import TlsSettings
from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    ExitCode,
    UsageError,
    exit_code_for,
)
from kshare_cli.kafka.api_keys import METADATA
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.sasl import OAuthBearer, Plain, Scram, mechanism_for
from tests.support.tls import USERS, SecureSandbox, TlsMaterial
from tests.support.waiting import PROMPTLY_S
from tests.wire.conftest import replaced_handler, run

PASSWORD = USERS["alice"]


def unsecured_jwt(subject: str = "alice", lifetime_s: int = 3600) -> str:
    """An ``alg: none`` JWT, what Kafka's default unsecured validator accepts."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + lifetime_s})}."


def sasl_settings(
    bootstrap: str,
    mechanism: str,
    *,
    protocol: str = "SASL_PLAINTEXT",
    username: str = "alice",
    password: str = PASSWORD,
    token: str | None = None,
    tls: TlsSettings | None = None,
) -> ConnectionSettings:
    if mechanism == "OAUTHBEARER":
        sasl = SaslSettings(mechanism, token=Secret(token or unsecured_jwt()))
    else:
        sasl = SaslSettings(mechanism, username=username, password=Secret(password))
    return ConnectionSettings(
        bootstrap_servers=(bootstrap,), security_protocol=protocol, sasl=sasl, tls=tls
    )


# -- tokens -------------------------------------------------------------------------------


def test_plain_sends_empty_authzid_user_and_password() -> None:
    assert Plain("alice", "pw").first() == b"\0alice\0pw"
    assert Plain("alice", "pw").respond(b"") is None


def test_oauthbearer_sends_the_rfc7628_initial_response() -> None:
    mechanism = OAuthBearer("header.claims.")
    assert mechanism.first() == b"n,,\x01auth=Bearer header.claims.\x01\x01"
    assert mechanism.respond(b"") is None
    # A rejected token comes back as a JSON challenge, answered with a lone %x01.
    assert mechanism.respond(b'{"status":"invalid_token"}') == b"\x01"
    with_extensions = OAuthBearer("t", [("traceId", "123"), ("logicalCluster", "lkc-1")])
    assert with_extensions.first() == (
        b"n,,\x01auth=Bearer t\x01traceId=123\x01logicalCluster=lkc-1\x01\x01"
    )


@pytest.mark.parametrize("name", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_completes_against_scramps_server(name: str) -> None:
    mechanism = ScramMechanism(name)
    info = mechanism.make_auth_info(PASSWORD, iteration_count=4096)
    server = mechanism.make_server(lambda username: info)
    client = Scram(name, "alice", PASSWORD)
    server.set_client_first(client.first().decode())
    final = client.respond(server.get_server_first().encode())
    assert final is not None
    server.set_client_final(final.decode())
    assert client.respond(server.get_server_final().encode()) is None


@pytest.mark.parametrize(
    "server_final",
    [b"v=" + base64.b64encode(b"\0" * 32), b"e=other-error"],
    ids=["forged-signature", "server-error"],
)
def test_scram_refuses_a_server_that_cannot_prove_it_knows_the_password(
    server_final: bytes,
) -> None:
    mechanism = ScramMechanism("SCRAM-SHA-256")
    info = mechanism.make_auth_info(PASSWORD, iteration_count=4096)
    server = mechanism.make_server(lambda username: info)
    client = Scram("SCRAM-SHA-256", "alice", PASSWORD)
    server.set_client_first(client.first().decode())
    assert client.respond(server.get_server_first().encode()) is not None
    with pytest.raises(AuthenticationFailed) as raised:
        client.respond(server_final)
    assert str(raised.value).startswith("SASL SCRAM-SHA-256: ")
    assert PASSWORD not in str(raised.value)


def test_unsupported_mechanisms_and_missing_credentials_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="GSSAPI is not supported"):
        mechanism_for(SaslSettings("GSSAPI", username="alice", password=Secret("x")))
    with pytest.raises(UsageError, match="needs a username and a password"):
        mechanism_for(SaslSettings("SCRAM-SHA-256", username="alice"))


# -- logins against the sandbox ------------------------------------------------------------


async def _metadata(settings: ConnectionSettings, timeout_s: float = 10) -> Any:
    async with await KafkaClient.connect(settings, timeout_s=timeout_s) as client:
        return await client.metadata([])


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_each_mechanism_logs_in_over_sasl_plaintext(
    secure_sandbox: SecureSandbox, mechanism: str
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=(mechanism,))
    assert run(_metadata(sasl_settings(sandbox.bootstrap, mechanism))).brokers


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_sasl_ssl_logs_in_over_tls(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial, mechanism: str
) -> None:
    sandbox = secure_sandbox("SASL_SSL")
    settings = sasl_settings(
        sandbox.bootstrap,
        mechanism,
        protocol="SASL_SSL",
        tls=TlsSettings(ca_file=tls_material.ca_pem),
    )
    assert run(_metadata(settings)).brokers


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_wrong_password_is_refused_at_once_with_the_brokers_reason(
    secure_sandbox: SecureSandbox, mechanism: str
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT")
    wrong = "wrong-password-1234"
    started = time.monotonic()
    with pytest.raises(AuthenticationFailed) as raised:
        run(_metadata(sasl_settings(sandbox.bootstrap, mechanism, password=wrong), timeout_s=30))
    assert time.monotonic() - started < PROMPTLY_S  # not retried until the 30 s deadline
    message = str(raised.value)
    assert message.startswith(f"SASL {mechanism} authentication as 'alice' failed at ")
    assert "Authentication failed" in message  # Kafka's own wording, from the broker
    assert wrong not in message and PASSWORD not in message
    assert "\n" not in message
    assert exit_code_for(raised.value) is ExitCode.CONNECTION


def test_an_unknown_scram_user_is_refused(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT")
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        run(_metadata(sasl_settings(sandbox.bootstrap, "SCRAM-SHA-512", username="mallory")))


def test_a_mechanism_the_listener_lacks_names_the_enabled_ones(
    secure_sandbox: SecureSandbox,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN", "SCRAM-SHA-512"))
    with pytest.raises(AuthenticationFailed) as raised:
        run(_metadata(sasl_settings(sandbox.bootstrap, "SCRAM-SHA-256")))
    assert str(raised.value) == (
        f"SASL mechanism SCRAM-SHA-256 is not enabled on {sandbox.bootstrap} "
        "(enabled: PLAIN, SCRAM-SHA-512)"
    )


def test_an_invalid_oauth_token_is_refused(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox(
        "SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",), oauth_tokens=frozenset({"another"})
    )
    with pytest.raises(AuthenticationFailed) as raised:
        run(_metadata(sasl_settings(sandbox.bootstrap, "OAUTHBEARER", token=unsecured_jwt())))
    assert str(raised.value) == (
        f"SASL OAUTHBEARER authentication failed at {sandbox.bootstrap}: "
        "the broker rejected the token (status invalid_token)"
    )


def test_an_expired_oauth_token_is_refused_before_it_is_sent(
    secure_sandbox: SecureSandbox,
) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    expired = unsecured_jwt(lifetime_s=-60)
    exp = json.loads(base64.urlsafe_b64decode(expired.split(".")[1] + "=="))["exp"]
    shown = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))
    with pytest.raises(AuthenticationFailed) as raised:
        run(_metadata(sasl_settings(sandbox.bootstrap, "OAUTHBEARER", token=expired)))
    assert re.fullmatch(
        rf"the OAUTHBEARER token expired at {shown} \(6[01] s ago\); "
        "set kshare.oauthbearer.token to a fresh token",
        str(raised.value),
    ), raised.value


def test_a_token_the_broker_calls_invalid_is_explained_by_its_claims() -> None:
    """The broker's clock may be ahead: it says invalid_token, the claims say why."""
    expired = unsecured_jwt(lifetime_s=-7200)
    mechanism = OAuthBearer(expired)
    assert mechanism.respond(b'{"status":"invalid_token"}') == b"\x01"
    assert mechanism.server_error is not None
    assert mechanism.server_error.startswith(
        "the broker rejected the token (status invalid_token): the OAUTHBEARER token expired at "
    )
    assert mechanism.server_error.endswith("(2 h ago)")


def test_sasl_against_a_plaintext_listener_says_so(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox("PLAINTEXT")
    with pytest.raises(ConnectionFailed, match="is not a SASL listener"):
        run(_metadata(sasl_settings(sandbox.bootstrap, "PLAIN")))


def test_a_reconnection_authenticates_again(secure_sandbox: SecureSandbox) -> None:
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    dropped: list[int] = []

    def drop_once(original: Any) -> Any:
        async def handler(broker: Any, request: Any, connection: Any) -> Any:
            if not dropped:
                dropped.append(request.correlation_id)
                raise ConnectionResetError("test: broker drops the connection")
            return await original(broker, request, connection)

        return handler

    async def scenario() -> None:
        settings = sasl_settings(sandbox.bootstrap, "PLAIN")
        async with await KafkaClient.connect(settings, timeout_s=10) as client:
            assert client.round_trips == 3  # ApiVersions, SaslHandshake, SaslAuthenticate
            before = client.round_trips
            with replaced_handler(sandbox, METADATA, drop_once):
                assert (await client.metadata([])).brokers
            assert dropped
            # lost Metadata; ApiVersions, SaslHandshake, SaslAuthenticate; Metadata
            assert client.round_trips - before == 5

    run(scenario())
