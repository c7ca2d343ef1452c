"""The command edge: what reaches stderr when a command fails with secrets configured."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kshare_cli.diagnostics import redact

KSHARE = Path(sys.executable).with_name("kshare")


def test_a_one_letter_password_does_not_garble_the_error_line(tmp_path: Path) -> None:
    """A short password is hidden where it stands alone, never inside ordinary words.

    Replacing the secret ``b`` everywhere once printed "cannot connect to any
    ***ootstrap server".
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
        'required username="alice" password="b";\n'
    )
    done = subprocess.run(
        [str(KSHARE), "list", "-b", f"127.0.0.1:{port}", "--command-config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("kshare: error: cannot connect to any bootstrap server ")
    assert "***" not in done.stderr


def test_short_secrets_are_hidden_where_they_stand_alone_long_ones_everywhere() -> None:
    text = "bootstrap failed: password='b' token=abcdefghij tail abcdefghijk"
    assert redact(text, ["b", "abcdefghij"]) == (
        "bootstrap failed: password='***' token=*** tail ***k"
    )


def test_connection_refuses_a_bad_timeout_before_reading_the_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--timeout is checked first (a missing --command-config is not even opened), and the
    returned invocation knows the settings' secrets, to redact them from any error."""
    import typer

    from kshare_cli.cli.common import Invocation, connection

    missing = tmp_path / "missing.properties"
    with pytest.raises(typer.Exit) as refused:
        connection("127.0.0.1:9092", missing, None, "soon", Invocation(debug=True))
    assert refused.value.exit_code == 2
    error = capsys.readouterr().err
    assert "--timeout" in error and "missing.properties" not in error
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="s3cret-password";\n'
    )
    settings, timeout_s, invocation = connection(
        "127.0.0.1:9092", config, None, "2s", Invocation(debug=True)
    )
    assert settings.bootstrap_servers == ("127.0.0.1:9092",)
    assert timeout_s == 2.0
    assert invocation == Invocation(debug=True, secrets=("s3cret-password",))


def test_output_offers_exactly_the_formats_every_renderer_renders() -> None:
    """``-o`` is declared with the very enum the renderers dispatch on: no option can be
    offered that no renderer knows."""
    from kshare_cli.cli.common import OutputFormat as OptionFormats
    from kshare_cli.render.output_formats import OutputFormat as RenderedFormats

    assert OptionFormats is RenderedFormats
    assert [each.value for each in OptionFormats] == [
        "table",
        "plain",
        "json",
        "jsonl",
        "csv",
        "yaml",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["describe", " "],
        ["health", " "],
        ["inflight", " "],
        ["delete", " "],
        ["delete-offsets", " ", "-t", "orders"],
        ["config", "get", " "],
        ["config", "set", " ", "share.auto.offset.reset=earliest"],
        ["config", "unset", " ", "share.auto.offset.reset"],
        ["dashboard", " "],
        ["exporter", "-g", " "],
    ],
)
def test_every_command_refuses_an_empty_group_id_alike(argv: list[str]) -> None:
    """One rule (``check_group_id``): exit 2 and one line, before any connection is tried."""
    from typer.testing import CliRunner

    from kshare_cli.cli.app import app

    result = CliRunner().invoke(app, [*argv, "-b", "127.0.0.1:1"])
    assert (result.exit_code, result.stderr) == (2, "kshare: error: a group id cannot be empty\n")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (["describe"], "name at least one group, or pass --all-groups"),
        (["health", "g", "--all-groups"], "give group ids or --all-groups, not both"),
        (["delete"], "name at least one group, or pass --all-groups --empty-only"),
        (["delete", "g", "--all-groups"], "give group ids or --all-groups, not both"),
    ],
)
def test_group_ids_or_all_groups_is_one_rule(argv: list[str], refusal: str) -> None:
    from typer.testing import CliRunner

    from kshare_cli.cli.app import app

    result = CliRunner().invoke(app, [*argv, "-b", "127.0.0.1:1"])
    assert (result.exit_code, result.stderr) == (2, f"kshare: error: {refusal}\n")
