"""The Ray runner of a batch (``--backend ray``): chunks scored as Ray tasks, on a local Ray
started for the run (lean: without the services a run that owns its Ray has no use for) or on
a cluster reached at ``--ray-address``. It has the runner interface of :mod:`.parallel`."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import UsageError
from .ray_reaper import RayReaper

# Local Rays that a stopped run left starting (ray.init cannot be interrupted): the thread of
# each shuts its Ray down once it is up. A new run waits for them; a program about to exit need
# not (see reap_abandoned).
_ABANDONED: list[RayRunner] = []


def start_abandoned() -> bool:
    """Whether a local Ray that a stopped run left starting is still coming up."""
    return any(runner.starter is not None and runner.starter.is_alive() for runner in _ABANDONED)


def reap_abandoned() -> None:
    """Before an exit that does not wait for a Ray still starting (``os._exit``): the reaper
    hears now of every process Ray started, and ends them as this process ends (GCS and raylet
    die with it anyway, by Ray's parent-death signal). Not before: a driver whose raylet dies
    exits at once, with status 1."""
    for runner in _ABANDONED:
        if runner.reaper is not None:
            runner.reaper.catch_up()


def _finish_abandoned() -> None:
    """At a normal exit: let the Rays left starting come up and shut down (registered after
    Ray's own exit handler, so it runs first: that one would shut down a Ray being started)."""
    while _ABANDONED:
        starter = _ABANDONED.pop().starter
        if starter is not None:
            starter.join()


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
            import ray  # (imported by make_runner first, with Ctrl-C held off)
        except ImportError:
            raise UsageError("the ray backend needs Ray: pip install 'memaudit_fast[ray]'") from None

        from ..solve.exact import CancelToken

        _finish_abandoned()  # a Ray an earlier run left starting is shut down first
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
        self.reaper: RayReaper | None = None
        # Whether every worker runs on this machine, so that it reads a set's lines itself
        # (see batch.py): on a Ray this run starts, yes; on a cluster, when all its nodes are here.
        self.reads_files = self.started_here and not address
        if self.reads_files:
            self.starter = threading.Thread(target=self._own_ray, name="memaudit-ray", daemon=True)
            self.starter.start()
            return
        self._start()
        if self.failure is not None:
            raise self.failure
        self.reads_files = _all_nodes_here(ray)

    def _own_ray(self) -> None:
        """The thread of a local Ray started here: it starts Ray, then lives until ``close``
        and shuts Ray down. Ray's processes are set to die with the thread that started them
        (Linux's parent-death signal follows the thread), so that thread must outlive the run;
        the agents the raylet starts are not, and a reaper ends them if this process is killed."""
        reaper = self.reaper = RayReaper.start()
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
                # handles SIGTERM itself. A Ray of the run's own also says, on every run,
                # that it uses token authentication, Ray's default (a Ray without it still
                # warns).
                quiet = _DropRecord("SIGTERM handler is not set", "Token authentication is enabled")
                for name in _QUIETED:
                    logging.getLogger(name).addFilter(quiet)
                try:
                    if self.address:
                        _check_reachable(self.address)
                        ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
                    else:
                        # address="local": a Ray of this run's own. Without it ray.init joins a
                        # Ray already running on this machine (ray start, RAY_ADDRESS) and
                        # refuses num_cpus there: the run ended with exit 2 after its first chunks.
                        told = None if self.reaper is None else self.reaper.tell_session
                        with _own_session(ray, told), _lean_services(ray):
                            ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                                     log_to_driver=False, logging_level=logging.WARNING)
                finally:
                    for name in _QUIETED:
                        logging.getLogger(name).removeFilter(quiet)
            cpus = int(ray.cluster_resources().get("CPU", self.workers)) if self.address else self.workers
            self.depth = 2 * max(1, cpus)
            self.remote = ray.remote(num_cpus=1)(self.fn)
            self.args = tuple(ray.put(a) for a in self.local_args)
            if self.starter is not None and not self.closing.is_set():
                # A new worker imports this package on its first task; with one small task
                # each, that happens while the driver still scores chunks itself.
                warm = ray.remote(num_cpus=1)(_loaded)
                loading = [warm.remote(self.fn) for _ in range(self.workers)]
                while loading and not self.closing.is_set():  # a run stopped meanwhile waits for nothing
                    _, loading = ray.wait(loading, num_returns=len(loading), timeout=0.05)
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

    def close(self, stopped: bool = False) -> None:
        """Shut down a local Ray started here; a run that was ``stopped`` (Ctrl-C, an error)
        does not wait for one still starting."""
        if self.starter is not None:
            self.closing.set()
            if stopped and not self.ready.is_set():
                # Still in ray.init (1-2 s more, and it cannot be interrupted): the thread
                # shuts Ray down once it is up.
                if not _ABANDONED:
                    atexit.register(_finish_abandoned)
                _ABANDONED.append(self)
                return
            self.starter.join()
        elif self.started_here and self.ray.is_initialized():
            self.ray.shutdown()


def _all_nodes_here(ray: Any) -> bool:
    """Whether every live node of the Ray this process is connected to is this machine."""
    try:
        here = ray.util.get_node_ip_address()
        nodes = [node for node in ray.nodes() if node.get("Alive")]
    except Exception:  # noqa: BLE001 - unknown: the workers get the lines' bytes
        return False
    return bool(nodes) and all(node.get("NodeManagerAddress") == here for node in nodes)


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
def _own_session(ray: Any, started: Callable[[int], None] | None = None) -> Iterator[None]:
    """While a local Ray starts: its processes (GCS, raylet and the raylet's agents) in a session
    of their own. In the batch's process group, a signal sent to the group (GNU timeout, kill
    -TERM -PGID, a job scheduler) killed them while the batch was stopping in order, and
    ray.shutdown then aborted the batch (SIGABRT: no summary, no resume command). They still
    die with the batch: Ray's parent-death signal and the reaper do not depend on the group.
    ``started`` hears of each at once (the reaper: the agents and workers a raylet starts are
    in its session, even those started just before the batch is killed)."""
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
            if started is not None and kwargs.get("start_new_session"):
                started(self.pid)

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


# The loggers of what _DropRecord drops while a Ray starts.
_QUIETED = ("ray._private.worker", "ray._private.authentication.authentication_token_setup")


class _DropRecord:
    """A logging filter that drops records whose message contains one of ``texts``."""

    def __init__(self, *texts: str) -> None:
        self.texts = texts

    def filter(self, record: Any) -> bool:
        message = record.getMessage()
        return not any(text in message for text in self.texts)
