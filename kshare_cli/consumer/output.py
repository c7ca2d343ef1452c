"""Where consumed records are written, and how much of it the reader really took.

A record may be accepted only once its line was printed. For a file or a
terminal, a completed ``write`` and ``flush`` is that moment. For a pipe it is
not: ``kshare consume | head`` hands lines to a kernel buffer, and when the
reader exits, whatever it had not read yet is thrown away. Accepting those
records would lose them.

So when the sink is a pipe (and the kernel tells how many bytes are waiting in
it, ``FIONREAD``, as Linux does for either end), lines are written with
``os.write`` straight to the descriptor, and a record counts as printed only
once every byte of its line has left the pipe: the reading process has taken
it. When the reader goes away, the records it did not take are released and
delivered again, never accepted. What the reader does with what it took
(``head`` reads a block and prints ten lines of it) is beyond what a writer
can see.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import select
import stat
import termios
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, Final

__all__ = ["Delivered", "RecordSink"]

# How long to sleep between looks at a pipe that still holds unread lines: the
# reader is usually scheduled within microseconds, a stalled one gets 5 ms looks.
_YIELDS: Final = 20
_FIRST_WAIT_S: Final = 0.00005
_LONGEST_WAIT_S: Final = 0.005
#: After a stop was asked for, how long a live reader gets to take what was written.
STOP_GRACE_S: Final = 1.0


@dataclass(frozen=True, slots=True)
class Delivered:
    """How many of the lines handed to :meth:`RecordSink.write_lines` were printed.

    ``printed`` lines (a prefix, in order) reached the reader; the rest did not
    and must not be accepted. ``closed`` says the reader went away (EPIPE), so
    nothing more can be printed.
    """

    printed: int
    closed: bool


class RecordSink:
    """A binary sink with the one guarantee the consumer needs: what counts as printed."""

    def __init__(self, sink: BinaryIO) -> None:
        self._sink = sink
        self._pipe_fd = _pipe_descriptor(sink)
        self.closed = False
        self._poller = select.poll()
        if self._pipe_fd is not None:
            self._poller.register(self._pipe_fd, select.POLLOUT)

    @property
    def watches_reader(self) -> bool:
        """Whether lines count as printed only once the reader took them (a pipe)."""
        return self._pipe_fd is not None

    def write_lines(self, lines: Sequence[bytes], stop: threading.Event | None = None) -> Delivered:
        """Write ``lines``, flush, and say how many of them were printed.

        Raises OSError for a failure other than a closed reader (a full disk...);
        nothing of ``lines`` counts as printed then.
        """
        if not lines or self.closed:
            return Delivered(0, self.closed)
        if self._pipe_fd is None:
            try:
                self._sink.write(b"".join(lines))
                self._sink.flush()
            except BrokenPipeError:
                # Unknown how much went out before the reader left: count none of it.
                self.closed = True
                return Delivered(0, True)
            return Delivered(len(lines), False)
        return self._write_to_pipe(self._pipe_fd, lines, stop)

    def _write_to_pipe(
        self, fd: int, lines: Sequence[bytes], stop: threading.Event | None
    ) -> Delivered:
        data = memoryview(b"".join(lines))
        written = 0
        try:
            while written < len(data):
                written += os.write(fd, data[written:])
        except BrokenPipeError:
            self.closed = True
        if not self.closed:
            self._wait_until_taken(fd, stop)
        unread = _unread_bytes(fd)
        taken = written - min(unread, written)
        printed = 0
        end = 0
        for line in lines:
            end += len(line)
            if end > taken:
                break
            printed += 1
        return Delivered(printed, self.closed)

    def _wait_until_taken(self, fd: int, stop: threading.Event | None) -> None:
        """Wait until the pipe is empty or its reader left; briefly once a stop was asked."""
        for _ in range(_YIELDS):
            # A reader blocked in read() takes the lines within microseconds: let it run.
            if _unread_bytes(fd) == 0:
                return
            os.sched_yield()
        wait = _FIRST_WAIT_S
        grace_ends: float | None = None
        while _unread_bytes(fd) > 0:
            if self._reader_closed():
                self.closed = True
                return
            if stop is not None and stop.is_set():
                now = time.monotonic()
                if grace_ends is None:
                    grace_ends = now + STOP_GRACE_S
                elif now >= grace_ends:
                    return
            time.sleep(wait)
            wait = min(wait * 2, _LONGEST_WAIT_S)

    def reader_gone(self) -> bool:
        """Whether the reader of a pipe closed it (checked while idle, without writing)."""
        if self.closed:
            return True
        if self._pipe_fd is None:
            return False
        self.closed = self._reader_closed()
        return self.closed

    def _reader_closed(self) -> bool:
        # POLLERR on a pipe's write end: every reader closed it.
        return any(events & select.POLLERR for _, events in self._poller.poll(0))


def _pipe_descriptor(sink: BinaryIO) -> int | None:
    """The sink's descriptor when it is a pipe whose unread bytes can be counted."""
    try:
        fd = sink.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        _unread_bytes(fd)
    except (OSError, ValueError, AttributeError):
        return None
    # Whatever the caller buffered before handing the sink over goes first.
    with contextlib.suppress(OSError, ValueError):
        sink.flush()
    return fd


def _unread_bytes(fd: int) -> int:
    """Bytes written to the pipe and not read yet (``FIONREAD``, either end on Linux)."""
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count, True)
    return count[0]
