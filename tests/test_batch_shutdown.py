"""Batch shutdown: Ctrl-C and SIGTERM stop long solves promptly and keep what finished; worker
processes never outlive the batch, even when it is killed by SIGKILL.

The hard packages are subset-sum knapsacks (even costs, odd budget, value = cost): the bound
never meets the incumbent, so their solves run until their 600 s limit unless stopped. A run
that did not stop when told would hit the generous ``timeout`` of ``wait`` below; no
assertion measures speed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.suites.small import generate_package
from oracles.batch_runs import HANG, wait_for_lines
from oracles.packages import EASY, easy_then_hard, subset_sum

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process checks read /proc")



def command(set_path: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memaudit_fast", "batch", str(set_path), "--out", str(out),
            "--time-limit", "600", *extra]


def children(pid: int) -> set[int]:
    """Every process whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_batch_outlives_its_test():
    # A test that fails while its batch is mid-solve must not leave it solving for 600 s.
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def start(cmd: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    _STARTED.append(proc)
    return proc


def _has_ray() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


NEEDS_RAY = pytest.mark.skipif(not _has_ray(), reason="ray is not installed")


@pytest.mark.parametrize(("backend", "sig"), [
    ("local", signal.SIGINT), ("local", signal.SIGTERM), ("serial", signal.SIGINT),
    ("serial", signal.SIGTERM), ("threads", signal.SIGINT),
    pytest.param("ray", signal.SIGINT, marks=NEEDS_RAY), pytest.param("ray", signal.SIGTERM, marks=NEEDS_RAY),
])
def test_interrupt_during_long_solves_stops_keeps_what_finished_and_says_how_to_resume(tmp_path, backend, sig):
    set_path = easy_then_hard(tmp_path / "set.jsonl")
    out = tmp_path / "out.jsonl"
    proc = start(command(set_path, out, "--backend", backend, "--workers", "2", "--chunk-size", "1"))
    wait_for_lines(out, EASY * 2, proc)
    workers = children(proc.pid)
    # Ctrl-C in a terminal signals the whole process group; SIGTERM comes to the main process.
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, err
    assert "--resume" in err and "interrupted" in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == EASY * 2 and all(r["status"] == "optimal" for r in records)
    # Stopped while its Ray was still starting, a Ray batch exits without waiting for it: Ray's
    # processes and the reaper end just after it (a parent-death signal, the pipe).
    assert not still_there(lambda: {pid for pid in workers if alive(pid)}, REAP if backend == "ray" else 0)


def test_resume_after_an_interrupt_keeps_the_finished_records(tmp_path):
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=1)
    out = tmp_path / "out.jsonl"
    proc = start(command(set_path, out, "--workers", "2", "--chunk-size", "1"))
    wait_for_lines(out, EASY * 2, proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, err
    before = out.read_bytes()
    # A resume must use the run's options: other ones are refused and the file stays as it is.
    again = subprocess.run(command(set_path, out, "--workers", "2", "--node-limit", "10", "--resume"),
                           check=False, capture_output=True, text=True, timeout=HANG)
    assert again.returncode == 2 and "node_limit" in again.stderr
    assert out.read_bytes() == before


def test_workers_die_when_the_batch_is_killed(tmp_path):
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=2)
    out = tmp_path / "out.jsonl"
    proc = start(command(set_path, out, "--workers", "2", "--chunk-size", "1"))
    wait_for_lines(out, EASY * 2, proc)
    workers = children(proc.pid)
    assert workers, "the batch runs no worker processes"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=HANG)
    # The parent-death signal is delivered as the parent exits; poll /proc for the reaped state.
    for pid in workers:
        deadline_ok = threading.Event()
        for _ in range(HANG * 20):
            if not alive(pid):
                deadline_ok.set()
                break
            deadline_ok.wait(0.05)
        assert deadline_ok.is_set(), f"worker {pid} outlived the killed batch"


def stop_interrupted(proc: subprocess.Popen[str], sig: int, group: bool = False) -> tuple[str, float]:
    """Send ``sig`` to the batch (or its process group); check that it stopped as interrupted
    runs do (exit 130, the resume command); its stderr and the seconds it took to exit."""
    (os.killpg if group else os.kill)(proc.pid, sig)
    began = time.monotonic()
    _, err = proc.communicate(timeout=HANG)
    took = time.monotonic() - began
    assert proc.returncode == 130, err
    assert "--resume" in err and "interrupted" in err
    return err, took


def still_there(find: Callable[[], Collection[Any]], seconds: float | None = None) -> Collection[Any]:
    """What ``find`` still reports after up to ``seconds`` (default REAP) of polling."""
    deadline = time.monotonic() + (REAP if seconds is None else seconds)
    left = find()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = find()
    return left


# Seconds within which a killed Ray batch's processes must be gone. Without the reaper
# (experiments/ray_runner.py) the raylet's agents outlive it by about a minute.
REAP = 20


def titles(pids: list[int]) -> dict[int, str]:
    out = {}
    for pid in pids:
        try:
            out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return out


def start_with_local_ray(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A batch on a local Ray of its own, once Ray is up (its raylet's agents included) and
    the easy packages are written."""
    from memaudit_fast.experiments.ray_reaper import descendants

    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=3)
    out = tmp_path / "out.jsonl"
    proc = start(command(set_path, out, "--backend", "ray", "--workers", "2", "--chunk-size", "1"))
    tick = threading.Event()
    below: dict[int, str] = {}
    for _ in range(HANG * 10):
        below = titles(descendants(proc.pid))
        if any("RuntimeEnvAgent" in t for t in below.values()) and any("DashboardAgent" in t for t in below.values()):
            break
        assert proc.poll() is None, "the batch ended before Ray was up"
        tick.wait(0.1)
    else:
        raise AssertionError(f"Ray's agents never started: {below}")
    wait_for_lines(out, EASY * 2, proc)
    return proc, out


@NEEDS_RAY
def test_a_local_ray_dies_with_the_batch_that_started_it_even_by_sigkill(tmp_path):
    from memaudit_fast.experiments.ray_reaper import descendants

    proc, _ = start_with_local_ray(tmp_path)
    below = titles(descendants(proc.pid))
    os.kill(proc.pid, signal.SIGKILL)  # the batch alone, not its process group
    proc.communicate(timeout=HANG)
    left = still_there(lambda: {pid: title for pid, title in below.items() if alive(pid)})
    assert not left, f"outlived the killed batch: {left}"


@NEEDS_RAY
def test_sigterm_to_the_process_group_stops_a_run_with_its_own_local_ray_in_order(tmp_path):
    # GNU timeout, kill -TERM -PGID or a job scheduler signal the whole group. Ray's GCS and
    # raylet were in it: they died at once, and ray.shutdown then aborted the batch (exit 134,
    # no summary, no resume command). They now run in a session of their own.
    proc, out = start_with_local_ray(tmp_path)
    _, took = stop_interrupted(proc, signal.SIGTERM, group=True)
    assert len(out.read_text().splitlines()) >= EASY * 2
    # Before, when it did not abort, ray.shutdown waited on the dead GCS for half a minute.
    assert took < 15, f"took {took:.1f} s to stop"


class CtrlCAfterEasy:
    """A progress display that presses Ctrl-C (in the main thread, where it is called) once
    ``out`` holds the easy packages' records."""

    total = None

    def __init__(self, out: Path) -> None:
        self.out, self.pressed = out, False

    def set_total(self, total: int | None) -> None:
        self.total = total

    def update(self, n: int = 1, *, failed: int = 0) -> None:
        if not self.pressed and self.out.read_bytes().count(b"\n") >= EASY * 2:
            self.pressed = True
            signal.raise_signal(signal.SIGINT)


def ray_processes() -> dict[int, str]:
    """The Ray processes on this machine (GCS, raylet, agents, workers) by their titles."""
    marks = ("ray::", "raylet", "gcs_server", "/ray/dashboard/", "runtime_env", "default_worker.py")
    pids = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    return {pid: title for pid, title in titles(pids).items() if any(m in title for m in marks) and alive(pid)}


@NEEDS_RAY
def test_ctrl_c_while_the_local_ray_starts_stops_at_once_and_leaves_no_ray_process(tmp_path):
    # ray.init cannot be interrupted: the run waited for it (and then for Ray's shut-down),
    # 2-4 s after Ctrl-C. It now exits at once; Ray's processes die with it.
    before = set(ray_processes())
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=3)
    out = tmp_path / "out.jsonl"
    proc = start(command(set_path, out, "--backend", "ray", "--workers", "2", "--chunk-size", "1"))
    wait_for_lines(out, EASY * 2, proc)  # the driver scored these itself: Ray takes seconds more
    err, took = stop_interrupted(proc, signal.SIGINT)
    assert "Token authentication" not in err  # Ray's notice on every start of its own
    assert len(out.read_text().splitlines()) == EASY * 2
    assert took < 1.5, f"took {took:.1f} s to stop"
    left = still_there(lambda: {pid: title for pid, title in ray_processes().items() if pid not in before})
    assert not left, f"outlived the stopped batch: {left}"


@NEEDS_RAY
def test_a_run_stopped_while_its_ray_starts_returns_and_the_next_run_starts_its_own(tmp_path):
    import ray

    from memaudit_fast.experiments import ray_runner

    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=1)
    out = tmp_path / "out.jsonl"
    # Ctrl-C once the easy packages are written (by the driver: Ray is starting).
    pressing = CtrlCAfterEasy(out)
    summary = run_batch([set_path], out, BatchOptions(time_limit=600), workers=2, backend="ray", chunk_size=1,
                        progress=pressing)  # type: ignore[arg-type]
    assert pressing.pressed and summary.interrupted and summary.packages == EASY
    assert ray_runner.start_abandoned()  # returned without waiting for ray.init
    # The next run waits for that start to end (and its Ray to be shut down), then starts its own.
    write_package_set([dict(generate_package("base", seed=k), budgets=[2]) for k in range(3)], tmp_path / "easy.jsonl")
    again = run_batch([tmp_path / "easy.jsonl"], tmp_path / "again.jsonl", BatchOptions(), workers=1, backend="ray")
    assert again.packages == 3 and again.failed == 0 and not again.interrupted
    assert not ray_runner.start_abandoned() and not ray.is_initialized()


def test_ctrl_c_while_threads_solve_returns_promptly_in_process(tmp_path):
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=2)
    out = tmp_path / "out.jsonl"
    # Ctrl-C once the easy packages are written, while the threads are in the hard solves.
    pressing = CtrlCAfterEasy(out)
    summary = run_batch([set_path], out, BatchOptions(time_limit=600), workers=2,
                        backend="threads", chunk_size=1, progress=pressing)  # type: ignore[arg-type]
    assert pressing.pressed and summary.interrupted
    assert summary.packages == EASY and summary.records == EASY * 2


def test_a_second_run_on_the_same_output_is_refused_while_the_first_runs(tmp_path):
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=1)
    out = tmp_path / "out.jsonl"
    first = start(command(set_path, out, "--workers", "2", "--chunk-size", "1"))
    wait_for_lines(out, EASY * 2, first)
    before = out.read_bytes()
    for extra in (["--resume"], ["--force"], []):
        second = subprocess.run(command(set_path, out, "--workers", "1", *extra), check=False,
                                capture_output=True, text=True, timeout=HANG)
        assert second.returncode == 2, second.stderr
        assert out.read_bytes() == before
    os.killpg(first.pid, signal.SIGINT)
    _, err = first.communicate(timeout=HANG)
    assert first.returncode == 130, err
    assert out.read_bytes() == before


@NEEDS_RAY
def test_a_slow_package_in_the_driver_goes_to_ray_once_it_is_up(tmp_path):
    # While a local Ray starts the driver scores chunks itself; a package still solving when
    # Ray is up is cut short there and, with the rest of its chunk, goes to Ray, so that the
    # driver is free to hand out work (it never solves for minutes beside idle workers).
    import ray

    from memaudit_fast.experiments.batch import _score_chunk, _was_interrupted
    from memaudit_fast.experiments.ray_runner import RayRunner, _InDriver
    from memaudit_fast.model.sets import iter_raw_members

    assert not ray.is_initialized()
    easy = dict(generate_package("base", seed=1), budgets=[2, 4])
    write_package_set([easy, subset_sum(0), easy], tmp_path / "set.jsonl")
    tasks = [(member, None, frozenset()) for member in iter_raw_members([tmp_path / "set.jsonl"])]
    runner = RayRunner(_score_chunk, (BatchOptions(time_limit=600.0),), workers=1, address=None,
                       interrupted=_was_interrupted)
    try:
        handle = runner.submit(tasks)
        assert runner.ready.is_set() and runner.failure is None
        assert isinstance(handle, _InDriver) and handle.rest is not None and len(handle.head) == 1
        data, count, errors, interrupted, _ = handle.head[0]
        assert count == 2 and not errors and not interrupted and data.count(b"\n") == 2
        assert not runner.finished(handle)
        runner.stop()  # the subset-sum package would take its 600 s on Ray
    finally:
        runner.close()
    assert not ray.is_initialized()


def test_sigterm_stays_the_batchs_own_when_starting_workers_installs_a_handler(tmp_path, monkeypatch):
    # ray.init, called from the main thread (a cluster address), installs a SIGTERM handler
    # that exits at once; the batch's own (stop like Ctrl-C, keep what finished) must win
    # during the run, and the other one is put back after it.
    from memaudit_fast.experiments import batch as batch_module

    def exits(signum: int, frame: object) -> None:
        sys.exit(signum)

    real_make, real_score = batch_module.make_runner, batch_module._score_chunk
    seen = []

    def make_like_ray(*args: object, **kwargs: object) -> object:
        signal.signal(signal.SIGTERM, exits)
        return real_make(*args, **kwargs)

    def score(*args: object, **kwargs: object) -> object:
        seen.append(signal.getsignal(signal.SIGTERM))
        return real_score(*args, **kwargs)

    monkeypatch.setattr(batch_module, "make_runner", make_like_ray)
    monkeypatch.setattr(batch_module, "_score_chunk", score)
    write_package_set([generate_package("base", seed=k) for k in range(2)], tmp_path / "set.jsonl")
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a program without a handler of its own
    try:
        run_batch([tmp_path / "set.jsonl"], tmp_path / "out.jsonl", BatchOptions(budgets=(2.0,)), workers=1,
                  backend="serial")
        assert seen and all(handler is batch_module._raise_interrupt for handler in seen)
        assert signal.getsignal(signal.SIGTERM) is exits
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_while_waiting_for_the_oldest_chunk_keeps_what_it_finished(tmp_path):
    # One chunk holds the easy packages and the hard ones: the driver waits for it when Ctrl-C
    # comes. The chunk must still be in the window then, so that the packages it finished are
    # written (it used to be taken off the window before the wait, and was lost).
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=2)
    out = tmp_path / "out.jsonl"
    timer = threading.Timer(5.0, os.kill, (os.getpid(), signal.SIGINT))  # the easy ones done by then
    timer.start()
    try:
        summary = run_batch([set_path], out, BatchOptions(time_limit=600), workers=2, backend="local",
                            chunk_size=8)
    finally:
        timer.cancel()
    assert summary.interrupted
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert summary.packages == EASY and len(records) == EASY * 2
    assert all(r["status"] == "optimal" for r in records)


def test_a_ctrl_c_while_workers_are_forked_is_raised_after_the_fork(monkeypatch):
    # The first submit forks every worker; a signal that landed in the fork's after-fork hooks
    # was printed there and lost (16 workers: 1 run in 6 went on to the end).
    from memaudit_fast.experiments.parallel import ProcessRunner

    runner = ProcessRunner(len, (), 1)
    submitted: list[bool] = []

    def fork_then_signal(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)  # as if it came during the fork
        submitted.append(True)
        return runner.pool.__class__.submit(runner.pool, len, [])

    monkeypatch.setattr(runner.pool, "submit", fork_then_signal)
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.submit([1])
        assert submitted == [True]  # raised once the submit was done, not inside it
        # ... and the chunk sent is known by then: its messages had no chunk (KeyError, exit 1).
        assert list(runner.chunks) == [0]
        runner.result(runner.chunks[0])
    finally:
        runner.stop()


def test_an_interrupted_certificate_leaves_the_package_unfinished(tmp_path, monkeypatch):
    # Ctrl-C during the certificate's MILP (one worker: HiGHS in this process) wrote the record
    # with certificate status 'interrupted', and the run ended with exit 0.
    from memaudit_fast.solve import backends

    path = tmp_path / "set.jsonl"
    write_package_set([generate_package("base", seed=s) for s in range(3)], path)
    solved: list[int] = []
    real = backends._run_stoppable

    def ctrl_c_in_the_second(h, stop):
        solved.append(1)
        if len(solved) == 2:
            signal.raise_signal(signal.SIGINT)  # as _run_stoppable raises it after HiGHS stopped
        real(h, stop)

    monkeypatch.setattr(backends, "_run_stoppable", ctrl_c_in_the_second)
    out = tmp_path / "out.jsonl"
    summary = run_batch([path], out, BatchOptions(budgets=(4.0,), certify="highs"), workers=1, backend="serial")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert summary.interrupted and len(records) == 1 and records[0]["certificate"]["status"] == "optimal"


def test_a_killed_worker_stops_the_run_keeping_what_finished_and_says_how_to_resume(tmp_path):
    # The out-of-memory killer, say: it ended as "internal error: BrokenProcessPool (a bug)",
    # with no resume command.
    set_path = easy_then_hard(tmp_path / "set.jsonl")
    out = tmp_path / "out.jsonl"
    proc = start(command(set_path, out, "--workers", "2", "--chunk-size", "1"))
    wait_for_lines(out, EASY * 2, proc)
    os.kill(min(children(proc.pid)), signal.SIGKILL)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1, err
    assert "worker process died" in err and "--resume" in err and "a bug" not in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == EASY * 2 and all(r["status"] == "optimal" for r in records)


def test_sigterm_while_the_workers_start_leaves_no_output_behind(tmp_path):
    # Importing Ray takes half a second before the run's SIGTERM handler was installed: a
    # SIGTERM then killed the batch and left the empty --out it had made (and its directory).
    set_path = easy_then_hard(tmp_path / "set.jsonl", hard=0)
    out = tmp_path / "new" / "out.jsonl"
    script = f"""
import os, signal, sys
from memaudit_fast.experiments import batch
real = batch.make_runner
def slow_start(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # as it comes while Ray is imported
    return real(*args, **kwargs)
batch.make_runner = slow_start
try:
    batch.run_batch([{str(set_path)!r}], {str(out)!r}, batch.BatchOptions(), workers=1, backend="serial")
except KeyboardInterrupt:
    sys.exit(130)
"""
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 130, done.stderr
    assert not out.exists() and not out.parent.exists()
