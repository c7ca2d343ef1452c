"""``kshare exporter`` at run time: the HTTP endpoints and the refresh loop, over one ``Session``.

Imported only once the command runs. The command hands in the page renderers
(``render/metrics.py``): this layer serves bytes, it does not draw them. The
HTTP server answers from its own threads, from the current snapshot only; the
refresh loop runs on the main thread's event loop, where SIGTERM and SIGINT set
the stop event: the server shuts down, the state-topic reader closes, and the
command exits 0.

A state-topic read is blocking and runs in a thread that cannot be cancelled
(``StateReads``'s daemon thread); against a hung broker it lasts its whole share
of ``--timeout``. Stopping must not wait for it: the loop's worker threads are
daemon threads that shutdown does not join, and the reader is closed only if it
is free within ``CLOSE_WAIT_S`` (otherwise the process ends around it).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import queue
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final, ParamSpec, Protocol, TypeVar

from prometheus_client import CONTENT_TYPE_LATEST

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import ConnectionFailed
from kshare_cli.services.dead_letters import KeptDeadLetterQueues
from kshare_cli.services.exporter import (
    STATE_WAIT_SHARE,
    ExporterSnapshot,
    OneStateReadPerRefresh,
    Refresher,
    StateReads,
    TimeLagLookup,
)
from kshare_cli.services.health import Thresholds
from kshare_cli.services.inflight import InflightService
from kshare_cli.services.session import Session
from kshare_cli.services.time_lag import health_time_lags
from kshare_cli.state.sources import TailingStateSource

__all__ = ["MetricsBody", "build_refresher", "make_server", "serve"]

#: Worker threads for the blocking calls of a refresh (its groups' state reads).
DAEMON_WORKERS: Final = 8
#: Connections the kernel queues for the HTTP server before refusing (Prometheus HA
#: pairs, federation and humans can scrape at once).
LISTEN_BACKLOG: Final = 128
#: How long stopping waits for the state-topic reader to be free before leaving it.
CLOSE_WAIT_S: Final = 0.5

P = ParamSpec("P")
T = TypeVar("T")


class MetricsBody(Protocol):
    """The ``/metrics`` page (``render.metrics.MetricsPage``): published in the refresh,
    copied by each scrape."""

    def publish(self, snapshot: ExporterSnapshot | None = None) -> None: ...

    def body(self, *, gzipped: bool = False) -> bytes: ...


#: The cyclic garbage collector's thresholds while the exporter serves (CPython's are
#: 700, 10, 10). A refresh allocates a few objects per share-partition that live until
#: the next one, so with CPython's full collections ran every few refreshes over a heap
#: that grows with the groups, more often the more groups: at 3,000 groups x 10
#: partitions they took over half of a refresh's CPU (7.8 s a refresh, 4.1 s with these;
#: benchmarks/exporter.py). Cycles are still collected, less often.
GC_THRESHOLDS: Final = (50_000, 20, 100)


def tune_gc() -> None:
    """Set ``GC_THRESHOLDS`` for this process: what ``serve`` does before its first refresh."""
    gc.set_threshold(*GC_THRESHOLDS)


def serve(
    settings: ConnectionSettings,
    group_ids: Sequence[str] | None,
    thresholds: Thresholds,
    interval_s: float,
    timeout_s: float,
    listen: tuple[str, int],
    metrics_page: Callable[[Callable[[], ExporterSnapshot]], MetricsBody],
    index_html: str,
    say: Callable[[str], None],
    *,
    time_lag: bool = False,
) -> None:
    """Serve until SIGTERM or SIGINT; ``say`` writes one stderr line (the bound address,
    each failed refresh). ``metrics_page`` makes the ``/metrics`` page over the current
    snapshot; ``index_html`` is ``/``."""
    refresher, source = build_refresher(
        settings, group_ids, thresholds, interval_s, timeout_s, say, time_lag=time_lag
    )
    page = metrics_page(lambda: refresher.snapshot)
    refresher.on_snapshot = page.publish  # rendered in the refresh, not in a scrape
    try:
        server = make_server(listen, page, refresher, interval_s, index_html)
    except OSError as error:
        source.close()
        refresher.close()
        raise ConnectionFailed(
            f"cannot listen on {listen[0]}:{listen[1]}: {error.strerror or error}"
        ) from None
    thread = threading.Thread(target=server.serve_forever, name="kshare-exporter-http")
    thread.start()
    host, port = server.server_address[:2]
    say(f"kshare: exporter listening on http://{_host_text(str(host))}:{port}/metrics")
    tune_gc()
    try:
        asyncio.run(_refresh_until_stopped(refresher))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        closing = threading.Thread(target=source.close, name="kshare-state-close", daemon=True)
        closing.start()
        releasing = threading.Thread(target=refresher.close, name="kshare-dlq-close", daemon=True)
        releasing.start()
        closing.join(CLOSE_WAIT_S)
        releasing.join(CLOSE_WAIT_S)


def build_refresher(
    settings: ConnectionSettings,
    group_ids: Sequence[str] | None,
    thresholds: Thresholds,
    interval_s: float,
    timeout_s: float,
    say: Callable[[str], None],
    *,
    time_lag: bool = False,
) -> tuple[Refresher, TailingStateSource]:
    """The refresher and the state-topic reader it shares across refreshes (the caller
    closes it); ``benchmarks/exporter.py`` measures this same pair. ``time_lag``: each
    refresh also reads the oldest unacknowledged record of every share-partition with
    lag (one fetch each, within ``timeout_s``) for ``kshare_share_partition_lag_seconds``."""
    # The session's client is opened per refresh, under the session's deadline of one
    # --timeout per refresh (``bounded``), which every RPC of the refresh shares. The
    # caller closes the reader.
    session = Session(settings, timeout_s)
    source = session.tailing_state(group_ids)
    reads = StateReads(source)

    @asynccontextmanager
    async def open_service() -> AsyncIterator[InflightService]:
        async with session.admin() as admin:
            state = OneStateReadPerRefresh(reads, interval_s * STATE_WAIT_SHARE)
            yield session.inflight(admin, state)

    refresher = Refresher(
        open_service,
        group_ids,
        thresholds,
        interval_s,
        timeout_s,
        on_error=lambda message: say(f"kshare: warning: refresh failed: {message}"),
        on_warning=lambda message: say(f"kshare: warning: {message}"),
        time_lag=_time_lag_lookup(settings) if time_lag else None,
        bounded=session.bounded,
        dead_letters=KeptDeadLetterQueues(
            session,
            stopped_early="the refresh's --timeout ended the read (the next refresh goes on)",
        ),
    )
    return refresher, source


def _time_lag_lookup(settings: ConnectionSettings) -> TimeLagLookup:
    config = settings.confluent_config()
    return lambda report, timeout_s: health_time_lags(report, config, timeout_s)


def make_server(
    listen: tuple[str, int],
    metrics: MetricsBody,
    refresher: Refresher,
    interval_s: float,
    page: str,
) -> ThreadingHTTPServer:
    """The exporter's HTTP server, bound and not yet serving: a function of its own so
    that ``benchmarks/exporter.py`` measures the very server that production runs."""
    page_bytes = page.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 -- http.server's name
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                if "gzip" in self.headers.get("Accept-Encoding", ""):
                    body = metrics.body(gzipped=True)
                    self._send(200, CONTENT_TYPE_LATEST, body, encoding="gzip")
                else:
                    self._send(200, CONTENT_TYPE_LATEST, metrics.body())
            elif path == "/healthz":
                ok, reason = refresher.snapshot.healthy(interval_s, time.monotonic())
                self._send(200 if ok else 503, "text/plain; charset=utf-8", reason.encode() + b"\n")
            elif path == "/":
                self._send(200, "text/html; charset=utf-8", page_bytes)
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics\n")

        def _send(
            self, code: int, content_type: str, body: bytes, encoding: str | None = None
        ) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            if encoding is not None:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            """Scrapes are not worth a stderr line each."""

    server = _Server(listen, Handler)
    server.daemon_threads = True
    return server


class _Server(ThreadingHTTPServer):
    """http.server's listen backlog is 5: a sixth scraper connecting at the same moment
    has its SYN dropped and retries a second later, which is most of a p99."""

    request_queue_size = LISTEN_BACKLOG


async def _refresh_until_stopped(refresher: Refresher) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_DaemonThreads())
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop.set)
    refreshing = asyncio.create_task(refresher.run(stop))
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({refreshing, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if refreshing.done():
        stopped.cancel()
        refreshing.result()  # the refresh loop only ends early on a defect: report it
        return
    refreshing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await refreshing


class _DaemonThreads(ThreadPoolExecutor):
    """``asyncio.to_thread``'s executor here: a few daemon worker threads, never joined.

    The default pool's threads are joined by ``asyncio.run`` and at interpreter
    exit, so a state read stuck on a hung broker would hold SIGTERM for the rest
    of its timeout; a daemon thread ends with the process instead. A subclass of
    the pool only because asyncio accepts nothing else as the default executor.
    """

    def __init__(self, workers: int = DAEMON_WORKERS) -> None:
        super().__init__(max_workers=workers)
        self._daemon_jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._daemon_lock = threading.Lock()
        self._daemon_started = 0
        self._daemon_limit = workers

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:  # noqa: BLE001 -- handed to the awaiting task
                future.set_exception(error)

        self._daemon_jobs.put(run)
        with self._daemon_lock:
            if self._daemon_started < self._daemon_limit:
                self._daemon_started += 1
                threading.Thread(
                    target=self._work, name="kshare-exporter-worker", daemon=True
                ).start()
        return future

    def _work(self) -> None:
        while True:
            self._daemon_jobs.get()()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the threads are daemons, and a stuck one must not hold the exit."""


def _host_text(host: str) -> str:
    return f"[{host}]" if ":" in host else host
