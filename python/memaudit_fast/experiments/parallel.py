"""Worker pools for experiments and batches: tasks in order, workers that die with their parent.

A *runner* scores chunks of tasks with one function, in this process (``serial``), in threads,
in worker processes (``local``) or as Ray tasks (``ray``), behind one small interface:
``submit(chunk)`` returns a handle, ``result(handle)`` waits for it, ``finished(handle)`` says
without waiting whether it is in, ``interrupt()`` asks
running work to stop early (work that honours it returns what it finished), ``wait(handle,
timeout)`` says whether a chunk finished, ``stop()`` ends unfinished work now and ``close()``
releases the workers (``close(stopped=True)`` after Ctrl-C or an error: a local Ray still
starting is not waited for).
``depth`` is how many chunks to keep in flight. The caller keeps the handles in order, so
results come back in task order whatever the backend.

Every pool of worker processes in this package comes from :func:`process_pool`, whose
workers

* die when the process that started them dies, even by SIGKILL (Linux: a parent-death
  signal set as the worker starts; elsewhere a watchdog thread that sees the parent change),
  so no orphan keeps solving after a killed run;
* ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and it is the parent
  that decides what to keep and then stops the workers (:func:`kill_pool`);
* stop their current work early on SIGUSR1, and on SIGTERM (sent to the whole group by
  ``timeout``, systemd or ``docker stop``): it sets :func:`worker_stop_token`, the
  CancelToken that work running in a worker passes to its solves, so that a chunk returns
  what it finished before the interruption instead of being lost.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from ..errors import UsageError
from ..solve.parent_death import arm_parent_death_signal
from .readahead import IDLE

_STOP_SIGNAL = getattr(signal, "SIGUSR1", None)
_stop_token: Any = None  # in a worker process: the CancelToken that SIGUSR1 sets
_outbox: _Outbox | None = None  # in a worker of a ProcessRunner: where finished outcomes go
# A finished outcome waits at most about this long in a worker before it is sent to the parent
# (results of quick chunks go in one message with the chunk's end, as before).
HAND_IN_AFTER = 0.2


def worker_stop_token() -> Any:
    """In a worker of :func:`process_pool`, the token its parent sets to stop work early."""
    return _stop_token


def _on_stop(signum: int, frame: Any) -> None:
    if _stop_token is not None:
        _stop_token.cancel()


def _die_with_parent(parent: int | None) -> None:
    """Worker initializer: end this process as soon as its parent is gone.

    ``parent`` is the pid the worker must find as its parent (None: whatever it is now, for
    start methods whose workers are forked by a helper process).
    """
    global _stop_token
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _STOP_SIGNAL is not None:
        from ..solve.exact import CancelToken

        _stop_token = CancelToken()
        signal.signal(_STOP_SIGNAL, _on_stop)
        # SIGTERM sent to the whole process group (timeout, systemd, docker stop) reaches the
        # workers too: stop like on SIGUSR1 and hand in what finished, and let the parent decide
        # the rest. A forked worker would otherwise run the parent's handler (a traceback, and
        # the chunk's finished packages lost) or die at once.
        signal.signal(signal.SIGTERM, _on_stop)
    armed = arm_parent_death_signal()
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


class _Outbox:
    """In a worker: the outcomes of the chunk at work, sent to the parent through a pipe as they
    finish, so that a slow package does not hold back its chunk-mates that finished before it.

    The chunk's function hands each outcome in (:func:`hand_in`); a thread of the worker sends
    those that waited :data:`HAND_IN_AFTER` seconds (solves release the GIL), and the chunk's end
    sends the rest. Messages are ``(tag, outcomes, last)``, in order for each chunk.
    """

    def __init__(self, writer: Any, send_lock: Any) -> None:
        self.writer, self.send_lock = writer, send_lock
        self.lock = threading.Lock()
        self.tag: int | None = None
        self.items: list[Any] = []
        self.sent = 0  # outcomes of this chunk sent before its end
        self.since = 0.0

    def begin(self, tag: int) -> None:
        with self.lock:
            self.tag, self.items, self.sent = tag, [], 0

    def add(self, item: Any) -> None:
        with self.lock:
            if self.tag is None:
                return
            if not self.items:
                self.since = time.monotonic()
            self.items.append(item)

    def send_waiting(self) -> None:
        with self.lock:
            if self.tag is not None and self.items and time.monotonic() - self.since >= HAND_IN_AFTER:
                self._send(self.tag, self.items[:], False)
                self.sent += len(self.items)
                self.items.clear()

    def end(self, outcomes: list[Any]) -> None:
        """Send what ``outcomes`` (all the chunk's, in order) holds beyond what was sent."""
        with self.lock:
            tag, self.tag = self.tag, None
            self._send(tag, outcomes[self.sent:], True)
            self.items = []

    def _send(self, tag: int | None, items: list[Any], last: bool) -> None:
        with self.send_lock:  # one message at a time in the pipe that all workers share
            self.writer.send((tag, items, last))

    def run(self) -> None:
        tick = threading.Event()
        while not tick.wait(HAND_IN_AFTER / 2):
            self.send_waiting()


def hand_in(outcome: Any) -> None:
    """Called by a chunk's function for each finished outcome: in a worker of a
    :class:`ProcessRunner`, the parent gets it within about :data:`HAND_IN_AFTER` seconds,
    before the chunk ends. Elsewhere nothing happens (the chunk's result carries it)."""
    if _outbox is not None:
        _outbox.add(outcome)


def _streaming_worker(parent: int | None, writer: Any, send_lock: Any) -> None:
    """Initializer of a :class:`ProcessRunner`'s workers."""
    global _outbox
    _die_with_parent(parent)
    _outbox = _Outbox(writer, send_lock)
    threading.Thread(target=_outbox.run, name="memaudit-hand-in", daemon=True).start()


def _in_outbox(tag: int, fn: Callable[..., Any], chunk: list[Any], *args: Any) -> None:
    """Score ``chunk`` in a worker; its outcomes go to the parent through the outbox."""
    assert _outbox is not None
    _outbox.begin(tag)
    outcomes = fn(chunk, *args)  # on an exception the future carries it, and the run stops
    _outbox.end(outcomes)


def _start_method() -> str:
    # fork starts workers in milliseconds with the extension already loaded; from Python
    # 3.12 on, forking a process that runs threads is deprecated, so forkserver is used there.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and sys.version_info < (3, 12):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def process_pool(workers: int, outbox: tuple[Any, Any] | None = None) -> ProcessPoolExecutor:
    """A process pool whose workers die with this process and ignore Ctrl-C; with ``outbox``
    (the writing end of a pipe and a lock of :func:`pool_context`), they stream outcomes."""
    parent = os.getpid() if _start_method() != "forkserver" else None
    start: tuple[Callable[..., None], tuple[Any, ...]] = \
        (_die_with_parent, (parent,)) if outbox is None else (_streaming_worker, (parent, *outbox))
    return ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=start[0], initargs=start[1])


def pool_context() -> Any:
    """The multiprocessing context of :func:`process_pool`'s workers."""
    return multiprocessing.get_context(_start_method())


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


class SerialRunner:
    """Chunks scored in the calling thread, one at a time."""

    depth = 1

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args

    def submit(self, chunk: list[Any]) -> Any:
        return self.fn(chunk, *self.args)

    def result(self, handle: Any) -> Any:
        return handle

    def finished(self, handle: Any) -> bool:
        return True

    def wait(self, handle: Any, timeout: float) -> bool:
        return True

    def interrupt(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def close(self, stopped: bool = False) -> None:
        pass


class ThreadRunner:
    """Chunks scored by threads; ``fn`` gets a CancelToken last, which ``stop`` sets."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], workers: int) -> None:
        from ..solve.exact import CancelToken

        self.fn, self.args = fn, args
        self.depth = 2 * workers
        self.cancel = CancelToken()
        self.pool: Any = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memaudit-worker")

    def submit(self, chunk: list[Any]) -> Future[Any]:
        return self.pool.submit(self.fn, chunk, *self.args, self.cancel)  # type: ignore[no-any-return]

    def result(self, handle: Future[Any]) -> Any:
        return handle.result()

    def finished(self, handle: Future[Any]) -> bool:
        return handle.done()

    def wait(self, handle: Future[Any], timeout: float) -> bool:
        """Whether the chunk finished (within ``timeout`` seconds) with a result."""
        futures.wait([handle], timeout=timeout)
        return handle.done() and not handle.cancelled() and handle.exception() is None

    def interrupt(self) -> None:
        # Every solve watches the token: the threads return within the solver's poll interval.
        self.cancel.cancel()

    def stop(self) -> None:
        self.cancel.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self, stopped: bool = False) -> None:
        self.pool.shutdown(wait=True)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held off in the main thread while the body runs, then raised again:
    a KeyboardInterrupt between the two reads of a pipe message would leave the pipe in the
    middle of one (the outcomes in it lost to the run, solved again on resume)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def defer(signum: int, frame: Any) -> None:
        caught.append(signum)

    previous = {held: signal.signal(held, defer) for held in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler if handler is not None else signal.SIG_DFL)
        for signum in caught:
            signal.raise_signal(signum)  # now handled as it would have been


class _Chunk:
    """A chunk sent to a worker: its future (which carries an exception, if any), the outcomes
    received so far and not yet taken, and whether the last of them came in."""

    __slots__ = ("complete", "future", "outcomes")

    def __init__(self, future: Future[Any]) -> None:
        self.future = future
        self.outcomes: list[Any] = []
        self.complete = False


class ProcessRunner(ThreadRunner):
    """Chunks scored by worker processes that die with this one (:func:`process_pool`).

    Outcomes come back through one pipe as they finish (:func:`hand_in`), not only when the
    whole chunk is done: :meth:`take` gives those of a chunk in progress, so that a package
    that finished is written within about :data:`HAND_IN_AFTER` seconds even when a slow
    chunk-mate keeps the chunk going (a run killed by SIGKILL loses only what was running).
    """

    # Workers on this machine read a set's lines themselves: the parent sends where each is.
    reads_files = True

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], workers: int) -> None:
        self.fn, self.args = fn, args
        # Results are taken in order: with a deeper window, a slow chunk at the head does not
        # leave the other workers idle.
        self.depth = 4 * workers
        context = pool_context()
        self.inbox, writer = context.Pipe(duplex=False)
        self.pool = process_pool(workers, outbox=(writer, context.Lock()))
        self.writer = writer  # kept open: workers started later inherit it
        self.chunks: dict[int, _Chunk] = {}
        self.next_tag = 0
        self.torn = False  # the pipe failed in the middle of a message: it cannot be read any more

    def submit(self, chunk: list[Any]) -> _Chunk:  # type: ignore[override]
        tag, self.next_tag = self.next_tag, self.next_tag + 1
        # The first submit forks every worker (the fork start method): a Ctrl-C that landed in
        # the fork's after-fork hooks was printed there and lost, and the run went on.
        # Known before a held Ctrl-C is raised: a chunk sent but not known made its first
        # message a KeyError (an internal error, exit 1, nothing written).
        with _signals_deferred():
            handle = self.chunks[tag] = _Chunk(self.pool.submit(_in_outbox, tag, self.fn, chunk, *self.args))
        return handle

    def _receive(self, timeout: float) -> None:
        """Sort what the workers sent into their chunks, waiting up to ``timeout`` for a message."""
        if self.torn or not self.inbox.poll(timeout):
            return
        while True:
            # Ctrl-C and SIGTERM wait until the message is read and sorted (then raised).
            with _signals_deferred():
                try:
                    tag, outcomes, last = self.inbox.recv()
                except BaseException:
                    # A pipe that failed in the middle of a message: what follows in it is not
                    # at a message's start. The chunks then end without it.
                    self.torn = True
                    raise
                handle = self.chunks.get(tag)
                if handle is not None:
                    handle.outcomes.extend(outcomes)
                    if last:
                        handle.complete = True
                        del self.chunks[tag]
            if not self.inbox.poll(0):
                return

    def _failed(self, handle: _Chunk) -> bool:
        # A chunk whose function raised (or whose worker died) ends with an exception and sends
        # no last message: every message it sent came before, so it is in the pipe by now.
        if handle.complete or not handle.future.done():
            return False
        self._receive(0)
        return not handle.complete

    def take(self, handle: _Chunk, timeout: float) -> list[Any]:
        """The outcomes of ``handle`` received and not taken yet, waiting up to ``timeout``
        seconds for a message when there are none."""
        if not handle.outcomes and not handle.complete:
            self._receive(timeout)
        outcomes, handle.outcomes = handle.outcomes, []
        return outcomes

    def result(self, handle: _Chunk) -> Any:  # type: ignore[override]
        """What the chunk finished that was not taken yet, once it is done."""
        while not handle.complete:
            if self._failed(handle):
                return handle.future.result()  # raises the worker's exception
            if self.torn:
                raise KeyboardInterrupt  # only after an interruption; the run is stopping
            self._receive(0.1)
        return self.take(handle, 0)

    def finished(self, handle: _Chunk) -> bool:  # type: ignore[override]
        if not handle.complete:
            self._receive(0)
        return handle.complete or self._failed(handle)

    def wait(self, handle: _Chunk, timeout: float) -> bool:  # type: ignore[override]
        deadline = time.monotonic() + timeout
        while not handle.complete:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.torn or self._failed(handle):
                return False
            self._receive(min(remaining, 0.1))
        return True

    def lost_worker(self) -> bool:
        """Whether a worker process died (killed) and broke the pool."""
        return bool(getattr(self.pool, "_broken", False))

    def interrupt(self) -> None:
        if _STOP_SIGNAL is None:
            return
        for process in list((getattr(self.pool, "_processes", None) or {}).values()):
            try:
                os.kill(process.pid, _STOP_SIGNAL)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self) -> None:
        kill_pool(self.pool)
        self._close_pipe()

    def close(self, stopped: bool = False) -> None:
        self.pool.shutdown(wait=True)
        self._close_pipe()

    def _close_pipe(self) -> None:
        self.inbox.close()
        self.writer.close()


#: Workers per core that a run may ask for (see :func:`check_worker_count`).
MAX_WORKERS_PER_CORE = 8


def check_worker_count(workers: int) -> None:
    """Refuse more workers than a few per core: each is a process (or a thread) solving one
    package at a time, so past that they only slow the run (100,000 of them forked for minutes
    before any work)."""
    cores = os.cpu_count() or 1
    if workers > MAX_WORKERS_PER_CORE * cores:
        raise UsageError(f"--workers {workers} is more than {MAX_WORKERS_PER_CORE} per core on this machine "
                         f"({cores} cores); give at most {MAX_WORKERS_PER_CORE * cores} (the default is one per core)")


def make_runner(backend: str, fn: Callable[..., Any], args: tuple[Any, ...], workers: int,
                address: str | None = None, interrupted: Callable[[Any], bool] | None = None) -> Any:
    """The runner of ``backend`` (``local``, ``threads``, ``serial`` or ``ray``); ``interrupted``
    tells an outcome that a CancelToken cut short (see :class:`.ray_runner.RayRunner`)."""
    if backend != "serial" and address is None:
        check_worker_count(workers)
    if backend == "ray":
        from .ray_runner import RayRunner

        # Ctrl-C in the middle of this import left Ray half imported for good in this process
        # ("partially initialized module 'ray'" in every later run): held off.
        with _signals_deferred(), contextlib.suppress(ImportError):
            import ray  # noqa: F401

        return RayRunner(fn, args, workers, address, interrupted)
    if backend == "serial" or workers <= 1:
        return SerialRunner(fn, args)
    if backend == "threads":
        return ThreadRunner(fn, args, workers)
    return ProcessRunner(fn, args, workers)


def chunks(items: Iterator[Any], size: int, first: int | None = None) -> Iterator[list[Any]]:
    """Consecutive lists of ``size`` items (the last may be shorter); with ``first``, the
    first list holds that many and each next one twice as many, up to ``size``: a set smaller
    than a few chunks then keeps every worker busy from the start (14 packages in chunks of 32
    left one of two workers idle). An :data:`~.readahead.IDLE` item (the input stalls) ends
    the list at hand at once, or gives an empty one: the caller writes what finished meanwhile."""
    chunk: list[Any] = []
    target = size if first is None else max(1, min(first, size))
    for item in items:
        if item is IDLE:
            yield chunk
            chunk = []
            continue
        chunk.append(item)
        if len(chunk) >= target:
            yield chunk
            chunk = []
            target = min(size, 2 * target)
    if chunk:
        yield chunk
