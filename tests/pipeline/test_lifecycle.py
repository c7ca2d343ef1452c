"""The audit's Spark lifecycle (`pipeline.lifecycle`) in the suite's Spark session, with real
SIGINTs sent to this process: a Ctrl-C is an event, not a KeyboardInterrupt inside a py4j call;
after a Ctrl-C every Spark job the batch starts is cancelled; failures come out carrying their
cause; the process's own session is left running.

The command's own Ctrl-C tests (tests/cli/test_audit_cmd.py) interrupt real ``kshare audit``
processes; these pin the same behaviour where a test can hold the pieces.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kshare_cli.pipeline.kafka_source import KafkaSourceError
from kshare_cli.pipeline.lifecycle import (
    CtrlC,
    JobFailed,
    SparkRun,
    job_failures,
    run_batch,
    spark_started,
    stream_until_interrupted,
    watch,
)

# Long enough that a job ending is the canceller's doing, not the job's own end.
_SLEEP_S = 120


def _ctrl_c() -> None:
    """What the terminal sends on Ctrl-C, to this process."""
    os.kill(os.getpid(), signal.SIGINT)


def _no_display(spark: SparkSession) -> contextlib.AbstractContextManager[object]:
    return contextlib.nullcontext()


def _sleeping_job(spark: SparkSession) -> int:
    """A Spark job that runs for minutes unless cancelled (its task sleeps in a Python
    worker, as the Kafka source's tasks read)."""
    return (
        spark.sparkContext.parallelize([0], 1)
        .map(lambda each: time.sleep(_SLEEP_S) or each)
        .count()
    )


def _quick_job(spark: SparkSession) -> int:
    return spark.range(3).count()


@pytest.fixture
def own_session(spark: SparkSession) -> Iterator[SparkRun]:
    """The suite's session as the process's own: the lifecycle must neither stop it nor
    leave it cancelling."""
    run = SparkRun(spark, None)
    yield run
    assert _quick_job(spark) == 3


def test_ctrl_c_while_entered_sets_the_event_and_calls_back_once() -> None:
    called = threading.Event()
    calls: list[str] = []

    def on_interrupt() -> None:
        calls.append(threading.current_thread().name)
        called.set()

    previous = signal.getsignal(signal.SIGINT)
    with CtrlC(on_interrupt=on_interrupt) as interrupted:
        _ctrl_c()
        _ctrl_c()  # a second Ctrl-C while the first is handled starts nothing more
        assert called.wait(30)
        assert interrupted.is_set()
    assert signal.getsignal(signal.SIGINT) is previous
    assert len(calls) == 1 and calls[0] != threading.main_thread().name


def test_ctrl_c_before_a_job_starts_cancels_the_jobs_started_after_it(
    own_session: SparkRun,
) -> None:
    """A Ctrl-C while no Spark job runs (the Kafka source plans its read in a Python worker
    between jobs) must still stop the jobs the batch starts afterwards: both are cancelled,
    and the batch ends with KeyboardInterrupt (exit 130), not a job failure."""
    spark = own_session.spark
    seen: list[BaseException] = []

    def work() -> int:
        _ctrl_c()
        for _ in range(2):
            try:
                _sleeping_job(spark)
            except job_failures() as error:
                seen.append(error)
        return 0

    with pytest.raises(KeyboardInterrupt):
        run_batch(own_session, work, display=_no_display)

    assert len(seen) == 2
    assert all("cancel" in str(error).lower() for error in seen), seen


def test_ctrl_c_during_a_job_cancels_it(own_session: SparkRun) -> None:
    spark = own_session.spark
    tracker = spark.sparkContext.statusTracker()
    running = threading.Event()

    def interrupt_once_running() -> None:
        while not tracker.getActiveJobsIds():
            time.sleep(0.05)
        running.set()
        _ctrl_c()

    threading.Thread(target=interrupt_once_running, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_batch(own_session, lambda: _sleeping_job(spark), display=_no_display)
    assert running.is_set()


def test_a_failure_is_job_failed_with_its_cause_and_nothing_is_left_cancelling(
    own_session: SparkRun,
) -> None:
    failure = KafkaSourceError("topic orders partition 0: the read failed")

    def work() -> int:
        raise failure

    with pytest.raises(JobFailed) as raised:
        run_batch(own_session, work, display=_no_display)
    assert (raised.value.cause, raised.value.log_dir) == (failure, None)
    # No Ctrl-C came: the batch's answer, and the next job runs to its end.
    assert run_batch(own_session, lambda: _quick_job(own_session.spark), display=_no_display) == 3


def test_the_display_is_entered_around_the_batch(own_session: SparkRun) -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def display(spark: SparkSession) -> Iterator[None]:
        events.append("shown")
        yield
        events.append("hidden")

    run_batch(own_session, lambda: events.append("work"), display=display)
    assert events == ["shown", "work", "hidden"]


def test_the_processs_own_session_is_kept_and_left_running(spark: SparkSession) -> None:
    with spark_started("local[1]") as run:
        assert (run.spark, run.log_dir) == (spark, None)
    assert _quick_job(spark) == 3


def _rate_stream(spark: SparkSession) -> Any:
    return spark.readStream.format("rate").load().writeStream.format("noop").start()


def test_ctrl_c_stops_watching_a_stream_not_the_stream(spark: SparkSession) -> None:
    """--follow and capture stop between micro-batches: the Ctrl-C ends the wait, and the
    caller stops the stream it still holds."""
    query = _rate_stream(spark)
    watching = threading.Event()

    def interrupt_once_running() -> None:
        while query.lastProgress is None and query.isActive:
            time.sleep(0.05)
        if watching.is_set() and query.isActive:  # no Ctrl-C once watch has returned
            _ctrl_c()

    try:
        watching.set()
        threading.Thread(target=interrupt_once_running, daemon=True).start()
        failure = watch(query, every_s=0.1)
        watching.clear()
        assert (failure, query.isActive) == (None, True)
    finally:
        query.stop()


def test_a_stream_that_fails_is_job_failed(own_session: SparkRun) -> None:
    spark = own_session.spark

    def start() -> Any:
        def fail(batch: Any, batch_id: int) -> None:
            raise KafkaSourceError("the micro-batch failed")

        return spark.readStream.format("rate").load().writeStream.foreachBatch(fail).start()

    with pytest.raises(JobFailed) as raised:
        stream_until_interrupted(own_session, start)
    assert "the micro-batch failed" in str(raised.value.cause)
