"""A progress display for Spark jobs on stderr, read from Spark's StatusTracker.

Spark's own console progress bar is off (`pipeline.session`): it writes
carriage-return lines from the JVM that tangle with kshare's output and say
nothing in kshare's words. Instead a thread asks the StatusTracker four times
a second which stages are running and how many of their tasks are done, and
Rich draws one bar per stage on stderr. Only on a terminal: when stderr is a
pipe or a file (cron, CI, a test) nothing is drawn, and the thread never runs.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS: Final = 0.25


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class SparkProgress:
    """Context manager: Rich progress bars of the active Spark stages while the block runs."""

    def __init__(self, spark: SparkSession, *, enabled: bool) -> None:
        self._spark = spark
        self._enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress: Any = None
        self._tasks: dict[int, Any] = {}
        #: Every stage a bar was drawn for, with its task count: what the display showed.
        self.stages: dict[int, int] = {}

    def __enter__(self) -> SparkProgress:
        if not self._enabled:
            return self
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            console=Console(stderr=True),
            transient=True,
        )
        self._progress.start()
        self._thread = threading.Thread(target=self._run, name="spark-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        if self._progress is not None:
            self._progress.stop()

    def _run(self) -> None:
        tracker = self._spark.sparkContext.statusTracker()
        while not self._stop.wait(POLL_SECONDS):
            try:
                self._update(tracker)
            except Exception:  # noqa: BLE001 - a display must never fail the job
                return

    def _update(self, tracker: Any) -> None:
        active = set()
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is None:
                continue
            active.add(stage_id)
            task = self._tasks.get(stage_id)
            description = f"Spark stage {stage_id}: {info.name.split(' at ')[0]}"
            self.stages[stage_id] = info.numTasks
            if task is None:
                self._tasks[stage_id] = self._progress.add_task(
                    description, total=max(info.numTasks, 1)
                )
            else:
                self._progress.update(
                    task, completed=info.numCompletedTasks, total=max(info.numTasks, 1)
                )
        for stage_id in [each for each in self._tasks if each not in active]:
            self._progress.remove_task(self._tasks.pop(stage_id))
