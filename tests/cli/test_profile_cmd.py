"""``kshare profile`` as an operator uses it: what reaches stdout, stderr, the exit code and
the file, and that no password ever reaches the terminal."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from kshare_cli.cli import profile_cmd

SECRET = "cl1-SECRET-pw"


@pytest.fixture
def kshare(tmp_path: Path) -> tuple[typer.Typer, dict[str, str]]:
    app = typer.Typer()
    app.add_typer(profile_cmd.app, name="profile")
    return app, {"KSHARE_CONFIG": str(tmp_path / "kshare" / "config.toml")}


def run(kshare: tuple[typer.Typer, dict[str, str]], *args: str) -> Result:
    app, env = kshare
    return CliRunner().invoke(app, ["profile", *args], env=env)


@pytest.fixture
def client_properties(tmp_path: Path) -> Path:
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="alice" password="{SECRET}";\n'
        "group.id=ignored\n"
    )
    return path


def test_add_list_show_use_remove(
    kshare: tuple[typer.Typer, dict[str, str]], client_properties: Path, tmp_path: Path
) -> None:
    added = run(
        kshare,
        "add",
        "prod",
        "--bootstrap-server",
        "k1:9093,k2:9093",
        "--command-config",
        str(client_properties),
        "--property",
        "client.id=ops",
    )
    assert added.exit_code == 0, added.stderr
    assert added.stdout == ""
    assert "added profile 'prod' and made it current" in added.stderr
    assert "kshare: warning: ignored properties kshare does not use: group.id" in added.stderr
    assert run(kshare, "add", "dev", "-b", "localhost:9092").exit_code == 0

    listed = run(kshare, "list")
    assert listed.exit_code == 0
    assert listed.stdout.splitlines() == [
        "CURRENT  NAME  BOOTSTRAP SERVERS  COMMAND CONFIG",
        "         dev   localhost:9092     -",
        f"*        prod  k1:9093,k2:9093    {client_properties}",
    ]
    as_json = json.loads(run(kshare, "list", "-o", "json").stdout)
    assert as_json == [
        {
            "name": "dev",
            "current": False,
            "bootstrap_servers": ["localhost:9092"],
            "command_config": None,
        },
        {
            "name": "prod",
            "current": True,
            "bootstrap_servers": ["k1:9093", "k2:9093"],
            "command_config": str(client_properties),
        },
    ]

    shown = run(kshare, "show")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "name: prod (current)",
        "bootstrap_servers: k1:9093,k2:9093",
        f"command_config: {client_properties}",
        "properties:",
        "  client.id: ops",
        "settings:",
        "  bootstrap.servers: k1:9093,k2:9093",
        "  security.protocol: SASL_SSL",
        "  client.id: ops",
        "  request.timeout.ms: 30000",
        "  sasl.mechanism: SCRAM-SHA-256",
        "  sasl.username: alice",
        "  sasl.password: ***",
        "  ssl.endpoint.identification.algorithm: https",
        "  enable.ssl.certificate.verification: true",
    ]

    assert run(kshare, "use", "dev").exit_code == 0
    assert run(kshare, "show", "-o", "json").stdout.count('"current": true') == 1
    assert json.loads(run(kshare, "show", "-o", "json").stdout)["name"] == "dev"
    removed = run(kshare, "remove", "dev")
    assert removed.exit_code == 0
    assert "no profile is current now" in removed.stderr
    assert [row["name"] for row in json.loads(run(kshare, "list", "-o", "json").stdout)] == ["prod"]


def test_the_command_config_is_stored_as_an_absolute_path(
    kshare: tuple[typer.Typer, dict[str, str]],
    client_properties: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(client_properties.parent)
    assert (
        run(kshare, "add", "p", "-b", "k:1", "--command-config", client_properties.name).exit_code
        == 0
    )
    document = json.loads(run(kshare, "list", "-o", "json").stdout)
    assert document[0]["command_config"] == str(client_properties)


def test_no_password_reaches_the_terminal_or_other_users(
    kshare: tuple[typer.Typer, dict[str, str]], client_properties: Path
) -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="bob" password="{SECRET}";'
    )
    results = [
        run(
            kshare,
            "add",
            "inline",
            "-b",
            "k:1",
            "--property",
            "security.protocol=SASL_PLAINTEXT",
            "--property",
            "sasl.mechanism=PLAIN",
            "--property",
            f"sasl.jaas.config={jaas}",
            "--property",
            f"ssl.key.password={SECRET}",
        ),
        run(kshare, "add", "file", "-b", "k:1", "--command-config", str(client_properties)),
        run(kshare, "show", "inline"),
        run(kshare, "show", "inline", "-o", "json"),
        run(kshare, "show", "file"),
        run(kshare, "list"),
        run(kshare, "list", "-o", "json"),
    ]
    for result in results:
        assert result.exit_code == 0, result.stderr
        assert SECRET not in result.stdout
        assert SECRET not in result.stderr
    shown = json.loads(results[3].stdout)
    assert shown["properties"]["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="bob" password="***";'
    )
    assert shown["properties"]["ssl.key.password"] == "***"
    assert shown["settings"]["sasl.password"] == "***"
    config = Path(kshare[1]["KSHARE_CONFIG"])
    assert SECRET in config.read_text()  # stored, as the operator asked ...
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # ... where only they can read it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "p", "-b", "kafka"], "bootstrap server 'kafka': expected host:port"),
        (["add", "p", "-b", "k:1", "--property", SECRET], "--property expects KEY=VALUE"),
        (["add", "bad name", "-b", "k:1"], "invalid profile name 'bad name'"),
        (
            ["add", "p", "-b", "k:1", "--command-config", "/nonexistent/c.properties"],
            "cannot read --command-config /nonexistent/c.properties: No such file or directory",
        ),
        (
            [
                "add",
                "p",
                "-b",
                "k:1",
                "--property",
                "security.protocol=SASL_SSL",
                "--property",
                "sasl.mechanism=PLAIN",
                "--property",
                f'sasl.jaas.config=x.PlainLoginModule required password="{SECRET}"',
            ],
            "sasl.jaas.config (from --property): JAAS config entry not terminated by semi-colon",
        ),
        (["use", "nope"], "no profile named 'nope'"),
        (["remove", "nope"], "no profile named 'nope'"),
        (["show"], "no current profile"),
    ],
)
def test_mistakes_exit_2_with_one_line(
    kshare: tuple[typer.Typer, dict[str, str]], args: list[str], message: str
) -> None:
    result = run(kshare, *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"kshare: error: {message}")
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n")
    assert SECRET not in result.stderr


def test_adding_twice_needs_replace(kshare: tuple[typer.Typer, dict[str, str]]) -> None:
    assert run(kshare, "add", "p", "-b", "k:1").exit_code == 0
    again = run(kshare, "add", "p", "-b", "k:2")
    assert again.exit_code == 2
    assert "profile 'p' exists; pass --replace" in again.stderr
    assert run(kshare, "add", "p", "-b", "k:2", "--replace").exit_code == 0
    assert json.loads(run(kshare, "list", "-o", "json").stdout)[0]["bootstrap_servers"] == ["k:2"]


def test_show_still_shows_a_profile_whose_file_went_away(
    kshare: tuple[typer.Typer, dict[str, str]], client_properties: Path
) -> None:
    assert (
        run(kshare, "add", "p", "-b", "k:1", "--command-config", str(client_properties)).exit_code
        == 0
    )
    client_properties.unlink()
    shown = run(kshare, "show", "p")
    assert shown.exit_code == 2
    assert shown.stdout.splitlines()[:3] == [
        "name: p (current)",
        "bootstrap_servers: k:1",
        f"command_config: {client_properties}",
    ]
    assert shown.stderr == (
        f"kshare: error: profile 'p' does not resolve: cannot read profile 'p' command_config "
        f"{client_properties}: No such file or directory\n"
    )


def test_list_with_no_profiles(kshare: tuple[typer.Typer, dict[str, str]]) -> None:
    empty = run(kshare, "list")
    assert (empty.exit_code, empty.stdout) == (0, "")
    assert "no profiles yet" in empty.stderr
    assert run(kshare, "list", "-o", "json").stdout == "[]\n"
