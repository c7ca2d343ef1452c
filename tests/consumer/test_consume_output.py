"""What counts as printed: the sink's accounting, and the engine's shortcut for value-only layouts.

A line written to a pipe is printed once the reader took it out of the pipe; a
line cut short, or still in the pipe when the reader left, is not. A file or a
terminal takes a line when ``write`` and ``flush`` return.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Iterator

import pytest

from kshare_cli.consumer.deserializers import make_deserializer
from kshare_cli.consumer.output import STOP_GRACE_S, RecordSink
from kshare_cli.consumer.record_formatters import make_formatter
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.consumer.share_consume import value_only_lines

LINES = [b"first\n", b"second\n", b"third\n"]


@pytest.fixture
def pipe() -> Iterator[tuple[int, io.BufferedWriter]]:
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "wb")
    yield read_end, writer
    for close in (lambda: os.close(read_end), writer.close):
        try:
            close()
        except OSError:
            pass


def test_a_pipe_is_watched_a_file_is_not(
    pipe: tuple[int, io.BufferedWriter], tmp_path: object
) -> None:
    _, writer = pipe
    assert RecordSink(writer).watches_reader
    with open(os.devnull, "wb") as devnull:
        assert not RecordSink(devnull).watches_reader
    assert not RecordSink(io.BytesIO()).watches_reader


def test_lines_count_once_the_reader_took_them(pipe: tuple[int, io.BufferedWriter]) -> None:
    read_end, writer = pipe
    sink = RecordSink(writer)
    taken: list[bytes] = []
    reader = threading.Thread(target=lambda: taken.append(os.read(read_end, 1 << 16)))
    reader.start()
    delivered = sink.write_lines(LINES)
    reader.join(5)
    assert (delivered.printed, delivered.closed) == (3, False)
    assert taken == [b"".join(LINES)]


def test_a_reader_that_leaves_mid_line_took_only_the_whole_lines(
    pipe: tuple[int, io.BufferedWriter],
) -> None:
    read_end, writer = pipe
    sink = RecordSink(writer)

    def read_then_leave() -> None:
        wanted = len(LINES[0]) + 3  # the first line and a piece of the second
        data = b""
        while len(data) < wanted:
            data += os.read(read_end, wanted - len(data))
        os.close(read_end)

    reader = threading.Thread(target=read_then_leave)
    reader.start()
    delivered = sink.write_lines(LINES)
    reader.join(5)
    assert (delivered.printed, delivered.closed) == (1, True)
    assert sink.reader_gone()
    assert sink.write_lines(LINES).printed == 0


def test_a_reader_gone_before_writing_takes_nothing(pipe: tuple[int, io.BufferedWriter]) -> None:
    read_end, writer = pipe
    sink = RecordSink(writer)
    assert not sink.reader_gone()
    os.close(read_end)
    assert sink.reader_gone()
    delivered = sink.write_lines(LINES)
    assert (delivered.printed, delivered.closed) == (0, True)


def test_after_a_stop_a_stalled_reader_gets_a_grace_period(
    pipe: tuple[int, io.BufferedWriter],
) -> None:
    _, writer = pipe
    sink = RecordSink(writer)
    stop = threading.Event()
    stop.set()
    started = time.monotonic()
    delivered = sink.write_lines(LINES, stop)  # nobody reads: nothing was printed
    waited = time.monotonic() - started
    assert (delivered.printed, delivered.closed) == (0, False)
    assert STOP_GRACE_S * 0.9 <= waited < STOP_GRACE_S + 2


def test_a_file_takes_what_write_and_flush_accepted() -> None:
    target = io.BytesIO()
    delivered = RecordSink(target).write_lines(LINES)
    assert (delivered.printed, delivered.closed) == (3, False)
    assert target.getvalue() == b"".join(LINES)


def test_a_broken_pipe_on_a_buffered_sink_counts_nothing() -> None:
    class Broken(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: object) -> int:
            raise BrokenPipeError

    delivered = RecordSink(Broken()).write_lines(LINES)  # type: ignore[arg-type]
    assert (delivered.printed, delivered.closed) == (0, True)


# --------------------------------------------------------------------------- value-only layouts

RECORDS = [
    ConsumedRecord("t", 0, 0, 1, 1, 1767312000000, b"k", b"v0", (("h", b"x"),)),
    ConsumedRecord("t", 0, 1, 2, 1, 1767312001000, None, None, ()),
    ConsumedRecord("t", 3, 7, None, 0, -1, b"k", b"", ()),
    ConsumedRecord("t", 0, 9, 1, 2, 5, None, b"\xff\x00 binary", ()),
]


@pytest.mark.parametrize(
    ("kind", "properties"),
    [
        ("text", {}),
        ("text", {"null.literal": "NULL", "line.separator": "|"}),
        ("text", {"print.value": "true", "key.separator": " : "}),
        ("raw", {}),
    ],
)
def test_the_value_only_shortcut_prints_what_the_formatter_prints(
    kind: str, properties: dict[str, str]
) -> None:
    formatter = make_formatter(
        kind,  # type: ignore[arg-type]
        properties,
        make_deserializer("bytes"),
        make_deserializer("bytes"),
    )
    shortcut = value_only_lines(formatter)
    assert shortcut is not None
    null_line, separator = shortcut
    for record in RECORDS:
        fast = null_line if record.value is None else record.value + separator
        assert fast == formatter.format(record)


@pytest.mark.parametrize(
    ("kind", "properties", "value_deserializer"),
    [
        ("text", {"print.key": "true"}, "bytes"),
        ("text", {}, "string"),
        ("jsonl", {}, "bytes"),
    ],
)
def test_other_layouts_take_no_shortcut(
    kind: str, properties: dict[str, str], value_deserializer: str
) -> None:
    formatter = make_formatter(
        kind,  # type: ignore[arg-type]
        properties,
        make_deserializer("bytes"),
        make_deserializer(value_deserializer),
    )
    assert value_only_lines(formatter) is None
