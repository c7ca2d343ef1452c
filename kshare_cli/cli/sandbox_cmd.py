"""``kshare sandbox``: serve the share-group broker emulator until interrupted.

The bootstrap address goes to stdout (so a script can capture it), the banner
and warnings to stderr. ``--brokers N`` serves a cluster of N nodes on
consecutive ports from ``--port``: stdout's one line is then every node's
address, comma-separated, node 1 first -- a bootstrap list as it is. The
command says loudly that this is an emulator: an operator must never mistake it
for a Kafka cluster.

``--tls-dir`` and ``--sasl-users`` make the listener SSL, SASL_PLAINTEXT or
SASL_SSL, so TLS and SASL client settings can be tried without a real cluster;
the client properties that fit go to stderr.

``--config KEY=VALUE`` sets broker configs by Kafka's names -- the share
coordinator's snapshot and prune intervals, topic auto-creation, how long a
silent node stays registered -- checked before anything listens, so a bad one
is a usage error that changed nothing.

``--kafka-version 4.2|4.3|4.4`` picks the Kafka release the whole sandbox behaves
as (group configs, feature levels, snapshot fields, 4.4's ARCHIVING and
dead-letter queue), and ``--share-version`` its finalized ``share.version`` (4.4:
2, the dead-letter queue on, or 1, as a new 4.4 cluster is formatted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

from kshare_cli import diagnostics
from kshare_cli.cli import common
from kshare_cli.errors import ConnectionFailed, ExitCode, UsageError
from kshare_cli.kafka.versions import KAFKA_VERSIONS

if TYPE_CHECKING:
    import asyncio

    from kshare_cli.kafka.versions import KafkaVersion
    from kshare_cli.sandbox.broker import Broker
    from kshare_cli.sandbox.security import ListenerSecurity, ServerCertificate

BANNER = (
    "kshare sandbox: a KIP-932 share-group broker EMULATOR for tests and demos -- "
    "not Apache Kafka. Do not put data you care about here."
)


Host = Annotated[str, typer.Option("--host", metavar="HOST", help="Address to listen on.")]
Port = Annotated[
    int,
    typer.Option(
        "--port",
        min=0,
        max=65535,
        metavar="PORT",
        help="Port to listen on (0 picks a free one); with --brokers, node 1's, "
        "the others' following it.",
    ),
]
Brokers = Annotated[
    int,
    typer.Option(
        "--brokers",
        min=1,
        max=64,
        metavar="N",
        help="Serve N nodes (ids 1..N) in this process, with partition leaders and "
        "coordinators spread across them as Kafka places them.",
    ),
]
DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        metavar="DIR",
        file_okay=False,
        help="Keep topic logs (and so share-group state) here across restarts.",
    ),
]
Demo = Annotated[
    bool,
    typer.Option(
        help="Also create a topic, produce a steady trickle and run share consumers that "
        "accept, release and reject, so there is something live to look at."
    ),
]
TlsDir = Annotated[
    Path | None,
    typer.Option(
        "--tls-dir",
        metavar="DIR",
        file_okay=False,
        help="Serve TLS with DIR/server.pem and DIR/server.key; when both are missing, "
        "make them, signed by a new CA in DIR/ca.pem for clients to trust.",
    ),
]
SaslUsers = Annotated[
    str | None,
    typer.Option(
        "--sasl-users",
        metavar="USER:PASSWORD,...",
        help="Require SASL authentication with these users (SASL_SSL with --tls-dir, "
        "else SASL_PLAINTEXT).",
    ),
]
SaslMechanisms = Annotated[
    str,
    typer.Option(
        "--sasl-mechanisms",
        metavar="MECHANISM,...",
        help="Comma-separated mechanisms to enable with --sasl-users. OAUTHBEARER accepts "
        "unsecured JWTs (alg none) with a sub and an unexpired exp.",
    ),
]
Config = Annotated[
    list[str] | None,
    typer.Option(
        "--config",
        metavar="KEY=VALUE",
        help="A broker config by Kafka's name (repeatable): "
        "share.coordinator.snapshot.update.records.per.snapshot (500), "
        "share.coordinator.cold.partition.snapshot.interval.ms (300000), "
        "share.coordinator.state.topic.prune.interval.ms (300000), "
        "auto.create.topics.enable (true), num.partitions (1), "
        "default.replication.factor (1), broker.session.timeout.ms (9000).",
    ),
]
KafkaVersionOption = Annotated[
    str | None,
    typer.Option(
        "--kafka-version",
        click_type=click.Choice(KAFKA_VERSIONS),
        metavar="|".join(KAFKA_VERSIONS),
        help="The Kafka release the sandbox behaves as: its group configs, feature "
        "levels, snapshot fields and, on 4.4, ARCHIVING and the dead-letter queue "
        "(default: the sandbox's, named on stderr at start).",
    ),
]
ShareVersion = Annotated[
    int | None,
    typer.Option(
        "--share-version",
        min=1,
        max=2,
        metavar="LEVEL",
        help="The finalized share.version feature (default: the release's own, 2 on "
        "4.4); 4.4 with 1 keeps the dead-letter queue configs and ignores them.",
    ),
]


@dataclass(frozen=True, slots=True)
class SandboxOptions:
    """What to serve, checked before anything listens (a bad option changed nothing)."""

    host: str
    port: int
    brokers: int
    data_dir: Path | None
    demo: bool
    kafka_version: KafkaVersion
    share_version: int | None
    configs: dict[str, str] = field(default_factory=dict)
    security: ListenerSecurity | None = None
    certificate: ServerCertificate | None = None


@common.command_edge
def sandbox(
    host: Host = "127.0.0.1",
    port: Port = 9092,
    brokers: Brokers = 1,
    data_dir: DataDir = None,
    demo: Demo = False,
    tls_dir: TlsDir = None,
    sasl_users: SaslUsers = None,
    sasl_mechanisms: SaslMechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
    config: Config = None,
    kafka_version: KafkaVersionOption = None,
    share_version: ShareVersion = None,
) -> None:
    """Run a share-group broker EMULATOR for tests and demos. It is not Apache Kafka.

    Speaks the Kafka protocol (ApiVersions, Metadata, Produce, Fetch, ListOffsets,
    CreateTopics, share groups, the share-group admin RPCs) on one node or on --brokers
    nodes, and writes share-partition state to __share_group_state as the chosen Kafka
    release does.
    """
    from kshare_cli.sandbox.profile import DEFAULT_KAFKA_VERSION, KafkaProfile

    version = next((v for v in KAFKA_VERSIONS if v == kafka_version), DEFAULT_KAFKA_VERSION)
    try:
        KafkaProfile(version, share_version)
    except ValueError as error:
        raise UsageError(f"--share-version {share_version}: {error}") from None
    configs = _broker_configs(config or [], brokers)
    if port and port + brokers - 1 > 65535:
        raise UsageError(f"--port {port} leaves no room for {brokers} brokers below 65536")
    if data_dir is not None:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UsageError(f"cannot use --data-dir {data_dir}: {error.strerror}") from None
    security, certificate = _listener_security(host, tls_dir, sasl_users, sasl_mechanisms)
    options = SandboxOptions(
        host, port, brokers, data_dir, demo, version, share_version, configs, security, certificate
    )
    if _run(options):
        raise typer.Exit(ExitCode.INTERRUPTED)


def _run(options: SandboxOptions) -> bool:
    """Serve until a signal; True when it was SIGINT (exit 130, as documented)."""
    import asyncio

    from kshare_cli.sandbox.group_config_file import DataDirError

    try:
        return asyncio.run(_serve(options))
    except DataDirError as error:
        raise UsageError(f"cannot use --data-dir {options.data_dir}: {error}") from None
    except OSError as error:
        port, brokers = options.port, options.brokers
        ports = f"{port}-{port + brokers - 1}" if brokers > 1 and port else str(port)
        raise ConnectionFailed(
            f"cannot listen on {options.host}:{ports}: {error.strerror or error}"
        ) from None
    except KeyboardInterrupt:
        # Ctrl-C is how a sandbox is stopped: exit 130 quietly, not "interrupted".
        raise typer.Exit(ExitCode.INTERRUPTED) from None


def _broker_configs(pairs: list[str], brokers: int) -> dict[str, str]:
    """The ``--config`` pairs, checked now (as Kafka checks at start-up): bad ones exit 2."""
    from kshare_cli.sandbox.broker_config import (
        BrokerConfigError,
        broker_config,
        parse_config_pairs,
    )

    try:
        configs = parse_config_pairs(pairs)
        replication_factor = broker_config(configs).default_replication_factor
    except BrokerConfigError as error:
        raise UsageError(f"--config: {error}") from None
    if replication_factor > brokers:
        raise UsageError(
            f"--config: default.replication.factor {replication_factor} needs at least "
            f"{replication_factor} brokers (--brokers {brokers})"
        )
    return configs


def _listener_security(
    host: str, tls_dir: Path | None, sasl_users: str | None, sasl_mechanisms: str
) -> tuple[ListenerSecurity | None, ServerCertificate | None]:
    """The listener the flags ask for (None: PLAINTEXT); bad flags exit 2 with one line."""
    if tls_dir is None and sasl_users is None:
        return None, None
    from kshare_cli.sandbox.security import (
        ListenerSecurity,
        check_mechanisms,
        parse_users,
        server_certificate,
        server_ssl_context,
    )

    certificate = None
    context = None
    if tls_dir is not None:
        try:
            certificate = server_certificate(tls_dir, [host])
            context = server_ssl_context(certificate.cert_file, certificate.key_file)
        except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
            raise UsageError(f"cannot use --tls-dir {tls_dir}: {error}") from None
    users: dict[str, str] = {}
    mechanisms: tuple[str, ...] = ()
    if sasl_users is not None:
        try:
            users = parse_users(sasl_users)
            mechanisms = check_mechanisms(sasl_mechanisms.split(","))
        except ValueError as error:
            raise UsageError(f"--sasl-users/--sasl-mechanisms: {error}") from None
        if not users:
            raise UsageError("--sasl-users: name at least one USER:PASSWORD")
        if not mechanisms:
            raise UsageError("--sasl-mechanisms: name at least one mechanism")
    protocol = {
        (True, True): "SASL_SSL",
        (True, False): "SSL",
        (False, True): "SASL_PLAINTEXT",
    }[(tls_dir is not None, sasl_users is not None)]
    security = ListenerSecurity(protocol, context, users=users, mechanisms=mechanisms or ("PLAIN",))
    return security, certificate


def _client_properties(
    security: ListenerSecurity, certificate: ServerCertificate | None
) -> dict[str, str]:
    """librdkafka properties that reach this listener (also used by the demo's clients)."""
    properties = {"security.protocol": security.protocol}
    if security.tls:
        if certificate is not None and certificate.ca_file is not None:
            properties["ssl.ca.location"] = str(certificate.ca_file)
        else:
            properties["enable.ssl.certificate.verification"] = "false"
    if security.sasl:
        mechanism = security.mechanisms[0]
        user, password = next(iter(security.users.items()))
        properties["sasl.mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            properties["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
            properties["sasl.oauthbearer.config"] = f"principal={user}"
        else:
            properties["sasl.username"] = user
            properties["sasl.password"] = password
    return properties


async def _serve(options: SandboxOptions) -> bool:
    """Serve until SIGINT or SIGTERM; True when it was SIGINT."""
    import asyncio
    import signal

    from kshare_cli.sandbox.runner import new_broker

    broker = new_broker(
        options.data_dir,
        config=options.configs,
        brokers=options.brokers,
        kafka_version=options.kafka_version,
        share_version=options.share_version,
    )
    await broker.start(options.host, options.port, security=options.security)
    print(broker.bootstrap_servers, flush=True)
    client_config = _announce(broker, options)
    stop = asyncio.Event()
    received = _stop_on_signals(stop)
    demo_task = None
    if options.demo:
        from kshare_cli.sandbox.demo import run_demo

        bootstrap = broker.bootstrap_servers
        diagnostics.progress(
            f"demo: topic 'demo-orders', share group 'demo-group' on {bootstrap}\n"
        )
        demo_task = asyncio.ensure_future(run_demo(broker, bootstrap, stop, client_config))
    try:
        await stop.wait()
    finally:
        if demo_task is not None:
            await demo_task
        await broker.close()
    return signal.SIGINT in received


def _announce(broker: Broker, options: SandboxOptions) -> dict[str, str]:
    """The banner, the release, the nodes and the listener on stderr; returns the client
    properties that reach the listener (empty for PLAINTEXT), for the demo's clients."""
    diagnostics.progress(f"{BANNER}\n")
    profile = broker.profile
    diagnostics.progress(
        f"behaves as Kafka {profile.kafka_version} "
        f"(share.version {profile.finalized_share_version})\n"
    )
    if options.brokers > 1:
        nodes = ", ".join(
            f"node {node_id} {listener.host}:{listener.port}"
            for node_id, listener in sorted(broker.listeners.items())
        )
        diagnostics.progress(f"cluster of {options.brokers} nodes: {nodes}\n")
    security = options.security
    if security is None:
        return {}
    client_config = _client_properties(security, options.certificate)
    shown = {k: ("***" if k == "sasl.password" else v) for k, v in client_config.items()}
    mechanisms = f" ({', '.join(security.mechanisms)})" if security.sasl else ""
    diagnostics.progress(f"listener: {security.protocol}{mechanisms}\n")
    diagnostics.progress(
        "client properties: " + " ".join(f"{k}={v}" for k, v in shown.items()) + "\n"
    )
    return client_config


def _stop_on_signals(stop: asyncio.Event) -> list[int]:
    """SIGINT and SIGTERM set ``stop``; the returned list collects which came."""
    import asyncio
    import contextlib
    import signal

    received: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, on_signal, signum)
    return received
