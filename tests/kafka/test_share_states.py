"""Delivery states: Kafka's wire ids, and which ones are terminal."""

from __future__ import annotations

from kshare_cli.kafka.share_states import DeliveryState, StateBatch
from kshare_cli.sandbox import share_partition
from kshare_cli.state import records


def test_wire_ids_are_kafkas() -> None:
    assert [(state.name, int(state)) for state in DeliveryState] == [
        ("AVAILABLE", 0),
        ("ACQUIRED", 1),
        ("ACKNOWLEDGED", 2),
        ("ARCHIVING", 3),
        ("ARCHIVED", 4),
    ]


def test_only_acknowledged_and_archived_are_terminal() -> None:
    # ARCHIVING (Kafka 4.4) is not: it is not counted in deliveryCompleteCount.
    assert {state for state in DeliveryState if state.is_terminal} == {
        DeliveryState.ACKNOWLEDGED,
        DeliveryState.ARCHIVED,
    }


def test_archiving_is_final_but_not_terminal() -> None:
    # Never delivered again, yet the start offset waits for its ARCHIVED write.
    assert {state for state in DeliveryState if state.is_final} == {
        DeliveryState.ACKNOWLEDGED,
        DeliveryState.ARCHIVING,
        DeliveryState.ARCHIVED,
    }


def test_the_codec_and_the_sandbox_share_one_definition() -> None:
    assert records.DeliveryState is DeliveryState is vars(share_partition)["DeliveryState"]
    assert records.StateBatch is StateBatch is vars(share_partition)["StateBatch"]
