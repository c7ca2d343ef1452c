"""A real Prometheus (Debian's ``prometheus``) started for a test, and its HTTP API.

The suite installs it (``scripts/test.sh``); a test that needs it and finds it
missing fails with the command that installs it, never skips: a monitoring check
that silently did not run is worse than a red one.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
SCRAPE = ROOT / "docs" / "prometheus" / "scrape.yml"
ALERTS = ROOT / "docs" / "prometheus" / "alerts.yml"
INSTALL = (
    "apt-get update && apt-get install -y prometheus chromium "
    "(as root or with sudo; scripts/test.sh does it)"
)


def require(program: str) -> str:
    """The program's path, or a failure that says how to install it."""
    path = shutil.which(program)
    if path is None:
        raise AssertionError(f"{program} is not installed: {INSTALL}")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def scrape_config(target: str, interval: str = "1s") -> dict[str, Any]:
    """docs/prometheus/scrape.yml, pointed at ``target`` and scraping every ``interval``."""
    config: dict[str, Any] = yaml.safe_load(SCRAPE.read_text())
    for job in config["scrape_configs"]:
        job["scrape_interval"] = interval
        job["scrape_timeout"] = interval
        job["static_configs"] = [{"targets": [target]}]
    return config


def fast_rules(destination: Path) -> Path:
    """docs/prometheus/alerts.yml with every ``for:`` at 0s: a test's few seconds of data
    cannot wait the minutes the shipped rules wait. Expressions are unchanged."""
    rules: dict[str, Any] = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            rule.pop("for", None)
    destination.write_text(yaml.safe_dump(rules, sort_keys=False))
    return destination


class Prometheus:
    """A running Prometheus: ``query`` and ``query_range`` through its HTTP API."""

    def __init__(self, base: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.base = base
        self.process = process
        self.log = log

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.base}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                document = json.load(response)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{path} {params}: {error.read().decode()}") from None
        assert document["status"] == "success", document
        return document["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant vector's samples: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", (expr, data)
        result: list[dict[str, Any]] = data["result"]
        return result

    def values(self, expr: str, *keys: str) -> dict[tuple[str, ...], float]:
        """The query's samples keyed by the labels ``keys``."""
        return {
            tuple(sample["metric"].get(key, "") for key in keys): float(sample["value"][1])
            for sample in self.query(expr)
        }

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self.api("alerts")["alerts"]
        return alerts

    def firing(self) -> set[tuple[str, str, str, str]]:
        """(alertname, group, topic, partition) of every firing alert."""
        return {
            (
                alert["labels"]["alertname"],
                alert["labels"].get("group", ""),
                alert["labels"].get("topic", ""),
                alert["labels"].get("partition", ""),
            )
            for alert in self.alerts()
            if alert["state"] == "firing"
        }


@contextmanager
def running_prometheus(
    directory: Path, config: Mapping[str, Any], rules: Path | None = None
) -> Iterator[Prometheus]:
    """Start ``prometheus`` with ``config`` (and ``rules``) in ``directory``; stop it after."""
    binary = require("prometheus")
    directory.mkdir(parents=True, exist_ok=True)
    document = dict(config)
    document["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    if rules is not None:
        document["rule_files"] = [str(rules)]
    config_path = directory / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(document, sort_keys=False))
    check = subprocess.run(
        [require("promtool"), "check", "config", str(config_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    port = free_port()
    log = directory / "prometheus.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config_path}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-lifecycle",
                "--log.level=warn",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    prometheus = Prometheus(f"http://127.0.0.1:{port}", process, log)
    try:

        def ready() -> bool:
            assert process.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(prometheus.base + "/-/ready", timeout=2) as answer:
                    return int(answer.status) == 200
            except (urllib.error.URLError, ConnectionError):
                return False

        wait_for(ready, timeout=60, interval=0.1, what="prometheus ready")
        yield prometheus
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
