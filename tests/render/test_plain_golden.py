"""``-o plain`` against what Kafka 4.2.0's kafka-share-groups.sh printed, byte for byte.

The models come from the recorded responses of the same runs (see
``tests/support/golden_admin.py``), so this checks the converters and the layout
together. Where Kafka's order differs from kshare's (``--list`` prints groups as
the broker answered), the comparison is with the recorded output sorted the same
way: header lines kept, rows in byte order.
"""

from __future__ import annotations

import pytest

from kshare_cli.render import notices, render
from kshare_cli.render.descriptions import description_notices, render_members, render_states
from kshare_cli.render.listing import render_listing
from kshare_cli.render.offsets import render_offsets
from tests.support import golden_admin as golden


def _plain(text: str) -> bytes:
    return text.encode("utf-8")


# --------------------------------------------------------------------------- list


def test_list_prints_bare_ids_sorted_where_kafka_printed_the_brokers_order() -> None:
    # 01 and 23: Kafka prints the ListGroups order; kshare sorts, so compare sorted.
    for run, listing_run in (("01", "01-list"), ("23", "23")):
        recorded = golden.tool_output(run)
        rendered = _plain(render_listing(golden.listing(listing_run), "plain"))
        assert rendered == golden.sorted_lines(recorded, 0)
        assert rendered != recorded  # the recorded order really was unsorted


def test_list_with_state_column_widths_match_kafka() -> None:
    # 02: GROUP widens to the longest id (36); rows sorted (Kafka's were not).
    recorded = golden.tool_output("02")
    rendered = _plain(render_listing(golden.listing("02-list-state"), "plain", with_state=True))
    assert rendered == golden.sorted_lines(recorded, 1)


def test_list_with_state_filter_is_byte_identical() -> None:
    listing = golden.listing("03-list-state-stable", ("Stable",))
    assert _plain(render_listing(listing, "plain", with_state=True)) == golden.tool_output("03")


# --------------------------------------------------------------------------- offsets


@pytest.mark.parametrize(
    ("run", "verbose"),
    [("04", False), ("05", True), ("10", False), ("14", False), ("17", False), ("21", False)],
)
def test_describe_offsets_is_byte_identical(run: str, verbose: bool) -> None:
    # 10 (--all-groups) needs no sorting: Kafka 4.2 already orders describe output.
    rendered = render_offsets(golden.offsets(run), "plain", verbose=verbose)
    assert _plain(rendered) == golden.tool_output(run)


def test_describe_offsets_after_reset_prints_dash_even_with_a_bound_known() -> None:
    # 17: the broker's lag is -1; kshare knows the bound (15) but plain prints Kafka's "-".
    offsets = golden.offsets("17")
    assert {p.lag_source for g in offsets.succeeded() for p in g.partitions} == {"bound"}
    assert render_offsets(offsets, "plain").splitlines()[2].endswith(" -")


def test_describe_offsets_plain_needs_no_end_offsets() -> None:
    rendered = render_offsets(golden.offsets("04", with_end_offsets=False), "plain")
    assert _plain(rendered) == golden.tool_output("04")


# --------------------------------------------------------------------------- members, state


@pytest.mark.parametrize(("run", "verbose"), [("06", False), ("07", True)])
def test_describe_members_is_byte_identical(run: str, verbose: bool) -> None:
    rendered = render_members(golden.descriptions(run), "plain", verbose=verbose)
    assert _plain(rendered) == golden.tool_output(run)


@pytest.mark.parametrize(("run", "verbose"), [("08", False), ("09", True), ("13", False)])
def test_describe_state_is_byte_identical(run: str, verbose: bool) -> None:
    rendered = render_states(golden.descriptions(run), "plain", verbose=verbose)
    assert _plain(rendered) == golden.tool_output(run)


def test_empty_group_notice_is_what_kafka_printed_on_stderr() -> None:
    # 13's stderr is "\nShare group 'golden-g' has no active members.\n": the command
    # writes each plain notice and a newline, which must give those bytes.
    notices = description_notices(golden.descriptions("13"), plain=True)
    assert [f"{line}\n".encode() for line in notices] == [golden.tool_output("13", "err")]
    assert description_notices(golden.descriptions("08"), plain=True) == ()
    # Other formats: one line, kshare's way with diagnostics.
    assert description_notices(golden.descriptions("13")) == (
        "Share group 'golden-g' has no active members.",
    )


def test_members_of_an_empty_group_print_nothing() -> None:
    assert render_members(golden.descriptions("13"), "plain") == ""


def test_missing_group_is_an_error_not_output() -> None:
    # 11: Kafka printed an error on stdout and exited 0; kshare leaves stdout empty and
    # reports the failure through errors() (the command writes it to stderr).
    descriptions = golden.descriptions("11")
    assert render_states(descriptions, "plain") == ""
    assert render_members(descriptions, "plain") == ""
    (failure,) = descriptions.errors()
    assert failure.not_found
    assert str(failure) == "share group 'no-such-group': not found"
    assert failure.error.message == "Group no-such-group not found."


def test_dispatcher_picks_the_view() -> None:
    descriptions = golden.descriptions("09")
    assert render(descriptions, "plain", view="state", verbose=True) == render_states(
        descriptions, "plain", verbose=True
    )
    assert render(golden.descriptions("06"), "plain") == render_members(
        golden.descriptions("06"), "plain"
    )
    assert render(golden.offsets("04"), "plain") == render_offsets(golden.offsets("04"), "plain")


def test_notices_dispatch() -> None:
    assert notices(golden.descriptions("13")) == ("Share group 'golden-g' has no active members.",)
    assert notices(golden.descriptions("13"), "plain") == (
        "\nShare group 'golden-g' has no active members.",
    )
    assert notices(golden.descriptions("13"), "json") == notices(golden.descriptions("13"))
    assert notices(golden.offsets("14")) == ()
    assert notices(golden.listing("01-list")) == ()
