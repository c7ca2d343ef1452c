"""The arithmetic behind the groups screen's DLQ mark: growth in the last minute, from readings.

Each reading is what ``read_dead_letter_ends`` returns (the groups' DLQ topics and
their end offsets by partition) at a time of the dashboard's clock.
"""

from __future__ import annotations

from kshare_cli.services.dashboard import DeadLetterEnds
from kshare_cli.tui.dead_letter_growth import (
    GROWTH_WINDOW_S,
    MAX_STEPS,
    DeadLetterGrowth,
    not_read_lines,
)

CONFIG = "errors.deadletterqueue.topic.name"


def _ends(
    ends: dict[str, dict[int, int]],
    topics: dict[str, str] | None = None,
    missing: frozenset[str] = frozenset(),
) -> DeadLetterEnds:
    """A reading; by default each topic is the DLQ of one group, ``g-<topic>``."""
    named = topics if topics is not None else {f"g-{topic}": topic for topic in ends}
    return DeadLetterEnds(True, named, ends, missing)


def test_the_first_reading_is_a_baseline_and_growth_lasts_a_minute() -> None:
    growth = DeadLetterGrowth()
    growth.record(_ends({"dlq.a": {0: 100, 1: 50}}), at=0.0)
    assert growth.marked(0.0) == {}
    growth.record(_ends({"dlq.a": {0: 103, 1: 52}}), at=2.0)
    growth.record(_ends({"dlq.a": {0: 104, 1: 52}}), at=4.0)
    assert growth.marked(4.0) == {"g-dlq.a": 6}
    assert growth.grown("g-dlq.a", 61.0) == 6
    # The step read at 2.0 leaves the window at 62.0, the one read at 4.0 at 64.0.
    assert growth.grown("g-dlq.a", 62.0) == 1
    assert growth.marked(64.0) == {}


def test_growth_over_a_gap_longer_than_the_window_is_a_new_baseline() -> None:
    growth = DeadLetterGrowth()
    growth.record(_ends({"dlq.a": {0: 10}}), at=0.0)
    # The group screen was shown for five minutes: when did these 90 come? Unknown.
    growth.record(_ends({"dlq.a": {0: 100}}), at=300.0)
    assert growth.marked(300.0) == {}
    growth.record(_ends({"dlq.a": {0: 104}}), at=302.0)
    assert growth.marked(302.0) == {"g-dlq.a": 4}


def test_a_partition_not_read_once_is_compared_with_its_last_reading() -> None:
    growth = DeadLetterGrowth()
    growth.record(_ends({"dlq.a": {0: 10, 1: 10}}), at=0.0)
    growth.record(_ends({"dlq.a": {0: 12}}), at=2.0)  # partition 1's leader did not answer
    growth.record(_ends({"dlq.a": {0: 12, 1: 15}}), at=4.0)
    assert growth.grown("g-dlq.a", 4.0) == 7


def test_a_topic_read_missing_counts_from_empty_once_it_exists() -> None:
    growth = DeadLetterGrowth()
    topics = {"g": "dlq.g"}
    growth.record(_ends({}, topics, missing=frozenset({"dlq.g"})), at=0.0)
    assert growth.marked(0.0) == {}
    # The broker made the topic with its first dead letters.
    growth.record(_ends({"dlq.g": {0: 3, 1: 1}}, topics), at=2.0)
    assert growth.marked(2.0) == {"g": 4}


def test_an_end_offset_that_goes_back_adds_nothing_and_counts_on_from_there() -> None:
    growth = DeadLetterGrowth()
    growth.record(_ends({"dlq.a": {0: 500}}), at=0.0)
    growth.record(_ends({"dlq.a": {0: 2}}), at=2.0)  # deleted and made again
    assert growth.marked(2.0) == {}
    growth.record(_ends({"dlq.a": {0: 5}}), at=4.0)
    assert growth.marked(4.0) == {"g-dlq.a": 3}


def test_a_shared_topic_marks_every_group_naming_it_and_a_topic_no_group_names_is_forgotten() -> (
    None
):
    growth = DeadLetterGrowth()
    shared = {"orders": "dlq.shared", "billing": "dlq.shared", "quiet": "dlq.quiet"}
    growth.record(_ends({"dlq.shared": {0: 1}, "dlq.quiet": {0: 7}}, shared), at=0.0)
    growth.record(_ends({"dlq.shared": {0: 4}, "dlq.quiet": {0: 7}}, shared), at=2.0)
    assert growth.marked(2.0) == {"orders": 3, "billing": 3}
    assert growth.topic_of("quiet") == "dlq.quiet"
    # quiet's config is unset: its topic is forgotten, and set again it starts afresh.
    growth.record(_ends({"dlq.shared": {0: 4}}, {"orders": "dlq.shared"}), at=4.0)
    assert growth.topic_of("quiet") is None
    assert growth.marked(4.0) == {"orders": 3}
    growth.record(_ends({"dlq.quiet": {0: 9}}, {"quiet": "dlq.quiet"}), at=6.0)
    assert growth.marked(6.0) == {}


def test_memory_stays_bounded_however_long_it_runs() -> None:
    growth = DeadLetterGrowth()
    at = 0.0
    for end in range(10_000):
        growth.record(_ends({"dlq.a": {0: end}}), at=at)
        at += 0.5
    series = growth._series["dlq.a"]  # noqa: SLF001 -- the bound is the point of this test
    assert len(series.steps) <= MAX_STEPS
    assert len(series.steps) == GROWTH_WINDOW_S / 0.5
    assert growth.grown("g-dlq.a", at - 0.5) == GROWTH_WINDOW_S / 0.5


def test_what_was_not_read_is_said_a_line_per_topic_or_group() -> None:
    reading = DeadLetterEnds(
        True,
        {"a": "dlq.gone", "b": "dlq.secret", "c": "dlq.secret", "d": "dlq.secret"},
        {},
        frozenset({"dlq.gone"}),
        {"dlq.secret": "TOPIC_AUTHORIZATION_FAILED"},
        {"e": f"its {CONFIG} could not be read: GROUP_AUTHORIZATION_FAILED"},
    )
    assert not_read_lines(reading) == [
        "DLQ not read: dlq.gone (of a): the topic does not exist",
        "DLQ not read: dlq.secret (of b and 2 more groups): TOPIC_AUTHORIZATION_FAILED",
        f"DLQ not read: share group e: its {CONFIG} could not be read: GROUP_AUTHORIZATION_FAILED",
    ]
    assert not_read_lines(reading, limit=2) == [
        "DLQ not read: dlq.gone (of a): the topic does not exist",
        "DLQ not read: 2 more",
    ]
    assert not_read_lines(DeadLetterEnds(True, {"a": "dlq.a"}, {"dlq.a": {0: 1}})) == []
