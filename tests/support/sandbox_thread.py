"""A sandbox broker served from a daemon thread: the test bed's synchronous handle on it.

Tests drive the sandbox with synchronous third-party clients (confluent-kafka, kcat),
so the broker gets its own event loop in a daemon thread; ``SandboxThread.call`` runs a
function on that loop to inspect or change broker state safely. Only tests and
benchmarks use it, so it lives here rather than in the wheel.

``security`` makes the listener SSL, SASL_PLAINTEXT or SASL_SSL (see
``kshare_cli.sandbox.security.ListenerSecurity``); other keyword arguments go to
``kshare_cli.sandbox.runner.new_broker``: ``share_groups=False`` gives a broker without
share groups, as a Kafka 3.x cluster would be; ``kafka_version`` ("4.2", "4.3", "4.4")
and ``share_version`` pick the Kafka release the sandbox behaves as:
``SandboxThread(kafka_version="4.4")`` is a 4.4 cluster with ``share.version`` 2 (the
dead-letter queue on), ``share_version=1`` one as a new 4.4 cluster is formatted.
``config`` takes broker configs by Kafka's names, as ``kshare sandbox --config`` does,
so a test can shorten the share coordinator's five-minute snapshot and prune timers.

``brokers`` > 1 serves a sandbox cluster: ``bootstrap`` is node 1's address,
``addresses`` every node's; ``stop_node`` (``kill -9``), ``hang_node``,
``restart_node``, ``fence_node``, ``move_leader`` and ``move_group_coordinator`` /
``move_share_coordinator`` cause what a test of a failing cluster needs, each taking
effect before it returns; ``drop_answer`` (any node count) applies a request and drops
its connection unanswered.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.runner import new_broker
from kshare_cli.sandbox.security import ListenerSecurity

T = TypeVar("T")


class SandboxThread:
    """A sandbox broker on a free (or given) port, served from a background thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        data_dir: Path | None = None,
        *,
        security: ListenerSecurity | None = None,
        share_groups: bool = True,
        **options: Any,
    ) -> None:
        self._host = host
        self._port = port
        self._data_dir = data_dir
        self._security = security
        self._share_groups = share_groups
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="sandbox")
        self.broker: Broker | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"{self._host}:{self.port}"

    @property
    def addresses(self) -> dict[int, str]:
        """Every node's ``host:port``, by node id (one entry on a one-node sandbox)."""
        broker = self._started()
        return {n: f"{node.host}:{node.port}" for n, node in sorted(broker.listeners.items())}

    def _started(self) -> Broker:
        if self.broker is None:
            raise RuntimeError("sandbox not started")
        return self.broker

    def _run(self, coroutine: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def stop_node(self, node_id: int) -> None:
        """``kill -9`` a node: its connections reset and its port refuses, until restarted."""
        self._run(self._started().stop_node(node_id))

    def hang_node(self, node_id: int) -> None:
        """Freeze a node: its port accepts, and nothing it reads is ever answered."""
        self.call(lambda broker: broker.hang_node(node_id))

    def restart_node(self, node_id: int) -> None:
        """Start a stopped or hung node afresh on its port; it registers again at once."""
        self._run(self._started().restart_node(node_id))

    def fence_node(self, node_id: int) -> None:
        """Fence a node now, without waiting for ``broker.session.timeout.ms``."""
        self.call(lambda broker: broker.fence_node(node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> int:
        """Elect ``node_id`` leader of the partition; returns its new leader epoch."""
        return self.call(lambda broker: broker.move_leader(topic, partition, node_id))

    def move_group_coordinator(self, group_id: str, node_id: int) -> int:
        """Move the group's coordinator (its ``__consumer_offsets`` partition) to the node."""
        return self.call(lambda broker: broker.move_group_coordinator(group_id, node_id))

    def move_share_coordinator(self, key: str, node_id: int) -> int:
        """Move the share coordinator of ``group:topicId:partition`` to the node."""
        return self.call(lambda broker: broker.move_share_coordinator(key, node_id))

    def drop_answer(self, match: Callable[[Request], bool]) -> None:
        """Apply the next request ``match`` accepts, then drop its connection unanswered."""
        self.call(lambda broker: broker.drop_answer(match))

    @property
    def answers_dropped(self) -> int:
        """How many answers ``drop_answer`` withheld so far."""
        return self.call(lambda broker: broker.answers_dropped)

    @property
    def security(self) -> ListenerSecurity | None:
        return self._security

    def start(self) -> SandboxThread:
        self._thread.start()

        async def boot() -> int:
            self.broker = new_broker(
                self._data_dir, share_groups=self._share_groups, **self._options
            )
            return await self.broker.start(self._host, self._port, security=self._security)

        self.port = asyncio.run_coroutine_threadsafe(boot(), self._loop).result(30)
        return self

    def call(self, function: Callable[[Broker], T], timeout: float = 30) -> T:
        """Run ``function(broker)`` on the broker's loop and return its result."""
        broker = self.broker
        if broker is None:
            raise RuntimeError("sandbox not started")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(function(broker))
            except BaseException as error:  # noqa: BLE001 -- handed to the caller
                future.set_exception(error)

        self._loop.call_soon_threadsafe(run)
        return future.result(timeout)

    def stop(self) -> None:
        if self.broker is not None:
            asyncio.run_coroutine_threadsafe(self.broker.close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> SandboxThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def kafka_44(*, share_version: int = 2) -> SandboxThread:
    """A sandbox in Kafka 4.4's profile (metadata.version 4.3-IV0, as the 4.4 corpus was
    recorded), not started."""
    return SandboxThread(kafka_version="4.4", share_version=share_version)
