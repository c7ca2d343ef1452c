"""Rendering ``ShareGroupOffsets``: ``kshare describe`` (offsets view).

``plain`` is ``kafka-share-groups.sh --describe [--verbose]`` byte for byte
(printOffsets in Kafka 4.2's ShareGroupCommand), except that kshare sorts groups
and partitions everywhere. Like Kafka, it prints the broker's lag only: a lag
kshare had to bound itself shows as ``-`` there. The table adds the log end
offset, the total lag per group and the bound, marked ``≤`` (a bound of 0 is exact,
and shown as ``0``). The total is the sum of the known lags: when some
share-partition's lag is unknown it is marked ``≥`` (a lower bound), or ``≤N+?``
when the known parts are themselves bounds.

Groups that failed (not found, not authorised) are not rendered here: they are
the result's ``errors()``, which the command reports on stderr. The structured
formats carry them too, as data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kshare_cli.admin.models import (
    GroupFailure,
    GroupOffsets,
    LagSource,
    ShareGroupOffsets,
    SharePartitionOffset,
)
from kshare_cli.render.ages import format_age
from kshare_cli.render.listing import broker_errors_document
from kshare_cli.render.output_formats import (
    OutputFormat,
    add_row,
    dispatch,
    error_cell,
    error_document,
    java_row,
    new_table,
    or_dash,
    per_group_csv_rows,
    table_text,
)

__all__ = [
    "lag_text",
    "offsets_document",
    "offsets_rows",
    "render_offsets",
    "total_lag_captions",
    "total_lag_text",
]

#: printOffsetFormat: GROUP and TOPIC are at least 15 wide, PARTITION 10, the epoch and
#: offset 13 each, LAG unpadded.
_MIN_ID_WIDTH = 15
_PARTITION_WIDTH = 10
_NUMBER_WIDTH = 13

CSV_HEADER = (
    "group_id",
    "topic",
    "partition",
    "start_offset",
    "end_offset",
    "lag",
    "lag_source",
    "leader_epoch",
    "error",
)

#: (group id, topic, partition) → seconds: ``describe --time-lag`` (services/time_lag.py).
LagAges = Mapping[tuple[str, str, int], float | None]

BOUND_CAPTION = (
    "≤N: an upper bound, log end offset − start offset; the broker reported no lag "
    "(DescribeShareGroupOffsets v0, or lag unknown since an offset reset)."
)
PARTIAL_CAPTION = (
    "TOTAL ≥N: the sum of the known lags, a lower bound; some share-partitions' lag is unknown (-)."
)
PARTIAL_BOUND_CAPTION = (
    "TOTAL ≤N+?: the sum of the known lags, some of them upper bounds, "
    "plus share-partitions whose lag is unknown (-)."
)


def render_offsets(
    offsets: ShareGroupOffsets,
    fmt: OutputFormat | str,
    *,
    verbose: bool = False,
    width: int | None = None,
    lag_ages: LagAges | None = None,
) -> str:
    """The offsets in ``fmt``; ``verbose`` adds Kafka's LEADER-EPOCH column (plain, table).

    ``lag_ages`` (``--time-lag``) adds LAG-AGE to the table and ``lag_seconds`` to
    JSON and YAML; ``plain`` stays Kafka's bytes, JSONL and CSV keep their columns.
    """
    return dispatch(
        fmt,
        plain=lambda: "".join(_plain_group(group, verbose) for group in offsets.succeeded()),
        table=lambda: _table(offsets, verbose, width, lag_ages),
        document=lambda: offsets_document(offsets, lag_ages),
        rows=lambda: offsets_rows(offsets),
        csv_header=CSV_HEADER,
        csv_rows=lambda: _csv_rows(offsets),
    )


def lag_text(lag: int | None, source: LagSource | None) -> str:
    """A lag for people: ``12``, ``≤12`` for a bound, ``-`` when unknown.

    A bound of 0 (the start offset at the log end, as after a reset to the latest
    offset) is exact, as no lag is below 0: ``0``, with no sign.
    """
    if lag is None:
        return "-"
    return f"≤{lag}" if _upper_bound(lag, source) else str(lag)


def _upper_bound(lag: int, source: LagSource | None) -> bool:
    """Whether a lag is shown as an upper bound: kshare's bound, unless it is 0."""
    return source == "bound" and lag != 0


def total_lag_text(
    total: int | None,
    source: LagSource | None,
    complete: bool | None,
    number: Callable[[int], str] = str,
) -> str:
    """A group's total lag for people, one definition for describe, inflight and the dashboard.

    ``12`` exact, ``≤12`` an upper bound, ``≥12`` the sum of the known lags when some
    are unknown (a lower bound), ``≤12+?`` when those known lags are bounds too (then
    the figure bounds nothing), ``-`` when no lag is known. ``number`` formats the
    figure (the dashboard separates thousands).
    """
    if total is None:
        return "-"
    figure = number(total)
    if complete is False:
        return f"≤{figure}+?" if source == "bound" else f"≥{figure}"
    return f"≤{figure}" if _upper_bound(total, source) else figure


def total_lag_captions(totals: Iterable[tuple[LagSource | None, bool | None]]) -> list[str]:
    """The captions explaining the incomplete totals' markers among ``totals``."""
    incomplete = {source for source, complete in totals if complete is False}
    captions = []
    if incomplete - {"bound"}:
        captions.append(PARTIAL_CAPTION)
    if "bound" in incomplete:
        captions.append(PARTIAL_BOUND_CAPTION)
    return captions


# --------------------------------------------------------------------------- plain


def _plain_group(group: GroupOffsets, verbose: bool) -> str:
    # Kafka skips share-partitions the broker answered with an error (it logs them).
    rows = [offset for offset in group.partitions if offset.error is None]
    if not rows:
        return f"\nShare group '{group.group_id}' has no offset information.\n"
    group_width = max(_MIN_ID_WIDTH, len(group.group_id))
    topic_width = max([_MIN_ID_WIDTH, *(len(offset.topic) for offset in rows)])
    if verbose:
        widths: tuple[int, ...] = (
            group_width,
            topic_width,
            _PARTITION_WIDTH,
            _NUMBER_WIDTH,
            _NUMBER_WIDTH,
        )
        header: tuple[str, ...] = (
            "GROUP",
            "TOPIC",
            "PARTITION",
            "LEADER-EPOCH",
            "START-OFFSET",
            "LAG",
        )
    else:
        widths = (group_width, topic_width, _PARTITION_WIDTH, _NUMBER_WIDTH)
        header = ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")
    text = "\n" + java_row(widths, header)
    for offset in rows:
        values: list[object] = [group.group_id, offset.topic, offset.partition]
        if verbose:
            values.append(or_dash(offset.leader_epoch))
        values += [or_dash(offset.start_offset), or_dash(offset.broker_lag)]
        text += "\n" + java_row(widths, values)
    return text + "\n"


# --------------------------------------------------------------------------- table


def _table(
    offsets: ShareGroupOffsets, verbose: bool, width: int | None, lag_ages: LagAges | None
) -> str:
    groups = offsets.succeeded()
    if not groups:
        return ""
    with_errors = any(offset.error is not None for g in groups for offset in g.partitions)
    with_bound = any(
        offset.lag is not None and _upper_bound(offset.lag, offset.lag_source)
        for g in groups
        for offset in g.partitions
    )
    columns = ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "END-OFFSET", "LAG"]
    if lag_ages is not None:
        columns.append("LAG-AGE")
    if verbose:
        columns.append("LEADER-EPOCH")
    if with_errors:
        columns.append("ERROR")
    table = new_table(
        *columns,
        right=("PARTITION", "START-OFFSET", "END-OFFSET", "LAG", "LAG-AGE", "LEADER-EPOCH"),
    )
    for group in groups:
        if not group.partitions:
            _add(table, columns, [group.group_id, "(no offset information)"], True)
            continue
        for offset in group.partitions:
            age = (lag_ages or {}).get((group.group_id, offset.topic, offset.partition))
            _add(
                table,
                columns,
                [
                    group.group_id,
                    offset.topic,
                    offset.partition,
                    or_dash(offset.start_offset),
                    or_dash(offset.end_offset),
                    lag_text(offset.lag, offset.lag_source),
                    or_dash(offset.leader_epoch),
                    offset.error.name if offset.error is not None else "",
                    format_age(age),
                ],
                False,
            )
        total = total_lag_text(group.total_lag, group.total_lag_source, group.total_lag_complete)
        _add(table, columns, [group.group_id, "TOTAL", "", "", "", total], True)
    captions = [BOUND_CAPTION] if with_bound else []
    captions += total_lag_captions(
        (group.total_lag_source, group.total_lag_complete) for group in groups
    )
    return table_text(table, width, captions)


#: Where each optional column's cell sits in the cells ``_table`` passes to ``_add``.
_OPTIONAL_CELLS = {"LEADER-EPOCH": 6, "ERROR": 7, "LAG-AGE": 8}


def _add(table: Any, columns: list[str], cells: list[object], end: bool) -> None:
    cells = cells + [""] * (9 - len(cells))
    row = cells[:6] + [cells[_OPTIONAL_CELLS[column]] for column in columns[6:]]
    add_row(table, row, end_section=end)


# --------------------------------------------------------------------------- structured


def _partition_document(offset: SharePartitionOffset) -> dict[str, Any]:
    return {
        "topic": offset.topic,
        "partition": offset.partition,
        "start_offset": offset.start_offset,
        "end_offset": offset.end_offset,
        "lag": offset.lag,
        "lag_source": offset.lag_source,
        "leader_epoch": offset.leader_epoch,
        "error": error_document(offset.error),
        "end_offset_error": error_document(offset.end_offset_error),
    }


def offsets_document(offsets: ShareGroupOffsets, lag_ages: LagAges | None = None) -> dict[str, Any]:
    """Every group with its share-partitions (``docs/schemas/offsets.schema.json``).

    With ``lag_ages`` each share-partition carries ``lag_seconds`` (null: nothing
    waits, or the record could not be read); without, the key is absent.
    """
    groups: list[dict[str, Any]] = []
    for result in offsets.sorted():
        if isinstance(result, GroupFailure):
            groups.append({"group_id": result.group_id, "error": error_document(result.error)})
            continue
        groups.append(
            {
                "group_id": result.group_id,
                "error": None,
                "total_lag": result.total_lag,
                "total_lag_source": result.total_lag_source,
                "total_lag_complete": result.total_lag_complete,
                "partitions": [
                    _partition_document(offset)
                    if lag_ages is None
                    else {
                        **_partition_document(offset),
                        "lag_seconds": lag_ages.get(
                            (result.group_id, offset.topic, offset.partition)
                        ),
                    }
                    for offset in result.partitions
                ],
            }
        )
    return {"groups": groups, "broker_errors": broker_errors_document(offsets.broker_failures)}


def offsets_rows(offsets: ShareGroupOffsets) -> list[dict[str, Any]]:
    """One object per share-partition, or per failed group (``offsets-row.schema.json``).

    A failed group's line is ``{"group_id", "error"}``, as in every JSONL output; a
    group without offset information has no line.
    """
    rows: list[dict[str, Any]] = []
    for result in offsets.sorted():
        if isinstance(result, GroupFailure):
            rows.append({"group_id": result.group_id, "error": error_document(result.error)})
            continue
        for offset in result.partitions:
            row = {"group_id": result.group_id, **_partition_document(offset)}
            # The rows keep CSV's columns; stderr names a leader whose end offset is missing.
            del row["end_offset_error"]
            rows.append(row)
    return rows


def _csv_rows(offsets: ShareGroupOffsets) -> list[tuple[Any, ...]]:
    return per_group_csv_rows(offsets.sorted(), CSV_HEADER, _offset_cells)


def _offset_cells(group: GroupOffsets) -> list[tuple[Any, ...]]:
    return [
        (
            group.group_id,
            offset.topic,
            offset.partition,
            offset.start_offset,
            offset.end_offset,
            offset.lag,
            offset.lag_source,
            offset.leader_epoch,
            error_cell(offset.error),
        )
        for offset in group.partitions
    ]
