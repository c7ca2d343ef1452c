"""Client properties (Java and librdkafka names) to one settings object, and back out to
librdkafka; SASL credentials, OAUTHBEARER tokens, warnings, and secrets that never show."""

from __future__ import annotations

import base64
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import pytest
import trustme
from confluent_kafka import Producer

from kshare_cli.connect.bearer_tokens import UnsecuredJwt
from kshare_cli.connect.java_properties import load_properties
from kshare_cli.connect.property_mapping import settings_from_properties
from kshare_cli.connect.sasl_settings import SaslSettings
from kshare_cli.connect.secret import Secret
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.connect.tls_settings import TlsSettings
from kshare_cli.errors import UsageError

PASSWORD = "pa55-W0rd-SECRET"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="alice" password="{PASSWORD}";'
)
SCRAM_JAAS = PLAIN_JAAS.replace("plain.PlainLoginModule", "scram.ScramLoginModule")


def settings(properties: dict[str, str], **origins: str) -> ConnectionSettings:
    return settings_from_properties(
        properties, bootstrap_servers=("kafka:9092",), origins=origins or None
    )


def jwt_parts(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    header, payload, signature = token.split(".")

    def decode(part: str) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(
            base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        )
        return decoded

    return decode(header), decode(payload), signature


# --- SASL --------------------------------------------------------------------------------------


def test_a_kafka_tools_command_config_file(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# what an operator passes to kafka-share-groups.sh --command-config\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="alice" \\\n'
        f'    password="{PASSWORD}";\n'
        "ssl.truststore.location=/etc/kafka/truststore.p12\n"
        "ssl.truststore.password=changeit\n"
        "ssl.truststore.type=PKCS12\n"
        "client.id=ops\n"
        "request.timeout.ms=15000\n"
    )
    result = settings_from_properties(load_properties(path), bootstrap_servers=("k:9093",))
    assert result == ConnectionSettings(
        bootstrap_servers=("k:9093",),
        security_protocol="SASL_SSL",
        tls=TlsSettings(
            truststore_file=Path("/etc/kafka/truststore.p12"),
            truststore_password=Secret("changeit"),
        ),
        sasl=SaslSettings(mechanism="SCRAM-SHA-512", username="alice", password=Secret(PASSWORD)),
        client_id="ops",
        request_timeout_ms=15000,
    )
    assert result.warnings == ()


@pytest.mark.parametrize(
    ("mechanism", "module"),
    [
        ("PLAIN", "plain.PlainLoginModule"),
        ("PLAIN", "scram.ScramLoginModule"),
        ("SCRAM-SHA-256", "scram.ScramLoginModule"),
        ("SCRAM-SHA-512", "scram.ScramLoginModule"),
    ],
)
def test_plain_and_scram_modules_both_carry_username_and_password(
    mechanism: str, module: str
) -> None:
    # As in Java: both modules put the same credentials in the Subject, and PLAIN's SASL
    # client is the JDK's own; SCRAM's comes only with ScramLoginModule.
    jaas = (
        f"org.apache.kafka.common.security.{module} required "
        f'username="alice" password="{PASSWORD}";'
    )
    result = settings(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": jaas,
        }
    )
    assert result.sasl == SaslSettings(mechanism, username="alice", password=Secret(PASSWORD))
    assert result.tls is None


def test_librdkafka_sasl_names() -> None:
    result = settings(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanisms": "scram-sha-256",
            "sasl.username": "bob",
            "sasl.password": PASSWORD,
        }
    )
    assert result.security_protocol == "SASL_PLAINTEXT"
    assert result.sasl == SaslSettings("SCRAM-SHA-256", username="bob", password=Secret(PASSWORD))


def test_values_are_trimmed_as_kafkas_configdef_trims_them() -> None:
    result = settings(
        {
            "security.protocol": " SASL_PLAINTEXT\t",
            "sasl.mechanism": "PLAIN ",
            "sasl.jaas.config": PLAIN_JAAS + "   ",
        }
    )
    assert result.sasl is not None and result.sasl.mechanism == "PLAIN"


def test_jaas_wins_over_librdkafka_credentials_and_says_so() -> None:
    result = settings(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "sasl.username": "bob",
            "sasl.password": "other",
        }
    )
    assert result.sasl is not None and result.sasl.username == "alice"
    assert result.warnings == (
        "ignored as not used with these settings: sasl.password, sasl.username",
    )


def test_gssapi_is_kafkas_default_and_is_refused_clearly() -> None:
    with pytest.raises(UsageError) as caught:
        settings({"security.protocol": "SASL_SSL", "sasl.jaas.config": PLAIN_JAAS})
    assert str(caught.value) == (
        "sasl.mechanism: GSSAPI (Kerberos) (Kafka's default when it is not set) is not "
        "supported; set sasl.mechanism to one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"
    )
    with pytest.raises(UsageError, match=r"^sasl.mechanism \(from f.properties\): GSSAPI"):
        settings(
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
            **{"sasl.mechanism": "f.properties"},
        )


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol: 'TLS' is not one of PLAINTEXT, SSL,"),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"},
            "sasl.mechanism: 'AWS_MSK_IAM' is not supported; use one of PLAIN,",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
            "SASL/PLAIN needs a username and password: set sasl.jaas.config",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;",
            },
            "login module com.sun.security.auth.module.Krb5LoginModule is not supported",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="a";',
            },
            "OAuthBearerLoginModule does not log in with sasl.mechanism=PLAIN",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                f'required password="{PASSWORD}";',
            },
            "PlainLoginModule has no username option",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                f'required username="a" password="{PASSWORD}" tokenauth="true";',
            },
            "delegation tokens (tokenauth) are not supported",
        ),
        ({"request.timeout.ms": "soon"}, "request.timeout.ms: expected a positive number"),
    ],
)
def test_refused_settings_say_why_without_the_password(
    properties: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        settings(properties)
    assert message in str(caught.value)
    assert PASSWORD not in str(caught.value)


@pytest.mark.parametrize(
    "jaas",
    [
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
        f'password="{PASSWORD}"',
        f'org.apache.kafka.common.security.plain.PlainLoginModule username="u" '
        f'password="{PASSWORD}";',
        f"org.apache.kafka.common.security.plain.PlainLoginModule required username=u {PASSWORD};",
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
        f'"{PASSWORD}";',
        # In a .properties file \" is just ", so this password ends early and breaks the entry.
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
        f'password="{PASSWORD}"x";',
    ],
)
def test_malformed_jaas_names_the_property_and_its_file_never_the_password(jaas: str) -> None:
    properties = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas,
    }
    with pytest.raises(UsageError) as caught:
        settings(properties, **{"sasl.jaas.config": "/etc/kafka/admin.properties"})
    message = str(caught.value)
    assert message.startswith("sasl.jaas.config (from /etc/kafka/admin.properties): ")
    assert PASSWORD not in message
    assert PASSWORD not in repr(caught.value)


# --- OAUTHBEARER -------------------------------------------------------------------------------

OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"


def oauth(jaas_options: str = "", **extra: str) -> ConnectionSettings:
    properties = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", **extra}
    if jaas_options:
        properties["sasl.jaas.config"] = f"{OAUTH_MODULE} {jaas_options};"
    return settings(properties)


def test_unsecured_login_mints_a_token_like_kafkas_unsecured_login_handler() -> None:
    result = oauth(
        'unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",read,write" '
        'unsecuredLoginNumberClaim_level="3" unsecuredLoginLifetimeSeconds="600" '
        'unsecuredLoginExtension_traceId="t-1"'
    )
    assert result.sasl is not None
    before = time.time()
    header, claims, signature = jwt_parts(result.sasl.oauth_token())
    assert header == {"alg": "none"}
    assert signature == ""
    assert claims["sub"] == "alice"
    assert claims["scope"] == ["read", "write"]
    assert claims["level"] == 3.0
    assert claims["exp"] - claims["iat"] == pytest.approx(600)
    assert before - 1 <= claims["iat"] <= time.time() + 1
    assert result.sasl.extensions == (("traceId", "t-1"),)


def test_each_connection_gets_a_fresh_unsecured_token() -> None:
    jwt = UnsecuredJwt((("sub", "alice"),))
    first = jwt_parts(jwt.mint(now=1_000.0))[1]
    later = jwt_parts(jwt.mint(now=5_000.0))[1]
    assert (first["iat"], first["exp"]) == (1_000.0, 4_600.0)
    assert (later["iat"], later["exp"]) == (5_000.0, 8_600.0)


def test_minted_tokens_pass_kafkas_validator_in_the_millisecond_they_are_minted() -> None:
    """Kafka refuses ``1000 * iat`` above its ``currentTimeMillis()`` (no clock skew by
    default). Rounding ``iat`` to the millisecond failed 9,275 times in 20,000."""
    from kshare_cli.sandbox.security import unsecured_jwt_principal

    jwt = UnsecuredJwt((("sub", "alice"),), lifetime_seconds=60)
    instants = random.Random(932)
    for _ in range(20_000):
        now = instants.uniform(1_600_000_000, 2_100_000_000)
        token = jwt.mint(now=now)
        claims = jwt_parts(token)[1]
        now_ms = math.floor(now * 1000)
        # Kafka's rule re-stated, then the sandbox's validator, at the very same instant.
        assert 1000 * claims["iat"] <= now_ms < 1000 * claims["exp"], (now, claims)
        assert claims["exp"] - claims["iat"] == pytest.approx(60)
        assert unsecured_jwt_principal(token, now) == "alice"


@pytest.mark.parametrize(
    ("value", "elements"),
    [(",a,b", ["a", "b"]), ("|x|y|", ["x", "y", ""]), (",", []), (",a,,b", ["a", "", "b", ""])],
)
def test_list_claims_take_their_delimiter_from_the_first_character(
    value: str, elements: list[str]
) -> None:
    result = oauth(f'unsecuredLoginStringClaim_sub="a" unsecuredLoginListClaim_groups="{value}"')
    assert result.sasl is not None
    assert jwt_parts(result.sasl.oauth_token())[1]["groups"] == elements


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('unsecuredLoginStringClaim_name="alice"', "the unsecured token has no 'sub' claim"),
        (
            'unsecuredLoginStringClaim_sub="a" unsecuredLoginNumberClaim_exp="1"',
            "cannot explicitly set the 'exp' claim",
        ),
        (
            'unsecuredLoginStringClaim_sub="a" unsecuredLoginNumberClaim_n="many"',
            "unsecuredLoginNumberClaim_n is not a number",
        ),
        (
            'unsecuredLoginStringClaim_sub="a" unsecuredLoginExtension_auth="x"',
            "invalid SASL extension name 'auth'",
        ),
        ("", "SASL/OAUTHBEARER needs a token: set kshare.oauthbearer.token.file"),
    ],
)
def test_unsecured_login_mistakes(options: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        oauth(options)


def test_a_principal_claim_name_moves_the_principal() -> None:
    result = oauth('unsecuredLoginPrincipalClaimName="who" unsecuredLoginStringClaim_who="carol"')
    assert result.sasl is not None and result.sasl.unsecured_jwt is not None
    assert result.sasl.unsecured_jwt.principal == "carol"
    assert result.sasl.oauth_cb()[2] == "carol"


def test_librdkafka_unsecured_jwt_config() -> None:
    result = oauth(
        **{
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": "principal=alice scope=a,b extension_traceId=t",
        }
    )
    assert result.sasl is not None
    assert jwt_parts(result.sasl.oauth_token())[1]["scope"] == ["a", "b"]
    assert result.sasl.extensions == (("traceId", "t"),)
    config = result.librdkafka_config()
    assert config["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    assert config["sasl.oauthbearer.config"] == (
        "principal=alice lifeSeconds=3600 scope=a,b extension_traceId=t"
    )
    assert not result.needs_oauth_cb()


def test_a_token_file_is_read_again_for_every_connection(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    result = oauth(**{"kshare.oauthbearer.token.file": str(token_file)})
    assert result.sasl is not None
    assert result.sasl.oauth_token() == "first-token"
    token_file.write_text("second-token")
    assert result.sasl.oauth_token() == "second-token"
    token_file.write_text("  \n")
    with pytest.raises(UsageError, match=f"kshare.oauthbearer.token.file {token_file} is empty"):
        result.sasl.oauth_token()
    token_file.unlink()
    with pytest.raises(UsageError, match=f"cannot read kshare.oauthbearer.token.file {token_file}"):
        result.sasl.oauth_token()


def test_a_static_token_and_its_expiry_for_librdkafka() -> None:
    payload = base64.urlsafe_b64encode(json.dumps({"sub": "svc", "exp": 4_000_000_000}).encode())
    jwt = f"eyJhbGciOiJSUzI1NiJ9.{payload.decode().rstrip('=')}.c2ln"
    result = oauth(**{"kshare.oauthbearer.token": jwt})
    assert result.sasl is not None
    assert result.sasl.oauth_token() == jwt
    assert result.sasl.oauth_cb("") == (jwt, 4_000_000_000.0, "svc", {})
    opaque = oauth(**{"kshare.oauthbearer.token": "opaque-token"})
    assert opaque.sasl is not None
    token, expiry, principal, _ = opaque.sasl.oauth_cb("")
    assert (token, principal) == ("opaque-token", "kshare")
    assert time.time() < expiry <= time.time() + 300
    assert result.needs_oauth_cb()
    assert "oauth_cb" not in result.librdkafka_config()
    assert result.confluent_config()["oauth_cb"] == result.sasl.oauth_cb


def test_token_and_token_file_exclude_each_other() -> None:
    with pytest.raises(UsageError, match="set only one of kshare.oauthbearer.token, kshare"):
        oauth(**{"kshare.oauthbearer.token": "t", "kshare.oauthbearer.token.file": "/f"})


def test_confluent_kafka_asks_oauth_cb_and_gets_our_token() -> None:
    result = oauth(**{"kshare.oauthbearer.token": "opaque-token"})
    config = result.confluent_config()
    original = config["oauth_cb"]
    given: list[tuple[str, float, str, dict[str, str]]] = []

    def spy(oauthbearer_config: str) -> tuple[str, float, str, dict[str, str]]:
        answer: tuple[str, float, str, dict[str, str]] = original(oauthbearer_config)
        given.append(answer)
        return answer

    producer = Producer({**config, "oauth_cb": spy})
    deadline = time.monotonic() + 10
    while not given and time.monotonic() < deadline:
        producer.poll(0.1)  # librdkafka serves the token refresh from poll()
    assert given and given[0][0] == "opaque-token"


# --- the librdkafka configuration --------------------------------------------------------------


def test_java_pem_store_types_name_pem_files() -> None:
    result = settings(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.truststore.location": "/etc/ca.pem",
            "ssl.truststore.type": "PEM",
            "ssl.keystore.location": "/etc/me.pem",
            "ssl.keystore.type": "PEM",
            "ssl.key.password": "kp",
            "ssl.endpoint.identification.algorithm": "",
            "client.id": "ops",
        }
    )
    assert result.tls == TlsSettings(
        ca_file=Path("/etc/ca.pem"),
        keystore_file=Path("/etc/me.pem"),
        key_password=Secret("kp"),
        check_hostname=False,
    )
    probe = settings({"security.protocol": "SSL", "ssl.ca.location": "probe"})
    assert probe.tls == TlsSettings()  # librdkafka's "probe": the system's CAs


def test_librdkafka_config_mapping(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    authority = trustme.CA()
    ca = tmp_path / "ca.pem"
    ca.write_bytes(authority.cert_pem.bytes())
    # The files are read as the control plane reads them (issue 24: one wording of a
    # wrong ssl.key.password), so they must exist and open with the password.
    leaf = authority.issue_cert("me@example.com")
    cert, key = tmp_path / "me.pem", tmp_path / "me.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key.write_bytes(
        serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"kp"),
        )
    )
    result = settings(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": SCRAM_JAAS,
            "ssl.ca.location": str(ca),
            "ssl.certificate.location": str(cert),
            "ssl.key.location": str(key),
            "ssl.key.password": "kp",
            "client.id": "ops",
        }
    )
    assert result.librdkafka_config() == {
        "bootstrap.servers": "kafka:9092",
        "security.protocol": "SASL_SSL",
        "client.id": "ops",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": str(ca),
        "ssl.key.password": "kp",
        "ssl.certificate.location": str(cert),
        "ssl.key.location": str(key),
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
    }


@pytest.mark.parametrize(
    "properties",
    [
        {"security.protocol": "PLAINTEXT"},
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
        },
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": f'{OAUTH_MODULE} unsecuredLoginStringClaim_sub="alice" '
            'unsecuredLoginListClaim_scope=",a,b" unsecuredLoginExtension_traceId="t";',
        },
        {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""},
    ],
)
def test_librdkafka_accepts_every_configuration_we_give_it(properties: dict[str, str]) -> None:
    config = settings(properties).librdkafka_config()
    Producer(config)  # librdkafka validates every name and value when the client is created


# --- warnings, bootstrap, secrets ---------------------------------------------------------------


def test_unknown_and_unused_properties_become_warnings_not_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = settings(
        {
            "security.protocol": "PLAINTEXT",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.truststore.location": "/t.p12",
            "group.id": "g",
            "fetch.max.bytes": "1",
        }
    )
    assert result.warnings == (
        "ignored as security.protocol is PLAINTEXT: sasl.jaas.config, ssl.truststore.location",
        "ignored properties kshare does not use: fetch.max.bytes, group.id",
    )
    assert capsys.readouterr() == ("", "")
    assert PASSWORD not in " ".join(result.warnings)


def test_names_no_kafka_client_defines_get_one_warning_each_with_the_nearest_name() -> None:
    result = settings_from_properties(
        {
            "securty.protocol": "SSL",
            "ssl.truststore.locaton": "/t.p12",
            "client.dns.lookup": "use_all_dns_ips",
            "log_level": "7",
            "zzz.unrelated": "1",
            PASSWORD: "",
        },
        bootstrap_servers=("k:1",),
        origins=dict.fromkeys(["securty.protocol", "client.dns.lookup", PASSWORD], "a.properties"),
    )
    assert result.warnings == (
        "ignored properties kshare does not use: client.dns.lookup, log_level",
        "a.properties: ignored a line that is not a client setting (its text is not shown)",
        "a.properties: unknown property securty.protocol (did you mean security.protocol?); "
        "ignored",
        "unknown property ssl.truststore.locaton (did you mean ssl.truststore.location?); ignored",
        "unknown property zzz.unrelated; ignored",
    )


def test_quiet_origins_get_no_warnings_and_notes_come_first() -> None:
    properties = {"group.id": "g", "typo.key": "1", "ssl.ca.location": "/ca"}
    origins = {"group.id": "profile 'p'", "typo.key": "/p.properties", "ssl.ca.location": "x"}
    result = settings_from_properties(
        properties,
        bootstrap_servers=("k:1",),
        origins=origins,
        notes=("a note",),
        quiet_origins={"profile 'p'", "/p.properties"},
    )
    assert result.warnings == (
        "a note",
        "ignored as security.protocol is PLAINTEXT: ssl.ca.location",
    )


def test_secrets_never_show(tmp_path: Path) -> None:
    result = settings(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.keystore.location": "/k.p12",
            "ssl.keystore.password": PASSWORD + "-ks",
            "ssl.truststore.location": "/t.p12",
            "ssl.truststore.password": PASSWORD + "-ts",
            "ssl.key.password": PASSWORD + "-key",
        }
    )
    for shown in (repr(result), str(result), json.dumps(result.redacted()), f"{result}"):
        assert PASSWORD not in shown
    assert result.redacted() == {
        "bootstrap.servers": "kafka:9092",
        "security.protocol": "SASL_SSL",
        "client.id": "kshare",
        "request.timeout.ms": "30000",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "***",
        "ssl.endpoint.identification.algorithm": "https",
        "enable.ssl.certificate.verification": "true",
        "ssl.truststore.location": "/t.p12",
        "ssl.keystore.location": "/k.p12",
        "ssl.truststore.password": "***",
        "ssl.keystore.password": "***",
        "ssl.key.password": "***",
    }
    token = oauth(**{"kshare.oauthbearer.token": PASSWORD})
    assert PASSWORD not in repr(token) and PASSWORD not in str(token.redacted())


def test_jaas_escapes_pass_through_both_java_layers(tmp_path: Path) -> None:
    # The file is unescaped by Properties first (\\ -> \, \u00e4 -> ä), then by the JAAS
    # tokenizer (\" -> ", \\ -> \): a Java user writes exactly this for the password a\b"cä.
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="a\\\\\\\\b\\\\"c\\u00e4";\n'
    )
    result = settings(load_properties(path))
    assert result.sasl is not None and result.sasl.password is not None
    assert result.sasl.password.reveal() == 'a\\b"c\u00e4'


def test_ssl_without_tls_settings_uses_kafkas_defaults() -> None:
    bare = ConnectionSettings(bootstrap_servers=("k:1",), security_protocol="SSL")
    context = bare.ssl_context()
    assert context is not None and context.check_hostname
    assert bare.librdkafka_config()["ssl.endpoint.identification.algorithm"] == "https"
    assert ConnectionSettings(bootstrap_servers=("k:1",)).ssl_context() is None
