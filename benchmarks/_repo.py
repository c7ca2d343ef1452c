"""Put the repository root on ``sys.path`` for a benchmark run as ``python benchmarks/x.py``.

Python puts only the script's own folder on the path, and the test bed that a benchmark
borrows (librdkafka's mock cluster, the sandbox thread) lives in ``tests/support/``,
outside the wheel. A benchmark imports this module first, before any ``tests.support``
import: ``import _repo  # noqa: F401``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
