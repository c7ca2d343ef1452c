"""``kshare dashboard``: the live terminal dashboard of share groups and their in-flight windows.

Before the screen takes over the terminal, the command connects once and, for
a named group, describes it: a cluster that cannot be reached (exit 3), does
not answer in time (4), or a group that does not exist (5) is one line on
stderr, as with every other command, instead of a dashboard that shows an
error. Once running, the dashboard never exits on a broker error: it keeps the
last data and says how old it is.

Textual is imported only when the command runs: ``kshare --help`` and shell
completion must not pay for it (tests/cli/test_startup.py).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Annotated, Final

import typer

from kshare_cli.cli import common, durations, threshold_options
from kshare_cli.errors import UsageError

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings

MIN_REFRESH_S: Final = 0.5
MAX_REFRESH_S: Final = 3600.0
DEFAULT_REFRESH: Final = "2s"


def parse_seconds(option: str, text: str, minimum: float, maximum: float) -> float:
    """A duration in seconds within bounds; anything else is a usage error naming the option."""
    seconds = durations.seconds(option, text, bare="s")
    if not math.isfinite(seconds) or not minimum <= seconds <= maximum:
        raise UsageError(
            f"{option} must be between {minimum:g} and {maximum:g} seconds, not {text}"
        )
    durations.warn_if_bare(option, text)
    return seconds


Group = Annotated[
    str | None,
    common.group_argument(
        "Open this share group's screen first (escape leads to every group).", metavar="[GROUP]"
    ),
]
Refresh = Annotated[
    str,
    typer.Option(
        "--refresh",
        metavar="DURATION",
        help=durations.duration_help(
            f"Time between refreshes, {MIN_REFRESH_S:g}s to {MAX_REFRESH_S:g}s; + and - "
            "change it while running",
            bare="s",
        ),
    ),
]
StallAfter = Annotated[
    str,
    threshold_options.stall_after(
        "Flag a share-partition as stalled when its lag is above 0 and its start "
        "offset has not moved for this long"
    ),
]


@common.command_edge
def dashboard(
    group: Group = None,
    refresh: Refresh = DEFAULT_REFRESH,
    stall_after: StallAfter = threshold_options.DEFAULT_STALL_AFTER,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Watch share groups live: lag, how fast it drains, in-flight windows, members, stalls.

    Screens: every group (state, members, share-partitions, total lag and its
    trend, net drain, time to empty); one group (records consumed and arriving
    per second, net drain, time to empty; per share-partition: start and end
    offset, lag and its sparkline, the in-flight window, archived records, time
    since the start offset moved; the members); one share-partition (the same
    rates, the window zoomed, delivery counts, the most delivered offsets, the
    next records, read without acquiring them). Net drain is the lag's decrease
    per second (consumed - arriving); time to empty is lag / net drain, "never"
    while the lag grows. Keys: enter/arrows, escape, / filter, p pause, + and -
    refresh interval, r refresh, ? help, q quit; ctrl+c quits with exit code
    130, as an interrupted command. Windows come from __share_group_state
    (needs READ on it; without it the screen says why).
    """
    if group is not None:
        common.check_group_id(group)
    refresh_s = parse_seconds("--refresh", refresh, MIN_REFRESH_S, MAX_REFRESH_S)
    stall_after_s = parse_seconds("--stall-after", stall_after, 1.0, 7 * 24 * 3600.0)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)
    from kshare_cli.services.groups import check_group

    common.run(lambda: check_group(settings, group, timeout_s))
    _check_terminal()
    _run_dashboard(settings, timeout_s, group, refresh_s, stall_after_s)


def _run_dashboard(
    settings: ConnectionSettings,
    timeout_s: float,
    group: str | None,
    refresh_s: float,
    stall_after_s: float,
) -> None:
    """The Textual app until it quits; its crash or its Ctrl-C is the command's."""
    from kshare_cli.tui.app import DashboardApp
    from kshare_cli.tui.source import LiveSource

    app = DashboardApp(
        LiveSource(settings, timeout_s=timeout_s),
        group=group,
        refresh_s=refresh_s,
        stall_after_s=stall_after_s,
    )
    app.run()
    if app.crash is not None:
        raise app.crash
    if app.interrupted:
        # ctrl+c or SIGINT ended the app: the edge reports it as every command does (130).
        raise KeyboardInterrupt


def _check_terminal() -> None:
    """Textual draws on the terminal behind stdin and stderr: without one, nothing to see."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError("kshare dashboard needs a terminal (stdin and stderr are not one)")
