"""Fixtures that give a test a broker: the sandbox, or a real cluster when one is named.

With ``KSHARE_TEST_BOOTSTRAP`` set, every integration test runs against that
cluster (``KSHARE_TEST_COMMAND_CONFIG`` adds client properties), so tests observe
the broker only through the protocol -- never through sandbox internals.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kshare_cli.connect.java_properties import load_properties
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.settings import ConnectionSettings
from tests.support.sandbox_thread import SandboxThread

#: Topic configs for a test that produces records with fixed, old CreateTimes (the golden
#: corpus's January 2026). A real broker's time-based retention (``log.retention.hours``
#: 168, checked every ``log.retention.check.interval.ms``, 5 min) deletes a segment whose
#: largest timestamp is older than that, the active segment included (Kafka 4.2
#: ``UnifiedLog.deleteRetentionMsBreachedSegments`` and ``deleteOldSegments``, which rolls
#: first): without this, such records vanish at the broker's next check.
KEEP_OLD_RECORDS: dict[str, str] = {"retention.ms": "-1"}


def on_real_cluster() -> bool:
    """Whether the tests run against the cluster ``KSHARE_TEST_BOOTSTRAP`` names."""
    return bool(os.environ.get("KSHARE_TEST_BOOTSTRAP"))


def skip_on_real_cluster(reason: str) -> None:
    """Skip a test that needs something only the sandbox gives, saying what, on a real cluster."""
    if on_real_cluster():
        pytest.skip(f"on a real cluster: {reason}")


def read_properties(path: str | Path) -> dict[str, str]:
    """A client properties file (``KSHARE_TEST_COMMAND_CONFIG``), read by Java's rules, as
    kshare reads ``--command-config``: what the tests' own clients get is what kshare gets."""
    return load_properties(Path(path))


@dataclass
class Cluster:
    """What a test needs to talk to a broker with third-party clients."""

    bootstrap: str
    client_config: dict[str, str] = field(default_factory=dict)
    sandbox: SandboxThread | None = None

    def config(self, **extra: object) -> dict[str, object]:
        merged: dict[str, object] = {"bootstrap.servers": self.bootstrap}
        merged.update(self.client_config)
        merged.update(extra)
        return merged

    def settings(self, directory: Path) -> ConnectionSettings:
        """kshare's connection settings for this cluster, as a user's ``--bootstrap-server``
        and ``--command-config`` give them (the client properties written to a file in
        ``directory``); no profile, no environment."""
        config = None
        if self.client_config:
            config = directory / "client.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in self.client_config.items()))
        return resolve_settings(
            bootstrap=self.bootstrap,
            command_config=config,
            profile=None,
            environ={},
            profiles_path=directory / "profiles.toml",
        )


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The suite-wide cluster: ``KSHARE_TEST_BOOTSTRAP``, else a sandbox in its Kafka 4.2
    profile, the release the golden corpus under ``tests/golden/kafka-4.2.0`` recorded:
    the tests on this fixture reproduce that recording byte for byte (group epochs, LAG
    ``-`` after a reset, 4.2's config listing). Tests of 4.3 and 4.4 behaviour start
    sandboxes of their own; those that name no version get the sandbox's default, 4.4."""
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if bootstrap:
        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        yield Cluster(bootstrap, read_properties(config_path) if config_path else {})
        return
    with SandboxThread(kafka_version="4.2") as sandbox:
        yield Cluster(sandbox.bootstrap, {}, sandbox)


@pytest.fixture
def unique() -> str:
    """A short unique suffix, so tests sharing one cluster never see each other's topics."""
    return uuid.uuid4().hex[:10]


#: What ``sandbox_cluster`` gives a test: a started SandboxThread of N nodes (faults on it).
StartCluster = Callable[..., SandboxThread]


@pytest.fixture
def sandbox_cluster() -> Iterator[StartCluster]:
    """Start sandbox clusters for fault tests: ``sandbox_cluster(3, session_timeout_ms=1500)``.

    Each is a fresh ``SandboxThread`` (``bootstrap`` is node 1, ``addresses`` every
    node; ``stop_node``, ``hang_node``, ``restart_node``, ``move_leader``,
    ``move_group_coordinator`` cause the faults), stopped when the test ends.
    Other keyword arguments go to ``SandboxThread`` (``config``, ``settings``...).
    A real cluster cannot be stopped node by node: such tests are skipped there.
    """
    skip_on_real_cluster("it stops, hangs and restarts nodes of a sandbox cluster")
    started: list[SandboxThread] = []

    def start(
        brokers: int = 3, session_timeout_ms: int | None = None, **options: object
    ) -> SandboxThread:
        config = dict(options.pop("config", None) or {})  # type: ignore[call-overload]
        if session_timeout_ms is not None:
            config["broker.session.timeout.ms"] = str(session_timeout_ms)
        sandbox = SandboxThread(brokers=brokers, config=config, **options).start()
        started.append(sandbox)
        return sandbox

    yield start
    for sandbox in reversed(started):
        sandbox.stop()
