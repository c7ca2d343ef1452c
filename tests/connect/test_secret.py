"""Secrets never show themselves; profile show and --debug print them as ``***``."""

from __future__ import annotations

import pytest

from kshare_cli.connect.secret import Secret, redact_property
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
