"""MILP certificates: agreement with exact optima for every saturation, honest failures,
log1p brackets, time limits, and the Gurobi licence fallback."""

from __future__ import annotations

import copy
import importlib.util
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.errors import CertificationError, UsageError
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package, SaturationSpec
from memaudit_fast.solve.backends import gurobi_installed, solve_highs
from memaudit_fast.solve.certify import certify, certify_results, claim_of
from memaudit_fast.solve.milp import build_milp, saturation_pieces
from oracles.packages import claim, hard_package, small_package
from oracles.writers import brute_force
from strategies import packages

needs_gurobi = pytest.mark.skipif(not gurobi_installed(), reason="gurobipy is not installed")


def uses_log1p(pkg: Package) -> bool:
    return any(s.name == "log1p" for s in pkg.unit_saturations)


@settings(max_examples=40)
@given(packages(max_candidates=8), st.sampled_from([0, 1, 2, 3, 5, 8]))
def test_certificate_agrees_with_the_exact_optimum(data, budget):
    pkg = Package.from_dict(data)
    opt, ids = brute_force(pkg, budget)
    cert = certify(pkg, claim(pkg, budget, opt, ids), "highs")
    assert cert.selection_feasible and cert.status == "optimal", cert.issues
    if uses_log1p(pkg):
        # Never equality for log1p: a bracket that holds the optimum.
        assert cert.agrees is None and not cert.exact
        b = cert.bracket
        assert b["lower"] - cert.tolerance <= opt <= b["upper"] + cert.tolerance
        assert b["contains_result"] is True
    else:
        assert cert.agrees is True, cert.issues
        assert cert.value == pytest.approx(opt, abs=cert.tolerance)


@settings(max_examples=25)
@given(packages(max_candidates=8), st.sampled_from([1, 2, 3, 5]))
def test_a_suboptimal_claim_never_agrees(data, budget):
    pkg = Package.from_dict(data)
    opt, ids = brute_force(pkg, budget)
    if opt < 1e-3 or not ids:
        return
    weaker = ids[:-1]  # drop one candidate: still feasible, strictly worse or equal
    value = compile_package(pkg).objective([compile_package(pkg).index_of()[c] for c in weaker])
    cert = certify(pkg, claim(pkg, budget, value, weaker), "highs")
    if value < opt - 1e-6 * max(1.0, opt) * 10:
        assert cert.agrees is False
        assert any("above the claimed bound" in issue for issue in cert.issues)


def test_infeasible_selection_and_wrong_values_are_reported():
    pkg = small_package()
    cert = certify(pkg, claim(pkg, 3, 3.0, ["a", "b"]), "highs")
    assert cert.agrees is False and not cert.selection_feasible
    assert any("group 'g1' holds 2" in i for i in cert.issues)

    cert = certify(pkg, claim(pkg, 3, 3.0, ["a", "d"]), "highs")
    assert any("exceeds the budget" in i for i in cert.issues)

    cert = certify(pkg, claim(pkg, 3, 3.0, ["a", "nope"]), "highs")
    assert any("unknown candidate ids: 'nope'" in i for i in cert.issues) and cert.agrees is False

    # Right store, wrong value: both the value check and the MILP bound object.
    cert = certify(pkg, claim(pkg, 3, 3.5, ["a", "c"]), "highs")
    assert cert.agrees is False
    assert any("differs from F(selection)" in i for i in cert.issues)
    assert any("below the claimed value" in i for i in cert.issues)

    good = certify(pkg, claim(pkg, 3, 3.0, ["a", "c"]), "highs")
    assert good.agrees is True and good.value == pytest.approx(3.0)


def test_model_leaves_out_what_cannot_matter():
    model = build_milp(compile_package(small_package()), 3)
    # d costs more than B, e covers only a weight-0 unit, z weighs 0.
    assert sorted(model.candidates.tolist()) == [0, 1, 2]
    assert model.units.tolist() == [0, 1]
    # Rows: one piece per unit, the g1 group row and the budget row (2 + 1 + 1 = 4 > 3).
    assert model.num_rows == 4


def test_pwl_and_linear_pieces():
    pwl = SaturationSpec("pwl", ((0.0, 0.0), (1.0, 2.0), (3.0, 3.0), (5.0, 3.0)))
    p = saturation_pieces(pwl, 10.0)
    assert p.beta == (2.0, 0.5) and p.alpha == (0.0, 1.5) and p.cap == 3.0
    # Pieces starting beyond the reachable coverage are dropped; the cap is h(reach).
    p = saturation_pieces(pwl, 0.5)
    assert p.beta == (2.0,) and p.cap == pytest.approx(1.0)
    assert saturation_pieces(SaturationSpec("linear"), 4.0).cap == 4.0


def test_log1p_pieces_bracket_h():
    spec = SaturationSpec("log1p")
    inner = saturation_pieces(spec, 7.0, log1p_mode="inner", breakpoints=8)
    outer = saturation_pieces(spec, 7.0, log1p_mode="outer", breakpoints=8)
    for z in [0.0, 0.01, 0.3, 1.0, 2.2, 5.0, 7.0]:
        g_in = min(inner.cap, *(a + b * z for a, b in zip(inner.alpha, inner.beta)))
        g_out = min(outer.cap, *(a + b * z for a, b in zip(outer.alpha, outer.beta)))
        assert g_in <= math.log1p(z) + 1e-12 <= g_out + 2e-12
        assert g_out - g_in < 0.02


def test_log1p_bracket_holds_the_optimum_and_never_claims_equality():
    pkg = small_package("log1p")
    opt, ids = brute_force(pkg, 3)
    cert = certify(pkg, claim(pkg, 3, opt, ids), "highs", breakpoints=4)
    assert cert.agrees is None and cert.value is None and cert.exact is False
    assert cert.bracket["lower"] <= opt + cert.tolerance
    assert opt <= cert.bracket["upper"] + cert.tolerance
    d = cert.to_dict()
    assert d["bracket"]["breakpoints"] == 4 and d["agrees"] is None
    # A claimed value above the outer bound is a disagreement even for log1p.
    too_high = certify(pkg, claim(pkg, 3, cert.bracket["upper"] + 1, ids), "highs")
    assert too_high.agrees is False


def test_time_limit_gives_bounds_never_a_false_agrees():
    pkg = hard_package()
    # The first candidate alone, claimed optimal: plainly not, but the MILP gets no time.
    c = compile_package(pkg)
    cert = certify(pkg, claim(pkg, 60, c.objective([0]), ["c0"]), "highs", time_limit=1e-6)
    assert cert.status == "time_limit"
    assert cert.agrees is not True
    # The true optimum, claimed correctly: a stopped MILP still cannot say "agrees".
    full = solve_highs(build_milp(c, 60))
    assert full.status == "optimal"
    ids = [c.candidate_ids[i] for i in full.store]
    cert = certify(pkg, claim(pkg, 60, c.objective(list(full.store)), ids), "highs", time_limit=1e-6)
    assert cert.status == "time_limit" and cert.agrees is None and not cert.issues
    assert certify(pkg, claim(pkg, 60, c.objective(list(full.store)), ids), "highs").agrees is True


def test_claim_reading_and_errors():
    pkg = small_package()
    with pytest.raises(CertificationError, match="status 'error'"):
        claim_of({"status": "error", "error": "boom"})
    with pytest.raises(CertificationError, match="no 'selected'"):
        claim_of({"budget": 3, "opt": 1.0})
    with pytest.raises(CertificationError, match="not 'cert/small'"):
        certify(pkg, {**claim(pkg, 3, 3.0, ["a", "c"]), "package_id": "other"}, "highs")
    with pytest.raises(UsageError, match="unknown certifier"):
        certify(pkg, claim(pkg, 3, 3.0, ["a", "c"]), "cplex")


def test_certify_results_attaches_certificates():
    pkg = small_package()
    good = claim(pkg, 3, 3.0, ["a", "c"])
    failed = {"format": "memaudit.result/1", "package_id": pkg.package_id, "budget": 1, "status": "error", "error": "x"}
    records = certify_results(pkg, [good, failed], "highs")
    assert records[0]["certificate"]["agrees"] is True
    assert records[1]["certificate"]["status"] == "not_certified"
    assert "certificate" not in good  # inputs are not modified
    assert certify_results(pkg, [good], "none") == [good]


def test_empty_model_has_optimum_zero():
    pkg = Package.from_dict({
        "format": "memaudit.package/1", "package_id": "zero",
        "units": [{"unit_id": "u", "weight": 0.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1}}],
    })
    cert = certify(pkg, claim(pkg, 1, 0.0, []), "highs")
    assert cert.agrees is True and cert.value == 0.0 and cert.model == {"columns": 0, "rows": 0}


def wide_package(n: int = 2100) -> Package:
    """Over 2,000 variables: beyond the pip Gurobi licence. OPT(5) = 5, any five candidates."""
    return Package.from_dict({
        "format": "memaudit.package/1", "package_id": "wide",
        "units": [{"unit_id": f"u{i}", "weight": 1.0} for i in range(n)],
        "candidates": [{"candidate_id": f"c{i}", "cost": 1, "coverage": {f"u{i}": 1.0}} for i in range(n)],
    })


def test_auto_falls_back_to_highs_and_says_why():
    pkg = wide_package()
    cert = certify(pkg, claim(pkg, 5, 5.0, ["c0", "c1", "c2", "c3", "c4"]), "auto")
    assert cert.solver == "highs" and cert.agrees is True
    assert cert.model["columns"] > 2000
    if gurobi_installed():
        # The pip licence refuses the model at optimize(): recorded, not hidden.
        assert "10010" in cert.fallback or "licence" in cert.fallback
    else:
        assert "not installed" in cert.fallback


@needs_gurobi
def test_gurobi_certifies_small_models():
    pkg = small_package()
    cert = certify(pkg, claim(pkg, 3, 3.0, ["a", "c"]), "gurobi")
    assert cert.solver == "gurobi" and cert.agrees is True and cert.fallback is None
    assert cert.version.count(".") == 2
    auto = certify(pkg, claim(pkg, 3, 3.0, ["a", "c"]), "auto")
    assert auto.solver == "gurobi"


@needs_gurobi
@settings(max_examples=15)
@given(packages(max_candidates=7), st.sampled_from([1, 2, 5]))
def test_gurobi_and_highs_agree(data, budget):
    pkg = Package.from_dict(data)
    opt, ids = brute_force(pkg, budget)
    a = certify(pkg, claim(pkg, budget, opt, ids), "gurobi")
    b = certify(pkg, claim(pkg, budget, opt, ids), "highs")
    assert a.agrees == b.agrees
    if a.exact:
        assert a.value == pytest.approx(b.value, abs=a.tolerance)


@pytest.mark.skipif(gurobi_installed(), reason="only meaningful without gurobipy")
def test_explicit_gurobi_without_gurobipy_is_an_error():
    pkg = small_package()
    with pytest.raises(CertificationError, match="not installed"):
        certify(pkg, claim(pkg, 3, 3.0, ["a", "c"]), "gurobi")


def test_input_dicts_are_not_modified():
    pkg = small_package()
    record = claim(pkg, 3, 3.0, ["a", "c"])
    before = copy.deepcopy(record)
    certify(pkg, record, "highs")
    assert record == before


needs_solver = pytest.mark.skipif(
    importlib.util.find_spec("memaudit_fast.solve.exact") is None,
    reason="the exact solver is not built yet",
)


@needs_solver
@settings(max_examples=40)
@given(packages(max_candidates=10), st.sampled_from([0, 1, 2, 3, 5, 8]))
def test_certificates_agree_with_the_branch_and_bound_solver(data, budget):
    from memaudit_fast.solve.exact import solve

    pkg = Package.from_dict(data)
    result = solve(pkg, budget)
    cert = certify(pkg, result, "highs")
    assert cert.selection_feasible, cert.issues
    if uses_log1p(pkg):
        assert cert.agrees is None and cert.bracket["contains_result"] is True
        assert cert.bracket["lower"] - cert.tolerance <= result.value <= cert.bracket["upper"] + cert.tolerance
    else:
        assert cert.agrees is True, cert.issues
        assert cert.value == pytest.approx(result.value, abs=cert.tolerance)


@needs_solver
def test_solver_results_on_a_larger_package_certify_with_both_backends():
    from memaudit_fast.solve.exact import solve

    pkg = hard_package(50)
    for result in solve(pkg, budgets=[20, 45]):
        assert certify(pkg, result, "highs").agrees is True
        if gurobi_installed():
            assert certify(pkg, result, "gurobi").agrees is True


def test_an_optimum_on_a_store_over_budget_within_tolerance_does_not_confirm() -> None:
    # b costs a hair over what fits with a (3 + 1e-12): HiGHS's tolerance lets {a, b} through
    # as worth 2, exact arithmetic does not. OPT is 1; the certificate must not say it agrees.
    from memaudit_fast.solve.certify import certify
    from memaudit_fast.solve.exact import solve

    package = {"format": "memaudit.package/1", "package_id": "f", "budgets": [3],
               "units": [{"unit_id": "u0", "weight": 1}, {"unit_id": "u1", "weight": 1}],
               "candidates": [{"candidate_id": "a", "cost": 1, "coverage": {"u0": 1}},
                              {"candidate_id": "b", "cost": 2.000000001, "coverage": {"u1": 1}}]}
    result = solve(package, budget=3)
    assert result.proven_optimal and result.value == 1.0
    cert = certify(package, result, "highs")
    assert cert.status == "optimal" and not cert.issues
    if cert.value == 2.0:  # HiGHS's tolerance-feasible optimum (HiGHS 1.16 finds it)
        assert cert.agrees is None
        assert "tolerance" in (cert.note or "") and cert.to_dict()["note"] == cert.note
    else:
        assert cert.value == 1.0 and cert.agrees is True and cert.note is None
