"""The monitoring examples in ``docs/`` name only what ``kshare exporter`` serves.

The exported series come from the exporter's own code: its ``SnapshotCollector``
over an ``ExporterSnapshot`` in which every figure is known (so no metric is left
out), rendered by prometheus_client as a scrape gets it and parsed back. Every
query of the Grafana dashboard, the KEDA ScaledObject's series selector and the
Prometheus scrape config are checked against that, and the YAML files must parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from kshare_cli.admin.dead_letter_queues import GroupDeadLetterQueue
from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import GroupDescription, MemberDescription
from kshare_cli.cli.exporter_cmd import DEFAULT_LISTEN
from kshare_cli.render.metrics import METRICS, SnapshotCollector, index_page
from kshare_cli.services.exporter import ExporterSnapshot
from kshare_cli.services.health import Sample, evaluate_samples
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState

DOCS = Path(__file__).resolve().parents[2] / "docs"
DASHBOARD = DOCS / "grafana" / "kshare-share-groups.json"
SCALED_OBJECT = DOCS / "keda" / "scaledobject.yaml"
SCRAPE = DOCS / "prometheus" / "scrape.yml"

#: PromQL's aggregations and the functions the dashboard may call.
PROMQL_FUNCTIONS = frozenset(
    "sum min max avg count stddev stdvar topk bottomk quantile count_values group "
    "rate irate increase delta idelta deriv changes resets time timestamp abs ceil floor "
    "round clamp clamp_min clamp_max sort sort_desc label_replace label_join vector scalar "
    "absent absent_over_time avg_over_time min_over_time max_over_time sum_over_time "
    "count_over_time last_over_time present_over_time histogram_quantile".split()
)
#: Keywords that take a label list, and the other keywords an expression may hold.
LABEL_LIST_KEYWORDS = ("by", "without", "on", "ignoring", "group_left", "group_right")
KEYWORDS = frozenset({*LABEL_LIST_KEYWORDS, "bool", "and", "or", "unless", "offset"})

_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def _snapshot() -> ExporterSnapshot:
    """One group with a member and two share-partitions, each with a window: every figure."""
    member = MemberDescription("m1", "client-1", "/127.0.0.1", None, 3)
    description = GroupDescription("orders-consumers", "Stable", None, 3, 3, "simple", (member,))
    runs = (
        WindowRun(10, 11, WindowState.ACKNOWLEDGED, 1),
        WindowRun(12, 12, WindowState.AVAILABLE, 2),
        WindowRun(13, 13, WindowState.ARCHIVED, 5),
    )
    window = InFlightWindow(10, 0, runs, 1, 1, 0, 0)
    partitions = tuple(
        PartitionInflight("orders", index, None, 10, 20, 10, None, window) for index in (0, 1)
    )
    group = GroupInflight("orders-consumers", description, partitions, None, 5)
    dead_letters = GroupDeadLetterQueue(
        "orders-consumers",
        "dlq.orders-consumers",
        True,
        records=3,
        rejected=2,
        delivery_limit=1,
        other=0,
        newest_timestamp_ms=1767225590000,
    )
    sample = Sample(group, 1.0, dead_letters=dead_letters)
    return ExporterSnapshot(
        samples=(sample,),
        report=evaluate_samples((sample,)),
        refreshed_at=1767225600.0,
        refreshed_monotonic=1.0,
        refresh_seconds=0.25,
        refresh_errors=1,
        time_lags={("orders-consumers", "orders", 0): 42.5},
        group_errors={"orders-consumers": 0},
        group_read_at={"orders-consumers": 1767225600.0},
        broker_errors={(1, "kafka-1:9092"): 0, (2, "kafka-2:9092"): 3},
    )


def _exposition(cluster_name: str = "prod") -> str:
    """``/metrics`` as the exporter answers a scrape of that snapshot."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(_snapshot, cluster_name))
    return generate_latest(registry).decode()


def _exported() -> dict[str, set[str]]:
    """Every series name the exporter serves, with its label names."""
    series: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(_exposition()):
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return series


EXPORTED = _exported()
ALL_LABELS = frozenset(label for labels in EXPORTED.values() for label in labels)


def test_the_snapshot_exercises_every_metric_the_exporter_declares() -> None:
    """Guards the fixture: a metric left out of it would escape the checks below."""
    suffix = {
        "kshare_share_group_state": "_info",
        "kshare_exporter_refresh_errors": "_total",
        "kshare_exporter_group_errors": "_total",
        "kshare_exporter_broker_errors": "_total",
        "kshare_share_group_dlq_records": "_total",
    }
    assert set(EXPORTED) == {name + suffix.get(name, "") for name in METRICS}


def _without_strings_and_variables(expr: str) -> str:
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    return re.sub(r"\$\{[^}]*\}|\$\w+", "", expr)


def promql_names(expr: str) -> tuple[set[str], set[str], set[str]]:
    """(metric names, label names, functions) in a PromQL expression.

    Label names are those in ``{...}`` matchers and ``by``/``without``/``on``/...
    lists; functions are identifiers followed by ``(``; every other identifier
    (outside ``[...]`` durations) is a metric name.
    """
    text = _without_strings_and_variables(expr)
    labels: set[str] = set()
    for matchers in re.findall(r"\{([^}]*)\}", text):
        labels.update(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
    text = re.sub(r"\{[^}]*\}", " ", text)
    keywords = "|".join(LABEL_LIST_KEYWORDS)
    for names in re.findall(rf"\b(?:{keywords})\s*\(([^)]*)\)", text):
        labels.update(_IDENTIFIER.findall(names))
    text = re.sub(rf"\b(?:{keywords})\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b\d[\w.]*", " ", text)  # numbers, 1e3, durations after offset
    functions: set[str] = set()
    metrics: set[str] = set()
    for match in _IDENTIFIER.finditer(text):
        name = match.group()
        if name in KEYWORDS:
            continue
        if text[match.end() :].lstrip().startswith("("):
            functions.add(name)
        else:
            metrics.add(name)
    return metrics, labels, functions


def _check_expr(expr: str) -> set[str]:
    metrics, labels, functions = promql_names(expr)
    assert metrics, f"no metric in {expr!r}"
    assert metrics <= set(EXPORTED), f"{expr!r} names {sorted(metrics - set(EXPORTED))}"
    assert functions <= PROMQL_FUNCTIONS, f"{expr!r} calls {sorted(functions)}"
    known = set().union(*(EXPORTED[name] for name in metrics)) | {"__name__"}
    assert labels <= known, f"{expr!r} uses labels {sorted(labels - known)}"
    return metrics


def test_the_promql_parser_finds_metrics_labels_and_functions() -> None:
    expr = (
        'increase(kshare_exporter_refresh_errors_total{cluster_name=~"$cluster_name"}'
        "[$__rate_interval]) > on (cluster_name) 0 or sum by (group) (x_y) == bool 1e3"
    )
    assert promql_names(expr) == (
        {"kshare_exporter_refresh_errors_total", "x_y"},
        {"cluster_name", "group"},
        {"increase", "sum"},
    )
    with pytest.raises(AssertionError, match="kshare_share_group_lags"):
        _check_expr('sum(kshare_share_group_lags{group="g"})')
    with pytest.raises(AssertionError, match="topic"):
        _check_expr('kshare_share_group_lag{topic="t"}')


def _dashboard() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return document


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def test_every_dashboard_query_names_only_exported_metrics() -> None:
    dashboard = _dashboard()
    used: set[str] = set()
    panels = list(_panels(dashboard["panels"]))
    assert panels
    for panel in panels:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
            used |= _check_expr(target["expr"])
    # The panels: lag per group and per share-partition, in-flight records,
    # delivery count, status, members, the refresher's duration and errors.
    assert {
        "kshare_share_group_lag",
        "kshare_share_partition_lag",
        "kshare_share_partition_records",
        "kshare_share_partition_max_delivery_count",
        "kshare_share_group_status",
        "kshare_share_group_members",
        "kshare_exporter_refresh_seconds",
        "kshare_exporter_refresh_errors_total",
    } <= used


def test_the_dashboard_variables_come_from_exported_labels() -> None:
    dashboard = _dashboard()
    assert dashboard["schemaVersion"] >= 36  # Grafana 10's dashboards are 37 and up
    variables = {each["name"]: each for each in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("cluster_name", "group"):
        query = variables[name]["query"]
        text = query["query"] if isinstance(query, dict) else query
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", text)
        assert match, text
        (metric,) = _check_expr(match.group(1))
        assert match.group(2) == name
        assert name in EXPORTED[metric]
        assert variables[name]["datasource"]["uid"] == "${datasource}"


def _trigger() -> dict[str, Any]:
    documents = list(yaml.safe_load_all(SCALED_OBJECT.read_text(encoding="utf-8")))
    (scaled,) = [each for each in documents if each and each["kind"] == "ScaledObject"]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"]["kind"] == "Deployment"
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "metrics-api"
    metadata: dict[str, Any] = trigger["metadata"]
    return metadata


def _keda_value(exposition: str, selector: str) -> float:
    """What KEDA's metrics-api scaler reads with ``format: prometheus``: the first series
    of the family named by the selector whose labels equal every matcher's value."""
    match = re.fullmatch(r"([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}", selector)
    assert match, selector
    wanted = dict(re.findall(r'([A-Za-z_]\w*)\s*=\s*"([^"]*)"', match.group(2)))
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == match.group(1) and wanted.items() <= sample.labels.items():
                assert set(wanted) <= set(sample.labels)
                return float(sample.value)
    raise AssertionError(f"no series matches {selector}")


def test_the_keda_trigger_reads_the_group_lag_from_the_exporter() -> None:
    metadata = _trigger()
    assert metadata["format"] == "prometheus"
    selector = metadata["valueLocation"]
    assert _check_expr(selector) == {"kshare_share_group_lag"}
    assert float(metadata["targetValue"]) > 0
    url = urlsplit(metadata["url"])
    assert url.path == "/metrics"
    assert url.port == int(DEFAULT_LISTEN.rsplit(":", 1)[1])
    # The selector picks the group's series out of what the exporter serves.
    assert _keda_value(_exposition("prod"), selector) == 20.0
    with pytest.raises(AssertionError, match="no series"):
        _keda_value(_exposition("staging"), selector)


def test_the_scrape_config_targets_the_exporter() -> None:
    config = yaml.safe_load(SCRAPE.read_text(encoding="utf-8"))
    (job,) = config["scrape_configs"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert 'href="/metrics"' in index_page("prod")
    port = int(DEFAULT_LISTEN.rsplit(":", 1)[1])
    targets = [target for each in job["static_configs"] for target in each["targets"]]
    assert targets
    assert all(target.rsplit(":", 1)[1] == str(port) for target in targets)
