"""``kshare audit``'s renderers on hand-built results: stdout formats and the HTML report.

The report is parsed with html.parser: every chart point and bar carries its
data as attributes, and they must be exactly the rows' lags and the ranges'
record counts; nothing in the file may point outside it (operators are offline).
"""

from __future__ import annotations

import csv
import datetime
import io
import json
from dataclasses import replace

from kshare_cli.pipeline.models import (
    ArchivedRecord,
    AuditJob,
    AuditResult,
    DeliveryRange,
    SharePartitionHistory,
    TimelinePoint,
)
from kshare_cli.render.audit import history_lines, iso_time, render_audit, render_rows
from kshare_cli.render.audit_report import MAX_POINTS, lag_series, render_report
from tests.support.report import ReportParser

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def point(
    partition: int,
    seconds: float,
    lag: int | None,
    *,
    basis: str | None = "record_timestamps",
    topic: str | None = "orders",
    state_offset: int = 0,
    archiving: int | None = 0,
) -> TimelinePoint:
    return TimelinePoint(
        group_id="g",
        topic_id="Xk3",
        topic=topic,
        partition=partition,
        time=_at(seconds),
        state_partition=7,
        state_offset=state_offset,
        record="update",
        start_offset=3,
        delivery_complete_count=1,
        end_offset=9,
        available=2,
        acknowledged=3,
        archived=1,
        archiving=archiving,
        unrecorded=0,
        max_delivery_count=4,
        log_end_offset=None if lag is None else 13 + lag,
        lag=lag,
        lag_basis=None if lag is None else basis,
    )


def delivery(first: int, last: int, highest: int, state: str = "acknowledged") -> DeliveryRange:
    return DeliveryRange(
        group_id="g",
        topic_id="Xk3",
        topic="orders",
        partition=0,
        first_offset=first,
        last_offset=last,
        max_delivery_count=highest,
        final_state=state,
        final_delivery_count=highest,
        complete=True,
        last_changed=_at(5),
    )


def archived(offset: int, value: bytes | None, *, found: bool = True) -> ArchivedRecord:
    return ArchivedRecord(
        group_id="g",
        topic_id="Xk3",
        topic="orders",
        partition=1,
        offset=offset,
        delivery_count=5,
        archived_at=_at(7.25),
        record_found=found,
        key=b"k" if found else None,
        value=value,
        timestamp=_at(1) if found else None,
        headers=(("h", b"\xff\x00"),) if found else None,
    )


def _ms(seconds: float) -> int:
    return round(_at(seconds).timestamp() * 1000)


def test_report_points_bars_and_rows_are_the_data() -> None:
    result = AuditResult(
        AuditJob.TIMELINE,
        "g<&>",
        timeline=(
            point(0, 0, 5),
            point(0, 1.5, 3),
            point(0, 2, None),  # unknown lag: no point
            point(0, 3, 0, basis="end_offsets"),
            point(1, 0.25, 7, topic=None),  # a deleted topic is named by its id
        ),
        deliveries=(delivery(0, 9, 1), delivery(10, 10, 5, "archived"), delivery(11, 12, 2)),
        archived=(archived(3, b"<script>alert(1)</script>"), archived(4, None, found=False)),
        state_records=42,
    )

    html = render_report(result, generated_at=_at(60))

    parser = ReportParser()
    parser.feed(html)
    assert parser.outside == []
    assert parser.points == {
        ("orders", 0): [(_ms(0), 5), (_ms(1.5), 3), (_ms(3), 0)],
        ("Xk3", 1): [(_ms(0.25), 7)],
    }
    assert parser.bars == {1: 10, 2: 2, 5: 1}
    assert parser.rows == [(1, 3), (1, 4)]
    text = "".join(parser.text)
    assert "<script>alert(1)</script>" in text  # shown as text, never as markup
    assert "<script>" not in html
    assert "g<&>" in text and "42 state records" in text and "(gone)" in text


def test_a_long_series_is_thinned_to_its_highest_points() -> None:
    points = [point(0, index, index % 7) for index in range(5 * MAX_POINTS)]

    series = lag_series(points)[("orders", 0)]

    assert len(series) <= MAX_POINTS
    assert series[0] == (_ms(0), 0) and series[-1] == (
        _ms(5 * MAX_POINTS - 1),
        (5 * MAX_POINTS - 1) % 7,
    )
    # Each kept point is the highest of its slice: a slice of five seconds holds a 6 or 5.
    assert all(lag >= 4 for _, lag in series[1:-1])


def test_an_empty_result_still_makes_a_report() -> None:
    html = render_report(AuditResult(AuditJob.ARCHIVED, "g"), generated_at=_at(0))

    parser = ReportParser()
    parser.feed(html)
    assert parser.points == {} and parser.bars == {} and parser.rows == []
    assert "No archived records." in "".join(parser.text)


def test_json_carries_every_field_times_as_iso_and_bytes_as_text_or_base64() -> None:
    result = AuditResult(AuditJob.ARCHIVED, "g", archived=(archived(3, b"\xff\xfe"),))

    document = json.loads(render_audit(result, "json"))

    (row,) = document["archived"]
    assert document["job"] == "archived" and document["group_id"] == "g"
    assert row["archived_at"] == "2026-01-01T00:00:07.250Z"
    assert (row["key"], row["value"], row["value_encoding"]) == ("k", "//4=", "base64")
    assert row["headers"] == [{"key": "h", "value": "/wA=", "value_encoding": "base64"}]
    assert (row["partition"], row["offset"], row["delivery_count"], row["record_found"]) == (
        1,
        3,
        5,
        True,
    )


def test_table_marks_estimated_lags_and_unknowns() -> None:
    result = AuditResult(
        AuditJob.TIMELINE,
        "g",
        timeline=(point(0, 0, 5), point(0, 1, None), point(0, 2, 0, basis="end_offsets")),
    )

    lines = render_audit(result, "table").splitlines()

    assert lines[0].split() == [
        "TOPIC",
        "PARTITION",
        "TIME",
        "RECORD",
        "START-OFFSET",
        "WINDOW-END",
        "ACKNOWLEDGED",
        "AVAILABLE",
        "ARCHIVING",
        "ARCHIVED",
        "UNRECORDED",
        "MAX-DELIVERIES",
        "LOG-END-OFFSET",
        "LAG",
    ]
    assert lines[2].split()[-2:] == ["18", "≈5"]
    assert lines[3].split()[-2:] == ["-", "-"]
    assert lines[4].split()[-2:] == ["13", "0"]
    assert lines[5].startswith("≈: lag from the log end offset dated by")


def test_timeline_counts_archiving_apart_from_archived_in_every_format() -> None:
    """Kafka 4.4's ARCHIVING records (on their way to the DLQ) are a count of their own."""
    result = AuditResult(AuditJob.TIMELINE, "g", timeline=(point(0, 0, 5, archiving=2),))

    (header, _, row, *_) = render_audit(result, "table").splitlines()
    cells = dict(zip(header.split(), row.split(), strict=False))
    (document,) = json.loads(render_audit(result, "json"))["timeline"]
    (csv_row,) = csv.DictReader(io.StringIO(render_audit(result, "csv")))

    assert (cells["ARCHIVING"], cells["ARCHIVED"]) == ("2", "1")
    assert (document["archiving"], document["archived"]) == (2, 1)
    assert (csv_row["archiving"], csv_row["archived"]) == ("2", "1")


def test_archived_rows_give_when_archiving_and_when_archived() -> None:
    """ARCHIVING then ARCHIVED: both times; a state 3 left behind: not archived yet; Kafka 4.2
    (archived directly): no ARCHIVING time; a pruned history: unknown."""
    both = replace(archived(3, b"v"), archiving_at=_at(7))
    left_behind = replace(
        archived(4, b"v"), state="archiving", archived_at=None, archiving_at=_at(8)
    )
    direct = archived(5, b"v")
    pruned = replace(archived(6, b"v"), archived_at=None)
    result = AuditResult(AuditJob.ARCHIVED, "g", archived=(both, left_behind, direct, pruned))

    documents = json.loads(render_audit(result, "json"))["archived"]
    lines = render_audit(result, "table", width=400).splitlines()
    header = lines[0].split()
    at = header.index("ARCHIVING-AT")

    assert [(row["archiving_at"], row["archived_at"]) for row in documents] == [
        ("2026-01-01T00:00:07.000Z", "2026-01-01T00:00:07.250Z"),
        ("2026-01-01T00:00:08.000Z", None),
        (None, "2026-01-01T00:00:07.250Z"),
        (None, None),
    ]
    assert header[at - 1 : at + 2] == ["STATE", "ARCHIVING-AT", "ARCHIVED-AT"]
    assert [line.split()[at - 1 : at + 2] for line in lines[2:6]] == [
        ["archived", "2026-01-01T00:00:07.000Z", "2026-01-01T00:00:07.250Z"],
        ["archiving", "2026-01-01T00:00:08.000Z", "-"],
        ["archived", "-", "2026-01-01T00:00:07.250Z"],
        ["archived", "unknown", "unknown"],
    ]


def test_csv_header_once_for_follow_batches() -> None:
    first = render_rows(AuditJob.DELIVERIES, [delivery(0, 1, 1)], "csv")
    more = render_rows(AuditJob.DELIVERIES, [delivery(2, 3, 2)], "csv", csv_header=False)

    rows = list(csv.reader(io.StringIO(first + more)))
    assert rows[0][:5] == ["group_id", "topic_id", "topic", "partition", "first_offset"]
    assert [row[4:7] for row in rows[1:]] == [["0", "1", "1"], ["2", "3", "2"]]


def test_iso_time_is_utc_with_milliseconds() -> None:
    zone = datetime.timezone(datetime.timedelta(hours=2))
    assert iso_time(datetime.datetime(2026, 1, 1, 2, 0, 0, 123456, tzinfo=zone)) == (
        "2026-01-01T00:00:00.123Z"
    )
    assert iso_time(None) is None


def history(
    partition: int,
    missing: str | None,
    first: int | None = None,
    last: int | None = None,
) -> SharePartitionHistory:
    return SharePartitionHistory(
        group_id="g",
        topic_id="Xk3",
        topic="orders",
        partition=partition,
        history_from=_at(60),
        history_complete=missing is None,
        history_missing=missing,
        unknown_first_offset=first,
        unknown_last_offset=last,
    )


KEEP = "`kshare audit capture` keeps state records before Kafka prunes them"
HISTORIES = (
    history(0, None),
    history(1, "pruned", 0, 14),
    history(2, "pruned"),
    history(3, "gap", 5, 8),
    history(4, "gap"),
    history(5, "pruned", 0, None),
    history(6, "pruned", 0, 0),
)


def test_history_lines_name_the_unknown_offsets_per_share_partition() -> None:
    assert history_lines(HISTORIES, capture="/cap") == (
        "offsets 0–14 of orders:1: pruned by Kafka before this audit, not in these results "
        f"(state read from 2026-01-01T00:01:00.000Z); {KEEP}",
        "orders:2: state records before 2026-01-01T00:01:00.000Z pruned by Kafka before this "
        "audit; every offset is still known, outcomes reached before then have time unknown; "
        + KEEP,
        "offsets 5–8 of orders:3: state records pruned by Kafka between the capture in /cap "
        "and the live log; what is shown for them is from before, and may have changed since",
        "orders:4: state records pruned by Kafka between the capture in /cap and the live log; "
        "every offset is still known, the time of what happened in between is unknown",
        "offsets 0 and after of orders:5: pruned by Kafka before this audit, not in these "
        f"results (state read from 2026-01-01T00:01:00.000Z); {KEEP}",
        "offset 0 of orders:6: pruned by Kafka before this audit, not in these results "
        f"(state read from 2026-01-01T00:01:00.000Z); {KEEP}",
    )


def test_every_output_says_which_offsets_are_unknown() -> None:
    """JSON's history carries the range; the table ends with the line, also without rows
    (every archived record was pruned); the report has it with the range as data."""
    result = AuditResult(AuditJob.ARCHIVED, "g", history=HISTORIES[:2])
    (line,) = history_lines(result.history)

    document = json.loads(render_audit(result, "json"))
    table = render_audit(result, "table")
    with_rows = render_audit(
        AuditResult(
            AuditJob.DELIVERIES, "g", deliveries=(delivery(15, 20, 1),), history=HISTORIES[:2]
        ),
        "table",
    )
    parser = ReportParser()
    parser.feed(render_report(result, generated_at=_at(0)))

    assert [
        (each["partition"], each["unknown_first_offset"], each["unknown_last_offset"])
        for each in document["history"]
    ] == [(0, None, None), (1, 0, 14)]
    assert table.splitlines()[0].split()[:3] == ["TOPIC", "PARTITION", "OFFSET"]
    assert table.splitlines()[-1] == line
    assert with_rows.splitlines()[-1] == line and "15-20" in with_rows
    # Machine formats keep stdout to rows; stderr says it.
    assert line not in render_audit(result, "csv") + render_audit(result, "jsonl")
    ((attributes, text),) = parser.history
    assert text == line
    assert (attributes["data-unknown-first-offset"], attributes["data-unknown-last-offset"]) == (
        "0",
        "14",
    )
