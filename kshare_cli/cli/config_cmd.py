"""``kshare config``: show and change a share group's configs (``share.*``, the DLQ's).

The kafka-configs.sh ``--entity-type groups`` of share groups, with the checks
done first: a value is held to Kafka's bounds -- ConfigDef's static ones before
anything is sent, the broker's (``group.share.max.record.lock.duration.ms`` ...)
read from the broker -- so an out-of-bounds value is one usage error (exit 2) and
nothing changes. What the broker still refuses is reported with its own message
(exit 1). As in Kafka, a group need not exist to be configured, and
consumer.*/streams.* group configs are left to kafka-configs.sh. Kafka 4.4's
dead-letter-queue configs (``errors.deadletterqueue.*``) are a share group's too;
what Kafka accepts but will not act on (``share.version`` 1, a name without the
cluster's prefix, a missing or not-enabled DLQ topic) is a warning, exit 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from kshare_cli.cli import common

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from pathlib import Path

    from kshare_cli.connect.settings import ConnectionSettings
    from kshare_cli.services.configs import ConfigUpdate

app = typer.Typer(
    name="config",
    help="Show and change share-group configs (share.*, errors.deadletterqueue.*): get, set, "
    "unset.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _complete_assignments(incomplete: str) -> list[str]:
    from kshare_cli.services.configs import SHARE_CONFIG_KEYS

    return [f"{key.name}=" for key in SHARE_CONFIG_KEYS if key.name.startswith(incomplete)]


def _complete_names(incomplete: str) -> list[str]:
    from kshare_cli.services.configs import SHARE_CONFIG_KEYS

    return [key.name for key in SHARE_CONFIG_KEYS if key.name.startswith(incomplete)]


Group = Annotated[
    str,
    common.group_argument("The share group (it need not exist yet)."),
]
Output = Annotated[
    common.OutputFormat,
    typer.Option(
        "--output",
        "-o",
        case_sensitive=False,
        help="table for people; plain reproduces kafka-configs.sh; json/jsonl/csv/yaml.",
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Have the broker validate the change (validateOnly) without applying it.",
    ),
]


@app.command("get")
@common.command_edge
def get(
    group: Group,
    all_configs: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every group config (consumer.*, share.*, streams.*), as kafka-configs.sh "
            "--describe --all; plain shows only the group's own values without it.",
        ),
    ] = False,
    output: Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Show a group's share configs (share.*, Kafka 4.4's errors.deadletterqueue.*) and sources.

    -o plain is kafka-configs.sh --entity-type groups --describe byte for byte:
    only the group's own values, or every config with --all.
    """
    common.check_group_id(group)
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)

    from kshare_cli.services import configs as config_service

    configs = common.run(
        lambda: config_service.get_configs(settings, group, all_configs, timeout_s)
    )
    from kshare_cli.render.configs import render_group_configs

    common.stdout_write(render_group_configs(configs, output.value, show_all=all_configs))
    if (
        configs.exists is False
        and not configs.dynamic()
        and output is not common.OutputFormat.plain
    ):
        common.warn(
            f"group {group!r} does not exist and has no configs of its own: these are the "
            "defaults it would get"
        )


@app.command("set")
@common.command_edge
def set_(
    group: Group,
    assignments: Annotated[
        list[str],
        typer.Argument(
            metavar="KEY=VALUE...",
            help="Share-group configs to set, e.g. share.record.lock.duration.ms=20000 or "
            "errors.deadletterqueue.topic.name=dlq.orders (Kafka 4.4).",
            autocompletion=_complete_assignments,
            show_default=False,
        ),
    ],
    dry_run: DryRun = False,
    output: Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Set share configs on a group, checked against Kafka's rules first.

    An unknown key, a malformed KEY=VALUE or a value Kafka refuses (out of its
    static bounds or the broker's group.share.min/max.* settings, a boolean not
    spelt true/false, a DLQ topic name starting with __) is a usage error, exit 2,
    and nothing is sent; a refusal by the broker exits 1 with its message. A DLQ
    setting Kafka accepts but will not act on is set, with a warning on stderr:
    share.version below 2, a name without the cluster's
    errors.deadletterqueue.topic.name.prefix, a DLQ topic that does not exist while
    auto-create is off, a topic without errors.deadletterqueue.group.enable=true.
    """

    def check() -> None:
        from kshare_cli.services.configs import check_assignments

        check_assignments(assignments)

    def change(settings: ConnectionSettings, timeout_s: float) -> Coroutine[Any, Any, ConfigUpdate]:
        from kshare_cli.services.configs import set_configs

        return set_configs(settings, group, assignments, dry_run, timeout_s)

    _change(group, check, change, output, bootstrap_server, command_config, profile, timeout)


@app.command("unset")
@common.command_edge
def unset(
    group: Group,
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="KEY...",
            help="Share-group configs to return to their defaults.",
            autocompletion=_complete_names,
            show_default=False,
        ),
    ],
    dry_run: DryRun = False,
    output: Output = common.OutputFormat.table,
    bootstrap_server: common.BootstrapServer = None,
    command_config: common.CommandConfig = None,
    profile: common.Profile = None,
    timeout: common.Timeout = common.DEFAULT_TIMEOUT,
    debug: common.Debug = False,
) -> None:
    """Remove a group's own values of share configs, so their defaults apply again.

    A key the group does not set is left alone with a warning (kafka-configs.sh
    fails the whole command instead).
    """

    def check() -> None:
        from kshare_cli.services.configs import check_names

        check_names(names)

    def change(settings: ConnectionSettings, timeout_s: float) -> Coroutine[Any, Any, ConfigUpdate]:
        from kshare_cli.services.configs import unset_configs

        return unset_configs(settings, group, names, dry_run, timeout_s)

    _change(group, check, change, output, bootstrap_server, command_config, profile, timeout)


def _change(
    group: str,
    check: Callable[[], None],
    change: Callable[[ConnectionSettings, float], Coroutine[Any, Any, ConfigUpdate]],
    output: common.OutputFormat,
    bootstrap_server: str | None,
    command_config: Path | None,
    profile: str | None,
    timeout: str,
) -> None:
    """``set`` and ``unset``: the group and the change are checked before any I/O (exit 2),
    then the change is sent and its result reported, with its notes on stderr."""
    common.check_group_id(group)
    check()
    settings, timeout_s = common.connection(bootstrap_server, command_config, profile, timeout)
    update = common.run(lambda: change(settings, timeout_s))
    _report(update, output)


def _report(update: ConfigUpdate, output: common.OutputFormat) -> None:
    from kshare_cli.render.configs import render_config_update

    common.stdout_write(render_config_update(update, output.value))
    for note in update.notes:
        common.warn(note)
