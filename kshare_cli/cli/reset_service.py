"""The cluster calls of ``kshare reset-offsets``: plan, and apply a plan.

Planning and applying are two connections: between them the command may wait
at a confirmation prompt, and writes the rollback plan. Each is bounded by
``--timeout`` on its own.

A plan reads the in-flight windows from ``__share_group_state`` with the reader
``kshare inflight`` uses (``PlacedStateSource``, given the same share of the
timeout): the records a reset delivers again or skips are counted from them.
"""

from __future__ import annotations

from kshare_cli.admin.inflight import PlacedStateSource
from kshare_cli.admin.models import GroupDescription
from kshare_cli.admin.reset import ResetPlan, Scenario, Selection, ShareGroupResetter
from kshare_cli.cli.inflight_service import STATE_SHARE_OF_TIMEOUT
from kshare_cli.cli.service import _bounded, open_admin
from kshare_cli.connect.settings import ConnectionSettings


async def plan_reset(
    settings: ConnectionSettings,
    group_id: str,
    selection: Selection,
    scenario: Scenario,
    *,
    allow_new_group: bool,
    timeout_s: float,
) -> ResetPlan:
    source = PlacedStateSource(settings.confluent_config(), group_ids=[group_id])
    try:

        async def work() -> ResetPlan:
            async with open_admin(settings, timeout_s) as admin:
                resetter = ShareGroupResetter(
                    admin, source, state_timeout_s=timeout_s * STATE_SHARE_OF_TIMEOUT
                )
                return await resetter.plan(
                    group_id, selection, scenario, allow_new_group=allow_new_group
                )

        return await _bounded(
            work(), timeout_s, f"planning the reset of share group '{group_id}'"
        )
    finally:
        source.close()


async def execute_reset(
    settings: ConnectionSettings, plan: ResetPlan, *, timeout_s: float
) -> tuple[ResetPlan, GroupDescription | None]:
    """The executed plan, and when the broker refused a non-empty group, who is in it."""

    async def work() -> tuple[ResetPlan, GroupDescription | None]:
        async with open_admin(settings, timeout_s) as admin:
            done = await ShareGroupResetter(admin).execute(plan)
            members = None
            if done.group_error is not None and done.group_error.name == "NON_EMPTY_GROUP":
                described = (await admin.describe_groups([plan.group_id])).get(plan.group_id)
                if isinstance(described, GroupDescription):
                    members = described
            return done, members

    return await _bounded(work(), timeout_s, f"resetting share group '{plan.group_id}'")
