"""Build the sandbox broker that ``kshare sandbox`` serves in the foreground.

``new_broker`` installs every part of the emulator on one ``Broker`` (``brokers`` > 1
nodes of it, ``cluster.py``). ``share_groups=False`` gives a broker without share
groups, as a Kafka 3.x cluster would be. ``kafka_version`` ("4.2", "4.3", "4.4") and
``share_version`` pick the Kafka release the sandbox behaves as (``profile.py``).
``config`` takes broker configs by Kafka's names, as ``kshare sandbox --config`` does
(``broker_config``). The tests serve the same broker from a background thread
(``tests/support/sandbox_thread.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kshare_cli.kafka.versions import KafkaVersion
from kshare_cli.sandbox.authorizer import DenyList
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.broker_config import BrokerConfigError, broker_config
from kshare_cli.sandbox.profile import DEFAULT_KAFKA_VERSION, KafkaProfile


def new_broker(
    data_dir: Path | None = None,
    *,
    share_groups: bool = True,
    auto_create_topics: bool | None = None,
    default_partitions: int | None = None,
    config: Mapping[str, str] | None = None,
    brokers: int = 1,
    coordinator_load_ms: int = 200,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
    share_version: int | None = None,
    deny: DenyList | None = None,
    **options: Any,
) -> Broker:
    """A broker with every part of the emulator installed (``brokers`` nodes of it).

    ``config`` holds broker configs by Kafka's names (``--config``), checked as
    ``broker_config.broker_config`` checks them (BrokerConfigError when Kafka
    would refuse one). ``auto_create_topics`` and ``default_partitions``, when
    given, override its ``auto.create.topics.enable`` and ``num.partitions``.
    ``coordinator_load_ms`` is how long a node that just took over a coordinator
    partition answers COORDINATOR_LOAD_IN_PROGRESS for its groups.
    ``kafka_version`` is the Kafka release the whole cluster behaves as
    (``profile.KafkaProfile``) and ``share_version`` its finalized ``share.version``
    (None: the release's own; 1 or 2 on 4.4, where 2 turns the dead-letter queue on).
    ``deny`` is the cluster's ACLs as rights refused by principal (``authorizer.py``).
    ``options`` configure the share groups (``settings``); with
    ``share_groups=False`` there are none to configure.
    """
    from kshare_cli.sandbox.share import install_share_groups

    if not share_groups and options:
        raise TypeError(f"share-group options {sorted(options)} given with share_groups=False")
    configured = broker_config(config or {})
    if configured.default_replication_factor > brokers:
        raise BrokerConfigError(
            f"default.replication.factor {configured.default_replication_factor} "
            f"needs at least as many brokers, not {brokers}"
        )
    broker = Broker(
        data_dir=data_dir,
        share_groups=share_groups,
        auto_create_topics=(
            configured.auto_create_topics if auto_create_topics is None else auto_create_topics
        ),
        default_partitions=(
            configured.num_partitions if default_partitions is None else default_partitions
        ),
        nodes=brokers,
        session_timeout_ms=configured.broker_session_timeout_ms,
        default_replication_factor=configured.default_replication_factor,
        coordinator_load_ms=coordinator_load_ms,
        profile=KafkaProfile(kafka_version, share_version),
        deny=deny,
    )
    if share_groups:
        install_share_groups(broker, coordinator=configured.share_coordinator, **options)
    return broker
