"""Baseline writers: the C++ hot loops match a slow Python reference id for id, every store is
feasible, ratios respect OPT, and density-only is arbitrarily bad where GVT is not."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.errors import UsageError
from memaudit_fast.evaluate.baselines import (
    BASELINE_WRITERS,
    WriterContext,
    ratio_of,
    run_writer,
    run_writers,
    writers_block,
)
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from oracles.packages import density_trap
from oracles.writers import brute_force, install_brute_force_solver, is_feasible, reference_store
from strategies import packages

REFERENCED = [w for w in BASELINE_WRITERS if w != "random"]


@settings(max_examples=80)
@given(packages(max_candidates=9), st.sampled_from(REFERENCED), st.sampled_from([0, 1, 2, 3, 4.5, 6, 10]))
def test_writers_match_python_reference(data, writer, budget):
    pkg = Package.from_dict(data)
    got = run_writer(pkg, budget, writer, opt=1.0)
    assert list(got.selected) == reference_store(pkg, budget, writer)


@settings(max_examples=40)
@given(packages(max_candidates=8), st.sampled_from([0, 1, 2, 3, 5, 8]), st.integers(0, 3))
def test_every_writer_is_feasible_and_below_opt(data, budget, seed):
    pkg = Package.from_dict(data)
    opt, _ = brute_force(pkg, budget)
    results = run_writers(pkg, budget, opt=opt, seed=seed)
    assert set(results) == set(BASELINE_WRITERS)
    for name, r in results.items():
        assert is_feasible(pkg, r.selected, budget), name
        assert r.cost <= budget
        assert r.value <= opt + 1e-9, name
        if opt > 1e-12:
            assert r.ratio == pytest.approx(r.value / opt)
        else:
            assert r.ratio == 1.0


def _dict(cands, units, budget=4):
    return {
        "format": "memaudit.package/1", "package_id": "t", "budgets": [budget],
        "experiences": [{"experience_id": e, "timestamp": t} for e, t in
                        sorted({(c["experience_id"], c.pop("t")) for c in cands})],
        "units": units, "candidates": cands,
    }


def test_full_tie_goes_to_the_largest_id():
    cands = [
        {"candidate_id": cid, "experience_id": "e0", "t": 0, "cost": 1, "coverage": {"u": 1}}
        for cid in ("c1", "c2", "c10")
    ]
    pkg = Package.from_dict(_dict(cands, [{"unit_id": "u", "weight": 1.0}]))
    for writer in ("density_only", "greedy", "gvt"):
        assert run_writer(pkg, 4, writer, opt=1.0).selected == ("c2",)


def test_density_only_takes_the_densest_while_gvt_takes_the_most_valuable():
    # One group: a cheap partial fact and a costlier complete update.
    cands = [
        {"candidate_id": "fact", "experience_id": "e0", "t": 0, "cost": 1, "coverage": {"u": 0.9}},
        {"candidate_id": "update", "experience_id": "e0", "t": 0, "cost": 3, "coverage": {"u": 1, "v": 1}},
    ]
    pkg = Package.from_dict(_dict(cands, [{"unit_id": "u", "weight": 1.0}, {"unit_id": "v", "weight": 1.0}]))
    assert run_writer(pkg, 4, "density_only", opt=2.0).selected == ("fact",)
    gvt = run_writer(pkg, 4, "gvt", opt=2.0)
    assert gvt.selected == ("update",) and gvt.ratio == 1.0


def test_recency_raw_and_representation_filters():
    cands = [
        {"candidate_id": "old_raw", "experience_id": "e0", "t": 0, "representation": "raw", "cost": 2, "coverage": {"u": 1}},
        {"candidate_id": "new_raw", "experience_id": "e1", "t": 5, "representation": "raw_span", "cost": 2, "coverage": {}},
        {"candidate_id": "fact", "experience_id": "e1", "t": 5, "representation": "atomic_fact", "cost": 1, "coverage": {"v": 1}},
        {"candidate_id": "tomb", "experience_id": "e2", "t": 6, "representation": "tombstone", "cost": 1, "coverage": {"w": 1}},
    ]
    units = [{"unit_id": u, "weight": 1.0} for u in "uvw"]
    pkg = Package.from_dict(_dict(cands, units))
    ctx = WriterContext(compile_package(pkg))
    # Newest raw first even though it covers nothing: recency is blind to value.
    assert run_writer(ctx, 2, "recency_raw", opt=1.0).selected == ("new_raw",)
    assert run_writer(ctx, 4, "recency_raw", opt=1.0).selected == ("new_raw", "old_raw")
    assert run_writer(ctx, 4, "fact_only", opt=1.0).selected == ("fact",)
    assert run_writer(ctx, 4, "raw_only", opt=1.0).selected == ("old_raw",)
    assert "tomb" in run_writer(ctx, 4, "greedy", opt=3.0).selected
    assert "tomb" not in run_writer(ctx, 4, "no_tombstone_greedy", opt=3.0).selected
    assert "tomb" not in run_writer(ctx, 4, "no_tombstone_gvt", opt=3.0).selected


def test_random_writer_is_seeded():
    data = {
        "format": "memaudit.package/1", "package_id": "r",
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": f"c{i}", "cost": 1, "coverage": {"u": 0.1}} for i in range(30)],
    }
    pkg = Package.from_dict(data)
    a = run_writer(pkg, 5, "random", opt=0.5, seed=7)
    assert a.selected == run_writer(pkg, 5, "random", opt=0.5, seed=7).selected
    others = {run_writer(pkg, 5, "random", opt=0.5, seed=s).selected for s in range(8)}
    assert len(others) > 1 and len(a.selected) == 5


def test_zero_opt_convention_and_ratio_helper():
    data = {
        "format": "memaudit.package/1", "package_id": "z",
        "units": [{"unit_id": "u", "weight": 0.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1}}],
    }
    for r in run_writers(data, 3, opt=0.0).values():
        assert r.ratio == 1.0
    assert ratio_of(2.0, 4.0) == 0.5
    assert ratio_of(0.0, 0.0) == 1.0
    assert ratio_of(1.0, 0.0) is None


def test_unknown_writer_and_bad_budget_are_usage_errors():
    data = {
        "format": "memaudit.package/1", "package_id": "z",
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1}}],
    }
    with pytest.raises(UsageError, match="unknown writer 'oracle'"):
        run_writer(data, 1, "oracle", opt=1.0)
    with pytest.raises(UsageError, match="budget"):
        run_writer(data, -1, "gvt", opt=1.0)


def test_core_rejects_orders_that_split_a_group():
    c = compile_package({
        "format": "memaudit.package/1", "package_id": "s",
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [
            {"candidate_id": "a", "group": "g", "cost": 1, "coverage": {"u": 1}},
            {"candidate_id": "b", "group": "h", "cost": 1, "coverage": {"u": 1}},
            {"candidate_id": "c", "group": "g", "cost": 1, "coverage": {"u": 1}},
        ],
    })
    rank = np.arange(3, dtype=np.int32)
    with pytest.raises(ValueError, match="contiguous"):
        _core.run_writer(c.problem, "gvt", 3.0, np.array([0, 1, 2], dtype=np.int32), rank)
    with pytest.raises(ValueError, match="out of range"):
        _core.run_writer(c.problem, "greedy", 3.0, np.array([0, 7], dtype=np.int32), rank)
    with pytest.raises(ValueError, match="unknown core writer"):
        _core.run_writer(c.problem, "nope", 3.0, np.array([0], dtype=np.int32), rank)


def test_density_only_is_arbitrarily_bad_while_gvt_stays_bounded():
    dens_ratios, gvt_ratios = [], []
    for m in (4, 16, 64, 256, 1024, 4096):
        pkg = Package.from_dict(density_trap(m))
        opt, _ = brute_force(pkg, 4)
        assert opt == pytest.approx(1 + 2 / m)
        results = run_writers(pkg, 4, ["density_only", "gvt"], opt=opt)
        dens_ratios.append(results["density_only"].ratio)
        gvt_ratios.append(results["gvt"].ratio)
        assert results["density_only"].ratio == pytest.approx(4 / (m + 2))
    assert all(a > b for a, b in itertools.pairwise(dens_ratios))
    assert dens_ratios[-1] < 1e-3
    assert min(gvt_ratios) >= 0.25


def test_writers_block_shape():
    pkg = Package.from_dict(density_trap(8))
    block = writers_block(run_writers(pkg, 4, ["gvt", "density_only"], opt=1.25))
    assert list(block) == ["gvt", "density_only"]
    assert block["gvt"] == {"value": 1.0, "ratio": 0.8, "selected": ["big"], "cost": 2.0}


def test_opt_is_solved_when_not_given(monkeypatch):
    install_brute_force_solver(monkeypatch)
    pkg = Package.from_dict(density_trap(16))
    opt, _ = brute_force(pkg, 4)
    results = run_writers(pkg, 4, ["gvt", "density_only"])
    assert results["gvt"].opt == pytest.approx(opt)
    assert results["density_only"].ratio == pytest.approx(4 / 18)


def test_writers_fit_stores_as_opt_does_within_the_budgets_slack():
    # 0.1 + 0.2 = 0.30000000000000004 fits B = 0.3 (within 1e-12 * max(1, B)): OPT stores both,
    # and so must every writer that would take both.
    data = {"format": "memaudit.package/1", "package_id": "f", "budgets": [0.3],
            "units": [{"unit_id": "u0", "weight": 1}, {"unit_id": "u1", "weight": 1}],
            "candidates": [{"candidate_id": "a", "cost": 0.1, "coverage": {"u0": 1}},
                           {"candidate_id": "b", "cost": 0.2, "coverage": {"u1": 1}}]}
    for writer in ("density_only", "greedy", "gvt", "random"):
        assert sorted(run_writer(data, 0.3, writer).selected) == ["a", "b"], writer
