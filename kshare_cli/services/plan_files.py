"""The files ``kshare reset-offsets`` reads and writes: plans, exports and rollback plans.

A rollback plan may be the only record of a group's offsets before a reset, so
it is written before anything changes, made durable, and never overwritten: an
existing ``--rollback-file`` is refused before the cluster is asked anything,
and a default file's name (the time to the millisecond) is made unique. Its
``#`` lines say what applying it does and record what the group had finished,
which ``--from-file`` reads back (``read_plan_file``) to count what applying it
delivers again.

Plan files are CSV as Kafka 4.4's tool reads and writes them:
``topic,partition,offset`` or ``group,topic,partition,offset``, no header
(``admin.plans`` is the codec). Every failure here is a ``UsageError`` naming
the file, raised before the cluster is changed.

Imported only once the command runs (never for ``--help``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kshare_cli.admin.models import TopicPartition
from kshare_cli.admin.plans import (
    PlanEntry,
    RollbackHistory,
    read_plan,
    read_rollback_history,
    write_plan,
    write_rollback_history,
)
from kshare_cli.admin.reset import ResetPlan
from kshare_cli.errors import UsageError

__all__ = [
    "PlanFile",
    "check_rollback_file",
    "default_rollback_path",
    "export_text",
    "read_plan_file",
    "rollback_file_taken",
    "rollback_note",
    "rollback_saved",
    "write_export_file",
    "write_rollback",
]


@dataclass(frozen=True, slots=True)
class PlanFile:
    """What a ``--from-file`` plan holds for one group.

    ``others`` counts the entries for other groups (the command says it ignored
    them); ``history`` is, for a rollback plan, what the group had finished before
    the reset it undoes, for the partitions in ``offsets`` (empty for any other plan).
    """

    offsets: dict[TopicPartition, int]
    others: int
    history: dict[TopicPartition, RollbackHistory]


def read_plan_file(path: Path, group_id: str) -> PlanFile:
    """The plan file's offsets and rollback history for ``group_id``; a file with no
    entry for it is a usage error."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"--from-file {path}: cannot read it: {reason}") from None
    entries = read_plan(text, group=group_id, source=str(path))
    ours = {
        TopicPartition(entry.topic, entry.partition): entry.offset
        for entry in entries
        if entry.group == group_id
    }
    others = sum(1 for entry in entries if entry.group != group_id)
    if not ours:
        raise UsageError(f"--from-file {path}: no entries for share group '{group_id}'")
    history = read_rollback_history(text, group=group_id, source=str(path))
    return PlanFile(
        offsets=ours,
        others=others,
        history={
            TopicPartition(topic, partition): finished
            for (topic, partition), finished in history.items()
            if TopicPartition(topic, partition) in ours
        },
    )


def export_text(plan: ResetPlan) -> str:
    """``--export``'s plan: the new offsets as Kafka 4.4's ``topic,partition,offset``."""
    entries = [
        PlanEntry(plan.group_id, offset.topic, offset.partition, offset.new_offset)
        for offset in plan.partitions
    ]
    return write_plan(entries, with_group=False)


def write_export_file(plan: ResetPlan, destination: Path) -> None:
    """``--export PLAN.csv``: the plan written to a file (replaced if it exists: it is
    the user's output, unlike a rollback plan)."""
    try:
        destination.write_text(export_text(plan), encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--export {destination}: {error.strerror or error}") from None


def _rollback_stamp() -> str:
    """The UTC time in a default rollback file's name, to the millisecond (tests pin it)."""
    import pendulum

    return pendulum.now("UTC").format("YYYYMMDD[T]HHmmssSSS[Z]")


def default_rollback_path(group_id: str) -> Path:
    """``$XDG_STATE_HOME/kshare/rollback/<group>-<UTC time>.csv``; XDG's default state
    directory is ``~/.local/state``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", group_id)[:100] or "group"
    return Path(base) / "kshare" / "rollback" / f"{safe}-{_rollback_stamp()}.csv"


def rollback_file_taken(path: Path) -> UsageError:
    """The refusal of a ``--rollback-file`` that exists: it may hold the only record of
    some group's earlier offsets, so kshare never replaces it."""
    return UsageError(
        f"--rollback-file {path}: the file exists, and a rollback plan is never "
        "overwritten; choose another path; nothing changed"
    )


def check_rollback_file(path: Path) -> None:
    """Refuse an existing ``--rollback-file`` before anything is asked of the cluster."""
    if os.path.lexists(path):
        raise rollback_file_taken(path)


def _write_new_file(path: Path, text: str) -> None:
    """Create ``path`` (FileExistsError if it exists: no run can overwrite another's
    plan, however close together) and make its content durable."""
    with open(path, "x", encoding="utf-8") as handle:
        try:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.close()
            path.unlink(missing_ok=True)  # ours, and incomplete
            raise


def _one_line(text: str) -> str:
    """``text`` fit for a ``#`` line: a line break in a group id or a path would end it."""
    return re.sub(r"[\r\n]", " ", text)


def rollback_note(plan: ResetPlan) -> str:
    """What applying the rollback plan does, in one sentence that stays true.

    A reset replaces the stored record states with a bare start offset, so no plan
    can give back per-record acknowledgements: it can only move the start offset
    again, and every record at or above it comes back, acknowledged or not. The
    rollback plan therefore saves each partition's resume point (the first record
    neither acknowledged nor archived), not the stored start offset, which trails
    the acknowledgements; the note counts the records that still come back, from what
    the plan records as finished (``ResetPlan.rollback_redelivers``), the same record
    from which applying the plan counts them.
    """
    redelivers = plan.rollback_redelivers
    if redelivers is None:
        again = (
            "an unknown number of records acknowledged or archived at or above those "
            f"offsets (the in-flight windows could not be read: {plan.window_note})"
        )
    else:
        again = f"{redelivers} record(s) acknowledged or archived before this reset"
    text = (
        "a rollback restores start offsets (each partition's first record not yet "
        "acknowledged or archived), not per-record acknowledgements, and delivers again "
        f"{again}"
    )
    if plan.without_start_offset:
        text += (
            f"; {plan.without_start_offset} share-partition(s) had no start offset, "
            "which it cannot restore"
        )
    return text


def rollback_saved(plan: ResetPlan, path: Path) -> str:
    """The line that tells the operator where the rollback plan is and how to apply it."""
    return (
        f"rollback plan saved to {path} "
        f"(undo with: kshare reset-offsets {plan.group_id} --from-file {path} --execute; "
        f"{rollback_note(plan)})"
    )


def rollback_text(plan: ResetPlan) -> str:
    """The rollback plan's bytes: ``#`` lines (what applying it does, and per partition
    what the group had finished), then ``group,topic,partition,offset`` rows, sorted."""
    entries = [
        PlanEntry(plan.group_id, tp.topic, tp.partition, offset)
        for tp, offset in sorted(plan.rollback_offsets().items())
    ]
    histories = [
        history
        for offset in plan.partitions
        if (history := offset.rollback_history(plan.group_id)) is not None
    ]
    header = (
        f"# kshare rollback plan for share group '{_one_line(plan.group_id)}', saved before "
        f"reset-offsets {_one_line(plan.scenario)}.\n"
        f"# Applying it (--from-file): {rollback_note(plan)}.\n"
    )
    if histories:
        header += (
            "# What the group had finished (acknowledged or archived) before this reset: "
            "every offset below finished_below, and the finished ranges (first and last "
            "offset; null: unknown). kshare's --from-file counts from them.\n"
            + write_rollback_history(histories)
        )
    return header + write_plan(entries, with_group=True)


def write_rollback(plan: ResetPlan, path: Path, *, numbered: bool = False) -> Path:
    """Save the rollback plan, durably, before anything changes; returns where.

    The offsets are each partition's resume point (``ResetPlan.rollback_offsets``),
    preceded by ``#`` lines saying what applying them does (``rollback_note``) and
    recording, per partition, the records the group had finished before this reset
    (``PlannedOffset.rollback_history``): this reset clears their states, and Kafka
    prunes the state-topic records that held them within minutes, so kshare's
    ``--from-file`` reads them here to count what applying the plan delivers again
    and skips, as the note does. The file is created, never replaced. A taken
    ``--rollback-file`` is a usage error; with ``numbered`` (the default path, whose
    name has the time to the millisecond) a name another run took in the same
    millisecond becomes ``NAME-2.csv``, ``NAME-3.csv``...
    """
    text = rollback_text(plan)
    candidate, number = path, 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                _write_new_file(candidate, text)
            except FileExistsError:
                if not numbered:
                    raise rollback_file_taken(path) from None
                number += 1
                candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
            else:
                return candidate
    except OSError as error:
        raise UsageError(
            f"cannot save the rollback plan to {candidate}: {error.strerror or error}; "
            "nothing changed"
        ) from None
