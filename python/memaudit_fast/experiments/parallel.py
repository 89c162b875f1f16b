"""Worker pools for experiments and batches: tasks in order, workers that die with their parent.

A *runner* scores chunks of tasks with one function, in this process (``serial``), in threads,
in worker processes (``local``) or as Ray tasks (``ray``), behind one small interface:
``submit(chunk)`` returns a handle, ``result(handle)`` waits for it, ``finished(handle)`` says
without waiting whether it is in, ``interrupt()`` asks
running work to stop early (work that honours it returns what it finished), ``wait(handle,
timeout)`` says whether a chunk finished, ``stop()`` ends unfinished work now and ``close()``
releases the workers.
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
import ctypes
import ctypes.util
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
from .ray_reaper import RayReaper

_PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>
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
    method = _start_method()
    parent = os.getpid() if method != "forkserver" else None
    if outbox is not None:
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                                   initializer=_streaming_worker, initargs=(parent, *outbox))
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=_die_with_parent, initargs=(parent,))


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

    def close(self) -> None:
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

    def close(self) -> None:
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
        self.torn = False  # a signal cut a message short: the pipe cannot be read any more

    def submit(self, chunk: list[Any]) -> _Chunk:  # type: ignore[override]
        tag, self.next_tag = self.next_tag, self.next_tag + 1
        handle = _Chunk(self.pool.submit(_in_outbox, tag, self.fn, chunk, *self.args))
        self.chunks[tag] = handle
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
                handle = self.chunks[tag]
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

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self._close_pipe()

    def _close_pipe(self) -> None:
        self.inbox.close()
        self.writer.close()


class _InDriver:
    """The handle of a chunk the driver scored: its outcomes, and the Ray task that scores what
    the driver left when Ray came up (None: the driver did it all)."""

    __slots__ = ("head", "rest")

    def __init__(self, head: Any, rest: Any = None) -> None:
        self.head, self.rest = head, rest


class RayRunner:
    """Chunks scored as Ray tasks, on a local Ray started for the run or on a cluster.

    Only the driver (this process) reads inputs and writes outputs; a task gets its chunk and
    returns its results. A cluster given by ``address`` is reached before anything runs (if it
    cannot be, the output is not touched) and is left running; ``stop`` cancels this run's
    tasks on it. A local Ray started here takes seconds to come up: it starts in a thread
    while the driver scores the first chunks itself, and ``close`` shuts it down. With
    ``interrupted`` (which outcomes a CancelToken cut short), the driver's chunk in progress
    when Ray is up stops there and its rest goes to Ray, so that a slow package does not keep
    the driver from handing out work.
    """

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], workers: int, address: str | None,
                 interrupted: Callable[[Any], bool] | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("the ray backend needs Ray: pip install 'memaudit_fast[ray]'") from None

        from ..solve.exact import CancelToken

        self.ray, self.fn, self.local_args = ray, fn, args
        self.workers, self.address = workers, address
        self.interrupted = interrupted
        self.up = CancelToken()  # set once Ray takes chunks: stops the driver's own
        self.depth = 2 * max(1, workers)
        self.outstanding: set[Any] = set()
        self.failure: BaseException | None = None
        self.ready = threading.Event()
        self.closing = threading.Event()
        self.started_here = not ray.is_initialized()
        self.starter: threading.Thread | None = None
        if self.started_here and not address:
            self.starter = threading.Thread(target=self._own_ray, name="memaudit-ray", daemon=True)
            self.starter.start()
            return
        self._start()
        if self.failure is not None:
            raise self.failure

    def _own_ray(self) -> None:
        """The thread of a local Ray started here: it starts Ray, then lives until ``close``
        and shuts Ray down. Ray's processes are set to die with the thread that started them
        (Linux's parent-death signal follows the thread), so that thread must outlive the run;
        the agents the raylet starts are not, and a reaper ends them if this process is killed."""
        reaper = RayReaper.start()
        try:
            self._start()
            self.closing.wait()
        finally:
            if self.ray.is_initialized():
                self.ray.shutdown()
            if reaper is not None:
                reaper.close()

    def _start(self) -> None:
        import logging

        ray = self.ray
        try:
            if self.started_here:
                # From a thread, ray.init warns that it leaves SIGTERM alone: the batch
                # handles SIGTERM itself.
                quiet = _DropRecord("SIGTERM handler is not set")
                logging.getLogger("ray._private.worker").addFilter(quiet)
                try:
                    if self.address:
                        _check_reachable(self.address)
                        ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
                    else:
                        # address="local": a Ray of this run's own. Without it ray.init joins a
                        # Ray already running on this machine (ray start, RAY_ADDRESS) and
                        # refuses num_cpus there: the run ended with exit 2 after its first chunks.
                        with _own_session(ray), _lean_services(ray):
                            ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                                     log_to_driver=False, logging_level=logging.WARNING)
                finally:
                    logging.getLogger("ray._private.worker").removeFilter(quiet)
            cpus = int(ray.cluster_resources().get("CPU", self.workers)) if self.address else self.workers
            self.depth = 2 * max(1, cpus)
            self.remote = ray.remote(num_cpus=1)(self.fn)
            self.args = tuple(ray.put(a) for a in self.local_args)
            if self.starter is not None and not self.closing.is_set():
                # A new worker imports this package on its first task; with one small task
                # each, that happens while the driver still scores chunks itself.
                warm = ray.remote(num_cpus=1)(_loaded)
                ray.get([warm.remote(self.fn) for _ in range(self.workers)])
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or "local"
            kept = "; what was scored before is kept and --resume continues" if self.starter else ""
            self.failure = UsageError(f"cannot start or reach Ray ({where}): {exc}{kept}")
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that submits
            self.failure = exc
        finally:
            self.ready.set()
            if self.failure is None:
                self.up.cancel()

    def submit(self, chunk: list[Any]) -> Any:
        if not self.ready.is_set():  # Ray is still starting: the driver scores the chunk
            if self.interrupted is None:
                return _InDriver(self.fn(chunk, *self.local_args))
            outcomes = self.fn(chunk, *self.local_args, self.up)
            if not (outcomes and self.interrupted(outcomes[-1]) and self.up.cancelled):
                return _InDriver(outcomes)  # done, or stopped by the user (the caller sees it)
            head = outcomes[:-1]  # Ray came up: what is left of the chunk goes to it
            return _InDriver(head, self._task(chunk[len(head):]))
        return self._task(chunk)

    def _task(self, chunk: list[Any]) -> Any:
        if self.failure is not None:
            raise self.failure
        handle = self.remote.remote(chunk, *self.args)
        self.outstanding.add(handle)
        return handle

    def result(self, handle: Any) -> Any:
        if isinstance(handle, _InDriver):
            return handle.head if handle.rest is None else handle.head + self.result(handle.rest)
        outcome = self.ray.get(handle)
        self.outstanding.discard(handle)
        return outcome

    def finished(self, handle: Any) -> bool:
        # Asking Ray costs a round trip: only what the driver did alone counts as in.
        return isinstance(handle, _InDriver) and handle.rest is None

    def wait(self, handle: Any, timeout: float) -> bool:
        if isinstance(handle, _InDriver):
            if handle.rest is None:
                return True
            handle = handle.rest
        finished, _ = self.ray.wait([handle], timeout=timeout)
        return bool(finished)

    def interrupt(self) -> None:
        pass  # a chunk is finished or not; stop() cancels the rest

    def stop(self) -> None:
        for handle in self.outstanding:
            self.ray.cancel(handle, force=True)
        self.outstanding.clear()

    def close(self) -> None:
        if self.starter is not None:
            self.closing.set()
            self.starter.join()
        elif self.started_here and self.ray.is_initialized():
            self.ray.shutdown()


@contextlib.contextmanager
def _lean_services(ray: Any) -> Iterator[None]:
    """While a local Ray of this run's own starts: without the services a run of fixed size
    on one machine, which owns its Ray and stops it at its end, has no use for. The
    autoscaler's monitor (nothing to scale) and the log monitor (it streams the workers'
    output to a driver that asked for none, ``log_to_driver=False``) are left out as Ray's own
    test clusters leave them out; the API server (dashboard, jobs and state API, reachable by
    nobody else here) as Ray goes on when it fails to start (``include_dashboard=False``).
    Each is a Python process that takes a core while the driver scores; ray.init waited
    0.6-0.8 s for the API server, and the monitor held ``ray.shutdown`` for a second (it
    outlasts the grace Ray gives it). On 2 cores: start-up 2.2-2.3 s -> 1.6 s, shut-down 1.1
    -> 0.3 s. A Ray whose private names differ starts as it is."""
    private: Any = getattr(ray, "_private", None)
    parameter: Any = getattr(private, "parameter", None)
    services: Any = getattr(private, "services", None)
    params = getattr(parameter, "RayParams", None)
    api_server = getattr(services, "start_api_server", None)
    if not isinstance(params, type) or not callable(api_server):
        yield
        return

    class Lean(params):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if hasattr(self, "no_monitor") and hasattr(self, "include_log_monitor"):
                self.no_monitor = True
                self.include_log_monitor = False

    def no_api_server(*args: Any, **kwargs: Any) -> tuple[None, None]:
        return None, None  # what Ray's start_api_server returns when the server fails to start

    parameter.RayParams, services.start_api_server = Lean, no_api_server
    try:
        yield
    finally:
        parameter.RayParams, services.start_api_server = params, api_server


@contextlib.contextmanager
def _own_session(ray: Any) -> Iterator[None]:
    """While a local Ray starts: its processes (GCS, raylet and the raylet's agents) in a session
    of their own. In the batch's process group, a signal sent to the group (GNU timeout, kill
    -TERM -PGID, a job scheduler) killed them while the batch was stopping in order, and
    ray.shutdown then aborted the batch (SIGABRT: no summary, no resume command). They still
    die with the batch: Ray's parent-death signal and the reaper do not depend on the group."""
    services: Any = getattr(getattr(ray, "_private", None), "services", None)
    original = getattr(services, "ConsolePopen", None)
    if original is None or not isinstance(original, type):  # another Ray: start it as it is
        yield
        return

    class OwnSession(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if sys.platform != "win32":
                kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = OwnSession
    try:
        yield
    finally:
        services.ConsolePopen = original


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse at once a cluster address nothing listens on: ray.init retries such an address
    for a minute or more, printing connection warnings. ``auto`` and ``local`` are Ray's own."""
    import socket

    target = address.removeprefix("ray://")
    if target in ("auto", "local") or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise ConnectionError(f"the port of {address!r} is not a number (expected host:port, e.g. head:6379)") from None
    try:
        connection = socket.create_connection((host.strip("[]"), number), timeout=timeout)
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {host}:{number} ({exc.strerror or exc}); start the cluster "
                              "(ray start --head) or give the address it printed") from None
    # Something listening is not enough: at a port that is not Ray's (a web server, the
    # dashboard's 8265), ray.init waited on it for a minute or more. Ray's GCS and its Client
    # server speak gRPC, whose answer to HTTP/2's opening is a SETTINGS frame (type 4). With
    # TLS (RAY_USE_TLS) nothing answers in plain text: no check then.
    with connection:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
            return
        try:
            connection.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            reply = connection.recv(9)
        except OSError:
            reply = b""
    if len(reply) < 4 or reply[3] != 4:
        hint = "ray://HEAD:10001 for Ray Client" if address.startswith("ray://") else "HEAD:6379, its GCS port"
        raise ConnectionError(f"{host}:{number} answers, but not as Ray; give the address the cluster printed "
                              f"({hint}) or auto on a cluster node")


def _loaded(fn: Callable[..., Any]) -> int:
    """A task that only loads ``fn`` (and with it this package) in a worker."""
    return os.getpid()


class _DropRecord:
    """A logging filter that drops records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def filter(self, record: Any) -> bool:
        return self.text not in record.getMessage()


def make_runner(backend: str, fn: Callable[..., Any], args: tuple[Any, ...], workers: int,
                address: str | None = None, interrupted: Callable[[Any], bool] | None = None) -> Any:
    """The runner of ``backend`` (``local``, ``threads``, ``serial`` or ``ray``); ``interrupted``
    tells an outcome that a CancelToken cut short (see :class:`RayRunner`)."""
    if backend == "ray":
        return RayRunner(fn, args, workers, address, interrupted)
    if backend == "serial" or workers <= 1:
        return SerialRunner(fn, args)
    if backend == "threads":
        return ThreadRunner(fn, args, workers)
    return ProcessRunner(fn, args, workers)


def chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
