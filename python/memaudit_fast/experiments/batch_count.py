"""Counting the members of a batch's sets for the progress display, in a thread of its own so
that the work does not wait for it (a set is read once more, by this thread only)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from ..model.sets import STDIN, iter_raw_members


def _count_members(paths: list[Path], skip: Collection[tuple[int, int]] = ()) -> int | None:
    count = 0
    for path in paths:
        if str(path) == STDIN:
            return None  # a stream is counted only by reading it, which is the work's to do
        if path.name.endswith((".jsonl", ".jsonl.gz")) and path.is_file():
            import gzip

            opener: Callable[..., Any] = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rb") as handle:
                count += sum(1 for line in handle if line.strip())
        elif path.is_dir():
            count += sum(1 for _ in iter_raw_members([path], skip=skip))
        else:
            count += 1
    return count


class Counter(threading.Thread):
    """Counts the members of the sets in the background; the total shows once known."""

    def __init__(self, paths: list[Path], skip: Collection[tuple[int, int]] = ()) -> None:
        super().__init__(name="memaudit-batch-count", daemon=True)
        self.paths, self.skip = paths, skip
        self.total: int | None = None

    def run(self) -> None:
        try:
            self.total = _count_members(self.paths, self.skip)
        except Exception:  # noqa: BLE001 - a display aid; the batch reports its own errors
            self.total = None
