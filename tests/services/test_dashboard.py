"""``DashboardReads``: the dashboard's calls over one long-lived ``Session``.

Offline: the session's kept client is replaced, so these facts are about what the
dashboard's service joins (which state reader, which share of the timeout) and
what it closes, not about a broker.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.dashboard import DashboardReads
from kshare_cli.services.session import STATE_SHARE_OF_TIMEOUT, Session


class _StandIn:
    """A state source a test gives instead of the state-topic tailer."""

    def refresh(self, group_ids: object, timeout_s: float) -> dict[object, object]:
        return {}


def _session(monkeypatch: pytest.MonkeyPatch, timeout_s: float = 10.0) -> Session:
    session = Session(ConnectionSettings(bootstrap_servers=("127.0.0.1:1",)), timeout_s)
    admin = object()

    async def kept_admin() -> Any:
        return admin

    monkeypatch.setattr(session, "kept_admin", kept_admin)
    return session


def test_the_windows_get_the_sessions_share_of_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dashboard used 0.8 of its timeout where the commands used 0.75: one share now."""
    session = _session(monkeypatch, timeout_s=10.0)
    reads = DashboardReads(session)
    service = asyncio.run(reads._connected())
    assert service._state_timeout_s == 10.0 * STATE_SHARE_OF_TIMEOUT
    assert service._state is reads._tailer is not None  # the tailer it made
    asyncio.run(reads.aclose())
    assert reads._tailer is None and session._readers == []


def test_a_given_state_source_is_used_and_not_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in = _StandIn()
    session = _session(monkeypatch)
    reads = DashboardReads(session, state=stand_in)  # type: ignore[arg-type]  # duck-typed
    service = asyncio.run(reads._connected())
    assert service._state is stand_in and session._readers == []


def test_without_the_state_topic_the_windows_are_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = DashboardReads(_session(monkeypatch), read_state=False)
    assert asyncio.run(reads._connected())._state is None


def test_a_peek_never_waits_longer_than_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = DashboardReads(_session(monkeypatch, timeout_s=2.0), peek_timeout_s=5.0)
    assert reads._peek_timeout_s == 2.0
