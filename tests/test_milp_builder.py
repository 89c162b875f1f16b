"""The MILP builder (array operations) against the reference built one unit at a time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.model.compiled import compile_package
from memaudit_fast.solve.milp import build_milp
from memaudit_fast.suites.small import generate_package
from oracles.milp_reference import build_milp_reference
from strategies import packages


def same_model(a: Any, b: Any) -> None:
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            # Bit for bit: the same rows in the same order, the same last digits.
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert x.tobytes() == y.tobytes(), name
        else:
            assert x == y, name


@settings(max_examples=300, deadline=None)
@given(data=packages(max_candidates=14, max_units=7, extras=False), capacity=st.sampled_from([None, 1, 2, 3]),
       budget=st.sampled_from([0.0, 1.0, 2.5, 4.0, 100.0]), mode=st.sampled_from(["inner", "outer"]),
       breakpoints=st.sampled_from([1, 3, 32]))
def test_builder_equals_the_reference(data: dict, capacity: int | None, budget: float, mode: str,
                                      breakpoints: int) -> None:
    if capacity is not None:
        data["objective"]["group_capacity"] = capacity
    c = compile_package(data)
    same_model(build_milp(c, budget, log1p_mode=mode, breakpoints=breakpoints),
               build_milp_reference(c, budget, log1p_mode=mode, breakpoints=breakpoints))


@pytest.mark.parametrize("distribution", ["base", "density_trap", "update_chain", "summary_tradeoff"])
@pytest.mark.parametrize("fraction", [0.02, 0.2, 1.0])
def test_builder_equals_the_reference_on_memaudit_small(distribution: str, fraction: float) -> None:
    c = compile_package(generate_package(distribution, seed=3, scale=4))
    budget = fraction * float(c.cost.sum())
    same_model(build_milp(c, budget), build_milp_reference(c, budget))


@pytest.mark.parametrize(("distribution", "fraction"), [("base", 0.05), ("density_trap", 0.3), ("update_chain", 0.02)])
def test_the_plain_model_is_the_model_as_the_formulation_reads(distribution: str, fraction: float) -> None:
    """``plain=True`` spells the MILP as a reader of the formulation would (tests/oracles/exact.py
    writes it so, one unit at a time): the same columns, rows and entries in the same order, so
    that HiGHS takes the same path through it."""
    from memaudit_fast.solve.milp import highs_of
    from oracles.exact import Instance, milp_model, saturation_table

    c = compile_package(generate_package(distribution, seed=5, scale=3))
    assert c.saturation_name == "cap1"
    kinds, zs, hs = saturation_table()
    inst = Instance(cost=np.asarray(c.cost), group_of=np.asarray(c.group_of), num_groups=int(np.max(c.group_of)) + 1,
                    weight=np.asarray(c.weight), indptr=np.asarray(c.indptr), indices=np.asarray(c.indices),
                    values=np.asarray(c.values), saturation_of=np.zeros(len(c.weight), dtype=np.int32),
                    kinds=kinds, zs=zs, hs=hs)
    budget = round(fraction * float(c.cost.sum()), 2)
    ours, theirs = highs_of(build_milp(c, budget, plain=True)).getLp(), milp_model(inst, budget).getLp()
    assert (ours.num_col_, ours.num_row_) == (theirs.num_col_, theirs.num_row_)
    for name in ("col_cost_", "col_lower_", "col_upper_", "row_lower_"):
        assert list(getattr(ours, name)) == list(getattr(theirs, name)), name
    # The budget row's right-hand side carries the budget's rounding slack (budget_limit).
    np.testing.assert_allclose(ours.row_upper_, theirs.row_upper_, rtol=1e-11, atol=0)
    for name in ("start_", "index_", "value_"):
        assert list(getattr(ours.a_matrix_, name)) == list(getattr(theirs.a_matrix_, name)), name


@settings(max_examples=150, deadline=None)
@given(data=packages(max_candidates=10, max_units=5, extras=False), budget=st.sampled_from([0.0, 1.0, 2.5, 4.0, 100.0]))
def test_the_plain_model_has_the_same_optimum(data: dict, budget: float) -> None:
    from memaudit_fast.solve.backends import solve_highs

    c = compile_package(data)
    lean, plain = build_milp(c, budget), build_milp(c, budget, plain=True)
    if lean.approximation != "exact":
        return
    assert plain.num_x == c.num_candidates
    a, b = solve_highs(lean), solve_highs(plain)
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-7, abs=1e-7)
