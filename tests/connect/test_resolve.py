"""Which bootstrap servers and which client properties a command runs with.

Flags beat the environment, which beats the current profile; an explicit
``--profile`` is a flag. The current profile is never mixed with a bootstrap
server named elsewhere, so its credentials cannot leak to another cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kshare_cli.connect.profiles import Profile, ProfileStore
from kshare_cli.connect.resolve import NO_BOOTSTRAP, resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import UsageError

PROD_PASSWORD = "pr0d-SECRET"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Three command-config files that differ in client.id, and a profiles file."""
    paths = {}
    for name in ("flag", "env", "prod", "dev"):
        path = tmp_path / f"{name}.properties"
        path.write_text(f"client.id={name}-file\n")
        paths[name] = path
    paths["prod"].write_text(
        "client.id=prod-file\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="ops" password="{PROD_PASSWORD}";\n'
    )
    store = ProfileStore(tmp_path / "config.toml")
    store.add(Profile("prod", ("prod:9093",), paths["prod"]))
    store.add(Profile("dev", ("dev:9092",), paths["dev"], (("request.timeout.ms", "5000"),)))
    paths["profiles"] = store.path
    return paths


def resolve(
    files: dict[str, Path],
    *,
    bootstrap: str | None = None,
    command_config: str | None = None,
    profile: str | None = None,
    env: dict[str, str] | None = None,
    overrides: dict[str, str] | None = None,
) -> ConnectionSettings:
    return resolve_settings(
        bootstrap=bootstrap,
        command_config=files[command_config] if command_config else None,
        profile=profile,
        environ=env or {},
        profiles_path=files["profiles"],
        overrides=overrides,
    )


def where(result: ConnectionSettings) -> tuple[str, str]:
    return ",".join(result.bootstrap_servers), result.client_id


def env_of(files: dict[str, Path], bootstrap: bool = True, config: bool = True) -> dict[str, str]:
    env = {}
    if bootstrap:
        env["KSHARE_BOOTSTRAP_SERVERS"] = "env:9092"
    if config:
        env["KSHARE_COMMAND_CONFIG"] = str(files["env"])
    return env


def test_the_current_profile_when_nothing_else_is_said(files: dict[str, Path]) -> None:
    result = resolve(files)
    assert where(result) == ("prod:9093", "prod-file")
    assert result.sasl is not None and result.sasl.username == "ops"


def test_the_environment_beats_the_current_profile(files: dict[str, Path]) -> None:
    assert where(resolve(files, env=env_of(files))) == ("env:9092", "env-file")


def test_flags_beat_the_environment(files: dict[str, Path]) -> None:
    result = resolve(files, bootstrap="flag:1", command_config="flag", env=env_of(files))
    assert where(result) == ("flag:1", "flag-file")


def test_flags_and_environment_combine_field_by_field(files: dict[str, Path]) -> None:
    result = resolve(files, bootstrap="flag:1", env=env_of(files))
    assert where(result) == ("flag:1", "env-file")
    result = resolve(files, command_config="flag", env=env_of(files))
    assert where(result) == ("env:9092", "flag-file")


def test_a_bootstrap_flag_never_takes_the_current_profiles_credentials(
    files: dict[str, Path],
) -> None:
    result = resolve(files, bootstrap="localhost:9092")
    assert where(result) == ("localhost:9092", "kshare")
    assert result.security_protocol == "PLAINTEXT" and result.sasl is None
    result = resolve(files, env=env_of(files, config=False))
    assert where(result) == ("env:9092", "kshare")


def test_a_command_config_flag_applies_to_the_current_profiles_cluster(
    files: dict[str, Path],
) -> None:
    assert where(resolve(files, command_config="flag")) == ("prod:9093", "flag-file")
    assert where(resolve(files, env=env_of(files, bootstrap=False))) == ("prod:9093", "env-file")


def test_an_explicit_profile_is_a_flag_and_beats_the_environment(files: dict[str, Path]) -> None:
    result = resolve(files, profile="dev", env=env_of(files))
    assert where(result) == ("dev:9092", "dev-file")
    assert result.request_timeout_ms == 5000  # the profile's inline property
    result = resolve(files, profile="dev", bootstrap="flag:1", command_config="flag")
    assert where(result) == ("flag:1", "flag-file")


def test_inline_profile_properties_beat_its_file_and_overrides_beat_both(
    files: dict[str, Path],
) -> None:
    store = ProfileStore(files["profiles"])
    store.add(Profile("dev", ("dev:9092",), files["dev"], (("client.id", "inline"),)), replace=True)
    assert where(resolve(files, profile="dev")) == ("dev:9092", "inline")
    result = resolve(files, profile="dev", overrides={"client.id": "override"})
    assert where(result) == ("dev:9092", "override")
    assert where(resolve(files, command_config="flag", overrides={"client.id": "o"}))[1] == "o"


def test_bootstrap_servers_in_the_properties_are_the_last_resort(
    files: dict[str, Path], tmp_path: Path
) -> None:
    config = tmp_path / "with-bootstrap.properties"
    config.write_text("bootstrap.servers=inner:9092\n")
    result = resolve_settings(
        bootstrap=None,
        command_config=config,
        profile=None,
        environ={},
        profiles_path=tmp_path / "none.toml",
    )
    assert result.bootstrap_servers == ("inner:9092",)
    result = resolve_settings(
        bootstrap="flag:1",
        command_config=config,
        profile=None,
        environ={},
        profiles_path=tmp_path / "none.toml",
    )
    assert result.bootstrap_servers == ("flag:1",)


def test_no_bootstrap_anywhere(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        resolve_settings(
            bootstrap=None,
            command_config=None,
            profile=None,
            environ={},
            profiles_path=tmp_path / "none.toml",
        )
    assert str(caught.value) == (
        "no bootstrap server: pass --bootstrap-server, set KSHARE_BOOTSTRAP_SERVERS, "
        "or add a profile with `kshare profile add`"
    )
    assert str(caught.value) == NO_BOOTSTRAP


def test_errors_name_their_source(files: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no profile named 'qa' \\(profiles: dev, prod\\)"):
        resolve(files, profile="qa")
    with pytest.raises(UsageError, match="^KSHARE_BOOTSTRAP_SERVERS: bootstrap server 'env'"):
        resolve(files, env={"KSHARE_BOOTSTRAP_SERVERS": "env"})
    missing = tmp_path / "gone.properties"
    with pytest.raises(UsageError, match=f"cannot read KSHARE_COMMAND_CONFIG {missing}"):
        resolve(files, env={"KSHARE_COMMAND_CONFIG": str(missing)})
    files["prod"].write_text("security.protocol=SASL_SSL\nsasl.mechanism=KERBEROS\n")
    with pytest.raises(UsageError) as caught:
        resolve(files)
    assert str(caught.value).startswith(f"sasl.mechanism (from {files['prod']}): 'KERBEROS'")
    with pytest.raises(UsageError, match="request.timeout.ms \\(from --property\\)"):
        resolve(files, bootstrap="k:1", overrides={"request.timeout.ms": "-1"})


def test_the_profiles_file_is_not_read_when_flags_say_everything(
    files: dict[str, Path],
) -> None:
    files["profiles"].write_text("this is [not toml")
    result = resolve(files, bootstrap="flag:1", command_config="flag")
    assert where(result) == ("flag:1", "flag-file")
    with pytest.raises(UsageError, match="is not valid TOML"):
        resolve(files)


@pytest.mark.parametrize("bootstrap", ["", "  "])
def test_an_empty_bootstrap_flag_is_refused_not_replaced(
    files: dict[str, Path], bootstrap: str
) -> None:
    """``-b "$BROKERS"`` with BROKERS unset must not reach the environment's or profile's
    cluster instead."""
    for env in ({}, env_of(files)):
        with pytest.raises(UsageError, match=r"^--bootstrap-server is empty: expected host:port"):
            resolve(files, bootstrap=bootstrap, env=env)


def test_empty_environment_variables_count_as_unset(files: dict[str, Path]) -> None:
    env = {"KSHARE_BOOTSTRAP_SERVERS": " ", "KSHARE_COMMAND_CONFIG": ""}
    assert where(resolve(files, env=env)) == ("prod:9093", "prod-file")


def test_the_default_profiles_path_follows_kshare_config(
    files: dict[str, Path],
) -> None:
    result = resolve_settings(
        bootstrap=None,
        command_config=None,
        profile="dev",
        environ={"KSHARE_CONFIG": str(files["profiles"])},
    )
    assert where(result) == ("dev:9092", "dev-file")


def test_resolved_settings_do_not_show_the_profiles_password(files: dict[str, Path]) -> None:
    result = resolve(files)
    assert PROD_PASSWORD not in repr(result)
    assert PROD_PASSWORD not in str(result.redacted())
