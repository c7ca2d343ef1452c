"""The exporter's refresh: every interval, one read of the groups into an immutable snapshot.

Scrapes never wait on Kafka: a background refresh (``Refresher.run``) reads the
groups on its own interval and swaps in a new ``ExporterSnapshot``, handing it
to ``on_snapshot`` (the exporter renders its ``/metrics`` body there, so a scrape
only copies bytes); ``/healthz`` reads whatever snapshot is current. A
refresh that fails as a whole (the cluster unreachable, ``--timeout`` passed)
keeps the previous figures, counts the error and leaves ``/healthz`` to turn
503 once no refresh has succeeded for three intervals. A refresh in which every
group failed to be read (their coordinator hung or gone) is such a failure too:
figures of a moment ago are worth more to a dashboard than no figures, and the
scrape-time age (``kshare_exporter_last_refresh_age_seconds``) says how old they
are. When only some groups fail, their last figures (share-partitions, summed
lag, members, state, time lag) are kept and their status is ERR; each group's
own error count and the time its figures were last read say which figures are
old and since when, and ``/healthz`` (still 200: the exporter works) names the
groups the last refresh could not read, and why.

A state topic that cannot be read (no READ on ``__share_group_state``) is no
failure: the in-flight figures are left out and the reason is said once, not
at every refresh, until the windows come back.

The state topic is read once per refresh (``OneStateReadPerRefresh``), not once
per group: each read waits a moment for what is new, and a thousand groups read
one after the other held a refresh for a thousand such moments.

Stalls need two samples ``stall_after_s`` apart: the refresher keeps the samples
of earlier refreshes until one is old enough, and evaluates against it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Final

from kshare_cli.admin.inflight import InflightService, StateTopicUnavailable, TailingStateSource
from kshare_cli.errors import KshareError
from kshare_cli.services.health import (
    GroupHealth,
    HealthReport,
    Sample,
    Status,
    Thresholds,
    evaluate_samples,
)
from kshare_cli.services.sampling import sample_groups
from kshare_cli.services.time_lag import TimeLagKey
from kshare_cli.state.replay import SharePartitionKey, SharePartitionState

__all__ = [
    "BACKSTOP_S",
    "HEALTHY_INTERVALS",
    "ExporterSnapshot",
    "OneStateReadPerRefresh",
    "Refresher",
    "TimeLagLookup",
]

#: ``/healthz`` is 200 while the last successful refresh is at most this many intervals old.
HEALTHY_INTERVALS: Final = 3
#: The refresh's own timeout fires this long after ``--timeout``, so that the client's
#: deadline, which names the broker that did not answer, is what ``/healthz`` reports.
BACKSTOP_S: Final = 1.0


#: How many groups the last refresh could not read ``/healthz`` names (then "and N more").
UNREAD_NAMED: Final = 5


#: The ages of the oldest unacknowledged records of a refresh's report (blocking, run in a
#: worker thread): ``services.time_lag.health_time_lags`` bound to a client's settings.
TimeLagLookup = Callable[[HealthReport], Mapping[TimeLagKey, float | None]]


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
    ``unread`` names the groups the last refresh could not read, with why."""

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


class OneStateReadPerRefresh:
    """A ``StateSource`` for one refresh: the first group's call reads the state topic,
    every other group is answered from that read (or gets the same refusal).

    Make one per refresh, over the ``TailingStateSource`` that lives as long as the
    exporter. Its calls come from worker threads, hence the lock.
    """

    def __init__(self, source: TailingStateSource) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._by_group: dict[str, dict[SharePartitionKey, SharePartitionState]] | None = None
        self._refusal: StateTopicUnavailable | None = None

    def refresh(
        self, group_ids: Collection[str], timeout_s: float
    ) -> Mapping[SharePartitionKey, SharePartitionState]:
        with self._lock:
            if self._by_group is None:
                self._by_group = {}
                try:
                    self._source.refresh((), timeout_s)
                except StateTopicUnavailable as refused:
                    self._refusal = refused
                for key, state in self._source.states().items():
                    self._by_group.setdefault(key.group_id, {})[key] = state
            if self._refusal is not None:
                raise StateTopicUnavailable(self._refusal.reason)
            return {
                key: state
                for group_id in group_ids
                for key, state in self._by_group.get(group_id, {}).items()
            }


#: Opens what one refresh reads through (a client on the settings), closed after it.
OpenService = Callable[[], AbstractAsyncContextManager[InflightService]]


class Refresher:
    """Reads the groups every ``interval_s`` and keeps the current ``ExporterSnapshot``.

    ``group_ids`` None means every share group, listed again at each refresh, so a
    new group appears without a restart.
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
    ) -> None:
        self._time_lag = time_lag
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
        self._group_ids = None if group_ids is None else tuple(group_ids)
        self._thresholds = thresholds
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._history: list[tuple[float, tuple[Sample | GroupHealth, ...]]] = []
        self.snapshot = ExporterSnapshot()

    async def refresh(self) -> None:
        """One refresh; a failure is counted and named, never raised."""
        started = time.monotonic()
        try:
            async with asyncio.timeout(self._timeout_s + BACKSTOP_S):
                latest = await self._read()
        except (KshareError, TimeoutError, OSError) as error:
            self._failed(str(error) or f"no answer within {self._timeout_s:g} s")
            return
        failed = [each for each in latest if isinstance(each, GroupHealth) and not each.not_found]
        if failed and len(failed) == len(latest):
            self._failed(
                "; ".join(sorted({reason for each in failed for reason in each.reasons})),
                [each.group_id for each in failed],
            )
            return
        finished = time.monotonic()
        read_at = time.time()
        previous = self.snapshot
        unread = {each.group_id: "; ".join(each.reasons) for each in failed}
        kept_at = self.history_clock()
        report = evaluate_samples(latest, self._earlier(kept_at), self._thresholds)
        self._history.append((kept_at, latest))
        kept = {sample.group.group_id: sample for sample in previous.samples}
        samples = tuple(
            each if isinstance(each, Sample) else kept[each.group_id]
            for each in latest
            if isinstance(each, Sample) or (not each.not_found and each.group_id in kept)
        )
        self._note_windows(latest)
        time_lags: dict[TimeLagKey, float] = {}
        if self._time_lag is not None:
            read = HealthReport(tuple(g for g in report.groups if g.group_id not in unread))
            ages = await asyncio.to_thread(self._time_lag, read)
            time_lags = {key: age for key, age in ages.items() if age is not None}
            time_lags.update((k, v) for k, v in previous.time_lags.items() if k[0] in unread)
        # Only the groups of this refresh are remembered: a deleted group's entries go.
        listed = [
            each.group.group_id if isinstance(each, Sample) else each.group_id
            for each in latest
            if isinstance(each, Sample) or not each.not_found
        ]
        self._swap(
            replace(
                previous,
                samples=samples,
                report=_keep_unread(report, previous.report, unread),
                refreshed_at=read_at,
                refreshed_monotonic=finished,
                refresh_seconds=time.monotonic() - started,
                time_lags=time_lags,
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
            )
        )

    def _failed(self, message: str, group_ids: Collection[str] | None = None) -> None:
        """A refresh that read nothing: every group of ``group_ids`` (None: every group
        known so far) missed it."""
        previous = self.snapshot
        missed = set(previous.group_errors if group_ids is None else group_ids)
        errors = dict(previous.group_errors)
        for group_id in missed:
            errors[group_id] = errors.get(group_id, 0) + 1
        self._swap(
            replace(
                previous,
                refresh_errors=previous.refresh_errors + 1,
                last_error=message,
                group_errors=errors,
            )
        )
        if self._on_error is not None:
            self._on_error(message)

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

    async def _read(self) -> tuple[Sample | GroupHealth, ...]:
        async with self._open_service() as service:
            ids = self._group_ids
            if ids is None:
                ids = await service.admin.all_group_ids()
            return await sample_groups(service, ids)

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
            replace(before[each.group_id], status=Status.ERR, reasons=each.reasons, notes=())
            if each.group_id in unread and each.group_id in before
            else each
            for each in report.groups
        )
    )
