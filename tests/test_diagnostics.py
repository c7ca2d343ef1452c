"""The one stderr writer: every line it writes hides the secrets the settings hold."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kshare_cli import diagnostics


@pytest.fixture(autouse=True)
def _fresh_writer() -> Iterator[None]:
    diagnostics.forget_secrets()
    diagnostics.set_debug(False)
    yield
    diagnostics.forget_secrets()
    diagnostics.set_debug(False)


def test_a_short_secret_is_hidden_alone_but_never_inside_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Replacing the one-letter password ``b`` everywhere once printed "***ootstrap"."""
    diagnostics.remember_secrets(["b"])
    diagnostics.error("bootstrap failed: password='b' b")
    assert capsys.readouterr().err == "kshare: error: bootstrap failed: password='***' ***\n"


def test_a_long_secret_is_hidden_everywhere_even_inside_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    diagnostics.remember_secrets(["abcdefghij", ""])
    diagnostics.warning("token=abcdefghij tail abcdefghijk xabcdefghij")
    assert capsys.readouterr().err == "kshare: warning: token=*** tail ***k x***\n"


def test_the_longer_of_two_overlapping_secrets_is_hidden_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Replacing the shorter first would leave the longer one's tail on screen."""
    diagnostics.remember_secrets(["password", "password-and-more"])
    diagnostics.progress("saw password-and-more\n")
    assert capsys.readouterr().err == "saw ***\n"


def test_progress_is_written_as_given_and_redaction_needs_no_newline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    diagnostics.remember_secrets(["s3cret-password"])
    diagnostics.progress("joining group s3cret-password\u2026")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "joining group ***\u2026")


def test_forgotten_secrets_are_written_again(capsys: pytest.CaptureFixture[str]) -> None:
    """A command starts with its own settings' secrets, not an earlier command's."""
    diagnostics.remember_secrets(["s3cret-password"])
    diagnostics.forget_secrets()
    diagnostics.error("s3cret-password")
    assert capsys.readouterr().err == "kshare: error: s3cret-password\n"


def _fail_with_the_secret() -> None:
    raise ValueError("bad oauth-client-secret")


def test_a_traceback_is_written_only_with_debug_and_redacted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    diagnostics.remember_secrets(["oauth-client-secret"])
    with pytest.raises(ValueError) as raised:
        _fail_with_the_secret()
    failure = raised.value
    diagnostics.debug_traceback(failure)
    assert capsys.readouterr().err == ""
    diagnostics.set_debug(True)
    diagnostics.debug_traceback(failure)
    written = capsys.readouterr().err
    assert written.startswith("Traceback (most recent call last):\n")
    assert written.endswith("ValueError: bad ***\n")
    assert "oauth-client-secret" not in written


def test_redact_with_given_secrets_leaves_the_remembered_ones_alone() -> None:
    diagnostics.remember_secrets(["remembered-secret"])
    text = "remembered-secret given-secret"
    assert diagnostics.redact(text, ["given-secret"]) == "remembered-secret ***"
    assert diagnostics.redact(text) == "*** given-secret"
