"""A group coordinator holding DescribeShareGroupOffsets holds no other request.

Kafka's group coordinator answers DescribeShareGroupOffsets only once the share
coordinators it reads from have answered (about 180 s for a hung one), and a broker
answers one connection's requests in order. So the offset RPCs go on a connection of
their own to each coordinator: a description of another group, asked of the same
coordinator while the offsets are held, is answered at once, and one queued behind the
held request when that connection is replaced is asked again, not failed as "closed".
A real cluster cannot be hung node by node: sandbox only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from kshare_cli.admin.models import GroupDescription
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.wire.client import BRANCH_MAX_S, KafkaClient
from tests.support.fault_beds import VICTIM, FaultBed, make_fault_bed, never_fenced_cluster

pytestmark = pytest.mark.faults

#: The client's timeout: a held request's branch waits half of it, far beyond PROMPTLY_S.
TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultBed]:
    with never_fenced_cluster("it hangs a node of a sandbox cluster") as sandbox:
        yield make_fault_bed(sandbox, tmp_path_factory.mktemp("lane") / "config.toml")


def test_a_held_offsets_request_does_not_hold_a_description_on_the_same_coordinator(
    bed: FaultBed,
) -> None:
    """Node 1 holds the held group's offsets (its state is on the hung node); node 1's
    own group, described meanwhile by the same client, is answered promptly."""
    settings = ConnectionSettings(bootstrap_servers=(bed.address(1),))

    async def run() -> tuple[object, float, bool]:
        async with await KafkaClient.connect(settings, timeout_s=TIMEOUT_S) as client:
            admin = ShareGroupAdmin(client)
            await client.find_coordinators([bed.held, bed.groups[1]])
            held = asyncio.ensure_future(
                admin.list_share_partition_offsets([bed.held], end_offsets=False)
            )
            await asyncio.sleep(0.1)  # the held request is on its way first
            started = time.monotonic()
            described = (await admin.describe_groups([bed.groups[1]])).get(bed.groups[1])
            elapsed = time.monotonic() - started
            still_held = not held.done()
            held.cancel()
            return described, elapsed, still_held

    bed.sandbox.hang_node(VICTIM)
    try:
        described, elapsed, still_held = asyncio.run(run())
    finally:
        bed.sandbox.restart_node(VICTIM)
    assert isinstance(described, GroupDescription), described
    assert described.group_id == bed.groups[1]
    # Queued behind the held request, the description could not be answered before
    # that request's branch gave up (BRANCH_MAX_S after it was sent): on its own
    # connection it is answered in milliseconds, a second of load aside.
    assert still_held
    assert elapsed < BRANCH_MAX_S - 1.0, elapsed
