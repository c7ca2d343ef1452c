"""A clone stands alone: no test reaches outside the repository for its data.

The golden corpus lives in ``tests/golden/kafka-4.2.0`` (a copy of the steering repository's
``shared/golden/kafka-4.2.0``) and every test finds it through ``tests.support.golden.GOLDEN``.
A test that read ``../shared`` or a machine path would pass here and fail (or be skipped) on
a fresh clone, which is how the whole suite once ran no test at all.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.golden import GOLDEN

TESTS = Path(__file__).resolve().parent

#: Ways a test could reach the steering repository or an absolute machine path.
_OUTSIDE = re.compile(r"""["']shared["']|/work/|parents\[[3-9]\]|\.\./shared""")


def test_the_golden_corpus_is_inside_the_repository() -> None:
    assert GOLDEN.is_relative_to(TESTS)
    assert (GOLDEN / "README.md").is_file()
    # Every part the tests read: wire captures, Kafka's decoding, state records, tool output.
    for part in ("wire", "decoded", "state", "tool-output"):
        assert any((GOLDEN / part).iterdir()), part


def test_no_test_reads_outside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _OUTSIDE.search(line)
    ]
    assert offenders == []
