"""The pipeline tests need the `spark` extra; without it they are skipped, not failed.

The session itself is the suite-wide `spark` fixture (tests/support/spark.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
