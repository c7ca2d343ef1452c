"""The exporter's ``kshare_share_partition_records{state}`` for Kafka 4.4's ARCHIVING
records and for records retention deleted, and the README naming every state served
(issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from kshare_cli.admin.inflight import GroupInflight, PartitionInflight
from kshare_cli.admin.models import GroupDescription, TopicPartition
from kshare_cli.render.metrics import SnapshotCollector
from kshare_cli.services.exporter import ExporterSnapshot
from kshare_cli.services.health import Sample, evaluate_samples
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState

README = Path(__file__).resolve().parents[2] / "README.md"


def _records(log_start: int | None) -> dict[str, float]:
    runs = (
        WindowRun(10, 11, WindowState.AVAILABLE, 1),
        WindowRun(12, 13, WindowState.ARCHIVING, 1),
        WindowRun(14, 14, WindowState.ARCHIVED, 5),
    )
    window = InFlightWindow(10, 0, runs, 1, 2, 0, 0)
    partition = PartitionInflight("golden-d", 0, None, 10, 20, 10, "broker", window)
    description = GroupDescription("dg", "Empty", None, 3, 3, "simple")
    group = GroupInflight("dg", description, (partition,), None, 5)
    if log_start is not None:
        group = group.with_log_start_offsets({TopicPartition("golden-d", 0): log_start})
    sample = Sample(group, 1.0)
    snapshot = ExporterSnapshot(samples=(sample,), report=evaluate_samples((sample,)))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: snapshot, "prod"))
    text = generate_latest(registry).decode()
    return {
        state: float(value)
        for state, value in re.findall(
            r'^kshare_share_partition_records\{[^}]*state="(\w+)"[^}]*\} (\S+)$', text, re.M
        )
    }


def test_archiving_records_are_a_state_of_their_own() -> None:
    assert _records(None) == {"available": 2, "acknowledged": 0, "archiving": 2, "archived": 1}


def test_records_retention_deleted_are_counted_once_log_start_is_known() -> None:
    # Log start 11: offset 10 (available, not finished) is gone; the archiving ones stay.
    assert _records(11) == {
        "available": 1,
        "acknowledged": 0,
        "archiving": 2,
        "archived": 1,
        "deleted": 1,
    }


def test_the_readme_names_every_state_served() -> None:
    text = README.read_text(encoding="utf-8")
    (states,) = re.findall(r"`_records\{state=([a-z\\|]+)\}`", text)
    assert states.split("\\|") == ["available", "acknowledged", "archiving", "archived", "deleted"]
