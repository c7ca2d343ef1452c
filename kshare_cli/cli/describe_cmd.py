"""``kshare describe``: offsets, members or state of share groups, as ``kafka-share-groups.sh``.

Where Kafka's tool prints an error and exits 0 for a missing group, kshare
prints what it could describe on stdout, one line per failed group on stderr,
and exits 5 when every failure was a missing group, 1 for any other failure. A
group of another type (a consumer group) is such another failure: "group 'X' is
not a share group", exit 1, as ``kshare delete`` refuses one; it exists, so
"not found" (5) would send a script looking for a group that is there. With
``--all-groups``, a broker that did not answer the listing is named too (exit 1):
any groups it coordinates are unknown, so the answer may be partial. Only "may":
a broker that coordinates nothing fails its listing just the same, and nothing
tells the two apart, so the message claims no missing groups.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings
    from kshare_cli.services.groups import GroupDescriptions, ShareGroupOffsets

    DescribeReport = GroupDescriptions | ShareGroupOffsets


class View(enum.StrEnum):
    """Which of Kafka's three describe views to show."""

    offsets = "offsets"
    members = "members"
    state = "state"


def choose_view(offsets: bool, members: bool, state: bool) -> View:
    chosen = [
        view
        for view, flag in ((View.offsets, offsets), (View.members, members), (View.state, state))
        if flag
    ]
    if len(chosen) > 1:
        raise UsageError("--offsets, --members and --state are mutually exclusive")
    return chosen[0] if chosen else View.offsets


def check_time_lag(time_lag: bool, view: View) -> None:
    """``--time-lag`` ages the offsets view's share-partitions: no other view has them."""
    if time_lag and view is not View.offsets:
        raise UsageError("--time-lag needs the offsets view, not --members or --state")


Groups = Annotated[
    list[str] | None,
    common.group_argument("Share groups to describe.", metavar="[GROUP]..."),
]
AllGroups = Annotated[bool, typer.Option("--all-groups", help="Describe every share group.")]
Offsets = Annotated[
    bool,
    typer.Option(
        "--offsets", help="Start offset, end offset and lag per share-partition (default)."
    ),
]
Members = Annotated[
    bool, typer.Option("--members", help="Members, their hosts, racks and assignments.")
]
State = Annotated[
    bool, typer.Option("--state", help="Coordinator, state, epochs, assignor, member count.")
]
TimeLag = Annotated[
    bool,
    typer.Option(
        "--time-lag",
        help=(
            "Add the age of each share-partition's oldest unacknowledged record "
            "(LAG-AGE; lag_seconds in json/yaml), read without acquiring it: "
            "one fetch per share-partition with lag. Offsets view only."
        ),
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Kafka's extra columns (leader epoch, member epoch, group epochs).",
    ),
]


@common.command_edge
def describe(
    groups: Groups = None,
    all_groups: AllGroups = False,
    offsets: Offsets = False,
    members: Members = False,
    state: State = False,
    time_lag: TimeLag = False,
    verbose: Verbose = False,
    output: common.Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Describe share groups: their share-partitions' offsets and lag, members, or state.

    Columns match kafka-share-groups.sh --describe (-o plain reproduces its
    layout, sorted), plus END-OFFSET, total lag, rack, subscriptions and assignor.
    """
    group_ids = groups or []
    common.check_groups(group_ids, all_groups)
    view = choose_view(offsets, members, state)
    check_time_lag(time_lag, view)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import groups as group_service

    report = common.run(
        lambda: group_service.describe(settings, group_ids, all_groups, view.value, timeout_s)
    )
    lag_ages = _lag_ages(report, settings, timeout_s) if time_lag else None
    from kshare_cli.render import render

    common.stdout_write(
        render(report, output.value, view=view.value, verbose=verbose, lag_ages=lag_ages)
    )
    finish(report, output)


def _lag_ages(
    report: DescribeReport, settings: ConnectionSettings, timeout_s: float
) -> dict[tuple[str, str, int], float | None] | None:
    """``--time-lag``'s ages of the offsets view's share-partitions (None for another view)."""
    from kshare_cli.services.groups import ShareGroupOffsets

    if not isinstance(report, ShareGroupOffsets):
        return None
    from kshare_cli.services.time_lag import describe_time_lags

    return describe_time_lags(report, settings, timeout_s)


def finish(report: DescribeReport, output: common.OutputFormat) -> None:
    """The notices and every failure on stderr, and the documented exit code."""
    from kshare_cli.render import notices
    from kshare_cli.services.groups import ShareGroupOffsets

    for line in notices(report, output.value):
        diagnostics.progress(f"{line}\n")
    for unlisted in report.broker_failures:
        common.report_failure(
            f"broker {unlisted.node_id} ({unlisted.host}:{unlisted.port}) did not list its "
            f"share groups, so any it coordinates are unknown: {unlisted.error}"
        )
    failures = report.errors()
    for failure in failures:
        common.report_failure(str(failure))
    partition_failures = (
        (*report.partition_errors(), *report.end_offset_errors())
        if isinstance(report, ShareGroupOffsets)
        else ()
    )
    for partition_failure in partition_failures:
        common.report_failure(str(partition_failure))
    if not failures and not partition_failures and not report.broker_failures:
        return
    whole_groups_failed = not partition_failures and not report.broker_failures
    if whole_groups_failed and all(
        failure.not_found and not failure.not_share_group for failure in failures
    ):
        raise typer.Exit(int(ExitCode.NOT_FOUND))
    if whole_groups_failed and all(failure.not_authorized for failure in failures):
        raise typer.Exit(int(ExitCode.NOT_AUTHORIZED))
    raise typer.Exit(int(ExitCode.PARTIAL))
