"""Helpers of the tests that run a batch in a process of its own and signal it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
from pathlib import Path

#: Seconds: far more than any of these runs needs when it stops as it should.
HANG = 60


def wait_for_lines(out: Path, count: int, proc: subprocess.Popen) -> None:
    """Poll until ``out`` holds ``count`` lines (the easy packages are written)."""
    tick = threading.Event()
    for _ in range(HANG * 100):
        if out.exists() and out.read_bytes().count(b"\n") >= count:
            return
        assert proc.poll() is None, "the batch ended before it reached the hard packages"
        tick.wait(0.01)
    raise AssertionError(f"{out} did not get {count} records")


def locked(path: Path) -> bool:
    """Whether another open file description holds ``path``'s exclusive lock (a batch run)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
