"""``kshare dlq``: a share group's dead letters (KIP-1191): see them, and put them back.

A command family: each subcommand is one row of ``SUBCOMMANDS`` (its name, the
module under ``kshare_cli.cli`` that declares it, its function), registered at the
end of this module. Adding one is one line there, e.g. a ``redrive`` written in
``dlq_redrive_cmd.py``::

    ("redrive", "dlq_redrive_cmd", "redrive"),

Its options shared with ``show`` (the group, ``--topic``, ``--reason``, ``--since``,
``--dlq-topic``, ``-o``'s formats) and their checks are in ``dlq_options``, which a
sibling module imports without a cycle. As every command, a subcommand's module imports only Typer
and ``cli/`` at import time (``kshare dlq --help`` stays cheap), and its function
parses, calls one service and hands the result to a renderer.

``show`` reads the group's DLQ topic (the group config
``errors.deadletterqueue.topic.name``, or ``--dlq-topic``), Kafka-written or written
by ``audit --dlq-topic``: one row per dead letter, with the record's key, value and
headers from the DLQ record's copy, else from the source log while retention still
has it (``gone`` when not). Exit codes: 0; 1 when ``--timeout`` stopped the read
early or a source read failed (the rows read are printed); 2 bad usage (a
``--since`` in the future too); 5 a group without a DLQ topic or a DLQ topic that
does not exist; 6 a DLQ topic the principal may not read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

import typer

from kshare_cli.cli import common, dlq_options
from kshare_cli.errors import ExitCode

if TYPE_CHECKING:
    from kshare_cli.services.dlq import DeadLetterListing

app = typer.Typer(
    name="dlq",
    help="A share group's dead letters: Kafka 4.4's DLQ topic, or one audit --dlq-topic wrote.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def finish(listing: DeadLetterListing, output: common.OutputFormat) -> None:
    """Print the dead letters, the notes on stderr, and exit with the documented code."""
    from kshare_cli.render.dead_letters import render_dead_letters

    common.stdout_write(render_dead_letters(listing, output.value))
    if not listing.dead_letters:
        common.warn(f"no dead letters in '{listing.dlq_topic}' match")
    for failure in listing.failures:
        common.report_failure(failure)
    if listing.stopped_early is not None:
        common.report_failure(listing.stopped_early)
    if listing.failures or listing.stopped_early is not None:
        raise typer.Exit(int(ExitCode.PARTIAL))


@common.command_edge
def show(
    group: dlq_options.Group,
    topic: dlq_options.Topics = None,
    reason: dlq_options.Reasons = None,
    since: dlq_options.Since = None,
    dlq_topic: dlq_options.DlqTopic = None,
    output: dlq_options.Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Show a share group's dead letters: which records, why, when, and what they held.

    Read from the group's DLQ topic (its errors.deadletterqueue.topic.name, or
    --dlq-topic): source topic, partition and offset, delivery count, reason and
    when it was dead-lettered, then the record's key, value and headers, from the
    DLQ record's copy or else from the source log (gone once retention or
    DeleteRecords removed it). A summary per source partition and reason follows
    the table. Needs READ on the DLQ topic and, without copies, on the source topics.
    """
    topics = topic or []
    since_ms = dlq_options.check_common(group, topics, since, dlq_topic)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import dlq as dlq_service

    request = dlq_options.show_request(group, topics, reason, since_ms, dlq_topic)
    listing = common.run(lambda: dlq_service.show(settings, request, timeout_s))
    finish(listing, output)


#: Every ``kshare dlq`` subcommand, in the order help lists them: its name, the module
#: under ``kshare_cli.cli`` that declares it, and the function.
SUBCOMMANDS: Final = (
    ("show", "dlq_cmd", "show"),
    ("redrive", "dlq_redrive_cmd", "redrive"),
)

for _name, _module, _function in SUBCOMMANDS:
    _holder = importlib.import_module(f"kshare_cli.cli.{_module}")
    app.command(_name)(getattr(_holder, _function))
