"""TLS from client properties, proven by real handshakes.

Each context is used against a TLS server on 127.0.0.1 that records the client
certificate it received: trusting the right CA, presenting the right identity
and checking (or, when asked, not checking) the host name are facts of a
handshake, not of attributes on an ``SSLContext``. The data plane's librdkafka
configuration is held to the same handshakes by a confluent-kafka client.
"""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kshare_cli.connect.java_properties import parse_properties
from kshare_cli.connect.property_mapping import settings_from_properties
from kshare_cli.connect.secret import Secret
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.connect.tls_settings import TlsSettings
from kshare_cli.errors import UsageError
from tests.connect.conftest import (
    CLIENT_CN,
    KEY_PASSWORD,
    KEYSTORE_PASSWORD,
    TRUSTSTORE_PASSWORD,
    Pki,
    handshake,
    tls_server,
)


def settings_for(properties: dict[str, str], port: int = 9093) -> ConnectionSettings:
    return settings_from_properties(
        {"security.protocol": "SSL", **properties}, bootstrap_servers=(f"127.0.0.1:{port}",)
    )


def one_line_pem(path: Path) -> str:
    """Inline PEM as a .properties file usually carries it: continuation lines joined."""
    lines = path.read_text().strip().splitlines()
    return parse_properties("v=" + " \\\n    ".join(lines))["v"]


def trust_options(pki: Pki) -> dict[str, dict[str, str]]:
    return {
        "ssl.truststore.location (PKCS12)": {
            "ssl.truststore.location": str(pki.truststore),
            "ssl.truststore.password": TRUSTSTORE_PASSWORD,
            "ssl.truststore.type": "PKCS12",
        },
        "ssl.truststore.location (default type JKS, PKCS12 content)": {
            "ssl.truststore.location": str(pki.truststore),
            "ssl.truststore.password": TRUSTSTORE_PASSWORD,
        },
        "ssl.truststore.type=PEM": {
            "ssl.truststore.location": str(pki.ca_pem),
            "ssl.truststore.type": "PEM",
        },
        "ssl.truststore.certificates": {
            "ssl.truststore.certificates": one_line_pem(pki.ca_pem),
            "ssl.truststore.type": "PEM",
        },
        "ssl.ca.location": {"ssl.ca.location": str(pki.ca_pem)},
        "ssl.ca.pem": {"ssl.ca.pem": pki.text(pki.ca_pem)},
    }


def identity_options(pki: Pki) -> dict[str, dict[str, str]]:
    return {
        "PKCS12 keystore": {
            "ssl.keystore.location": str(pki.keystore),
            "ssl.keystore.password": KEYSTORE_PASSWORD,
            "ssl.keystore.type": "PKCS12",
        },
        "PKCS12 keystore without password": {
            "ssl.keystore.location": str(pki.keystore_no_password)
        },
        "PEM keystore (key and chain in one file)": {
            "ssl.keystore.location": str(pki.client_combined),
            "ssl.keystore.type": "PEM",
        },
        "inline PEM (Java)": {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": one_line_pem(pki.client_cert),
            "ssl.keystore.key": one_line_pem(pki.client_key_encrypted),
            "ssl.key.password": KEY_PASSWORD,
        },
        "librdkafka PEM files": {
            "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(pki.client_key),
        },
        "librdkafka PEM files, encrypted key": {
            "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(pki.client_key_encrypted),
            "ssl.key.password": KEY_PASSWORD,
        },
        "librdkafka PEM files, traditional encrypted key": {
            "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(pki.client_key_traditional),
            "ssl.key.password": KEY_PASSWORD,
        },
        "librdkafka inline PEM": {
            "ssl.certificate.pem": pki.text(pki.client_cert),
            "ssl.key.pem": pki.text(pki.client_key),
        },
    }


TRUST_NAMES = [
    "ssl.truststore.location (PKCS12)",
    "ssl.truststore.location (default type JKS, PKCS12 content)",
    "ssl.truststore.type=PEM",
    "ssl.truststore.certificates",
    "ssl.ca.location",
    "ssl.ca.pem",
]
IDENTITY_NAMES = [
    "PKCS12 keystore",
    "PKCS12 keystore without password",
    "PEM keystore (key and chain in one file)",
    "inline PEM (Java)",
    "librdkafka PEM files",
    "librdkafka PEM files, encrypted key",
    "librdkafka PEM files, traditional encrypted key",
    "librdkafka inline PEM",
]


@pytest.mark.parametrize("trust", TRUST_NAMES)
def test_every_way_to_name_the_ca_verifies_the_server(pki: Pki, trust: str) -> None:
    context = settings_for(trust_options(pki)[trust]).ssl_context()
    assert context is not None
    with tls_server(pki.server_chain, pki.server_key) as server:
        assert handshake(context, server.port, "127.0.0.1") == b"k"
        assert handshake(context, server.port, "localhost") == b"k"
        assert server.wait_for(2) == ["-", "-"]


@pytest.mark.parametrize("identity", IDENTITY_NAMES)
def test_every_way_to_give_a_client_certificate_is_presented(pki: Pki, identity: str) -> None:
    properties = {"ssl.ca.location": str(pki.ca_pem), **identity_options(pki)[identity]}
    context = settings_for(properties).ssl_context()
    assert context is not None
    with tls_server(pki.server_chain, pki.server_key, client_ca=pki.ca_pem) as server:
        assert handshake(context, server.port) == b"k"
        assert server.wait_for(1) == [CLIENT_CN]


def test_the_system_cas_do_not_trust_a_private_ca(pki: Pki) -> None:
    context = settings_for({}).ssl_context()
    assert context is not None
    with tls_server(pki.server_chain, pki.server_key) as server:
        with pytest.raises(ssl.SSLCertVerificationError):
            handshake(context, server.port)


def test_an_unrelated_ca_does_not_verify_the_server(pki: Pki) -> None:
    context = settings_for({"ssl.ca.location": str(pki.untrusted_ca_pem)}).ssl_context()
    assert context is not None
    with tls_server(pki.server_chain, pki.server_key) as server:
        with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
            handshake(context, server.port)


def test_hostname_verification_is_on_by_default(pki: Pki) -> None:
    context = settings_for({"ssl.ca.location": str(pki.ca_pem)}).ssl_context()
    assert context is not None
    with tls_server(pki.other_host_chain, pki.other_host_key) as server:
        with pytest.raises(ssl.SSLCertVerificationError, match="mismatch|doesn't match"):
            handshake(context, server.port, "127.0.0.1")
        assert handshake(context, server.port, "kafka.example") == b"k"


@pytest.mark.parametrize(
    "properties",
    [
        {"ssl.endpoint.identification.algorithm": ""},  # Java
        {"ssl.endpoint.identification.algorithm": "none"},  # librdkafka
    ],
)
def test_empty_endpoint_identification_turns_hostname_checks_off(
    pki: Pki, properties: dict[str, str]
) -> None:
    context = settings_for({"ssl.ca.location": str(pki.ca_pem), **properties}).ssl_context()
    assert context is not None
    with tls_server(pki.other_host_chain, pki.other_host_key) as server:
        assert handshake(context, server.port, "127.0.0.1") == b"k"
    # ... but the certificate chain is still verified.
    untrusted = settings_for({"ssl.ca.location": str(pki.untrusted_ca_pem), **properties})
    untrusted_context = untrusted.ssl_context()
    assert untrusted_context is not None
    with tls_server(pki.other_host_chain, pki.other_host_key) as server:
        with pytest.raises(ssl.SSLCertVerificationError):
            handshake(untrusted_context, server.port, "127.0.0.1")


def test_certificate_verification_can_be_turned_off_librdkafka_style(pki: Pki) -> None:
    settings = settings_for({"enable.ssl.certificate.verification": "false"})
    context = settings.ssl_context()
    assert context is not None
    with tls_server(pki.server_chain, pki.server_key) as server:
        assert handshake(context, server.port, "anything.example") == b"k"
    assert settings.librdkafka_config()["enable.ssl.certificate.verification"] == "false"


def test_the_key_never_reaches_disk_in_plaintext_and_the_copy_is_removed(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    written: list[bytes] = []
    real_load = ssl.SSLContext.load_cert_chain

    def spy(self: ssl.SSLContext, certfile: str, *args: object, **kwargs: object) -> None:
        written.append(Path(certfile).read_bytes())
        assert Path(certfile).stat().st_mode & 0o777 == 0o600
        real_load(self, certfile, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    settings_for(identity_options(pki)["PKCS12 keystore"]).ssl_context()
    assert len(written) == 1
    assert b"BEGIN ENCRYPTED PRIVATE KEY" in written[0]
    assert b"BEGIN PRIVATE KEY" not in written[0]
    assert list(tmp_path.iterdir()) == []


# --- errors ------------------------------------------------------------------------------------

SECRETS = (KEY_PASSWORD, KEYSTORE_PASSWORD, TRUSTSTORE_PASSWORD, "wrong-5ecret")


def context_error(properties: dict[str, str]) -> str:
    with pytest.raises(UsageError) as caught:
        settings_for(properties).ssl_context()
    message = str(caught.value)
    assert "\n" not in message
    for secret in SECRETS:
        assert secret not in message
    return message


def test_missing_files_are_named(pki: Pki, tmp_path: Path) -> None:
    missing = tmp_path / "missing.p12"
    message = context_error({"ssl.truststore.location": str(missing)})
    assert message == f"cannot read the truststore {missing}: No such file or directory"
    message = context_error({"ssl.ca.location": str(missing)})
    assert message == f"cannot read the CA file {missing}: No such file or directory"
    message = context_error(
        {"ssl.keystore.location": str(missing), "ssl.keystore.password": KEYSTORE_PASSWORD}
    )
    assert message == f"cannot read the keystore {missing}: No such file or directory"
    message = context_error(
        {"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(missing)}
    )
    assert message == f"cannot read the client key {missing}: No such file or directory"


def test_wrong_store_passwords_name_the_store_not_the_password(pki: Pki) -> None:
    message = context_error(
        {"ssl.keystore.location": str(pki.keystore), "ssl.keystore.password": "wrong-5ecret"}
    )
    assert message == (
        f"cannot open the PKCS12 keystore {pki.keystore}: wrong or missing "
        "ssl.keystore.password, or not a PKCS12 file"
    )
    message = context_error(
        {"ssl.truststore.location": str(pki.truststore), "ssl.truststore.password": "wrong-5ecret"}
    )
    assert message.startswith(f"cannot open the PKCS12 truststore {pki.truststore}: wrong")
    message = context_error({"ssl.truststore.location": str(pki.truststore)})
    assert "wrong or missing ssl.truststore.password" in message


def test_encrypted_keys_need_the_right_password(pki: Pki) -> None:
    files = {
        "ssl.ca.location": str(pki.ca_pem),
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key_encrypted),
    }
    assert context_error(files) == (
        f"the private key in {pki.client_key_encrypted} is encrypted: set ssl.key.password"
    )
    assert context_error({**files, "ssl.key.password": "wrong-5ecret"}) == (
        f"cannot load the private key in {pki.client_key_encrypted}: wrong ssl.key.password"
    )


def test_a_key_that_does_not_match_the_certificate_is_refused(pki: Pki) -> None:
    message = context_error(
        {"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.stray_key)}
    )
    assert message == f"{pki.client_cert}: the private key does not match the certificate"


@pytest.mark.parametrize("which", ["truststore", "keystore"])
def test_jks_stores_are_refused_with_the_keytool_conversion(pki: Pki, which: str) -> None:
    properties = {f"ssl.{which}.location": str(pki.jks), f"ssl.{which}.password": "changeit"}
    with pytest.raises(UsageError) as caught:
        settings_for(properties).ssl_context()
    message = str(caught.value)
    assert f"{pki.jks} is a JKS {which}: JKS {which}s are not supported" in message
    assert f"keytool -importkeystore -srckeystore {pki.jks}" in message
    assert "-deststoretype PKCS12" in message
    assert "changeit" not in message
    with pytest.raises(UsageError, match=f"JKS {which}s are not supported"):
        settings_for(properties).librdkafka_config()


def test_not_pem_where_pem_is_expected(pki: Pki) -> None:
    message = context_error({"ssl.ca.location": str(pki.truststore)})
    assert message.startswith(f"the CA file {pki.truststore} is not PEM (a PKCS12 truststore?")
    message = context_error({"ssl.ca.location": str(pki.client_key)})
    assert message == f"the CA file {pki.client_key} holds no PEM certificate"
    message = context_error({"ssl.ca.pem": "-----BEGIN CERTIFICATE-----\nnot base64!\n"})
    assert message == "the inline CA PEM holds no PEM certificate"


def test_store_types_and_combinations_kafka_refuses(pki: Pki) -> None:
    with pytest.raises(UsageError, match="'BCFKS' is not supported"):
        settings_for({"ssl.truststore.type": "BCFKS"})
    with pytest.raises(UsageError, match="needs ssl.truststore.type=PEM"):
        settings_for({"ssl.truststore.certificates": pki.text(pki.ca_pem)})
    with pytest.raises(UsageError, match="set only one of ssl.truststore.location and ssl.ca"):
        settings_for(
            {"ssl.truststore.location": str(pki.truststore), "ssl.ca.location": str(pki.ca_pem)}
        )
    with pytest.raises(UsageError, match="ssl.keystore.certificate.chain is missing"):
        settings_for({"ssl.keystore.type": "PEM", "ssl.keystore.key": "k"})
    with pytest.raises(
        UsageError, match="ssl.keystore.password: is set, but ssl.keystore.location is not"
    ):
        settings_for({"ssl.keystore.password": KEYSTORE_PASSWORD})
    with pytest.raises(UsageError, match="cannot be used with ssl.keystore.type=PEM"):
        settings_for(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(pki.client_combined),
                "ssl.keystore.password": KEYSTORE_PASSWORD,
            }
        )
    with pytest.raises(UsageError, match="ssl.endpoint.identification.algorithm.*'ldaps'"):
        settings_for({"ssl.endpoint.identification.algorithm": "ldaps"})


def test_a_pkcs12_truststore_becomes_pem_text(pki: Pki) -> None:
    settings = settings_for(trust_options(pki)["ssl.truststore.location (PKCS12)"])
    assert settings.tls is not None
    pem = settings.tls.trusted_pem()
    assert pem is not None
    assert pem == pki.text(pki.ca_pem)  # the one CA, re-encoded exactly
    config = settings.librdkafka_config()
    assert config["ssl.ca.pem"] == pem
    assert "ssl.truststore.location" not in config


# --- the data plane: librdkafka does the same handshakes --------------------------------------


@pytest.mark.parametrize(
    ("trust", "identity"),
    [
        ("ssl.truststore.location (PKCS12)", "PKCS12 keystore"),
        ("ssl.ca.location", "librdkafka PEM files, encrypted key"),
        ("ssl.truststore.certificates", "inline PEM (Java)"),
        ("ssl.truststore.type=PEM", "PEM keystore (key and chain in one file)"),
        ("ssl.ca.pem", "librdkafka inline PEM"),
        ("ssl.ca.location", "librdkafka PEM files, traditional encrypted key"),
    ],
)
def test_librdkafka_presents_the_same_identity_and_trusts_the_same_ca(
    pki: Pki, trust: str, identity: str
) -> None:
    with tls_server(pki.server_chain, pki.server_key, client_ca=pki.ca_pem) as server:
        properties = {**trust_options(pki)[trust], **identity_options(pki)[identity]}
        config = settings_for(properties, port=server.port).librdkafka_config()
        # librdkafka connects to the bootstrap server as soon as the client exists.
        producer = Producer({**config, "reconnect.backoff.ms": 100})
        seen = server.wait_for(1)
        del producer
    assert seen[0] == CLIENT_CN


@pytest.mark.parametrize(("algorithm", "outcome"), [("https", "error:"), ("none", "-"), ("", "-")])
def test_librdkafka_checks_the_host_name_unless_told_not_to(
    pki: Pki, algorithm: str, outcome: str
) -> None:
    with tls_server(pki.other_host_chain, pki.other_host_key) as server:
        properties = {
            "ssl.ca.location": str(pki.ca_pem),
            "ssl.endpoint.identification.algorithm": algorithm,
        }
        config = settings_for(properties, port=server.port).librdkafka_config()
        producer = Producer({**config, "reconnect.backoff.ms": 100})
        seen = server.wait_for(1)
        del producer
    # "error:": librdkafka hung up in the handshake (kafka.example is not 127.0.0.1);
    # "-": the handshake completed (this server asks for no client certificate).
    assert seen[0].startswith(outcome)


def test_tls_settings_built_directly_behave_the_same(pki: Pki) -> None:
    tls = TlsSettings(
        ca_file=pki.ca_pem,
        keystore_file=pki.keystore,
        keystore_password=Secret(KEYSTORE_PASSWORD),
    )
    with tls_server(pki.server_chain, pki.server_key, client_ca=pki.ca_pem) as server:
        assert handshake(tls.ssl_context(), server.port) == b"k"
        assert server.wait_for(1) == [CLIENT_CN]
    assert KEYSTORE_PASSWORD not in repr(tls)
