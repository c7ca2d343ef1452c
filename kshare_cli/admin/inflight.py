"""The in-flight view's domain models and errors: share-partitions, their windows, groups.

``services.inflight.InflightService`` builds them from the admin RPCs and
``__share_group_state`` (read by ``state.sources``); render/, the dashboard, the
exporter, ``health`` and a reset's plan read them. They live here, below services/,
because the admin layer's reset planning reads a ``GroupInflight`` too, and raises
the errors below for a group it cannot read.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from kshare_cli.admin.models import (
    BrokerFailure,
    GroupDescription,
    GroupFailure,
    KafkaError,
    LagSource,
    LagTotals,
    TopicPartition,
    in_partition_order,
)
from kshare_cli.errors import ExitCode, KshareError, NotAuthorized, NotFound
from kshare_cli.state.window import InFlightWindow

__all__ = [
    "DEFAULT_DELIVERY_COUNT_LIMIT",
    "GroupInflight",
    "GroupNotAuthorized",
    "GroupNotFound",
    "GroupSummary",
    "GroupUnavailable",
    "GroupsOverview",
    "GroupReader",
    "PartitionInflight",
    "group_error",
]

#: Kafka's ``group.share.delivery.count.limit`` default: what a group without its own
#: ``share.delivery.count.limit`` gets, and what a strip assumes when the config is unreadable.
DEFAULT_DELIVERY_COUNT_LIMIT: Final = 5


# --------------------------------------------------------------------------- models


@dataclass(frozen=True, slots=True)
class PartitionInflight:
    """One share-partition: where the group stands on it, and its persisted in-flight window.

    ``start_offset``, ``lag`` and ``lag_source`` are DescribeShareGroupOffsets' (the
    same figures as ``kshare describe``); ``end_offset`` is the log end offset.
    ``window`` is None when the state topic was not read, could not be read, or
    holds nothing for this share-partition; ``topic_id`` is None when the
    metadata did not name the topic (then no window can be matched to it).
    ``end_offset_error`` is why ``end_offset`` is None (ListOffsets failed: the
    leader down or silent, named). ``window_error`` says why the window is unknown
    when the state partition that holds it could not be read (its leader did not
    answer) while others were. ``log_start_offset`` is the partition's (ListOffsets
    earliest), None when not asked or not answered; when it is past the start offset,
    ``window`` marks the offsets below it DELETED (``InFlightWindow.after_retention``):
    retention deleted them, they are not queued.
    """

    topic: str
    partition: int
    topic_id: uuid.UUID | None
    start_offset: int | None
    end_offset: int | None
    lag: int | None
    lag_source: LagSource | None
    window: InFlightWindow | None
    error: KafkaError | None = None
    window_error: str | None = None
    end_offset_error: KafkaError | None = None
    log_start_offset: int | None = None

    @property
    def queued(self) -> int | None:
        """Records past the window, below the log end offset: produced, never delivered."""
        if self.window is None or self.end_offset is None:
            return None
        return self.window.queued(self.end_offset)

    @property
    def deleted(self) -> int | None:
        """Records at or above the start offset that retention deleted before the group was
        done with them; None when the log start offset is unknown.

        The window's DELETED offsets; without a window, every offset from the start offset
        to the log start offset (none of them is known to be done).
        """
        log_start = self.log_start_offset
        if log_start is None:
            return None
        if self.window is not None and self.window.start_offset >= 0:
            return self.window.deleted
        start = self.start_offset
        if start is None or start < 0:
            return 0
        return max(0, log_start - start)

    def with_log_start_offset(self, log_start_offset: int | None) -> PartitionInflight:
        """This share-partition given its log start offset, the window marked after it."""
        if log_start_offset is None:
            return self
        window = None if self.window is None else self.window.after_retention(log_start_offset)
        return dataclasses.replace(self, window=window, log_start_offset=log_start_offset)


@dataclass(frozen=True, slots=True)
class GroupInflight(LagTotals):
    """A share group's share-partitions with their windows, sorted by (topic, partition).

    ``window_note`` is one line saying why the windows are missing (the state
    topic could not be read), else None. ``delivery_count_limit`` is the group's
    effective ``share.delivery.count.limit``, None when its configs could not be
    read: a strip then assumes Kafka's default. ``unknown_topics`` are the topics
    asked for that the cluster does not have, which the command reports apart from
    a topic that exists but that the group has no share-partition of.

    ``offsets_note`` is None when the start offsets and lag are the broker's
    (DescribeShareGroupOffsets). Else it is one line saying why they come from
    ``__share_group_state`` instead (the group coordinator held the request while a
    broker did not answer, named) and that share-partitions whose state lives on
    that broker are missing or marked (``window_error``): a partial answer.
    """

    group_id: str
    description: GroupDescription | None
    partitions: tuple[PartitionInflight, ...]
    window_note: str | None
    delivery_count_limit: int | None = None
    unknown_topics: tuple[str, ...] = ()
    offsets_note: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", in_partition_order(self.partitions))

    def with_log_start_offsets(self, log_starts: Mapping[TopicPartition, int]) -> GroupInflight:
        """The group with each share-partition's log start offset (those ``log_starts``
        holds), its window marked after it: one rule for ``inflight``, the dashboard,
        ``health`` and the exporter, which read the log start offsets each their own way."""
        partitions = tuple(
            each.with_log_start_offset(log_starts.get(TopicPartition(each.topic, each.partition)))
            for each in self.partitions
        )
        return dataclasses.replace(self, partitions=partitions)


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of the groups screen; the total lag as ``GroupOffsets`` gives it."""

    group_id: str
    state: str
    members: int
    share_partitions: int
    total_lag: int | None
    total_lag_source: LagSource | None = None
    total_lag_complete: bool | None = None


@dataclass(frozen=True, slots=True)
class GroupsOverview:
    """Every share group of the cluster, sorted by id, and what could not be asked.

    A broker that did not answer ListGroups, or a group that could not be
    described, is in ``failures``; the other groups stand. A group that was
    listed and then not found had been deleted in between: it is simply absent.
    """

    groups: tuple[GroupSummary, ...]
    failures: tuple[BrokerFailure | GroupFailure, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "groups", tuple(sorted(self.groups, key=lambda each: each.group_id))
        )


class GroupUnavailable(KshareError):
    """The group could not be described (not authorised, coordinator unreachable, ...).

    ``failure`` carries Kafka's error; the message is the one ``kshare describe``
    prints for the same failure.
    """

    def __init__(self, failure: GroupFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


class GroupNotFound(GroupUnavailable, NotFound):
    """No such share group: exit code 5, as ``kshare describe`` gives for a missing group."""

    exit_code = ExitCode.NOT_FOUND


class GroupNotAuthorized(GroupUnavailable, NotAuthorized):
    """The cluster's ACLs refused us the group: exit code 6, as everywhere."""

    exit_code = ExitCode.NOT_AUTHORIZED


def group_error(failure: GroupFailure) -> GroupUnavailable:
    """The error a failed group read raises: not found (exit 5), refused (6), or else
    unavailable, each with the message ``kshare describe`` prints for it."""
    missing = failure.not_found and not failure.not_share_group
    if failure.not_authorized:
        return GroupNotAuthorized(failure)
    return GroupNotFound(failure) if missing else GroupUnavailable(failure)


class GroupReader(Protocol):
    """What reads one group's in-flight view (``services.inflight.InflightService``).

    A reset's plan (``admin.reset``) is handed one rather than building it: joining
    the admin RPCs and the state topic is a service, above the admin layer.
    ``reads_state`` tells whether windows are read at all (no state source: the
    plan's counts are lower bounds).
    """

    @property
    def reads_state(self) -> bool: ...

    async def group(
        self, group_id: str, topics: Sequence[str] = (), *, log_start_offsets: bool = True
    ) -> GroupInflight: ...
