"""``kshare dashboard`` in a real terminal: the console script in a tmux pane, read off the screen.

Pilot drives the app in-process; this test checks what only a real terminal
shows: the installed command starts, takes over a 120x40 pty, draws the
group and its share-partitions from the cluster, and quits on ``q`` with
exit code 0, giving the terminal back; ctrl+c pressed in that terminal, or a
SIGINT sent to the process, quits with 130, as any interrupted command.
"""

from __future__ import annotations

import os
import shutil
import signal
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


class Dashboard:
    """``kshare dashboard`` running in a tmux pane: its session, pid and exit code, once it ends."""

    def __init__(self, tmux: Tmux, live_group: LiveGroup, directory: Path) -> None:
        self.tmux = tmux
        self.session = "dashboard"
        self.exit_file = directory / "exit-code"
        self.pid_file = directory / "pid"
        argv = [str(KSHARE), "dashboard", live_group.group, "-b", live_group.bootstrap]
        if live_group.command_config is not None:
            argv += ["--command-config", str(live_group.command_config)]
        command = " ".join(f"'{arg}'" for arg in argv)
        script = directory / "run.sh"
        # The inner shell execs kshare, so the pid it writes is the dashboard's own.
        script.write_text(
            "#!/bin/sh\n"
            f'sh -c \'echo $$ > "{self.pid_file}"; exec "$0" "$@"\' {command}\n'
            f"echo $? > '{self.exit_file}'\n"
            "sleep 60\n"  # keep the pane, and what kshare left on it, to be read
        )
        script.chmod(0o755)
        tmux("new-session", "-d", "-s", self.session, "-x", "120", "-y", "40", str(script))
        self.topic_shown = live_group.topic[:15]  # the TOPIC column is 16 wide: longer get an …
        self.group = live_group.group

    def partition_rows(self, text: str) -> list[list[str]]:
        # A table row: the topic, then its partition number. A long-idle group's stall
        # warning wraps onto a line that starts with "TOPIC:PARTITION" too: not a row.
        rows = [
            line.split() for line in text.splitlines() if line.strip().startswith(self.topic_shown)
        ]
        return [row for row in rows if len(row) > 1 and row[1].isdigit()]

    def wait_until_drawn(self) -> str:
        def group_and_partitions(text: str) -> bool:
            return f"group {self.group}" in text and len(self.partition_rows(text)) == 2

        return self.tmux.wait_for_screen(self.session, group_and_partitions)

    @property
    def pid(self) -> int:
        return int(self.pid_file.read_text())

    def exit_code(self, timeout: float = 15) -> int:
        deadline = time.monotonic() + timeout
        while not self.exit_file.exists() or not self.exit_file.read_text().strip():
            assert time.monotonic() < deadline, self.tmux.screen(self.session)
            time.sleep(0.1)
        return int(self.exit_file.read_text())


def test_dashboard_in_a_tmux_pane_shows_the_group_and_quits_on_q(
    live_group: LiveGroup, tmux: Tmux, tmp_path: Path
) -> None:
    dashboard = Dashboard(tmux, live_group, tmp_path)
    text = dashboard.wait_until_drawn()
    assert [row[1] for row in dashboard.partition_rows(text)] == ["0", "1"]
    assert "Members" in text and "refresh every 2 s" in text

    tmux("send-keys", "-t", dashboard.session, "q")
    assert dashboard.exit_code() == 0
    assert "kshare" not in tmux.screen(dashboard.session)  # nothing said: a plain quit


@pytest.mark.parametrize("how", ["ctrl+c pressed", "SIGINT sent"])
def test_ctrl_c_or_sigint_ends_the_dashboard_with_exit_130(
    live_group: LiveGroup, tmux: Tmux, tmp_path: Path, how: str
) -> None:
    """Ctrl+C in the terminal (a key to Textual) and ``kill -INT`` both quit: 130, one line."""
    dashboard = Dashboard(tmux, live_group, tmp_path)
    dashboard.wait_until_drawn()
    if how == "ctrl+c pressed":
        tmux("send-keys", "-t", dashboard.session, "C-c")
    else:
        os.kill(dashboard.pid, signal.SIGINT)
    assert dashboard.exit_code() == 130
    # The terminal is given back (the dashboard's screen is gone) with the usual line.
    lines = [line for line in tmux.screen(dashboard.session).splitlines() if line.strip()]
    assert lines == ["kshare: interrupted"]
