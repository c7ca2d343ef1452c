"""Apache Kafka's own command-line tools beside a real cluster, for byte-for-byte checks.

The recordings under ``tests/golden/`` say what one release's tools printed; a real
cluster may run another release (``kafka-configs.sh`` lists other configs and synonyms
on 4.4 than on 4.2). With ``KSHARE_TEST_KAFKA_HOME`` naming a Kafka binary distribution
(``bin/``, ``libs/``) of the release that ``KSHARE_TEST_BOOTSTRAP``'s cluster runs --
a Kafka built as ``docs/real-kafka.md`` says, or Apache's tarball -- a test compares kshare's
``-o plain`` with what Kafka's tool prints on the same cluster at the same moment.
``docs/real-kafka.md`` says how to run the suite that way.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: A JVM start and one admin round trip on a loaded two-core machine take seconds.
TOOL_DEADLINE_S = 120


def kafka_home() -> Path | None:
    """The Kafka distribution whose tools the tests may run, or None when none was named."""
    home = os.environ.get("KSHARE_TEST_KAFKA_HOME")
    return Path(home) if home else None


def run_kafka_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``bin/<tool>.sh --bootstrap-server <the cluster> ARGS`` (with the cluster's client
    properties as ``--command-config``), or None without ``KSHARE_TEST_KAFKA_HOME`` or off
    a real cluster: the sandbox's expectations are the recordings."""
    home = kafka_home()
    bootstrap = os.environ.get("KSHARE_TEST_BOOTSTRAP")
    if home is None or not bootstrap:
        return None
    argv = [str(home / "bin" / f"{tool}.sh"), "--bootstrap-server", bootstrap, *args]
    command_config = os.environ.get("KSHARE_TEST_COMMAND_CONFIG")
    if command_config:
        argv += ["--command-config", command_config]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=TOOL_DEADLINE_S, check=False
    )
