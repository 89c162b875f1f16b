"""A batch fed by a pipe that stalls: what was given is scored and written while the producer
pauses (so a SIGKILL then loses none of it), and the input is read ahead in a thread without
changing what is read.

The subprocess tests keep the pipe open after writing part of a set and wait (up to a generous
``HANG``) for that part's records; a batch that waited for more input would never write them.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.experiments.parallel import chunks
from memaudit_fast.experiments.readahead import IDLE, ReadAhead
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.suites.small import generate_package
from oracles.batch_runs import HANG, wait_for_lines

GIVEN = 20  # packages written before the producer stalls


def _has_ray() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


@pytest.fixture(scope="module")
def set_lines(tmp_path_factory) -> list[bytes]:
    path = tmp_path_factory.mktemp("stdin") / "set.jsonl"
    write_package_set([generate_package("base", seed=k) for k in range(2 * GIVEN)], path)
    return path.read_bytes().splitlines(keepends=True)


@pytest.fixture(scope="module")
def reference(set_lines, tmp_path_factory) -> dict[tuple[str, float], float]:
    """OPT per (package, budget) from a run on the set as a file."""
    folder = tmp_path_factory.mktemp("reference")
    (folder / "set.jsonl").write_bytes(b"".join(set_lines))
    run_batch([folder / "set.jsonl"], folder / "out.jsonl", BatchOptions(budgets=(2.0, 4.0)), workers=1)
    return {(r["package_id"], r["budget"]): r["opt"] for r in read(folder / "out.jsonl")}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def the_given_records(out: Path, reference: dict[tuple[str, float], float]) -> list[dict]:
    """The records in ``out``: those of the GIVEN packages, in order, each with its OPT."""
    records = read(out)
    assert [(r["package_id"], r["budget"]) for r in records] == [
        (f"small/base/s{k:04d}", b) for k in range(GIVEN) for b in (2, 4)]
    assert all(r["opt"] == reference[(r["package_id"], r["budget"])] for r in records)
    return records


def start_on_pipe(out: Path, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "memaudit_fast", "batch", "-", "--out", str(out), "--budgets", "2,4", *extra]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))


BACKENDS = [
    ["--workers", "2"],
    ["--workers", "2", "--chunk-size", "8"],
    ["--workers", "2", "--backend", "threads"],
    ["--workers", "1"],
    pytest.param(["--workers", "2", "--backend", "ray"],
                 marks=pytest.mark.skipif(not _has_ray(), reason="ray is not installed")),
]


@pytest.mark.skipif(sys.platform != "linux", reason="process groups as on Linux")
@pytest.mark.parametrize("extra", BACKENDS, ids=["local", "local-chunk-8", "threads", "serial", "ray"])
def test_what_a_stalled_pipe_gave_is_written_and_survives_sigkill(tmp_path, set_lines, reference, extra):
    out = tmp_path / "out.jsonl"
    proc = start_on_pipe(out, *extra)
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(set_lines[:GIVEN]))
        proc.stdin.flush()  # and the pipe stays open: the producer stalls
        wait_for_lines(out, 2 * GIVEN, proc)
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=HANG)
    records = the_given_records(out, reference)
    assert [r["source"] for r in records[::2]] == [f"<stdin> line {k + 1}" for k in range(GIVEN)]


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``, by their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return found


def _ray_workers_up(batch: int) -> bool:
    """Whether the local Ray a batch started runs worker processes (ray::IDLE, ray::_loaded ...)."""
    raylets = [pid for pid, title in _children(batch).items() if "raylet" in title]
    return any(title.startswith("ray::") for raylet in raylets for title in _children(raylet).values())


@pytest.mark.skipif(sys.platform != "linux" or not _has_ray(), reason="needs Ray, and /proc")
def test_what_a_stalled_pipe_gave_once_ray_is_up_is_written_while_it_stalls(tmp_path, set_lines, reference):
    # While Ray starts the driver scores chunks itself (written at once); once Ray is up they
    # are Ray tasks, which the driver asked about only when the window was full.
    out = tmp_path / "out.jsonl"
    proc = start_on_pipe(out, "--workers", "2", "--backend", "ray")
    try:
        assert proc.stdin is not None
        proc.stdin.write(set_lines[0])
        proc.stdin.flush()
        wait_for_lines(out, 2, proc)
        ticks = threading.Event()
        for _ in range(HANG * 10):
            if _ray_workers_up(proc.pid):
                break
            assert proc.poll() is None
            ticks.wait(0.1)
        else:
            raise AssertionError("the local Ray started no worker")
        # One package at a time, each written before the next is given, from before the
        # driver hears that Ray is up until well after.
        for given in range(2, GIVEN + 1):
            proc.stdin.write(set_lines[given - 1])
            proc.stdin.flush()
            wait_for_lines(out, 2 * given, proc)
            ticks.wait(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=HANG)
    the_given_records(out, reference)


@pytest.mark.skipif(sys.platform != "linux", reason="process groups as on Linux")
def test_a_pipe_that_stalls_and_goes_on_gives_every_record_once(tmp_path, set_lines, reference):
    out = tmp_path / "out.jsonl"
    proc = start_on_pipe(out, "--workers", "2")
    try:
        assert proc.stdin is not None
        sent = 0
        for given in (GIVEN - 3, GIVEN + 5, 2 * GIVEN):  # each part is scored before the next comes
            proc.stdin.write(b"".join(set_lines[sent:given]))
            proc.stdin.flush()
            sent = given
            wait_for_lines(out, 2 * given, proc)
        proc.stdin.close()
        proc.wait(HANG)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(HANG)
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == 0
    records = read(out)
    assert sorted((r["package_id"], r["budget"]) for r in records) == sorted(reference)
    assert len(records) == len(reference)
    assert all(r["opt"] == reference[(r["package_id"], r["budget"])] for r in records)


@pytest.mark.skipif(sys.platform != "linux", reason="reads a pipe as standard input")
def test_a_gzip_set_on_a_pipe_is_read_ahead_like_a_plain_one(tmp_path, set_lines, reference):
    out = tmp_path / "out.jsonl"
    proc = start_on_pipe(out, "--workers", "2")
    _, err = proc.communicate(gzip.compress(b"".join(set_lines)), timeout=HANG)
    assert proc.returncode == 0, err
    assert {(r["package_id"], r["budget"]): r["opt"] for r in read(out)} == reference


def test_read_ahead_gives_items_in_order_and_idle_while_the_producer_stalls():
    go_on = threading.Event()

    def produce():
        yield from (1, 2, 3)
        go_on.wait(HANG)
        yield 4

    ahead = ReadAhead(produce, idle=0.05)
    got = []
    for item in ahead:
        got.append(item)
        if item is IDLE and got.count(IDLE) == 2:
            go_on.set()
    assert [x for x in got if x is not IDLE] == [1, 2, 3, 4]
    assert got.index(IDLE) == 3 and got[-1] == 4  # idle only while it stalled


def test_read_ahead_raises_the_producers_error_after_the_items_before_it():
    def produce():
        yield "a"
        raise ValueError("line 2 is not JSON")

    got: list[str] = []
    with pytest.raises(ValueError, match="line 2"):
        got.extend(ReadAhead(produce, idle=5))
    assert got == ["a"]


def test_read_ahead_stops_reading_when_closed_and_releases_its_input():
    released = threading.Event()
    ahead = ReadAhead(lambda: iter(range(10**9)), idle=5, close=released.set)
    assert next(iter(ahead)) == 0
    ahead.close()
    ahead.thread.join(HANG)
    assert not ahead.thread.is_alive() and released.is_set()
    assert len(ahead.items) <= 64  # it read ahead a bounded number, not the whole input


def test_an_idle_input_sends_the_part_filled_chunk_at_once():
    items = iter([1, 2, IDLE, IDLE, 3, 4, 5, IDLE, 6])
    assert list(chunks(items, 4)) == [[1, 2], [], [3, 4, 5], [6]]
    ramp = iter([1, 2, IDLE, 3, 4, 5, 6, 7, 8])
    assert list(chunks(ramp, 32, first=1)) == [[1], [2], [3, 4], [5, 6, 7, 8]]
