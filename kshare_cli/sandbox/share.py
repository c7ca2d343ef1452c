"""Share groups in the sandbox (placeholder wiring replaced as the engine lands)."""

from __future__ import annotations

from typing import Any

from kshare_cli.sandbox.broker import Broker


def install_share_groups(broker: Broker, **options: Any) -> None:
    """Install the share-group coordinator, share partitions and share coordinator."""
    return None
