"""Ends a local Ray's processes when the batch that started it dies, even by SIGKILL.

Ray's own processes die with the thread that started them (a parent-death signal), but the
raylet's agents (DashboardAgent, RuntimeEnvAgent) outlive a killed raylet by a minute: before
exiting they report the raylet's death to the GCS, dead too, with a 60 s timeout. The reaper
is a small process in a session of its own that holds the other end of a pipe from the batch;
when the batch is gone the pipe closes and it kills the processes it was told of (Linux).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Collection

__all__ = ["RayReaper", "descendants"]


# The reaper: reads "pid start-time" lines until its stdin closes (the batch ended, or was
# killed), then kills those of the processes that still run with the same start time (a pid
# reused since is left alone). A program of its own, not an import of this package: it starts
# in milliseconds and holds nothing but the pipe.
_REAPER = r"""
import os, signal, sys, time
def stat(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
known, names, sids = {}, set(), set()
for line in sys.stdin.buffer:
    first, second = line.split()
    if first == b"session":
        names.add(second)
    elif first == b"sid":
        sids.add(int(second))
    else:
        known[int(first)] = second
for pid, start in known.items():
    fields = stat(pid)
    if fields is not None and fields[19] == start:
        kill(pid)
# What was started in the last half second is not reported yet: a raylet's agents and workers
# are in its session (the raylet leads one of its own), and a worker's command line names the
# Ray session. Twice, for a process forked while the first pass ran.
sids.discard(os.getsid(0))
for _ in range(2):
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        fields = stat(int(entry))
        if fields is not None and int(fields[3]) in sids:
            kill(int(entry))
            continue
        if names:
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    line = f.read()
            except OSError:
                continue
            if any(b"--session-name=" + name in line for name in names):
                kill(int(entry))
    time.sleep(0.1)
"""


def _start_time(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[19]
    except OSError:
        return None


def _leads_session(pid: int) -> bool:
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


def _session_name(pid: int) -> bytes | None:
    """The Ray session a process's command line names (``--session-name=...``), if any."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            for arg in handle.read().split(b"\0"):
                if arg.startswith(b"--session-name="):
                    name = arg[len(b"--session-name="):]
                    return name if name and not name.isspace() else None
    except OSError:
        return None
    return None


def descendants(root: int, exclude: Collection[int] = ()) -> list[int]:
    """Every process below ``root`` (Linux: read from /proc), ``exclude`` and theirs left out."""
    parent_of: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    parent_of[int(entry.name)] = int(handle.read().rsplit(b")", 1)[1].split()[1])
            except OSError:
                continue
    below: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        below.setdefault(parent, []).append(pid)
    found, todo = [], list(below.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in exclude:
            continue
        found.append(pid)
        todo.extend(below.get(pid, []))
    return found


class RayReaper:
    """The reaper of one local Ray (see the module's docstring): told every half second of the
    processes below this one, and of the Ray session they name."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.sent: set[int] = set()
        self.sessions: set[bytes] = set()  # Ray session names seen in command lines
        self.stopped = threading.Event()
        self.lock = threading.Lock()  # the follower and catch_up both tell
        # Ray starts its processes during ray.init and the raylet its agents and workers after
        # it: every half second the reaper hears of the processes below this one.
        self.follower = threading.Thread(target=self._follow, name="memaudit-ray-reaper", daemon=True)
        self.follower.start()

    @staticmethod
    def start() -> RayReaper | None:
        """A reaper that follows the processes below this one until ``close``."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            proc = subprocess.Popen([sys.executable, "-c", _REAPER], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True, close_fds=True)
        except OSError:
            return None
        return RayReaper(proc)

    def _follow(self) -> None:
        while True:
            try:
                self.watch(descendants(os.getpid(), exclude={self.pid}))
            except OSError:
                return
            if self.stopped.wait(0.5):
                return

    def watch(self, pids: list[int]) -> None:
        with self.lock:
            self._tell(pids)

    def _tell(self, pids: list[int]) -> None:
        lines = []
        for pid in pids:
            if pid in self.sent:
                continue
            start = _start_time(pid)
            if start is not None:
                lines.append(b"%d %s\n" % (pid, start))
                self.sent.add(pid)
                session = _session_name(pid)
                if session is not None and session not in self.sessions:
                    self.sessions.add(session)
                    lines.append(b"session %s\n" % session)
                if _leads_session(pid):  # GCS and raylet, in sessions of their own
                    lines.append(b"sid %d\n" % pid)
        self._write(lines)

    def _write(self, lines: list[bytes]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"".join(lines))
            self.proc.stdin.flush()
        except (OSError, ValueError):  # the reaper is gone, or closed
            pass

    def tell_session(self, pid: int) -> None:
        """Tell the reaper now of a process that leads a session of its own (a raylet, just
        started): what it starts later is in that session, and is ended with it."""
        with self.lock:
            self._write([b"sid %d\n" % pid])

    def catch_up(self) -> None:
        """Tell the reaper now of the processes below this one (before an exit that does not
        wait for a Ray still starting)."""
        try:
            self.watch(descendants(os.getpid(), exclude={self.pid}))
        except OSError:
            pass

    def close(self) -> None:
        """After Ray's own shutdown: the reaper ends what is left, then exits."""
        self.stopped.set()
        self.follower.join()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
