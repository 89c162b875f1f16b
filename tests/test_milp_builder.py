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
