"""Every command that takes a topic refuses an impossible name the same way, before connecting.

A new user's 250-character topic name once gave three different errors in three
commands (a usage line, a broker error, a timeout). Kafka's rule is one
(``Topic.validate``), so the refusal is one: the same line, exit 2, and nothing
sent, which the closed bootstrap port proves (a connection attempt would be exit 3).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

KSHARE = Path(sys.executable).with_name("kshare")

#: Each command that names a topic, with the arguments it needs besides ``--topic``.
COMMANDS = {
    "consume": ["consume", "--group", "g"],
    "produce": ["produce"],
    "inflight": ["inflight", "g"],
    "reset-offsets": ["reset-offsets", "g", "--to-earliest"],
    "delete-offsets": ["delete-offsets", "g"],
    "audit": ["audit", "archived", "--group", "g"],
}


@pytest.fixture(scope="module")
def closed_port() -> int:
    """A port nothing listens on: any connection attempt would fail with exit 3."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(argv: list[str], port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KSHARE), *argv, "--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "5s"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


RULE = "1 to 249 of ASCII letters, digits, '.', '_' and '-'"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("t" * 250, f"{'t' * 40!r}… (250 characters) is not a topic name: {RULE}"),
        ("a/b", f"'a/b' is not a topic name: it has '/'; {RULE}"),
        ("..", "'..' is not a topic name (Kafka reserves '.' and '..')"),
    ],
    ids=["250-characters", "slash", "dot-dot"],
)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_impossible_topic_name_is_one_usage_line_everywhere(
    command: str, name: str, reason: str, closed_port: int
) -> None:
    done = _run([*COMMANDS[command], "--topic", name], closed_port)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines() == [f"kshare: error: --topic: {reason}"]


def test_a_name_of_249_characters_is_a_name(closed_port: int) -> None:
    """The limit itself is legal: the command goes on to connect (and fails there, exit 3)."""
    done = _run([*COMMANDS["inflight"], "--topic", "t" * 249], closed_port)
    assert done.returncode == 3, done.stderr
    assert "not a topic name" not in done.stderr
