"""``kshare exporter``: share-group metrics for Prometheus, and ``kshare health``'s status.

A long-running command: it reads the groups every ``--interval`` in the
background (never per scrape) and serves the last reading at ``/metrics``,
``/healthz`` (200 while the last refresh succeeded within three intervals, else
503 with the reason) and ``/`` (the metrics named). The bound address is one
stderr line, so ``--listen 127.0.0.1:0`` can be used by a script. SIGTERM and
SIGINT stop it, exit 0. A refresh that fails is a stderr warning and a counted
error, not an exit: the exporter outlives a broker restart. Exit 2 for usage, 3
when it cannot listen.
"""

from __future__ import annotations

import re
from typing import Annotated, Final

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common, durations, threshold_options
from kshare_cli.errors import UsageError

DEFAULT_LISTEN: Final = "0.0.0.0:9932"
DEFAULT_INTERVAL_S: Final = 15.0

_LISTEN = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]*)):(?P<port>\d{1,5})$")


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` (every interface); port 0 picks a free one."""
    match = _LISTEN.match(text.strip())
    if match is None or int(match.group("port")) > 65535:
        raise UsageError(f"--listen: {text!r} is not HOST:PORT (e.g. 0.0.0.0:9932 or :9932)")
    host = match.group("v6") or match.group("host") or "0.0.0.0"
    return host, int(match.group("port"))


def check_args(
    groups: list[str],
    all_groups: bool,
    interval: float,
    stall_after: float,
    lag_above: int | None,
    archived_above: int | None,
    dlq_rate_above: float | None = None,
) -> None:
    """Everything that can be refused before connecting (exit 2, one stderr line)."""
    if groups and all_groups:
        raise UsageError("give --group or --all-groups, not both")
    for group in groups:
        common.check_group_id(group)
    if not 0 < interval <= 3600:
        raise UsageError(f"--interval must be above 0 and at most 3600 s, not {interval:g}")
    if not stall_after > 0:
        raise UsageError(f"--stall-after must be above 0, not {stall_after:g}")
    threshold_options.check_thresholds(lag_above, archived_above)
    threshold_options.check_dlq_rate(dlq_rate_above)


Listen = Annotated[
    str,
    typer.Option("--listen", metavar="HOST:PORT", help="Where to serve (port 0: any free)."),
]
Groups = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        "-g",
        metavar="GROUP",
        help="Export this share group (repeatable); default: every share group.",
        show_default=False,
    ),
]
AllGroups = Annotated[
    bool,
    typer.Option("--all-groups", help="Every share group, listed again at each refresh."),
]
Interval = Annotated[
    str,
    typer.Option(
        "--interval",
        metavar="DURATION",
        help=durations.duration_help("Time between refreshes", bare="s"),
    ),
]
StallAfter = Annotated[
    str,
    threshold_options.stall_after(
        "STALL: lag above 0 while the start offset has not moved this long"
    ),
]
LagAbove = Annotated[int | None, threshold_options.lag_above("WARN above this lag (default: off).")]
ArchivedAbove = Annotated[
    int | None,
    threshold_options.archived_above("WARN above this many archived records (default: off)."),
]
DlqRateAbove = Annotated[
    float | None,
    threshold_options.dlq_rate_above(
        "kshare_share_group_status WARN for a group whose dead-letter queue (Kafka 4.4) "
        "grew faster than N records/s, measured from the refresh --stall-after before "
        "(default: off)."
    ),
]
ClusterName = Annotated[
    str | None,
    typer.Option(
        "--cluster-name",
        metavar="NAME",
        help="The cluster_name label (default: the bootstrap servers).",
        show_default=False,
    ),
]
TimeLag = Annotated[
    bool,
    threshold_options.time_lag(
        "Also export kshare_share_partition_lag_seconds: the age of each "
        "share-partition's oldest record not yet acknowledged (one fetch per "
        "share-partition with lag, each refresh)."
    ),
]


@common.command_edge
def exporter(
    listen: Listen = DEFAULT_LISTEN,
    group: Groups = None,
    all_groups: AllGroups = False,
    interval: Interval = f"{DEFAULT_INTERVAL_S:g}s",
    stall_after: StallAfter = threshold_options.DEFAULT_STALL_AFTER,
    lag_above: LagAbove = None,
    archived_above: ArchivedAbove = None,
    dlq_rate_above: DlqRateAbove = None,
    cluster_name: ClusterName = None,
    time_lag: TimeLag = False,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Serve share-group metrics to Prometheus (/metrics, /healthz).

    Lag, start and end offsets, in-flight records by state and the highest
    delivery count per share-partition; lag, members, state and kshare health's
    status per group. Read every --interval in the background; scrapes get the
    last reading. SIGTERM or Ctrl-C stops it (exit 0).
    """
    group_ids = group or []
    interval_s = durations.seconds("--interval", interval, bare="s")
    stall_after_s = durations.seconds("--stall-after", stall_after, bare="s")
    check_args(
        group_ids, all_groups, interval_s, stall_after_s, lag_above, archived_above, dlq_rate_above
    )
    address = parse_listen(listen)
    timeout_s = common.parse_timeout(timeout)
    durations.warn_if_bare("--interval", interval)
    durations.warn_if_bare("--stall-after", stall_after)
    settings = common.resolve(bootstrap_server, command_config, profile)

    from kshare_cli.render.metrics import MetricsPage, index_page
    from kshare_cli.services import exporter_server
    from kshare_cli.services.health import Thresholds

    thresholds = Thresholds(lag_above, archived_above, stall_after_s, dlq_rate_above)
    name = cluster_name or ",".join(settings.bootstrap_servers)
    exporter_server.serve(
        settings,
        group_ids or None,
        thresholds,
        interval_s,
        timeout_s,
        address,
        lambda current: MetricsPage(current, name),
        index_page(name),
        lambda line: diagnostics.progress(f"{line}\n"),
        time_lag=time_lag,
    )
