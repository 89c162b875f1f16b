"""The server of solve/highs_process.py: HiGHS on one model at a time, for its parent process.

Run as ``python -m memaudit_fast.solve.highs_server READ_FD WRITE_FD``. It says ``ready`` once
highspy is loaded, then takes ``("solve", id, model, budget, granularity, time_limit, floor,
cutoff)``,
``("floor", id, worth)`` and ``("stop", id)``, and answers ``("store", id, store)`` for each
store HiGHS finds and ``("done", id, outcome)`` (a HandoffOutcome, or None). It ends when its
parent does (parent-death signal, or the end of its pipe).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from multiprocessing.connection import Connection
from queue import Queue
from typing import Any


def serve(requests: Connection, answers: Connection) -> None:
    from .backends import HighsStop
    from .handoff import finish_with_highs

    lock = threading.Lock()
    solves: Queue[Any] = Queue()
    current: dict[str, Any] = {"id": None, "stop": None}
    floors: dict[int, float] = {}  # by solve: a floor may come before its solve begins
    stopped: set[int] = set()

    def send(message: tuple[Any, ...]) -> None:
        with lock:
            answers.send(message)

    def read() -> None:
        try:
            while True:
                message = requests.recv()
                kind, ident = message[0], message[1]
                if kind == "solve":
                    solves.put(message)
                elif kind == "floor":
                    floors[ident] = max(floors.get(ident, -math.inf), float(message[2]))
                elif kind == "stop":
                    stopped.add(ident)
                    stop = current["stop"]
                    if current["id"] == ident and stop is not None:
                        stop.set()
        except (EOFError, OSError):
            pass
        os._exit(0)  # the parent is gone

    threading.Thread(target=read, daemon=True).start()
    send(("ready", 0, None))
    while True:
        _, ident, model, budget, granularity, time_limit, floor, cutoff = solves.get()
        stop = HighsStop()
        floors[ident] = max(floors.get(ident, -math.inf), float(floor))
        current.update(id=ident, stop=stop)
        if ident in stopped:
            stop.set()
        def found(store: tuple[int, ...], solve: int = ident) -> None:
            send(("store", solve, store))

        def floor_of(solve: int = ident) -> float:
            return floors[solve]

        try:
            out = finish_with_highs(None, budget, model.candidates, None, time_limit=time_limit, model=model,
                                    stop=stop, on_store=found, granularity=granularity, floor=floor_of,
                                    cutoff=cutoff)
        except Exception:  # noqa: BLE001 - the parent goes on without this solve
            out = None
        current.update(id=None, stop=None)
        stopped.discard(ident)
        floors.pop(ident, None)
        send(("done", ident, out))


def _die_with_parent() -> None:
    """Ctrl-C is the parent's to handle; on Linux the kernel kills this process when its parent
    dies (elsewhere the end of the pipe does, at the reader's next read)."""
    import signal

    from .parent_death import arm_parent_death_signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    arm_parent_death_signal()


def main(argv: list[str]) -> None:
    _die_with_parent()
    serve(Connection(int(argv[0]), writable=False), Connection(int(argv[1]), readable=False))


if __name__ == "__main__":
    main(sys.argv[1:])
