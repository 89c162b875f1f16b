"""The exact solver against its peers, in one run: HiGHS on the same MILP (``mip_rel_gap = 0``)
and a plain-Python branch-and-bound in the style of the MEMAUDIT artifact (additive bound).

Cases: MEMAUDIT-Small packages at their own budgets (2, 4, 8, 16), the same generator scaled
up to ~10,000 candidates, and synthetic packages of 300 to 10,000 candidates (MEMAUDIT-like,
tie-heavy with integer costs and equal weights, redundant with whole groups repeated, dense
coverage) at a tight budget (0.5% of the total cost) and, up to a few thousand candidates, a
larger one (2%). Each case benchmarks the C++ solver with pytest-benchmark (all budgets of
the case in one sweep call) and times each peer once in the same test; peers have time limits
and are reported as such when they stop. Every case asserts its optimum against every peer
that proves one, and the honesty of its bound against every peer. A summary with the ratios
and their medians is printed at the end.

    python -m pytest bench/bench_solver.py --benchmark-columns=median,rounds

The last test checks that peak memory does not grow with the number of search nodes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memaudit_fast import _core
from memaudit_fast.solve.exact import DEFAULT_HANDOFF_AFTER
from oracles.branch_and_bound import solve_reference
from oracles.exact import (
    Instance,
    instance_of,
    is_feasible,
    milp_optimum,
    objective,
    package_from_instance,
    synthetic_instance,
)

OURS_LIMIT = 30.0  # seconds per budget
HIGHS_LIMIT = 60.0  # seconds per budget
PYTHON_LIMIT = 10.0  # seconds per budget
SOLVER_ROWS: list[dict[str, Any]] = []  # read by conftest.py for the summary


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[Instance, list[float]]]
    python_peer: bool = False  # the Python reference only where it has a chance


def instance_from_package(data: dict) -> Instance:
    """Arrays of a package dict, through the project's own compiler."""
    from memaudit_fast.model.compiled import compile_package

    return instance_of(compile_package(data))


def small_case(distribution: str, scale: int = 1) -> Callable[[], tuple[Instance, list[float]]]:
    def build() -> tuple[Instance, list[float]]:
        from memaudit_fast.suites.small import generate_package

        data = generate_package(distribution, seed=0, scale=scale)
        inst = instance_from_package(data)
        if scale == 1:
            return inst, [float(b) for b in data["budgets"]]
        return inst, [64.0, float(round(0.01 * inst.cost.sum()))]

    return build


def synthetic_case(kind: str, n: int, fraction: float) -> Callable[[], tuple[Instance, list[float]]]:
    def build() -> tuple[Instance, list[float]]:
        inst = synthetic_instance(n, seed=0, kind=kind)
        return inst, [float(max(4.0, round(fraction * inst.cost.sum())))]

    return build


SMALL = ["base", "update_chain", "temporal_interval", "density_trap", "scope_shift",
         "summary_tradeoff", "redundancy_heavy", "abstention_hard"]
CASES = (
    [Case(f"small/{d}", small_case(d), python_peer=True) for d in SMALL]
    + [Case(f"small-x{s}/{d}", small_case(d, s)) for d, s in
       [("base", 10), ("base", 50), ("redundancy_heavy", 50), ("base", 200), ("density_trap", 200),
        ("update_chain", 200)]]
    + [Case(f"{k}-{n}@{f:.1%}", synthetic_case(k, n, f), python_peer=n <= 300) for k, n, f in [
        ("memaudit", 300, 0.005), ("memaudit", 300, 0.02), ("memaudit", 1000, 0.005), ("memaudit", 1000, 0.02),
        ("memaudit", 3000, 0.005), ("memaudit", 10000, 0.005),
        ("tie_heavy", 1000, 0.005), ("tie_heavy", 3000, 0.005), ("tie_heavy", 3000, 0.02), ("tie_heavy", 10000, 0.005),
        ("redundant", 1000, 0.02), ("redundant", 3000, 0.005), ("redundant", 3000, 0.02), ("redundant", 10000, 0.005),
        ("dense", 300, 0.005), ("dense", 300, 0.02), ("dense", 1000, 0.005), ("dense", 1000, 0.02),
        # Known weak spots, kept in view: large budgets on large packages, where HiGHS's cuts
        # close LP gaps that the branch-and-bound has to enumerate.
        ("memaudit", 3000, 0.02), ("dense", 3000, 0.005),
    ]]
)


def check_store(inst: Instance, budget: float, result: Any) -> None:
    selected = [int(u) for u in result.selected]
    assert is_feasible(inst, selected, budget)
    assert result.value == pytest.approx(objective(inst, selected), rel=1e-9, abs=1e-9)
    assert result.value <= result.upper_bound


def rounds_for(problem: Any, budgets: list[float]) -> int:
    """More rounds for fast cases (a cheap capped probe decides)."""
    start = time.perf_counter()
    probe = _core.solve(problem, budgets, time_limit=0.2)
    fast = all(r.status == "optimal" for r in probe) and time.perf_counter() - start < 0.05
    return 7 if fast else 1


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_solver_against_peers(benchmark: Any, case: Case) -> None:
    inst, budgets = case.build()
    problem = inst.problem()

    def run() -> list[Any]:
        return _core.solve(problem, budgets, time_limit=OURS_LIMIT)

    results = benchmark.pedantic(run, rounds=rounds_for(problem, budgets), iterations=1, warmup_rounds=0)
    ours = benchmark.stats.stats.median
    for budget, result in zip(budgets, results):
        check_store(inst, budget, result)

    highs_seconds, highs_proved = 0.0, True
    for budget, result in zip(budgets, results):
        start = time.perf_counter()
        status, value, bound = milp_optimum(inst, budget, time_limit=HIGHS_LIMIT)
        highs_seconds += time.perf_counter() - start
        tol = 1e-6 * max(1.0, abs(value))
        if status == "Optimal":
            assert result.upper_bound >= value - tol and result.value <= value + tol
            if result.status == "optimal":
                assert result.value == pytest.approx(value, rel=1e-6, abs=1e-6)
        else:
            highs_proved = False
            assert result.value <= bound + tol and result.upper_bound >= value - tol

    python_seconds = None
    python_proved = False
    if case.python_peer:
        python_seconds, python_proved = 0.0, True
        for budget, result in zip(budgets, results):
            ref = solve_reference(inst, budget, time_limit=PYTHON_LIMIT)
            python_seconds += ref.seconds
            assert ref.value <= result.upper_bound + 1e-9 * max(1.0, ref.value)
            if ref.status == "optimal":
                assert result.upper_bound >= ref.value - 1e-9 * max(1.0, ref.value)
                if result.status == "optimal":
                    assert result.value == pytest.approx(ref.value, rel=1e-9, abs=1e-9)
            else:
                python_proved = False
                break  # the remaining budgets would time out too

    statuses = {r.status for r in results}
    row = {
        "case": case.name, "budgets": len(budgets), "ours_seconds": ours,
        "status": "optimal" if statuses == {"optimal"} else "/".join(sorted(statuses)),
        "highs_seconds": highs_seconds, "highs_proved": highs_proved,
        "python_seconds": python_seconds, "python_proved": python_proved,
        "candidates": inst.num_candidates, "nonzeros": int(inst.indptr[-1]),
        "nodes": sum(r.nodes for r in results),
    }
    benchmark.extra_info.update({k: v for k, v in row.items() if k != "case"})
    SOLVER_ROWS.append(row)


MEMORY_PROBE = """
import json, sys
from oracles.exact import synthetic_instance
from memaudit_fast import _core

def status_kb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

inst = synthetic_instance(10000, seed=0, kind="memaudit")
problem = inst.problem()
budget = float(round(0.02 * inst.cost.sum()))  # hard: the search does not finish
with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM) to the current RSS
    f.write("5")
before = status_kb("VmRSS:")
# Without the root cuts, so that the search runs the nodes asked for.
(result,) = _core.solve(problem, [budget], node_limit=int(sys.argv[1]), time_limit=120, cut_rounds=0)
peak = status_kb("VmHWM:")
print(json.dumps({"nodes": result.nodes, "before_kb": before, "peak_kb": peak,
                  "nonzeros": int(inst.indptr[-1]), "candidates": inst.num_candidates}))
"""


def memory_probe(node_limit: int) -> dict:
    tests = Path(__file__).resolve().parents[1] / "tests"
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(node_limit)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(tests)}, timeout=300,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_memory_does_not_grow_with_nodes() -> None:
    few, many = memory_probe(2_000), memory_probe(100_000)
    assert many["nodes"] >= 20 * few["nodes"]
    grown_few = few["peak_kb"] - few["before_kb"]
    grown_many = many["peak_kb"] - many["before_kb"]
    print(f"\npeak RSS growth while solving {many['candidates']} candidates / {many['nonzeros']} non-zeros: "
          f"+{grown_few / 1024:.1f} MB for {few['nodes']} nodes, +{grown_many / 1024:.1f} MB for "
          f"{many['nodes']} nodes (process RSS before the solve {many['before_kb'] / 1024:.0f} MB)")
    # 50x the nodes may not cost more than a few MB more (search state is a path, not a tree).
    assert grown_many - grown_few < 8 * 1024


# ---------------------------------------------------------------------------------------------
# Large-budget suite: 1,000 to 10,000 candidates at 2% to 40% of the total candidate cost, the
# regime where the LP gap is real. "ours" is the product's default path, solve(finish="highs"):
# the branch-and-bound, and for a budget it has not proven after HANDOFF_AFTER seconds, HiGHS in
# a second thread beside it (from no start store, on the candidates the root left open once it
# is done); the first proof wins and the result's proved_by says which engine it was. HiGHS
# and Gurobi (where its pip licence takes the model) solve the original MILP alone, one thread.
# Families: the synthetic ones above, MEMAUDIT-Small scaled up, an entity timeline made by a
# generator of its own (tests/oracles/timeline.py: attributes whose values change), plain and
# tie-heavy, and a long dialogue (tests/oracles/dialogue.py: query-demand weights, partial covers
# from turn and session summaries), costs in words and in the byte model, and entity profiles
# (tests/oracles/profile.py: recency-weighted values, relations, stale values kept in part by
# updates), plain and tie-heavy, a family added after the solver's tuning.
# MEMAUDIT_BENCH_LARGE=full adds the 10,000-candidate packages (long: HiGHS alone may take an
# hour over them). MEMAUDIT_BENCH_SEED=k draws every family's packages from seed k instead of 0:
# packages the solver was not tuned on, of the same families.

LARGE_FRACTIONS = (0.02, 0.05, 0.10, 0.20, 0.40)
HANDOFF_AFTER = DEFAULT_HANDOFF_AFTER
LARGE_OURS_LIMIT = 60.0
# A case whose first runs both end within LARGE_REPEAT_UNDER seconds is timed LARGE_RUNS times
# in all, ours and HiGHS alternating, and the medians are compared: on this shared 2-core
# machine one run of HiGHS alone on the same model ranged 0.29-0.48 s (dialogue in bytes,
# 1,001 candidates at 10%), so a ratio of single runs can be 1.6x either way by chance alone.
LARGE_RUNS = 3
LARGE_REPEAT_UNDER = 5.0
LARGE_ROWS: list[dict[str, Any]] = []  # read by conftest.py for the summary


LARGE_SEED = int(os.environ.get("MEMAUDIT_BENCH_SEED", "0"))


def large_package(family: str, n: int, seed: int = LARGE_SEED) -> dict:
    if family == "small":
        from memaudit_fast.suites.small import generate_package

        # scale 25 / 70 / 210: about 1,200 / 3,300 / 10,000 candidates
        return generate_package("base", seed=seed, scale={1000: 25, 3000: 70, 10000: 210}[n])
    if family.startswith("timeline"):
        from oracles.timeline import timeline_package

        return timeline_package(n, seed=seed, tie=family == "timeline_tie")
    if family.startswith("profile"):
        from oracles.profile import profile_package

        return profile_package(n, seed=seed, tie=family == "profile_tie")
    if family.startswith("dialogue"):
        from oracles.dialogue import dialogue_package

        return dialogue_package(n, seed=seed, bytes_cost=family == "dialogue_bytes")
    return package_from_instance(synthetic_instance(n, seed=seed, kind=family), f"{family}-{n}-{seed}")


LARGE_SIZES = (1000, 3000, 10000) if os.environ.get("MEMAUDIT_BENCH_LARGE") == "full" else (1000, 3000)
LARGE_FAMILIES = ("memaudit", "tie_heavy", "redundant", "dense", "small", "timeline", "timeline_tie",
                  "dialogue", "dialogue_bytes", "profile", "profile_tie")
LARGE_CASES = [(family, n, f) for family in LARGE_FAMILIES
               for n in LARGE_SIZES for f in LARGE_FRACTIONS]
_LARGE_CACHE: dict[tuple[str, int], tuple[Any, Instance]] = {}


def _large(family: str, n: int) -> tuple[Any, Instance]:
    from memaudit_fast.model.compiled import compile_package

    if (family, n) not in _LARGE_CACHE:
        _LARGE_CACHE.clear()  # one package in memory at a time
        data = large_package(family, n)
        _LARGE_CACHE[family, n] = (compile_package(data), instance_from_package(data))
    return _LARGE_CACHE[family, n]


def gurobi_seconds(compiled: Any, budget: float, time_limit: float) -> tuple[float | None, bool, str]:
    """Gurobi on the same MILP, when installed and its licence takes the model's size."""
    from memaudit_fast.solve.backends import GurobiSession, GurobiUnavailable, solve_gurobi
    from memaudit_fast.solve.milp import build_milp

    try:
        out = solve_gurobi(build_milp(compiled, budget), GurobiSession(), time_limit=time_limit)
    except GurobiUnavailable as exc:
        return None, False, str(exc)
    return out.seconds, out.status == "optimal", ""


@pytest.mark.parametrize("case", LARGE_CASES, ids=[f"{f}-{n}@{b:.0%}" for f, n, b in LARGE_CASES])
def test_large_budget_against_highs(benchmark: Any, case: tuple[str, int, float]) -> None:
    from memaudit_fast.solve.exact import solve

    family, n, fraction = case
    compiled, inst = _large(family, n)
    budget = float(max(4.0, round(fraction * float(compiled.cost.sum()))))

    def run() -> Any:
        return solve(compiled, budget=budget, time_limit=LARGE_OURS_LIMIT, finish="highs", handoff_after=HANDOFF_AFTER)

    def run_highs() -> tuple[float, tuple[str, float, float]]:
        start = time.perf_counter()
        out = milp_optimum(inst, budget, time_limit=HIGHS_LIMIT)
        return time.perf_counter() - start, out

    result = benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    ours_runs = [benchmark.stats.stats.median]
    highs_first, (status, value, bound) = run_highs()
    highs_runs = [highs_first]
    results = [result]
    if max(ours_runs[0], highs_first) <= LARGE_REPEAT_UNDER:
        for _ in range(LARGE_RUNS - 1):
            start = time.perf_counter()
            results.append(run())
            ours_runs.append(time.perf_counter() - start)
            highs_runs.append(run_highs()[0])
    ours, highs = float(np.median(ours_runs)), float(np.median(highs_runs))
    index = compiled.index_of()
    for result in results:
        selected = [index[c] for c in result.selected]
        assert is_feasible(inst, selected, budget)
        assert result.value == pytest.approx(objective(inst, selected), rel=1e-9, abs=1e-9)
    # The status and engine of the run of median time (a tie-break by order).
    result = results[int(np.argsort(ours_runs, kind="stable")[(len(ours_runs) - 1) // 2])]
    tol = 1e-6 * max(1.0, abs(value))
    if status == "Optimal":
        assert result.upper_bound >= value - tol and result.value <= value + tol
        if result.status == "optimal":
            assert result.value == pytest.approx(value, rel=1e-6, abs=1e-6)
    else:
        assert result.value <= bound + tol and result.upper_bound >= value - tol
    g_seconds, g_proved, g_why = gurobi_seconds(compiled, budget, HIGHS_LIMIT)
    row = {
        "case": f"{family}-{n}@{fraction:.0%}", "candidates": compiled.num_candidates, "ours_seconds": ours,
        "status": result.status, "proved_by": result.proved_by or "-", "highs_seconds": highs,
        "highs_proved": status == "Optimal", "gurobi_seconds": g_seconds, "gurobi_proved": g_proved,
        "gurobi_skipped": g_why, "nodes": result.nodes, "runs": len(ours_runs),
        "ours_runs": ours_runs, "highs_runs": highs_runs, "proved_by_runs": [r.proved_by or "-" for r in results],
    }
    benchmark.extra_info.update({k: v for k, v in row.items() if k != "case"})
    LARGE_ROWS.append(row)
