"""``kshare dashboard`` in a real terminal: the console script in a tmux pane, read off the screen.

Pilot drives the app in-process; this test checks what only a real terminal
shows: the installed command starts, takes over a 120x40 pty, draws the
group and its share-partitions from the cluster, and quits on ``q`` with
exit code 0, giving the terminal back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.scenario import LiveGroup

KSHARE = Path(sys.executable).with_name("kshare")
TMUX = shutil.which("tmux") or "/usr/bin/tmux"


class Tmux:
    """A private tmux server (its own socket), so the test never touches the user's sessions."""

    def __init__(self, environment: dict[str, str]) -> None:
        self.socket = f"kshare-test-{uuid.uuid4().hex[:8]}"
        self.environment = environment

    def __call__(self, *args: str) -> str:
        result = subprocess.run(
            [TMUX, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            env=self.environment,
            timeout=30,
            check=False,
        )
        return result.stdout

    def screen(self, session: str) -> str:
        return self("capture-pane", "-p", "-t", session)

    def wait_for_screen(self, session: str, condition: object, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen(session)
            if callable(condition) and condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed what was expected:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if not os.path.exists(TMUX):
        pytest.fail("tmux is not installed: scripts/test.sh installs it (apt-get install tmux)")
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("KSHARE_", "TMUX"))
    }
    environment.update({"TERM": "xterm-256color", "KSHARE_CONFIG": str(tmp_path / "config.toml")})
    server = Tmux(environment)
    try:
        yield server
    finally:
        server("kill-server")


def test_dashboard_in_a_tmux_pane_shows_the_group_and_quits_on_q(
    live_group: LiveGroup, tmux: Tmux, tmp_path: Path
) -> None:
    exit_file = tmp_path / "exit-code"
    argv = [str(KSHARE), "dashboard", live_group.group, "-b", live_group.bootstrap]
    if live_group.command_config is not None:
        argv += ["--command-config", str(live_group.command_config)]
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/sh\n" + " ".join(f"'{arg}'" for arg in argv) + f"\necho $? > '{exit_file}'\n"
    )
    script.chmod(0o755)
    session = "dashboard"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", str(script))

    shown_topic = live_group.topic[:15]  # the TOPIC column is 16 wide: longer names get an …

    def group_and_partitions(text: str) -> bool:
        rows = [line for line in text.splitlines() if line.strip().startswith(shown_topic)]
        return f"group {live_group.group}" in text and len(rows) == 2

    text = tmux.wait_for_screen(session, group_and_partitions)
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(shown_topic)]
    assert [row[1] for row in rows] == ["0", "1"]
    assert "Members" in text and "refresh every 2 s" in text

    tmux("send-keys", "-t", session, "q")
    deadline = time.monotonic() + 15
    while not exit_file.exists() or not exit_file.read_text().strip():
        assert time.monotonic() < deadline, tmux.screen(session)
        time.sleep(0.1)
    assert exit_file.read_text().strip() == "0"
