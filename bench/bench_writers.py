"""Benchmarks of the baseline writers: C++ hot loops against the plain-Python reference.

Run: ``pytest bench/bench_writers.py --benchmark-only``. Every benchmark asserts its result:
the store is feasible and, where the reference runs, identical to it id for id.
"""

from __future__ import annotations

import pytest

from memaudit_fast.evaluate.baselines import WriterContext, run_writer
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from oracles.writers import (
    RefPackage,
    is_feasible,
    random_package,
    ref_density_only,
    ref_greedy,
    ref_gvt,
)

CORE_WRITERS = ["density_only", "greedy", "gvt"]
REFERENCE = {"density_only": ref_density_only, "greedy": ref_greedy, "gvt": ref_gvt}


@pytest.fixture(scope="module")
def medium() -> Package:
    return Package.from_dict(random_package(300, seed=1))


@pytest.fixture(scope="module", params=[1000, 4000])
def large(request) -> WriterContext:
    return WriterContext(compile_package(random_package(request.param, seed=2)))


@pytest.mark.parametrize("writer", CORE_WRITERS)
def test_core_writer_medium(benchmark, medium, writer):
    ctx = WriterContext(compile_package(medium))
    budget = 40.0
    result = benchmark(run_writer, ctx, budget, writer, opt=1.0)
    assert list(result.selected) == REFERENCE[writer](RefPackage(medium), budget)


@pytest.mark.parametrize("writer", CORE_WRITERS)
def test_python_reference_medium(benchmark, medium, writer):
    budget = 40.0
    ids = benchmark.pedantic(lambda: REFERENCE[writer](RefPackage(medium), budget), rounds=1, iterations=1)
    assert is_feasible(medium, ids, budget)


@pytest.mark.parametrize("writer", CORE_WRITERS)
def test_core_writer_large(benchmark, large, writer):
    budget = 64.0
    result = benchmark(run_writer, large, budget, writer, opt=1.0)
    assert result.cost <= budget and result.value > 0
    groups = [large.compiled.group_of[large.compiled.index_of()[c]] for c in result.selected]
    assert len(set(groups)) == len(groups)
