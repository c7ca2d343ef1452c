"""The exporter's refresh: every interval, one read of the groups into an immutable snapshot.

Scrapes never wait on Kafka: a background refresh (``Refresher.run``) reads the
groups on its own interval and swaps in a new ``ExporterSnapshot``, handing it
to ``on_snapshot`` (the exporter renders its ``/metrics`` body there, so a scrape
only copies bytes); ``/healthz`` reads whatever snapshot is current.

A refresh is per group, not all-or-nothing. The groups read now are fresh; the
others keep their last figures (share-partitions, summed lag, members, state,
time lag) with status ERR and the reason, each group's own error count and the
time its figures were last read say which figures are old and since when, and
``/healthz`` (still 200: the exporter works) names them. Only a refresh that read
no group at all (the cluster unreachable, ``--timeout`` passed, every group's
coordinator hung or gone) counts as failed: the error is counted and said, and
``/healthz`` turns 503 once no refresh has read anything for three intervals.
Figures of a moment ago are worth more to a dashboard than no figures; the
scrape-time age (``kshare_exporter_last_refresh_age_seconds``) says how old they are.

Every refresh asks every broker for its groups (ListGroups), with ``--group`` too:
a broker that does not answer is never silence. Its failure is counted per broker
(``broker_errors``), ``/healthz`` names it, and with ``--all-groups`` the groups
the exporter knew from earlier refreshes that no broker listed now keep their
last figures as ERR naming the brokers that did not list (a group deleted during
the outage stays until the listing is whole again: unknown is not gone). A healthy
broker that answers "timed out" for a group while another broker is silent is
usually waiting on it (Kafka's DescribeShareGroupOffsets waits on the share
coordinator): the group's reason names the silent broker too, and only brokers
that did not answer themselves are counted.

One refresh ends within ``--timeout``: its RPCs share one deadline (``bounded``,
the session's), a silent broker's part ending as that broker's failure before
it. The state topic is read once per refresh for all groups (``StateReads``), in
a thread of its own that cannot be cancelled: once a first read has finished, a
refresh waits for the current read at most half an interval and otherwise uses
the last finished read (read earlier, so its windows never reach past the end
offsets read after it), while the read goes on for the next refresh; reads never
pile up behind a hung broker, and a refresh never holds the next beyond its
interval for them.

A state topic that cannot be read (no READ on ``__share_group_state``) is no
failure: the in-flight figures are left out and the reason is said once, not
at every refresh, until the windows come back.

Stalls need two samples ``stall_after_s`` apart: the refresher keeps the samples
of earlier refreshes until one is old enough, and evaluates against it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeVar

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import BrokerFailure, GroupListing
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.errors import KshareError
from kshare_cli.services.dead_letters import KeptDeadLetterQueues
from kshare_cli.services.health import (
    GroupHealth,
    HealthReport,
    Sample,
    Status,
    Thresholds,
    evaluate_samples,
    unreadable,
)
from kshare_cli.services.inflight import InflightService
from kshare_cli.services.sampling import sample_groups
from kshare_cli.services.time_lag import TimeLagKey
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState
from kshare_cli.state.sources import TailingStateSource
from kshare_cli.state.tailer import StateTopicUnavailable

__all__ = [
    "BACKSTOP_S",
    "HEALTHY_INTERVALS",
    "Bounded",
    "BrokerKey",
    "ExporterSnapshot",
    "OneStateReadPerRefresh",
    "Refresher",
    "StateReads",
    "TimeLagLookup",
    "broker_name",
]

T = TypeVar("T")

#: ``/healthz`` is 200 while the last successful refresh is at most this many intervals old.
HEALTHY_INTERVALS: Final = 3
#: The refresh's own timeout fires this long after ``--timeout``, so that the client's
#: deadline, which names the broker that did not answer, is what ``/healthz`` reports.
BACKSTOP_S: Final = 1.0
#: Once a first state read has finished, the part of an interval a refresh waits for
#: the current one before it uses the last finished read instead.
STATE_WAIT_SHARE: Final = 0.5
#: Below this much time left of ``--timeout``, the time lags are not looked up again
#: (the last ones are kept): a lookup given no time would only make them unknown.
TIME_LAG_MIN_S: Final = 0.1


#: How many groups the last refresh could not read ``/healthz`` names (then "and N more").
UNREAD_NAMED: Final = 5


#: The ages of the oldest unacknowledged records of a refresh's report within a timeout
#: (blocking, run in a worker thread): ``services.time_lag.health_time_lags`` bound to a
#: client's settings.
TimeLagLookup = Callable[[HealthReport, float], Mapping[TimeLagKey, float | None]]

#: Runs a refresh's reads under one deadline of ``--timeout`` (``Session.bounded``: the
#: client opened inside shares it); raises a ``KshareError`` or ``TimeoutError`` past it.
Bounded = Callable[[Coroutine[Any, Any, Any], str], Awaitable[Any]]

#: A broker as the per-broker series label it: its node id and its ``host:port``.
BrokerKey = tuple[int, str]


def broker_name(key: BrokerKey) -> str:
    """How kshare names a broker everywhere: ``broker 2 (127.0.0.1:9092)``."""
    return f"broker {key[0]} ({key[1]})"


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _key(failure: BrokerFailure) -> BrokerKey:
    return failure.node_id, _address(failure.host, failure.port)


@dataclass(frozen=True, slots=True)
class ExporterSnapshot:
    """What a scrape serves: the last successful refresh's samples and health, and the
    refresher's own figures. ``refreshed_at`` is wall-clock seconds (for the timestamp
    metric), ``refreshed_monotonic`` the same moment on the monotonic clock (for age).
    ``time_lags`` holds the known ages, in seconds at that refresh, of each
    share-partition's oldest unacknowledged record (only with a ``TimeLagLookup``).
    Per group: ``group_errors`` counts the refreshes that could not read it (whole
    failures included), ``group_read_at`` is when its figures were read (wall clock;
    older than ``refreshed_at`` for a group the last refreshes missed), and
    ``unread`` names the groups the last refresh could not read, with why. Per
    broker: ``broker_errors`` counts the refreshes in which it did not list its
    groups (every broker the cluster named, from 0), and ``unlisted`` says, for the
    last refresh's brokers that did not, why and how many known groups that left
    unknown."""

    samples: tuple[Sample, ...] = ()
    report: HealthReport = field(default_factory=lambda: HealthReport(()))
    refreshed_at: float | None = None
    refreshed_monotonic: float | None = None
    refresh_seconds: float | None = None
    refresh_errors: int = 0
    last_error: str | None = None
    time_lags: Mapping[TimeLagKey, float] = field(default_factory=dict)
    group_errors: Mapping[str, int] = field(default_factory=dict)
    group_read_at: Mapping[str, float] = field(default_factory=dict)
    unread: Mapping[str, str] = field(default_factory=dict)
    broker_errors: Mapping[BrokerKey, int] = field(default_factory=dict)
    unlisted: tuple[str, ...] = ()

    def healthy(self, interval_s: float, now_monotonic: float) -> tuple[bool, str]:
        """Whether the figures are fresh, and the sentence ``/healthz`` answers with."""
        if self.refreshed_monotonic is None:
            reason = "no refresh has succeeded yet"
            if self.last_error is not None:
                reason += f"; last error: {self.last_error}"
            return False, reason
        age = now_monotonic - self.refreshed_monotonic
        limit = HEALTHY_INTERVALS * interval_s
        if age > limit:
            reason = f"the last successful refresh was {age:.1f} s ago (limit {limit:g} s)"
            if self.last_error is not None:
                reason += f"; last error: {self.last_error}"
            return False, reason
        reason = f"ok: refreshed {age:.1f} s ago"
        for line in self.unlisted:
            reason += f"; {line}"
        if self.unread:
            named = sorted(self.unread)[:UNREAD_NAMED]
            count = len(self.unread)
            listed = "; ".join(_named(group_id, self.unread[group_id]) for group_id in named)
            more = f"; and {count - len(named)} more" if count > len(named) else ""
            noun = "group" if count == 1 else "groups"
            reason += f"; {count} {noun} not read, last figures kept: {listed}{more}"
        return True, reason


def _named(group_id: str, reason: str) -> str:
    """A group's failure, its name said once (kshare's messages usually name it)."""
    return reason if group_id in reason else f"{group_id}: {reason}"


@dataclass(frozen=True, slots=True)
class _StateRead:
    """One finished read of the state topic: the states by group, or why it failed."""

    by_group: Mapping[str, Mapping[SharePartitionKey, SharePartitionState]]
    refusal: StateTopicUnavailable | None


class StateReads:
    """The state-topic reads of every refresh, over the exporter's long-lived
    ``TailingStateSource``: at most one at a time, each in a daemon thread of its own.

    A read cannot be cancelled, and against a hung broker it lasts its whole
    timeout. A refresh asks ``read``: a read starts unless one is under way, and the
    refresh waits for it at most ``wait_s`` (its whole timeout until a first read has
    finished); then it gets the newest finished read, which may be an earlier one.
    """

    def __init__(self, source: TailingStateSource) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._under_way: threading.Event | None = None
        self._finished: _StateRead | None = None

    def read(self, timeout_s: float, wait_s: float) -> _StateRead | None:
        """The newest finished read after waiting for the current one (None: none yet)."""
        with self._lock:
            ended = self._under_way
            if ended is None:
                ended = self._under_way = threading.Event()
                threading.Thread(
                    target=self._read,
                    args=(timeout_s, ended),
                    name="kshare-exporter-state",
                    daemon=True,
                ).start()
            first = self._finished is None
        ended.wait(timeout_s if first else min(wait_s, timeout_s))
        with self._lock:
            return self._finished

    def unread_reason(self, key: SharePartitionKey) -> str | None:
        """Why the reader left ``key``'s state out (its state partition's leader is silent)."""
        return self._source.unread_reason(key)

    def _read(self, timeout_s: float, ended: threading.Event) -> None:
        refusal: StateTopicUnavailable | None = None
        by_group: dict[str, dict[SharePartitionKey, SharePartitionState]] = {}
        try:
            self._source.refresh((), timeout_s)
            for key, state in self._source.states().items():
                by_group.setdefault(key.group_id, {})[key] = state
        except StateTopicUnavailable as refused:
            refusal = refused
        except Exception as error:  # noqa: BLE001 -- a thread's failure, said as a note
            refusal = StateTopicUnavailable(f"reading the state topic failed: {error}")
        with self._lock:
            self._finished = _StateRead(by_group, refusal)
            self._under_way = None
        ended.set()


class OneStateReadPerRefresh:
    """A ``StateSource`` for one refresh: the first group's call gets the state topic's
    read (``StateReads.read``), every other group is answered from it (or gets the
    same refusal).

    Make one per refresh. Its calls come from worker threads, hence the lock.
    """

    def __init__(self, reads: StateReads, wait_s: float) -> None:
        self._reads = reads
        self._wait_s = wait_s
        self._lock = threading.Lock()
        self._read: _StateRead | None = None

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        with self._lock:
            if self._read is None:
                read = self._reads.read(timeout_s, self._wait_s)
                self._read = read or _StateRead(
                    {},
                    StateTopicUnavailable(
                        f"the state topic was not read within {timeout_s:g} s "
                        "(a broker is slow or silent)"
                    ),
                )
            read = self._read
        if read.refusal is not None:
            raise StateTopicUnavailable(read.refusal.reason)
        return {
            key: state
            for group_id in group_ids
            for key, state in read.by_group.get(group_id, {}).items()
        }

    def unread_reason(self, key: SharePartitionKey) -> str | None:
        """Why this refresh has no state for ``key``: its state partition's leader is silent."""
        return self._reads.unread_reason(key)


#: Opens what one refresh reads through (a client on the settings), closed after it.
OpenService = Callable[[], AbstractAsyncContextManager[InflightService]]


@dataclass(frozen=True, slots=True)
class _Reading:
    """One refresh's reads: every group's sample or ERR result, the brokers that did not
    list their groups, and every broker the cluster named."""

    latest: tuple[Sample | GroupHealth, ...]
    unlisted: tuple[BrokerFailure, ...]
    brokers: tuple[BrokerKey, ...]
    #: Groups known from earlier refreshes that went unlisted (None: ``--group``).
    unknown: int | None = None


class Refresher:
    """Reads the groups every ``interval_s`` and keeps the current ``ExporterSnapshot``.

    ``group_ids`` None means every share group, listed again at each refresh, so a
    new group appears without a restart. ``bounded`` runs a refresh's reads under
    one deadline of ``timeout_s`` (default: a plain timeout a backstop after it).
    """

    def __init__(
        self,
        open_service: OpenService,
        group_ids: Sequence[str] | None,
        thresholds: Thresholds,
        interval_s: float,
        timeout_s: float,
        on_error: Callable[[str], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_snapshot: Callable[[ExporterSnapshot], None] | None = None,
        time_lag: TimeLagLookup | None = None,
        history_clock: Callable[[], float] = time.monotonic,
        bounded: Bounded | None = None,
        dead_letters: KeptDeadLetterQueues | None = None,
    ) -> None:
        self._time_lag = time_lag
        #: Each refresh also counts the groups' dead letters (Kafka 4.4's DLQ), reading
        #: only what their DLQ topics got since the last refresh.
        self._dead_letters = dead_letters
        #: The clock the stall history is kept on: ``benchmarks/exporter.py --hour``
        #: sets one that advances an interval per refresh, so that back-to-back
        #: refreshes keep the history that refreshes at the real interval keep.
        self.history_clock = history_clock
        #: Called with every new snapshot right after it is made, in the refresher's
        #: thread (the exporter renders its ``/metrics`` body there, not in a scrape).
        self.on_snapshot = on_snapshot
        self._open_service = open_service
        self._on_error = on_error
        self._on_warning = on_warning
        self._window_note: str | None = None
        self._failing_brokers: set[BrokerKey] = set()
        self._group_ids = None if group_ids is None else tuple(group_ids)
        self._thresholds = thresholds
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._bounded = bounded or self._backstopped
        self._history: list[tuple[float, tuple[Sample | GroupHealth, ...]]] = []
        self._dlq_error: str | None = None
        self.snapshot = ExporterSnapshot()

    async def _backstopped(self, work: Coroutine[Any, Any, T], what: str) -> T:
        async with asyncio.timeout(self._timeout_s + BACKSTOP_S):
            return await work

    async def refresh(self) -> None:
        """One refresh; a failure is counted and named, never raised."""
        started = time.monotonic()
        try:
            reading: _Reading = await self._bounded(self._read(), "reading the groups")
        except (KshareError, TimeoutError, OSError) as error:
            self._failed(str(error) or f"no answer within {self._timeout_s:g} s")
            return
        latest = _sharing_unchanged(reading.latest, self.snapshot.samples)
        unlisted = reading.unlisted
        brokers = _count_brokers(self.snapshot.broker_errors, reading.brokers, unlisted)
        failed = [each for each in latest if isinstance(each, GroupHealth) and not each.not_found]
        if (failed and len(failed) == len(latest)) or (unlisted and not latest):
            reasons = [_unlisted_line(failure, reading.unknown) for failure in unlisted]
            reasons += sorted({reason for each in failed for reason in each.reasons})
            self._note_brokers(unlisted, ())
            self._failed(
                "; ".join(dict.fromkeys(reasons)),
                {each.group_id: "; ".join(each.reasons) for each in failed},
                brokers,
            )
            return
        finished = time.monotonic()
        read_at = time.time()
        previous = self.snapshot
        unread = {each.group_id: "; ".join(each.reasons) for each in failed}
        kept_at = self.history_clock()
        report = _sharing_unchanged_health(
            evaluate_samples(latest, self._earlier(kept_at), self._thresholds), previous.report
        )
        self._history.append((kept_at, latest))
        kept = {sample.group.group_id: sample for sample in previous.samples}
        samples = tuple(
            each if isinstance(each, Sample) else kept[each.group_id]
            for each in latest
            if isinstance(each, Sample) or (not each.not_found and each.group_id in kept)
        )
        self._note_windows(latest)
        time_lags: dict[TimeLagKey, float] = dict(previous.time_lags)
        left = started + self._timeout_s - time.monotonic()
        if self._time_lag is not None and left >= TIME_LAG_MIN_S:
            read = HealthReport(tuple(g for g in report.groups if g.group_id not in unread))
            ages = await asyncio.to_thread(self._time_lag, read, left)
            time_lags = {key: age for key, age in ages.items() if age is not None}
            time_lags.update((k, v) for k, v in previous.time_lags.items() if k[0] in unread)
        # Only the groups of this refresh are remembered: a deleted group's entries go.
        listed = [
            each.group.group_id if isinstance(each, Sample) else each.group_id
            for each in latest
            if isinstance(each, Sample) or not each.not_found
        ]
        kept_groups = set(listed)
        lines = tuple(_unlisted_line(failure, reading.unknown) for failure in unlisted)
        self._note_brokers(unlisted, lines)
        self._swap(
            replace(
                previous,
                samples=samples,
                report=_keep_unread(report, previous.report, unread),
                refreshed_at=read_at,
                refreshed_monotonic=finished,
                refresh_seconds=time.monotonic() - started,
                time_lags={k: v for k, v in time_lags.items() if k[0] in kept_groups},
                group_errors={
                    group_id: previous.group_errors.get(group_id, 0) + (group_id in unread)
                    for group_id in listed
                },
                group_read_at={
                    group_id: previous.group_read_at[group_id] if group_id in unread else read_at
                    for group_id in listed
                    if group_id not in unread or group_id in previous.group_read_at
                },
                unread=unread,
                broker_errors=brokers,
                unlisted=lines,
            )
        )

    def _failed(
        self,
        message: str,
        reasons: Mapping[str, str] | None = None,
        broker_errors: Mapping[BrokerKey, int] | None = None,
    ) -> None:
        """A refresh that read nothing: every group of ``reasons`` (None: every group
        known so far, for ``message``) missed it, and is ERR with its last figures."""
        previous = self.snapshot
        missed = dict.fromkeys(previous.group_errors, message) if reasons is None else dict(reasons)
        errors = dict(previous.group_errors)
        for group_id in missed:
            errors[group_id] = errors.get(group_id, 0) + 1
        self._swap(
            replace(
                previous,
                report=_keep_unread(previous.report, previous.report, missed),
                refresh_errors=previous.refresh_errors + 1,
                last_error=message,
                group_errors=errors,
                broker_errors=previous.broker_errors if broker_errors is None else broker_errors,
            )
        )
        if self._on_error is not None:
            self._on_error(message)

    def _note_brokers(self, unlisted: Sequence[BrokerFailure], lines: Sequence[str]) -> None:
        """Say once that a broker stopped listing its groups (``lines``: what to say; none
        when the refresh failed as a whole, which says it itself); again only after it
        listed them once more."""
        failing = {_key(failure) for failure in unlisted}
        if self._on_warning is not None:
            for key, line in zip((_key(f) for f in unlisted), lines, strict=False):
                if key not in self._failing_brokers:
                    self._on_warning(line)
        self._failing_brokers = failing

    def _swap(self, snapshot: ExporterSnapshot) -> None:
        self.snapshot = snapshot
        if self.on_snapshot is not None:
            self.on_snapshot(snapshot)

    def _note_windows(self, latest: Sequence[Sample | GroupHealth]) -> None:
        """Say once why the in-flight figures are missing; again only after they came back."""
        notes = sorted(
            {
                each.group.window_note
                for each in latest
                if isinstance(each, Sample) and each.group.window_note is not None
            }
        )
        if not notes:
            if any(isinstance(each, Sample) for each in latest):
                self._window_note = None
            return
        if self._window_note is None and self._on_warning is not None:
            self._on_warning(f"no in-flight windows: {notes[0]}")
        self._window_note = notes[0]

    async def run(self, stop: asyncio.Event) -> None:
        """Refresh until ``stop`` is set; each refresh starts an interval after the last began."""
        while not stop.is_set():
            began = time.monotonic()
            await self.refresh()
            wait = max(0.0, self._interval_s - (time.monotonic() - began))
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except TimeoutError:
                continue

    async def _read(self) -> _Reading:
        async with self._open_service() as service:
            admin = service.admin
            if self._group_ids is None:
                listing = await admin.list_groups()
                not_listed = self._not_listed(listing)
                latest = (*await sample_groups(service, listing.group_ids()), *not_listed)
                unknown: int | None = len(not_listed)
            else:
                # Listed only to hear from every broker: a dead one is counted and named.
                listing, latest = await asyncio.gather(
                    admin.list_groups(), sample_groups(service, self._group_ids)
                )
                unknown = None
            latest = await self._with_dead_letters(admin, latest)
            metadata = await admin.client.metadata([])
            brokers = tuple(
                (node.node_id, _address(node.host, node.port)) for node in metadata.brokers.values()
            )
            unlisted = listing.failures
            if unlisted:
                latest = tuple(_blame(each, unlisted) for each in latest)
            return _Reading(latest, unlisted, brokers, unknown)

    async def _with_dead_letters(
        self, admin: ShareGroupAdmin, latest: Sequence[Sample | GroupHealth]
    ) -> tuple[Sample | GroupHealth, ...]:
        """Each sample with its group's DLQ; a group whose DLQ could not be read this time
        keeps its last figures (counters must not vanish), the failure said once."""
        if self._dead_letters is None:
            return tuple(latest)
        ids = [each.group.group_id for each in latest if isinstance(each, Sample)]
        try:
            queues = await self._dead_letters.read(admin, ids)
        except KshareError as error:
            if self._on_warning is not None and self._dlq_error is None:
                self._on_warning(f"dead-letter queues not read: {error}")
            self._dlq_error = str(error)
            kept = {each.group.group_id: each.dead_letters for each in self.snapshot.samples}
            queues = {group_id: queue for group_id in ids if (queue := kept.get(group_id))}
        else:
            self._dlq_error = None
        return tuple(
            replace(each, dead_letters=queues.get(each.group.group_id))
            if isinstance(each, Sample)
            else each
            for each in latest
        )

    def close(self) -> None:
        """Release the DLQ readers (the state reader is the caller's)."""
        if self._dead_letters is not None:
            self._dead_letters.close()

    def _not_listed(self, listing: GroupListing) -> tuple[GroupHealth, ...]:
        """ERR results for the groups known from earlier refreshes that no broker listed,
        while a broker did not list its groups: theirs may be among them."""
        if not listing.failures:
            return ()
        named = "; ".join(
            f"{broker_name(_key(failure))} did not list its groups" for failure in listing.failures
        )
        missing = sorted(set(self.snapshot.group_errors) - set(listing.group_ids()))
        return tuple(
            unreadable(group_id, f"share group '{group_id}' not listed: {named}")
            for group_id in missing
        )

    def _earlier(self, now: float) -> tuple[Sample | GroupHealth, ...]:
        """The newest kept refresh at least ``stall_after_s`` old; older ones are dropped."""
        old_enough = [
            index
            for index, (taken, _) in enumerate(self._history)
            if now - taken >= self._thresholds.stall_after_s
        ]
        if not old_enough:
            return ()
        newest = old_enough[-1]
        del self._history[:newest]
        return self._history[0][1]


def _sharing_unchanged(
    latest: Sequence[Sample | GroupHealth], previous: Sequence[Sample]
) -> tuple[Sample | GroupHealth, ...]:
    """``latest`` with each group's reading, share-partition or log start offsets that
    equals the previous refresh's replaced by that very object.

    Why: a refresh's samples live for a minute in the stall history (five refreshes
    at 15 s), and most of what a refresh reads equals what the last one read. Built
    anew at every refresh, these long-lived objects -- some 400,000 at 10,000 groups --
    land in whatever pymalloc arena has room beside the temporaries, and an arena is
    returned only once all of it is free: the resident memory crept by one 1 MiB
    arena every few minutes with the count of live objects flat
    (``benchmarks/exporter.py --hour``). Shared, only what changed is new.
    A window's ``start_offset_moved`` is not part of its equality, so it is compared
    apart: an equal window that moved differently is not shared.
    """
    if not previous:
        return tuple(latest)
    before = {sample.group.group_id: sample for sample in previous}
    shared: list[Sample | GroupHealth] = []
    for each in latest:
        old = before.get(each.group.group_id) if isinstance(each, Sample) else None
        if old is None or not isinstance(each, Sample):
            shared.append(each)
            continue
        group = _shared_group(each.group, old.group)
        log_starts = (
            old.log_start_offsets
            if each.log_start_offsets == old.log_start_offsets
            else each.log_start_offsets
        )
        dead_letters = (
            old.dead_letters if each.dead_letters == old.dead_letters else each.dead_letters
        )
        shared.append(
            replace(each, group=group, log_start_offsets=log_starts, dead_letters=dead_letters)
        )
    return tuple(shared)


def _sharing_unchanged_health(report: HealthReport, previous: HealthReport) -> HealthReport:
    """``report`` with each group's health that equals the previous refresh's replaced by
    that object: the snapshot keeps it until the next refresh (see ``_sharing_unchanged``)."""
    before = {each.group_id: each for each in previous.groups}
    return replace(
        report,
        groups=tuple(
            old if (old := before.get(each.group_id)) is not None and old == each else each
            for each in report.groups
        ),
    )


def _shared_group(new: GroupInflight, old: GroupInflight) -> GroupInflight:
    """``new``, or ``old`` where equal (see ``_sharing_unchanged``), part by part."""
    if new == old and all(map(_moved_alike, new.partitions, old.partitions)):
        return old
    kept = {(part.topic, part.partition): part for part in old.partitions}
    partitions = []
    for part in new.partitions:
        earlier = kept.get((part.topic, part.partition))
        same = earlier is not None and earlier == part and _moved_alike(part, earlier)
        partitions.append(earlier if same and earlier is not None else part)
    description = old.description if new.description == old.description else new.description
    return replace(new, description=description, partitions=tuple(partitions))


def _moved_alike(one: PartitionInflight, other: PartitionInflight) -> bool:
    """Whether two share-partitions' windows record the same start-offset move."""
    return (one.window and one.window.start_offset_moved) == (
        other.window and other.window.start_offset_moved
    )


def _count_brokers(
    previous: Mapping[BrokerKey, int],
    brokers: Collection[BrokerKey],
    unlisted: Collection[BrokerFailure],
) -> dict[BrokerKey, int]:
    """Each broker's count of refreshes it did not list its groups in, one more for those
    of ``unlisted``; every broker named so far stays (a counter never goes away)."""
    counts = dict(previous)
    for key in brokers:
        counts.setdefault(key, 0)
    for failure in unlisted:
        key = _key(failure)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _unlisted_line(failure: BrokerFailure, unknown: int | None) -> str:
    """``/healthz``'s and the warning's line for a broker that did not list its groups;
    ``unknown``: how many known groups that left unknown (None: the groups are named,
    ``--group``, and each says so itself)."""
    said = f"{broker_name(_key(failure))} did not list its groups"
    if unknown is None:
        return f"{said} ({failure.error})"
    if unknown:
        left = f"{unknown} {'group' if unknown == 1 else 'groups'} unknown"
    else:
        left = "the groups it coordinates are unknown"
    return f"{said}: {left} ({failure.error})"


def _blame(result: Sample | GroupHealth, unlisted: Sequence[BrokerFailure]) -> Sample | GroupHealth:
    """A group failure that a healthy broker reported as a timeout, with the brokers that
    did not answer named as what it likely waited on (they, not it, are counted)."""
    if not isinstance(result, GroupHealth) or result.not_found:
        return result
    names = [broker_name(_key(failure)) for failure in unlisted]
    reasons = tuple(
        reason
        if any(name in reason for name in names)
        or not ("REQUEST_TIMED_OUT" in reason or "timed out" in reason)
        else f"{reason} (while {', '.join(names)} did not answer: likely what it waited on)"
        for reason in result.reasons
    )
    return replace(result, reasons=reasons)


def _keep_unread(
    report: HealthReport, previous: HealthReport, unread: Mapping[str, str]
) -> HealthReport:
    """The report, with each unread group's figures (lag, members, state) as last read:
    its status ERR, for the reason it could not be read this time."""
    if not unread:
        return report
    before = {each.group_id: each for each in previous.groups}
    return HealthReport(
        tuple(
            replace(
                before[each.group_id],
                status=Status.ERR,
                reasons=(unread[each.group_id],),
                notes=(),
            )
            if each.group_id in unread and each.group_id in before
            else each
            for each in report.groups
        )
    )
