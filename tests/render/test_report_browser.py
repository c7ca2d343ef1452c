"""The audit ``--report`` HTML and the exporter's ``/`` page, opened in a real browser.

Debian's headless Chromium (installed by ``scripts/test.sh``) loads each page and is
driven over the DevTools protocol on ``--remote-debugging-pipe`` (file descriptors 3
and 4, NUL-separated JSON: no library needed). The test reads back through the DOM
what was laid out -- the charts' sizes and marks, the tables' rows and text -- fails on
any console error or uncaught exception, and keeps a PNG screenshot of each page
under its tmp dir for a human to look at.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from kshare_cli.pipeline.models import AuditJob, AuditResult
from kshare_cli.render.audit_report import render_report
from kshare_cli.render.metrics import index_page
from tests.render.test_audit_render import _at, archived, delivery, point
from tests.support.prometheus import require

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


class Browser:
    """One headless Chromium and one page, spoken to over the DevTools pipe."""

    def __init__(self, profile: Path) -> None:
        commands_read, self._commands = os.pipe()
        self._answers, answers_write = os.pipe()

        def on_fds_3_and_4() -> None:
            # Chromium reads commands on fd 3 and writes answers on fd 4.
            os.dup2(commands_read, 3)
            os.dup2(answers_write, 4)

        self.process = subprocess.Popen(
            [require("chromium"), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=on_fds_3_and_4,
        )
        os.close(commands_read)
        os.close(answers_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                raise ConnectionError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        document: dict[str, Any] = json.loads(message)
        return document

    def call(self, method: str, *, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = self.session
        os.write(self._commands, json.dumps(request).encode() + b"\0")
        while True:
            message = self._read()
            if message.get("id") == self._next_id:
                assert "error" not in message, (method, message)
                result: dict[str, Any] = message["result"]
                return result
            self.events.append(message)

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + 30
        while not any(event.get("method") == "Page.loadEventFired" for event in self.events):
            assert time.monotonic() < deadline, "the page did not load"
            self.events.append(self._read())

    def evaluate(self, expression: str) -> Any:
        answer = self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True
        )
        assert "exceptionDetails" not in answer, answer
        return answer["result"]["value"]

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:300])
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(json.dumps(params["args"])[:300])
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    def screenshot(self, path: Path) -> Path:
        height = self.evaluate("document.documentElement.scrollHeight")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=1000,
            height=int(height),
            deviceScaleFactor=1,
            mobile=False,
        )
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (ConnectionError, OSError):
            pass
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        os.close(self._commands)
        os.close(self._answers)


def _report() -> str:
    result = AuditResult(
        AuditJob.TIMELINE,
        "orders-consumers",
        timeline=tuple(point(0, second, lag) for second, lag in enumerate((5, 8, 12, 9, 4, 0)))
        + tuple(point(1, second + 0.5, lag) for second, lag in enumerate((3, 3, 6, 2, 1))),
        deliveries=(delivery(0, 9, 1), delivery(10, 12, 2), delivery(13, 13, 5, "archived")),
        archived=(archived(3, b'{"order": 3}'), archived(13, None, found=False)),
        state_records=42,
    )
    return render_report(result, generated_at=_at(60))


def test_the_report_and_the_exporter_page_render_in_chromium(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(_report())
    index = tmp_path / "index.html"
    index.write_text(index_page("prod"))
    browser = Browser(tmp_path / "chromium-profile")
    try:
        browser.open(report.as_uri())
        assert browser.errors() == []
        charts = browser.evaluate(
            "[...document.querySelectorAll('svg')].map(svg => {"
            " const box = svg.getBoundingClientRect();"
            " return [svg.getAttribute('class'), Math.round(box.width), Math.round(box.height),"
            " svg.querySelectorAll('polyline, circle, rect.bar').length]; })"
        )
        assert [name for name, *_ in charts] == ["lag-chart", "delivery-histogram"]
        for name, width, height, marks in charts:
            assert width >= 800 and height >= 250 and marks > 0, (name, width, height, marks)
        bars = browser.evaluate(
            "[...document.querySelectorAll('rect.bar')].map(bar => "
            "Math.round(bar.getBoundingClientRect().height))"
        )
        assert len(bars) == 3 and min(bars) > 0, bars
        table = browser.evaluate(
            "[[...document.querySelectorAll('table.archived th')].map(th => th.textContent),"
            " [...document.querySelectorAll('table.archived tbody tr')].map(row =>"
            " [...row.cells].map(cell => cell.innerText))]"
        )
        headers, rows = table
        assert headers[-3:] == ["key", "value", "headers"], headers
        assert len(rows) == 2
        assert rows[0][-3:] == ["k", '{"order": 3}', "h=base64:/wA="], rows[0]
        assert rows[1][-3:] == ["(gone)", "(gone)", "(gone)"], rows[1]
        assert browser.screenshot(tmp_path / "report.png").stat().st_size > 10_000

        browser.open(index.as_uri())
        assert browser.errors() == []
        items = browser.evaluate("[...document.querySelectorAll('li')].map(li => li.innerText)")
        assert any(item.startswith("kshare_share_partition_lag") for item in items), items
        assert browser.evaluate("document.body.getBoundingClientRect().height") > 100
        assert browser.screenshot(tmp_path / "exporter-index.png").stat().st_size > 1_000
    finally:
        browser.close()
