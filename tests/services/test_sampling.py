"""services/sampling: one group's sample is read as each group of many is.

The group and its log start offsets come from stand-ins of the admin layer: what is
asserted is how a read becomes a ``Sample`` or an ERR result, not the RPCs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from types import SimpleNamespace
from typing import Any, cast

from kio.schema.errors import ErrorCode

from kshare_cli.admin.inflight import (
    GroupInflight,
    GroupNotFound,
    GroupUnavailable,
    PartitionInflight,
)
from kshare_cli.admin.models import GroupFailure, KafkaError, TopicPartition
from kshare_cli.admin.share_groups import EARLIEST_TIMESTAMP
from kshare_cli.services.health import GroupHealth, Sample
from kshare_cli.services.inflight import InflightService
from kshare_cli.services.sampling import sample_group, sample_groups
from kshare_cli.state.window import InFlightWindow, WindowRun, WindowState


class _Client:
    """Records the coordinator lookups: the sampler asks every group's in one."""

    def __init__(self) -> None:
        self.lookups: list[list[str]] = []

    async def find_coordinators(self, group_ids: Collection[str]) -> dict[str, Any]:
        self.lookups.append(list(group_ids))
        return {}


class _Admin:
    def __init__(self) -> None:
        self.client = _Client()

    async def log_offsets(self, partitions: Collection[TopicPartition], timestamp: int) -> Any:
        assert timestamp == EARLIEST_TIMESTAMP  # the log start offsets
        return SimpleNamespace(offsets={each: 10 + each.partition for each in partitions})


class _Service:
    """Answers ``group`` with two share-partitions of ``orders``, or the group's failure."""

    admin = _Admin()

    def __init__(self) -> None:
        self.read_together: list[list[str]] = []

    async def groups(
        self, group_ids: Sequence[str], *, log_start_offsets: bool = False
    ) -> dict[str, Any]:
        self.read_together.append(list(group_ids))
        read: dict[str, Any] = {}
        for group_id in group_ids:
            try:
                group = await self.group(group_id, log_start_offsets=False)
            except GroupUnavailable as failed:
                read[group_id] = failed
                continue
            if log_start_offsets:  # every group's in one lookup, as the service asks them
                partitions = [TopicPartition(p.topic, p.partition) for p in group.partitions]
                starts = await self.admin.log_offsets(partitions, EARLIEST_TIMESTAMP)
                group = group.with_log_start_offsets(starts.offsets)
            read[group_id] = group
        return read

    async def group(self, group_id: str, *, log_start_offsets: bool = True) -> Any:
        # The sampler asks every group's log start offsets at once, not each group's own.
        assert not log_start_offsets
        if group_id == "gone":
            raise GroupNotFound(_failure(group_id, ErrorCode.group_id_not_found))
        if group_id == "denied":
            raise GroupUnavailable(_failure(group_id, ErrorCode.group_authorization_failed))
        window = InFlightWindow(5, 0, (WindowRun(5, 5, WindowState.ACKNOWLEDGED, 1),), 1, 1, 0, 0)
        partitions = tuple(
            PartitionInflight("orders", index, None, 5, 20, 14, None, window) for index in (0, 1)
        )
        return GroupInflight(group_id, None, partitions, None)


def _failure(group_id: str, code: ErrorCode) -> GroupFailure:
    return GroupFailure(group_id, KafkaError.of(code))


def _clock() -> float:
    return 42.0


def test_one_group_is_sampled_as_each_of_many() -> None:
    service = cast(InflightService, _Service())

    async def both() -> tuple[object, ...]:
        alone = [await sample_group(service, name, _clock) for name in ("g", "gone", "denied")]
        together = await sample_groups(service, ["g", "gone", "denied"], _clock)
        return tuple(alone), together

    alone, together = asyncio.run(both())
    assert alone == together
    # Every coordinator in one lookup, before the groups are read side by side.
    assert cast(_Service, service).admin.client.lookups == [["g", "gone", "denied"]]
    assert cast(_Service, service).read_together == [["g", "gone", "denied"]]
    sample, gone, denied = cast(tuple[Sample, GroupHealth, GroupHealth], alone)
    assert sample.taken_at == 42.0
    assert sample.log_start_offsets == {
        TopicPartition("orders", 0): 10,
        TopicPartition("orders", 1): 11,
    }
    # Offsets 6.. below each log start offset are deleted by retention, not waiting.
    assert [each.deleted for each in sample.group.partitions] == [4, 5]
    assert [each.log_start_offset for each in sample.group.partitions] == [10, 11]
    assert (gone.not_found, gone.reasons) == (True, ("share group 'gone': not found",))
    assert (denied.not_found, denied.reasons) == (
        False,
        ("share group 'denied': GROUP_AUTHORIZATION_FAILED",),
    )
