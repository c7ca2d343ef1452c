"""The table format: deterministic text, full ids when there is room, folding when not."""

from __future__ import annotations

from kshare_cli.render import render
from tests.render import cases


def test_without_a_width_nothing_is_folded() -> None:
    text = render(cases.descriptions()["describe-all"], "table", view="members")
    assert "perf3-explicit-ack-1795263111.627623" in text
    assert "aOqSC+YFSECXXPKq0SceWw" in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_a_terminal_width_is_respected() -> None:
    for width in (60, 80, 100):
        text = render(cases.offsets()["offsets-partial"], "table", width=width, verbose=True)
        assert max(len(line) for line in text.splitlines()) <= width
        assert "≤5" in text  # the bound survives folding


def test_table_has_no_escape_codes_and_reads_ids_literally() -> None:
    from kshare_cli.admin.models import GroupListing, ListedGroup

    listing = GroupListing((ListedGroup("[bold]not-markup[/bold]", "Empty"),))
    text = render(listing, "table")
    assert "[bold]not-markup[/bold]" in text
    assert "\x1b" not in text


def test_a_zero_bound_is_shown_as_an_exact_zero() -> None:
    # After a reset to the log end the broker reports no lag (issue 24): kshare's bound,
    # end - start, is 0, and no lag is below 0, so the table says 0, as plain does.
    from kshare_cli.admin.models import GroupOffsets, ShareGroupOffsets, SharePartitionOffset
    from kshare_cli.render.offsets import BOUND_CAPTION

    at_end = SharePartitionOffset("orders", 0, 15, lag=0, lag_source="bound", end_offset=15)
    behind = SharePartitionOffset("orders", 1, 10, lag=5, lag_source="bound", end_offset=15)
    only_zero = ShareGroupOffsets((GroupOffsets("g", (at_end,)),))
    text = render(only_zero, "table")
    rows = [line.split() for line in text.splitlines() if line.startswith("g ")]
    assert rows == [["g", "orders", "0", "15", "15", "0"], ["g", "TOTAL", "0"]]
    assert "≤" not in text and BOUND_CAPTION not in text
    assert render(only_zero, "plain").splitlines()[-1].split()[-1] == "-"  # Kafka's: no lag
    mixed = render(ShareGroupOffsets((GroupOffsets("g", (at_end, behind)),)), "table")
    rows = [line.split() for line in mixed.splitlines() if line.startswith("g ")]
    assert [row[-1] for row in rows] == ["0", "≤5", "≤5"]
    assert BOUND_CAPTION in " ".join(mixed.split())
