"""The golden corpus's kafka-share-groups runs as kshare domain models.

Each ``kafka-share-groups.sh`` run of scenario A (``tool-output/kafka-share-groups``)
left its ListGroups / FindCoordinator / ShareGroupDescribe / DescribeShareGroupOffsets
exchanges in ``wire/scenario-a.jsonl``, and the broker's own ListOffsets (the end
offsets its lag was computed from) beside them. Decoding those recorded responses
with kio and converting them with ``kshare_cli.admin.share_groups``'s converters
gives the models kshare would have built against that broker at that moment; the
renderers must then reproduce what Kafka's tool printed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from kshare_cli.admin.models import (
    Coordinator,
    EndOffsets,
    GroupDescription,
    GroupDescriptions,
    GroupFailure,
    GroupListing,
    GroupOffsets,
    KafkaError,
    ShareGroupOffsets,
    TopicPartition,
)
from kshare_cli.admin.share_groups import (
    description_from,
    end_offsets_from,
    group_offsets_from,
    listed_groups_from,
)
from tests.support.golden import GOLDEN, wire_lines

TOOL_OUTPUT = GOLDEN / "tool-output" / "kafka-share-groups"

#: Recorded lines (numbered as in decoded/scenario-a.wire.jsonl) of each tool run.
LIST_LINES = {"01-list": 108, "02-list-state": 116, "03-list-state-stable": 124, "23": 392}
#: run -> (FindCoordinator line, ShareGroupDescribe line)
DESCRIBE_LINES = {
    "04": (130, 131),
    "05": (149, 150),
    "06": (162, 163),
    "07": (170, 171),
    "08": (178, 179),
    "09": (186, 187),
    "10": (196, 197),
    "11": (248, 249),
    "13": (287, 288),
    "14": (292, 293),
    "17": (332, 333),
    "21": (377, 378),
}
#: run -> DescribeShareGroupOffsets lines, and the broker's ListOffsets lines for its lag.
OFFSETS_LINES = {
    "04": ((143,), (142,)),
    "05": ((155,), (154,)),
    "10": (
        (201, 205, 209, 213, 217, 221, 225, 229, 234, 238, 242),
        (200, 204, 208, 212, 216, 220, 224, 228, 233, 237, 241),
    ),
    "14": ((298,), (297,)),
    # After the reset the broker reported lag -1 and asked for no end offsets; the
    # partitions' end offsets were still 15 (every earlier ListOffsets says so).
    "17": ((337,), (297,)),
    "21": ((380,), ()),
}


@cache
def _responses() -> dict[int, Any]:
    return {line.line: line for line in wire_lines("scenario-a")}


def response(line: int) -> Any:
    return _responses()[line].response


def tool_output(name: str, stream: str = "out") -> bytes:
    matches = sorted(TOOL_OUTPUT.glob(f"{name}*.{stream}"))
    assert len(matches) == 1, f"{name}: {matches}"
    return Path(matches[0]).read_bytes()


def listing(run: str, states: tuple[str, ...] = ()) -> GroupListing:
    return GroupListing(tuple(listed_groups_from(response(LIST_LINES[run]))), states)


def coordinators(find_line: int) -> dict[str, Coordinator | KafkaError]:
    found: dict[str, Coordinator | KafkaError] = {}
    for entry in response(find_line).coordinators:
        if int(entry.error_code):
            found[entry.key] = KafkaError.of(int(entry.error_code), entry.error_message)
        else:
            found[entry.key] = Coordinator(int(entry.node_id), entry.host, int(entry.port))
    return found


def descriptions(run: str) -> GroupDescriptions:
    find_line, describe_line = DESCRIBE_LINES[run]
    where = coordinators(find_line)
    results: list[GroupDescription | GroupFailure] = []
    for group in response(describe_line).groups:
        if int(group.error_code):
            error = KafkaError.of(int(group.error_code), group.error_message)
            results.append(GroupFailure(group.group_id, error))
            continue
        coordinator = where.get(group.group_id)
        assert isinstance(coordinator, Coordinator)
        results.append(description_from(group, coordinator))
    return GroupDescriptions(tuple(results))


def end_offsets(lines: tuple[int, ...]) -> EndOffsets:
    offsets: dict[TopicPartition, int] = {}
    for line in lines:
        found, failed = end_offsets_from(response(line))
        assert not failed
        offsets.update(found)
    return EndOffsets(offsets)


def offsets(run: str, *, with_end_offsets: bool = True) -> ShareGroupOffsets:
    offset_lines, end_lines = OFFSETS_LINES[run]
    ends = end_offsets(end_lines) if with_end_offsets else None
    groups: list[GroupOffsets | GroupFailure] = []
    for line in offset_lines:
        for group in response(line).groups:
            assert int(group.error_code) == 0
            groups.append(group_offsets_from(group, ends))
    return ShareGroupOffsets(tuple(groups))


def sorted_lines(text: bytes, header_lines: int) -> bytes:
    """Kafka's unsorted rows sorted: the header lines kept, the rest in byte order."""
    lines = text.splitlines(keepends=True)
    return b"".join(lines[:header_lines] + sorted(lines[header_lines:]))
