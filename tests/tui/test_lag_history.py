"""The dashboard's arithmetic on readings: trends, flow rates, time to empty, stalls, sparklines."""

from __future__ import annotations

import gc
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.tui.lag_history import (
    Flow,
    History,
    HistoryStore,
    LagReading,
    SinceMoved,
    Trend,
    arrival_rate,
    consumption_rate,
    flow,
    is_stalled,
    lag_trend,
    net_drain_rate,
    partition_key,
    sparkline,
    time_to_empty,
)


def test_sample_of_turns_kafka_sentinels_into_unknowns() -> None:
    assert LagReading.of(1.0, 5, -1, -1, -1) == LagReading(1.0, 5, None, None, None)
    assert LagReading.of(1.0, 5, 0, 0, 7) == LagReading(1.0, 5, 0, 0, 7)


def test_lag_trend_compares_the_newest_lag_with_the_oldest_in_the_window() -> None:
    rising = [LagReading(0, 5), LagReading(2, 3), LagReading(4, 9)]
    assert lag_trend(rising) is Trend.UP
    assert lag_trend([LagReading(0, 9), LagReading(2, 12), LagReading(4, 1)]) is Trend.DOWN
    assert lag_trend([LagReading(0, 4), LagReading(2, 4)]) is Trend.FLAT
    assert lag_trend([LagReading(0, 4)]) is None
    assert lag_trend([LagReading(0, None), LagReading(2, 4)]) is None
    # Only the last window_s seconds count: the lag of 100 at t=0 is forgotten.
    assert (
        lag_trend([LagReading(0, 100), LagReading(70, 5), LagReading(80, 9)], window_s=60)
        is Trend.UP
    )


def test_consumption_counts_start_offset_plus_delivery_complete_count() -> None:
    # 10 s apart: start offset 100 -> 120 and delivery-complete count 5 -> 15: 30 records.
    readings = [LagReading(0, 50, 100, 5), LagReading(10, 40, 120, 15)]
    assert consumption_rate(readings) == pytest.approx(3.0)


def test_consumption_uses_the_start_offset_alone_where_the_count_is_unknown() -> None:
    # The count becomes known on the second step; counting it would invent 40 records.
    readings = [
        LagReading(0, 9, 100, None),
        LagReading(10, 9, 110, None),
        LagReading(20, 9, 120, 40),
    ]
    assert consumption_rate(readings) == pytest.approx(20 / 20)


def test_an_offset_reset_is_no_negative_consumption() -> None:
    readings = [LagReading(0, 1, 500, 0), LagReading(10, 90, 10, 0), LagReading(20, 80, 30, 0)]
    assert consumption_rate(readings) == pytest.approx(20 / 20)


def test_rates_are_unknown_without_two_samples_or_time_between_them() -> None:
    for rate in (consumption_rate, arrival_rate, net_drain_rate):
        assert rate([]) is None
        assert rate([LagReading(0, 1, 5, 0, 6)]) is None
        assert rate([LagReading(3, 1, 5, 0, 6), LagReading(3, 1, 9, 0, 10)]) is None


def test_a_series_without_offsets_has_a_net_drain_but_no_consumption_or_arrivals() -> None:
    # A group total from the listing: 90 -> 60 in 10 s is a net drain of 3/s.
    listing = [LagReading(0, 90), LagReading(10, 60)]
    assert net_drain_rate(listing) == pytest.approx(3.0)
    assert consumption_rate(listing) is None and arrival_rate(listing) is None
    # Growth is a negative net drain, not 0: the lag rose 3/s.
    assert net_drain_rate([LagReading(0, 60), LagReading(10, 90)]) == pytest.approx(-3.0)


def test_lag_rising_while_records_are_consumed_never_empties() -> None:
    """The issue's case: 10/s consumed, 14/s arriving: lag +4/s, so "never", not lag / 10."""
    readings = [LagReading(0, 100, 0, 0, 100), LagReading(10, 140, 100, 0, 240)]
    figures = flow(readings)
    assert figures == Flow(lag=140, consumed_per_s=10.0, arriving_per_s=14.0, net_drain_per_s=-4.0)
    assert figures.time_to_empty == math.inf


def test_net_drain_is_consumed_minus_arriving_and_sets_the_time_to_empty() -> None:
    # 20/s consumed, 15/s arriving: the lag of 300 shrinks 5/s and is gone in 60 s.
    readings = [LagReading(0, 350, 0, 0, 350), LagReading(10, 300, 200, 0, 500)]
    figures = flow(readings)
    assert figures.consumed_per_s == pytest.approx(20.0)
    assert figures.arriving_per_s == pytest.approx(15.0)
    assert figures.net_drain_per_s == pytest.approx(5.0)
    assert figures.time_to_empty == pytest.approx(60.0)


def test_arrivals_count_log_end_offset_growth_only_where_it_is_known() -> None:
    readings = [
        LagReading(0, 0, 0, 0, None),
        LagReading(10, 0, 0, 0, 50),
        LagReading(20, 0, 0, 0, 80),
    ]
    assert arrival_rate(readings) == pytest.approx(30 / 10)


def test_time_to_empty() -> None:
    assert time_to_empty(30, 3.0) == pytest.approx(10.0)
    assert time_to_empty(0, None) == 0.0
    assert time_to_empty(0, -5.0) == 0.0
    assert time_to_empty(30, 0.0) == math.inf  # standing still: never
    assert time_to_empty(30, -4.0) == math.inf  # growing: never
    assert time_to_empty(30, None) is None
    assert time_to_empty(None, 3.0) is None


def test_stalled_needs_lag_and_a_start_offset_unmoved_for_the_stall_time() -> None:
    assert is_stalled(5, SinceMoved(60.0, lower_bound=True), 60.0)
    assert not is_stalled(5, SinceMoved(59.9, lower_bound=False), 60.0)
    assert not is_stalled(0, SinceMoved(600.0, lower_bound=False), 60.0)
    assert not is_stalled(None, SinceMoved(600.0, lower_bound=False), 60.0)
    assert not is_stalled(5, None, 60.0)


def test_history_knows_when_the_start_offset_last_moved() -> None:
    history = History()
    assert history.since_moved(100.0) is None
    history.add(LagReading(0, 10, 5, 0))
    history.add(LagReading(10, 10, 5, 0))
    assert history.since_moved(30.0) == SinceMoved(30.0, lower_bound=True)
    history.add(LagReading(20, 8, 7, 0))
    history.add(LagReading(40, 8, 7, 0))
    assert history.since_moved(50.0) == SinceMoved(30.0, lower_bound=False)
    assert history.stalled(79.0, stall_after_s=60.0) is False
    assert history.stalled(80.0, stall_after_s=60.0) is True
    history.add(LagReading(90, 0, 7, 0))
    assert history.stalled(200.0, stall_after_s=60.0) is False  # no lag: nothing waits


def test_the_move_survives_the_rotation_of_samples() -> None:
    history = History(capacity=3)
    history.add(LagReading(0, 10, 5, 0))
    history.add(LagReading(1, 10, 6, 0))
    for at in range(2, 10):
        history.add(LagReading(at, 10, 6, 0))
    assert len(history.readings) == 3
    assert history.since_moved(20.0) == SinceMoved(19.0, lower_bound=False)


def test_a_sample_at_the_same_instant_replaces_the_previous_and_late_ones_are_dropped() -> None:
    history = History()
    history.add(LagReading(5, 10, 1, 0))
    history.add(LagReading(5, 7, 1, 0))
    history.add(LagReading(4, 99, 0, 0))
    assert history.readings == (LagReading(5, 7, 1, 0),)


def test_history_figures_come_from_the_module_functions() -> None:
    history = History()
    for at, lag, start in ((0, 40, 0), (10, 30, 10), (20, 20, 20)):
        history.add(LagReading(at, lag, start, 0))
    assert history.trend() is Trend.DOWN
    assert history.flow() == flow(history.readings)
    assert history.flow().consumed_per_s == pytest.approx(1.0)
    assert history.flow().time_to_empty == pytest.approx(20.0)
    assert history.lags() == (40, 30, 20)


def test_store_retains_only_the_share_partitions_still_there() -> None:
    store = HistoryStore()
    for partition in range(3):
        store.add(partition_key("g", "t", partition), LagReading(0, 1))
    store.add(partition_key("other", "t", 0), LagReading(0, 1))
    store.retain([partition_key("g", "t", 1)], prefix=("p", "g"))
    assert store.get(partition_key("g", "t", 0)) is None
    assert store.get(partition_key("g", "t", 1)) is not None
    assert store.get(partition_key("other", "t", 0)) is not None
    assert len(store) == 2


def test_sparkline_scales_from_zero_to_the_highest_value() -> None:
    assert sparkline([0, 4, 8], 3) == "▁▅█"
    assert sparkline([0, 0], 5) == "▁▁"
    assert sparkline([None, 8, 0], 3) == " █▁"
    assert sparkline([1, 2, 3, 4], 2) == "▆█"
    assert sparkline([3], 0) == ""


def test_a_flat_series_draws_a_flat_line_low_at_zero_and_in_the_middle_above() -> None:
    assert sparkline([5, 5, 5, 5], 4) == "▄▄▄▄"
    assert sparkline([None, 8], 2) == " ▄"  # one known value is flat too
    assert sparkline([7, None, 7], 3) == "▄ ▄"
    assert sparkline([0, 0, 0], 3) == "▁▁▁"
    assert sparkline([9, 5, 5, 5], 3) == "▄▄▄"  # only the values shown count
    assert sparkline([5, 5, 6], 3) == "▇▇█"  # not flat: scaled from zero as before


@given(
    st.lists(
        st.tuples(st.integers(0, 1_000), st.integers(0, 50)),
        min_size=2,
        max_size=30,
    )
)
def test_consumption_of_steady_progress_is_the_total_over_the_span(
    steps: list[tuple[int, int]],
) -> None:
    """Whatever the step sizes, monotone progress drains at (last - first) / span."""
    at = 0.0
    start = 0
    readings = [LagReading(at, 0, start, 0)]
    for completed, seconds in steps:
        at += seconds + 1
        start += completed
        readings.append(LagReading(at, 0, start, 0))
    rate = consumption_rate(readings, window_s=math.inf)
    assert rate == pytest.approx(start / at)


def test_since_moved_takes_the_state_topics_date_of_the_last_change() -> None:
    history = History()
    history.add(LagReading(1000.0, 5, start_offset=10))
    assert history.since_moved(1006.0) == SinceMoved(6.0, lower_bound=True)
    history.recorded_move(100.0, exact=True)  # the records date the change 15 minutes back
    assert history.since_moved(1000.0) == SinceMoved(900.0, lower_bound=False)
    history.recorded_move(400.0, exact=False)  # pruned: unmoved since 400 at least
    assert history.since_moved(1000.0) == SinceMoved(600.0, lower_bound=True)
    history.recorded_move(None, exact=False)
    assert history.since_moved(1000.0) == SinceMoved(0.0, lower_bound=True)
    history.add(LagReading(1010.0, 5, start_offset=11))  # seen here: later than any record
    history.recorded_move(100.0, exact=True)
    assert history.since_moved(1020.0) == SinceMoved(10.0, lower_bound=False)


def test_record_takes_a_refreshs_figures_as_add_takes_a_reading() -> None:
    recorded, added = History(), History()
    for at, figures in enumerate(((5, -1, -1, -1), (7, 10, 3, 20), (None, 12, None, 21))):
        recorded.record(float(at), *figures)
        added.add(LagReading.of(float(at), *figures))
    assert recorded.readings == added.readings
    assert recorded.readings[0] == LagReading(0.0, 5, None, None, None)
    assert recorded.latest == LagReading(2.0, None, 12, None, 21)


@given(
    st.lists(
        st.tuples(
            st.floats(0.5, 30),
            st.none() | st.integers(-5, 10**12),
            st.none() | st.integers(0, 10**12),
            st.none() | st.integers(0, 10**6),
            st.none() | st.integers(0, 10**12),
        ),
        min_size=1,
        max_size=60,
    ),
    st.integers(2, 12),
)
def test_a_long_series_keeps_its_last_readings_and_figures_them_as_the_functions_do(
    steps: list[tuple[float, int | None, int | None, int | None, int | None]], capacity: int
) -> None:
    """Whatever the length, the series is its last ``capacity`` readings: the figures are
    the module functions' over them, however the columns were cut."""
    history = History(capacity)
    given_readings = []
    at = 0.0
    for gap, lag, start_offset, complete, end_offset in steps:
        at += gap
        reading = LagReading(at, lag, start_offset, complete, end_offset)
        given_readings.append(reading)
        history.record(at, lag, start_offset, complete, end_offset)
    kept = tuple(given_readings[-capacity:])
    assert history.readings == kept
    assert history.latest == kept[-1]
    assert history.lags() == tuple(reading.lag for reading in kept)
    assert history.recent_lags(3) == tuple(reading.lag for reading in kept[-3:])
    assert history.flow(30.0) == flow(kept, 30.0)
    assert history.trend(30.0) == lag_trend(kept, 30.0)


def test_recent_lags_says_unknown_where_it_was_and_again_after_a_replaced_reading() -> None:
    history = History()
    for at, lag in enumerate((1, None, 3, 4, 5)):
        history.record(float(at), lag)
    assert history.recent_lags(3) == (3, 4, 5)
    assert history.recent_lags(4) == (None, 3, 4, 5)
    history.record(4.0, None)  # the same instant: replaces the lag of 5
    assert history.recent_lags(2) == (4, None)
    history.record(5.0, 6)
    assert history.recent_lags(3) == (4, None, 6)


def test_a_full_series_holds_no_object_per_reading() -> None:
    """The garbage collector walks every object it tracks: a series of 120 readings gives it
    no more to walk than an empty one (columns of numbers, no object per reading)."""
    empty, full = History(), History()
    for at in range(120):
        full.record(float(at), at, at, 0, 2 * at)
    assert len(full.readings) == 120
    assert len(_walked_from(full)) == len(_walked_from(empty)) <= 6


def _walked_from(start: object) -> list[object]:
    """The objects the garbage collector tracks and reaches from ``start`` (types aside)."""
    seen = {id(start)}
    walked = [start]
    for each in walked:
        for referent in gc.get_referents(each):
            if gc.is_tracked(referent) and not isinstance(referent, type):
                if id(referent) not in seen:
                    seen.add(id(referent))
                    walked.append(referent)
    return walked
