"""The Spark progress display: bars per running stage on a terminal, nothing otherwise."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kshare_cli.cli.audit_progress import SparkProgress


def _slow_job(spark: Any) -> None:
    def slow(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            time.sleep(1.5)
            yield batch

    spark.range(0, 100, numPartitions=3).mapInArrow(slow, "id long").write.format("noop").mode(
        "overwrite"
    ).save()


def test_a_running_stage_gets_a_bar_with_its_task_count(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with SparkProgress(spark, enabled=True) as progress:
        _slow_job(spark)

    assert 3 in progress.stages.values()
    assert capsys.readouterr().out == ""  # stdout is data: the display is on stderr


def test_off_when_stderr_is_not_a_terminal(spark: Any) -> None:
    with SparkProgress(spark, enabled=False) as progress:
        _slow_job(spark)

    assert progress.stages == {}
