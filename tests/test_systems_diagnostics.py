"""Diagnostic ratios of imported stores: full, recency-, salience- and upper-pruned over OPT(union)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.errors import UsageError
from memaudit_fast.systems import build_union, score_store
from memaudit_fast.systems.arbiter import Arbiter
from memaudit_fast.systems.diagnostics import exact_solver
from memaudit_fast.systems.records import ExportedMemory, SystemExport
from oracles.objective import brute_solver
from oracles.objective import objective as ref_objective

HAS_SOLVER = importlib.util.find_spec("memaudit_fast.solve.exact") is not None


class TableJudge:
    def __init__(self, table: dict[str, dict[str, float]], salience: dict[str, float] | None = None) -> None:
        self.table = table
        self.sal = salience or {}

    def config(self) -> dict[str, Any]:
        return {"judge": "table"}

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        return np.array([[self.table.get(m, {}).get(u, 0.0) for u in units] for m in memories]).reshape(
            len(memories), len(units))

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        return np.array([self.sal.get(m, 0.0) for m in memories]) if queries and self.sal else None


def base_package(weights: dict[str, float], *, queries: bool = True) -> dict[str, Any]:
    return {
        "format": "memaudit.package/1", "package_id": "t", "budgets": [6], "cost_model": "words",
        "units": [{"unit_id": u, "text": f"unit {u}", "weight": w} for u, w in weights.items()],
        "candidates": [{"candidate_id": "p0", "group": "g0", "text": "unit r1 partly", "cost": 5,
                        "coverage": {"r1": 0.5}}],
        "queries": [{"query_id": "q", "text": "what about r1?", "required_unit_ids": ["r1"]}] if queries else [],
    }


def make_union(weights: dict[str, float], memories: list[tuple[str, str, dict[str, float], str | None]],
               salience: dict[str, float] | None = None, *, queries: bool = True) -> Any:
    """A union with one system 'sys'; memories are (id, text, {unit: level}, time)."""
    from memaudit_fast.systems.records import parse_time

    table = {text: {f"unit {u}": v for u, v in cov.items()} for _, text, cov, _ in memories}
    export = SystemExport("mem0", "test", [
        ExportedMemory(mid, text, "memory", "active", t, parse_time(t) if t else None, i)
        for i, (mid, text, _, t) in enumerate(memories)
    ])
    return build_union(base_package(weights, queries=queries), export, Arbiter(TableJudge(table, salience)), name="sys")


def solver() -> Any:
    return None if HAS_SOLVER else brute_solver


def test_exact_upper_pruned_beats_the_greedy_estimate() -> None:
    # Density 9/4 of A leads the greedy; after it nothing else fits. B + C is worth 12.
    union = make_union({"r1": 9.0, "r2": 6.0, "r3": 6.0}, [
        ("A", "one two three four", {"r1": 1.0}, None),
        ("B", "five six seven", {"r2": 1.0}, None),
        ("C", "eight nine ten", {"r3": 1.0}, None),
    ])
    [rec] = score_store(union, [6], solver=solver())
    block = rec["systems"]["sys"]
    assert block["upper_pruned_greedy_value"] == 9.0
    assert block["upper_pruned_value"] == 12.0
    assert block["upper_pruned_greedy_ratio"] < block["upper_pruned_ratio"]
    assert sorted(block["selected"]["upper_pruned"]) == ["sys:B", "sys:C"]
    assert block["selected"]["upper_pruned_greedy"] == ["sys:A"]
    assert block["greedy_upper_quality"] == pytest.approx(0.75)
    assert rec["opt"] == 12.0 and block["upper_pruned_ratio"] == 1.0
    # The package alone reaches 4.5 (p0 half-covers r1): the system's ceiling is above it.
    assert rec["package_opt"]["value"] == 4.5
    assert block["upper_pruned_ratio_over_package_opt"] == pytest.approx(12 / 4.5)


def test_store_over_budget_scores_zero_with_the_reason() -> None:
    union = make_union({"r1": 9.0, "r2": 6.0, "r3": 6.0}, [
        ("A", "one two three four", {"r1": 1.0}, "2024-01-01"),
        ("B", "five six seven", {"r2": 1.0}, "2024-03-01"),
        ("C", "eight nine ten", {"r3": 1.0}, "2024-02-01"),
    ])
    tight, whole = score_store(union, [6, 10], solver=solver())
    block = tight["systems"]["sys"]
    assert block["store_cost"] == 10
    assert block["full_store_value"] == 0.0 and block["full_store_ratio"] == 0.0
    assert "10" in block["reasons"]["full_store_ratio"] and "6" in block["reasons"]["full_store_ratio"]
    # Recency keeps the newest memories that fit: B (March), then C (February); A does not fit.
    assert block["selected"]["recency_pruned"] == ["sys:B", "sys:C"]
    assert block["recency_pruned_value"] == 12.0
    fits = whole["systems"]["sys"]
    assert fits["full_store_value"] == 21.0 and "full_store_ratio" not in fits["reasons"]
    assert fits["full_store_ratio"] == pytest.approx(21.0 / whole["opt"])


def test_salience_pruned_follows_salience_density_and_needs_salience() -> None:
    memories = [
        ("A", "one two three four", {"r1": 1.0}, None),
        ("B", "five six seven", {"r2": 1.0}, None),
        ("C", "eight nine ten", {"r3": 1.0}, None),
    ]
    salience = {"one two three four": 0.9, "five six seven": 0.3, "eight nine ten": 0.0}
    union = make_union({"r1": 9.0, "r2": 6.0, "r3": 6.0}, memories, salience)
    [rec] = score_store(union, [7], solver=solver())
    block = rec["systems"]["sys"]
    # Densities 0.225 (A) > 0.1 (B); C has salience 0 and is never kept.
    assert block["selected"]["salience_pruned"] == ["sys:A", "sys:B"]
    assert block["salience_pruned_value"] == 15.0
    no_questions = make_union({"r1": 9.0, "r2": 6.0, "r3": 6.0}, memories, salience, queries=False)
    [rec2] = score_store(no_questions, [7], solver=solver())
    block2 = rec2["systems"]["sys"]
    assert block2["salience_pruned_ratio"] is None and "salience" in block2["reasons"]["salience_pruned_ratio"]


def test_zero_optimum_convention_and_unknown_system() -> None:
    union = make_union({"r1": 1.0}, [("A", "nothing useful here", {}, None)])
    [rec] = score_store(union, [0], solver=solver())
    block = rec["systems"]["sys"]
    assert rec["opt"] == 0.0
    assert block["recency_pruned_ratio"] == 1.0 and block["upper_pruned_ratio"] == 1.0
    with pytest.raises(UsageError, match="no system 'other'"):
        score_store(union, [1], ["other"], solver=solver())
    with pytest.raises(UsageError, match="imported system"):
        score_store(base_package({"r1": 1.0}), [1], solver=solver())


levels = st.sampled_from([0.0, 0.0, 0.5, 1.0])


@settings(max_examples=25)
@given(
    weights=st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.5]), min_size=2, max_size=4),
    mems=st.lists(st.tuples(st.integers(1, 5), st.lists(levels, min_size=4, max_size=4),
                            st.integers(0, 3)), min_size=1, max_size=5),
    budget=st.integers(0, 12),
)
def test_ratios_agree_with_a_brute_force_reference(weights: list[float], mems: list[Any], budget: int) -> None:
    units = {f"r{k}": w for k, w in enumerate(weights)}
    memories = []
    for i, (words, cov, day) in enumerate(mems):
        text = " ".join(f"w{i}x{j}" for j in range(words))
        memories.append((f"m{i}", text, {f"r{k}": cov[k] for k in range(len(weights)) if cov[k] > 0},
                         f"2024-01-0{day + 1}"))
    salience = {text: (i % 3) / 2 for i, (_, text, _, _) in enumerate(memories)}
    union = make_union(units, memories, salience)
    [rec] = score_store(union, [budget], solver=solver())
    block = rec["systems"]["sys"]
    data = union.data
    [ref_union] = brute_solver(data, [budget], None)
    sys_only = {**data, "candidates": [c for c in data["candidates"] if c.get("system") == "sys"]}
    [ref_upper] = brute_solver(sys_only, [budget], None)
    assert rec["opt"] == pytest.approx(ref_union.value)
    assert block["upper_pruned_value"] == pytest.approx(ref_upper.value)
    for key in ("recency_pruned", "upper_pruned_greedy", "salience_pruned"):
        chosen = block["selected"].get(key, [])
        cost = sum(c["cost"] for c in data["candidates"] if c["candidate_id"] in chosen)
        assert cost <= budget
        assert block[f"{key}_value"] == pytest.approx(ref_objective(data, chosen))
        assert block[f"{key}_value"] <= block["upper_pruned_value"] + 1e-9
    assert block["full_store_value"] <= block["upper_pruned_value"] + 1e-9
    assert block["upper_pruned_value"] <= rec["opt"] + 1e-9
    for key in ("full_store", "recency_pruned", "upper_pruned", "upper_pruned_greedy"):
        r = block[f"{key}_ratio"]
        assert r is not None and -1e-9 <= r <= 1 + 1e-9


@pytest.mark.skipif(not HAS_SOLVER, reason="the exact solver module is not in this tree yet")
def test_exact_solver_matches_brute_force() -> None:
    union = make_union({"r1": 9.0, "r2": 6.0, "r3": 6.0}, [
        ("A", "one two three four", {"r1": 1.0}, None),
        ("B", "five six seven", {"r2": 1.0, "r1": 0.5}, None),
        ("C", "eight nine ten", {"r3": 1.0}, None),
    ])
    data = json.loads(json.dumps(union.data))
    fast = exact_solver(data, [3, 6, 10], None)
    slow = brute_solver(data, [3, 6, 10], None)
    assert [round(f.value, 9) for f in fast] == [round(s.value, 9) for s in slow]
    assert all(f.proven_optimal for f in fast)


def test_empty_store_scores_zero_without_solving() -> None:
    union = make_union({"r1": 2.0}, [])
    [rec] = score_store(union, [5], solver=solver())
    block = rec["systems"]["sys"]
    assert block["memories"] == 0 and block["store_cost"] == 0.0
    assert block["full_store_value"] == 0.0 and block["upper_pruned_value"] == 0.0
    assert block["full_store_ratio"] == 0.0 and rec["opt"] == 1.0  # p0 half-covers r1 (weight 2)
    assert block["salience_pruned_ratio"] is None and block["reasons"]["salience_pruned_ratio"] == "no memories"
