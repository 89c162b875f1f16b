"""One mapper for experiments: tasks in order, in one process or a process pool."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any


def _map(fn: Callable[[Any], dict[str, Any]], tasks: list[Any], workers: int) -> Iterator[dict[str, Any]]:
    """Results in task order; several processes when ``workers > 1``."""
    if workers == 1 or len(tasks) < 2:
        yield from map(fn, tasks)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, tasks, chunksize=max(1, len(tasks) // (8 * workers)))
