"""Readers of ``__share_group_state`` for the in-flight views: one tailer kept across refreshes.

The dashboard, the exporter, ``health`` and ``kshare inflight`` read the persisted
share-partition states through these sources. They block (confluent-kafka), so
their callers run them in a worker thread (``asyncio.to_thread``) beside the admin
RPCs; a state partition whose leader is silent is given up on alone and named,
so that the windows of every other share-partition are still shown.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kshare_cli.state.partitioning import state_partition_for
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.state.tailer import StateTailer, StateTopicUnavailable
from kshare_cli.wire.client import GIVE_UP_FOR_S

__all__ = [
    "NamesUnread",
    "PlacedStateSource",
    "StateSource",
    "StateTopicRead",
    "TailingStateSource",
]


class StateSource(Protocol):
    """Where the persisted share-partition states come from (the state topic, in practice).

    ``refresh`` blocks (it runs in a worker thread) and returns the current state of
    every share-partition of the given groups; it raises ``StateTopicUnavailable``
    when the state topic cannot be read.
    """

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]: ...


@runtime_checkable
class NamesUnread(Protocol):
    """A ``StateSource`` that gives up on a silent state partition alone, and says which
    share-partitions that left out and why (their windows are then unknown, not empty)."""

    def unread_reason(self, key: SharePartitionKey) -> str | None: ...


class TailingStateSource:
    """A ``StateSource`` over one long-lived ``StateTailer``.

    Until a refresh has read every state partition to its end, each refresh tries
    that again, going on from what earlier attempts read; after that, a refresh
    applies only what is new (``poll``), so a dashboard refresh costs the records
    written since the last one. ``group_ids`` restricts the tailer to those groups
    (records of others are skipped while reading); None keeps every group, for a
    caller that moves between groups.

    Refreshes from several threads share one read rather than taking turns: a
    refresh that waited while another read finishes takes that read's answer (or
    its failure) instead of reading again with a full timeout of its own. On a
    real cluster with one broker down, five groups' health refreshes each waited
    out their own catch-up in turn (160 s for a 30 s --timeout); now the waiting
    costs at most one read, and a refresh never waits past its own timeout.

    A state partition whose leader is silent is given up on alone (``catch_up_each``):
    the share-partitions it holds are left out of every answer (their partial states
    would be wrong windows) and ``unread_reason`` says why, while every other
    share-partition's window is shown.
    """

    def __init__(
        self, config: Mapping[str, object], *, group_ids: Collection[str] | None = None
    ) -> None:
        self._config = dict(config)
        self._group_ids = None if group_ids is None else frozenset(group_ids)
        self._tailer: StateTailer | None = None
        self._caught_up = False
        self._lock = threading.Lock()
        self._closed = False
        #: When the last read ended (monotonic), and how it failed, for refreshes that
        #: waited for it.
        self._read_at: float | None = None
        self._failure: StateTopicUnavailable | None = None
        #: State partitions not read to their end by the last read, each with why, and
        #: when they were given up on.
        self._unread: dict[int, str] = {}
        self._gave_up_at: float | None = None

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        asked = time.monotonic()
        with self._turn(timeout_s):
            if self._read_at is None or self._read_at < asked:
                self._read(max(0.0, asked + timeout_s - time.monotonic()))
            elif self._failure is not None:
                # A read ended while this refresh waited for it: its failure is ours too.
                raise self._failure
            wanted = frozenset(group_ids)
            return {
                key: state for key, state in self._read_states().items() if key.group_id in wanted
            }

    def states(self) -> dict[SharePartitionKey, SharePartitionState]:
        """Every kept share-partition's state as last read, without reading again: for a
        caller that reads once (``refresh``) and answers many groups from that read."""
        with self._lock:
            return self._read_states()

    def unread_reason(self, key: SharePartitionKey) -> str | None:
        """Why the last read left ``key``'s state out (its state partition's leader was
        silent), else None."""
        with self._lock:
            count = None if self._tailer is None else self._tailer.partition_count
            if count is None or not self._unread:
                return None
            return self._unread.get(state_partition_for(key, count))

    def read_everywhere(self, group_ids: Collection[str], timeout_s: float) -> StateTopicRead:
        """Every state partition, keeping ``group_ids``' share-partitions, each partition
        given up on alone: for a caller that cannot know where they live (the group
        coordinator held DescribeShareGroupOffsets, ``InflightService.group``). A
        reader of its own, so the tailer ``refresh`` follows is left as it is."""
        asked = time.monotonic()
        with (
            self._turn(timeout_s),
            StateTailer(self._config, group_ids=frozenset(group_ids)) as tailer,
        ):
            silent = tailer.catch_up_each(max(0.0, asked + timeout_s - time.monotonic()))
            count = tailer.partition_count
            states = tailer.states()
            leaders = [tailer.leader(partition) for partition in sorted(silent)]
        if count is not None and silent:
            states = {
                key: state
                for key, state in states.items()
                if state_partition_for(key, count) not in silent
            }
        named = tuple(dict.fromkeys(leader for leader in leaders if leader is not None))
        return StateTopicRead(states, silent, named, count)

    def close(self) -> None:
        """Close the tailer; waits for a refresh in progress (at most its timeout)."""
        with self._lock:
            self._closed = True
            if self._tailer is not None:
                self._tailer.close()
                self._tailer = None

    @contextmanager
    def _turn(self, timeout_s: float) -> Iterator[None]:
        """The reader, once the refresh before has ended: within ``timeout_s`` or not at all."""
        if not self._lock.acquire(timeout=max(0.0, timeout_s)):
            raise StateTopicUnavailable(
                f"the state topic was still being read after {timeout_s:g} s "
                "(a broker is slow or silent); in-flight windows cannot be shown"
            )
        try:
            if self._closed:
                raise StateTopicUnavailable("the state topic reader was closed")
            yield
        finally:
            self._lock.release()

    def _read(self, budget_s: float) -> None:
        if self._tailer is None:
            self._tailer = StateTailer(self._config, group_ids=self._group_ids)
        tailer = self._tailer
        self._failure = None
        try:
            # A state partition given up on a moment ago is not waited for again (the
            # client does the same for a broker, GIVE_UP_FOR_S): each group of one
            # command would pay its leader's silence anew.
            recent = self._gave_up_at is not None and (
                time.monotonic() - self._gave_up_at < GIVE_UP_FOR_S
            )
            if self._caught_up or recent:
                tailer.poll(budget_s)
            else:
                self._unread = tailer.catch_up_each(budget_s)
                self._caught_up = not self._unread
                self._gave_up_at = time.monotonic() if self._unread else None
        except StateTopicUnavailable as failure:
            self._failure = failure
            raise
        finally:
            self._read_at = time.monotonic()

    def _read_states(self) -> dict[SharePartitionKey, SharePartitionState]:
        if self._tailer is None:
            return {}
        states = self._tailer.states()
        count = self._tailer.partition_count
        if not self._unread or count is None:
            return states
        return {
            key: state
            for key, state in states.items()
            if state_partition_for(key, count) not in self._unread
        }

    def __enter__(self) -> TailingStateSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class StateTopicRead:
    """One read of every state partition for some groups (``read_everywhere``).

    ``states`` are the share-partitions read to the end; ``silent`` the state
    partitions given up on, each with why, whose share-partitions are left out;
    ``silent_leaders`` their leaders, named (``broker N (HOST:PORT)``), once each.
    """

    states: Mapping[SharePartitionKey, SharePartitionState]
    silent: Mapping[int, str] = dataclasses.field(default_factory=dict)
    silent_leaders: tuple[str, ...] = ()
    partition_count: int | None = None

    def unread_reason(self, key: SharePartitionKey) -> str | None:
        """Why ``key``'s state is unknown (its state partition was silent), else None."""
        if self.partition_count is None or not self.silent:
            return None
        return self.silent.get(state_partition_for(key, self.partition_count))


class PlacedStateSource(TailingStateSource):
    """A ``TailingStateSource`` that can also read only where given share-partitions live.

    A command about one group (``kshare inflight``, a reset's plan) needs a few
    of the state topic's fifty partitions; reading all of them waited for every
    leader, so one down broker leading any state partition cost the whole
    state share of --timeout. ``read_placed`` reads the state partitions holding
    the share-partitions (Kafka's placement) and gives up on each alone.
    """

    def read_placed(
        self, share_partitions: Collection[SharePartitionKey], timeout_s: float
    ) -> tuple[dict[SharePartitionKey, SharePartitionState], dict[SharePartitionKey, str]]:
        """The states read, and for each share-partition whose state partition was not
        read to its end, why (its leader, named); their partial states are dropped."""
        keys = frozenset(share_partitions)
        if not keys:
            return {}, {}
        asked = time.monotonic()
        with self._turn(timeout_s):
            groups = {key.group_id for key in keys}
            with StateTailer(self._config, group_ids=groups, share_partitions=keys) as tailer:
                silent = tailer.catch_up_each(max(0.0, asked + timeout_s - time.monotonic()))
                count = tailer.partition_count
                states = tailer.states()
        unread = {}
        if count is not None:
            for key in keys:
                reason = silent.get(state_partition_for(key, count))
                if reason is not None:
                    unread[key] = reason
        read = {key: state for key, state in states.items() if key in keys and key not in unread}
        return read, unread
