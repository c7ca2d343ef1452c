"""Connection options as a new user meets them: the bootstrap flag, ``--command-config`` files,
profiles, and OAUTHBEARER unsecured tokens, checked on stdout, stderr and the exit code."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from types import ModuleType

import pytest

from kshare_cli.connect import bearer_tokens
from kshare_cli.sandbox import security as security_module
from tests.cli.conftest import Kshare, assert_one_error_line, write_properties
from tests.support.tls import USERS, SecureSandbox, TlsMaterial

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
    monkeypatch.setattr(bearer_tokens, "time", clock)
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


def _with_cluster_properties(kshare: Kshare, path: Path, text: str) -> Path:
    """``text`` after the cluster's own client properties (none for the sandbox)."""
    cluster = kshare.command_config.read_text() if kshare.command_config else ""
    path.write_text(cluster + text)
    return path


def test_a_misspelt_key_is_named_with_the_nearest_known_one(kshare: Kshare, tmp_path: Path) -> None:
    """``securty.protocol`` used to vanish, to surface later as an unrelated connection error;
    a setting of Kafka's clients that kshare has no use for is not a misspelling."""
    config = _with_cluster_properties(
        kshare,
        tmp_path / "client.properties",
        "securty.protocol=SASL_SSL\nclient.dns.lookup=use_all_dns_ips\nkshare.oauthbearer.tokn=x\n",
    )
    result = kshare.run(
        "list",
        "-o",
        "plain",
        "--command-config",
        str(config),
        "-b",
        kshare.bootstrap,
        connect=False,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "kshare: warning: ignored properties kshare does not use: client.dns.lookup",
        f"kshare: warning: {config}: unknown property kshare.oauthbearer.tokn "
        "(did you mean kshare.oauthbearer.token?); ignored",
        f"kshare: warning: {config}: unknown property securty.protocol "
        "(did you mean security.protocol?); ignored",
    ]


def test_a_line_that_is_not_a_setting_is_a_warning_that_never_shows_its_text(
    kshare: Kshare, tmp_path: Path
) -> None:
    """Java reads a line without a separator as a key with an empty value; it may be a
    password pasted on a line of its own, so the warning does not repeat it."""
    config = _with_cluster_properties(kshare, tmp_path / "client.properties", "hunter2\n")
    result = kshare.run(
        "list",
        "-o",
        "plain",
        "--command-config",
        str(config),
        "-b",
        kshare.bootstrap,
        connect=False,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"kshare: warning: {config}: ignored a line that is not a client setting "
        "(its text is not shown)\n"
    )


def test_a_binary_file_is_refused_before_connecting(
    kshare: Kshare, tls_material: TlsMaterial
) -> None:
    """A keystore passed as --command-config: Java would read it as keys of junk."""
    result = kshare.run(
        "list",
        "--command-config",
        str(tls_material.truststore),
        "-b",
        kshare.bootstrap,
        connect=False,
    )
    assert (result.exit_code, result.stdout) == (2, "")
    line = assert_one_error_line(result.stderr, f"--command-config {tls_material.truststore}: ")
    assert re.fullmatch(
        r"kshare: error: .*: line \d+ is not a property: it holds binary or control characters "
        r"\(is this the right file\?\)",
        line,
    ), line


@pytest.mark.parametrize("text", ["", "# only a comment\n! and another\n\n"])
def test_a_file_with_no_properties_is_named_and_the_command_goes_on(
    kshare: Kshare, tmp_path: Path, text: str
) -> None:
    if kshare.command_config is not None:
        pytest.skip("the cluster needs client properties: a file without any cannot reach it")
    config = tmp_path / "client.properties"
    config.write_text(text)
    result = kshare.run(
        "list",
        "-o",
        "plain",
        "--command-config",
        str(config),
        "-b",
        kshare.bootstrap,
        connect=False,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"kshare: warning: --command-config {config} has no properties\n"


def test_a_profiles_property_overrides_its_files_other_spelling_without_a_warning(
    secure_sandbox: SecureSandbox, tmp_path: Path
) -> None:
    """The file says ``sasl.mechanism`` (Java), the profile's --property ``sasl.mechanisms``
    (librdkafka): the property wins, as a profile's properties do, and nothing is left
    behind to be reported as "not used" on every later command."""
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="alice" password="{USERS["alice"]}";',
        },
    )
    profiles = tmp_path / "profiles.toml"
    kshare = Kshare(sandbox.bootstrap, None, profiles)
    added = kshare.run(
        "profile", "add", "sasl", "-b", sandbox.bootstrap, "--command-config", str(config),
        "--property", "sasl.mechanisms=PLAIN", connect=False,
    )  # fmt: skip
    assert (added.exit_code, added.stderr) == (
        0,
        f"kshare: added profile 'sasl' and made it current ({profiles})\n",
    )
    for command in (["list", "-o", "plain"], ["profile", "show"]):
        result = kshare.run(*command, connect=False)
        assert (result.exit_code, result.stderr) == (0, ""), command


def test_a_profile_property_that_is_really_unused_is_named_once_when_saved(
    secure_sandbox: SecureSandbox, tmp_path: Path
) -> None:
    """Warned about when the profile is saved (and by ``profile show``), not on every run."""
    sandbox = secure_sandbox("SASL_PLAINTEXT", mechanisms=("PLAIN",))
    config = write_properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="alice" password="{USERS["alice"]}";',
        },
    )
    kshare = Kshare(sandbox.bootstrap, None, tmp_path / "profiles.toml")
    unused = "ignored as security.protocol is SASL_PLAINTEXT: ssl.truststore.location"
    added = kshare.run(
        "profile", "add", "sasl", "-b", sandbox.bootstrap, "--command-config", str(config),
        "--property", "ssl.truststore.location=/etc/kafka/ca.pem", connect=False,
    )  # fmt: skip
    assert added.exit_code == 0, added.stderr
    assert added.stderr.splitlines()[0] == f"kshare: warning: {unused}"
    listed = kshare.run("list", "-o", "plain", connect=False)
    assert (listed.exit_code, listed.stderr) == (0, "")
    shown = kshare.run("profile", "show", connect=False)
    assert (shown.exit_code, shown.stderr) == (0, f"kshare: warning: {unused}\n")
