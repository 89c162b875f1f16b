"""The coverage-blind writers: gains from the estimate, scores from the true F, honest training."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.evaluate.baselines import (
    ALL_WRITERS,
    BASELINE_WRITERS,
    ESTIMATED_WRITERS,
    run_writer,
)
from memaudit_fast.evaluate.estimators import (
    EmbeddingEstimator,
    RidgeEstimator,
    fit_ridge,
    visible_features,
)
from memaudit_fast.model.compiled import budget_limit, compile_package
from memaudit_fast.model.examples import example_package
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.solve.exact import exact_opt
from memaudit_fast.suites.small import generate_set
from strategies import packages


def with_estimates(data: dict, kind: str) -> dict:
    out = copy.deepcopy(data)
    for cand in out["candidates"]:
        if kind == "coverage":
            cand["estimated_coverage"] = dict(cand["coverage"]) or {"u0": 0.0}
        else:
            cand["estimated_value"] = float(len(cand.get("text", cand["candidate_id"])) % 7)
    return out


def test_registries():
    assert set(ESTIMATED_WRITERS) == {"estimated_greedy", "estimated_gvt"}
    assert not set(ESTIMATED_WRITERS) & set(BASELINE_WRITERS)
    assert set(ALL_WRITERS) == set(BASELINE_WRITERS) | set(ESTIMATED_WRITERS)


@settings(max_examples=60, deadline=None)
@given(packages())
def test_true_coverage_as_the_estimate_reproduces_greedy_and_gvt(data):
    pkg = Package.from_dict(with_estimates(data, "coverage"))
    for budget in (0, 1.5, 3, 6):
        for rule in ("greedy", "gvt"):
            plain = run_writer(pkg, budget, rule, opt=1.0)
            blind = run_writer(pkg, budget, f"estimated_{rule}", opt=1.0)
            assert blind.selected == plain.selected
            assert blind.estimate is not None and blind.estimate["sources"] == {"estimated_coverage": len(pkg.candidates)}


def modular_greedy(pkg: Package, values: list[float], budget: float) -> tuple[str, ...]:
    """Greedy with modular gains, written from the rule's definition."""
    cands = pkg.candidates
    used_groups: set[str] = set()
    used = 0.0
    out: list[str] = []
    while True:
        best = None
        for i, c in enumerate(cands):
            g = pkg.candidate_groups[i]
            cost = float(c["cost"])
            if g in used_groups or used + cost > budget_limit(budget) or values[i] <= 1e-12:
                continue
            key = (values[i] / max(cost, 1e-12), values[i], -cost, c["candidate_id"])
            if best is None or key > best[0]:
                best = (key, i)
        if best is None:
            return tuple(out)
        i = best[1]
        out.append(cands[i]["candidate_id"])
        used_groups.add(pkg.candidate_groups[i])
        used += float(cands[i]["cost"])


@settings(max_examples=60, deadline=None)
@given(packages())
def test_estimated_value_is_a_modular_gain_and_the_score_uses_true_f(data):
    pkg = Package.from_dict(with_estimates(data, "value"))
    values = [c["estimated_value"] for c in pkg.candidates]
    c = compile_package(pkg)
    for budget in (1, 3, 5):
        opt = exact_opt(c, budget)
        r = run_writer(c, budget, "estimated_greedy", opt=opt)
        assert r.selected == modular_greedy(pkg, values, budget)
        index = c.index_of()
        assert r.value == pytest.approx(c.objective([index[s] for s in r.selected]))
        assert r.ratio == (1.0 if opt == 0 else pytest.approx(r.value / opt))
        gvt = run_writer(c, budget, "estimated_gvt", opt=opt)
        assert gvt.cost <= budget_limit(budget)
        assert len({pkg.candidate_groups[index[s]] for s in gvt.selected}) == len(gvt.selected)


def test_a_misleading_estimate_misleads_the_writer():
    data = {
        "format": "memaudit.package/1", "package_id": "trap", "budgets": [1],
        "units": [{"unit_id": "u", "weight": 10.0}],
        "candidates": [
            {"candidate_id": "good", "cost": 1, "coverage": {"u": 1.0}, "estimated_value": 0.1},
            {"candidate_id": "bad", "cost": 1, "coverage": {}, "estimated_value": 5.0},
        ],
    }
    for writer in ESTIMATED_WRITERS:
        r = run_writer(Package.from_dict(data), 1, writer)
        assert r.selected == ("bad",) and r.value == 0.0 and r.ratio == 0.0
    assert run_writer(Package.from_dict(data), 1, "greedy").selected == ("good",)


def test_no_estimate_and_no_estimator_is_an_error_naming_the_fix():
    with pytest.raises(PackageError) as err:
        run_writer(example_package(), 30, "estimated_gvt")
    assert "--estimator" in str(err.value) and "c0_raw" in str(err.value)


def synthetic(seeds, distribution="base") -> list[Package]:
    return [Package.from_dict(d) for d in generate_set(distribution, seeds)]


def test_ridge_learns_from_other_packages_and_refuses_its_training_set():
    train, test = synthetic(range(8)), synthetic(range(100, 103))
    model = fit_ridge(train, alpha=1.0, test=test)
    assert model.train["packages"] == [p.package_id for p in train]
    assert model.test["packages"] == [p.package_id for p in test]
    assert model.test["r2"] is not None and model.test["r2"] > 0.0  # better than the mean
    back = RidgeEstimator.from_json(json.loads(json.dumps(model.to_json())), source="m.json")
    np.testing.assert_allclose(back.predict(test[0]), model.predict(test[0]))
    r = run_writer(test[0], 8, "estimated_gvt", estimator=back)
    assert r.estimate["estimator"] == "ridge"
    assert r.estimate["test"] == {"package": test[0].package_id, "in_training_set": False,
                                  "held_out_r2": model.test["r2"]}
    assert r.estimate["train"]["packages"] == len(train)
    with pytest.raises(PackageError, match="trained on this package"):
        run_writer(train[3], 8, "estimated_gvt", estimator=back)
    # The same content under another id is recognised too.
    renamed = copy.deepcopy(train[3].data)
    with pytest.raises(PackageError, match="trained on this package"):
        back.predict(Package.from_dict(renamed))


def test_features_use_only_what_a_writer_sees():
    pkg = synthetic([5])[0]
    reps = sorted({c.get("representation", "") for c in pkg.candidates})
    blind = copy.deepcopy(pkg.data)
    for cand in blind["candidates"]:
        cand["coverage"] = {}
    for unit in blind["units"]:
        unit["weight"] = 123.0
    np.testing.assert_array_equal(visible_features(pkg, reps), visible_features(Package.from_dict(blind), reps))


def test_embedding_estimator_is_labelled_and_prefers_on_topic_text():
    data = {
        "format": "memaudit.package/1", "package_id": "emb", "budgets": [4],
        "experiences": [{"experience_id": f"e{i}", "text": t} for i, t in enumerate(
            ["my sister moved to berlin", "berlin is where my sister lives now", "my sister likes berlin"])],
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [
            {"candidate_id": "on", "experience_id": "e0", "cost": 2, "coverage": {"u": 1.0}, "text": "sister lives in berlin"},
            {"candidate_id": "off", "experience_id": "e1", "cost": 2, "coverage": {}, "text": "quarterly tax forms"},
        ],
    }
    pkg = Package.from_dict(data)
    values = EmbeddingEstimator().predict(pkg)
    assert values[0] > values[1] >= 0
    r = run_writer(pkg, 2, "estimated_greedy", estimator="embed")
    assert r.selected == ("on",) and r.estimate["estimator"] == "embedding"


def test_train_estimator_and_sweep_cli(tmp_path, capsys):
    write_package_set(generate_set("base", range(10)), tmp_path / "train.jsonl")
    write_package_set(generate_set("base", range(50, 52)), tmp_path / "test.jsonl")
    model = tmp_path / "model.json"
    assert main(["train-estimator", str(tmp_path / "train.jsonl"), "--out", str(model), "--test-frac", "0.2"]) == 0
    saved = json.loads(model.read_text())
    assert saved["split"] == {"seed": 0, "test_frac": 0.2, "train": 8, "test": 2}
    assert not set(saved["train"]["packages"]) & set(saved["test"]["packages"])
    assert main(["train-estimator", str(tmp_path / "train.jsonl"), "--out", str(model)]) == 2  # exists
    capsys.readouterr()
    assert main(["sweep", str(tmp_path / "test.jsonl"), "--budgets", "4,8", "--estimator", str(model), "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == 4
    for rec in records:
        assert set(ESTIMATED_WRITERS) <= set(rec["writers"])
        est = rec["writers"]["estimated_gvt"]
        assert est["estimate"]["test"]["package"] == rec["package_id"]
        assert est["estimate"]["split"] == saved["split"]
        assert est["ratio"] <= 1 + 1e-9
    # Sweeping a training package with that model fails that package, not the run.
    assert main(["sweep", str(tmp_path / "train.jsonl"), "--budgets", "4", "--estimator", str(model),
                 "--writers", "estimated_gvt", "--json"]) == 3
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    errors = [r for r in out if r["status"] == "error"]
    assert len(errors) == 8 and all("trained on this package" in r["error"] for r in errors)


def test_bad_estimator_file_is_bad_input(tmp_path, capsys):
    (tmp_path / "m.json").write_text('{"format": "memaudit.estimator/1", "kind": "ridge"}')
    pkg = tmp_path / "p.json"
    write_package_set([], tmp_path / "empty.jsonl")
    pkg.write_text(json.dumps(example_package().data))
    assert main(["sweep", str(pkg), "--budgets", "8", "--estimator", str(tmp_path / "m.json")]) == 2
    assert main(["sweep", str(pkg), "--budgets", "8", "--estimator", str(tmp_path / "none.json")]) == 2
    assert "train-estimator" in capsys.readouterr().err


def test_batch_and_score_take_the_estimator(tmp_path, capsys):
    write_package_set(generate_set("base", range(6)), tmp_path / "train.jsonl")
    write_package_set(generate_set("base", range(70, 72)), tmp_path / "test.jsonl")
    model = tmp_path / "model.json"
    assert main(["train-estimator", str(tmp_path / "train.jsonl"), "--out", str(model), "--test-frac", "0"]) == 0
    out = tmp_path / "b.jsonl"
    assert main(["batch", str(tmp_path / "test.jsonl"), "--out", str(out), "--budgets", "4",
                 "--writers", "gvt,estimated_gvt", "--estimator", str(model), "--backend", "serial"]) == 0
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(records) == 2
    assert all(r["writers"]["estimated_gvt"]["estimate"]["estimator"] == "ridge" for r in records)
    pkg = tmp_path / "one.json"
    pkg.write_text(json.dumps(next(iter(generate_set("base", [70])))))
    capsys.readouterr()
    assert main(["score", str(pkg), "--budget", "4", "--ids", "", "--estimator", str(model), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert set(rec["writers"]) == set(ESTIMATED_WRITERS)
    assert rec["writers"]["estimated_gvt"]["ratio"] <= 1 + 1e-9


@pytest.mark.parametrize("spec", ["embed:zzz", "embed:hashing:abc", "embed:st"])
def test_an_unknown_embedder_is_refused_before_a_batch_writes_anything(tmp_path, capsys, spec):
    from memaudit_fast.suites.small import generate_package

    sets = tmp_path / "s.jsonl"
    sets.write_text(json.dumps(generate_package("base", seed=1)) + "\n")
    out = tmp_path / "r.jsonl"
    assert main(["batch", str(sets), "--out", str(out), "--estimator", spec, "--writers", "estimated_gvt"]) == 2
    assert spec in capsys.readouterr().err and not out.exists()
