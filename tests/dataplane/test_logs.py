"""librdkafka's ``--debug`` log lines reach stderr through the one writer, which redacts."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kshare_cli import diagnostics
from kshare_cli.dataplane.logs import debug_logger


@pytest.fixture(autouse=True)
def _fresh_writer() -> Iterator[None]:
    diagnostics.forget_secrets()
    yield
    diagnostics.forget_secrets()


def test_a_debug_log_line_is_written_to_stderr_with_the_secrets_hidden(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The stderr of the moment is used (not the one at the logger's creation), and a
    secret in a line (a broker echoing a SASL exchange) is replaced."""
    diagnostics.remember_secrets(["s3cret-password"])
    debug_logger().log(logging.DEBUG, "SASL handshake for s3cret-password")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "librdkafka: SASL handshake for ***\n")
