"""``fan_out_to_coordinators`` with ``batch_size`` and ``max_in_flight``, seen at the broker.

Why these exist: Kafka 4.2 serves a batched DescribeShareGroupOffsets one group after
the other (DESIGN.md, measured facts), so kshare asks about a few groups per request
and sends the requests to one coordinator concurrently. What must hold: the broker
receives exactly the batches asked for, every group once; FindCoordinator is still one
request for all groups; no more than ``max_in_flight`` requests are ever outstanding
on the coordinator's connection; and without ``batch_size`` one request carries all
of a coordinator's groups, as before. These need to see every request the broker
gets, so they use a private sandbox (skipped on a real cluster).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import FIND_COORDINATOR, SHARE_GROUP_DESCRIBE
from kshare_cli.sandbox.broker import Broker
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.connection import BrokerConnection
from kshare_cli.wire.errors import KafkaError
from tests.support.sandbox_thread import SandboxThread
from tests.wire.conftest import Handler, plaintext_settings, replaced_handler, run

GROUPS = 20


def describe_body(version: int, group_ids: Sequence[str]) -> dict[str, Any]:
    return {"group_ids": list(group_ids), "include_authorized_operations": False}


def describe_split(response: Any) -> dict[str, tuple[int, Any]]:
    return {group.group_id: (int(group.error_code), group) for group in response.groups}


class Outstanding:
    """The most requests ever awaiting an answer at once, over every connection."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    def wrap(self, original: Any) -> Any:
        async def send(connection: BrokerConnection, payload: Any) -> Any:
            self.now += 1
            self.peak = max(self.peak, self.now)
            try:
                return await original(connection, payload)
            finally:
                self.now -= 1

        return send


@pytest.mark.parametrize(
    ("batch_size", "max_in_flight", "expected_sizes", "expected_peak"),
    [
        (3, 4, [3, 3, 3, 3, 3, 3, 2], 4),
        (1, 32, [1] * GROUPS, GROUPS),
        (None, 4, [GROUPS], 1),
    ],
)
def test_batches_reach_the_broker_as_asked_and_in_flight_stays_bounded(
    sandbox: SandboxThread,
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
    batch_size: int | None,
    max_in_flight: int,
    expected_sizes: list[int],
    expected_peak: int,
) -> None:
    groups = [f"batch-{unique}-{index:02d}" for index in range(GROUPS)]
    described: list[list[str]] = []
    finds: list[int] = []

    def recording(into: list[Any], what: str) -> Any:
        def make(original: Handler) -> Handler:
            async def handler(broker: Broker, request: Request, connection: Connection) -> Any:
                payload = request.payload
                if what == "describe":
                    into.append([str(g) for g in payload.group_ids])
                else:
                    into.append(len(payload.coordinator_keys or ()))
                return await original(broker, request, connection)

            return handler

        return make

    outstanding = Outstanding()
    monkeypatch.setattr(BrokerConnection, "send", outstanding.wrap(BrokerConnection.send))

    async def scenario() -> dict[str, Any]:
        settings = plaintext_settings(sandbox.bootstrap)
        async with await KafkaClient.connect(settings, timeout_s=10) as client:
            outstanding.peak = 0
            with (
                replaced_handler(sandbox, SHARE_GROUP_DESCRIBE, recording(described, "describe")),
                replaced_handler(sandbox, FIND_COORDINATOR, recording(finds, "find")),
            ):
                return await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE,
                    groups,
                    describe_body,
                    describe_split,
                    batch_size=batch_size,
                    max_in_flight=max_in_flight,
                )

    results = run(scenario())
    assert finds == [GROUPS]  # one batched FindCoordinator for every group
    assert [len(batch) for batch in described] == expected_sizes
    assert sorted(group for batch in described for group in batch) == groups
    assert outstanding.peak == expected_peak
    assert list(results) == groups
    for answer in results.values():
        assert isinstance(answer, KafkaError) and answer.code == ErrorCode.group_id_not_found


@pytest.mark.parametrize("bad", [{"batch_size": 0}, {"max_in_flight": 0}])
def test_a_batch_or_bound_below_one_is_refused_before_any_request(
    sandbox: SandboxThread, bad: dict[str, int]
) -> None:
    async def scenario() -> int:
        settings = plaintext_settings(sandbox.bootstrap)
        async with await KafkaClient.connect(settings, timeout_s=10) as client:
            before = client.round_trips
            with pytest.raises(ValueError, match="at least 1"):
                await client.fan_out_to_coordinators(
                    SHARE_GROUP_DESCRIBE, ["g"], describe_body, describe_split, **bad
                )
            return client.round_trips - before

    assert run(scenario()) == 0
