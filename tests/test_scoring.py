"""score(): feasible stores get F/OPT, infeasible ones 0 with the reason, unknown ids fail."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.errors import UsageError
from memaudit_fast.evaluate.scoring import score
from memaudit_fast.model.package import Package
from oracles.objective import objective
from oracles.writers import brute_force, install_brute_force_solver, is_feasible
from strategies import packages

PKG = {
    "format": "memaudit.package/1", "package_id": "s",
    "units": [{"unit_id": "u", "weight": 2.0}, {"unit_id": "v", "weight": 1.0}],
    "candidates": [
        {"candidate_id": "a", "group": "g", "cost": 2, "coverage": {"u": 1}},
        {"candidate_id": "b", "group": "g", "cost": 1, "coverage": {"u": 0.5}},
        {"candidate_id": "c", "group": "h", "cost": 2, "coverage": {"v": 1}},
    ],
}


def test_feasible_store_scores_value_over_opt():
    r = score(PKG, ["a"], 3, opt=3.0)
    assert r.feasible and r.reason is None
    assert r.value == 2.0 and r.ratio == pytest.approx(2 / 3) and r.cost == 2.0
    assert r.to_record()["ratio"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("store", "budget", "reason"),
    [
        (["a", "b"], 5, "group 'g' holds 2 candidates"),
        (["a", "c"], 3, "cost 4 exceeds the budget 3"),
        (["c", "c"], 5, "listed more than once: 'c'"),
    ],
)
def test_infeasible_store_scores_zero_with_reason(store, budget, reason):
    r = score(PKG, store, budget, opt=3.0)
    assert not r.feasible and r.ratio == 0.0
    assert reason in r.reason
    assert r.value > 0  # the value is still reported


def test_unknown_ids_are_named():
    with pytest.raises(UsageError, match="'x', 'y'"):
        score(PKG, ["a", "x", "y", "x"], 3, opt=3.0)


def test_bad_budget_and_zero_opt():
    with pytest.raises(UsageError, match="budget"):
        score(PKG, ["a"], -1, opt=3.0)
    zero = {**PKG, "units": [{"unit_id": "u", "weight": 0.0}, {"unit_id": "v", "weight": 0.0}]}
    assert score(zero, ["c"], 3, opt=0.0).ratio == 1.0
    assert score(zero, [], 0, opt=0.0).ratio == 1.0


@settings(max_examples=40)
@given(packages(max_candidates=7), st.data())
def test_score_matches_reference(data, draw):
    pkg = Package.from_dict(data)
    budget = data["budgets"][0]
    ids = draw.draw(st.lists(st.sampled_from([c["candidate_id"] for c in data["candidates"]]), unique=True, max_size=4))
    opt, _ = brute_force(pkg, budget)
    r = score(pkg, ids, budget, opt=opt)
    assert r.feasible == is_feasible(pkg, ids, budget)
    assert r.value == pytest.approx(objective(data, ids), rel=1e-9, abs=1e-12)
    if r.feasible:
        assert r.value <= opt + 1e-9
        assert r.ratio == (1.0 if opt <= 1e-12 else pytest.approx(r.value / opt))
    else:
        assert r.ratio == 0.0 and r.reason


def test_opt_is_solved_when_not_given(monkeypatch):
    install_brute_force_solver(monkeypatch)
    # B = 3: 'a' alone (2.0) or 'b' + 'c' (1.0 + 1.0); 'a' + 'c' costs 4.
    r = score(PKG, ["c"], 3)
    assert r.opt == pytest.approx(2.0) and r.ratio == pytest.approx(0.5)


def test_an_over_budget_cost_is_shown_with_the_digits_that_tell_it_from_the_budget():
    from memaudit_fast.evaluate.scoring import score

    data = {"format": "memaudit.package/1", "package_id": "f", "budgets": [3],
            "units": [{"unit_id": "u0", "weight": 1}, {"unit_id": "u1", "weight": 1}],
            "candidates": [{"candidate_id": "a", "cost": 1, "coverage": {"u0": 1}},
                           {"candidate_id": "b", "cost": 2.000000001, "coverage": {"u1": 1}}]}
    result = score(data, ["a", "b"], 3)
    assert not result.feasible and result.reason == "cost 3.000000001 exceeds the budget 3.0"
