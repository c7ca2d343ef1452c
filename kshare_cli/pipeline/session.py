"""The SparkSession the audit jobs run in, local or on a cluster.

Two things go wrong when a PySpark session is built the obvious way from a
virtualenv, and both only show up inside a task: Spark starts its Python
workers with whatever `python3` is first on PATH, which lacks kshare,
confluent-kafka and pyarrow ("No module named pyarrow" from the planning
worker); and Spark's INFO logging and console progress bars interleave with
kshare's own output. So every job builds its session here.

A third goes wrong before any of that: without a Java runtime, or with one
older than Spark 4 needs, PySpark's launcher dies and PySpark says only
``[JAVA_GATEWAY_EXITED]``. ``check_java`` finds the java Spark's launcher
would run (``$JAVA_HOME/bin/java``, else ``java`` on PATH) and asks it its
version -- a few tens of milliseconds, against seconds for Spark -- so that
the command can say what to install instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from kshare_cli.errors import UsageError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "JAVA_MINIMUM",
    "JavaMissing",
    "check_java",
    "spark_running",
    "spark_session",
]

DEFAULT_MASTER: Final = "local[*]"
#: Spark 4's JVM is built for Java 17.
JAVA_MINIMUM: Final = 17
JAVA_INSTALL: Final = (
    "install one (apt-get install openjdk-17-jre-headless) or set JAVA_HOME to one"
)
_JAVA_VERSION: Final = re.compile(r'version "(\d+)(?:\.(\d+))?')
_JAVA_VERSION_TIMEOUT_S: Final = 30.0


class JavaMissing(UsageError):
    """No Java runtime Spark can start, found before Spark tries: a setup to fix (exit 2)."""


def check_java(environ: Mapping[str, str] | None = None) -> str:
    """The java Spark's launcher will run, when it is Java 17 or later; else JavaMissing.

    The same lookup as Spark's ``bin/spark-class``: ``$JAVA_HOME/bin/java``
    when JAVA_HOME is set (even when it does not exist), else ``java`` on
    PATH. A version this cannot read is let through: Spark knows better.
    """
    environ = os.environ if environ is None else environ
    needs = f"kshare audit needs a Java {JAVA_MINIMUM}+ runtime"
    java_home = environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise JavaMissing(f"{needs}: JAVA_HOME={java_home} has no bin/java; {JAVA_INSTALL}")
    else:
        found = shutil.which("java", path=environ.get("PATH", os.defpath))
        if found is None:
            raise JavaMissing(f"{needs}, and there is no java on PATH; {JAVA_INSTALL}")
        java = found
    try:
        answer = subprocess.run(
            [java, "-version"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_JAVA_VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise JavaMissing(
            f"{needs}: {java} -version did not answer in {_JAVA_VERSION_TIMEOUT_S:.0f} s; "
            f"{JAVA_INSTALL}"
        ) from None
    except OSError as error:
        raise JavaMissing(
            f"{needs}: {java} cannot run ({error.strerror}); {JAVA_INSTALL}"
        ) from None
    if answer.returncode != 0:
        raise JavaMissing(
            f"{needs}: {java} -version failed (exit {answer.returncode}); {JAVA_INSTALL}"
        )
    major = java_major_version(answer.stderr + answer.stdout)
    if major is not None and major < JAVA_MINIMUM:
        raise JavaMissing(f"{needs}, and {java} is Java {major}; {JAVA_INSTALL}")
    return java


def java_major_version(text: str) -> int | None:
    """17 from ``openjdk version "17.0.15"``, 8 from ``java version "1.8.0_351"``; None when
    ``java -version`` said no version (a JAVA_TOOL_OPTIONS line comes first, so search)."""
    found = _JAVA_VERSION.search(text)
    if found is None:
        return None
    major = int(found.group(1))
    if major == 1 and found.group(2) is not None:
        return int(found.group(2))
    return major


def spark_running() -> bool:
    """Whether this process already has a SparkContext (a test's, a notebook's), any thread.

    The one read of PySpark's private ``SparkContext._active_spark_context``: the public
    ``SparkSession.getActiveSession()`` sees only the calling thread's session, and
    ``SparkContext.getOrCreate()`` would start one. Bounded by the spark extra's
    ``pyspark<5`` and checked by tests/test_third_party_bounds.py.
    """
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


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
    from pyspark.sql import SparkSession

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
