"""Connection options as a new user meets them: the bootstrap flag, ``--command-config`` files,
profiles, and OAUTHBEARER unsecured tokens, checked on stdout, stderr and the exit code."""

from __future__ import annotations

import math
import time
from pathlib import Path
from types import ModuleType

import pytest

from kshare_cli.connect import settings as settings_module
from kshare_cli.sandbox import security as security_module
from tests.cli.conftest import Kshare, write_properties
from tests.support.tls import SecureSandbox

OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="alice";'
)


class _FrozenClock(ModuleType):
    """The ``time`` module with ``time()`` stopped at one instant; everything else is real."""

    def __init__(self, now: float) -> None:
        super().__init__("time")
        self.now = now

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_an_unsecured_oauthbearer_token_is_never_issued_in_the_future(
    secure_sandbox: SecureSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Minted and validated in the same millisecond, 0.6 ms past its start: rounding the
    ``iat`` claim put it 0.4 ms ahead of Kafka's clock, and the broker refused the login."""
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    clock = _FrozenClock(math.floor(time.time()) + 0.0006)
    monkeypatch.setattr(settings_module, "time", clock)
    monkeypatch.setattr(security_module, "time", clock)
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": OAUTH_JAAS,
        },
    )
    kshare = Kshare(sandbox.bootstrap, config, tmp_path / "profiles.toml")
    result = kshare.run("list", "-o", "plain", "--timeout", "10s")
    assert (result.exit_code, result.stderr) == (0, "")


def _profile_add(kshare: Kshare, name: str) -> None:
    """A profile for the test cluster, made current, as an operator adds one."""
    config = ["--command-config", str(kshare.command_config)] if kshare.command_config else []
    added = kshare.run("profile", "add", name, "-b", kshare.bootstrap, *config, connect=False)
    assert added.exit_code == 0, added.stderr


def test_an_empty_bootstrap_server_is_a_usage_error_not_a_fallback(kshare: Kshare) -> None:
    """``-b "$BROKERS"`` with BROKERS unset: the environment's or the current profile's
    cluster would answer instead, so the command refuses before connecting."""
    _profile_add(kshare, "current")
    config = ["--command-config", str(kshare.command_config)] if kshare.command_config else []
    for value in ("", " "):
        result = kshare.run(
            "list",
            "-b",
            value,
            *config,
            connect=False,
            env={"KSHARE_BOOTSTRAP_SERVERS": kshare.bootstrap},
        )
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr == (
            "kshare: error: --bootstrap-server is empty: expected host:port[,host:port...]\n"
        )


def test_an_empty_bootstrap_variable_counts_as_unset(kshare: Kshare) -> None:
    """``KSHARE_BOOTSTRAP_SERVERS=`` is unset, as shells treat it: the current profile is used."""
    _profile_add(kshare, "current")
    result = kshare.run("list", "-o", "plain", connect=False, env={"KSHARE_BOOTSTRAP_SERVERS": ""})
    assert (result.exit_code, result.stderr) == (0, "")
