"""Benchmarks of MILP certification (HiGHS, and Gurobi when installed).

Run: ``pytest bench/bench_certify.py --benchmark-only``. The claim certified is the exact
solver's result when ``memaudit_fast.solve.exact`` exists, else the store of an untimed HiGHS
solve; every benchmark asserts that the certificate agrees.
"""

from __future__ import annotations

import importlib.util

import pytest

from memaudit_fast.model.compiled import CompiledPackage, compile_package
from memaudit_fast.solve.backends import gurobi_installed, solve_highs
from memaudit_fast.solve.certify import certify
from memaudit_fast.solve.milp import build_milp
from oracles.writers import random_package

BUDGET = 24.0


def claim_for(c: CompiledPackage, budget: float) -> dict:
    if importlib.util.find_spec("memaudit_fast.solve.exact") is not None:
        from memaudit_fast.solve.exact import solve

        return solve(c.package, budget).to_record()
    outcome = solve_highs(build_milp(c, budget))
    assert outcome.status == "optimal" and outcome.store is not None
    return {"package_id": c.package_id, "budget": budget, "opt": c.objective(list(outcome.store)),
            "status": "optimal", "selected": [c.candidate_ids[i] for i in outcome.store]}


@pytest.fixture(scope="module", params=[(60, "cap1"), (200, "cap1"), (60, {"pwl": [[0, 0], [0.5, 0.8], [2, 1.2]]})],
                ids=["cap1-60", "cap1-200", "pwl-60"])
def case(request):
    n, saturation = request.param
    c = compile_package(random_package(n, seed=5, saturation=saturation))
    return c, claim_for(c, BUDGET)


@pytest.mark.parametrize("solver", ["highs", pytest.param("gurobi", marks=pytest.mark.skipif(
    not gurobi_installed(), reason="gurobipy is not installed"))])
def test_certify(benchmark, case, solver):
    c, claim = case
    cert = benchmark.pedantic(certify, args=(c, claim, solver), rounds=3, iterations=1)
    assert cert.agrees is True and cert.solver == solver


def test_certify_log1p_bracket(benchmark):
    c = compile_package(random_package(60, seed=6, saturation="log1p"))
    # The bracket needs no claimed optimum to be computed; a feasible store is enough.
    claim = {"package_id": c.package_id, "budget": BUDGET, "opt": 0.0, "upper_bound": 1e9,
             "status": "time_limit", "selected": []}
    cert = benchmark.pedantic(certify, args=(c, claim, "highs"), rounds=3, iterations=1)
    lower, upper = cert.bracket["lower"], cert.bracket["upper"]
    assert cert.agrees is None and 0 < lower <= upper <= lower * 1.01
