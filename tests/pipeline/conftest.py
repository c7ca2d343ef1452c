"""One SparkSession for every pipeline test, on one core.

A session costs seconds to start, and the machines these tests run on are
shared, so there is one per test run, `local[1]`, without UI, with a small
shuffle, and quiet. Without the `spark` extra installed the pipeline tests
are skipped rather than failed: the rest of kshare does not need Spark.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession  # noqa: E402

from kshare_cli.pipeline.session import spark_session  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
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
