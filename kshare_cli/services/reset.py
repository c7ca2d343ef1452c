"""What ``kshare reset-offsets`` asks of the cluster: plan a reset, and apply a plan.

Planning and applying are two sessions: between them the command may wait at a
confirmation prompt, and writes the rollback plan. Each is bounded by
``--timeout`` on its own.

A plan reads the in-flight windows from ``__share_group_state`` with the reader
``kshare inflight`` uses (``Session.placed_state``, given the same share of the
timeout): the records a reset delivers again or skips are counted from them.
The plan's types are re-exported, so the command reaches the admin layer only
through this service; the plan files are ``services.plan_files``'.
"""

from __future__ import annotations

from kshare_cli.admin.models import GroupDescription, MemberDescription, TopicPartition
from kshare_cli.admin.reset import ResetPlan, Scenario, Selection, ShareGroupResetter
from kshare_cli.admin.share_groups import ShareGroupAdmin
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.services.inflight import InflightService
from kshare_cli.services.session import Session

__all__ = [
    "GroupDescription",
    "MemberDescription",
    "ResetPlan",
    "Scenario",
    "Selection",
    "TopicPartition",
    "execute_reset",
    "plan_reset",
]


async def plan_reset(
    settings: ConnectionSettings,
    group_id: str,
    selection: Selection,
    scenario: Scenario,
    *,
    allow_new_group: bool,
    timeout_s: float,
) -> ResetPlan:
    with Session(settings, timeout_s) as session:
        source = session.placed_state([group_id])

        async def work() -> ResetPlan:
            async with session.admin() as admin:
                reader = InflightService(
                    admin, source, state_timeout_s=session.state_timeout_s, offsets_when_held=True
                )
                resetter = ShareGroupResetter(admin, reader)
                return await resetter.plan(
                    group_id, selection, scenario, allow_new_group=allow_new_group
                )

        return await session.bounded(work(), f"planning the reset of share group '{group_id}'")


async def execute_reset(
    settings: ConnectionSettings, plan: ResetPlan, *, timeout_s: float
) -> tuple[ResetPlan, GroupDescription | None]:
    """The executed plan, and when the broker refused a non-empty group, who is in it."""

    async def question(admin: ShareGroupAdmin) -> tuple[ResetPlan, GroupDescription | None]:
        done = await ShareGroupResetter(admin).execute(plan)
        members = None
        if done.group_error is not None and done.group_error.name == "NON_EMPTY_GROUP":
            described = (await admin.describe_groups([plan.group_id])).get(plan.group_id)
            if isinstance(described, GroupDescription):
                members = described
        return done, members

    return await Session(settings, timeout_s).ask(
        f"resetting share group '{plan.group_id}'", question
    )
