"""Every recorded response of the APIs kshare speaks decodes to what Kafka decoded.

The golden corpus holds each frame a Kafka 4.2.0 broker sent, and beside it
Kafka's own decoding (``decoded/*.wire.jsonl``, Kafka's ``RequestConvertToJson``).
The client's decoding path (``decode_response_frame``, ApiVersions fallback
included) must give the same content, field by field: kio names fields in
snake_case and drops the ``Ms`` of durations, Kafka's JSON names them in
camelCase; UUIDs are Kafka's URL-safe base64, bytes plain base64. Tagged fields
that hold their default are left out of Kafka's JSON, and only those may be
missing from it.

(test_framing.py checks that the same frames re-encode byte for byte; that
alone would not catch two fields decoded into each other's places.)
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import uuid
from typing import Any

import pytest

from kshare_cli.kafka.api_keys import DESCRIBE_SHARE_GROUP_OFFSETS
from kshare_cli.wire.connection import decode_response_frame
from tests.support.golden import GOLDEN

CAPTURES = ("step1-check", "scenario-a", "console-share-consumer")

#: The APIs the client speaks (admin RPCs, routing, handshakes).
CLIENT_APIS = {
    2: "ListOffsets",
    3: "Metadata",
    10: "FindCoordinator",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    32: "DescribeConfigs",
    36: "SaslAuthenticate",
    42: "DeleteGroups",
    44: "IncrementalAlterConfigs",
    60: "DescribeCluster",
    77: "ShareGroupDescribe",
    90: "DescribeShareGroupOffsets",
    91: "AlterShareGroupOffsets",
    92: "DeleteShareGroupOffsets",
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _kafka_uuid(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def as_kafka_json(value: Any) -> Any:
    """A kio value as Kafka's JSON converter writes it; entities give (json, tagged defaults)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key: item for key, item, _ in _entity_fields(value)}
    if isinstance(value, tuple | list):
        return [as_kafka_json(item) for item in value]
    if isinstance(value, uuid.UUID):
        return _kafka_uuid(value)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _entity_fields(entity: Any) -> list[tuple[str, Any, bool]]:
    """(Kafka's JSON key, JSON value, whether the value is the field's default) per field."""
    fields = []
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        key = _camel(field.name)
        if field.metadata.get("kafka_type") in ("timedelta_i32", "timedelta_i64"):
            key += "Ms"
        is_default = field.default is not dataclasses.MISSING and value == field.default
        fields.append((key, as_kafka_json(value), is_default))
    return fields


def differences(entity: Any, kafka: Any, path: str = "response") -> list[str]:
    """Where the client's decoding and Kafka's differ (empty when they agree)."""
    if dataclasses.is_dataclass(entity) and not isinstance(entity, type):
        if not isinstance(kafka, dict):
            return [f"{path}: Kafka has {kafka!r}, kio an entity"]
        found: list[str] = []
        keys = set()
        for key, value, is_default in _entity_fields(entity):
            keys.add(key)
            if key not in kafka:
                if not is_default:
                    found.append(f"{path}.{key}: kio has {value!r}, Kafka's JSON has no such key")
                continue
            found.extend(differences(getattr(entity, _field_for(entity, key)), kafka[key],
                                     f"{path}.{key}"))  # fmt: skip
        found.extend(f"{path}.{key}: only in Kafka's JSON" for key in set(kafka) - keys)
        return found
    if isinstance(entity, tuple):
        if not isinstance(kafka, list) or len(kafka) != len(entity):
            return [f"{path}: kio has {len(entity)} items, Kafka {kafka!r}"]
        found = []
        for index, (item, other) in enumerate(zip(entity, kafka, strict=True)):
            found.extend(differences(item, other, f"{path}[{index}]"))
        return found
    mine = as_kafka_json(entity)
    return [] if mine == kafka else [f"{path}: kio {mine!r} != Kafka {kafka!r}"]


def _field_for(entity: Any, key: str) -> str:
    for field in dataclasses.fields(entity):
        name = _camel(field.name)
        if key in (name, name + "Ms"):
            return field.name
    raise KeyError(key)


def _pairs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    pairs = []
    for capture in CAPTURES:
        raw_lines = (GOLDEN / "wire" / f"{capture}.jsonl").read_text().splitlines()
        decoded_lines = (GOLDEN / "decoded" / f"{capture}.wire.jsonl").read_text().splitlines()
        assert len(raw_lines) == len(decoded_lines)
        for raw_text, decoded_text in zip(raw_lines, decoded_lines, strict=True):
            raw, decoded = json.loads(raw_text), json.loads(decoded_text)
            assert (raw["conn"], raw["correlation_id"]) == (
                decoded["conn"],
                decoded["correlation_id"],
            )
            if raw["api_key"] in CLIENT_APIS:
                pairs.append((f"{capture}:{decoded['line']}", raw, decoded))
    return pairs


PAIRS = _pairs()


def test_the_corpus_covers_the_apis_the_client_speaks() -> None:
    covered = {raw["api_key"] for _, raw, _ in PAIRS}
    # SaslHandshake and SaslAuthenticate were not recorded (the broker listened in PLAINTEXT).
    assert covered == set(CLIENT_APIS) - {17, 36}
    assert len(PAIRS) == 438


@pytest.mark.parametrize(("where", "raw", "decoded"), PAIRS, ids=[where for where, _, _ in PAIRS])
def test_the_client_decodes_the_recorded_response_as_kafka_did(
    where: str, raw: dict[str, Any], decoded: dict[str, Any]
) -> None:
    assert decoded["response_trailing_bytes"] == 0
    frame = base64.b64decode(raw["response_b64"])
    correlation_id, response = decode_response_frame(raw["api_key"], raw["api_version"], frame)
    assert correlation_id == raw["correlation_id"]
    assert type(response).__name__.startswith(CLIENT_APIS[raw["api_key"]])
    assert differences(response, decoded["response"]) == []


def test_the_comparison_notices_a_wrong_missing_or_extra_field() -> None:
    where, raw, decoded = next(p for p in PAIRS if p[1]["api_key"] == DESCRIBE_SHARE_GROUP_OFFSETS)
    frame = base64.b64decode(raw["response_b64"])
    _, response = decode_response_frame(raw["api_key"], raw["api_version"], frame)
    kafka = json.loads(json.dumps(decoded["response"]))
    partition = kafka["groups"][0]["topics"][0]["partitions"][0]
    partition["startOffset"] += 1
    del partition["leaderEpoch"]
    partition["extra"] = 1
    kafka["groups"][0]["topics"][0]["topicId"] = _kafka_uuid(uuid.UUID(int=1))
    found = differences(response, kafka)
    assert len(found) == 4, found
    assert any("startOffset" in line for line in found)
    assert any("leaderEpoch" in line for line in found)
    assert any("extra: only in Kafka's JSON" in line for line in found)
    assert any("topicId" in line for line in found)
