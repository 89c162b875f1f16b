"""The Python API's arguments: a wrong type or a value the CLI refuses is named plainly.

``score`` read a lone string letter by letter; ``solve`` handed a wrong ``cancel`` to the
core (pybind11's "incompatible function arguments"), and took integer budgets beyond 2^53,
which the CLI and the package reader refuse.
"""

from __future__ import annotations

import numpy as np
import pytest

import memaudit_fast as ma
from memaudit_fast.errors import UsageError


@pytest.fixture(scope="module")
def pkg() -> ma.Package:
    return ma.load_package(ma.example_package_path())


@pytest.mark.parametrize("store", ["c3_update", b"c3_update", "e0:raw_span"])
def test_score_refuses_one_string(pkg, store):
    with pytest.raises(TypeError, match="store_ids must be a list of candidate ids, got one string"):
        ma.score(pkg, store, 16)


def test_score_refuses_a_non_iterable_and_takes_a_list_of_one(pkg):
    with pytest.raises(TypeError, match="store_ids"):
        ma.score(pkg, 3, 16)  # type: ignore[arg-type]
    one = pkg.candidates[0]["candidate_id"]
    assert ma.score(pkg, [one], 16).selected == (one,)
    assert ma.score(pkg, (c for c in [one]), 16).selected == (one,)


def test_score_counts_a_repeated_id_once_and_says_so(pkg):
    first = pkg.candidates[0]
    cost = float(first["cost"])
    twice = ma.score(pkg, [first["candidate_id"]] * 2, cost)  # fits B once, not twice
    assert not twice.feasible and twice.ratio == 0.0
    assert twice.cost == cost
    assert twice.reason == f"listed more than once: {first['candidate_id']!r}"
    over = ma.score(pkg, [first["candidate_id"]] * 2, cost / 2)
    assert f"cost {cost:g} exceeds the budget" in over.reason  # the cost shown, not twice it


@pytest.mark.parametrize("budget", [2**53 + 1, 2**80, -(2**60), np.int64(2**62)])
def test_budgets_beyond_2_53_are_refused_everywhere(pkg, budget):
    with pytest.raises(UsageError, match=r"2\^53"):
        ma.solve(pkg, budgets=[budget])
    with pytest.raises(UsageError, match=r"2\^53"):
        ma.solve(pkg, budget)
    with pytest.raises(UsageError, match=r"2\^53"):
        ma.solve(pkg, budgets=np.array([4, budget], dtype=object))
    with pytest.raises(UsageError, match=r"2\^53"):
        ma.score(pkg, [], budget)


def test_2_53_itself_and_generators_still_work(pkg):
    assert ma.solve(pkg, 2**53).budget == float(2**53)
    assert [r.budget for r in ma.solve(pkg, budgets=(b for b in [2, 4]))] == [2.0, 4.0]
    with pytest.raises(UsageError, match=r"budgets: integers .* 2\^53"):
        ma.solve(pkg, budgets=(b for b in [2, 2**54]))


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"cancel": "x"}, "cancel"),
    ({"cancel": 1}, "cancel"),
    ({"cancel": object()}, "cancel"),
    ({"time_limit": "1"}, "time_limit"),
    ({"time_limit": [1]}, "time_limit"),
    ({"time_limit": float("nan")}, "time_limit"),
    ({"time_limit": -1}, "time_limit"),
    ({"node_limit": [5]}, "node_limit"),
    ({"node_limit": float("nan")}, "node_limit"),
    ({"node_limit": float("inf")}, "node_limit"),
    ({"node_limit": "5"}, "node_limit"),
    ({"node_limit": 2.5}, "node_limit"),
    ({"log": 3}, "log"),
    ({"log_interval": "1"}, "log_interval"),
    ({"log_interval": None}, "log_interval"),
    ({"log_interval": 0}, "log_interval"),
    ({"finish": ["highs"]}, "finish"),
    ({"finish": "gurobi"}, "finish"),
    ({"handoff_after": None}, "handoff_after"),
    ({"handoff_after": "0.1"}, "handoff_after"),
    ({"handoff_after": -1}, "handoff_after"),
])
def test_solve_names_the_bad_argument(pkg, kwargs, name):
    with pytest.raises(UsageError) as info:
        ma.solve(pkg, 8, **kwargs)
    text = str(info.value)
    assert text.startswith(f"{name} must be"), text
    assert "incompatible function arguments" not in text


def test_solve_arguments_are_checked_before_the_package_is_read(tmp_path):
    # A group-capacity package took another path before the checks ran.
    with pytest.raises(UsageError, match="cancel must be"):
        ma.solve(tmp_path / "missing.json", 8, cancel="x")


def test_good_arguments_still_solve(pkg):
    token = ma.CancelToken()
    lines: list[object] = []
    result = ma.solve(pkg, 8, cancel=token, time_limit=np.float64(30), node_limit=np.int64(10**6),
                      log=lines.append, log_interval=0.5, finish=None, handoff_after=0)
    assert result.status == "optimal"
    assert ma.solve(pkg, 8, node_limit=100.0, finish="auto").budget == 8.0
