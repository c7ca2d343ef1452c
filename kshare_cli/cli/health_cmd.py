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
        typer.echo(f"kshare: note: {note}", err=True)
    for broker in report.broker_failures:
        common.report_failure(str(broker))
    for group_id in report.not_found:
        common.report_failure(f"share group '{group_id}' does not exist")
    if report.not_found:
        raise typer.Exit(int(ExitCode.NOT_FOUND))
    raise typer.Exit(monitoring_exit_code(report.status))


def health(
    groups: Annotated[
        list[str] | None,
        common.group_argument("Share groups to evaluate.", metavar="[GROUP]..."),
    ] = None,
    all_groups: Annotated[
        bool, typer.Option("--all-groups", help="Evaluate every share group.")
    ] = False,
    lag_above: Annotated[
        int | None,
        threshold_options.lag_above(
            "WARN for a share-partition whose lag is above N (default: off)."
        ),
    ] = None,
    stall_after: Annotated[
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
    ] = None,
    archived_above: Annotated[
        int | None,
        threshold_options.archived_above(
            "WARN for a share-partition with more than N archived records in its "
            "in-flight window (default: off)."
        ),
    ] = None,
    time_lag: Annotated[
        bool,
        threshold_options.time_lag(
            "Add the age of each share-partition's oldest unacknowledged record "
            "(LAG-AGE; lag_seconds in json/yaml/jsonl), read without acquiring it: one "
            "fetch per share-partition with lag. It changes no status."
        ),
    ] = False,
    dlq_rate_above: Annotated[
        float | None,
        threshold_options.dlq_rate_above(
            "WARN for a group whose dead-letter queue (Kafka 4.4) grew faster than N "
            "records/s between the two samples (--stall-after takes the second; the "
            "reason says by how many records in how many seconds). Reads the group's "
            "DLQ topic, by its __dlq.errors.group header (default: off)."
        ),
    ] = None,
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
    invocation = common.Invocation(debug=debug)
    group_ids = groups or []
    stall_after_s = common.usage_guard(
        lambda: durations.optional_seconds("--stall-after", stall_after, bare="s"), invocation
    )
    common.usage_guard(
        lambda: check_args(
            group_ids, all_groups, lag_above, archived_above, stall_after_s, output, dlq_rate_above
        ),
        invocation,
    )
    timeout_s = common.usage_guard(lambda: common.parse_timeout(timeout), invocation)
    durations.warn_if_bare("--stall-after", stall_after)
    settings = common.usage_guard(
        lambda: common.resolve(bootstrap_server, command_config, profile), invocation
    )
    invocation = common.Invocation(debug=debug, secrets=common.secrets_of(settings))

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
        ),
        invocation,
    )
    lag_ages = None
    if time_lag:
        from kshare_cli.services.time_lag import health_time_lags

        lag_ages = common.edge(
            lambda: health_time_lags(report, settings.confluent_config(), timeout_s), invocation
        )
    finish(report, output, lag_ages)
