"""The C++ objective agrees with the plain-Python reference for every saturation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.model.compiled import compile_package
from oracles.objective import objective as ref_objective
from strategies import packages


@given(packages(), st.data())
def test_objective_matches_reference(data, draw):
    compiled = compile_package(data)
    chosen = draw.draw(st.lists(st.integers(0, compiled.num_candidates - 1), unique=True))
    ids = [compiled.candidate_ids[i] for i in chosen]
    expected = ref_objective(data, ids)
    assert compiled.objective(chosen) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@given(packages(), st.data())
def test_marginal_gains_and_incremental_state(data, draw):
    compiled = compile_package(data)
    n = compiled.num_candidates
    chosen = draw.draw(st.lists(st.integers(0, n - 1), unique=True))
    base = ref_objective(data, [compiled.candidate_ids[i] for i in chosen])
    gains = compiled.problem.marginal_gains(np.array(chosen, dtype=np.int32))
    for u in range(n):
        if u in chosen:
            continue
        with_u = ref_objective(data, [compiled.candidate_ids[i] for i in chosen + [u]])
        assert gains[u] == pytest.approx(with_u - base, rel=1e-9, abs=1e-12)
    state = _core.CoverageState(compiled.problem)
    for u in chosen:
        state.add(u)
    assert state.value == pytest.approx(base, rel=1e-9, abs=1e-12)
    for u in reversed(chosen):
        loss = state.marginal_loss(u)
        before = state.value
        state.remove(u)
        assert before - state.value == pytest.approx(loss, rel=1e-9, abs=1e-12)
    assert state.value == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    ("saturation", "z", "expected"),
    [
        ("cap1", 0.4, 0.4),
        ("cap1", 2.0, 1.0),
        ("linear", 2.5, 2.5),
        ("log1p", 1.0, math.log(2.0)),
        ({"pwl": [[0, 0], [1, 2], [3, 3]]}, 0.5, 1.0),
        ({"pwl": [[0, 0], [1, 2], [3, 3]]}, 2.0, 2.5),
        ({"pwl": [[0, 0], [1, 2], [3, 3]]}, 9.0, 3.0),
    ],
)
def test_saturation_values(saturation, z, expected):
    data = {
        "format": "memaudit.package/1", "package_id": "t",
        "objective": {"saturation": saturation},
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": z}}],
    }
    assert compile_package(data).objective([0]) == pytest.approx(expected, rel=1e-12)


def test_core_rejects_bad_indices_without_crashing():
    compiled = compile_package({
        "format": "memaudit.package/1", "package_id": "t",
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1}}],
    })
    with pytest.raises(IndexError):
        compiled.objective([5])
    state = _core.CoverageState(compiled.problem)
    with pytest.raises(IndexError):
        state.add(-1)


def test_core_problem_validation_raises_value_error():
    with pytest.raises(ValueError, match="cost"):
        _core.Problem(
            np.array([-1.0]), np.array([0], dtype=np.int32), 1, np.array([1.0]),
            np.array([0, 0]), np.array([], dtype=np.int32), np.array([]),
            np.array([0], dtype=np.int32), [0], [np.zeros(0)], [np.zeros(0)],
        )
