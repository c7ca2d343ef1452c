"""``kshare consume`` text output against kafka-console-share-consumer.sh 4.2.0, byte for byte.

The golden corpus recorded runs 01-10 of Kafka's console share consumer over the six
records of ``console-share-consumer-produced.jsonl`` (topic golden-fmt, partition 0,
CreateTime timestamps, each delivered once). Each run's ``--formatter-property``
arguments become our formatter's properties; its stdout must come out unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from kshare_cli.consumer.deserializers import make_deserializer
from kshare_cli.consumer.record_formatters import make_formatter
from kshare_cli.consumer.records import CREATE_TIME, ConsumedRecord
from tests.support.golden import GOLDEN, read_jsonl

RUNS_DIR = GOLDEN / "tool-output" / "console-share-consumer"
FORMATTER_RUNS = [
    "01-default",
    "02-print-key",
    "03-key-offset-partition-delivery",
    "04-timestamp-headers-key",
    "05-value-false-key",
    "06-key-separator-null-literal",
    "07-headers-separator",
    "08-print-epoch",
    "09-release",
    "10-reject",
]


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def golden_records() -> list[ConsumedRecord]:
    """The six records Kafka's console share consumer read, as a first delivery gives them."""
    return [
        ConsumedRecord(
            topic="golden-fmt",
            partition=0,
            offset=row["offset"],
            delivery_count=1,
            timestamp_type=CREATE_TIME,
            timestamp=row["timestamp"],
            key=_utf8(row["key"]),
            value=_utf8(row["value"]),
            headers=tuple((name, _utf8(value)) for name, value in row["headers"]),
        )
        for row in read_jsonl("console-share-consumer-produced.jsonl")
    ]


def formatter_properties(args: list[str]) -> dict[str, str]:
    """``--formatter-property k=v`` arguments as Kafka parses them (split at the first '=')."""
    properties: dict[str, str] = {}
    for flag, value in zip(args, args[1:], strict=False):
        if flag in ("--formatter-property", "--property"):
            name, _, setting = value.partition("=")
            properties[name] = setting
    return properties


def _commands() -> Mapping[str, list[str]]:
    commands = json.loads((RUNS_DIR / "commands.json").read_text())
    return {command["name"]: command["args"] for command in commands}


def _text_output(properties: Mapping[str, str]) -> bytes:
    formatter = make_formatter(
        "text", properties, make_deserializer("bytes"), make_deserializer("bytes")
    )
    return b"".join(formatter.format(record) for record in golden_records())


@pytest.mark.parametrize("run", FORMATTER_RUNS)
def test_text_output_is_kafkas_byte_for_byte(run: str) -> None:
    args = _commands()[run]
    recorded = (RUNS_DIR / f"{run}.out").read_bytes()
    assert (RUNS_DIR / f"{run}.rc").read_text().strip() == "0"
    assert _text_output(formatter_properties(args)) == recorded


@pytest.mark.parametrize("run", FORMATTER_RUNS)
def test_the_string_deserializer_prints_the_same(run: str) -> None:
    # Kafka's StringDeserializer on UTF-8 text prints what no deserializer prints.
    properties = formatter_properties(_commands()[run])
    formatter = make_formatter(
        "text", properties, make_deserializer("string"), make_deserializer("string")
    )
    output = b"".join(formatter.format(record) for record in golden_records())
    assert output == (RUNS_DIR / f"{run}.out").read_bytes()


def test_every_recorded_formatter_run_is_covered() -> None:
    # A run added to the corpus with formatter output must be added here too.
    recorded = {
        name
        for name, args in _commands().items()
        if (RUNS_DIR / f"{name}.out").exists()
        and "--bootstrap-server" in args
        and "--topic" in args
    }
    assert recorded == set(FORMATTER_RUNS)


def test_the_corpus_exercises_what_the_formatter_must_get_right() -> None:
    # Guards the corpus itself: nulls, headers with a null value, repeated headers.
    records = golden_records()
    assert any(record.key is None for record in records)
    assert any(record.value is None for record in records)
    assert any(value is None for record in records for _, value in record.headers)
    assert any(len(record.headers) > 1 for record in records)
    assert any(not record.headers for record in records)


def test_property_order_does_not_change_the_field_order() -> None:
    # Run 03 gave key, offset, partition, delivery; Kafka printed partition first.
    forwards = {"print.key": "true", "print.offset": "true", "print.partition": "true"}
    backwards = dict(reversed(list(forwards.items())))
    assert _text_output(forwards) == _text_output(backwards)
    first_line = _text_output(forwards).split(b"\n")[0]
    assert first_line == b"Partition:0\tOffset:0\tk0\tv0"


def test_jsonl_carries_the_same_records() -> None:
    formatter = make_formatter("jsonl", {}, make_deserializer("bytes"), make_deserializer("bytes"))
    lines = [json.loads(formatter.format(record)) for record in golden_records()]
    produced = read_jsonl("console-share-consumer-produced.jsonl")
    assert [line["offset"] for line in lines] == [row["offset"] for row in produced]
    assert [line["key"] for line in lines] == [row["key"] for row in produced]
    assert [line["value"] for line in lines] == [row["value"] for row in produced]
    assert [line["timestamp"] for line in lines] == [row["timestamp"] for row in produced]
    assert [[[h["key"], h["value"]] for h in line["headers"]] for line in lines] == [
        row["headers"] for row in produced
    ]
    assert {line["timestamp_type"] for line in lines} == {"CreateTime"}
    assert {line["delivery_count"] for line in lines} == {1}


def test_the_documented_jsonl_example_is_what_the_formatter_writes() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "json-output.md").read_text()
    section = docs.split("## `kshare consume -o/--format jsonl`")[1].split("\n## ")[0]
    example = section.split("```json\n")[1].split("```")[0].encode()
    formatter = make_formatter("jsonl", {}, make_deserializer("bytes"), make_deserializer("bytes"))
    assert formatter.format(golden_records()[1]) == example
