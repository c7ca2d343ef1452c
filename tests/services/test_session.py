"""``Session``: the one place that connects, refuses a broker without share groups, shares
the timeout and ends a command.

Offline: the client's ``connect`` is replaced where the fact is about the
session's bookkeeping (retry after a failed connection, closing what it made),
and a closed port stands for an unreachable cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import ConnectionFailed, IncompatibleBroker, TimedOut
from kshare_cli.services import session as session_module
from kshare_cli.services.session import STATE_SHARE_OF_TIMEOUT, Session


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def _session(timeout_s: float = 2.0) -> Session:
    return Session(ConnectionSettings(bootstrap_servers=(_closed_port(),)), timeout_s)


def test_the_state_read_gets_one_share_of_the_timeout_everywhere() -> None:
    session = _session(timeout_s=8.0)
    assert session.state_timeout_s == 8.0 * STATE_SHARE_OF_TIMEOUT
    assert 0 < STATE_SHARE_OF_TIMEOUT < 1  # a thread the deadline cannot cancel ends first
    service = session.inflight(admin=object(), state=None)  # type: ignore[arg-type]  # unused
    assert service._state_timeout_s == 8.0 * STATE_SHARE_OF_TIMEOUT


def test_a_command_that_outlives_its_timeout_names_the_option() -> None:
    session = _session(timeout_s=0.05)

    async def forever() -> None:
        await asyncio.sleep(3600)

    with pytest.raises(TimedOut) as raised:
        asyncio.run(session.bounded(forever(), "waiting for nothing"))
    assert str(raised.value) == "waiting for nothing did not finish within 0.05 s (--timeout)"


def test_the_clients_own_deadline_is_named_as_the_timeout_option() -> None:
    async def client_gave_up() -> None:
        raise TimedOut("ListGroups: no answer from broker 1")

    with pytest.raises(TimedOut) as raised:
        asyncio.run(_session().bounded(client_gave_up(), "listing share groups"))
    assert str(raised.value) == "ListGroups: no answer from broker 1 (--timeout)"


def test_a_client_opened_inside_a_bounded_run_gets_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[float | None] = []

    async def connect(_settings: object, *, timeout_s: float, deadline: float | None) -> Any:
        seen.append(deadline)
        raise ConnectionFailed("no broker")

    monkeypatch.setattr(session_module.KafkaClient, "connect", connect)
    session = _session(timeout_s=5.0)

    async def work() -> None:
        async with session.admin():
            pass

    async def bounded_then_not() -> float:
        with pytest.raises(ConnectionFailed):
            await session.bounded(work(), "listing share groups")
        with pytest.raises(ConnectionFailed):
            await work()
        return asyncio.get_running_loop().time()

    now = asyncio.run(bounded_then_not())
    assert seen[0] is not None and now - 5.0 <= seen[0] <= now + 5.0
    assert seen[1] is None  # outside a command: no deadline of its own


def test_a_failed_kept_connection_is_tried_again_on_the_next_call() -> None:
    session = _session(timeout_s=1.0)

    async def twice() -> None:
        for _ in range(2):
            with pytest.raises(ConnectionFailed):
                await session.kept_admin()
        assert session._kept is None
        await session.aclose()

    asyncio.run(twice())


def test_within_bounds_one_call_of_a_long_lived_caller() -> None:
    session = _session(timeout_s=0.05)

    async def forever() -> None:
        await asyncio.sleep(3600)

    with pytest.raises(TimedOut) as raised:
        asyncio.run(session.within(forever(), "share group 'g'"))
    assert str(raised.value) == "share group 'g' did not answer within 0.05 s"


def test_the_session_closes_the_state_readers_it_made() -> None:
    with _session() as session:
        placed = session.placed_state(["g"])
        tailing = session.tailing_state()
    assert placed._closed and tailing._closed


class _OldBroker:
    """A connected client whose broker has no ShareGroupDescribe."""

    closed = 0

    def api_version(self, api_key: int, **_: object) -> int:
        raise IncompatibleBroker(f"the broker does not support API {api_key}")

    async def close(self) -> None:
        _OldBroker.closed += 1


def test_a_broker_without_share_groups_is_refused_and_its_client_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def connect(*_: object, **__: object) -> _OldBroker:
        return _OldBroker()

    monkeypatch.setattr(session_module.KafkaClient, "connect", connect)
    _OldBroker.closed = 0
    session = _session()

    async def both() -> None:
        with pytest.raises(IncompatibleBroker):
            async with session.admin():
                pass
        with pytest.raises(IncompatibleBroker):
            await session.kept_admin()

    asyncio.run(both())
    assert _OldBroker.closed == 2
    assert session._kept is None


class _Broker:
    """A connected client with share groups, recording what the session does with it."""

    def __init__(self) -> None:
        self.closed = 0
        self.operations: list[str] = []

    def api_version(self, api_key: int, **_: object) -> int:
        return 1

    @contextlib.asynccontextmanager
    async def bounded(self, what: str) -> AsyncIterator[None]:
        self.operations.append(what)
        yield

    async def close(self) -> None:
        self.closed += 1


def test_ask_is_one_question_under_the_deadline_on_a_client_closed_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broker = _Broker()
    deadlines: list[float | None] = []

    async def connect(*_: object, deadline: float | None = None, **__: object) -> _Broker:
        deadlines.append(deadline)
        return broker

    monkeypatch.setattr(session_module.KafkaClient, "connect", connect)

    async def question(admin: Any) -> str:
        assert admin.client is broker and broker.closed == 0
        return "answer"

    assert asyncio.run(_session().ask("asking once", question)) == "answer"
    assert broker.operations == ["asking once"]  # the client's calls carry the command's name
    assert broker.closed == 1 and deadlines[0] is not None
