"""Diagnostic ratios of an external system's store, all over ``OPT(union)`` (and the package OPT).

For a system S with memories M (cost ``c``), a budget B and ``F`` the union's objective:

``full_store``
    ``F(M)`` when ``c(M) <= B``; otherwise 0, with the reason (the store does not fit): its
    ratios are then 0 whatever the OPT, as ``memaudit score`` scores an infeasible store.
``recency_pruned``
    Newest first (``recency_rank`` descending), each memory kept when it still fits: what a
    store that forgets its oldest memories keeps.
``salience_pruned``
    By salience density ``(s/max(1,c), s, -c, id)``, memories with ``s <= 0`` skipped, first
    fit (the MEMAUDIT artifact's rule). Salience comes from the arbiter, never from labels.
``upper_pruned`` (exact)
    ``max {F(X) : X subset of M, c(X) <= B}``, solved by the exact branch-and-bound on the
    sub-package of S's memories: the best the system could do *with what it extracted*,
    i.e. its extraction ceiling.
``upper_pruned_greedy``
    The artifact's estimate of that ceiling: repeatedly add the fitting memory of largest
    ``F(m | X) / max(1, c_m)`` (first in export order on ties) while it gains more than
    ``1e-12``. It can fall short of the exact ceiling; both are reported.

Each value ``v`` is reported as ``v / OPT(union)`` (``*_ratio``; 1 when ``OPT(union)`` is 0
and so is ``v``, for a store that fits the budget) and ``v / OPT(package)`` (``*_ratio_over_package_opt``; above 1 when the
system holds value the package's candidates cannot express). ``upper_pruned_ratio`` measures
extraction quality; ``*_selection_quality = v / upper_pruned`` measures selection quality
given the extraction; it is ``null`` (reason ``no memories``) for a system without memories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UsageError
from ..evaluate.scoring import ratio_of
from ..model.compiled import CompiledPackage, compile_package
from ..model.package import Package
from ..solve.exact import RESULT_FORMAT
from .union import (
    base_package,
    check_own_groups,
    check_union,
    system_candidates,
    system_package,
    union_systems,
)

GAIN_EPSILON = 1e-12

#: Selection quality: a pruned store's value over the exact extraction ceiling.
QUALITY = {
    "recency_selection_quality": "recency_pruned",
    "salience_selection_quality": "salience_pruned",
    "greedy_upper_quality": "upper_pruned_greedy",
}

#: The store variants reported per system, in report order.
VARIANTS = ("full_store", "recency_pruned", "salience_pruned", "upper_pruned", "upper_pruned_greedy")


@dataclass(frozen=True)
class Optimum:
    """What the exact solver reported for one (package, budget)."""

    value: float
    upper_bound: float
    status: str
    proven_optimal: bool
    selected: list[str]
    cost: float


Solver = Callable[[dict[str, Any], list[float], "float | None"], list[Optimum]]


def exact_solver(package: dict[str, Any], budgets: list[float], time_limit: float | None) -> list[Optimum]:
    """``OPT`` at each budget from :func:`memaudit_fast.solve.exact.solve`."""
    from ..solve.exact import solve

    results = solve(package, budgets=budgets, time_limit=time_limit)
    if not isinstance(results, list):
        results = [results]
    return [
        Optimum(float(r.value), float(r.upper_bound), str(r.status), bool(r.proven_optimal),
                [str(s) for s in r.selected], float(r.cost))
        for r in results
    ]


def first_fit(order: Sequence[int], cost: np.ndarray, budget: float) -> list[int]:
    chosen, used = [], 0.0
    for i in order:
        if used + cost[i] <= budget:
            chosen.append(i)
            used += cost[i]
    return chosen


def greedy_upper(cp: CompiledPackage, pool: Sequence[int], budget: float) -> list[int]:
    """The artifact's oracle-density pruning over ``pool`` (see the module docstring)."""
    chosen: list[int] = []
    remaining = list(pool)
    used = 0.0
    while remaining:
        gains = cp.problem.marginal_gains(np.asarray(chosen, dtype=np.int32))
        best, best_density = -1, -math.inf
        for i in remaining:
            if used + cp.cost[i] > budget:
                continue
            density = gains[i] / max(1.0, cp.cost[i])
            if density > best_density:
                best, best_density = i, density
        if best < 0 or gains[best] <= GAIN_EPSILON:
            break
        chosen.append(best)
        used += cp.cost[best]
        remaining.remove(best)
    return chosen


def _salience_order(cands: list[dict[str, Any]], index: dict[str, int], cost: np.ndarray) -> list[int]:
    keyed = []
    for c in cands:
        s = float(c.get("salience") or 0.0)  # (null: no salience, as when it is left out)
        if s <= 0:
            continue
        i = index[c["candidate_id"]]
        keyed.append(((-(s / max(1.0, cost[i])), -s, cost[i], c["candidate_id"]), i))
    return [i for _, i in sorted(keyed)]


def score_store(
    union: Package | dict[str, Any],
    budgets: Sequence[float] | None = None,
    systems: Sequence[str] | None = None,
    *,
    time_limit: float | None = None,
    solver: Solver | None = None,
) -> list[dict[str, Any]]:
    """One ``memaudit.result/1``-like record per budget, with a ``systems`` block.

    Parameters
    ----------
    union:
        A union package (from :func:`~memaudit_fast.systems.union.build_union`).
    budgets:
        Budgets to score (default: the package's own).
    systems:
        Names of the systems to report (default: all in the union).
    time_limit:
        Per exact solve (union, package, each system's sub-package); a stopped solve reports
        its incumbent with ``proven_optimal: false``.
    solver:
        Replaces the exact solver (tests); ``(package_dict, budgets, time_limit) -> [Optimum]``.
    """
    pkg = union if isinstance(union, Package) else Package.from_dict(union)
    data = pkg.data
    check_union(data, pkg.source)
    check_own_groups(pkg)
    names = union_systems(data, systems)
    budget_list = [float(b) for b in (budgets if budgets is not None else pkg.budgets)]
    if not budget_list:
        raise UsageError("this union has no budgets; pass budgets (--budgets)")
    solve = solver or exact_solver
    cp = compile_package(pkg)
    index = cp.index_of()

    opt_union = solve(data, budget_list, time_limit)
    opt_package = solve(base_package(data), budget_list, time_limit)
    per_system: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        per_system[name] = _system_blocks(cp, index, data, name, budget_list, opt_union, opt_package, solve, time_limit)

    records = []
    for k, budget in enumerate(budget_list):
        u, p = opt_union[k], opt_package[k]
        records.append({
            "format": RESULT_FORMAT,
            "package_id": pkg.package_id,
            "budget": int(budget) if budget.is_integer() else budget,
            "saturation": pkg.saturation_name,
            "weights_rule": pkg.weights_rule,
            "opt": u.value,
            "upper_bound": u.upper_bound,
            "gap": max(0.0, u.upper_bound - u.value),
            "status": u.status,
            "proven_optimal": u.proven_optimal,
            "selected": u.selected,
            "cost": u.cost,
            "package_opt": {"value": p.value, "upper_bound": p.upper_bound, "status": p.status,
                            "proven_optimal": p.proven_optimal},
            "systems": {name: per_system[name][k] for name in names},
        })
    return records


def _system_blocks(
    cp: CompiledPackage,
    index: dict[str, int],
    data: dict[str, Any],
    name: str,
    budgets: list[float],
    opt_union: list[Optimum],
    opt_package: list[Optimum],
    solve: Solver,
    time_limit: float | None,
) -> list[dict[str, Any]]:
    cands = system_candidates(data, name)
    pool = [index[c["candidate_id"]] for c in cands]
    store_cost = float(sum(cp.cost[i] for i in pool))
    newest_first = [index[c["candidate_id"]] for c in sorted(cands, key=lambda c: -int(c["recency_rank"]))]
    has_salience = bool(cands) and all("salience" in c for c in cands)
    salience_order = _salience_order(cands, index, cp.cost) if has_salience else []
    exact = solve(system_package(data, name), budgets, time_limit) if cands else [
        Optimum(0.0, 0.0, "optimal", True, [], 0.0) for _ in budgets
    ]
    value_of = cp.objective
    blocks = []
    for k, budget in enumerate(budgets):
        reasons: dict[str, str] = {}
        values: dict[str, float | None] = {}
        selected: dict[str, list[int]] = {}
        if store_cost <= budget:
            selected["full_store"] = pool
            values["full_store"] = value_of(pool) if pool else 0.0
        else:
            values["full_store"] = 0.0
            reasons["full_store_ratio"] = f"the whole store costs {store_cost:g}, above the budget {budget:g}"
        selected["recency_pruned"] = first_fit(newest_first, cp.cost, budget)
        if has_salience:
            selected["salience_pruned"] = first_fit(salience_order, cp.cost, budget)
        else:
            values["salience_pruned"] = None
            reasons["salience_pruned_ratio"] = (
                "no memories" if not cands else
                "no salience in this union (the package has no questions to rate memories against)"
            )
        selected["upper_pruned_greedy"] = greedy_upper(cp, pool, budget)
        for key in ("recency_pruned", "salience_pruned", "upper_pruned_greedy"):
            if key in selected:
                values[key] = value_of(selected[key]) if selected[key] else 0.0
        upper = exact[k]
        values["upper_pruned"] = upper.value
        if not upper.proven_optimal:
            reasons["upper_pruned_ratio"] = (
                f"exact solve stopped ({upper.status}); value is the incumbent, bound {upper.upper_bound:g}"
            )

        block: dict[str, Any] = {"memories": len(pool), "store_cost": store_cost}
        u_opt, p_opt = opt_union[k].value, opt_package[k].value
        for key in VARIANTS:
            v = values.get(key)
            block[f"{key}_value"] = v
            if key == "full_store" and "full_store_ratio" in reasons:
                # A store over the budget scores 0, as 'memaudit score' scores an infeasible
                # store, even when OPT is 0 (where every store that fits scores 1).
                block["full_store_ratio"] = block["full_store_ratio_over_package_opt"] = 0.0
                continue
            block[f"{key}_ratio"] = None if v is None else ratio_of(v, u_opt)
            if v is None:
                block[f"{key}_ratio_over_package_opt"] = None
            else:
                over = ratio_of(v, p_opt)
                block[f"{key}_ratio_over_package_opt"] = over
                if over is None:
                    reasons.setdefault(f"{key}_ratio_over_package_opt", "the package's own OPT is 0")
        for out_key, key in QUALITY.items():
            v = values.get(key)
            if not cands:  # nothing was extracted: no selection to judge (not 0 of 0 = 1)
                block[out_key] = None
                reasons[out_key] = "no memories"
            else:
                block[out_key] = None if v is None else ratio_of(v, upper.value)
        block["upper_pruned_status"] = upper.status
        block["upper_pruned_proven_optimal"] = upper.proven_optimal
        block["upper_pruned_upper_bound"] = upper.upper_bound
        block["selected"] = {
            key: [cp.candidate_ids[i] for i in sel] for key, sel in selected.items()
        }
        block["selected"]["upper_pruned"] = upper.selected
        block["reasons"] = reasons
        blocks.append(block)
    return blocks
