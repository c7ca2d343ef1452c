"""The shared CSV conventions of ``render/output_formats``, apart from any one renderer."""

from __future__ import annotations

from kshare_cli.render.descriptions import MEMBERS_CSV_HEADER, STATE_CSV_HEADER
from kshare_cli.render.offsets import CSV_HEADER
from kshare_cli.render.output_formats import failed_group_csv_row
from kshare_cli.wire.errors import KafkaError


def test_a_failed_group_fills_its_header_with_the_error_last() -> None:
    error = KafkaError(69, "GROUP_ID_NOT_FOUND", "no such group")
    for header in (CSV_HEADER, MEMBERS_CSV_HEADER, STATE_CSV_HEADER):
        row = failed_group_csv_row("orders", error, header)
        assert len(row) == len(header)
        assert row[0] == "orders"
        assert row[-1] == str(error)
        assert set(row[1:-1]) == {None}


def test_a_failed_group_without_an_error_has_an_empty_error_cell() -> None:
    assert failed_group_csv_row("orders", None, ("group_id", "a", "error")) == (
        "orders",
        None,
        None,
    )
