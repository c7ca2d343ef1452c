"""Share groups in the sandbox: the group coordinator, share-partitions and share coordinator.

Share groups are broker glue around three pure engines -- ``group_coordinator``
(membership, epochs, assignment), ``share_partition`` (acquisition locks,
delivery counts, acknowledgements) and ``share_coordinator_state`` (the share
coordinator's durable state) -- and the RPCs that reach them. This module is
their entry point: installing the extension (``share_groups.py``) with every
handler registered -- ShareGroupHeartbeat, ShareFetch and ShareAcknowledge
(``share_consumer_rpcs.py``), the admin RPCs (``share_admin_rpcs.py``) and the
group-config RPCs (``group_config_rpcs.py``). Durable state goes where Kafka puts it,
as ShareSnapshot/ShareUpdate records in ``__share_group_state``, written through
the same partition logs as any topic and replayed from them on start; the
in-memory share-partitions are a cache rebuilt from that state, exactly like a
share-partition leader reading ReadShareGroupState after a restart.

On a sandbox cluster (``--brokers``) the group RPCs are answered only by the
group's coordinator (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS
while it has just taken the group over), ShareFetch and ShareAcknowledge only
by each partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere, with the current
leader, KIP-951), and share sessions are per node, as Kafka's share-session
cache is per broker. A partition whose leader changes drops its in-memory
share-partition: the new leader rebuilds it from the persisted state, so records
that were acquired and not acknowledged become available again, as on Kafka.
"""

from __future__ import annotations

# The handler modules register their RPCs with the broker when imported.
from kshare_cli.sandbox import group_config_rpcs, share_admin_rpcs, share_consumer_rpcs
from kshare_cli.sandbox.share_groups import (
    KAFKA_SUMMARY_READ_WAIT_S,
    ShareGroups,
    install_share_groups,
    installed_share_groups,
    share_groups,
)

__all__ = [
    "KAFKA_SUMMARY_READ_WAIT_S",
    "ShareGroups",
    "group_config_rpcs",
    "install_share_groups",
    "installed_share_groups",
    "share_admin_rpcs",
    "share_consumer_rpcs",
    "share_groups",
]
