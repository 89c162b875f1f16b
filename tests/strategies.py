"""Hypothesis strategies: valid packages (single-file dicts) and their array form (:class:`Instance`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from oracles.exact import CAP1, LINEAR, LOG1P, PWL, Instance, saturation_table

SATURATIONS = st.sampled_from(
    ["cap1", "linear", "log1p", {"pwl": [[0, 0], [0.5, 0.8], [1.5, 1.3], [3, 1.5]]},
     {"pwl": [[0, 0], [1, 1]]}]
)


@st.composite
def packages(draw: Any, max_candidates: int = 10, max_units: int = 6, extras: bool = True) -> dict:
    n_units = draw(st.integers(1, max_units))
    n_groups = draw(st.integers(1, max_candidates))
    n_cands = draw(st.integers(1, max_candidates))
    explicit = draw(st.booleans())
    units = []
    for r in range(n_units):
        unit: dict[str, Any] = {"unit_id": f"u{r}", "kind": "current_truth"}
        if explicit:
            unit["weight"] = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.25]))
        if draw(st.integers(0, 9)) == 0:
            unit["saturation"] = draw(SATURATIONS)
        units.append(unit)
    exps = [{"experience_id": f"e{g}", "timestamp": draw(st.integers(0, 5)), "text": f"turn {g}"}
            for g in range(n_groups)]
    cands = []
    for i in range(n_cands):
        g = draw(st.integers(0, n_groups - 1))
        cov_units = draw(st.lists(st.integers(0, n_units - 1), max_size=3, unique=True))
        cand: dict[str, Any] = {
            "candidate_id": f"c{i}",
            "experience_id": f"e{g}",
            "representation": draw(st.sampled_from(["raw_span", "fact", "summary", "update", "tombstone"])),
            "cost": draw(st.sampled_from([0, 1, 1, 2, 3, 2.5])),
            "coverage": {f"u{r}": draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5])) for r in cov_units},
        }
        if extras and draw(st.booleans()):
            cand["x_note"] = {"nested": [1, "two"]}
        cands.append(cand)
    queries = [{"query_id": f"q{k}", "text": "?",
                "required_unit_ids": draw(st.lists(st.sampled_from([u["unit_id"] for u in units]), min_size=1, max_size=2, unique=True))}
               for k in range(draw(st.integers(0 if explicit else 1, 3)))]
    data: dict[str, Any] = {
        "format": "memaudit.package/1",
        "package_id": f"hyp/{draw(st.integers(0, 10**6))}",
        "objective": {"saturation": draw(SATURATIONS)},
        "budgets": [draw(st.sampled_from([0, 1, 2, 3, 5, 8]))],
        "experiences": exps,
        "units": units,
        "candidates": cands,
        "queries": queries,
    }
    if extras and draw(st.booleans()):
        data["meta"] = {"note": "kept", "list": [1, 2]}
        data["x_unknown_top"] = {"a": 1}
    return data


@st.composite
def instances(draw: Any, max_candidates: int = 12, max_units: int = 6) -> Instance:
    """Arrays of a random package: ties, zero costs and weights, empty groups, mixed h."""
    n = draw(st.integers(0, max_candidates))
    n_groups = draw(st.integers(1, max(1, n + 2)))  # some groups stay empty
    n_units = draw(st.integers(1, max_units))
    cost_pool = draw(st.sampled_from([[0, 1, 2, 3], [1, 1, 2], [0.5, 1.25, 2.0, 3.5], [1, 2, 4, 8]]))
    cover_pool = draw(st.sampled_from([[0.25, 0.5, 1.0], [1.0], [0.3, 0.7, 1.5, 2.0]]))
    cost = np.array([draw(st.sampled_from(cost_pool)) for _ in range(n)], dtype=np.float64)
    group_of = np.array([draw(st.integers(0, n_groups - 1)) for _ in range(n)], dtype=np.int32)
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    for _ in range(n):
        row = sorted(draw(st.sets(st.integers(0, n_units - 1), max_size=min(4, n_units))))
        indices += row
        values += [draw(st.sampled_from(cover_pool)) for _ in row]
        indptr.append(len(indices))
    weight = np.array([draw(st.sampled_from([0.0, 1.0, 1.0, 2.0, 3.5])) for _ in range(n_units)])
    kinds, zs, hs = saturation_table()
    family = draw(st.sampled_from(["cap1", "linear", "log1p", "pwl", "mixed"]))
    if family == "mixed":
        sat = [draw(st.sampled_from([CAP1, LINEAR, LOG1P, PWL])) for _ in range(n_units)]
    else:
        sat = [["cap1", "linear", "log1p", "pwl"].index(family)] * n_units
    return Instance(
        cost=cost, group_of=group_of, num_groups=n_groups, weight=weight,
        indptr=np.asarray(indptr, dtype=np.int64), indices=np.asarray(indices, dtype=np.int32),
        values=np.asarray(values), saturation_of=np.asarray(sat, dtype=np.int32),
        kinds=kinds, zs=zs, hs=hs,
    )


def with_amounts(data: dict, amounts: list[float], capacity: int = 1) -> dict:
    """``data`` with its coverage amounts replaced by ``amounts`` in turn (entry by entry) and
    its group capacity set (where > 1): packages whose amounts lie on chosen lattices."""
    k = 0
    for cand in data["candidates"]:
        for unit in cand["coverage"]:
            cand["coverage"][unit] = amounts[k % len(amounts)]
            k += 1
    if capacity > 1:
        data["objective"]["group_capacity"] = capacity
    return data
