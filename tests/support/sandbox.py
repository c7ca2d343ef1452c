"""Fixtures that give a test a broker: the sandbox, or a real cluster when one is named.

With ``KSHARE_TEST_BOOTSTRAP`` set, every integration test runs against that
cluster (``KSHARE_TEST_COMMAND_CONFIG`` adds client properties), so tests observe
the broker only through the protocol -- never through sandbox internals.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from kshare_cli.sandbox.runner import SandboxThread


def _read_properties(path: str) -> dict[str, str]:
    properties: dict[str, str] = {}
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if not line or line.startswith(("#", "!")) or "=" not in line:
                continue
            key, value = line.split("=", 1)
            properties[key.strip()] = value.strip()
    return properties


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


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if bootstrap:
        config_path = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
        yield Cluster(bootstrap, _read_properties(config_path) if config_path else {})
        return
    with SandboxThread() as sandbox:
        yield Cluster(sandbox.bootstrap, {}, sandbox)


@pytest.fixture
def unique() -> str:
    """A short unique suffix, so tests sharing one cluster never see each other's topics."""
    return uuid.uuid4().hex[:10]
