"""HiGHS on a MILP in a process of its own, beside the race's HiGHS in this one.

highspy runs one solve per process at a time (backends._HIGHS_ONE_AT_A_TIME), so a second
model raced at once needs a second process. The race (solve/race.py) uses one for HiGHS on
the lattice model (milp.on_unit_lattice) while its own HiGHS goes on with the plain model,
and on the candidates fixing left open for HiGHS pruning by the best store known from the
start (race.RACE_CUTOFF_AFTER): which of two such runs proves sooner varies from package to
package, by up to tens of times either way, and no rule read off either run picks it (see
race.RACE_LATTICE_AFTER).

The process is a small server (``python -m memaudit_fast.solve.highs_server``), started once
per process, by a thread that lives as long as the process (Linux sends the parent-death
signal when the thread that started a child ends), and kept: it loads highspy and this
package once (about 0.15 s), then solves one model at a time. It hears through a pipe the
solves asked of it, the worth of the best store known here (its ``floor``) and when to stop;
it answers with each store HiGHS finds and the outcome. It dies with its parent. It is started
as a new interpreter: multiprocessing's fork would copy a process whose threads may hold
locks, and its spawn and fork server run the user's main script again in the child.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from itertools import count
from multiprocessing.connection import Connection
from typing import Any

from .handoff import HandoffOutcome
from .milp import MilpModel

#: Seconds between two relays of the floor to the server (and checks of a stop here).
RELAY_EVERY = 0.005


class _Server:
    """The server process and the two ends of its pipes; one solve at a time (``busy``)."""

    def __init__(self) -> None:
        to_server_r, to_server_w = os.pipe()
        from_server_r, from_server_w = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memaudit_fast.solve.highs_server", str(to_server_r), str(from_server_w)],
                pass_fds=(to_server_r, from_server_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        except BaseException:
            os.close(to_server_w)
            os.close(from_server_r)
            raise
        finally:
            os.close(to_server_r)
            os.close(from_server_w)
        self.requests = Connection(to_server_w, readable=False)
        self.answers = Connection(from_server_r, writable=False)
        self.busy = False
        self.ready = False  # once it said so: it has loaded highspy and waits for solves
        self.send_lock = threading.Lock()

    def wait_ready(self, closing: threading.Event) -> bool:
        """Wait until the server has loaded (it says so once, before anything else), unless
        ``closing`` is set first or the server is gone."""
        while not self.ready and not closing.is_set():
            if self.answers.poll(RELAY_EVERY):
                self.ready = self.answers.recv()[0] == "ready"
            elif not self.alive():
                return False
        return self.ready

    def alive(self) -> bool:
        return self.process.poll() is None

    def release(self) -> None:
        """Free for the next :func:`claim`."""
        with _SERVER_LOCK:
            self.busy = False

    def send(self, message: tuple[Any, ...]) -> bool:
        try:
            with self.send_lock:
                self.requests.send(message)
            return True
        except (OSError, ValueError):
            return False


_SERVER: list[_Server] = []  # the server of this process, once started
_SERVER_LOCK = threading.Lock()
_WANTED = threading.Event()  # a server is wanted: the keeper starts one
_KEEPER: list[threading.Thread] = []
_IDS = count(1)


def _keep() -> None:
    """The thread that starts the servers. Linux sends the parent-death signal when the thread
    that started a child ends, not the process: this one lives as long as the process."""
    while True:
        _WANTED.wait()
        _WANTED.clear()
        with _SERVER_LOCK:
            if _SERVER and _SERVER[0].alive():
                continue
        try:
            server = _Server()
        except (OSError, ValueError):
            continue
        with _SERVER_LOCK:
            _SERVER[:] = [server]


def _forget_in_child() -> None:
    """In a forked copy of this process: the server is its parent's, and the keeper is gone."""
    for server in _SERVER:
        server.requests.close()
        server.answers.close()
    _SERVER.clear()
    _KEEPER.clear()
    _WANTED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def warm() -> None:
    """Have the server started if none is running (it loads on the machine's other core, about
    0.15 s), without waiting for it."""
    if sys.platform == "win32" or not sys.executable:  # no interpreter to start: the race does without
        return
    with _SERVER_LOCK:
        if _SERVER and _SERVER[0].alive():
            return
        if not _KEEPER:
            keeper = threading.Thread(target=_keep, name="memaudit-highs-keeper", daemon=True)
            keeper.start()
            _KEEPER.append(keeper)
    _WANTED.set()


def claim() -> _Server | None:
    """The server, for one solve, if it is running and free (else None: the caller does without)."""
    with _SERVER_LOCK:
        if _SERVER and _SERVER[0].alive() and not _SERVER[0].busy:
            _SERVER[0].busy = True
            return _SERVER[0]
    return None


class HighsProcess:
    """HiGHS on ``model`` in the server process, from :meth:`start_at` (with ``cutoff``,
    pruning by the floor from the start); ``outcome`` once it returns. ``on_store`` hears its
    stores here (in a relay thread); ``floor()`` is read every RELAY_EVERY seconds and handed
    on; ``on_proof`` is called once it proves."""

    def __init__(self, server: _Server, model: MilpModel, budget: float, granularity: float, *,
                 on_store: Callable[[tuple[int, ...]], None], floor: Callable[[], float],
                 on_proof: Callable[[HandoffOutcome], None],
                 while_solving: tuple[Callable[[], None], Callable[[], None]] | None = None,
                 cutoff: bool = False) -> None:
        self.server, self.model, self.budget, self.granularity = server, model, budget, granularity
        self.cutoff = cutoff  # HiGHS prunes by the floor from the start (handoff.finish_with_highs)
        self.on_store, self.floor, self.on_proof = on_store, floor, on_proof
        self.while_solving = while_solving  # called as the solve begins, and as it ends
        self.hooks_lock = threading.Lock()
        self.begun = False
        self.outcome: HandoffOutcome | None = None
        self.closing = threading.Event()
        self.id = next(_IDS)
        self.thread: threading.Thread | None = None

    def start_at(self, when: float, time_limit: float | None) -> None:
        """Ask for the solve at ``time.monotonic() == when`` (unless closed first), in a thread."""
        self.thread = threading.Thread(target=self._run, args=(when, time_limit), name="memaudit-highs-process",
                                       daemon=True)
        self.thread.start()

    def _run(self, when: float, time_limit: float | None) -> None:
        server = self.server
        try:
            if self.closing.wait(max(0.0, when - time.monotonic())) or not server.wait_ready(self.closing):
                return
            floor = self.floor()
            if not server.send(("solve", self.id, self.model, self.budget, self.granularity, time_limit, floor,
                                self.cutoff)):
                return
            with self.hooks_lock:
                if self.while_solving is not None and not self.closing.is_set():
                    self.while_solving[0]()
                    self.begun = True
            sent_stop = False
            while True:
                if self.closing.is_set() and not sent_stop:
                    server.send(("stop", self.id))
                    sent_stop = True
                if not sent_stop:
                    value = self.floor()
                    if value > floor:
                        floor = value
                        server.send(("floor", self.id, value))
                if not server.answers.poll(RELAY_EVERY):
                    if not server.alive():
                        return
                    continue
                kind, ident, item = server.answers.recv()
                if ident != self.id:
                    continue
                if kind == "store":
                    if not self.closing.is_set():
                        self.on_store(item)
                    continue
                if isinstance(item, HandoffOutcome):
                    self.outcome = item
                    if item.proven and not self.closing.is_set():
                        self.on_proof(item)
                return
        except (EOFError, OSError, ValueError):
            return
        finally:
            self._solved()
            server.release()

    def _solved(self) -> None:
        """The end of the solve as far as the caller is concerned (``while_solving``'s second)."""
        with self.hooks_lock:
            if self.begun and self.while_solving is not None:
                self.while_solving[1]()
            self.while_solving = None

    def close(self, wait: bool = False) -> None:
        """Stop the solve: the server stops HiGHS at its next check (in presolve that may take
        a tenth of a second or more) and answers, and stays busy until then. Only with ``wait``
        does this wait for that answer (``outcome``)."""
        self.closing.set()
        if self.thread is not None and self.thread.is_alive():
            self._solved()
            if wait and self.thread is not threading.current_thread():
                self.thread.join()
