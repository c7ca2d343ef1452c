"""The golden corpus (a real Kafka 4.2.0 broker's recording) as test vectors for live brokers.

Helpers to read the recorded captures, decode their frames with kio, substitute the ids
a different broker assigns (topic ids, member ids), send recorded requests over a raw
socket, and turn kio entities into plain values that compare with ``==``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import socket
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kshare_cli.sandbox.framing import decode_request
from kshare_cli.wire.framing import (
    decode_response,
    encode_request,
    response_schema,
)

#: The repository's own copy of ``shared/golden/kafka-4.2.0`` (its README says what it holds); the
#: one place a test finds the corpus, so a clone with nothing beside it runs every test.
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "kafka-4.2.0"

_SIZE = struct.Struct(">i")


def read_jsonl(relative: str) -> list[dict[str, Any]]:
    with (GOLDEN / relative).open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: URL-safe base64 without padding."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass(frozen=True)
class WireLine:
    """One recorded request/response pair, its frames decoded with kio."""

    line: int
    conn: int
    api_key: int
    api_version: int
    client_id: str | None
    request_frame: bytes
    response_frame: bytes
    t: float

    @property
    def request(self) -> Any:
        return decode_request(self.request_frame).payload

    @property
    def response(self) -> Any:
        schema = response_schema(self.api_key, self.api_version)
        return decode_response(self.response_frame, schema)[1]


@cache
def wire_lines(capture: str) -> tuple[WireLine, ...]:
    """Every pair of ``wire/<capture>.jsonl``, numbered from 1 as the decoded file numbers them."""
    lines = []
    for number, raw in enumerate(read_jsonl(f"wire/{capture}.jsonl"), start=1):
        lines.append(
            WireLine(
                line=number,
                conn=raw["conn"],
                api_key=raw["api_key"],
                api_version=raw["api_version"],
                client_id=raw["client_id"],
                request_frame=base64.b64decode(raw["request_b64"]),
                response_frame=base64.b64decode(raw["response_b64"]),
                t=raw["t"],
            )
        )
    return tuple(lines)


# --------------------------------------------------------------------------- kio entities


def plain(value: Any) -> Any:
    """A kio entity as nested dicts/lists of ints, strings, bytes and None (UUIDs as strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return value


def substitute(
    entity: Any, topic_ids: Mapping[uuid.UUID, uuid.UUID], member_ids: Mapping[str, str]
) -> Any:
    """A copy of a kio entity with recorded topic ids and member ids replaced by live ones."""
    if dataclasses.is_dataclass(entity) and not isinstance(entity, type):
        changes = {}
        for f in dataclasses.fields(entity):
            old = getattr(entity, f.name)
            if f.name == "member_id" and isinstance(old, str):
                new: Any = member_ids.get(old, old)
            else:
                new = substitute(old, topic_ids, member_ids)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(entity, **changes) if changes else entity
    if isinstance(entity, tuple):
        items = tuple(substitute(item, topic_ids, member_ids) for item in entity)
        return entity if all(a is b for a, b in zip(items, entity, strict=True)) else items
    if isinstance(entity, uuid.UUID):
        return topic_ids.get(entity, entity)
    return entity


def normalise(
    value: Any,
    *,
    topic_ids: Mapping[str, str],
    keep_groups: frozenset[str],
) -> Any:
    """A plain response made comparable across brokers.

    Topic ids become the names given in ``topic_ids``; member ids become ``<member-N>`` in
    order of appearance; client hosts become ``<host>``; list entries about groups other
    than ``keep_groups`` (groups that existed only on the recording broker) are dropped.
    """
    members: dict[str, str] = {}

    def walk(node: Any, field: str | None = None) -> Any:
        if isinstance(node, dict):
            return {key: walk(item, key) for key, item in node.items()}
        if isinstance(node, list):
            return [
                walk(item, field)
                for item in node
                if not (
                    isinstance(item, dict)
                    and isinstance(item.get("group_id"), str)
                    and item["group_id"] not in keep_groups
                )
            ]
        if isinstance(node, str):
            if field == "member_id":
                return members.setdefault(node, f"<member-{len(members) + 1}>")
            if field == "client_host":
                return "<host>"
            return topic_ids.get(node, node)
        return node

    return walk(value)


# --------------------------------------------------------------------------- raw connection


class RawConnection:
    """A blocking Kafka connection that sends hand-built (or recorded) request frames."""

    def __init__(self, bootstrap: str, timeout: float = 15) -> None:
        host, _, port = bootstrap.rpartition(":")
        self._socket = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0

    def send(self, payload: Any, client_id: str | None) -> Any:
        """Send a kio request payload and return the decoded kio response payload."""
        self._correlation += 1
        frame = encode_request(payload, self._correlation, client_id)
        self._socket.sendall(frame)
        response = self._read_frame()
        schema = response_schema(payload.__api_key__, payload.__version__)
        correlation, decoded = decode_response(response, schema)
        assert correlation == self._correlation
        return decoded

    def _read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self._socket.recv(count - len(chunks))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.extend(chunk)
        return bytes(chunks)

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
