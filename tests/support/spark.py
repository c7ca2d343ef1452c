"""One SparkSession for every test that needs Spark, on one core.

A session costs seconds to start, and the machines these tests run on are
shared, so there is one per test run, `local[1]`, without UI, with a small
shuffle, and quiet. `kshare audit` run in-process (CliRunner) finds it
active and runs in it instead of starting another. Without the `spark`
extra the tests that ask for it are skipped rather than failed: the rest of
kshare does not need Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from kshare_cli.pipeline.session import spark_session

    session = spark_session(
        "local[1]",
        app_name="kshare pipeline tests",
        config={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "1",
            "spark.driver.memory": "1g",
        },
        log_level="ERROR",
    )
    try:
        yield session
    finally:
        session.stop()
