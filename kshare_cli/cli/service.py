"""A shim while the consume, produce and audit commands move to ``services.session``.

``open_admin`` and ``_bounded`` now live in ``kshare_cli.services.session`` (one
``Session`` for every command and the dashboard: ``Session.admin`` and
``Session.bounded``). Delete this module once nothing imports it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.session import Session
from kshare_cli.services.session import _run_bounded as _bounded

__all__ = ["_bounded", "open_admin"]


@asynccontextmanager
async def open_admin(
    settings: ConnectionSettings, timeout_s: float
) -> AsyncIterator[ShareGroupAdmin]:
    async with Session(settings, timeout_s).admin() as admin:
        yield admin
