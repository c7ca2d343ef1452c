"""``kshare exporter`` when the cluster misbehaves: a hung or stopped broker, a state
topic it may not read, SIGTERM during a refresh stuck on a hung broker (issue 18).

Each test runs its own sandbox cluster (``sandbox_cluster``), so its faults touch no
other test; a real cluster cannot be hung node by node, so these tests skip there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.kafka.api_keys import SHARE_GROUP_DESCRIBE
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.services.exporter_server import build_refresher
from kshare_cli.services.health import Status, Thresholds
from tests.cli.conftest import KSHARE, process_env
from tests.cli.test_inflight_cmd import FETCH, _denying_state_topic
from tests.support.exporter_process import Exporter, samples, start_exporter
from tests.support.fault_beds import (
    NEVER_FENCED_MS,
    PARTITIONS,
    groups_on_every_node,
    start_offsets_at_zero,
    state_on_coordinators,
)
from tests.support.sandbox import StartCluster
from tests.support.sandbox_thread import SandboxThread
from tests.support.waiting import PROMPTLY_S, wait_for
from tests.wire.conftest import Handler, replaced_handler

#: A broker stopped or hung against --timeout: run alone, after the parallel part
#: (scripts/test.sh), so other workers' load does not eat the budgets it asserts.
pytestmark = pytest.mark.faults

INTERVAL_S = 0.5
#: Records produced to each partition before the group is made: the lag the metrics show.
RECORDS = 3


@dataclass
class Bed:
    sandbox: SandboxThread
    topic: str
    group: str
    exporters: list[Exporter]

    def produce(self, partition: int, count: int) -> None:
        producer = Producer({"bootstrap.servers": self.sandbox.bootstrap})
        for index in range(count):
            producer.produce(self.topic, value=f"r{index}".encode(), partition=partition)
        assert producer.flush(15) == 0

    def start(self, *args: str, timeout: str = "2s", healthy: bool = True) -> Exporter:
        """An exporter of the group, bootstrapped from node 1 only; ``healthy``: once it
        has refreshed."""
        argv = [
            str(KSHARE),
            "exporter",
            "--listen",
            "127.0.0.1:0",
            "--group",
            self.group,
            "--interval",
            f"{INTERVAL_S}s",
            "--cluster-name",
            "test",
            "--timeout",
            timeout,
            "-b",
            self.sandbox.bootstrap,
            *args,
        ]
        exporter = start_exporter(
            argv,
            process_env({"KSHARE_CONFIG": "/nonexistent", "KSHARE_BOOTSTRAP_SERVERS": None}),
        )
        self.exporters.append(exporter)
        if healthy:
            wait_for(lambda: exporter.get("/healthz")[0] == 200, timeout=30, what="a refresh")
        return exporter


def make_bed(sandbox: SandboxThread) -> Bed:
    topic, group = "exported", "exported-group"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    replicas = len(sandbox.addresses)
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, replicas)]).values():
        future.result(15)
    bed = Bed(sandbox, topic, group, [])
    for partition in range(PARTITIONS):
        bed.produce(partition, RECORDS)
    start_offsets_at_zero(sandbox, group, topic)
    return bed


@pytest.fixture
def beds(sandbox_cluster: StartCluster) -> Iterator[list[Bed]]:
    made: list[Bed] = []
    yield made
    for bed in made:
        for exporter in bed.exporters:
            if exporter.process.poll() is None:
                exporter.process.kill()
                exporter.process.wait(10)


def metrics(exporter: Exporter) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = exporter.get("/metrics")
    assert status == 200
    return samples(text)


def lags(found: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[str, float]:
    return {
        dict(labels)["partition"]: value
        for (name, labels), value in found.items()
        if name == "kshare_share_partition_lag"
    }


CLUSTER = (("cluster_name", "test"),)


def stderr_lines(exporter: Exporter) -> list[str]:
    lines = []
    while not exporter.lines.empty():
        lines.append(exporter.lines.get())
    return lines


@pytest.mark.parametrize("fault", ["hung", "stopped"])
def test_a_dead_broker_keeps_the_last_figures_ages_them_and_recovers(
    sandbox_cluster: StartCluster, beds: list[Bed], fault: str
) -> None:
    bed = make_bed(sandbox_cluster(1, session_timeout_ms=NEVER_FENCED_MS))
    beds.append(bed)
    exporter = bed.start()
    before = metrics(exporter)
    assert lags(before) == {str(p): RECORDS for p in range(PARTITIONS)}
    assert before[("kshare_exporter_last_refresh_age_seconds", CLUSTER)] < PROMPTLY_S

    (bed.sandbox.hang_node if fault == "hung" else bed.sandbox.stop_node)(1)
    address = bed.sandbox.addresses[1]
    wait_for(
        lambda: (answer := exporter.get("/healthz"))[0] == 503 and address in answer[1],
        timeout=15,
        what="/healthz 503 naming the broker",
    )
    first = metrics(exporter)
    errors = first[("kshare_exporter_refresh_errors_total", CLUSTER)]
    assert errors >= 1
    wait_for(
        lambda: metrics(exporter)[("kshare_exporter_refresh_errors_total", CLUSTER)] > errors,
        timeout=15,
        what="a second failed refresh",
    )
    later = metrics(exporter)
    assert lags(later) == lags(before)
    age = ("kshare_exporter_last_refresh_age_seconds", CLUSTER)
    assert later[age] > first[age] > 3 * INTERVAL_S
    stamp = ("kshare_exporter_last_refresh_timestamp_seconds", CLUSTER)
    assert later[stamp] == before[stamp]
    assert any("refresh failed:" in line and address in line for line in stderr_lines(exporter))
    # Every group missed those refreshes: its own counter says so too.
    assert per_group(later, "kshare_exporter_group_errors_total")[bed.group] >= 2

    bed.sandbox.restart_node(1)
    bed.produce(0, 2)
    wait_for(
        lambda: exporter.get("/healthz")[0] == 200 and lags(metrics(exporter))["0"] == RECORDS + 2,
        timeout=20,
        what="recovery with fresh figures",
    )
    assert metrics(exporter)[age] < PROMPTLY_S
    assert metrics(exporter)[stamp] > before[stamp]


def test_an_unreadable_state_topic_leaves_out_the_windows_says_so_once(
    sandbox_cluster: StartCluster, beds: list[Bed]
) -> None:
    sandbox = sandbox_cluster(1)
    bed = make_bed(sandbox)
    beds.append(bed)
    with replaced_handler(sandbox, FETCH, _denying_state_topic(FETCH)):
        exporter = bed.start(timeout="5s")
        stamp = ("kshare_exporter_last_refresh_timestamp_seconds", CLUSTER)
        seen = {metrics(exporter)[stamp]}
        wait_for(
            lambda: seen.add(metrics(exporter)[stamp]) or len(seen) >= 3,
            timeout=30,
            what="three successful refreshes",
        )
        found = metrics(exporter)
    assert lags(found) == {str(p): RECORDS for p in range(PARTITIONS)}
    names = {name for name, _ in found}
    assert "kshare_share_partition_records" not in names
    assert "kshare_share_partition_max_delivery_count" not in names
    assert found[("kshare_exporter_refresh_errors_total", CLUSTER)] == 0
    assert exporter.get("/healthz")[0] == 200
    warnings = [line for line in stderr_lines(exporter) if "no in-flight windows" in line]
    assert len(warnings) == 1, warnings
    assert "not authorized" in warnings[0] and "__share_group_state" in warnings[0]


def _noting_fetches(fetched: threading.Event) -> Any:
    """Fetch served as usual, noted: only the exporter's state-topic reader fetches."""

    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            fetched.set()
            return await original(broker, request, connection)

        return handler

    return make


def test_sigterm_during_a_state_read_stuck_on_a_hung_broker_exits_0_at_once(
    sandbox_cluster: StartCluster, beds: list[Bed]
) -> None:
    # Node 1 (the bootstrap) answers; node 2 leads some state-topic partitions and
    # hangs, so the state read waits its share of a long --timeout (22.5 s) in a
    # worker thread that cannot be cancelled. Before the fix, SIGTERM waited it out.
    sandbox = sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS)
    bed = make_bed(sandbox)
    beds.append(bed)
    sandbox.hang_node(2)
    fetched = threading.Event()
    with replaced_handler(sandbox, FETCH, _noting_fetches(fetched)):
        exporter = bed.start(timeout="30s", healthy=False)
        wait_for(fetched.is_set, timeout=15, what="the state read under way")
        started = time.monotonic()
        exporter.process.send_signal(signal.SIGTERM)
        assert exporter.process.wait(30) == 0
        assert time.monotonic() - started < PROMPTLY_S  # not the read's 22.5 s
    assert "Traceback" not in "".join(stderr_lines(exporter))


#: The second group of the partial-failure test, on the same topic.
OTHER_GROUP = "exported-other"
GROUP_AUTHORIZATION_FAILED = 30


def _refusing_describe_of(group_id: str) -> Any:
    """ShareGroupDescribe answering GROUP_AUTHORIZATION_FAILED for ``group_id`` only, as
    Kafka answers when that group's DESCRIBE ACL is taken away; the others as usual."""

    def make(original: Handler) -> Handler:
        async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
            response = await original(broker, request, connection)
            refused = ErrorCode(GROUP_AUTHORIZATION_FAILED)
            groups = tuple(
                dataclasses.replace(
                    group, error_code=refused, error_message=None, members=(), group_state=""
                )
                if group.group_id == group_id
                else group
                for group in response.groups
            )
            return dataclasses.replace(response, groups=groups)

        return handler

    return make


def group_lags(
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str = ""
) -> dict[tuple[str, str], float]:
    """(group, partition) -> lag, from a scrape; ``name`` another per-partition metric."""
    wanted = name or "kshare_share_partition_lag"
    return {
        (dict(labels)["group"], dict(labels)["partition"]): value
        for (metric, labels), value in found.items()
        if metric == wanted
    }


def per_group(
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **extra: str
) -> dict[str, float]:
    """group -> value of a per-group metric (with ``extra`` labels matching)."""
    return {
        dict(labels)["group"]: value
        for (metric, labels), value in found.items()
        if metric == name and all(dict(labels).get(k) == v for k, v in extra.items())
    }


def test_one_group_failing_keeps_its_last_figures_counts_it_and_healthz_names_it(
    sandbox_cluster: StartCluster, beds: list[Bed]
) -> None:
    """One group's describe refused while the other answers: the healthy group's figures
    stay fresh, the refused group's share-partition and group figures keep their last
    values, its last-read timestamp stops, its error counter rises by each refresh it
    missed, its status is ERR, and /healthz (200: the exporter works) names it and why.
    When the describe answers again, so does the group."""
    sandbox = sandbox_cluster(1)
    bed = make_bed(sandbox)
    beds.append(bed)
    start_offsets_at_zero(sandbox, OTHER_GROUP, bed.topic)
    exporter = bed.start("--group", OTHER_GROUP)
    both = {(group, str(p)): RECORDS for group in (bed.group, OTHER_GROUP) for p in range(3)}
    wait_for(lambda: group_lags(metrics(exporter)) == both, timeout=20, what="both groups")
    before = metrics(exporter)
    read_at = "kshare_share_group_last_read_timestamp_seconds"
    group_errors = "kshare_exporter_group_errors_total"
    assert per_group(before, group_errors) == {bed.group: 0, OTHER_GROUP: 0}
    assert per_group(before, "kshare_share_group_lag") == {
        bed.group: RECORDS * PARTITIONS,
        OTHER_GROUP: RECORDS * PARTITIONS,
    }

    with replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, _refusing_describe_of(OTHER_GROUP)):
        bed.produce(0, 2)
        wait_for(
            lambda: group_lags(metrics(exporter))[(bed.group, "0")] == RECORDS + 2,
            timeout=20,
            what="the healthy group's fresh lag",
        )
        wait_for(
            lambda: per_group(metrics(exporter), group_errors)[OTHER_GROUP] >= 2,
            timeout=20,
            what="two refreshes that missed the refused group",
        )
        during = metrics(exporter)
        status, health = exporter.get("/healthz")
        # A refresh may have read the group between `before` and the refusal: its read
        # moment is the one a later refresh that missed it again leaves as it was.
        missed = per_group(during, group_errors)[OTHER_GROUP]

        def missed_again() -> dict[Any, float] | None:
            found = metrics(exporter)
            return found if per_group(found, group_errors)[OTHER_GROUP] > missed else None

        later = wait_for(
            missed_again, timeout=20, what="one more refresh that missed the refused group"
        )
    lags_during = group_lags(during)
    assert {key: lags_during[key] for key in both if key[0] == OTHER_GROUP} == {
        key: RECORDS for key in both if key[0] == OTHER_GROUP
    }  # its last figures, not the 2 records produced since
    assert per_group(during, "kshare_share_group_lag") == {
        bed.group: RECORDS * PARTITIONS + 2,
        OTHER_GROUP: RECORDS * PARTITIONS,
    }
    assert per_group(during, "kshare_share_group_status", status="ERR") == {
        bed.group: 0,
        OTHER_GROUP: 1,
    }
    assert per_group(during, group_errors)[bed.group] == 0
    assert during[("kshare_exporter_refresh_errors_total", CLUSTER)] == 0  # no whole failure
    stamps = per_group(later, read_at)
    assert stamps[OTHER_GROUP] == per_group(during, read_at)[OTHER_GROUP] < stamps[bed.group]
    assert status == 200
    assert health.startswith("ok: refreshed"), health
    assert OTHER_GROUP in health and "GROUP_AUTHORIZATION_FAILED" in health, health
    assert bed.group not in health.replace(OTHER_GROUP, ""), health

    wait_for(
        lambda: group_lags(metrics(exporter))[(OTHER_GROUP, "0")] == RECORDS + 2,
        timeout=20,
        what="the refused group back, with fresh figures",
    )
    after = metrics(exporter)
    assert per_group(after, "kshare_share_group_status", status="ERR")[OTHER_GROUP] == 0
    missed = per_group(during, group_errors)[OTHER_GROUP]
    assert per_group(after, group_errors)[OTHER_GROUP] >= missed  # a counter: never reset
    assert per_group(after, read_at)[OTHER_GROUP] > stamps[OTHER_GROUP]
    assert OTHER_GROUP not in exporter.get("/healthz")[1]


# -- a three-node cluster, a group coordinated by each node, one node stopped or hung ------

#: The node stopped or hung: not the first bootstrap server; it coordinates one group.
VICTIM = 2
#: A refresh's bound in the tests below: --timeout, and the margin allowed over it.
REFRESH_TIMEOUT_S = 10.0
MARGIN_S = 5.0


@dataclass
class ClusterBed:
    """Three nodes; ``groups[n]`` is coordinated by node n, each with offsets at 0 on
    ``topic``, whose partitions node 1 leads (so records can be produced while node 2
    is down, and the healthy groups' figures are whole)."""

    sandbox: SandboxThread
    topic: str
    groups: dict[int, str]

    @property
    def bootstrap(self) -> str:
        return ",".join(self.sandbox.addresses[node] for node in sorted(self.sandbox.addresses))

    def broker_named(self, node: int) -> str:
        return f"broker {node} ({self.sandbox.addresses[node]})"

    def produce(self, partition: int, count: int) -> None:
        producer = Producer({"bootstrap.servers": self.sandbox.addresses[1]})
        for index in range(count):
            producer.produce(self.topic, value=f"r{index}".encode(), partition=partition)
        assert producer.flush(15) == 0


def make_cluster_bed(sandbox: SandboxThread) -> ClusterBed:
    topic = "exported-everywhere"
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(15)
    for partition in range(PARTITIONS):
        sandbox.move_leader(topic, partition, 1)
    bed = ClusterBed(sandbox, topic, groups_on_every_node(sandbox, "exported"))
    state_on_coordinators(sandbox, bed.groups, topic)
    for partition in range(PARTITIONS):
        bed.produce(partition, RECORDS)
    for group in bed.groups.values():
        start_offsets_at_zero(sandbox, group, topic)
    return bed


@pytest.mark.parametrize("fault", ["stopped", "hung", "stopped, then fenced", "hung, then fenced"])
def test_one_refresh_ends_within_timeout_fresh_for_the_healthy_groups_err_for_the_others(
    sandbox_cluster: StartCluster, fault: str
) -> None:
    """The exporter's own refresh (``build_refresher``), one refresh after the fault:
    within --timeout; every healthy group read in it; the victim's group, when it is not
    read, ERR with its last figures and the broker named, and only that broker counted."""
    bed = make_cluster_bed(sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS))
    settings = ConnectionSettings(bootstrap_servers=tuple(bed.bootstrap.split(",")))
    refresher, source = build_refresher(
        settings, None, Thresholds(), 15.0, REFRESH_TIMEOUT_S, lambda line: None
    )
    try:
        asyncio.run(refresher.refresh())
        before = refresher.snapshot
        assert set(before.group_read_at) == set(bed.groups.values()), before.last_error
        (bed.sandbox.hang_node if fault.startswith("hung") else bed.sandbox.stop_node)(VICTIM)
        if fault.endswith("fenced"):
            bed.sandbox.fence_node(VICTIM)
        started = time.monotonic()
        asyncio.run(refresher.refresh())
        elapsed = time.monotonic() - started
    finally:
        bed.sandbox.restart_node(VICTIM)  # a hung node's connections must not hold the close
        source.close()
    snapshot = refresher.snapshot
    message = f"{fault}: {elapsed:.2f} s, {snapshot.last_error}, unread {snapshot.unread}"
    assert elapsed < REFRESH_TIMEOUT_S + MARGIN_S, message
    assert snapshot.refresh_errors == 0, message
    assert snapshot.refreshed_at is not None and snapshot.refreshed_at > (
        before.refreshed_at or 0.0
    )
    statuses = {each.group_id: each for each in snapshot.report.groups}
    assert set(statuses) == set(bed.groups.values()), message  # none dropped
    victim = bed.groups[VICTIM]
    for node, group in bed.groups.items():
        if node != VICTIM:
            assert group not in snapshot.unread, message
            assert snapshot.group_read_at[group] == snapshot.refreshed_at, message
            assert statuses[group].lag == RECORDS * PARTITIONS, message
    counts = {node: count for (node, _), count in snapshot.broker_errors.items()}
    if victim in snapshot.unread:
        named = bed.broker_named(VICTIM)
        assert named in snapshot.unread[victim], message
        assert statuses[victim].status is Status.ERR
        assert named in statuses[victim].reasons[0]
        assert statuses[victim].lag == RECORDS * PARTITIONS  # its last figures
        assert snapshot.group_read_at[victim] == before.group_read_at[victim]
        assert named in snapshot.healthy(15.0, time.monotonic())[1]
    else:  # fenced: the group moved to a live coordinator and was read there
        assert fault.endswith("fenced"), message
        assert snapshot.group_read_at[victim] == snapshot.refreshed_at
    if not fault.endswith("fenced"):
        assert victim in snapshot.unread, message
        assert counts[VICTIM] == 1, counts
    assert counts[1] == counts[3] == 0, counts  # the healthy brokers are never blamed


def test_the_exporter_during_a_stopped_node_keeps_the_healthy_groups_fresh_and_names_it(
    sandbox_cluster: StartCluster, beds: list[Bed]
) -> None:
    """``kshare exporter --all-groups`` scraped while node 2 is stopped (never fenced):
    the healthy groups' lag moves with the records produced, node 2's group keeps its
    last figures as ERR, the broker's error counter rises (the others' stay 0),
    /healthz (200) names the broker and the group, stderr says it once; after the
    restart the group is fresh again."""
    bed = make_cluster_bed(sandbox_cluster(3, session_timeout_ms=NEVER_FENCED_MS))
    holder = Bed(bed.sandbox, bed.topic, "", [])
    beds.append(holder)
    exporter = start_all_groups(holder, bed.bootstrap)
    victim = bed.groups[VICTIM]
    healthy = [group for node, group in bed.groups.items() if node != VICTIM]
    wait_for(
        lambda: (
            set(per_group(metrics(exporter), "kshare_share_group_lag")) == set(bed.groups.values())
        ),
        timeout=30,
        what="every group exported",
    )
    before = metrics(exporter)
    read_at = "kshare_share_group_last_read_timestamp_seconds"
    assert broker_errors(before) == {"1": 0, "2": 0, "3": 0}

    bed.sandbox.stop_node(VICTIM)
    bed.produce(0, 2)
    moved = {group: RECORDS * PARTITIONS + 2 for group in healthy}

    last: list[dict[str, Any]] = []

    def fresh_and_counted() -> bool:
        found = metrics(exporter)
        lags = per_group(found, "kshare_share_group_lag")
        errs = per_group(found, "kshare_share_group_status", status="ERR")
        last[:] = [{"lags": lags, "err": errs, "brokers": broker_errors(found)}]
        return (
            all(lags.get(group) == lag for group, lag in moved.items())
            and errs.get(victim) == 1
            and broker_errors(found).get("2", 0) >= 2
        )

    wait_for(
        fresh_and_counted,
        timeout=30,
        what="fresh healthy groups, the victim ERR",
        seen=lambda: (last, moved, victim, stderr_lines(exporter)),
    )
    during = metrics(exporter)
    status, health = exporter.get("/healthz")
    named = bed.broker_named(VICTIM)
    assert per_group(during, "kshare_share_group_lag")[victim] == RECORDS * PARTITIONS
    assert group_lags(during)[(victim, "0")] == RECORDS  # its last figures, not the 2 new
    for group in healthy:
        assert group_lags(during)[(group, "0")] == RECORDS + 2
        assert per_group(during, read_at)[group] > per_group(before, read_at)[group]
    # The victim keeps the moment of its last read (a refresh may have read it between
    # `before` and the stop): a later refresh, which read the healthy groups, leaves it.

    def later_refresh() -> dict[Any, float] | None:
        found = metrics(exporter)
        newer = all(per_group(found, read_at)[g] > per_group(during, read_at)[g] for g in healthy)
        return found if newer else None

    later = wait_for(later_refresh, timeout=30, what="a refresh after the stop was seen")
    assert per_group(later, read_at)[victim] == per_group(during, read_at)[victim]
    assert per_group(during, "kshare_exporter_group_errors_total")[victim] >= 2
    assert {k: v for k, v in broker_errors(during).items() if k != "2"} == {"1": 0, "3": 0}
    assert (
        "kshare_exporter_broker_errors_total",
        (
            ("address", bed.sandbox.addresses[VICTIM]),
            ("broker", "2"),
            ("cluster_name", "test"),
        ),
    ) in during
    assert during[("kshare_exporter_refresh_errors_total", CLUSTER)] == 0
    assert status == 200, health
    assert f"{named} did not list its groups: 1 group unknown" in health, health
    assert victim in health, health
    warned = [line for line in stderr_lines(exporter) if named in line]
    assert len(warned) == 1 and "did not list its groups" in warned[0], warned

    bed.sandbox.restart_node(VICTIM)
    wait_for(
        lambda: group_lags(metrics(exporter))[(victim, "0")] == RECORDS + 2,
        timeout=30,
        what="the victim's group fresh again",
    )
    after = metrics(exporter)
    assert per_group(after, "kshare_share_group_status", status="ERR")[victim] == 0
    assert broker_errors(after)["2"] >= broker_errors(during)["2"]  # a counter
    assert named not in exporter.get("/healthz")[1]


def start_all_groups(holder: Bed, bootstrap: str) -> Exporter:
    """``kshare exporter --all-groups`` on every node's address, once it has refreshed."""
    argv = [
        str(KSHARE),
        "exporter",
        "--listen",
        "127.0.0.1:0",
        "--all-groups",
        "--interval",
        f"{INTERVAL_S}s",
        "--cluster-name",
        "test",
        "--timeout",
        "5s",
        "-b",
        bootstrap,
    ]
    exporter = start_exporter(
        argv, process_env({"KSHARE_CONFIG": "/nonexistent", "KSHARE_BOOTSTRAP_SERVERS": None})
    )
    holder.exporters.append(exporter)
    wait_for(lambda: exporter.get("/healthz")[0] == 200, timeout=30, what="a refresh")
    return exporter


def broker_errors(found: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[str, float]:
    """broker id -> kshare_exporter_broker_errors_total, from a scrape."""
    return {
        dict(labels)["broker"]: value
        for (name, labels), value in found.items()
        if name == "kshare_exporter_broker_errors_total"
    }
