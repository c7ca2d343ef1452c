"""Frame decoding: golden frames decode, and no byte string makes the parser misbehave."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kshare_cli.sandbox.framing import decode_request, encode_response
from kshare_cli.wire.framing import (
    FrameError,
    decode_response,
    encode_request,
    response_schema,
)
from tests.support.golden import GOLDEN as GOLDEN_ROOT

GOLDEN = GOLDEN_ROOT / "wire"


def _golden_pairs() -> list[dict[str, object]]:
    pairs: list[dict[str, object]] = []
    for name in ("step1-check.jsonl", "scenario-a.jsonl", "console-share-consumer.jsonl"):
        with (GOLDEN / name).open() as file:
            pairs.extend(json.loads(line) for line in file)
    return pairs


PAIRS = _golden_pairs()


def test_every_golden_request_and_response_decodes_and_reencodes() -> None:
    assert len(PAIRS) == 724
    for pair in PAIRS:
        raw_request = base64.b64decode(str(pair["request_b64"]))
        request = decode_request(raw_request)
        assert request.api_key == pair["api_key"]
        assert request.correlation_id == pair["correlation_id"]
        assert request.client_id == pair["client_id"]
        # Re-encoding reproduces the recorded bytes (librdkafka's all-topics Metadata
        # request carries 3 trailing bytes that Kafka ignores, as do we).
        again = encode_request(
            request.payload, request.correlation_id, request.client_id, size_prefix=False
        )
        assert again == raw_request[: len(raw_request) - request.trailing_bytes]
        raw_response = base64.b64decode(str(pair["response_b64"]))
        schema = response_schema(request.api_key, request.api_version)
        correlation_id, payload = decode_response(raw_response, schema)
        assert correlation_id == pair["correlation_id"]
        assert encode_response(payload, correlation_id, size_prefix=False) == raw_response


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_frame_errors(data: bytes) -> None:
    try:
        decode_request(data)
    except FrameError:
        pass


@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_mutated_golden_requests_raise_only_frame_errors(data: st.DataObject) -> None:
    pair = data.draw(st.sampled_from(PAIRS))
    frame = bytearray(base64.b64decode(str(pair["request_b64"])))
    position = data.draw(st.integers(0, len(frame) - 1))
    frame[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    try:
        decode_request(bytes(frame[:cut]))
    except FrameError:
        pass


def test_short_frame_is_malformed() -> None:
    with pytest.raises(FrameError):
        decode_request(b"\x00\x12")
