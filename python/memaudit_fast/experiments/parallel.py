"""Worker pools for experiments and batches: tasks in order, workers that die with their parent.

Every pool of worker processes in this package comes from :func:`process_pool`, whose
workers

* die when the process that started them dies, even by SIGKILL (Linux: a parent-death
  signal set as the worker starts; elsewhere a watchdog thread that sees the parent change),
  so no orphan keeps solving after a killed run;
* ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and it is the parent
  that decides what to keep and then stops the workers (:func:`kill_pool`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

_PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>


def _die_with_parent(parent: int | None) -> None:
    """Worker initializer: end this process as soon as its parent is gone.

    ``parent`` is the pid the worker must find as its parent (None: whatever it is now, for
    start methods whose workers are forked by a helper process).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    current = os.getppid()
    # The parent may have died before the signal was armed: then it never comes.
    if parent is not None and current != parent:
        os._exit(1)
    if not armed:
        def watch() -> None:
            while os.getppid() == current:
                time.sleep(0.25)
            os._exit(1)

        threading.Thread(target=watch, name="memaudit-parent-watch", daemon=True).start()


def _start_method() -> str:
    # fork starts workers in milliseconds with the extension already loaded; from Python
    # 3.12 on, forking a process that runs threads is deprecated, so forkserver is used there.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and sys.version_info < (3, 12):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers die with this process and ignore Ctrl-C."""
    method = _start_method()
    parent = os.getpid() if method != "forkserver" else None
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=_die_with_parent, initargs=(parent,))


def kill_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: queued tasks are dropped and running workers are killed."""
    # The executor keeps its worker processes in ``_processes``; there is no public way to
    # end a running task, and waiting for long solves is what must not happen here.
    processes: dict[int, Any] = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        if process.is_alive():
            process.kill()
    pool.shutdown(wait=True, cancel_futures=True)


def _map(fn: Callable[[Any], dict[str, Any]], tasks: list[Any], workers: int) -> Iterator[dict[str, Any]]:
    """Results in task order; several processes when ``workers > 1``."""
    if workers == 1 or len(tasks) < 2:
        yield from map(fn, tasks)
        return
    pool = process_pool(workers)
    try:
        yield from pool.map(fn, tasks, chunksize=max(1, len(tasks) // (8 * workers)))
    except BaseException:
        kill_pool(pool)
        raise
    pool.shutdown(wait=True)
