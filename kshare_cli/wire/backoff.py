"""How long the client waits before asking again: one rule for requests and fan-outs.

Java's admin client backs off exponentially between retries; so does kshare, in
both places it asks again (a request whose connection dropped, and a fan-out's
groups or partitions answered with a retriable error), so both share this class.
"""

from __future__ import annotations

import asyncio
from typing import Final

BACKOFF_FIRST_S: Final = 0.05
BACKOFF_MAX_S: Final = 1.0


class Backoff:
    """50 ms doubling to 1 s: fast when a coordinator is merely moving, gentle when down."""

    def __init__(self) -> None:
        self._delay = BACKOFF_FIRST_S

    def fits_before(self, deadline: float) -> bool:
        """Whether waiting once more still ends before ``deadline``."""
        return asyncio.get_running_loop().time() + self._delay < deadline

    def fits_within(self, remaining_s: float) -> bool:
        """Whether waiting once more still leaves time, of ``remaining_s``, to ask again."""
        return self._delay < remaining_s

    async def wait(self) -> None:
        await asyncio.sleep(self._delay)
        self._delay = min(self._delay * 2, BACKOFF_MAX_S)
