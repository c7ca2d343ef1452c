"""The shipped alert rules and Grafana dashboard, checked by the tools that load them.

``promtool check rules`` and ``promtool test rules`` (Debian's prometheus package,
installed by ``scripts/test.sh``) run on ``docs/prometheus/``: the tests' input
series are a recording of the exporter (``scripts/record_exporter_scenario.py``).
A copy with a threshold broken on purpose must fail them, so the tests can fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.prometheus import require

PROMETHEUS = Path(__file__).resolve().parents[2] / "docs" / "prometheus"
DASHBOARD = PROMETHEUS.parent / "grafana" / "kshare-share-groups.json"


def _promtool(*args: str, cwd: Path = PROMETHEUS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require("promtool"), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_promtool_checks_the_rules_and_their_tests_pass() -> None:
    checked = _promtool("check", "rules", "alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _promtool("test", "rules", "alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


@pytest.mark.parametrize(
    ("shipped", "broken"),
    [
        (
            "kshare_share_partition_max_delivery_count >= 4",
            "kshare_share_partition_max_delivery_count >= 5",
        ),
        (
            "delta(kshare_share_partition_lag[10m]) > 0",
            "delta(kshare_share_partition_lag[10m]) > 100",
        ),
        (
            "kshare_share_group_members == 0\n        for: 5m",
            "kshare_share_group_members == 1\n        for: 5m",
        ),
    ],
)
def test_a_broken_threshold_fails_the_rule_tests(tmp_path: Path, shipped: str, broken: str) -> None:
    rules = (PROMETHEUS / "alerts.yml").read_text()
    assert shipped in rules
    (tmp_path / "alerts.yml").write_text(rules.replace(shipped, broken))
    shutil.copy(PROMETHEUS / "alerts.test.yml", tmp_path / "alerts.test.yml")
    tested = _promtool("test", "rules", "alerts.test.yml", cwd=tmp_path)
    assert tested.returncode != 0 and "FAILED" in tested.stdout + tested.stderr


def test_the_dashboard_has_what_grafana_needs_to_import_it() -> None:
    document = json.loads(DASHBOARD.read_text())
    assert isinstance(document["schemaVersion"], int) and document["schemaVersion"] >= 36
    assert document["title"] and document["uid"]
    variables = {variable["name"]: variable for variable in document["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("cluster_name", "group"):
        assert variables[name]["type"] == "query"
        assert variables[name]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert f"{name})" in variables[name]["definition"]
    ids = [panel["id"] for panel in document["panels"]]
    assert len(ids) == len(set(ids))
    for panel in document["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"]), panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip() and target["refId"], panel["title"]
            assert 'cluster_name=~"$cluster_name"' in target["expr"], target["expr"]
