"""``kshare dlq redrive``: put a share group's dead letters back where they are consumed again.

A dry run unless ``--execute``: the plan (per source partition and reason, how
many records will be sent, how many an earlier run already redrove, how many
cannot be) is printed, and nothing is sent. With ``--execute`` on a terminal the
plan is shown on stderr and kshare asks first, unless ``--yes``; without a
terminal (cron, CI, a pipe) ``--execute`` alone sends. Each redriven record
names its dead letter in headers, so a rerun -- after Ctrl-C, a kill, a failure
-- sends only what is not there yet. ``--rate`` paces the records (Amazon SQS's
redrive velocity).

Exit codes: 0 everything planned was sent (or nothing was left to send); 1 some
records were not sent (each named on stderr with the cluster's reason; what was
sent is exact: a record counts once its delivery report came back), or a source
partition could not be read; 2 bad usage (a bad ``--offsets`` or ``--rate``, a
``--since`` in the future), nothing sent; 4 ``--timeout`` passed before the DLQ
or a target topic was read to its end, nothing sent; 5 a group without a DLQ
topic, a DLQ topic or ``--to-topic`` that does not exist, an ``--offsets`` entry
that is no dead letter of the group, nothing sent; 6 a topic the principal may
not read; 130 interrupted (Ctrl-C or SIGTERM stop between two records: what was
sent is said, and a rerun continues).
"""

from __future__ import annotations

import math
import re
import sys
from typing import TYPE_CHECKING, Annotated, Final

import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common, dlq_options
from kshare_cli.errors import ExitCode, UsageError
from kshare_cli.topic_names import check_topic_name

if TYPE_CHECKING:
    from kshare_cli.services.dlq_redrive import RedriveOutcome, RedrivePlan

_PER: Final = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_RATE: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(?:/\s*([a-z]+))?\s*$")
#: Failures named one per stderr line; the rest are counted.
_SHOWN_FAILURES: Final = 10


#: As ``dlq_options.Output``, without completing the formats at <Tab>.
Output = Annotated[
    common.OutputFormat,
    typer.Option(
        "--output",
        "-o",
        parser=dlq_options.parse_output_format,
        metavar=f"<{'|'.join(dlq_options.FORMATS)}>",
        help="table for people; json/jsonl/csv/yaml for programs.",
    ),
]


def parse_rate(text: str | None) -> float | None:
    """``--rate``: records per second from ``50/s``, ``50`` (per second), ``3000/m``, ``1/h``."""
    if text is None:
        return None
    match = _RATE.match(text.lower())
    unit = match.group(2) if match else None
    if match is None or (unit is not None and unit not in _PER):
        raise UsageError(f"--rate {text!r}: expected records per second such as 50/s, 3000/m")
    rate = float(match.group(1)) / _PER[unit or "s"]
    if not (rate > 0 and math.isfinite(rate)):
        raise UsageError(f"--rate {text!r}: must be more than 0 records per second")
    return rate


def parse_offsets(texts: list[str]) -> tuple[tuple[str, int, int], ...]:
    """``--offsets T:P:O,...`` (repeatable): source records by topic, partition, offset."""
    found: dict[tuple[str, int, int], None] = {}
    for text in texts:
        for item in filter(None, (part.strip() for part in text.split(","))):
            topic, _, rest = item.rpartition(":")
            topic, _, partition = topic.rpartition(":")
            malformed = UsageError(
                f"--offsets {item!r}: expected TOPIC:PARTITION:OFFSET, e.g. orders:0:42"
            )
            if not topic:
                raise malformed
            check_topic_name(topic, "--offsets")
            try:
                place = (topic, int(partition), int(rest))
            except ValueError:
                raise malformed from None
            if place[1] < 0 or place[2] < 0:
                raise UsageError(f"--offsets {item!r}: partition and offset must be 0 or more")
            found[place] = None
    return tuple(found)


def _stdin_is_terminal() -> bool:
    """Whether someone can answer a prompt (tests replace this)."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _where(plan: RedrivePlan) -> str:
    targets = sorted({target for _, target, _ in plan.sends})
    return ", ".join(f"'{target}'" for target in targets) or f"'{plan.to_topic}'"


def _records(count: int) -> str:
    return f"{count} record{'s' if count != 1 else ''}"


def _plan_line(plan: RedrivePlan) -> str:
    parts = [f"{len(plan.already)} already redriven"]
    if plan.cannot:
        parts.append(f"{len(plan.cannot)} cannot be (no copy and gone from the source log)")
    return "; ".join(parts)


def _report_plan_failures(plan: RedrivePlan) -> None:
    for failure in plan.failures:
        common.report_failure(failure)


def _finish_dry_run(plan: RedrivePlan, output: common.OutputFormat) -> None:
    from kshare_cli.render.dlq_redrive import render_redrive

    common.stdout_write(render_redrive(plan, None, output.value))
    _report_plan_failures(plan)
    diagnostics.progress(
        f"kshare: dry run: nothing was sent; {_records(len(plan.sends))} would be sent to "
        f"{_where(plan)} ({_plan_line(plan)}); run again with --execute to send them\n"
    )
    if plan.failures:
        raise typer.Exit(int(ExitCode.PARTIAL))


def _finish(outcome: RedriveOutcome, output: common.OutputFormat) -> None:
    from kshare_cli.render.dlq_redrive import render_redrive

    plan, result = outcome.plan, outcome.result
    common.stdout_write(render_redrive(plan, outcome, output.value))
    _report_plan_failures(plan)
    for failure in result.failures[:_SHOWN_FAILURES]:
        common.report_failure(str(failure))
    if len(result.failures) > _SHOWN_FAILURES:
        common.report_failure(f"... and {len(result.failures) - _SHOWN_FAILURES} more not sent")
    if result.planned == 0:
        diagnostics.progress(f"kshare: nothing to send: {_plan_line(plan)}\n")
        if plan.failures:
            raise typer.Exit(int(ExitCode.PARTIAL))
        return
    sent = len(result.delivered)
    left = result.planned - sent
    summary = (
        f"{_records(sent)} of {result.planned} redriven to {_where(plan)} "
        f"in {result.elapsed_s:.1f} s ({_plan_line(plan)})"
    )
    if result.unconfirmed:
        summary += (
            f"; {len(result.unconfirmed)} handed to the producer got no delivery report "
            "(they may be there: a rerun finds out)"
        )
    if result.stopped_by == "interrupted":
        diagnostics.progress(
            f"kshare: interrupted: {summary}; {_records(left)} not sent: run again to "
            "send the rest\n"
        )
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if result.failures or result.fatal or left:
        why = f" (the producer failed: {result.fatal})" if result.fatal else ""
        common.report_failure(
            f"{summary}; {_records(left)} not sent{why}: run again to send the rest"
        )
        raise typer.Exit(int(ExitCode.PARTIAL))
    diagnostics.progress(f"kshare: {summary}\n")
    if plan.failures:
        raise typer.Exit(int(ExitCode.PARTIAL))


ToTopic = Annotated[
    str | None,
    typer.Option(
        "--to-topic",
        metavar="TOPIC",
        help="Send every record to this topic (it must exist) instead of its source "
        "topic; the producer's partitioner picks the partition.",
        show_default=False,
    ),
]
Offsets = Annotated[
    list[str] | None,
    typer.Option(
        "--offsets",
        metavar="TOPIC:PARTITION:OFFSET,...",
        help="Only these source records (as dlq show lists them); each must be a dead "
        "letter of the group.",
        show_default=False,
    ),
]
Rate = Annotated[
    str | None,
    typer.Option(
        "--rate",
        metavar="N/s",
        help="At most N records per second (also N/m, N/h); default: as fast as the "
        "cluster takes them.",
        show_default=False,
    ),
]
Execute = Annotated[
    bool, typer.Option("--execute", help="Send for real (else a dry run: the plan only).")
]
Yes = Annotated[
    bool,
    typer.Option("--yes", "-y", help="With --execute on a terminal: do not ask first."),
]


@common.command_edge
def redrive(
    group: dlq_options.Group,
    to_topic: ToTopic = None,
    topic: dlq_options.Topics = None,
    reason: dlq_options.Reasons = None,
    since: dlq_options.Since = None,
    offsets: Offsets = None,
    rate: Rate = None,
    execute: Execute = False,
    yes: Yes = False,
    dlq_topic: dlq_options.DlqTopic = None,
    output: Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Redrive a share group's dead letters: produce each record again, once.

    By default each record's key, value and original headers go back to its
    source topic, in its original partition while the topic has it. Each
    redriven record names its dead letter in headers (__kshare.redrive.dlq.topic,
    .partition, .offset); a dead letter already redriven to the target is never
    sent again, also after an interrupted run. A dry run unless --execute; the
    plan counts, per source partition and reason, what will be sent, what was
    already redriven and what cannot be (no copy in the DLQ record and gone from
    the source log). An idempotent producer with acks=all; a record counts as
    sent once its delivery report came back. Ctrl-C stops between two records.
    """
    topics = topic or []
    since_ms = dlq_options.check_common(group, topics, since, dlq_topic)
    if to_topic is not None:
        check_topic_name(to_topic, "--to-topic")
    chosen, records_per_second = parse_offsets(offsets or []), parse_rate(rate)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import dlq_redrive as service

    request = service.RedriveRequest(
        show=dlq_options.show_request(group, topics, reason, since_ms, dlq_topic),
        offsets=chosen,
        to_topic=to_topic,
    )
    plan = common.run(lambda: service.plan(settings, request, timeout_s))
    if not execute:
        _finish_dry_run(plan, output)
        return
    if plan.sends and not yes and _stdin_is_terminal():
        _confirm(plan)
    outcome = service.execute(settings, plan, rate=records_per_second, timeout_s=timeout_s)
    _finish(outcome, output)


def _confirm(plan: RedrivePlan) -> None:
    """The plan on stderr and one question; anything but yes sends nothing (exit 1)."""
    from kshare_cli.render.dlq_redrive import render_redrive

    diagnostics.progress(render_redrive(plan, None, "table"))
    question = f"Send {_records(len(plan.sends))} to {_where(plan)} ({_plan_line(plan)})?"
    if not typer.confirm(question, default=False, err=True):
        common.fail("not confirmed: nothing was sent", ExitCode.PARTIAL)
