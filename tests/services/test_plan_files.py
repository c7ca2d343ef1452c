"""The plan files reset-offsets reads and writes, on hand-made plans (no broker).

The rollback plan is what an operator has left when a reset went wrong: these tests
hold its bytes, its refusal to replace any file, and that ``--from-file`` reads back
exactly the offsets and the history it saved.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.reset import PlannedOffset, ResetPlan, Scenario, compute_plan
from kshare_cli.errors import UsageError
from kshare_cli.services import plan_files
from kshare_cli.state.records import StateBatch
from kshare_cli.state.replay import SharePartitionState
from kshare_cli.state.window import InFlightWindow

P0 = TopicPartition("t", 0)
ACKNOWLEDGED, ARCHIVED, AVAILABLE = 2, 4, 0


def _trailing_reset(group: str = "g") -> ResetPlan:
    """--to-latest over a window whose stored start offset 10 trails acknowledgements:
    10-12 acknowledged, 13 available, 14 archived, 15 acknowledged (resume point 13)."""
    batches = ((10, 12, ACKNOWLEDGED), (13, 13, AVAILABLE), (14, 14, ARCHIVED), (15, 15, 2))
    window = InFlightWindow.from_state(
        SharePartitionState(
            0, 1, 0, 10, -1, 0, 0, tuple(StateBatch(*batch, 1) for batch in batches)
        )
    )
    planned, _ = compute_plan(
        Scenario("latest"),
        [P0],
        current={P0: 10},
        log_start={P0: 3},
        log_end={P0: 20},
        windows={P0: window},
    )
    return ResetPlan(group, "--to-latest", planned, "Empty")


def test_the_rollback_write_never_replaces_a_file_that_appeared_meanwhile(tmp_path: Path) -> None:
    # A file made between the check and the write (another run's plan) stays as it was.
    planned = PlannedOffset("t", 0, 4, 0, 0, 0, 15, resume_offset=4, resume_redelivers=0)
    plan = ResetPlan("g", "--to-earliest", (planned,), "Empty")
    assert plan.rollback_offsets() == {P0: 4}
    taken = tmp_path / "taken.csv"
    taken.write_text("other,t,0,7\n")
    with pytest.raises(UsageError, match="the file exists"):
        plan_files.write_rollback(plan, taken)
    assert taken.read_text() == "other,t,0,7\n"
    assert plan_files.write_rollback(plan, taken, numbered=True) == tmp_path / "taken-2.csv"
    assert (tmp_path / "taken-2.csv").read_text().endswith("\ng,t,0,4\n")
    assert plan_files.write_rollback(plan, taken, numbered=True) == tmp_path / "taken-3.csv"
    assert taken.read_text() == "other,t,0,7\n"


def test_an_existing_rollback_file_is_refused_before_the_cluster_is_asked(tmp_path: Path) -> None:
    taken = tmp_path / "undo.csv"
    plan_files.check_rollback_file(taken)  # free: no error
    taken.symlink_to(tmp_path / "nowhere")  # a dangling link is taken too
    with pytest.raises(UsageError, match="never overwritten; choose another path"):
        plan_files.check_rollback_file(taken)


def test_the_rollback_plan_saves_the_resume_point_its_note_and_what_was_finished(
    tmp_path: Path,
) -> None:
    plan = _trailing_reset()
    saved = plan_files.write_rollback(plan, tmp_path / "undo.csv")
    assert saved.read_text() == (
        "# kshare rollback plan for share group 'g', saved before reset-offsets --to-latest.\n"
        "# Applying it (--from-file): a rollback restores start offsets (each partition's "
        "first record not yet acknowledged or archived), not per-record acknowledgements, "
        "and delivers again 2 record(s) acknowledged or archived before this reset.\n"
        "# What the group had finished (acknowledged or archived) before this reset: every "
        "offset below finished_below, and the finished ranges (first and last offset; null: "
        "unknown). kshare's --from-file counts from them.\n"
        '# finished before the reset: {"group": "g", "topic": "t", "partition": 0, '
        '"reset_to": 20, "finished_below": 13, "finished": [[14, 15]]}\n'
        "g,t,0,13\n"
    )
    line = plan_files.rollback_saved(plan, saved)
    assert line == (
        f"rollback plan saved to {saved} (undo with: kshare reset-offsets g --from-file "
        f"{saved} --execute; {plan_files.rollback_note(plan)})"
    )


def test_a_rollback_plan_reads_back_as_the_offsets_and_history_it_saved(tmp_path: Path) -> None:
    plan = _trailing_reset()
    saved = plan_files.write_rollback(plan, tmp_path / "undo.csv")
    with saved.open("a", encoding="utf-8") as handle:
        handle.write("other,t,0,1\nother,t,1,1\n")
    read = plan_files.read_plan_file(saved, "g")
    (offset,) = plan.partitions
    assert read.offsets == {P0: 13} == plan.rollback_offsets()
    assert read.history == {P0: offset.rollback_history("g")}
    assert read.others == 2
    assert plan_files.read_plan_file(saved, "other").history == {}


def test_a_line_break_in_the_group_id_cannot_end_a_comment_line(tmp_path: Path) -> None:
    plan = _trailing_reset("two\nlines")
    text = plan_files.write_rollback(plan, tmp_path / "undo.csv").read_text()
    assert text.startswith("# kshare rollback plan for share group 'two lines', saved")
    assert all(line.startswith("#") for line in text.splitlines()[:4])


def test_a_rollback_plan_that_cannot_be_saved_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UsageError, match=r"cannot save the rollback plan to .*nothing changed"):
        plan_files.write_rollback(_trailing_reset(), blocker / "undo.csv")
    assert blocker.read_text() == ""


def test_the_default_rollback_file_is_under_xdg_state_home_with_a_safe_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(plan_files, "_rollback_stamp", lambda: "20261124T031500123Z")
    assert plan_files.default_rollback_path("orders/eu west") == (
        tmp_path / "kshare" / "rollback" / "orders_eu_west-20261124T031500123Z.csv"
    )


def test_a_plan_file_that_cannot_be_read_or_has_nothing_for_the_group_is_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(UsageError, match="--from-file .*missing.csv: cannot read it"):
        plan_files.read_plan_file(tmp_path / "missing.csv", "g")
    others = tmp_path / "others.csv"
    others.write_text("h,t,0,1\n")
    with pytest.raises(UsageError, match="no entries for share group 'g'"):
        plan_files.read_plan_file(others, "g")


def test_the_export_is_kafkas_three_column_plan(tmp_path: Path) -> None:
    plan = _trailing_reset()
    assert plan_files.export_text(plan) == "t,0,20\n"
    destination = tmp_path / "plan.csv"
    plan_files.write_export_file(plan, destination)
    assert destination.read_text() == "t,0,20\n"
    assert plan_files.read_plan_file(destination, "g").offsets == {P0: 20}
    with pytest.raises(UsageError, match="--export"):
        plan_files.write_export_file(plan, tmp_path)
