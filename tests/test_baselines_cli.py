"""memaudit sweep and memaudit score on real files."""

from __future__ import annotations

import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.evaluate.baselines import BASELINE_WRITERS
from memaudit_fast.model.examples import example_package
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import write_package_set
from oracles.packages import density_trap, update_package
from oracles.writers import brute_force, install_brute_force_solver, reference_store


@pytest.fixture(autouse=True)
def exact_solver(monkeypatch):
    install_brute_force_solver(monkeypatch)


@pytest.fixture
def package_set(tmp_path):
    out = tmp_path / "set.jsonl"
    write_package_set([Package.from_dict(density_trap(64)), Package.from_dict(update_package())], out)
    return str(out)


def test_sweep_json_has_one_record_per_package_and_budget(package_set, capsys):
    code = main(["sweep", package_set, "--budgets", "2,4", "--drop", "tombstone,compound_update",
                 "--certify", "highs", "--json"])
    assert code == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["package_id"], r["budget"]) for r in records] == [
        ("trap/64", 2.0), ("trap/64", 4.0), ("upd", 2.0), ("upd", 4.0)]
    for r in records:
        pkg = Package.from_dict(density_trap(64) if r["package_id"] == "trap/64" else update_package())
        assert r["opt"] == pytest.approx(brute_force(pkg, r["budget"])[0])
        assert set(r["writers"]) == set(BASELINE_WRITERS)
        for name, block in r["writers"].items():
            if name != "random":
                assert block["selected"] == reference_store(pkg, r["budget"], name)
            assert block["ratio"] == pytest.approx(block["value"] / r["opt"])
        assert r["certificate"]["agrees"] is True
        assert "tombstone,compound_update" in r["ablation"]
    upd4 = records[3]["ablation"]["tombstone,compound_update"]
    assert upd4["fraction_of_opt"] == pytest.approx(2.1 / 4.0) and upd4["removed"] == 2


def test_sweep_table_with_budget_fracs_and_means(package_set, capsys):
    assert main(["sweep", package_set, "--budget-fracs", "0.5", "--writers", "gvt,density_only"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["package", "budget", "OPT", "status", "gvt", "density_only"]
    # Fractions of total cost: trap/64 costs 6 in all (B = 3), upd 8 (B = 4).
    assert lines[2].split()[:2] == ["trap/64", "3"] and lines[3].split()[:2] == ["upd", "4"]
    mean_row = lines[4].split()
    assert mean_row[:5] == ["mean", "of", "2", "0.5", "of"]
    gvt = [float(line.split()[4]) for line in lines[2:4]]
    assert float(mean_row[-2]) == pytest.approx(sum(gvt) / 2, abs=1e-4)


def test_sweep_needs_budgets_for_packages_without_them(tmp_path, capsys):
    data = density_trap(4)
    del data["budgets"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["sweep", str(path)]) == 2
    assert "give --budgets or --budget-fracs" in capsys.readouterr().err
    assert main(["sweep", str(path), "--budgets", "4", "--writers", "nope"]) == 2
    assert main(["sweep", str(path), "--budgets", "4", "--drop", ","]) == 2


def test_sweep_reports_bad_packages_and_goes_on(tmp_path, capsys):
    good = tmp_path / "a.json"
    good.write_text(json.dumps(density_trap(4)), encoding="utf-8")
    bad = tmp_path / "b.json"
    bad.write_text('{"format": "memaudit.package/1"}', encoding="utf-8")
    assert main(["sweep", str(tmp_path), "--budgets", "4", "--writers", "gvt", "--json"]) == 3
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[0]["package_id"] == "trap/4" and lines[1]["status"] == "error"


def test_score_command(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(example_package().data), encoding="utf-8")
    value, ids = brute_force(example_package(), 8)
    assert main(["score", str(path), "--budget", "8", "--ids", ",".join(ids), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["ratio"] == pytest.approx(1.0) and record["feasible"] is True

    store = tmp_path / "store.json"
    store.write_text(json.dumps({"selected": ids[:1]}), encoding="utf-8")
    assert main(["score", str(path), "--budget", "8", "--store", str(store), "--opt", str(value)]) == 0
    fields = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert fields["feasible"] == "yes" and fields["store"] == json.dumps(ids[:1])
    assert 0 < float(fields["ratio"]) < 1

    assert main(["score", str(path), "--budget", "8", "--ids", "nope,c1x"]) == 2
    assert "'nope'" in capsys.readouterr().err
    # Several budgets and no --budget: the command says so.
    assert main(["score", str(path), "--ids", ids[0]]) == 2
    assert "give --budget" in capsys.readouterr().err
