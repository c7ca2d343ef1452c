"""Reads back what `kshare audit --report` drew: the HTML report's chart points, histogram
bars, archived rows and text, and anything that would load from outside the file."""

from __future__ import annotations

from html.parser import HTMLParser


class ReportParser(HTMLParser):
    """The data-* attributes the report puts on its SVG marks and table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.points: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.bars: dict[int, int] = {}
        self.rows: list[tuple[int, int]] = []
        self.text: list[str] = []
        self.outside: list[str] = []
        self.history: list[tuple[dict[str, str | None], str]] = []
        """Each history paragraph: its attributes and its text."""
        self._series: tuple[str, int] | None = None
        self._in_history = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("script", "link", "img", "iframe", "object") or {"src", "href"} & set(values):
            self.outside.append(tag)
        if tag == "g" and values.get("class") == "series":
            self._series = (values["data-topic"] or "", int(values["data-partition"] or -1))
            self.points[self._series] = []
        elif tag == "circle" and self._series is not None:
            self.points[self._series].append(
                (int(values["data-time-ms"] or 0), int(values["data-lag"] or 0))
            )
        elif tag == "rect" and values.get("class") == "bar":
            self.bars[int(values["data-delivery-count"] or 0)] = int(values["data-records"] or 0)
        elif tag == "p" and values.get("class") == "history":
            self.history.append((values, ""))
            self._in_history = True
        elif tag == "tr" and "data-offset" in values:
            self.rows.append((int(values["data-partition"] or 0), int(values["data-offset"] or 0)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "g":
            self._series = None
        elif tag == "p":
            self._in_history = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_history:
            attributes, text = self.history[-1]
            self.history[-1] = (attributes, text + data)
