"""Secrets never show themselves; profile show and --debug print them as ``***``."""

from __future__ import annotations

import pytest

from kshare_cli.connect.secret import Secret, redact_property, secrets_of
from tests.connect.test_jaas import SECRET

PASSWORD = "pa55-W0rd-SECRET"


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("sasl.password", SECRET, "***"),
        ("ssl.keystore.password", SECRET, "***"),
        ("ssl.key.pem", SECRET, "***"),
        ("ssl.keystore.key", SECRET, "***"),
        ("kshare.oauthbearer.token", SECRET, "***"),
        ("sasl.oauthbearer.client.secret", SECRET, "***"),
        ("kshare.oauthbearer.token.file", "/run/token", "/run/token"),
        ("ssl.truststore.location", "/etc/t.p12", "/etc/t.p12"),
        ("client.id", "ops", "ops"),
        # A typo of a secret's name hides its value as the name it misspells would.
        ("ssl.key.pasword", SECRET, "***"),
        ("sasl.oauthbearer.client.secrt", SECRET, "***"),
        ("ssl.key.locaton", "/etc/k.pem", "/etc/k.pem"),
        ("bootstrap.server", "b:9092", "b:9092"),
        (
            "sasl.jaas.config",
            f'M required username="u" password="{SECRET}";',
            'M required username="u" password="***";',
        ),
    ],
)
def test_redact_property(key: str, value: str, shown: str) -> None:
    assert redact_property(key, value) == shown


def test_secret() -> None:
    secret = Secret(PASSWORD)
    assert (repr(secret), str(secret), f"{secret}", f"{secret!r}") == ("***",) * 4
    assert secret.reveal() == PASSWORD
    assert secret == Secret(PASSWORD)
    assert secret != Secret("other")
    assert secret != PASSWORD  # a Secret is not a str
    assert len({secret, Secret(PASSWORD), Secret("other")}) == 2


def test_secrets_of_finds_every_secret_a_settings_object_holds() -> None:
    """What the stderr writer is told to hide: the SASL password and the key password."""
    from kshare_cli.connect.property_mapping import settings_from_properties

    settings = settings_from_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": PASSWORD,
            "ssl.key.password": "key-" + PASSWORD,
        },
        bootstrap_servers=("b:9092",),
    )
    assert sorted(secrets_of(settings)) == sorted([PASSWORD, "key-" + PASSWORD])
