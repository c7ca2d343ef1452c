"""Record ``kshare exporter`` over the monitoring scenario with a real Prometheus, for
``docs/prometheus/alerts.test.yml``.

    .venv/bin/python scripts/record_exporter_scenario.py

Plays ``tests/support/monitoring.py`` (the draining, stalled, stopped and poison
groups), then keeps it quiet, stops broker 2 (the stopped group's coordinator), then
broker 1 (every refresh fails), then the exporter. Prometheus scrapes every second
the whole time; every series of the job is read back with ``query_range`` at a 1 s
step and written to ``docs/prometheus/recording/exporter-scenario.json``, and the
``input_series`` of ``alerts.test.yml`` are rewritten from it (its tests stay).

Random ports are replaced by fixed names (``instance="kshare-exporter:9932"``,
``address="kafka-N:9092"``) so the file does not change with them.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import monitoring  # noqa: E402
from tests.support.golden import wait_for  # noqa: E402
from tests.support.prometheus import Prometheus, running_prometheus, scrape_config  # noqa: E402

RECORDING = ROOT / "docs" / "prometheus" / "recording" / "exporter-scenario.json"
TESTS = ROOT / "docs" / "prometheus" / "alerts.test.yml"
QUIET_SCRAPES = 8
FAULT_SCRAPES = 8


def _scrapes(prometheus: Prometheus) -> int:
    found = prometheus.query('count_over_time(up{job="kshare-exporter"}[1h])')
    return int(float(found[0]["value"][1])) if found else 0


def _wait_scrapes(prometheus: Prometheus, count: int) -> None:
    target = _scrapes(prometheus) + count
    wait_for(lambda: _scrapes(prometheus) >= target, 120, interval=0.2, what=f"{count} scrapes")


def _wait_value(prometheus: Prometheus, expr: str, at_least: float) -> None:
    def reached() -> bool:
        return any(float(s["value"][1]) >= at_least for s in prometheus.query(expr))

    wait_for(reached, 120, interval=0.2, what=f"{expr} >= {at_least}")


def record(directory: Path) -> tuple[list[dict[str, object]], float, float]:
    with monitoring.monitoring_scenario() as scenario:
        exporter = monitoring.start_exporter(scenario, directory / "profiles.toml")
        try:
            wait_for(lambda: exporter.get("/healthz")[0] == 200, 30)
            config = scrape_config(monitoring.target_of(exporter))
            with running_prometheus(directory / "prometheus", config) as prometheus:
                wait_for(lambda: _scrapes(prometheus) >= 2, 60, interval=0.2)
                start = time.time()
                for step in range(1, monitoring.STEPS + 1):
                    monitoring.play_step(scenario, step)
                    _wait_scrapes(prometheus, 1)
                _wait_scrapes(prometheus, QUIET_SCRAPES)
                scenario.sandbox.stop_node(2)
                _wait_value(prometheus, 'kshare_exporter_broker_errors_total{broker="2"}', 2)
                _wait_scrapes(prometheus, FAULT_SCRAPES)
                scenario.sandbox.stop_node(1)
                _wait_value(prometheus, "kshare_exporter_refresh_errors_total", 2)
                _wait_scrapes(prometheus, FAULT_SCRAPES)
                monitoring.stop_exporter(exporter)
                wait_for(
                    lambda: prometheus.query('up{job="kshare-exporter"} == 0'), 30, interval=0.2
                )
                _wait_scrapes(prometheus, 4)
                end = time.time()
                data = prometheus.api(
                    "query_range",
                    query='{job="kshare-exporter"}',
                    start=f"{start - 2:.3f}",
                    end=f"{end:.3f}",
                    step="1",
                )
        finally:
            monitoring.stop_exporter(exporter)
    series: list[dict[str, object]] = data["result"]
    return series, start - 2, end


def _fixed(labels: dict[str, str], ports: dict[str, str]) -> dict[str, str]:
    fixed = dict(labels)
    if "instance" in fixed:
        fixed["instance"] = "kshare-exporter:9932"
    if "address" in fixed:
        fixed["address"] = ports.setdefault(fixed["address"], f"kafka-{fixed['broker']}:9092")
    return fixed


def input_series(series: list[dict[str, object]], start: float, end: float) -> str:
    """promtool's input_series: one sample per second of the recording, laid a minute apart."""
    steps = round(end - start) + 1
    ports: dict[str, str] = {}
    lines = []
    for each in sorted(series, key=lambda s: json.dumps(s["metric"], sort_keys=True)):
        metric = _fixed(dict(each["metric"]), ports)  # type: ignore[call-overload]
        name = metric.pop("__name__")
        values: list[str] = ["_"] * steps
        for stamp, value in each["values"]:  # type: ignore[attr-defined]
            values[round(float(stamp) - start)] = _number(value)
        labels = ", ".join(f'{key}="{value}"' for key, value in sorted(metric.items()))
        lines.append(f"      - series: '{name}{{{labels}}}'\n        values: '{' '.join(values)}'")
    return "\n".join(lines)


def _number(value: str) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        series, start, end = record(Path(directory))
    RECORDING.parent.mkdir(parents=True, exist_ok=True)
    RECORDING.write_text(
        json.dumps({"start": start, "end": end, "step_s": 1, "series": series}, indent=1) + "\n"
    )
    text = TESTS.read_text()
    begin, finish = "# BEGIN RECORDED SERIES\n", "      # END RECORDED SERIES"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(finish, 1)
    TESTS.write_text(head + begin + input_series(series, start, end) + "\n" + finish + tail)
    print(f"{len(series)} series over {end - start:.0f} s -> {RECORDING}, {TESTS}")


if __name__ == "__main__":
    main()
