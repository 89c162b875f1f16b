"""Batch throughput on MEMAUDIT-Small: packages per second, end to end, and where the time goes.

End to end means what a user's batch pays per package: reading the set, JSON parsing and full
validation, compilation to arrays, the exact solves at B = 2, 4, 8, 16, and building, encoding
and writing the records. Every test checks its records against direct solves, so a fast wrong
answer fails the benchmark.

* ``test_batch_throughput``: one worker (in-process) and two worker processes.
* ``test_stage_shares``: the share of each stage (read, validate, compile, solve, write),
  timed one package at a time in this process along the batch worker's own path (the lean
  compile of a package just validated, the core's solves, records straight from its
  results), with microseconds per package and the part spent outside the C++ solves.
* ``test_ray_reaches_the_process_pool``: a 20,000-package set on a local Ray against the local
  process pool with the same number of workers; same records, and the ratio of throughputs,
  for a Ray the run starts and shuts down itself (all of it counted) and for one already
  running. Set ``MEMAUDIT_BENCH_RAY_PACKAGES`` to change the size.

    python -m pytest bench/bench_batch.py -s --benchmark-columns=median,rounds
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

from memaudit_fast.experiments.batch import BatchOptions, member_digest, run_batch, score_member
from memaudit_fast.model.compiled import compile_validated
from memaudit_fast.model.sets import iter_raw_members, parse_member, write_package_set
from memaudit_fast.results.records import encode_records, solved_record
from memaudit_fast.solve.exact import solve, solve_core
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package

BUDGETS = (2.0, 4.0, 8.0, 16.0)
SEEDS = 100  # x 8 distributions = 800 packages
RAY_PACKAGES = int(os.environ.get("MEMAUDIT_BENCH_RAY_PACKAGES", "20000"))


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    packages = [generate_package(d, seed=s) for s in range(SEEDS) for d in DISTRIBUTIONS]
    path = tmp_path_factory.mktemp("batch") / "small.jsonl"
    write_package_set(packages, path)
    return path, packages


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def check_against_direct_solves(records: list[dict], packages: list[dict], every: int = 1) -> None:
    assert len(records) == len(packages) * len(BUDGETS)
    assert all(r["status"] == "optimal" for r in records)
    by_id: dict[str, list[float]] = {}
    for record in records:
        by_id.setdefault(record["package_id"], []).append(record["opt"])
    for package in packages[::every]:
        expected = [r.value for r in solve(package, budgets=list(BUDGETS))]
        assert by_id[package["package_id"]] == pytest.approx(expected, rel=1e-12), package["package_id"]


@pytest.mark.parametrize("workers", [1, 2], ids=["1-worker", "2-workers"])
@pytest.mark.parametrize("writers", [(), ("gvt", "greedy", "density_only")], ids=["opt-only", "with-writers"])
def test_batch_throughput(benchmark, small_set, tmp_path, workers, writers):
    path, packages = small_set
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=BUDGETS, writers=writers)

    cpu = {"parent": 0.0, "workers": 0.0, "runs": 0}

    def run() -> None:
        before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        run_batch([path], out, options, workers=workers, backend="local", overwrite=True)
        after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        for key, a, b in zip(("parent", "workers"), before, after):
            cpu[key] += b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime
        cpu["runs"] += 1

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    check_against_direct_solves(read_records(out), packages, every=1 if not writers else 20)
    per_second = len(packages) / benchmark.stats.stats.median
    benchmark.extra_info["packages_per_second"] = round(per_second)
    # CPU time per package, which a machine shared with other jobs moves less than wall time:
    # with one worker everything runs in this process; with two, the parent reads, hands out
    # and writes, and the workers (processes, reaped when the run ends) do the rest.
    count = cpu["runs"] * len(packages)
    parent, work = 1e6 * cpu["parent"] / count, max(0.0, 1e6 * cpu["workers"] / count)
    print(f"\n{len(packages)} packages x {len(BUDGETS)} budgets, writers={list(writers)}, "
          f"{workers} worker(s): {per_second:.0f} packages/s ({per_second / workers:.0f} per worker); "
          f"CPU per package: parent {parent:.0f} us, workers {work:.0f} us")


def test_stage_shares(small_set, tmp_path):
    path, packages = small_set
    options = BatchOptions(budgets=BUDGETS)
    stages = dict.fromkeys(("read", "validate", "compile", "solve", "write"), 0.0)
    values: dict[str, list[float]] = {}
    fd = os.open(tmp_path / "stages.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    clock = time.perf_counter
    try:
        for _ in range(3):
            members = iter_raw_members([path])
            while True:
                t0 = clock()
                member = next(members, None)
                if member is None:
                    break
                member_digest(member)
                t1 = clock()
                package = parse_member(member)
                t2 = clock()
                compiled = compile_validated(package)
                t3 = clock()
                results = solve_core(compiled.problem, list(BUDGETS))
                t4 = clock()
                records = [solved_record(compiled, r) for r in results]
                for record in records:
                    record.update(source=member[0], member_digest="0" * 32, options_digest=options.digest)
                os.write(fd, encode_records(records))
                t5 = clock()
                for name, (a, b) in zip(stages, ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5))):
                    stages[name] += b - a
                values[package.package_id] = [float(r.value) for r in results]
    finally:
        os.close(fd)
    total = sum(stages.values())
    for package in packages[::25]:
        assert values[package["package_id"]] == [r.value for r in solve(package, budgets=list(BUDGETS))]
    # The batch's own worker function does the same work: its records agree with the stages'.
    member = next(iter_raw_members([path]))
    data, count, errors, interrupted, digest = score_member((member, None, frozenset()), options)
    assert digest == member_digest(member)
    first = json.loads(data.split(b"\n")[0])
    assert count == len(BUDGETS) and not errors and not interrupted
    assert first["opt"] == values[first["package_id"]][0]
    count = 3 * len(packages)
    shares = ", ".join(f"{name} {100 * seconds / total:.0f}% ({1e6 * seconds / count:.0f} us)"
                       for name, seconds in stages.items())
    outside = 1e6 * (total - stages["solve"]) / count
    print(f"\nstages over {len(packages)} packages x 3 passes ({count / total:.0f} packages/s): {shares}; "
          f"outside the C++ solves {outside:.0f} us per package")
    assert total > 0


def _large_set(path: Path, count: int) -> list[dict]:
    """``count`` packages: the MEMAUDIT-Small distributions, each copy with its own id."""
    base = [generate_package(d, seed=s) for s in range(25) for d in DISTRIBUTIONS]
    packages = []
    for k in range(count):
        package = dict(base[k % len(base)])
        package["package_id"] = f"{package['package_id']}/copy{k // len(base)}"
        packages.append(package)
    write_package_set(packages, path)
    return packages


def test_ray_reaches_the_process_pool(tmp_path):
    ray = pytest.importorskip("ray")
    path = tmp_path / "large.jsonl"
    packages = _large_set(path, RAY_PACKAGES)
    options = BatchOptions(budgets=BUDGETS)
    workers = 2
    local = run_batch([path], tmp_path / "local.jsonl", options, workers=workers, backend="local")
    # As a user runs it: the run starts a local Ray (scoring in the driver meanwhile) and
    # shuts it down; its time counts all of that.
    assert not ray.is_initialized()
    own = run_batch([path], tmp_path / "own.jsonl", options, workers=workers, backend="ray")
    assert not ray.is_initialized()
    # On a Ray that is already up, as on a cluster.
    started = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="warning")
    ray_start = time.perf_counter() - started
    try:
        remote = run_batch([path], tmp_path / "ray.jsonl", options, workers=workers, backend="ray")
    finally:
        started = time.perf_counter()
        ray.shutdown()
        ray_stop = time.perf_counter() - started
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in read_records(tmp_path / "local.jsonl")]
    for name in ("own.jsonl", "ray.jsonl"):
        assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in read_records(tmp_path / name)]
    check_against_direct_solves(strip, packages, every=500)
    local_rate = local.packages / local.seconds
    own_rate = own.packages / own.seconds
    ray_rate = remote.packages / remote.seconds
    print(f"\n{len(packages)} packages, {workers} workers: process pool {local_rate:.0f} packages/s; "
          f"Ray started by the run {own_rate:.0f} packages/s ({100 * own_rate / local_rate:.0f}%); "
          f"Ray already running {ray_rate:.0f} packages/s ({100 * ray_rate / local_rate:.0f}%; "
          f"its start-up {ray_start:.1f} s and shut-down {ray_stop:.1f} s not counted)")
    assert ray_rate >= 0.8 * local_rate
