"""Reading a batch's input ahead of it in a thread, so that a stalled pipe does not stall the run.

A batch fed by a pipe (``producer | memaudit batch -``) reads its next member while chunks are
being solved. When the producer pauses, a read in the driver would block it: finished packages
would wait unwritten (a SIGKILL then loses them) and a part-filled chunk would wait for more
input. :class:`ReadAhead` reads in a thread instead, and its iterator gives :data:`IDLE` when
nothing came for a while, on which the driver sends the part-filled chunk and writes what is done.

Standard input is read in the thread through a duplicate of file descriptor 0, never through
``sys.stdin``: a worker forked while the thread holds ``sys.stdin``'s lock would wait for it for
ever when it closes ``sys.stdin`` (multiprocessing does that as a worker starts).
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ..model.lines import LINE_BUFFER
from ..model.sets import STDIN, RawMember, iter_raw_members

__all__ = ["IDLE", "ReadAhead", "read_members", "stdin_copy", "stdin_may_stall"]


class _Idle:
    def __repr__(self) -> str:
        return "IDLE"


#: What a :class:`ReadAhead` gives when nothing new came within its ``idle`` seconds.
IDLE: Any = _Idle()

# Members read ahead at most (each up to a few hundred KB): the thread waits beyond this.
_AHEAD = 64


def stdin_may_stall() -> bool:
    """Whether standard input may keep a reader waiting (a pipe, a socket, a terminal), unlike a
    regular file redirected to it. A ``sys.stdin`` that is not file descriptor 0 (a caller's
    stream put in its place) is read as it is, without reading ahead."""
    try:
        if sys.stdin is None or sys.stdin.fileno() != 0:
            return False
        return not stat.S_ISREG(os.fstat(0).st_mode)
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
        return False


def stdin_copy() -> IO[bytes]:
    """A binary stream on a duplicate of file descriptor 0 (see the module's note).

    Input that Python already buffered in ``sys.stdin`` is not in it; a batch reads standard
    input only through this stream when it reads ahead.
    """
    return open(os.dup(0), "rb", buffering=LINE_BUFFER)


class ReadAhead:
    """The items of ``make()`` (an iterator made and run in a thread), in order, with
    :data:`IDLE` in between whenever none came for ``idle`` seconds. An exception of the
    iterator is raised where its item would have come. ``close()`` lets the thread end after the
    item it is reading (a read that blocks ends with its input)."""

    def __init__(self, make: Callable[[], Iterator[Any]], idle: float, close: Callable[[], None] | None = None) -> None:
        self.idle = idle
        self.items: deque[Any] = deque()
        self.ready = threading.Condition()
        self.done = False
        self.error: Exception | None = None
        self.closed = False
        self._release = close
        self.thread = threading.Thread(target=self._read, args=(make,), name="memaudit-read-ahead", daemon=True)
        self.thread.start()

    def _read(self, make: Callable[[], Iterator[Any]]) -> None:
        try:
            for item in make():
                with self.ready:
                    while len(self.items) >= _AHEAD and not self.closed:
                        self.ready.wait()
                    if self.closed:
                        return
                    self.items.append(item)
                    self.ready.notify_all()
        except Exception as exc:  # noqa: BLE001 - handed to the reader, raised where its item would be
            self.error = exc
        finally:
            with self.ready:
                self.done = True
                self.ready.notify_all()
            if self._release is not None:
                self._release()

    def __iter__(self) -> Iterator[Any]:
        while True:
            with self.ready:
                if not self.items and not self.done:
                    self.ready.wait(self.idle)
                if self.items:
                    item = self.items.popleft()
                    self.ready.notify_all()
                elif self.done:
                    break
                else:
                    item = IDLE
            yield item
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        with self.ready:
            self.closed = True
            self.ready.notify_all()


def read_members(paths: Sequence[str | Path], idle: float, **options: Any) -> Iterator[RawMember]:
    """``iter_raw_members(paths, stdin=True, **options)``; when standard input is among
    ``paths`` and may stall, read ahead in a thread, with :data:`IDLE` after each ``idle``
    seconds without a member."""
    if not any(str(p) == STDIN for p in paths) or not stdin_may_stall():
        yield from iter_raw_members(paths, stdin=True, **options)
        return
    stream = stdin_copy()
    ahead = ReadAhead(lambda: iter_raw_members(paths, stdin=stream, **options), idle, close=stream.close)
    try:
        yield from ahead
    finally:
        ahead.close()
