"""Reset plan files: Kafka 4.4's CSV byte for byte, read back whatever Kafka writes.

The expected bytes follow Kafka's CsvUtils (Jackson CsvMapper with its defaults): no
header, "\\n" after every record, and a string quoted when it is longer than 24
UTF-16 units or holds a character below '-' or a backslash, quotes doubled.
"""

from __future__ import annotations

import csv
import io
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kshare_cli.admin.plans import PlanEntry, read_plan, write_plan
from kshare_cli.errors import ExitCode, UsageError

GOLDEN = "golden-g"


def entries_of(group: str, *rows: tuple[str, int, int]) -> tuple[PlanEntry, ...]:
    return tuple(PlanEntry(group, topic, partition, offset) for topic, partition, offset in rows)


# --- writing -------------------------------------------------------------------------


def test_single_group_plan_is_kafkas_topic_partition_offset_sorted() -> None:
    entries = [
        PlanEntry(GOLDEN, "golden-b", 0, 0),
        PlanEntry(GOLDEN, "golden-a", 1, 3),
        PlanEntry(GOLDEN, "golden-a", 10, 12),
        PlanEntry(GOLDEN, "golden-a", 0, 5),
    ]
    assert write_plan(entries, with_group=False) == (
        "golden-a,0,5\ngolden-a,1,3\ngolden-a,10,12\ngolden-b,0,0\n"
    )


def test_grouped_plan_is_kafkas_group_topic_partition_offset_sorted() -> None:
    entries = [
        PlanEntry("g2", "t", 0, 7),
        PlanEntry("g1", "t", 1, 9223372036854775807),
        PlanEntry("g1", "t", 0, 0),
    ]
    assert write_plan(entries, with_group=True) == (
        "g1,t,0,0\ng1,t,1,9223372036854775807\ng2,t,0,7\n"
    )


def test_an_empty_plan_is_empty() -> None:
    assert write_plan([], with_group=False) == ""
    assert write_plan([], with_group=True) == ""


@pytest.mark.parametrize(
    ("group", "field"),
    [
        # Left alone: no character below '-', at most 24 UTF-16 units.
        ("golden-g", "golden-g"),
        ("a.b_c-d~e:f;g=h@i[j]k{l}m|n", '"a.b_c-d~e:f;g=h@i[j]k{l}m|n"'),  # 27: too long
        ("a23456789012345678901234", "a23456789012345678901234"),
        ("a234567890123456789012345", '"a234567890123456789012345"'),
        ("grüße/日本", "grüße/日本"),
        ("\N{GRINNING FACE}" * 12, "\N{GRINNING FACE}" * 12),  # 24 UTF-16 units
        ("\N{GRINNING FACE}" * 13, '"' + "\N{GRINNING FACE}" * 13 + '"'),  # 26
        ("", ""),
        # Quoted: a character below '-' (space ! " # $ % & ' ( ) * + , and controls) ...
        ("my group", '"my group"'),
        ("a,b", '"a,b"'),
        ('say "hi"', '"say ""hi"""'),
        ('"', '""""'),
        ("#1", '"#1"'),
        ("x+y", '"x+y"'),
        ("it's", '"it\'s"'),
        ("(a)", '"(a)"'),
        ("tab\there", '"tab\there"'),
        ("two\nlines", '"two\nlines"'),
        ("cr\rlf", '"cr\rlf"'),
        # ... or a backslash.
        ("back\\slash", '"back\\slash"'),
    ],
)
def test_groups_are_quoted_as_jackson_quotes_them(group: str, field: str) -> None:
    assert write_plan([PlanEntry(group, "t", 0, 1)], with_group=True) == f"{field},t,0,1\n"


def test_long_topic_names_are_quoted_as_kafka_exports_them() -> None:
    topic = "orders-eu-west-1-payments"  # 25 characters
    assert write_plan(entries_of(GOLDEN, (topic, 0, 7), ("orders", 1, 2)), with_group=False) == (
        f'orders,1,2\n"{topic}",0,7\n'
    )
    assert write_plan(entries_of(GOLDEN, ("x" * 24, 0, 7)), with_group=False) == (
        f"{'x' * 24},0,7\n"
    )


def test_a_single_group_plan_refuses_entries_of_two_groups() -> None:
    with pytest.raises(ValueError, match="one group"):
        write_plan([PlanEntry("a", "t", 0, 1), PlanEntry("b", "t", 0, 1)], with_group=False)


# --- reading what Kafka writes -------------------------------------------------------


def test_kafka_share_group_export_reads_back() -> None:
    # ShareGroupCommand --export prints the records with println: one more "\n".
    exported = 'golden-a,0,5\ngolden-a,1,3\n"orders-eu-west-1-payments",0,7\n\n'
    assert read_plan(exported, group=GOLDEN) == entries_of(
        GOLDEN, ("golden-a", 0, 5), ("golden-a", 1, 3), ("orders-eu-west-1-payments", 0, 7)
    )


def test_kafka_multi_group_export_reads_back_with_every_group() -> None:
    exported = 'g1,t,0,5\n"my group",t,0,3\ng2,t,1,0\n\n'
    assert read_plan(exported, group="g1") == (
        PlanEntry("g1", "t", 0, 5),
        PlanEntry("g2", "t", 1, 0),
        PlanEntry("my group", "t", 0, 3),
    )
    assert read_plan(exported, group=None) == read_plan(exported, group="g1")


def test_entries_come_back_sorted_whatever_the_file_order() -> None:
    text = "b,1,1\na,2,2\nb,0,0\na,10,10\n"
    assert read_plan(text, group="g") == entries_of(
        "g", ("a", 2, 2), ("a", 10, 10), ("b", 0, 0), ("b", 1, 1)
    )


def test_a_partition_listed_twice_with_the_same_offset_is_kept_once() -> None:
    assert read_plan("t,0,5\nt,1,6\nt,0,5\n", group="g") == entries_of(
        "g", ("t", 0, 5), ("t", 1, 6)
    )


def test_the_same_partition_in_two_groups_is_two_entries() -> None:
    assert read_plan("a,t,0,5\nb,t,0,6\n", group=None) == (
        PlanEntry("a", "t", 0, 5),
        PlanEntry("b", "t", 0, 6),
    )


# --- kshare's reading extensions -----------------------------------------------------


def test_headers_comments_blank_lines_and_crlf_are_accepted() -> None:
    text = (
        "# rollback of golden-g, 2026-01-01T00:00:00Z\r\n"
        "topic,partition,offset\r\n"
        "\r\n"
        "golden-a,0,5\r\n"
        "   \r\n"
        "  # a note\r\n"
        "golden-a,1,3\r\n"
    )
    assert read_plan(text, group=GOLDEN) == entries_of(
        GOLDEN, ("golden-a", 0, 5), ("golden-a", 1, 3)
    )


def test_a_grouped_header_is_accepted_in_any_case() -> None:
    text = "Group, Topic, Partition, Offset\ng,t,0,5\n"
    assert read_plan(text, group=None) == (PlanEntry("g", "t", 0, 5),)


def test_old_mac_line_ends_and_no_final_newline_are_accepted() -> None:
    assert read_plan("t,0,5\rt,1,6", group="g") == entries_of("g", ("t", 0, 5), ("t", 1, 6))


def test_spaces_around_numbers_are_accepted() -> None:
    assert read_plan("t, 0 ,\t5\n", group="g") == entries_of("g", ("t", 0, 5))


def test_a_quoted_group_may_hold_line_feeds_and_hashes() -> None:
    text = '"first\n# not a comment\n\nline",t,0,5\n"#g",t,1,6\n'
    assert read_plan(text, group=None) == (
        PlanEntry("#g", "t", 1, 6),
        PlanEntry("first\n# not a comment\n\nline", "t", 0, 5),
    )


def test_quoted_topics_and_numbers_are_read() -> None:
    assert read_plan('"t","0","5"\n', group="g") == entries_of("g", ("t", 0, 5))


# --- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "group", "line", "reason"),
    [
        (
            "t,0\n",
            "g",
            1,
            "expected topic,partition,offset or group,topic,partition,offset, found 2",
        ),
        ("t\n", "g", 1, "found 1 field$"),
        ("a,b,c,d,e\n", "g", 1, "found 5 fields"),
        ("t,0,5\nt,1\n", "g", 2, r"expected 3 fields \(topic,partition,offset\) as on the first"),
        ("g,t,0,5\nt,1,6\n", None, 2, r"expected 4 fields \(group,topic,partition,offset\)"),
        ("t,0,5\n\n# c\ng,t,1,6\n", "g", 4, "expected 3 fields"),
        ("t,x,5\n", "g", 1, "the partition 'x' is not an integer from 0 to 2147483647"),
        ("t,-1,5\n", "g", 1, "the partition '-1' is not an integer"),
        ("t,2147483648,5\n", "g", 1, "the partition '2147483648' is not an integer"),
        ("t,0,-1\n", "g", 1, "the offset '-1' is not an integer from 0 to 9223372036854775807"),
        ("t,0,9223372036854775808\n", "g", 1, "the offset '9223372036854775808'"),
        ("t,0,5.0\n", "g", 1, "the offset '5.0' is not an integer"),
        ("t,0," + "9" * 5000 + "\n", "g", 1, "the offset '9999.* is not an integer"),
        ("t,0," + "0" * 5000 + "1\n", "g", 1, "the offset '0000.* is not an integer"),
        ("t,0,+5\n", "g", 1, "the offset '\\+5' is not an integer"),
        ("t,0,1_000\n", "g", 1, "the offset '1_000' is not an integer"),
        ("t,0,\N{ARABIC-INDIC DIGIT FIVE}\n", "g", 1, "is not an integer"),
        ("t,0,\n", "g", 1, "the offset '' is not an integer"),
        (",0,5\n", "g", 1, "the topic is empty"),
        ("g,,0,5\n", None, 1, "the topic is empty"),
        ("my topic,0,5\n", "g", 1, "'my topic' is not a topic name"),
        (" t,0,5\n", "g", 1, "' t' is not a topic name"),
        ("..,0,5\n", "g", 1, "'..' is not a topic name"),
        (f"{'t' * 250},0,5\n", "g", 1, "is not a topic name"),
        (",t,0,5\n", None, 1, "the group is empty"),
        ("t,0,5\nu,0,1\nt,0,6\n", "g", 3, "t:0 of group 'g' is listed again with offset 6; line 1"),
        ("t,0,5\n", None, 1, "a topic,partition,offset plan names no group"),
        ('"g,t,0,5\n', None, 1, "malformed CSV"),
        ('"g"x,t,0,5\n', None, 1, "malformed CSV"),
        ('t,0,5\n"g\nh,0,5\n', "g", 2, "malformed CSV"),
    ],
)
def test_malformed_plans_are_refused_naming_file_and_line(
    text: str, group: str | None, line: int, reason: str
) -> None:
    with pytest.raises(UsageError, match=f"^plan\\.csv: line {line}: .*{reason}") as raised:
        read_plan(text, group=group, source="plan.csv")
    assert "\n" not in str(raised.value)
    assert raised.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "\r\n\r\n",
        "# nothing\n",
        "topic,partition,offset\n",
        "group,topic,partition,offset\n",
    ],
)
def test_a_plan_without_entries_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"^plan\.csv: no entries; expected lines of") as raised:
        read_plan(text, group="g", source="plan.csv")
    assert "\n" not in str(raised.value)


def test_the_default_source_name() -> None:
    with pytest.raises(UsageError, match=r"^<plan>: line 1: "):
        read_plan("t,x,1\n", group="g")


# --- round trips ---------------------------------------------------------------------

TOPICS = st.from_regex(r"[a-zA-Z0-9._-]{1,249}", fullmatch=True).filter(
    lambda topic: topic not in (".", "..")
)
PARTITIONS = st.integers(min_value=0, max_value=2**31 - 1)
OFFSETS = st.integers(min_value=0, max_value=2**63 - 1)
# Any non-empty group id: commas, quotes, line ends, '#', spaces, non-ASCII, NUL.
GROUPS = st.one_of(
    st.text(min_size=1),
    st.text(alphabet=string.printable + '"#,\r\n', min_size=1, max_size=40),
    st.sampled_from(["golden-g", "topic", "group", "#", '"', ",", "\n", "\r\n", " #x", "a" * 25]),
)


def expected_plan(entries: list[PlanEntry]) -> tuple[PlanEntry, ...]:
    """Sorted, one entry per group and partition (the first one given)."""
    first: dict[tuple[str, str, int], PlanEntry] = {}
    for entry in entries:
        first.setdefault((entry.group, entry.topic, entry.partition), entry)
    return tuple(sorted(first.values()))


@given(st.lists(st.builds(PlanEntry, GROUPS, TOPICS, PARTITIONS, OFFSETS), max_size=20))
def test_grouped_plans_round_trip(entries: list[PlanEntry]) -> None:
    plan = expected_plan(entries)
    text = write_plan(plan, with_group=True)
    if not plan:
        assert text == ""
        return
    assert read_plan(text, group=None) == plan
    assert read_plan(text, group="someone-else") == plan
    assert write_plan(read_plan(text, group=None), with_group=True) == text


@given(GROUPS, st.lists(st.tuples(TOPICS, PARTITIONS, OFFSETS), min_size=1, max_size=20))
def test_single_group_plans_round_trip(group: str, rows: list[tuple[str, int, int]]) -> None:
    plan = expected_plan(list(entries_of(group, *rows)))
    text = write_plan(plan, with_group=False)
    assert read_plan(text, group=group) == plan


@given(st.lists(st.builds(PlanEntry, GROUPS, TOPICS, PARTITIONS, OFFSETS), min_size=1, max_size=20))
def test_written_plans_are_plain_csv_to_any_reader(entries: list[PlanEntry]) -> None:
    """An independent CSV reader (Python's) sees exactly the fields written."""
    plan = expected_plan(entries)
    text = write_plan(plan, with_group=True)
    assert text.endswith("\n")
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert rows == [
        [entry.group, entry.topic, str(entry.partition), str(entry.offset)] for entry in plan
    ]


@given(st.lists(st.tuples(TOPICS, PARTITIONS, OFFSETS), min_size=1, max_size=20))
def test_single_group_plans_have_one_line_per_entry(rows: list[tuple[str, int, int]]) -> None:
    """Kafka reads a plan by splitting it on "\\n": topics never need a line of their own."""
    plan = expected_plan(list(entries_of(GOLDEN, *rows)))
    lines = write_plan(plan, with_group=False).split("\n")
    assert lines[-1] == ""
    assert len(lines) - 1 == len(plan)
    for line, entry in zip(lines, plan, strict=False):
        topic = f'"{entry.topic}"' if len(entry.topic) > 24 else entry.topic
        assert line == f"{topic},{entry.partition},{entry.offset}"


@given(
    st.one_of(
        st.text(),
        st.text(alphabet='t,0123456789"#\r\n -', max_size=60),
        st.lists(
            st.lists(
                st.sampled_from(["t", "0", "5", "", '"', '"g"', "-1", "#", "g h"]), max_size=5
            ),
            max_size=5,
        ).map(lambda rows: "\n".join(",".join(row) for row in rows)),
    ),
    st.sampled_from([None, "g"]),
)
def test_any_text_gives_entries_or_one_usage_error_line(text: str, group: str | None) -> None:
    try:
        plan = read_plan(text, group=group, source="plan.csv")
    except UsageError as error:
        assert str(error).startswith("plan.csv: ")
        assert "\n" not in str(error)
    else:
        assert plan
        assert list(plan) == sorted(plan)


# --- a rollback plan's history lines -------------------------------------------------


def test_rollback_history_lines_read_back_and_leave_the_plan_as_it_was() -> None:
    from kshare_cli.admin.plans import (
        RollbackHistory,
        read_rollback_history,
        write_rollback_history,
    )

    histories = [
        RollbackHistory("g\n#2", "t", 1, 15, 9, None),
        RollbackHistory("g\n#2", "t", 0, 15, 4, ((5, 8), (10, 10))),
        RollbackHistory("other", "t", 0, 3, 2, ()),
    ]
    lines = write_rollback_history(histories)
    assert lines.splitlines()[0] == (
        '# finished before the reset: {"group": "g\\n#2", "topic": "t", "partition": 0, '
        '"reset_to": 15, "finished_below": 4, "finished": [[5, 8], [10, 10]]}'
    )
    assert len(lines.splitlines()) == 3  # a line feed in a group id stays escaped
    text = "# a note\n" + lines + write_plan([PlanEntry("g\n#2", "t", 0, 4)], with_group=True)
    assert read_plan(text, group=None) == (PlanEntry("g\n#2", "t", 0, 4),)
    assert read_rollback_history(text, group="g\n#2") == {
        ("t", 0): histories[1],
        ("t", 1): histories[0],
    }
    assert read_rollback_history("t,0,5\n", group="g") == {}  # not a rollback plan


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"group": "g", "topic": "t"', "does not read"),
        ('{"group": "g", "topic": "t", "partition": 0, "reset_to": 1}', "does not read"),
        (
            '{"group": "g", "topic": "t", "partition": -1, "reset_to": 1, '
            '"finished_below": 0, "finished": []}',
            "does not read",
        ),
        (
            '{"group": "g", "topic": "t", "partition": 0, "reset_to": 1, '
            '"finished_below": 4, "finished": [[2, 3]]}',
            "at or above finished_below",
        ),
    ],
)
def test_a_broken_history_line_is_refused_naming_file_and_line(line: str, reason: str) -> None:
    from kshare_cli.admin.plans import read_rollback_history

    text = f"# header\n# finished before the reset: {line}\ng,t,0,4\n"
    with pytest.raises(UsageError, match=f"undo.csv: line 2: .*{reason}"):
        read_rollback_history(text, group="g", source="undo.csv")
