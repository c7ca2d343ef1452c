"""A real Prometheus scrapes a real ``kshare exporter``: every shipped query returns the
figures ``kshare describe`` gives, and the shipped alerts fire where they should.

Prometheus (Debian's package, installed by ``scripts/test.sh``) runs with
``docs/prometheus/scrape.yml`` pointed at the exporter and scraping every second,
and with ``docs/prometheus/alerts.yml`` loaded as shipped except that every ``for:``
is removed (a test has seconds of data, not minutes; the expressions and their
ranges are unchanged, and their ranges hold all of the test's data). The scenario
(``tests/support/monitoring.py``): a draining group, a stalled one, one stopped
with lag, one with a poison record and archived, dead-lettered records.

Each step of the scenario is waited for in Prometheus (its end offset scraped)
before the next, so the series hold every stage; then, the scenario quiet, the
queries are compared with ``kshare describe -o json`` until they agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.cli.conftest import Kshare
from tests.support import monitoring
from tests.support.monitoring import (
    ARRIVING_PER_STEP,
    CLUSTER_NAME,
    DRAINING,
    GROUPS,
    POISON,
    STALLED,
    STEPS,
    STOPPED,
    TOPICS,
)
from tests.support.prometheus import (
    Prometheus,
    fast_rules,
    require,
    running_prometheus,
    scrape_config,
)
from tests.support.waiting import wait_for

DOCS = Path(__file__).resolve().parents[2] / "docs"
DASHBOARD = DOCS / "grafana" / "kshare-share-groups.json"
SCALED_OBJECT = DOCS / "keda" / "scaledobject.yaml"
ALERTS = DOCS / "prometheus" / "alerts.yml"

#: (alert, group, topic, partition) the scenario must fire; every other alert stays silent.
EXPECTED_FIRING = {
    ("KshareSharePartitionLagGrowing", STALLED, TOPICS[STALLED], "0"),
    ("KshareSharePartitionStalled", STALLED, TOPICS[STALLED], "0"),
    ("KshareSharePartitionStalled", POISON, TOPICS[POISON], "0"),
    ("KshareShareGroupStoppedWithLag", STOPPED, TOPICS[STOPPED], "0"),
    ("KshareSharePartitionNearDeliveryLimit", POISON, TOPICS[POISON], "0"),
    ("KshareSharePartitionArchivedRecordsRising", POISON, TOPICS[POISON], "0"),
    ("KshareShareGroupDeadLetteredRecordsRising", POISON, "", ""),
}


def dashboard_queries() -> list[str]:
    """Every panel's PromQL, with Grafana's variables as the scenario selects them."""
    document = json.loads(DASHBOARD.read_text())
    groups = "|".join(GROUPS)
    queries = []
    for panel in document["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            expr = expr.replace("$__rate_interval", "1m")
            expr = re.sub(r"\$\{?cluster_name\}?", CLUSTER_NAME, expr)
            expr = re.sub(r"\$\{?group\}?", groups, expr)
            assert "$" not in expr, expr
            queries.append(expr)
    return queries


def keda_selector() -> str:
    document = yaml.safe_load(SCALED_OBJECT.read_text())
    (trigger,) = document["spec"]["triggers"]
    selector: str = trigger["metadata"]["valueLocation"]
    return selector


def alert_expressions() -> dict[str, str]:
    rules = yaml.safe_load(ALERTS.read_text())
    return {rule["alert"]: rule["expr"] for group in rules["groups"] for rule in group["rules"]}


def _describe(kshare: Kshare, *args: str) -> dict[str, dict[str, Any]]:
    result = kshare.run("describe", *GROUPS, *args, "-o", "json")
    document = json.loads(result.stdout)
    return {group["group_id"]: group for group in document["groups"]}


def _agrees_with_describe(prometheus: Prometheus, kshare: Kshare) -> list[str]:
    """What differs between Prometheus' latest values and ``kshare describe`` now."""
    differences = []
    offsets = _describe(kshare)
    members = _describe(kshare, "--members")
    figures = {
        name: prometheus.values(f'{name}{{cluster_name="{CLUSTER_NAME}"}}', "group", "partition")
        for name in (
            "kshare_share_partition_lag",
            "kshare_share_partition_start_offset",
            "kshare_share_partition_end_offset",
        )
    }
    for group_id, group in offsets.items():
        for partition in group["partitions"]:
            key = (group_id, str(partition["partition"]))
            for field in ("lag", "start_offset", "end_offset"):
                seen = figures[f"kshare_share_partition_{field}"].get(key)
                if seen != partition[field]:
                    differences.append(f"{key} {field}: {seen} != {partition[field]}")
    group_lag = prometheus.values("kshare_share_group_lag", "group")
    member_count = prometheus.values("kshare_share_group_members", "group")
    states = prometheus.values("kshare_share_group_state_info == 1", "group", "state")
    for group_id in GROUPS:
        if group_lag.get((group_id,)) != offsets[group_id]["total_lag"]:
            differences.append(f"{group_id} lag {group_lag.get((group_id,))}")
        if member_count.get((group_id,)) != members[group_id]["member_count"]:
            differences.append(f"{group_id} members {member_count.get((group_id,))}")
        if (group_id, members[group_id]["state"]) not in states:
            differences.append(f"{group_id} state {states}")
    return differences


def test_prometheus_scrapes_the_exporter_and_every_query_and_alert_works(
    tmp_path: Path,
) -> None:
    require("prometheus")
    with monitoring.monitoring_scenario() as scenario:
        kshare = Kshare(scenario.bootstrap, None, tmp_path / "profiles.toml")
        exporter = monitoring.start_exporter(scenario, tmp_path / "profiles.toml")
        try:
            wait_for(lambda: exporter.get("/healthz")[0] == 200, 30, what="the first refresh")
            config = scrape_config(monitoring.target_of(exporter))
            rules = fast_rules(tmp_path / "alerts.yml")
            with running_prometheus(tmp_path / "prometheus", config, rules) as prometheus:
                _play(prometheus, scenario)
                differences: list[str] = []

                def agree() -> bool:
                    differences[:] = _agrees_with_describe(prometheus, kshare)
                    return not differences

                try:
                    wait_for(agree, timeout=30, interval=0.5, what="Prometheus = describe")
                except AssertionError:
                    raise AssertionError(f"Prometheus and describe differ: {differences}") from None
                _check_queries(prometheus)
                _check_alerts(prometheus)
        finally:
            monitoring.stop_exporter(exporter)


def _play(prometheus: Prometheus, scenario: monitoring.Scenario) -> None:
    def scraped(end_offset: int) -> bool:
        found = prometheus.values(
            f'kshare_share_partition_end_offset{{group="{STALLED}"}}', "group"
        )
        groups = prometheus.values("kshare_share_group_members", "group")
        return found.get((STALLED,)) == end_offset and len(groups) == len(GROUPS)

    wait_for(lambda: scraped(ARRIVING_PER_STEP), 60, interval=0.2, what="the first scrapes")
    for step in range(1, STEPS + 1):
        monitoring.play_step(scenario, step)
        end = ARRIVING_PER_STEP * (step + 1)
        wait_for(lambda end=end: scraped(end), 30, interval=0.2, what=f"step {step} scraped")


def _check_queries(prometheus: Prometheus) -> None:
    empty = [expr for expr in dashboard_queries() if not prometheus.query(expr)]
    assert not empty, f"dashboard queries without series: {empty}"
    document = json.loads(DASHBOARD.read_text())
    for variable in document["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((.*), *(\w+)\)", variable["definition"])
        assert match, variable["definition"]
        selector = re.sub(r"\$\{?cluster_name\}?", CLUSTER_NAME, match[1])
        values = prometheus.api(f"label/{match[2]}/values", **{"match[]": selector})
        wanted = {"cluster_name": {CLUSTER_NAME}, "group": set(GROUPS)}[variable["name"]]
        assert set(values) == wanted, (variable["name"], values)
    # The KEDA selector, as shipped: the draining group in cluster prod, lag 0 at the end.
    (keda,) = prometheus.query(keda_selector())
    assert keda["metric"]["group"] == DRAINING and float(keda["value"][1]) == 0
    # Every metric an alert's expression reads has the scenario's series.
    for name, expr in alert_expressions().items():
        for metric in set(re.findall(r"\b(kshare_\w+|up)\b", expr)):
            assert prometheus.query(metric), f"{name}: {metric} has no series"


def _check_alerts(prometheus: Prometheus) -> None:
    def all_fired() -> bool:
        return EXPECTED_FIRING <= prometheus.firing()

    wait_for(all_fired, timeout=30, interval=0.5, what=f"alerts {EXPECTED_FIRING}")
    firing = prometheus.firing()
    assert firing == EXPECTED_FIRING, firing - EXPECTED_FIRING
    for alert in prometheus.alerts():
        annotations = alert["annotations"]
        assert alert["labels"]["group"] in annotations["summary"], alert
        assert alert["labels"]["group"] in annotations["description"], alert
        if "topic" in alert["labels"]:
            where = f"{alert['labels']['topic']}:{alert['labels']['partition']}"
            assert where in annotations["summary"] and where in annotations["description"]
