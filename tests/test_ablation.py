"""Ablations: dropped families really disappear, and OPT fractions match brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.errors import UsageError
from memaudit_fast.evaluate.ablation import (
    ablate,
    ablated_package,
    dropped_representations,
    parse_drop,
)
from memaudit_fast.model.package import Package
from oracles.packages import update_package
from oracles.writers import brute_force, install_brute_force_solver
from strategies import packages


@pytest.fixture(autouse=True)
def exact_solver(monkeypatch):
    """The real solver when it exists, else brute force standing in for it."""
    install_brute_force_solver(monkeypatch)


def test_family_names():
    assert parse_drop("tombstone, update,tombstone") == ("tombstone", "update")
    assert dropped_representations("compound_update") == {"update", "compound_update"}
    assert dropped_representations(["tombstone", "summary"]) == {"tombstone", "summary"}
    with pytest.raises(UsageError):
        parse_drop(" , ")


def test_no_tombstone_fraction_on_an_update_package():
    results = ablate(update_package())
    assert [r.budget for r in results] == [2.0, 4.0]
    b2, b4 = results
    # B=2: full OPT takes the tombstone (2.0) or the new fact (2.0); without them only the fact.
    assert b2.full_opt == pytest.approx(2.0) and b2.ablated_opt == pytest.approx(2.0)
    # B=4: the compound update covers both units (4.0); without it 2.0 + 0.1 at best.
    assert b4.full_opt == pytest.approx(4.0) and b4.ablated_opt == pytest.approx(2.1)
    assert b4.fraction == pytest.approx(2.1 / 4.0)
    assert b4.removed == 2 and b4.to_record()["dropped"] == ["tombstone", "update"]


def test_dropping_everything_gives_zero():
    data = update_package()
    r = ablate(data, 4, ["atomic_fact", "tombstone", "update"], full_opt=[4.0])[0]
    assert r.ablated_opt == 0.0 and r.fraction == 0.0 and r.full_status == "given"
    assert ablated_package(data, "atomic_fact,tombstone,update") is None


@settings(max_examples=30)
@given(packages(max_candidates=8), st.sampled_from([1, 2, 3, 5]))
def test_ablated_opt_is_brute_force_without_the_family(data, budget):
    pkg = Package.from_dict(data)
    reduced = ablated_package(pkg)
    if reduced is not None:
        assert not {c.get("representation") for c in reduced.candidates} & {"tombstone", "update", "compound_update"}
        assert reduced.units == pkg.units and reduced.unit_weights == pkg.unit_weights
    r = ablate(pkg, budget)[0]
    full, _ = brute_force(pkg, budget)
    without, _ = brute_force(pkg, budget, drop={"tombstone", "update", "compound_update"})
    assert r.full_opt == pytest.approx(full, abs=1e-9)
    assert r.ablated_opt == pytest.approx(without, abs=1e-9)
    assert r.ablated_opt <= r.full_opt + 1e-9
    assert r.fraction == (1.0 if full <= 1e-12 else pytest.approx(without / full))


def test_budgets_are_required_when_the_package_has_none():
    data = update_package()
    del data["budgets"]
    with pytest.raises(UsageError, match="no budgets"):
        ablate(data)
