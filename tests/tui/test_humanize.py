"""How the dashboard writes rates and times to empty: one wording on every screen."""

from __future__ import annotations

import math

from kshare_cli.tui import humanize as fmt
from kshare_cli.tui.lag_history import Flow


def test_rates_keep_their_sign() -> None:
    assert fmt.rate(None) == "-"
    assert fmt.rate(0.0) == "0/s"
    assert fmt.rate(-0.01) == "0/s"
    assert fmt.rate(3.42) == "3.4/s"
    assert fmt.rate(-4.0) == "-4.0/s"
    assert fmt.rate(1250.4) == "1,250/s"
    assert fmt.rate(-1250.4) == "-1,250/s"


def test_a_queue_that_does_not_shrink_empties_never() -> None:
    assert fmt.empty_in(math.inf) == "never"
    assert fmt.empty_in(math.inf, compact=True) == "never"
    assert fmt.empty_in(90.0) == "1 min 30 s"
    assert fmt.empty_in(90.0, compact=True) == "1m30s"
    assert fmt.empty_in(None) == "-"


def test_the_flow_line_names_each_figure_and_says_why_never() -> None:
    growing = Flow(lag=140, consumed_per_s=10.0, arriving_per_s=14.0, net_drain_per_s=-4.0)
    assert fmt.flow(growing) == (
        "consumed 10/s · arriving 14/s · net drain -4.0/s · empty in never (lag grows 4.0/s)"
    )
    shrinking = Flow(lag=300, consumed_per_s=20.0, arriving_per_s=15.0, net_drain_per_s=5.0)
    assert fmt.flow(shrinking) == (
        "consumed 20/s · arriving 15/s · net drain 5.0/s · empty in 1 min"
    )
    stuck = Flow(lag=7, consumed_per_s=0.0, arriving_per_s=0.0, net_drain_per_s=0.0)
    assert fmt.flow(stuck).endswith("empty in never (lag not shrinking)")
    unknown = Flow(lag=7, consumed_per_s=None, arriving_per_s=None, net_drain_per_s=None)
    assert fmt.flow(unknown) == "consumed - · arriving - · net drain - · empty in -"


def test_a_narrow_cell_counts_hours_up_to_two_days_where_a_table_says_days_after_one() -> None:
    """One writer of compact durations (``render.ages.format_age``) serves both, each with
    its own day threshold."""
    from kshare_cli.render.ages import format_age

    assert fmt.short(30 * 3600 + 60) == "30h01m"
    assert format_age(30 * 3600 + 60) == "1d06h"
    assert fmt.short(48 * 3600) == format_age(48 * 3600) == "2d00h"
    assert fmt.short(-3) == "0s" and fmt.short(float("nan")) == "-"
