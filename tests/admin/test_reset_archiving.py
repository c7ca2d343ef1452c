"""A reset's counts with Kafka 4.4's ARCHIVING records: done, like ACKNOWLEDGED and ARCHIVED.

An ARCHIVING record (on its way to the group's dead-letter queue) is never delivered again,
so a reset at or below it delivers it again and one above it does not skip it (issue 25).
"""

from __future__ import annotations

from kshare_cli.admin.reset import Finished
from kshare_cli.kafka.share_states import DeliveryState
from kshare_cli.state.records import StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow


def test_archiving_records_are_finished() -> None:
    state = SharePartitionState(
        snapshot_epoch=1,
        state_epoch=2,
        leader_epoch=0,
        start_offset=10,
        delivery_complete_count=1,
        create_timestamp=0,
        write_timestamp=0,
        state_batches=(
            StateBatch(10, 10, DeliveryState.ACKNOWLEDGED, 1),
            StateBatch(11, 12, DeliveryState.ARCHIVING, 1),
            StateBatch(13, 13, DeliveryState.AVAILABLE, 2),
        ),
    )
    finished = Finished.of_window(10, InFlightWindow.from_state(state))
    assert finished.ranges == ((0, 13),)
    assert finished.delivered_again(10, 0, 20) == 3
    assert finished.skipped(14, 0) == 1  # offset 13 only: 11 and 12 are on their way to the DLQ
