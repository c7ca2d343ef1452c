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
from typing import Annotated

import typer

from kshare_cli.cli import common
from kshare_cli.errors import ExitCode, UsageError


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


def _time_lag_needs_offsets() -> None:
    raise UsageError("--time-lag needs the offsets view, not --members or --state")


def describe(
    groups: Annotated[
        list[str] | None,
        common.group_argument("Share groups to describe.", metavar="[GROUP]..."),
    ] = None,
    all_groups: Annotated[
        bool, typer.Option("--all-groups", help="Describe every share group.")
    ] = False,
    offsets: Annotated[
        bool,
        typer.Option(
            "--offsets", help="Start offset, end offset and lag per share-partition (default)."
        ),
    ] = False,
    members: Annotated[
        bool, typer.Option("--members", help="Members, their hosts, racks and assignments.")
    ] = False,
    state: Annotated[
        bool, typer.Option("--state", help="Coordinator, state, epochs, assignor, member count.")
    ] = False,
    time_lag: Annotated[
        bool,
        typer.Option(
            "--time-lag",
            help=(
                "Add the age of each share-partition's oldest unacknowledged record "
                "(LAG-AGE; lag_seconds in json/yaml), read without acquiring it: "
                "one fetch per share-partition with lag. Offsets view only."
            ),
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Kafka's extra columns (leader epoch, member epoch, group epochs).",
        ),
    ] = False,
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
    invocation = common.Invocation(debug=debug)
    group_ids = groups or []
    common.usage_guard(lambda: common.check_groups(group_ids, all_groups), invocation)
    view = common.usage_guard(lambda: choose_view(offsets, members, state), invocation)
    if time_lag and view is not View.offsets:
        common.usage_guard(_time_lag_needs_offsets, invocation)
    settings, timeout_s, invocation = common.connection(
        bootstrap_server, command_config, profile, timeout, invocation
    )

    from kshare_cli.services import groups as group_service

    report = common.run(
        lambda: group_service.describe(settings, group_ids, all_groups, view.value, timeout_s),
        invocation,
    )
    from kshare_cli.render import notices, render
    from kshare_cli.services.groups import ShareGroupOffsets

    lag_ages = None
    if time_lag and isinstance(report, ShareGroupOffsets):
        from kshare_cli.services.time_lag import time_lags

        offsets_report = report
        lag_ages = common.edge(
            lambda: time_lags(offsets_report, settings.confluent_config(), timeout_s),
            invocation,
        )
    common.stdout_write(
        render(report, output.value, view=view.value, verbose=verbose, lag_ages=lag_ages)
    )
    for line in notices(report, output.value):
        typer.echo(line, err=True)
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
    missing = all(failure.not_found and not failure.not_share_group for failure in failures)
    if failures and not partition_failures and not report.broker_failures and missing:
        raise typer.Exit(int(ExitCode.NOT_FOUND))
    refused = all(failure.not_authorized for failure in failures)
    if failures and not partition_failures and not report.broker_failures and refused:
        raise typer.Exit(int(ExitCode.NOT_AUTHORIZED))
    if failures or partition_failures or report.broker_failures:
        raise typer.Exit(int(ExitCode.PARTIAL))
