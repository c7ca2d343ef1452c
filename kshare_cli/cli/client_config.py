"""The librdkafka configuration ``kshare consume`` and ``kshare produce`` run with.

Both take Kafka's ``--command-property``: its security keys configure the
connection exactly as a ``--command-config`` file would (Java names, JAAS,
keystores), and the rest are client properties laid over the settings'
librdkafka configuration. Both planes' secrets, the settings' and any property
whose name says it holds one, are handed to the stderr writer before anything
can fail with them in its message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kshare_cli import diagnostics
from kshare_cli.cli import common

if TYPE_CHECKING:
    from kshare_cli.connect.settings import ConnectionSettings

#: Properties that configure the connection: read by the settings parser (Java names,
#: JAAS, keystores) exactly as in a --command-config file.
CONNECTION_PREFIXES = ("security.protocol", "ssl.", "sasl.", "kshare.")


def client_config(
    bootstrap_server: str | None,
    command_config: Path | None,
    profile: str | None,
    *,
    connection: Mapping[str, str],
    client: Mapping[str, str],
    shown_warning: Callable[[str], str] | None = None,
) -> tuple[ConnectionSettings, dict[str, Any]]:
    """The settings (``connection`` over every file) and their librdkafka configuration
    with ``client`` on top; the settings' warnings on stderr, each as ``shown_warning``
    words it if given (an empty string: not shown)."""
    from kshare_cli.connect.resolve import resolve_settings
    from kshare_cli.connect.secret import is_secret_name

    settings = resolve_settings(
        bootstrap=bootstrap_server,
        command_config=command_config,
        profile=profile,
        overrides=connection,
    )
    diagnostics.remember_secrets(common.secrets_of(settings))
    diagnostics.remember_secrets(
        value for key, value in client.items() if value and is_secret_name(key)
    )
    for warning in settings.warnings:
        if shown := (warning if shown_warning is None else shown_warning(warning)):
            common.warn(shown)
    config = settings.confluent_config()
    config.update(client)
    return settings, config
