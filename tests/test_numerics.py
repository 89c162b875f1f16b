"""Numerical robustness: extreme scales, exact ties, coverage at the cap, near-collinear PWL.

Each package is solved by the branch-and-bound and certified by the independent HiGHS MILP;
the two must agree within the certificate's stated tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from memaudit_fast.model.compiled import compile_package
from memaudit_fast.solve.certify import certify
from memaudit_fast.solve.exact import solve


def random_package(seed: int, *, weight_scale: float = 1.0, cost_scale: float = 1.0, saturation="cap1",
                   ties: bool = False, cap_boundary: bool = False, n: int = 40, units: int = 15) -> dict:
    rng = np.random.default_rng(seed)
    cands = []
    for i in range(n):
        cols = rng.choice(units, size=int(rng.integers(1, 4)), replace=False)
        if cap_boundary:
            values = [0.5 if rng.random() < 0.5 else 1.0 for _ in cols]  # sums land exactly on 1
        else:
            values = [float(rng.choice([0.25, 0.5, 0.75, 1.0])) for _ in cols]
        cost = 2.0 if ties else float(rng.integers(1, 6))
        cands.append({"candidate_id": f"c{i}", "group": f"g{i // 2}", "cost": cost * cost_scale,
                      "coverage": {f"u{int(r)}": v for r, v in zip(cols, values)}})
    weights = [1.0 if ties else float(rng.integers(1, 5)) for _ in range(units)]
    return {
        "format": "memaudit.package/1", "package_id": f"num/{seed}",
        "objective": {"saturation": saturation},
        "units": [{"unit_id": f"u{r}", "weight": w * weight_scale} for r, w in enumerate(weights)],
        "candidates": cands,
        "budgets": [b * cost_scale for b in (4.0, 9.0, 20.0)],
    }


CASES = {
    "huge-weights": {"weight_scale": 1e12},
    "tiny-weights": {"weight_scale": 1e-9},
    "huge-costs": {"cost_scale": 1e9},
    "tiny-costs": {"cost_scale": 1e-7},
    "exact-ties": {"ties": True},
    "cap-boundary": {"cap_boundary": True},
    "near-collinear-pwl": {"saturation": {"pwl": [[0, 0], [0.5, 0.5], [1.0, 0.9999999], [2.0, 1.9999997], [3.0, 2.4]]}},
    "linear-ties": {"saturation": "linear", "ties": True},
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_solver_agrees_with_milp_on_awkward_numbers(case, seed):
    compiled = compile_package(random_package(seed, **CASES[case]))
    for result in solve(compiled, budgets=compiled.budgets):
        assert result.status == "optimal"
        certificate = certify(compiled, result, solver="highs")
        assert certificate.agrees is True, (case, result.budget, certificate.to_dict())
        assert certificate.selection_feasible
