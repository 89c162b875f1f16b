"""Hypothesis strategies for valid packages (single-file dicts)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

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
