"""Fixtures for the wire client's tests: settings for the test cluster, and broker faults.

Fault tests need the sandbox to misbehave on cue (a NOT_COORDINATOR once, a dropped
connection, a broker that never answers); they replace one API handler for one
sandbox broker and put it back afterwards. On a real cluster (KSHARE_TEST_BOOTSTRAP)
those tests are skipped: a real broker cannot be told to fail.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.sandbox import broker as sandbox_broker
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from tests.support.sandbox import Cluster
from tests.support.sandbox_thread import SandboxThread

T = TypeVar("T")

Handler = Callable[[Broker, Request, Connection], Awaitable[Any]]


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one test coroutine on a fresh event loop (the suite has no asyncio plugin)."""
    return asyncio.run(coroutine)


def plaintext_settings(bootstrap: str, **extra: Any) -> ConnectionSettings:
    return ConnectionSettings(bootstrap_servers=tuple(bootstrap.split(",")), **extra)


@pytest.fixture(scope="session")
def cluster_settings(cluster: Cluster) -> ConnectionSettings:
    """Settings for the test cluster: the sandbox, or KSHARE_TEST_BOOTSTRAP (+ its config)."""
    config = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
    if cluster.sandbox is None and config:
        from kshare_cli.connect.resolve import resolve_settings

        return resolve_settings(
            bootstrap=cluster.bootstrap, command_config=Path(config), profile=None, environ={}
        )
    return plaintext_settings(cluster.bootstrap)


@pytest.fixture
def sandbox() -> Iterator[SandboxThread]:
    """A private sandbox broker for tests that make it misbehave (skipped on a real cluster)."""
    if os.environ.get("KSHARE_TEST_BOOTSTRAP"):
        pytest.skip("fault injection needs the sandbox; a real broker cannot be told to fail")
    with SandboxThread() as thread:
        yield thread


@contextmanager
def replaced_handler(
    thread: SandboxThread, api_key: int, make: Callable[[Handler], Handler]
) -> Iterator[None]:
    """Answer ``api_key`` on this sandbox's broker with ``make(original)``, then restore it."""
    target = thread.broker
    original = sandbox_broker.HANDLERS[api_key]
    replacement = make(original)

    async def scoped(broker: Broker, request: Request, connection: Connection) -> Any:
        handler = replacement if broker is target else original
        return await handler(broker, request, connection)

    thread.call(lambda _: sandbox_broker.HANDLERS.__setitem__(api_key, scoped))
    try:
        yield
    finally:
        thread.call(lambda _: sandbox_broker.HANDLERS.__setitem__(api_key, original))
