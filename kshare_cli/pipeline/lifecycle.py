"""The life of the Spark session an audit runs in: started, interrupted, stopped.

A JVM costs seconds to start and ignores SIGINT, and PySpark's own SIGINT
handling raises KeyboardInterrupt inside whatever py4j call the main thread
is in, which fails the call with a trace on stderr and leaves the job, or
the stream's micro-batch, to fail with it. So the audit owns Ctrl-C while
Spark runs:

* while the session starts, a Ctrl-C lets the start finish, then stops it
  and removes its log (``spark_started``);
* while a batch job runs, it cancels the Spark jobs running and every one
  started after it, from a thread of its own (``run_batch``): the Kafka
  source plans its read in a Python worker, between jobs, where a single
  cancel would catch nothing;
* while a stream runs (``--follow``, ``capture``), it stops waiting, and the
  stream is stopped between micro-batches (``follow_until_interrupted``,
  ``stream_until_interrupted``).

Failures of the jobs come out as ``JobFailed``, carrying the failure and the
log of the session that ran it, for the service to word as one line.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from kshare_cli.pipeline.follow import AuditFollow

__all__ = [
    "SPARK_LOG",
    "CtrlC",
    "JobCanceller",
    "JobFailed",
    "SparkRun",
    "follow_until_interrupted",
    "job_failures",
    "run_batch",
    "spark_started",
    "start_spark",
    "stream_until_interrupted",
    "watch",
]

#: The file, in a directory of its own, that a Spark session this module starts logs to.
SPARK_LOG: Final = "spark.log"
#: How often a cancelled batch cancels again the jobs started since.
CANCEL_EVERY_S: Final = 0.2
#: How often a stream's watch looks whether the stream ended.
WATCH_EVERY_S: Final = 0.5

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SparkRun:
    """The session an audit runs in and the directory of its log: None when the process
    already had the session (a test, a notebook), which is then left running."""

    spark: SparkSession
    log_dir: str | None


class JobFailed(Exception):
    """A Spark job, stream or dead-letter load failed: the failure, and the log directory of
    the session this module started (None: the process's own session)."""

    def __init__(self, cause: BaseException, log_dir: str | None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.log_dir = log_dir


def job_failures() -> tuple[type[BaseException], ...]:
    """What a failed Spark job, capture or dead-letter load raises."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    from kshare_cli.pipeline.dead_letters import DeadLetterError
    from kshare_cli.pipeline.kafka_source import KafkaSourceError

    return (PySparkException, Py4JError, KafkaSourceError, DeadLetterError)


def start_spark(master: str) -> SparkRun:
    """The session to run in; its log directory when this call started it (and so the caller
    stops it).

    A process that already has a session (a test, a notebook) keeps it. A new
    one gets its JVM's stderr -- Spark's startup and log lines -- in a log
    file (SPARK_LOG), so that stderr carries kshare's lines only; the caller
    names the file if the job fails and removes it if it succeeds.
    """
    from kshare_cli.pipeline.session import spark_running, spark_session

    if spark_running():
        return SparkRun(spark_session(master, log_level="ERROR"), None)
    config: dict[str, str] = {}
    if master.startswith("local"):
        # A local run's UI would only hold a port; its shuffles are small.
        config["spark.ui.enabled"] = "false"
        config["spark.sql.shuffle.partitions"] = str(max(2 * (os.cpu_count() or 1), 4))
    log_dir = tempfile.mkdtemp(prefix="kshare-audit-")
    log_path = os.path.join(log_dir, SPARK_LOG)
    saved = os.dup(2)
    try:
        with open(log_path, "ab") as log:
            os.dup2(log.fileno(), 2)
            try:
                session = spark_session(master, config=config, log_level="ERROR")
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
    return SparkRun(session, log_dir)


@contextmanager
def spark_started(master: str) -> Iterator[SparkRun]:
    """A Spark session for the block; one this started is stopped after the block, and its
    log removed unless the block failed (the failure's line names it).

    PySpark's launcher leaves its JVM running if interrupted while it waits for it (the
    JVM ignores SIGINT): a Ctrl-C while Spark starts lets the start finish, then stops it,
    then raises KeyboardInterrupt.
    """
    starting = CtrlC()
    with starting:
        run = start_spark(master)
    if starting.is_set():
        if run.log_dir is not None:
            run.spark.stop()
            shutil.rmtree(run.log_dir, ignore_errors=True)
        raise KeyboardInterrupt
    succeeded = False
    try:
        yield run
        succeeded = True
    finally:
        if run.log_dir is not None:
            run.spark.stop()
            if succeeded:
                shutil.rmtree(run.log_dir, ignore_errors=True)


def run_batch(
    run: SparkRun,
    work: Callable[[], T],
    *,
    display: Callable[[SparkSession], AbstractContextManager[object]],
) -> T:
    """work's answer, with display entered around it; a Ctrl-C cancels its Spark jobs and
    raises KeyboardInterrupt once work has returned or failed; a failure is JobFailed."""
    failures = job_failures()
    cancelling = JobCanceller(run.spark)
    cancel = CtrlC(on_interrupt=cancelling.run)
    try:
        with display(run.spark), cancel:
            answer = work()
    except failures as error:
        if cancel.is_set():
            raise KeyboardInterrupt from None
        raise JobFailed(error, run.log_dir) from None
    finally:
        cancelling.stop()
    if cancel.is_set():
        raise KeyboardInterrupt
    return answer


def follow_until_interrupted(run: SparkRun, follow: AuditFollow) -> None:
    """Start the follow and run it until Ctrl-C or its end; its first failure (the follow's
    own, which names what failed, before the stream's) is JobFailed."""
    failures = job_failures()
    query = follow.start()
    try:
        if (failed := watch(query)) is not None:
            raise JobFailed(follow.failure or failed, run.log_dir)
    except failures as error:
        raise JobFailed(follow.failure or error, run.log_dir) from None
    finally:
        follow.stop()
    if follow.failure is not None:
        raise JobFailed(follow.failure, run.log_dir)


def stream_until_interrupted(run: SparkRun, start: Callable[[], StreamingQuery]) -> None:
    """Start the stream and run it until Ctrl-C or its end, then stop it; a failure is
    JobFailed."""
    failures = job_failures()
    try:
        query = start()
        failed = watch(query)
        query.stop()
    except failures as error:
        raise JobFailed(error, run.log_dir) from None
    if failed is not None:
        raise JobFailed(failed, run.log_dir)


def watch(query: StreamingQuery, every_s: float = WATCH_EVERY_S) -> BaseException | None:
    """Wait until the stream ends or Ctrl-C (which stops waiting, not the stream); the
    stream's failure, or None."""
    interrupted = CtrlC()
    with interrupted:
        while not interrupted.wait(every_s) and query.isActive:
            pass
        return None if interrupted.is_set() else query.exception()


class JobCanceller:
    """After a Ctrl-C, cancels the Spark jobs running and every one started later, until
    stopped.

    A Ctrl-C while no job runs (the Kafka source plans its read in a Python worker, the
    job counts what it read between jobs) cancelled nothing, and the jobs started after
    it ran to their end before the command exited 130: minutes on a big state topic.
    """

    def __init__(self, spark: SparkSession, every_s: float = CANCEL_EVERY_S) -> None:
        self._spark = spark
        self._every_s = every_s
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # no cancel once stop() returned: Spark stops next

    def run(self) -> None:
        while True:
            with self._lock:
                if self._stopped.is_set():
                    return
                self._spark.sparkContext.cancelAllJobs()
            self._stopped.wait(self._every_s)

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()


class CtrlC(threading.Event):
    """While entered, the first Ctrl-C (SIGINT) sets this event (and starts on_interrupt in
    a thread of its own) instead of raising KeyboardInterrupt.

    PySpark's own handler, like Python's default, raises KeyboardInterrupt in
    the main thread, which is usually inside a py4j call to the JVM: py4j
    then fails the call, logs a trace of it on stderr, and the job or the
    stream's micro-batch fails with it. With this, --follow stops between
    micro-batches and exits 0, and a batch job's Spark jobs are cancelled
    from another thread (its own py4j connection) and the command exits 130
    with one line. The handler is restored on exit, so a second Ctrl-C while
    stopping still interrupts. Outside the main thread (where Python allows
    no signal handler) it only never gets set.
    """

    def __init__(self, on_interrupt: Callable[[], object] | None = None) -> None:
        super().__init__()
        self._on_interrupt = on_interrupt
        self._previous: Any = None

    def _handle(self, signum: int, frame: object) -> None:
        first = not self.is_set()
        self.set()
        if first and self._on_interrupt is not None:
            threading.Thread(target=self._on_interrupt, daemon=True).start()

    def __enter__(self) -> CtrlC:
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
