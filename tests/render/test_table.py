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
