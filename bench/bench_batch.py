"""Batch throughput on MEMAUDIT-Small: packages per second per core, end to end.

End to end means what a user's batch pays per package: JSON parsing, full validation,
compilation to arrays, the exact solves at four budgets and the JSON record writing. The
records are checked against direct solves, so a fast wrong answer fails the benchmark.

    python -m pytest bench/bench_batch.py --benchmark-only
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.solve.exact import solve
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package

BUDGETS = (2.0, 4.0, 8.0, 16.0)
SEEDS = 50  # x 8 distributions = 400 packages


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    packages = [generate_package(d, seed=s) for d in DISTRIBUTIONS for s in range(SEEDS)]
    path = tmp_path_factory.mktemp("batch") / "small.jsonl"
    write_package_set(packages, path)
    return path, packages


@pytest.mark.parametrize("writers", [(), ("gvt", "greedy", "density_only")], ids=["opt-only", "with-writers"])
def test_batch_throughput_serial(benchmark, small_set, tmp_path, writers):
    path, packages = small_set
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=BUDGETS, writers=writers)

    def run() -> None:
        run_batch([path], out, options, workers=1, backend="serial", overwrite=True)

    benchmark.pedantic(run, rounds=3, iterations=1)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == len(packages) * len(BUDGETS)
    assert all(r["status"] == "optimal" for r in records)
    for pkg in packages[::40]:  # spot-check against direct solves
        expected = [r.value for r in solve(pkg, budgets=list(BUDGETS))]
        got = [r["opt"] for r in records if r["package_id"] == pkg["package_id"]]
        assert got == pytest.approx(expected, rel=1e-12)
    per_second = len(packages) / benchmark.stats.stats.median
    benchmark.extra_info["packages_per_second_per_core"] = round(per_second)
    print(f"\n{len(packages)} packages x {len(BUDGETS)} budgets, writers={writers}: {per_second:.0f} packages/s on one core")
