"""``kshare audit --report FILE.html``: one self-contained HTML file an operator can mail.

Operators' machines are often offline, so nothing is fetched: no CDN, no
script, no web font; the charts are inline SVG drawn here and the styles
one inline stylesheet. Three parts:

* lag over time: one line per share-partition, a point per timeline row
  whose lag is known (dated by record timestamps or read at the end);
  beyond `MAX_POINTS` a series keeps the highest lag of each time slice,
  so a busy group's report stays a few hundred kilobytes;
* the delivery-count histogram: offsets per highest delivery count, from the
  deliveries ranges;
* the archived records: offset, delivery count, when, key and value.

Every point and bar carries its data as attributes (`data-time-ms`,
`data-lag`, `data-delivery-count`, `data-records`), so the file can be
checked -- and scraped -- without reading pixels.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from typing import Final

from kshare_cli.pipeline.models import (
    ArchivedRecord,
    AuditResult,
    DeliveryRange,
    SharePartitionHistory,
    TimelinePoint,
)
from kshare_cli.render.audit import history_line, iso_time
from kshare_cli.render.output_formats import bytes_text

__all__ = ["MAX_POINTS", "delivery_histogram", "lag_series", "render_report"]

MAX_POINTS: Final = 1000
"""Points per share-partition in the lag chart at most."""

_WIDTH: Final = 860
_HEIGHT: Final = 280
_MARGIN_LEFT: Final = 64
_MARGIN_RIGHT: Final = 16
_MARGIN_TOP: Final = 16
_MARGIN_BOTTOM: Final = 40
_COLOURS: Final = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
)
_PREVIEW: Final = 80

_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: left; }
td.n, th.n { text-align: right; }
svg text { font: 11px sans-serif; fill: #444; }
.axis { stroke: #888; } .note { color: #666; font-size: 12px; }
.legend span { display: inline-block; margin-right: 1em; }
code { font-size: 12px; }
"""


def _ms(value: datetime.datetime) -> int:
    return round(value.timestamp() * 1000)


def lag_series(points: Sequence[TimelinePoint]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Per (topic, partition), the (time in ms, lag) points the chart draws, in time order.

    Rows without a lag or a time are left out; a series longer than
    MAX_POINTS keeps, per equal time slice, the point with the highest lag
    (and always its first and last point).
    """
    series: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for point in points:
        if point.lag is None or point.time is None:
            continue
        key = (point.topic if point.topic is not None else point.topic_id, point.partition)
        series.setdefault(key, []).append((_ms(point.time), point.lag))
    for key, values in series.items():
        values.sort()
        if len(values) > MAX_POINTS:
            series[key] = _thinned(values)
    return dict(sorted(series.items()))


def _thinned(values: list[tuple[int, int]]) -> list[tuple[int, int]]:
    first, last = values[0], values[-1]
    span = max(last[0] - first[0], 1)
    slices = MAX_POINTS - 2
    best: dict[int, tuple[int, int]] = {}
    for value in values[1:-1]:
        slot = min((value[0] - first[0]) * slices // span, slices - 1)
        kept = best.get(slot)
        if kept is None or value[1] > kept[1]:
            best[slot] = value
    return [first, *(best[slot] for slot in sorted(best)), last]


def delivery_histogram(ranges: Sequence[DeliveryRange]) -> dict[int, int]:
    """Highest delivery count -> offsets that reached it, ascending."""
    histogram: dict[int, int] = {}
    for each in ranges:
        histogram[each.max_delivery_count] = histogram.get(each.max_delivery_count, 0) + each.count
    return dict(sorted(histogram.items()))


def _lag_chart(series: dict[tuple[str, int], list[tuple[int, int]]]) -> str:
    if not series:
        return '<p class="note">No lag is known at any point (see the timeline notes).</p>'
    times = [time for values in series.values() for time, _ in values]
    lags = [lag for values in series.values() for _, lag in values]
    low_time, high_time = min(times), max(times)
    time_span = max(high_time - low_time, 1)
    high_lag = max(max(lags), 1)
    plot_width = _WIDTH - _MARGIN_LEFT - _MARGIN_RIGHT
    plot_height = _HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM

    def x(time: int) -> float:
        return _MARGIN_LEFT + (time - low_time) * plot_width / time_span

    def y(lag: int) -> float:
        return _MARGIN_TOP + plot_height - lag * plot_height / high_lag

    parts = [
        f'<svg class="lag-chart" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        'aria-label="lag over time">',
        f'<line class="axis" x1="{_MARGIN_LEFT}" y1="{_MARGIN_TOP + plot_height}" '
        f'x2="{_WIDTH - _MARGIN_RIGHT}" y2="{_MARGIN_TOP + plot_height}"/>',
        f'<line class="axis" x1="{_MARGIN_LEFT}" y1="{_MARGIN_TOP}" x2="{_MARGIN_LEFT}" '
        f'y2="{_MARGIN_TOP + plot_height}"/>',
        f'<text x="{_MARGIN_LEFT - 6}" y="{_MARGIN_TOP + 4}" text-anchor="end">{high_lag}</text>',
        f'<text x="{_MARGIN_LEFT - 6}" y="{_MARGIN_TOP + plot_height}" text-anchor="end">0</text>',
        f'<text x="{_MARGIN_LEFT}" y="{_HEIGHT - 12}">{_time_label(low_time)}</text>',
        f'<text x="{_WIDTH - _MARGIN_RIGHT}" y="{_HEIGHT - 12}" text-anchor="end">'
        f"{_time_label(high_time)}</text>",
    ]
    legend = []
    for index, ((topic, partition), values) in enumerate(series.items()):
        colour = _COLOURS[index % len(_COLOURS)]
        name = html.escape(topic, quote=True)
        coordinates = " ".join(f"{x(time):.1f},{y(lag):.1f}" for time, lag in values)
        parts.append(f'<g class="series" data-topic="{name}" data-partition="{partition}">')
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coordinates}"/>'
        )
        for time, lag in values:
            parts.append(
                f'<circle class="point" data-time-ms="{time}" data-lag="{lag}" '
                f'cx="{x(time):.1f}" cy="{y(lag):.1f}" r="2" fill="{colour}">'
                f"<title>{name}:{partition} {_time_label(time)} lag {lag}</title></circle>"
            )
        parts.append("</g>")
        legend.append(f'<span style="color:{colour}">&#9632; {name}:{partition}</span>')
    parts.append("</svg>")
    return "".join(parts) + f'<p class="legend">{"".join(legend)}</p>'


def _time_label(milliseconds: int) -> str:
    moment = datetime.datetime.fromtimestamp(milliseconds / 1000, tz=datetime.UTC)
    return html.escape(iso_time(moment) or "")


def _histogram_chart(histogram: dict[int, int]) -> str:
    if not histogram:
        return '<p class="note">No delivered offset is recorded.</p>'
    plot_width = _WIDTH - _MARGIN_LEFT - _MARGIN_RIGHT
    plot_height = _HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM
    highest = max(histogram.values())
    slot = plot_width / len(histogram)
    bar = max(slot * 0.7, 1.0)
    parts = [
        f'<svg class="delivery-histogram" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        'aria-label="offsets per highest delivery count">',
        f'<line class="axis" x1="{_MARGIN_LEFT}" y1="{_MARGIN_TOP + plot_height}" '
        f'x2="{_WIDTH - _MARGIN_RIGHT}" y2="{_MARGIN_TOP + plot_height}"/>',
        f'<text x="{_MARGIN_LEFT - 6}" y="{_MARGIN_TOP + 4}" text-anchor="end">{highest}</text>',
    ]
    for index, (count, records) in enumerate(histogram.items()):
        height = records * plot_height / highest
        left = _MARGIN_LEFT + index * slot + (slot - bar) / 2
        top = _MARGIN_TOP + plot_height - height
        parts.append(
            f'<rect class="bar" data-delivery-count="{count}" data-records="{records}" '
            f'x="{left:.1f}" y="{top:.1f}" width="{bar:.1f}" height="{height:.1f}" '
            f'fill="#1f77b4"><title>{records} offsets delivered at most {count} times'
            "</title></rect>"
        )
        parts.append(
            f'<text x="{left + bar / 2:.1f}" y="{_MARGIN_TOP + plot_height + 14}" '
            f'text-anchor="middle">{count}</text>'
        )
        parts.append(
            f'<text x="{left + bar / 2:.1f}" y="{top - 3:.1f}" text-anchor="middle">'
            f"{records}</text>"
        )
    parts.append(
        f'<text x="{_MARGIN_LEFT + plot_width / 2:.1f}" y="{_HEIGHT - 6}" text-anchor="middle">'
        "highest delivery count</text></svg>"
    )
    return "".join(parts)


def _preview(value: bytes | None) -> str:
    if value is None:
        return "null"
    text = bytes_text(value)
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def _archived_when(record: ArchivedRecord) -> str:
    """When the record was archived; a Kafka 4.4 record still ARCHIVING, since when."""
    if record.state != "archived":
        return f"{record.state} since {iso_time(record.archiving_at) or 'unknown'}"
    return iso_time(record.archived_at) or "unknown"


def _headers(record: ArchivedRecord) -> str:
    """The record's headers as the CLI table shows them: name=value, comma-separated."""
    return ",".join(
        f"{name}={'' if value is None else _preview(value)}" for name, value in record.headers or ()
    )


def _archived_table(records: Sequence[ArchivedRecord]) -> str:
    if not records:
        return '<p class="note">No archived records.</p>'
    rows = [
        '<table class="archived"><thead><tr><th>topic</th><th class="n">partition</th>'
        '<th class="n">offset</th><th class="n">delivery count</th><th>archived at</th>'
        "<th>key</th><th>value</th><th>headers</th></tr></thead><tbody>"
    ]
    for record in records:
        topic = record.topic if record.topic is not None else record.topic_id
        key = _preview(record.key) if record.record_found else "(gone)"
        value = _preview(record.value) if record.record_found else "(gone)"
        headers = _headers(record) if record.record_found else "(gone)"
        rows.append(
            f'<tr data-partition="{record.partition}" data-offset="{record.offset}">'
            f"<td>{html.escape(topic)}</td><td class=n>{record.partition}</td>"
            f"<td class=n>{record.offset}</td><td class=n>{record.delivery_count}</td>"
            f"<td>{html.escape(_archived_when(record))}</td>"
            f"<td><code>{html.escape(key)}</code></td><td><code>{html.escape(value)}</code></td>"
            f"<td><code>{html.escape(headers)}</code></td></tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _history(history: Sequence[SharePartitionHistory], capture: str | None) -> str:
    """A paragraph per share-partition whose history the audit does not hold whole: what
    `audit.history_line` says, with the unknown offsets as data attributes."""
    lines = []
    for each in history:
        line = history_line(each, capture=capture)
        if line is None:
            continue
        since = iso_time(each.history_from) or "unknown"
        attributes = f'data-partition="{each.partition}" data-history-from="{html.escape(since)}"'
        if each.unknown_first_offset is not None:
            attributes += f' data-unknown-first-offset="{each.unknown_first_offset}"'
        if each.unknown_last_offset is not None:
            attributes += f' data-unknown-last-offset="{each.unknown_last_offset}"'
        lines.append(f'<p class="history" {attributes}>{html.escape(line)}</p>')
    return "".join(lines)


def render_report(
    result: AuditResult, *, generated_at: datetime.datetime, capture: str | None = None
) -> str:
    """The whole report as one HTML document (UTF-8 text); capture names the --history
    directory, when the records came from one."""
    series = lag_series(result.timeline)
    histogram = delivery_histogram(result.deliveries)
    share_partitions = {(point.topic_id, point.partition) for point in result.timeline}
    group = html.escape(result.group_id)
    notes = "".join(f'<p class="note">{html.escape(note)}</p>' for note in result.notes)
    notes += _history(result.history, capture)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>kshare audit: {group}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Share group <code>{group}</code></h1>"
        f'<p class="summary">{result.state_records} state records, '
        f"{len(share_partitions)} share-partitions, {sum(histogram.values())} offsets "
        f"with a recorded delivery, {len(result.archived)} archived. "
        f"Generated {html.escape(iso_time(generated_at) or '')} by kshare audit.</p>"
        f"{notes}"
        "<h2>Lag over time</h2>"
        '<p class="note">Kafka\'s lag (log end offset - start offset - delivery-complete count) '
        "after each state record; before the last one the log end offset is dated by the "
        "source records' timestamps.</p>"
        f"{_lag_chart(series)}"
        "<h2>Delivery counts</h2>"
        '<p class="note">Offsets by the highest delivery count they reached.</p>'
        f"{_histogram_chart(histogram)}"
        "<h2>Archived records</h2>"
        f"{_archived_table(result.archived)}"
        "</body></html>\n"
    )
