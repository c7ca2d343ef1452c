"""``DashboardReads``: the dashboard's calls over one long-lived ``Session``.

Offline: the session's kept client is replaced, so these facts are about what the
dashboard's service joins (which state reader, which share of the timeout) and
what it closes, not about a broker.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kshare_cli.admin.models import BrokerFailure, GroupFailure
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.dashboard import (
    REFRESH_BOUND_S,
    DashboardReads,
    GroupsOverview,
    GroupSummary,
    KnownGroups,
)
from kshare_cli.services.session import STATE_SHARE_OF_TIMEOUT, Session
from kshare_cli.wire.errors import KafkaError


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


# -- KnownGroups: a group a refresh could not read stays, stale, naming why (issue 23) ----------

NETWORK_EXCEPTION = 13


def _summary(group_id: str, lag: int) -> GroupSummary:
    return GroupSummary(group_id, "Stable", 1, 3, lag)


def _broker(node_id: int) -> BrokerFailure:
    return BrokerFailure(
        node_id, "127.0.0.1", 9090 + node_id, KafkaError.of(NETWORK_EXCEPTION, "refused")
    )


def test_a_group_its_broker_did_not_list_keeps_its_last_figures_naming_the_broker() -> None:
    known = KnownGroups()
    known.merge(GroupsOverview((_summary("a", 1), _summary("b", 2))), at=100.0)
    view = known.merge(GroupsOverview((_summary("a", 5),), (_broker(2),)), at=103.0)
    assert [group.total_lag for group in view.groups] == [5]
    (stale,) = view.stale
    assert stale.summary == _summary("b", 2) and stale.read_at == 100.0
    assert stale.reason == "broker 2 (127.0.0.1:9092) did not list it"
    assert view.unlisted is not None and view.unlisted.groups == ("b",)
    assert str(view.unlisted) == (
        "broker 2 (127.0.0.1:9092) did not list its groups: 1 group unknown"
    )
    assert view.count == 2
    # Still unlisted: the same figures, still from when they were read.
    again = known.merge(GroupsOverview((_summary("a", 6),), (_broker(2),)), at=106.0)
    assert [(each.summary, each.read_at) for each in again.stale] == [(_summary("b", 2), 100.0)]
    # The broker answers again (or the group moved to a live coordinator): fresh.
    back = known.merge(GroupsOverview((_summary("a", 7), _summary("b", 9))), at=109.0)
    assert back.stale == () and back.unlisted is None
    assert [group.total_lag for group in back.groups] == [7, 9]


def test_a_group_absent_from_a_complete_listing_was_deleted_and_is_forgotten() -> None:
    known = KnownGroups()
    known.merge(GroupsOverview((_summary("a", 1), _summary("b", 2))), at=100.0)
    assert known.merge(GroupsOverview((_summary("a", 1),)), at=101.0).stale == ()
    # Forgotten: a later broker failure does not bring it back.
    assert known.merge(GroupsOverview((_summary("a", 1),), (_broker(2),)), at=102.0).stale == ()


def test_a_listed_group_not_described_is_stale_with_its_error() -> None:
    known = KnownGroups()
    known.merge(GroupsOverview((_summary("a", 1), _summary("b", 2))), at=100.0)
    failure = GroupFailure("b", KafkaError.of(NETWORK_EXCEPTION, "broker 3 (h:1): refused"))
    view = known.merge(GroupsOverview((_summary("a", 1),), (failure,)), at=101.0)
    (stale,) = view.stale
    assert stale.summary.group_id == "b" and stale.reason == str(failure)
    assert view.unlisted is None


def test_brokers_that_did_not_list_are_named_together_and_unknown_counts_are_said() -> None:
    known = KnownGroups()
    view = known.merge(GroupsOverview((), (_broker(1), _broker(3))), at=100.0)
    assert view.stale == ()
    assert str(view.unlisted) == (
        "brokers 1 (127.0.0.1:9091), 3 (127.0.0.1:9093) did not list their groups: "
        "any they coordinate missing"
    )


def test_a_refresh_of_the_groups_is_bounded_below_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A silent broker is given up after half of REFRESH_BOUND_S, not of a 30 s --timeout."""
    assert DashboardReads(_session(monkeypatch, timeout_s=30.0)).refresh_bound_s == REFRESH_BOUND_S
    assert DashboardReads(_session(monkeypatch, timeout_s=3.0)).refresh_bound_s == 3.0


def test_the_steps_of_a_refresh_share_the_refresh_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Listing, describing and the offsets run inside one bounded operation of the client,
    whose deadline is the refresh bound: a hung broker's listing leaves the healthy answers."""
    session = _session(monkeypatch, timeout_s=30.0)
    seen: list[tuple[str, float | None]] = []

    class Client:
        @contextlib.asynccontextmanager
        async def bounded(self, what: str, timeout_s: float | None = None) -> AsyncIterator[None]:
            seen.append((what, timeout_s))
            yield

    class Service:
        admin = type("Admin", (), {"client": Client()})()

        async def overview(self) -> GroupsOverview:
            return GroupsOverview((_summary("a", 1),), (_broker(2),))

    reads = DashboardReads(session)

    async def connected() -> Any:
        return Service()

    monkeypatch.setattr(reads, "_connected", connected)
    overview = asyncio.run(reads.overview())
    assert overview.failures == (_broker(2),)
    assert seen == [("listing share groups", REFRESH_BOUND_S)]
