"""Progress of long work on stderr: a tqdm bar on a terminal, plain periodic lines otherwise.

Every long command reports through :class:`Progress`, so that all of them look alike: count,
rate, ETA when the total is known, and failures so far. ``quiet=True`` silences it. When stderr
is not a terminal (CI logs, ``2> file``), or is one that reports no width, a plain line is
written every ``interval`` seconds, from a timer too, so that a long first item still shows the
work is alive, and once at the end: logs stay short and readable.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from typing_extensions import Self


class Progress:
    """Count units of work (packages, questions, conversations) and show how it goes."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "item",
        quiet: bool = False,
        stream: TextIO | None = None,
        interval: float = 5.0,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.count = 0
        self.failed = 0
        self._stream = stream if stream is not None else sys.stderr
        self._quiet = quiet
        self._interval = interval
        self._start = time.perf_counter()
        self._last_line = self._start
        self._bar: Any = None
        self._closed = False
        self._lock = threading.Lock()  # the timer's lines and the caller's
        self._stopped = threading.Event()
        if not quiet and _is_terminal(self._stream):
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, unit=f" {unit}", file=self._stream,
                             dynamic_ncols=True, leave=True, mininterval=0.25)
        elif not quiet and math.isfinite(interval) and interval > 0:
            # Lines come with updates, but an item that takes minutes must not leave the log
            # silent for minutes: a timer writes the line that is due. It holds the display
            # weakly, so one its caller never closed (an exception in between) ends with it.
            threading.Thread(target=_heartbeat, args=(weakref.ref(self), self._stopped, interval),
                             name=f"progress {label}", daemon=True).start()

    @property
    def shown(self) -> bool:
        """Whether anything is displayed (False with ``quiet``): work done only for the display,
        such as counting a set for its total, can be skipped otherwise."""
        return not self._quiet

    def update(self, n: int = 1, *, failed: int = 0) -> None:
        """``n`` more units done, ``failed`` of them failed."""
        self.count += n
        self.failed += failed
        if self._quiet:
            return
        if self._bar is not None:
            if failed:
                self._bar.set_postfix_str(f"{self.failed} failed", refresh=False)
            self._bar.update(n)
            return
        with self._lock:
            now = time.perf_counter()
            if now - self._last_line >= self._interval and not self._closed:
                self._last_line = now
                self._line(now)

    def _beat(self) -> float | None:
        """The timer's turn: the line if one is due; seconds until the next turn (None: stop)."""
        with self._lock:
            if self._closed:
                return None
            now = time.perf_counter()
            if now - self._last_line >= self._interval * 0.999:
                self._last_line = now
                try:
                    self._line(now)
                except (OSError, ValueError):  # the stream is gone (closed): nothing to show on
                    return None
            return max(0.01, self._interval - (time.perf_counter() - self._last_line))

    def set_total(self, total: int | None) -> None:
        """The total, once known (e.g. counted while the work already streams)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def note(self, message: str) -> None:
        """A message that does not break the bar."""
        if self._quiet:
            return
        if self._bar is not None:
            self._bar.write(message, file=self._stream)
        else:
            with self._lock:
                print(message, file=self._stream, flush=True)

    def close(self, *, failed: bool = False) -> None:
        """End the display (once; later calls do nothing); ``failed`` when the work raised or
        was interrupted: the last line then says the work stopped (it is left out when nothing
        was done), not that it is done."""
        if self._quiet or self._closed:
            return
        self._stopped.set()
        with self._lock:
            self._closed = True
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            elif not (failed and self.count == 0):
                self._line(time.perf_counter(), final="stopped" if failed else "done")

    def _line(self, now: float, final: str | None = None) -> None:
        elapsed = now - self._start
        rate = self.count / elapsed if elapsed > 0 else 0.0
        done = f"{self.count}/{self.total}" if self.total is not None else f"{self.count}"
        parts = [f"{self.label}: {done} {self.unit}s", f"{rate:.1f}/s", f"{elapsed:.1f} s"]
        if not final and self.total and rate > 0:
            parts.append(f"ETA {max(0.0, (self.total - self.count) / rate):.0f} s")
        if self.failed:
            parts.append(f"{self.failed} failed")
        if final:
            parts.append(final)
        print(", ".join(parts), file=self._stream, flush=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(failed=exc_type is not None)


def _heartbeat(ref: weakref.ref[Progress], stopped: threading.Event, interval: float) -> None:
    wait: float | None = interval
    while wait is not None and not stopped.wait(wait):
        progress = ref()
        if progress is None:
            return
        wait = progress._beat()
        del progress  # not kept alive while waiting


def _is_terminal(stream: TextIO) -> bool:
    """A terminal a bar can be drawn on: one that reports no width (a pseudo-terminal nobody
    sized, as ``script`` without a terminal behind it makes) would show an empty bar."""
    try:
        return bool(stream.isatty()) and os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, ValueError, OSError):
        return False
