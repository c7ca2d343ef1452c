"""``kshare list``: the share groups of a cluster, as ``kafka-share-groups.sh --list``.

Kafka's ``--list --state`` takes an optional state; a Typer option cannot, so
``--state all`` stands for the bare flag: every group, with its state column.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import ExitCode

#: For completion only (the admin layer validates): Kafka 4.2's states of a share group.
_STATE_NAMES = ("Stable", "Empty", "Dead", "all")


def _complete_states(incomplete: str) -> list[str]:
    return [s for s in _STATE_NAMES if s.lower().startswith(incomplete.lower())]


def normalise_states(states: list[str]) -> tuple[bool, tuple[str, ...]]:
    """(show the state column, states to filter on); ``all`` alone means every state."""
    if not states:
        return False, ()
    from kshare_cli.services.groups import parse_state_filter

    named = [part for value in states for part in value.split(",") if part.strip().lower() != "all"]
    return True, parse_state_filter(named)


States = Annotated[
    list[str] | None,
    typer.Option(
        "--state",
        "-s",
        metavar="STATE",
        help="Only groups in this state (Stable, Empty, Dead; repeatable, or comma-separated). "
        "'all' lists every group with its state.",
        autocompletion=_complete_states,
    ),
]


@common.command_edge
def list_groups(
    state: States = None,
    output: common.Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """List share groups, optionally only those in a given state.

    Sorted by group id (Kafka's tool prints them in whatever order the brokers
    answered). Exit 1 when a broker could not be asked: the list may then be
    incomplete, and the missing broker is named on stderr.
    """
    show_state, states = normalise_states(state or [])
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import groups as group_service

    listing = common.run(lambda: group_service.list_groups(settings, states, timeout_s))
    from kshare_cli.render import notices, render

    common.stdout_write(render(listing, output.value, with_state=show_state))
    for line in notices(listing):
        diagnostics.progress(f"{line}\n")
    for problem in listing.errors():
        common.report_failure(str(problem))
    if listing.errors():
        raise typer.Exit(int(ExitCode.PARTIAL))
