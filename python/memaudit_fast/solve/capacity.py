"""Exact solving with a group capacity k > 1, by reduction to the one-per-group problem.

With capacity k a store may hold up to k candidates of each group G. The reduction replaces
every group by its **composites**: the subsets ``S`` of G with ``1 <= |S| <= k``, each a
candidate of cost ``c(S) = sum_{u in S} c_u`` and coverage ``a_S = sum_{u in S} a_u``, in one
group of capacity 1. The branch-and-bound then solves the reduced package unchanged.

Why it is exact. F depends on a store only through the summed coverage,
``F(X) = sum_r w_r h_r(sum_{u in X} a_ur)``, and a store with at most k candidates per group
is exactly a choice of one subset ``S_G`` (possibly empty) per group with ``|S_G| <= k``. The
map ``X -> {S_G}`` is a bijection between the stores feasible with capacity k and the stores
of the reduced package feasible with one composite per group, preserving cost (so the
budget) and F. Hence both have the same OPT, and an optimal composite store expands to an
optimal store; a proven upper bound of one is one of the other.

Two prunings keep that optimum: a composite with two or more members, one of which covers
nothing, has the value of the composite without that member at no smaller cost (costs are
>= 0), so it is dropped; a composite costing more than the largest budget solved can never
be stored. The number of composites grows like ``C(|G|, k)``: a reduction above
:data:`MAX_COMPOSITES` is refused with a pointer to the MILP certifier, which handles any k
directly (``sum_{u in G} x_u <= k``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _core
from ..errors import SolverError
from ..model.compiled import CompiledPackage, budget_limit

#: Composite candidates the reduction may create (over all groups).
MAX_COMPOSITES = 1_000_000
# Joins member ids into a composite's id; never inside a validated id's use here.
_SEP = "\x1f"


def reduce_group_capacity(compiled: CompiledPackage, max_budget: float = math.inf) -> tuple[CompiledPackage, list[tuple[int, ...]]]:
    """The capacity-1 package of composites, and the members (package indices) of each."""
    c = compiled
    k = int(c.group_capacity)
    limit = budget_limit(max_budget) if math.isfinite(max_budget) else math.inf
    members_of: dict[int, list[int]] = {}
    for i in range(c.num_candidates):
        members_of.setdefault(int(c.group_of[i]), []).append(i)
    covers = [int(c.indptr[i + 1]) > int(c.indptr[i]) for i in range(c.num_candidates)]

    composites: list[tuple[int, ...]] = []
    for g in sorted(members_of):
        group = members_of[g]
        for size in range(1, min(k, len(group)) + 1):
            for subset in itertools.combinations(group, size):
                if size > 1 and not all(covers[i] for i in subset):
                    continue
                if math.fsum(float(c.cost[i]) for i in subset) > limit:
                    continue
                composites.append(subset)
                if len(composites) > MAX_COMPOSITES:
                    raise SolverError(
                        f"group capacity {k} makes more than {MAX_COMPOSITES} composite candidates "
                        f"for the exact solver (package {c.package_id!r}); certify the budget with "
                        "the MILP instead (memaudit certify), which takes any capacity directly"
                    )

    cost = np.array([math.fsum(float(c.cost[i]) for i in s) for s in composites], dtype=np.float64)
    group_of = np.array([int(c.group_of[s[0]]) for s in composites], dtype=np.int32)
    indptr = np.zeros(len(composites) + 1, dtype=np.int64)
    indices: list[int] = []
    values: list[float] = []
    for j, subset in enumerate(composites):
        summed: dict[int, float] = {}
        for i in subset:
            for e in range(int(c.indptr[i]), int(c.indptr[i + 1])):
                r = int(c.indices[e])
                summed[r] = summed.get(r, 0.0) + float(c.values[e])
        for r in sorted(summed):
            indices.append(r)
            values.append(summed[r])
        indptr[j + 1] = len(indices)
    sats = c.saturations
    problem = _core.Problem(
        cost, group_of, len(c.group_ids), c.weight, indptr,
        np.array(indices, dtype=np.int32), np.array(values, dtype=np.float64), c.saturation_of,
        [_core.SaturationKind.__members__[s.name] for s in sats],
        [np.array([p[0] for p in s.points], dtype=np.float64) for s in sats],
        [np.array([p[1] for p in s.points], dtype=np.float64) for s in sats],
    )
    reduced = replace(
        c, problem=problem,
        candidate_ids=[_SEP.join(c.candidate_ids[i] for i in s) for s in composites],
        cost=cost, group_of=group_of, indptr=indptr,
        indices=np.array(indices, dtype=np.int32), values=np.array(values, dtype=np.float64),
        times=np.array([min(float(c.times[i]) for i in s) for s in composites], dtype=np.float64),
        representations=["+".join(c.representations[i] for i in s) for s in composites],
        group_capacity=1,
    )
    return reduced, composites


def solve_with_group_capacity(solve: Callable[..., Any], compiled: CompiledPackage, budget: Any = None,
                              budgets: Any = None, **options: Any) -> Any:
    """``solve`` (the exact solver) on the reduced package, results mapped back (see above)."""
    asked = [budget] if budget is not None else list(budgets) if budgets is not None else list(compiled.budgets)
    try:
        largest = max(float(b) for b in asked) if asked else math.inf
    except (TypeError, ValueError):
        largest = math.inf  # the solver reports the bad budget
    reduced, composites = reduce_group_capacity(compiled, largest if math.isfinite(largest) else math.inf)
    out = solve(reduced, budget, budgets=budgets, **options)
    index = {cid: j for j, cid in enumerate(reduced.candidate_ids)}
    ids = compiled.candidate_ids

    def back(result: Any) -> Any:
        chosen = sorted(i for cid in result.selected for i in composites[index[cid]])
        return replace(result, selected=tuple(ids[i] for i in chosen), group_capacity=compiled.group_capacity)

    return [back(r) for r in out] if isinstance(out, list) else back(out)
