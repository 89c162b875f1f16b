"""Helpers of the tests that run a batch in a process of its own and signal it."""

from __future__ import annotations

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
