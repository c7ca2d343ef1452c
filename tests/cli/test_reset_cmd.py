"""``kshare reset-offsets`` against the sandbox (or ``KSHARE_TEST_BOOTSTRAP``).

Every test makes its own share group on one module topic whose records mirror
golden scenario A: 15 records per partition, record i = 2·offset + partition
with CreateTime 2026-01-01T00:00:00Z + i s. Groups are made empty with known
start offsets by ``reset-offsets --allow-new-group --execute`` (Kafka creates
the group, as AlterShareGroupOffsets does). What a reset did is checked with
``kshare describe`` and, once, with a ShareConsumer that receives from the new
start.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import ALTER_SHARE_GROUP_OFFSETS
from kshare_cli.sandbox.broker import Broker, response_type
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.wire.build import build
from tests.cli.conftest import (
    Kshare,
    ShareGroups,
    assert_one_error_line,
    kafka_line,
    validate,
)
from tests.support.golden import GOLDEN
from tests.support.sandbox import KEEP_OLD_RECORDS, Cluster
from tests.support.waiting import wait_for
from tests.wire.conftest import Handler, replaced_handler

BASE_TIMESTAMP = 1767225600000  # 2026-01-01T00:00:00Z, scenario A's first record


def golden_path() -> Path:
    return GOLDEN / "tool-output" / "kafka-share-groups"


@pytest.fixture(scope="module")
def topic(cluster: Cluster) -> str:
    """``a-xxxxxx`` (8 characters, as ``golden-a``): 2 partitions, 15 records each, kept
    whatever their January 2026 CreateTimes (a real broker's 7-day retention deletes them at
    its next check, moving the log start to 15 under every test of the module)."""
    name = f"a-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(cluster.config())
    for future in admin.create_topics([NewTopic(name, 2, 1, config=KEEP_OLD_RECORDS)]).values():
        future.result(30)
    producer = Producer(cluster.config())
    for i in range(30):
        producer.produce(
            name,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % 2,
            timestamp=BASE_TIMESTAMP + i * 1000,
        )
    assert producer.flush(30) == 0
    return name


def new_group() -> str:
    """``g-xxxxxx``: 8 characters, as ``golden-g``, so Kafka's column widths hold."""
    return f"g-{uuid.uuid4().hex[:6]}"


def start_offsets(kshare: Kshare, group: str) -> dict[int, int | None]:
    result = kshare.run("describe", group, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (document,) = json.loads(result.stdout)["groups"]
    return {p["partition"]: p["start_offset"] for p in document["partitions"]}


def make_group(kshare: Kshare, tmp_path: Path, topic: str, offsets: Mapping[int, int]) -> str:
    group = new_group()
    plan = tmp_path / f"{group}-setup.csv"
    plan.write_text("".join(f"{topic},{p},{o}\n" for p, o in offsets.items()))
    result = kshare.run(
        "reset-offsets",
        group,
        "--from-file",
        str(plan),
        "--execute",
        "--allow-new-group",
        "--rollback-file",
        str(tmp_path / f"{group}-setup-rollback.csv"),
    )
    assert result.exit_code == 0, result.stderr
    assert start_offsets(kshare, group) == dict(offsets)
    return group


def reset(kshare: Kshare, tmp_path: Path, group: str, *args: str) -> Any:
    """``reset-offsets`` with a new rollback file each run (an existing one is refused)."""
    rollback = tmp_path / f"{group}-rollback-{uuid.uuid4().hex[:6]}.csv"
    return kshare.run("reset-offsets", group, *args, "--rollback-file", str(rollback))


# --------------------------------------------------------------------------- golden 15-19


def rows_sorted(text: str) -> str:
    """A table with its rows sorted: Kafka prints them in a HashMap's order, which depends
    on the topic's name, so a recording replayed with other names (of the same lengths)
    has other row orders (``test_reset_golden_44`` replays the recorded names and order)."""
    head, *rows = text.strip("\n").split("\n")
    return "\n" + head + "\n" + "\n".join(sorted(rows)) + "\n"


def golden_rows(name: str, topic: str, group: str) -> str:
    """A recorded reset table with this test's names (same lengths), rows sorted."""
    text = (golden_path() / name).read_text()
    return rows_sorted(text.replace("golden-a", topic).replace("golden-g", group))


def test_golden_reset_scenarios_give_kafkas_offsets(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    # Scenario A left golden-g at start offsets 2 (p0) and 5 (p1), Empty.
    group = make_group(kshare, tmp_path, topic, {0: 2, 1: 5})

    dry = reset(
        kshare, tmp_path, group, "--topic", topic, "--to-earliest", "--dry-run", "-o", "plain"
    )
    assert dry.exit_code == 0, dry.stderr
    assert rows_sorted(dry.stdout) == golden_rows(
        "15-reset-offsets-earliest-dry-run.out", topic, group
    )
    assert start_offsets(kshare, group) == {0: 2, 1: 5}

    executed = reset(
        kshare, tmp_path, group, "--topic", topic, "--to-earliest", "--execute", "-o", "plain"
    )
    assert executed.exit_code == 0, executed.stderr
    assert rows_sorted(executed.stdout) == golden_rows(
        "16-reset-offsets-earliest-execute.out", topic, group
    )

    described = kshare.run("describe", group, "-o", "plain")
    after_reset = golden_rows("17-describe-after-reset-earliest.out", topic, group)
    if kafka_line(kshare, group) >= (4, 3):
        # Kafka 4.2 did not know the lag after a reset ("-"); from 4.3 on (KAFKA-20034) a
        # reset's snapshot counts 0 records delivered, and the lag is 15 - 0.
        after_reset = after_reset.replace(" -\n", " 15\n")
    assert described.stdout == after_reset

    by_time = reset(
        kshare,
        tmp_path,
        group,
        "--topic",
        f"{topic}:1",
        "--to-datetime",
        "2026-01-01T00:00:10.000",
        "--execute",
        "-o",
        "plain",
    )
    assert by_time.exit_code == 0, by_time.stderr
    assert rows_sorted(by_time.stdout) == golden_rows(
        "18-reset-offsets-datetime-p1-execute.out", topic, group
    )
    assert start_offsets(kshare, group) == {0: 0, 1: 5}

    latest = reset(
        kshare, tmp_path, group, "--all-topics", "--to-latest", "--dry-run", "-o", "plain"
    )
    assert latest.exit_code == 0, latest.stderr
    assert rows_sorted(latest.stdout) == golden_rows(
        "19-reset-offsets-all-topics-latest-dry-run.out", topic, group
    )
    assert start_offsets(kshare, group) == {0: 0, 1: 5}


# --------------------------------------------------------------------------- scenarios


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--to-earliest"], {0: 0, 1: 0}),
        (["--to-latest"], {0: 15, 1: 15}),
        (["--to-offset", "7"], {0: 7, 1: 7}),
        (["--shift-by", "-3"], {0: 1, 1: 6}),
        (["--shift-by", "4"], {0: 8, 1: 13}),
        (["--to-current"], {0: 4, 1: 9}),
        # Record i = 2·offset + p at base + i s: the first at or after +10 s is offset 5 on
        # both partitions (i = 10 and 11); after +8.5 s, offset 5 on p0 (i = 10) and 4 on p1
        # (i = 9).
        (["--to-datetime", "2026-01-01T00:00:10Z"], {0: 5, 1: 5}),
        (["--to-datetime", "2026-01-01T01:00:08.500+01:00"], {0: 5, 1: 4}),
        (["--to-datetime", "2026-01-01 00:00:20"], {0: 10, 1: 10}),
    ],
)
def test_each_scenario_moves_exactly_the_planned_offsets(
    kshare: Kshare, tmp_path: Path, topic: str, args: list[str], expected: dict[int, int]
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    planned = reset(kshare, tmp_path, group, "--topic", topic, *args, "-o", "json")
    assert planned.exit_code == 0, planned.stderr
    plan = json.loads(planned.stdout)
    validate(plan, "reset.schema.json")
    assert plan["executed"] is False
    assert {p["partition"]: p["new_offset"] for p in plan["partitions"]} == expected
    assert start_offsets(kshare, group) == {0: 4, 1: 9}  # a dry run changes nothing

    done = reset(kshare, tmp_path, group, "--topic", topic, *args, "--execute", "-o", "json")
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)
    validate(result, "reset.schema.json")
    assert result["executed"] is True
    assert {p["partition"]: p["result"] for p in result["partitions"]} == {0: "reset", 1: "reset"}
    assert start_offsets(kshare, group) == expected


def test_plan_shows_current_offsets_and_what_the_move_skips_or_redelivers(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    result = reset(
        kshare,
        tmp_path,
        group,
        "--topic",
        f"{topic}:0",
        "--topic",
        f"{topic}:1",
        "--to-offset",
        "6",
        "-o",
        "json",
    )
    rows = {p["partition"]: p for p in json.loads(result.stdout)["partitions"]}
    assert (rows[0]["current_offset"], rows[0]["skipped"], rows[0]["redelivered"]) == (4, 2, 0)
    assert (rows[1]["current_offset"], rows[1]["skipped"], rows[1]["redelivered"]) == (9, 0, 3)
    table = reset(kshare, tmp_path, group, "--topic", topic, "--to-offset", "6")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert re.search(r"CURRENT-OFFSET\s+NEW-OFFSET\s+LOG-START\s+LOG-END\s+CHANGE", lines[0])
    assert re.search(rf"{group}\s+{topic}\s+0\s+4\s+6\s+0\s+15\s+skips 2\s+planned", table.stdout)
    assert re.search(rf"{group}\s+{topic}\s+1\s+9\s+6\s+0\s+15\s+re-delivers 3", table.stdout)
    assert "Dry run: nothing changed" in table.stdout


def test_offsets_are_clamped_to_the_log_with_a_warning_each(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    result = reset(kshare, tmp_path, group, "--topic", topic, "--shift-by", "100", "-o", "json")
    assert result.exit_code == 0
    plan = json.loads(result.stdout)
    assert [(p["requested_offset"], p["new_offset"], p["clamped"]) for p in plan["partitions"]] == [
        (104, 15, "log-end"),
        (109, 15, "log-end"),
    ]
    warnings = result.stderr.splitlines()
    assert len(warnings) == 2
    assert all("above the log end offset; using 15" in line for line in warnings)
    back = reset(kshare, tmp_path, group, "--topic", f"{topic}:0", "--shift-by", "-10")
    assert "below the log start offset; using 0" in back.stderr


def test_by_duration_with_no_record_that_recent_falls_back_to_the_log_end(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    result = reset(kshare, tmp_path, group, "--topic", topic, "--by-duration", "PT1H", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert [p["new_offset"] for p in json.loads(result.stdout)["partitions"]] == [15, 15]
    assert result.stderr.count("using the log end offset 15") == 2
    # Far enough back, every record is at or after the time: the log start.
    old = reset(kshare, tmp_path, group, "--topic", topic, "--by-duration", "3650d", "-o", "json")
    assert [p["new_offset"] for p in json.loads(old.stdout)["partitions"]] == [0, 0]


def test_all_topics_takes_the_groups_share_partitions(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {1: 9})
    result = reset(kshare, tmp_path, group, "--all-topics", "--to-earliest", "-o", "json")
    assert [(p["topic"], p["partition"]) for p in json.loads(result.stdout)["partitions"]] == [
        (topic, 1)
    ]


# --------------------------------------------------------------------------- safety


def test_rollback_file_restores_the_previous_offsets(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    rollback = tmp_path / "undo.csv"
    result = kshare.run(
        "reset-offsets",
        group,
        "--topic",
        topic,
        "--to-latest",
        "--execute",
        "--rollback-file",
        str(rollback),
    )
    assert result.exit_code == 0, result.stderr
    assert f"rollback plan saved to {rollback}" in result.stderr

    # Nothing was ever delivered: the resume points are the start offsets, and
    # applying the plan delivers nothing acknowledged again. One line per partition
    # records what was finished before the reset (everything below the resume point).
    def history(partition: int, resume: int) -> str:
        return (
            f'# finished before the reset: {{"group": "{group}", "topic": "{topic}", '
            f'"partition": {partition}, "reset_to": 15, "finished_below": {resume}, '
            '"finished": []}\n'
        )

    assert rollback.read_text() == (
        f"# kshare rollback plan for share group '{group}', saved before reset-offsets "
        "--to-latest.\n# Applying it (--from-file): a rollback restores start offsets (each "
        "partition's first record not yet acknowledged or archived), not per-record "
        "acknowledgements, and delivers again 0 record(s) acknowledged or archived before "
        "this reset.\n# What the group had finished (acknowledged or archived) before this "
        "reset: every offset below finished_below, and the finished ranges (first and last "
        "offset; null: unknown). kshare's --from-file counts from them.\n"
        + history(0, 4)
        + history(1, 9)
        + f"{group},{topic},0,4\n{group},{topic},1,9\n"
    )
    assert start_offsets(kshare, group) == {0: 15, 1: 15}

    undo = kshare.run(
        "reset-offsets",
        group,
        "--from-file",
        str(rollback),
        "--execute",
        "--rollback-file",
        str(tmp_path / "undo-undo.csv"),
    )
    assert undo.exit_code == 0, undo.stderr
    assert start_offsets(kshare, group) == {0: 4, 1: 9}


def test_default_rollback_file_goes_to_the_xdg_state_directory(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    state = tmp_path / "state"
    result = kshare.run(
        "reset-offsets",
        group,
        "--topic",
        f"{topic}:0",
        "--to-offset",
        "1",
        "--execute",
        env={"XDG_STATE_HOME": str(state)},
    )
    assert result.exit_code == 0, result.stderr
    (saved,) = (state / "kshare" / "rollback").iterdir()
    assert saved.name.startswith(f"{group}-") and saved.suffix == ".csv"
    assert str(saved) in result.stderr
    assert saved.read_text().splitlines()[-1] == f"{group},{topic},0,4"


def test_export_round_trips_through_from_file(kshare: Kshare, tmp_path: Path, topic: str) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    exported = tmp_path / "plan.csv"
    planned = reset(
        kshare,
        tmp_path,
        group,
        "--topic",
        topic,
        "--to-datetime",
        "2026-01-01T00:00:20Z",
        "--export",
        str(exported),
    )
    assert planned.exit_code == 0, planned.stderr
    # Kafka 4.4's --export format: topic,partition,offset, no header.
    assert exported.read_text() == f"{topic},0,10\n{topic},1,10\n"
    assert start_offsets(kshare, group) == {0: 4, 1: 9}
    applied = reset(kshare, tmp_path, group, "--from-file", str(exported), "--execute")
    assert applied.exit_code == 0, applied.stderr
    assert start_offsets(kshare, group) == {0: 10, 1: 10}
    to_stdout = reset(kshare, tmp_path, group, "--topic", topic, "--to-earliest", "--export", "-")
    assert to_stdout.stdout == f"{topic},0,0\n{topic},1,0\n"


def test_a_bare_export_is_kafkas_flag(kshare: Kshare, tmp_path: Path, topic: str) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    # Kafka's command line: --export alone, last or before another option.
    for args in (("--dry-run", "--export"), ("--export", "--dry-run")):
        result = reset(kshare, tmp_path, group, "--topic", topic, "--to-latest", *args)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == f"{topic},0,15\n{topic},1,15\n"
    # -o plain: Kafka's bytes, its order and println's blank line (runs 21, 22, 28, 30).
    plain = reset(
        kshare, tmp_path, group, "--topic", topic, "--to-latest", "--export", "-o", "plain"
    )
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout.endswith("\n\n")
    assert sorted(plain.stdout.split()) == [f"{topic},0,15", f"{topic},1,15"]
    assert start_offsets(kshare, group) == {0: 4, 1: 9}
    executed = reset(
        kshare, tmp_path, group, "--topic", topic, "--to-offset", "7", "--execute", "--export"
    )
    assert executed.exit_code == 0, executed.stderr
    assert executed.stdout == f"{topic},0,7\n{topic},1,7\n"
    assert start_offsets(kshare, group) == {0: 7, 1: 7}


def test_plain_logs_kafkas_warn_line_for_each_clamped_offset(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    result = reset(kshare, tmp_path, group, "--topic", topic, "--to-offset", "100", "-o", "plain")
    assert result.exit_code == 0, result.stderr
    assert rows_sorted(result.stdout) == (
        f"\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        f"\n{group}        {topic}        0          15"
        f"\n{group}        {topic}        1          15\n"
    )
    # Run 29: GroupOffsetsResetter's log lines, instead of kshare's warnings.
    lines = sorted(re.sub(r"^\[[^]]+\]", "[TIME]", line) for line in result.stderr.splitlines())
    assert lines == [
        f"[TIME] WARN New offset (100) is higher than latest offset for topic partition "
        f"{topic}-{p}. Value will be set to 15. (org.apache.kafka.tools.GroupOffsetsResetter)"
        for p in (0, 1)
    ]


def test_a_group_with_members_is_refused_naming_them(
    kshare: Kshare, share_groups: ShareGroups, tmp_path: Path
) -> None:
    live, topic = share_groups.live, share_groups.topic
    # The live member joined at the latest offsets (10 and 4), so --to-earliest would set
    # 0; its share-partitions may still be initialising, so compare only what is there.
    executed = reset(kshare, tmp_path, live, "--topic", topic, "--to-earliest", "--execute")
    assert executed.exit_code == 1
    line = assert_one_error_line(executed.stderr, f"share group '{live}' is not empty")
    assert share_groups.live_client_id in line and "nothing changed" in line
    assert re.search(rf"{live}\s+{topic}\s+0\s.*\srefused$", executed.stdout, re.MULTILINE)
    assert not list(tmp_path.glob(f"{live}-rollback*.csv"))
    dry = reset(kshare, tmp_path, live, "--topic", topic, "--to-earliest")
    assert dry.exit_code == 1
    assert_one_error_line(dry.stderr, "--execute would be refused")
    assert "refused" in dry.stdout and "Dry run" not in dry.stdout  # the plan is still shown
    after = start_offsets(kshare, live)
    assert all(offset is None or offset > 0 for offset in after.values()), after


@pytest.mark.parametrize("fmt", ["json", "yaml", "jsonl", "csv"])
def test_a_refused_reset_is_data_in_every_format_as_delete_gives_it(
    kshare: Kshare, share_groups: ShareGroups, tmp_path: Path, fmt: str
) -> None:
    live, topic = share_groups.live, share_groups.topic
    before = start_offsets(kshare, live)
    result = reset(
        kshare, tmp_path, live, "--topic", topic, "--to-earliest", "--execute", "--yes", "-o", fmt
    )
    assert result.exit_code == 1
    assert_one_error_line(result.stderr, f"share group '{live}' is not empty", "nothing changed")
    if fmt in ("json", "yaml"):
        document = json.loads(result.stdout) if fmt == "json" else yaml.safe_load(result.stdout)
        validate(document, "reset.schema.json")
        assert (document["executed"], document["reason"]) == (False, "not_empty")
        assert document["members"] and document["rollback_file"] is None
        rows = document["partitions"]
    elif fmt == "jsonl":
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        for row in rows:
            validate(row, "reset-row.schema.json")
    else:
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [int(row["partition"]) for row in rows] == [0, 1]
    assert {row["result"] for row in rows} == {"refused"}
    assert not list(tmp_path.glob(f"{live}-rollback*.csv"))
    assert start_offsets(kshare, live) == before


def _refusing_alter(original: Handler) -> Handler:
    """AlterShareGroupOffsets answered NON_EMPTY_GROUP, changing nothing: what Kafka answers
    when a consumer joined the group between the plan and the reset."""
    del original

    async def refuse(broker: Broker, request: Request, connection: Connection) -> Any:
        body = {
            "throttle_time": 0,
            "error_code": ErrorCode.non_empty_group,
            "error_message": "The group is not empty.",
            "responses": [],
        }
        return build(response_type(request), body)

    return refuse


def test_a_reset_the_broker_refuses_is_data_too(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, topic: str
) -> None:
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: a consumer joining mid-reset is injected into the sandbox")
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    with replaced_handler(cluster.sandbox, ALTER_SHARE_GROUP_OFFSETS, _refusing_alter):
        result = reset(
            kshare, tmp_path, group, "--topic", topic, "--to-earliest", "--execute", "-o", "json"
        )
    assert result.exit_code == 1
    assert_one_error_line(result.stderr.split("\n", 1)[1], "refused the reset", "nothing changed")
    document = json.loads(result.stdout)
    validate(document, "reset.schema.json")
    assert (document["executed"], document["reason"]) == (True, "not_empty")
    assert document["error"]["name"] == "NON_EMPTY_GROUP"
    assert {p["result"] for p in document["partitions"]} == {"refused"}
    assert start_offsets(kshare, group) == {0: 4, 1: 9}


def test_a_refused_reset_in_plain_is_kafkas_run_12(
    kshare: Kshare, share_groups: ShareGroups, tmp_path: Path
) -> None:
    # Kafka's tool refuses a group with members on stderr alone, dry run or not.
    live, topic = share_groups.live, share_groups.topic
    recorded = golden_path() / "12-reset-offsets-earliest-dry-run-while-active"
    for mode in ("--dry-run", "--execute"):
        result = reset(
            kshare, tmp_path, live, "--topic", topic, "--to-earliest", mode, "-o", "plain"
        )
        assert result.exit_code == int(recorded.with_suffix(".rc").read_text())
        assert result.stdout == recorded.with_suffix(".out").read_text() == ""
        assert_one_error_line(result.stderr, f"share group '{live}' is not empty")


def test_an_existing_rollback_file_is_refused_before_anything_changes(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    rollback = tmp_path / "undo.csv"
    args = ["--topic", topic, "--execute", "--rollback-file", str(rollback)]
    first = kshare.run("reset-offsets", group, "--to-latest", *args)
    assert first.exit_code == 0, first.stderr
    original = rollback.read_text()
    assert original.endswith(f"\n{group},{topic},0,4\n{group},{topic},1,9\n")

    second = kshare.run("reset-offsets", group, "--to-earliest", *args)
    assert second.exit_code == 2
    assert second.stdout == ""
    assert_one_error_line(second.stderr, f"--rollback-file {rollback}", "exists", "nothing changed")
    assert rollback.read_text() == original  # the first plan is not lost
    assert start_offsets(kshare, group) == {0: 15, 1: 15}


def test_two_executes_in_the_same_millisecond_keep_both_default_rollback_files(
    kshare: Kshare, tmp_path: Path, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kshare_cli.services import plan_files

    stamp = "20261124T031500123Z"
    monkeypatch.setattr(plan_files, "_rollback_stamp", lambda: stamp)
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    state = tmp_path / "state"
    saved = []
    for offset in ("1", "2"):
        result = kshare.run(
            "reset-offsets",
            group,
            "--topic",
            topic,
            "--to-offset",
            offset,
            "--execute",
            env={"XDG_STATE_HOME": str(state)},
        )
        assert result.exit_code == 0, result.stderr
        (line,) = result.stderr.splitlines()
        saved.append(line.split("rollback plan saved to ", 1)[1].split(" (undo", 1)[0])
    folder = state / "kshare" / "rollback"
    first, second = folder / f"{group}-{stamp}.csv", folder / f"{group}-{stamp}-2.csv"
    assert saved == [str(first), str(second)]
    assert sorted(folder.iterdir()) == sorted([first, second])
    assert first.read_text().endswith(f"\n{group},{topic},0,4\n{group},{topic},1,9\n")
    assert second.read_text().endswith(f"\n{group},{topic},0,1\n{group},{topic},1,1\n")


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (
            ["--topic", "no-such-topic-kshare", "--to-earliest", "--execute"],
            5,
            "no-such-topic-kshare",
        ),
        (
            ["--topic", "{topic}:7", "--to-earliest", "--execute"],
            5,
            "partition {topic}:7 does not exist",
        ),
        (["--topic", "{topic}:x", "--to-earliest", "--execute"], 2, "not a non-negative integer"),
        (["--topic", "{topic}", "--to-datetime", "2026-13-01", "--execute"], 2, "--to-datetime"),
        (["--topic", "{topic}", "--to-datetime", "soon", "--execute"], 2, "--to-datetime"),
        (["--topic", "{topic}", "--by-duration", "forever", "--execute"], 2, "--by-duration"),
        (["--topic", "{topic}", "--to-offset", "-1", "--execute"], 2, "cannot be negative"),
        (
            ["--topic", "{topic}", "--to-earliest", "--dry-run", "--execute"],
            2,
            "mutually exclusive",
        ),
        (
            ["--topic", "{topic}", "--to-earliest", "--to-latest", "--execute"],
            2,
            "mutually exclusive",
        ),
        (["--topic", "{topic}", "--execute"], 2, "choose where to reset to"),
        (["--to-earliest", "--execute"], 2, "choose the partitions"),
        (["--from-file", "{bad_csv}", "--execute"], 2, "bad.csv"),
        (["--from-file", "{missing_csv}", "--execute"], 2, "cannot read it"),
    ],
)
def test_bad_input_is_one_error_line_and_changes_nothing(
    kshare: Kshare,
    tmp_path: Path,
    topic: str,
    args: list[str],
    code: int,
    fragment: str,
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text(f"{topic},0,4\n{topic},zero,1\n")
    names = {"topic": topic, "bad_csv": str(bad_csv), "missing_csv": str(tmp_path / "none.csv")}
    argv = [arg.format(**names) for arg in args]
    result = reset(kshare, tmp_path, group, *argv, "--yes")
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert_one_error_line(result.stderr, fragment.format(**names))
    assert result.stdout == ""
    assert start_offsets(kshare, group) == {0: 4, 1: 9}


def test_an_unknown_group_is_not_found_unless_allowed(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = new_group()
    result = reset(kshare, tmp_path, group, "--topic", topic, "--to-earliest", "--execute")
    assert result.exit_code == 5
    assert_one_error_line(result.stderr, f"share group '{group}' not found", "--allow-new-group")
    listed = kshare.run("list", "-o", "json")
    assert group not in listed.stdout


@pytest.mark.parametrize("allow_new_group", [False, True])
def test_a_consumer_group_is_not_a_share_group_and_nothing_is_written(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, topic: str, allow_new_group: bool
) -> None:
    """A classic consumer group of that id: refused as describe refuses it (exit 1, "is not
    a share group"), with or without --allow-new-group, before any rollback file is
    written (Kafka 4.4 answered the AlterShareGroupOffsets only after kshare had warned it
    would create the group and written the file)."""
    group = new_group()
    consumer = Consumer(cluster.config(**{"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    rollback = tmp_path / "rollback.csv"
    extra = ["--allow-new-group"] if allow_new_group else []
    result = kshare.run(
        "reset-offsets",
        group,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
        "--yes",
        *extra,
        "--rollback-file",
        str(rollback),
    )
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert_one_error_line(result.stderr, f"group '{group}' is not a share group")
    assert not rollback.exists()
    assert result.stderr == kshare.run("describe", group).stderr


def test_a_share_consumer_receives_from_the_new_start(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 0, 1: 0})
    result = reset(
        kshare,
        tmp_path,
        group,
        "--topic",
        f"{topic}:0",
        "--topic",
        f"{topic}:1",
        "--to-offset",
        "12",
        "--execute",
        "-o",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    consumer = ShareConsumer(cluster.config(**{"group.id": group}))
    consumer.subscribe([topic])
    received: set[tuple[int, int]] = set()
    try:

        def all_received() -> bool:
            for message in consumer.poll(0.2):
                if message.error() is None:
                    received.add((message.partition(), message.offset()))
            return len(received) >= 6

        wait_for(all_received, timeout=60, interval=0, what="records after the new start")
    finally:
        consumer.close()
    assert received == {(p, o) for p in (0, 1) for o in (12, 13, 14)}


def _run_on_terminal(kshare: Kshare, argv: list[str], answer: str) -> tuple[int, str]:
    """Run the console script with a pseudo-terminal as stdin/stdout/stderr; answer the prompt."""
    import os
    import pty
    import select
    import subprocess
    import time

    from tests.cli.conftest import KSHARE, process_env

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(KSHARE), *argv, *kshare.connection_args()],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=process_env({**kshare.environment(), "COLUMNS": "200"}),
        close_fds=True,
    )
    os.close(follower)
    screen = b""
    answered = False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed: the process ended
                    break
                if not chunk:
                    break
                screen += chunk
            if not answered and b"[y/N]" in screen:
                os.write(leader, answer.encode() + b"\n")
                answered = True
            if process.poll() is not None and not ready:
                break
        code = process.wait(timeout=30)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return code, screen.decode(errors="replace")


def test_execute_on_a_terminal_asks_first(kshare: Kshare, tmp_path: Path, topic: str) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    argv = [
        "reset-offsets",
        group,
        "--topic",
        topic,
        "--to-latest",
        "--execute",
        "--rollback-file",
        str(tmp_path / "asked.csv"),
    ]
    code, screen = _run_on_terminal(kshare, argv, "n")
    assert code == 1, screen
    assert f"Reset 2 share-partition(s) of '{group}'?" in screen
    assert "skips 11" in screen  # the plan is shown before the question
    assert "not confirmed; nothing changed" in screen
    assert not (tmp_path / "asked.csv").exists()
    assert start_offsets(kshare, group) == {0: 4, 1: 9}
    code, screen = _run_on_terminal(kshare, argv, "y")
    assert code == 0, screen
    assert start_offsets(kshare, group) == {0: 15, 1: 15}


def test_the_confirmation_shows_the_plan_without_a_dry_run_footer(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    argv = [
        "reset-offsets",
        group,
        "--topic",
        topic,
        "--to-offset",
        "6",
        "--execute",
        "--rollback-file",
        str(tmp_path / "asked.csv"),
    ]
    code, screen = _run_on_terminal(kshare, argv, "n")
    assert code == 1, screen
    plan, question = screen.split(f"Reset 2 share-partition(s) of '{group}'?", 1)
    assert "Plan (--to-offset 6): skips 2 record(s), re-delivers 3 " in plan
    assert "Dry run" not in screen and "Add --execute" not in screen
    assert "not confirmed; nothing changed" in question


def test_without_read_on_the_state_topic_the_counts_are_lower_bounds(
    kshare: Kshare, cluster: Cluster, tmp_path: Path, topic: str
) -> None:
    if cluster.sandbox is None:
        pytest.skip("on a real cluster: a missing ACL can only be injected into the sandbox")
    from tests.cli.test_inflight_cmd import FETCH, _denying_state_topic

    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    args = ("--topic", topic, "--to-offset", "6", "--timeout", "10s")
    with replaced_handler(cluster.sandbox, FETCH, _denying_state_topic(FETCH)):
        table = reset(kshare, tmp_path, group, *args)
        document = reset(kshare, tmp_path, group, *args, "-o", "json")
        plain = reset(kshare, tmp_path, group, *args, "-o", "plain")
    assert table.exit_code == document.exit_code == plain.exit_code == 0, table.stderr
    warning = assert_one_error_line(table.stderr, "lower bounds", "not authorized")
    assert warning.startswith("kshare: warning:")
    # Below 9 everything is done: 6-8 come back, at least; whether 4-5 were done is unknown.
    row = rf"{group}\s+{topic}\s+(\d)\s+(\d)\s+6\s+0\s+15\s+skips ≥0, re-delivers ≥(\d)\s"
    assert re.findall(row, table.stdout) == [("0", "4", "0"), ("1", "9", "3")]
    assert "skips at least 0 record(s), re-delivers at least 3" in table.stdout
    assert "≥: a lower bound" in table.stdout
    parsed = json.loads(document.stdout)
    validate(parsed, "reset.schema.json")
    assert parsed["counts_exact"] is False and "not authorized" in parsed["counts_note"]
    assert parsed["rollback_redelivers"] is None
    assert [(p["redelivered"], p["counts_exact"]) for p in parsed["partitions"]] == [
        (0, False),
        (3, False),
    ]
    # Kafka's table has no counts: plain is unchanged, and says nothing of them.
    assert "lower bounds" not in plain.stderr
    assert plain.stdout.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]


def test_plain_to_datetime_past_every_record_prints_kafkas_warn_line_on_stdout(
    kshare: Kshare, tmp_path: Path, topic: str
) -> None:
    group = make_group(kshare, tmp_path, topic, {0: 4, 1: 9})
    args = ("--topic", f"{topic}:1", "--to-datetime", "2030-01-01T00:00:00", "-o", "plain")
    result = reset(kshare, tmp_path, group, *args)
    assert result.exit_code == 0, result.stderr
    # OffsetsUtils.getLogTimestampOffsets: System.out.println("\nWarn: Partition " + ...).
    assert result.stdout == (
        f"\nWarn: Partition 1 from topic {topic} is empty. Falling back to latest known offset.\n"
        f"\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        f"\n{group}        {topic}        1          15\n"
    )
    assert "Falling back" not in result.stderr and "no record at or after" not in result.stderr
