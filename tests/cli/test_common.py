"""The command edge: what reaches stderr when a command fails with secrets configured."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from kshare_cli.cli.common import Debug, command_edge
from kshare_cli.diagnostics import redact
from kshare_cli.errors import ConnectionFailed, NotFound, UsageError

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
    settings' secrets are handed to the stderr writer as soon as they are read."""
    from kshare_cli import diagnostics
    from kshare_cli.cli.common import connection
    from kshare_cli.errors import UsageError

    diagnostics.forget_secrets()
    missing = tmp_path / "missing.properties"
    with pytest.raises(UsageError, match="--timeout") as refused:
        connection("127.0.0.1:9092", missing, None, "soon")
    assert "missing.properties" not in str(refused.value)
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="s3cret-password";\n'
    )
    settings, timeout_s = connection("127.0.0.1:9092", config, None, "2s")
    assert settings.bootstrap_servers == ("127.0.0.1:9092",)
    assert timeout_s == 2.0
    diagnostics.error("the broker said s3cret-password")
    assert capsys.readouterr().err == "kshare: error: the broker said ***\n"
    diagnostics.forget_secrets()


def _edged_app(body: Callable[[], None]) -> typer.Typer:
    """A one-command app whose command, under ``command_edge``, runs ``body``."""
    app = typer.Typer()

    @app.command()
    @command_edge
    def command(name: str, debug: Debug = False) -> None:
        """Runs the body."""
        body()

    return app


def _raise(error: BaseException) -> Callable[[], None]:
    def body() -> None:
        raise error

    return body


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (NotFound("share group 'g' does not exist"), 5, "share group 'g' does not exist"),
        (UsageError("--rate: bad"), 2, "--rate: bad"),
        (ConnectionFailed("cannot connect"), 3, "cannot connect"),
        (
            ValueError("a bug"),
            1,
            "internal error: ValueError: a bug (run with --debug for the traceback)",
        ),
    ],
)
def test_the_edge_turns_a_failure_into_one_line_and_its_exit_code(
    error: Exception, code: int, line: str
) -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(_edged_app(_raise(error)), ["x"])
    assert (result.exit_code, result.stderr, result.stdout) == (
        code,
        f"kshare: error: {line}\n",
        "",
    )


def test_with_debug_the_edge_writes_the_traceback_first_and_no_hint() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(_edged_app(_raise(ValueError("a bug"))), ["x", "--debug"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert result.stderr.endswith(
        "ValueError: a bug\nkshare: error: internal error: ValueError: a bug\n"
    )


def test_an_interrupt_is_one_line_and_exit_130() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(_edged_app(_raise(KeyboardInterrupt())), ["x"])
    assert (result.exit_code, result.stderr) == (130, "kshare: interrupted\n")


def test_the_edge_lets_a_commands_own_exit_through_and_keeps_its_options() -> None:
    """A command that decides its exit code (a partial answer, 1) is not reported again,
    and Typer builds the same options from the wrapped signature."""
    from typer.testing import CliRunner

    app = _edged_app(_raise(typer.Exit(1)))
    result = CliRunner().invoke(app, ["x"])
    assert (result.exit_code, result.stderr) == (1, "")
    assert "--debug" in CliRunner().invoke(app, ["--help"]).stdout


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
