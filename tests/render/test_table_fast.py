"""The direct table layout (``layout_table``) against Rich's, which it stands in for.

``table_text`` lays a table out itself when its columns fit (always, for the CLI,
which gives no width), and asks Rich only when they must fold. These properties
hold the two layouts to byte equality on random tables: wide (CJK, emoji) and
zero-width (combining, variation selector) characters, spaces where Rich trims
them, short rows, section ends, either justification, any width.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kshare_cli.render.output_formats import (
    TextTable,
    add_row,
    layout_table,
    new_table,
    rich_table_lines,
    table_text,
)

#: Printable text of every width class Rich measures: ASCII, Latin-1, the box and
#: comparison signs kshare prints, CJK and Hangul (two cells), emoji (two cells, or
#: one that VS16 widens), combining marks and VS16 (zero cells), and spaces.
PRINTABLE = st.text(
    st.sampled_from(
        [
            *"abcXYZ019-_.:/[]()#",
            *"éßøÆ",
            *"≤−─→",
            *"漢字한글カナ",
            *"😀👍☺✔",
            "\u0301",  # combining acute accent
            "\ufe0f",  # variation selector 16
            " ",
        ]
    ),
    max_size=12,
)

#: Anything at all, with the characters Rich treats specially made likely.
ANY_TEXT = st.one_of(
    PRINTABLE,
    st.text(st.sampled_from([*"ab 漢😀", "\t", "\n", "\r", "\x1b", "\u200b", "\u200d", "\xa0"])),
    st.text(max_size=8),
)


@st.composite
def tables(draw: st.DrawFn, cells: st.SearchStrategy[str] = PRINTABLE) -> TextTable:
    count = draw(st.integers(1, 6))
    headers = draw(st.lists(cells, min_size=count, max_size=count))
    right = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    table = new_table(*headers, right=[h for h, r in zip(headers, right, strict=True) if r])
    # Repeated headers share a justification in new_table; give each column its own.
    table.right = tuple(right)
    for _ in range(draw(st.integers(0, 8))):
        row = draw(st.lists(st.one_of(cells, st.none()), max_size=count))
        add_row(table, row, end_section=draw(st.booleans()))
    return table


def natural_width(table: TextTable) -> int:
    """The table's width unfolded, as Rich draws it: the length of the rule under the header."""
    rule = rich_table_lines(table, None)[1]
    assert set(rule) == {"─"}
    return len(rule)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(0, 30))
def test_fast_layout_is_rich_layout_whenever_columns_fit(table: TextTable, spare: int) -> None:
    natural = natural_width(table)
    for width in (natural + spare, natural, None):
        fast = layout_table(table, width)
        assert fast is not None, "columns that fit must not need Rich"
        assert fast == rich_table_lines(table, width)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 40))
def test_columns_that_must_fold_go_to_rich(table: TextTable, short: int) -> None:
    width = natural_width(table) - short
    if width < 1:
        return
    assert layout_table(table, width) is None
    assert table_text(table, width) == "\n".join(rich_table_lines(table, width)) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(ANY_TEXT), st.one_of(st.none(), st.integers(1, 120)))
def test_table_text_is_rich_text_for_any_cells_and_width(
    table: TextTable, width: int | None
) -> None:
    expected = "\n".join(rich_table_lines(table, width)) + "\n"
    assert table_text(table, width) == expected


def test_a_large_table_is_laid_out_without_rich() -> None:
    table = new_table("GROUP", "TOPIC", "PARTITION", "LAG", right=("PARTITION", "LAG"))
    for group in range(250):
        for partition in range(4):
            add_row(table, (f"group-{group:04d}", "orders", partition, None), end_section=True)
    lines = layout_table(table, None)
    assert lines is not None
    assert lines == rich_table_lines(table, None)
    assert lines[:3] == [
        "GROUP       TOPIC   PARTITION  LAG",
        "─" * 34,
        "group-0000  orders          0    -",
    ]


def test_cells_rich_measures_or_trims_specially() -> None:
    """Trailing spaces (kept on the left, dropped on the right), VS16, combining marks.

    A column of nothing but zero-width text is 0 cells wide, and Rich draws it blank.
    """
    cells = [
        ["ab  ", "☺\ufe0f", " \ufe0f", "\u0301x"],
        ["", "  ", "漢字 ", "😀"],
        [" ", "", "a  b ", "≤5 "],
        ["x"],
    ]
    for headers in (("A", "", "C", ""), ("ab  ", " ", "漢", ""), ("\ufe0f", "\u0301", "", "")):
        for right in ((False,) * 4, (True,) * 4, (True, False, True, False)):
            table = new_table(*headers)
            table.right = right
            for index, row in enumerate(cells):
                add_row(table, row, end_section=index % 2 == 0)
            assert layout_table(table, None) == rich_table_lines(table, None)
