"""One hold on the cluster per command or dashboard: settings, clients, state reader, deadline.

Every command and the dashboard used to know, each in its own words, how to
connect, that a broker without ShareGroupDescribe must be refused, how long the
state topic may take and how ``--timeout`` ends a command. A ``Session`` is the
one place that knows it; callers ask it for an admin client, a state reader or
a bounded run, and never touch ``wire/`` themselves.

The deadline is handed down, not wrapped around: ``bounded`` fixes it once and
``admin`` gives it to the client, whose fan-outs end a silent broker's part as a
failure before it, so the healthy brokers' answers and the last error are shown
(exit 1) instead of being thrown away by an outer timeout (exit 4). The outer
``wait_for`` stays only as a backstop, a moment after the deadline.

A long-lived caller (the dashboard) instead keeps one client, connected lazily
inside its own event loop (``kept_admin``), and bounds each call on its own
(``within``).

Imported only once a command runs: it pulls in asyncio, kio and the client.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar

from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import TimedOut
from kshare_cli.kafka.api_keys import SHARE_GROUP_DESCRIBE
from kshare_cli.wire.client import KafkaClient

if TYPE_CHECKING:
    from kshare_cli.admin.cluster_facts import ClusterFacts

    # Loaded by the methods that need them: a command that reads no state topic
    # (``kshare list``) does not pay for the state layer.
    from kshare_cli.services.inflight import InflightService
    from kshare_cli.state.sources import PlacedStateSource, StateSource, TailingStateSource

__all__ = ["BACKSTOP_S", "STATE_SHARE_OF_TIMEOUT", "Session"]

T = TypeVar("T")

#: How long after the deadline the backstop fires: the client's own deadline, which
#: keeps partial answers and names the last error, must always come first.
BACKSTOP_S: Final = 1.0

#: The share of the timeout the state topic may take. Its reader runs in a thread,
#: which a deadline cannot cancel, so it must give up on its own before the deadline:
#: then the offsets still arrive, with a note instead of windows.
STATE_SHARE_OF_TIMEOUT: Final = 0.75

#: The running command's deadline (the event loop's clock) and what it is doing. A
#: context variable, not an attribute: ``wait_for``'s task copies the context, so the
#: client opened inside the bounded work finds it, and two bounded runs never mix.
_COMMAND: contextvars.ContextVar[tuple[float, str] | None] = contextvars.ContextVar(
    "kshare-command", default=None
)


class Session:
    """The connection settings, the admin client, the state readers and the deadline.

    ``timeout_s`` is the command's ``--timeout`` (the dashboard's per-call bound).
    State readers made here (``placed_state``, ``tailing_state``) are the
    session's to close: ``close`` (or leaving ``with``) closes them, ``aclose``
    (or leaving ``async with``) closes them and the kept client.
    """

    def __init__(self, settings: ConnectionSettings, timeout_s: float) -> None:
        self._settings = settings
        self._timeout_s = timeout_s
        self._readers: list[TailingStateSource] = []
        self._kept: ShareGroupAdmin | None = None
        self._connecting: asyncio.Lock | None = None
        self._facts: ClusterFacts | None = None

    @property
    def settings(self) -> ConnectionSettings:
        return self._settings

    @property
    def timeout_s(self) -> float:
        return self._timeout_s

    @property
    def state_timeout_s(self) -> float:
        """How long one state-topic read may take: less than the call around it."""
        return self._timeout_s * STATE_SHARE_OF_TIMEOUT

    # ------------------------------------------------------------------ the deadline

    async def bounded(self, work: Coroutine[Any, Any, T], what: str) -> T:
        """Run ``work`` as one command named ``what``, ended by ``--timeout``.

        Clients opened inside (``admin``) share the deadline; a timeout from either
        the client or the backstop is ``TimedOut`` naming ``--timeout``.
        """
        return await _run_bounded(work, self._timeout_s, what)

    def time_left(self) -> float:
        """What is left of the running ``bounded`` command's deadline (the timeout outside
        one): a blocking read in a thread, which the deadline cannot cancel, must end
        within it on its own."""
        command = _COMMAND.get()
        if command is None:
            return self._timeout_s
        return max(0.0, command[0] - asyncio.get_running_loop().time())

    async def ask(self, what: str, question: Callable[[ShareGroupAdmin], Awaitable[T]]) -> T:
        """A command that is one question to the admin layer: a client opened under the
        deadline, asked, closed (``bounded`` around ``admin``)."""

        async def work() -> T:
            async with self.admin() as admin:
                return await question(admin)

        return await self.bounded(work(), what)

    @asynccontextmanager
    async def admin(self) -> AsyncIterator[ShareGroupAdmin]:
        """A client for this block, under the running ``bounded`` deadline if any, then closed.

        Refuses a broker without share groups (``IncompatibleBroker``, exit 3).
        """
        async with _open_admin(self._settings, self._timeout_s) as admin:
            yield admin

    # ------------------------------------------------------------------ a long-lived caller

    async def kept_admin(self) -> ShareGroupAdmin:
        """One client for the session's life, connected on the first call.

        An asyncio client belongs to the loop that opened it, so it is opened where
        it is first asked for (inside Textual's loop, for the dashboard). A failed
        connection keeps nothing: the next call tries again. ``aclose`` closes it.
        """
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._kept is None:
                client = await KafkaClient.connect(self._settings, timeout_s=self._timeout_s)
                try:
                    _check_share_groups(client)
                except BaseException:
                    await client.close()
                    raise
                self._kept = ShareGroupAdmin(client)
            return self._kept

    async def within(self, work: Coroutine[Any, Any, T], what: str) -> T:
        """One call of a long-lived caller, bounded by the timeout on its own."""
        try:
            return await asyncio.wait_for(work, self._timeout_s)
        except TimeoutError:
            raise TimedOut(f"{what} did not answer within {self._timeout_s:g} s") from None

    # ------------------------------------------------------------------ the cluster

    async def cluster_facts(self, admin: ShareGroupAdmin, *, configs: bool = True) -> ClusterFacts:
        """The cluster's feature levels and share-related configs, looked up once per session.

        Commands that offer a version-dependent feature (the dead-letter queue needs
        ``share.version`` 2) ask here, so one run costs one DescribeConfigs however
        many parts of it ask; the features come with the client's ApiVersions.
        ``configs=False`` is enough for what the features say (the Kafka line,
        ``share.version``) and sends nothing.
        """
        if self._facts is None or (configs and self._facts.node_id is None):
            from kshare_cli.admin.cluster_facts import read_cluster_facts

            self._facts = await read_cluster_facts(admin.client, configs=configs)
        return self._facts

    @property
    def known_cluster_facts(self) -> ClusterFacts | None:
        """The facts if this session has looked them up (a screen header shows them)."""
        return self._facts

    # ------------------------------------------------------------------ the state topic

    def placed_state(self, group_ids: Collection[str]) -> PlacedStateSource:
        """A reader of only the state partitions these groups' share-partitions live in."""
        from kshare_cli.state.sources import PlacedStateSource

        reader = PlacedStateSource(self._settings.confluent_config(), group_ids=group_ids)
        self._readers.append(reader)
        return reader

    def tailing_state(self, group_ids: Collection[str] | None = None) -> TailingStateSource:
        """A reader that follows the whole state topic (``group_ids`` None: every group)."""
        from kshare_cli.state.sources import TailingStateSource

        reader = TailingStateSource(self._settings.confluent_config(), group_ids=group_ids)
        self._readers.append(reader)
        return reader

    def inflight(self, admin: ShareGroupAdmin, state: StateSource | None) -> InflightService:
        """Admin RPCs and the state topic joined, the state read given its share of the timeout."""
        from kshare_cli.services.inflight import InflightService

        return InflightService(admin, state, state_timeout_s=self.state_timeout_s)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the state readers made here (each waits for a read in progress)."""
        readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()

    async def aclose(self) -> None:
        """Close the kept client, then the state readers (in a thread: closing may wait)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            await kept.client.close()
        if self._readers:
            await asyncio.to_thread(self.close)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _check_share_groups(client: KafkaClient) -> None:
    # A broker without share groups still answers ListGroups (an empty list), so `list`
    # and `describe --all-groups` would report "no share groups" and exit 0; name the
    # missing API instead (IncompatibleBroker, exit 3).
    client.api_version(SHARE_GROUP_DESCRIBE)


@asynccontextmanager
async def _open_admin(
    settings: ConnectionSettings, timeout_s: float
) -> AsyncIterator[ShareGroupAdmin]:
    command = _COMMAND.get()
    deadline = None if command is None else command[0]
    client = await KafkaClient.connect(settings, timeout_s=timeout_s, deadline=deadline)
    try:
        _check_share_groups(client)
        if command is None:
            yield ShareGroupAdmin(client)
        else:
            async with client.bounded(command[1]):
                yield ShareGroupAdmin(client)
    finally:
        await client.close()


async def _run_bounded(work: Coroutine[Any, Any, T], timeout_s: float, what: str) -> T:
    loop = asyncio.get_running_loop()
    token = _COMMAND.set((loop.time() + timeout_s, what))
    try:
        # The task wait_for makes copies this context: _open_admin finds the deadline.
        return await asyncio.wait_for(work, timeout_s + BACKSTOP_S)
    except TimedOut as error:
        # The client's own deadline: say which option set it, as the backstop does.
        raise TimedOut(f"{error} (--timeout)") from None
    except TimeoutError:
        raise TimedOut(f"{what} did not finish within {timeout_s:g} s (--timeout)") from None
    finally:
        _COMMAND.reset(token)
