"""The SparkSession the audit jobs run in, local or on a cluster.

Two things go wrong when a PySpark session is built the obvious way from a
virtualenv, and both only show up inside a task: Spark starts its Python
workers with whatever `python3` is first on PATH, which lacks kshare,
confluent-kafka and pyarrow ("No module named pyarrow" from the planning
worker); and Spark's INFO logging and console progress bars interleave with
kshare's own output. So every job builds its session here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final

from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "spark_session"]

DEFAULT_MASTER: Final = "local[*]"


def spark_session(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "kshare audit",
    config: Mapping[str, str] | None = None,
    log_level: str = "WARN",
) -> SparkSession:
    """A session whose Python workers run this interpreter (and so see kshare).

    On a real cluster the executors need the same Python environment
    installed at the same path; config can point `spark.pyspark.python`
    elsewhere when they do not. Returns the active session when there is one
    (Spark allows one per process), with config applied to what can still
    change.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .config("spark.ui.showConsoleProgress", "false")
        # The state topic's timestamps are UTC instants; the session zone decides how
        # they print, and a machine's local zone would make two runs disagree.
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session
