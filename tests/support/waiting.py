"""Waiting in tests: on a condition or a count, never on a fixed sleep or a tight clock.

A test that proves something did NOT happen waits until enough of what would have
carried it has passed (heartbeats, fetches, micro-batches, refreshes: counted through
the sandbox or the program's output) and then looks; a test that proves something ends
promptly compares with a timeout of its own that is far longer than ``PROMPTLY_S``. On a
loaded machine against a real broker, a pause of a second or two is ordinary, so no
test in the suite bounds a wall-clock time below ``PROMPTLY_S``; measured speeds live in
``benchmarks/``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

#: The tightest wall-clock bound a test asserts: "promptly, not after the timeout".
#: Tests that use it give the code under test a timeout (or a wait) several times longer.
PROMPTLY_S: Final = 5.0


def wait_for(
    condition: Callable[[], Any],
    timeout: float,
    interval: float = 0.05,
    what: str = "",
    seen: Callable[[], object] | None = None,
) -> Any:
    """Poll ``condition`` until it returns something truthy, and return that; fail after
    ``timeout`` seconds (a generous deadline: only a broken feature ever reaches it).
    ``seen``: what the failure message shows of the state the condition last looked at,
    so a timeout on a CI machine says which part of the condition never came."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout} s waiting for {what or condition}"
            if seen is not None:
                message += f"; last seen: {seen()}"
            raise AssertionError(message)
        time.sleep(interval)
