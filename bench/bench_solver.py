"""The exact solver against its peers, in one run: HiGHS on the same MILP (mip_rel_gap = 0)
and a plain-Python branch-and-bound in the style of the MEMAUDIT artifact (additive bound).

Each case benchmarks the C++ solver with pytest-benchmark and times each peer once in the
same test (peers are slow; each has a time limit and is reported as such when it stops).
The optimum is asserted against every peer that proves one.

    python -m pytest bench/bench_solver.py -s --benchmark-columns=median,rounds
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from memaudit_fast import _core
from reference import milp_optimum, synthetic_instance
from reference_bb import solve_reference

OURS_LIMIT = 60.0
HIGHS_LIMIT = 60.0
PYTHON_LIMIT = 20.0
BUDGET_FRACTION = 0.05
CASES = [
    ("memaudit", 20), ("memaudit", 100), ("memaudit", 300), ("memaudit", 1000),
    ("memaudit", 3000),
    ("tie_heavy", 300), ("tie_heavy", 3000),
    ("redundant", 1000),
    ("dense", 300), ("dense", 1000),
]
SUMMARY: list[str] = []


@pytest.mark.parametrize(("kind", "n"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_solver_against_peers(benchmark, kind, n):
    inst = synthetic_instance(n, seed=0, kind=kind)
    budget = float(round(BUDGET_FRACTION * float(inst.cost.sum())))
    problem = inst.problem()

    def run():
        return _core.solve(problem, [budget], time_limit=OURS_LIMIT)[0]

    result = benchmark.pedantic(run, rounds=3 if n <= 1000 else 1, iterations=1, warmup_rounds=0)
    ours = benchmark.stats.stats.median
    assert result.upper_bound >= result.value
    proof = "" if result.status == "optimal" else f" [{result.status}, gap {result.gap:.3%}]"
    line = [f"{kind:9s} n={n:5d} B={budget:g} OPT={result.value:.6g} ours {ours * 1e3:9.2f} ms{proof}"]
    # Process-wide peak so far, read before any peer runs (cases grow, so it tracks ours).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    start = time.perf_counter()
    status, value, bound = milp_optimum(inst, budget, time_limit=HIGHS_LIMIT)
    highs = time.perf_counter() - start
    if status == "Optimal" and result.status == "optimal":
        assert value == pytest.approx(result.value, rel=1e-6, abs=1e-6)
        line.append(f"HiGHS {highs:8.2f} s ({highs / ours:8.1f}x)")
        benchmark.extra_info["highs_ratio"] = highs / ours
    elif status == "Optimal":
        assert result.value <= value + 1e-6 * max(1.0, value) and result.upper_bound >= value - 1e-6
        line.append(f"HiGHS {highs:8.2f} s (ours not proven)")
    else:
        assert bound >= result.value - 1e-6 * max(1.0, result.value)
        line.append(f"HiGHS >{HIGHS_LIMIT:.0f} s ({status}, gap {(bound - value) / max(bound, 1e-12):.2%})")
        benchmark.extra_info["highs_ratio"] = f">{HIGHS_LIMIT / ours:.0f}"

    if n <= 1000:
        ref = solve_reference(inst, budget, time_limit=PYTHON_LIMIT)
        if ref.status == "optimal" and result.status == "optimal":
            assert ref.value == pytest.approx(result.value, rel=1e-9, abs=1e-9)
            line.append(f"Python {ref.seconds:8.2f} s ({ref.seconds / ours:8.0f}x)")
            benchmark.extra_info["python_ratio"] = ref.seconds / ours
        else:
            assert ref.value <= result.upper_bound + 1e-9
            line.append(f"Python >{PYTHON_LIMIT:.0f} s (incumbent {ref.value / max(result.value, 1e-12):.3f} of ours)")
    line.append(f"nodes {result.nodes} peak RSS {rss:.0f} MB nnz {problem_nnz(inst)}")
    SUMMARY.append("  ".join(line))
    print("\n" + SUMMARY[-1])


def problem_nnz(inst) -> int:
    return int(inst.indptr[-1])
