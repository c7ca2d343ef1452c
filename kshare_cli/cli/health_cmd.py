"""``kshare health``: one status per share group and share-partition, for monitoring scripts.

The rules are ``services/health.py``'s (the dashboard's and the exporter's too).
The exit code follows Nagios, as monitoring scripts expect: 0 OK, 1 WARN,
2 critical (STALL, STOP or ERR). kshare's usual exit 2 (usage) keeps its code:
a usage error is refused before anything is read, with one ``kshare: error:``
line and nothing on stdout, while a critical result always prints its rows, so a
script tells them apart by stdout. 3, 4 and 5 stay connection, timeout and not
found (a named group that does not exist; its row says ERR), which no status
could be given for.

One sample cannot show a stall (the start offset standing still needs two
readings); ``--stall-after S`` takes a second sample S seconds after the first.
Without it, stderr says that stalls were not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common, durations, threshold_options
from kshare_cli.cli.inflight_cmd import Output
from kshare_cli.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from kshare_cli.services.health import HealthReport


def check_args(
    groups: list[str],
    all_groups: bool,
    lag_above: int | None,
    archived_above: int | None,
    stall_after: float | None,
    output: common.OutputFormat,
    dlq_rate_above: float | None = None,
) -> None:
    """Everything that can be refused before connecting (exit 2, one stderr line)."""
    common.check_groups(groups, all_groups)
    threshold_options.check_thresholds(lag_above, archived_above)
    threshold_options.check_dlq_rate(dlq_rate_above)
    if stall_after is not None and not 0 < stall_after <= 3600:
        raise UsageError(f"--stall-after must be above 0 and at most 3600 s, not {stall_after:g}")
    if output is common.OutputFormat.plain:
        raise UsageError("-o plain: kafka-share-groups.sh has no health view to reproduce")


def finish(
    report: HealthReport,
    output: common.OutputFormat,
    lag_ages: Mapping[tuple[str, str, int], float | None] | None = None,
) -> None:
    """Print the rows, the notes once on stderr, and exit with the monitoring code."""
    from kshare_cli.render.health import render_health
    from kshare_cli.services.health import monitoring_exit_code

    common.stdout_write(render_health(report, output.value, lag_ages))
    notes = dict.fromkeys(note for group in report.groups for note in group.notes)
    for note in notes:
        diagnostics.progress(f"kshare: note: {note}\n")
    for broker in report.broker_failures:
        common.report_failure(str(broker))
    for group_id in report.not_found:
        common.report_failure(f"share group '{group_id}' does not exist")
    if report.not_found:
        raise typer.Exit(int(ExitCode.NOT_FOUND))
    raise typer.Exit(monitoring_exit_code(report.status))


Groups = Annotated[
    list[str] | None,
    common.group_argument("Share groups to evaluate.", metavar="[GROUP]..."),
]
AllGroups = Annotated[bool, typer.Option("--all-groups", help="Evaluate every share group.")]
LagAbove = Annotated[
    int | None,
    threshold_options.lag_above("WARN for a share-partition whose lag is above N (default: off)."),
]
StallAfter = Annotated[
    str | None,
    typer.Option(
        "--stall-after",
        metavar="DURATION",
        help=durations.duration_help(
            "Take a second sample this long after the first: lag above 0 while the start "
            "offset did not move is STALL (default: one sample, stalls not evaluated)",
            bare="s",
        ),
        show_default=False,
    ),
]
ArchivedAbove = Annotated[
    int | None,
    threshold_options.archived_above(
        "WARN for a share-partition with more than N archived records in its "
        "in-flight window (default: off)."
    ),
]
TimeLag = Annotated[
    bool,
    threshold_options.time_lag(
        "Add the age of each share-partition's oldest unacknowledged record "
        "(LAG-AGE; lag_seconds in json/yaml/jsonl), read without acquiring it: one "
        "fetch per share-partition with lag. It changes no status."
    ),
]
DlqRateAbove = Annotated[
    float | None,
    threshold_options.dlq_rate_above(
        "WARN for a group whose dead-letter queue (Kafka 4.4) grew faster than N "
        "records/s between the two samples (--stall-after takes the second; the "
        "reason says by how many records in how many seconds). Reads the group's "
        "DLQ topic, by its __dlq.errors.group header (default: off)."
    ),
]


@common.command_edge
def health(
    groups: Groups = None,
    all_groups: AllGroups = False,
    lag_above: LagAbove = None,
    stall_after: StallAfter = None,
    archived_above: ArchivedAbove = None,
    time_lag: TimeLag = False,
    dlq_rate_above: DlqRateAbove = None,
    output: Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Check share groups' health: OK, WARN, STALL, STOP or ERR, with the reason.

    Exit 0 OK, 1 WARN, 2 STALL/STOP/ERR (Nagios' codes); a usage error is also 2,
    but prints nothing on stdout. 3 connection, 4 timeout, 5 a group that does
    not exist.
    """
    group_ids = groups or []
    stall_after_s = durations.optional_seconds("--stall-after", stall_after, bare="s")
    check_args(
        group_ids, all_groups, lag_above, archived_above, stall_after_s, output, dlq_rate_above
    )
    timeout_s = common.parse_timeout(timeout)
    durations.warn_if_bare("--stall-after", stall_after)
    settings = common.resolve(bootstrap_server, command_config, profile)

    from kshare_cli.services import health_check as health_service
    from kshare_cli.services.health import DEFAULT_STALL_AFTER_S, Thresholds

    thresholds = Thresholds(
        lag_above=lag_above,
        archived_above=archived_above,
        stall_after_s=DEFAULT_STALL_AFTER_S if stall_after_s is None else stall_after_s,
        dlq_rate_above=dlq_rate_above,
    )
    report = common.run(
        lambda: health_service.health(
            settings, group_ids, all_groups, thresholds, stall_after is not None, timeout_s
        )
    )
    lag_ages = None
    if time_lag:
        from kshare_cli.services.time_lag import health_time_lags

        lag_ages = health_time_lags(report, settings.confluent_config(), timeout_s)
    finish(report, output, lag_ages)
