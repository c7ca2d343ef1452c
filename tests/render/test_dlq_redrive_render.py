"""``kshare dlq redrive``'s table: the plan's counts per source partition, and a TOTAL row."""

from __future__ import annotations

from kshare_cli.consumer.redrive import DlqRecordId, RedriveRecord
from kshare_cli.render.dlq_redrive import render_redrive
from kshare_cli.services.dlq_redrive import RedrivePlan


def _record(offset: int, partition: int) -> RedriveRecord:
    return RedriveRecord(
        dlq=DlqRecordId("dlq.orders", 0, offset),
        source_topic="orders",
        source_partition=partition,
        source_offset=100 + offset,
        reason="DELIVERY_COUNT_EXCEEDED",
        key=None,
        value=b"v",
    )


def test_the_dry_run_table_counts_each_partition_and_totals_without_a_sent_column() -> None:
    first, second, third = _record(0, 1), _record(1, 1), _record(2, 0)
    plan = RedrivePlan(
        "g",
        "dlq.orders",
        None,
        sends=((first, "orders", 1), (third, "orders", 0)),
        already=(second,),
        headerless=frozenset({first.dlq}),
    )

    lines = render_redrive(plan, None, "table").splitlines()

    header = ["TOPIC", "PARTITION", "REASON", "TARGET", "SEND", "ALREADY", "CANNOT"]
    assert lines[0].split() == header
    assert lines[2].split() == ["orders", "0", "DELIVERY_COUNT_EXCEEDED", "orders", "1", "0", "0"]
    assert lines[3].split() == ["orders", "1", "DELIVERY_COUNT_EXCEEDED", "orders", "1", "1", "0"]
    assert [line.split() for line in lines if line.startswith("TOTAL")] == [
        ["TOTAL", "2", "1", "0"]
    ]
    assert any("1 of the records to send carry no headers" in line for line in lines)
