"""Placement of share-partitions on `__share_group_state`, against Java and a real broker."""

from __future__ import annotations

import base64
import uuid

import pytest

from kshare_cli.state.partitioning import (
    DEFAULT_STATE_PARTITIONS,
    SHARE_STATE_TOPIC,
    java_string_hash,
    kafka_uuid,
    state_partition_for,
)
from kshare_cli.state.records import decode_key
from kshare_cli.state.replay import SharePartitionKey
from tests.support.golden import read_jsonl

INT_MIN = -(1 << 31)
GOLDEN_TOPIC_ID = uuid.UUID("d1384e70-b203-4446-8f5e-1417096b3c51")


@pytest.mark.parametrize(
    ("text", "hashed"),
    [
        ("", 0),
        ("a", 97),
        ("abc", 96354),
        ("hello", 99162322),
        ("hello world", 1794106052),
        ("Aa", 2112),  # Java's best-known collision...
        ("BB", 2112),  # ...
        ("polygenelubricants", INT_MIN),  # hashes to Integer.MIN_VALUE
        ("\u00e9", 0xE9),  # one UTF-16 unit, not two UTF-8 bytes
        ("\U0001f600", 31 * 0xD83D + 0xDE00),  # a surrogate pair: two units
    ],
)
def test_java_string_hash(text: str, hashed: int) -> None:
    assert java_string_hash(text) == hashed


def test_kafka_uuid_is_kafkas_base64_form() -> None:
    assert kafka_uuid(GOLDEN_TOPIC_ID) == "0ThOcLIDREaPXhQXCWs8UQ"
    assert kafka_uuid(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_every_golden_record_sits_on_the_partition_kafka_placed_it() -> None:
    rows = read_jsonl("state/share-group-state.jsonl")
    placed = {}
    for row in rows:
        key = decode_key(base64.b64decode(row["key_b64"]))
        share_partition = SharePartitionKey.of(key)
        placed[share_partition] = row["partition"]

        assert state_partition_for(share_partition) == row["partition"], share_partition

    assert len(placed) == 12  # the corpus README: 12 non-empty partitions
    assert len(set(placed.values())) == 12


def test_the_state_topic_defaults() -> None:
    assert SHARE_STATE_TOPIC == "__share_group_state"
    assert DEFAULT_STATE_PARTITIONS == 50
    # The golden dump read all 50 partitions; every record sits below 50.
    assert max(row["partition"] for row in read_jsonl("state/share-group-state.jsonl")) < 50


def test_the_partition_count_is_a_parameter() -> None:
    key = SharePartitionKey("golden-g", GOLDEN_TOPIC_ID, 0)
    hashed = abs(java_string_hash(f"golden-g:{kafka_uuid(GOLDEN_TOPIC_ID)}:0"))

    assert state_partition_for(key) == hashed % 50 == 22
    assert state_partition_for(key, 7) == hashed % 7
    assert state_partition_for(key, 1) == 0
    with pytest.raises(ValueError, match="at least one partition"):
        state_partition_for(key, 0)


def _group_hashing_to_int_min(suffix: str) -> str:
    """A group id whose coordinator key hashes to Integer.MIN_VALUE (hashCode is linear)."""
    length = 7
    scale = pow(31, len(suffix), 1 << 32)
    wanted = ((1 << 31) - java_string_hash(suffix)) * pow(scale, -1, 1 << 32) % (1 << 32)
    # Characters "A" + digit, for base-31 digits of what is left after the "A"s.
    base = sum(ord("A") * 31**power for power in range(length)) % (1 << 32)
    remainder = (wanted - base) % (1 << 32)
    digits = []
    for _ in range(length):
        remainder, digit = divmod(remainder, 31)
        digits.append(chr(ord("A") + digit))
    assert remainder == 0
    return "".join(reversed(digits))


def test_a_key_hashing_to_int_min_goes_to_partition_0_as_kafkas_utils_abs_does() -> None:
    suffix = f":{kafka_uuid(GOLDEN_TOPIC_ID)}:3"
    group_id = _group_hashing_to_int_min(suffix)

    assert java_string_hash(group_id + suffix) == INT_MIN
    assert abs(INT_MIN) % 50 != 0  # what Math.abs-style arithmetic would have said
    assert state_partition_for(SharePartitionKey(group_id, GOLDEN_TOPIC_ID, 3)) == 0
