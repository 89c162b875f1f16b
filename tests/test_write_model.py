"""--write-model: each certifying MILP as .mps / .lp files any MILP solver can re-check."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import highspy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from memaudit_fast.model.compiled import compile_package, store_problems
from memaudit_fast.model.examples import example_package, example_package_path
from memaudit_fast.model.package import Package
from memaudit_fast.solve.certify import certify
from memaudit_fast.solve.exact import solve
from strategies import packages


def read_back(path: str) -> tuple[float, list[float], list[str]]:
    """Solve a written model from its file alone: (optimum, column values, column names)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(path) == highspy.HighsStatus.kOk
    h.setOptionValue("mip_rel_gap", 0.0)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    lp = h.getLp()
    assert lp.sense_ == highspy.ObjSense.kMaximize
    return float(h.getInfo().objective_function_value), list(h.getSolution().col_value), list(lp.col_names_)


def sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_files(entry: dict, pkg: Package, budget: float, opt: float) -> None:
    c = compile_package(pkg)
    columns = json.loads(Path(entry["columns"]["path"]).read_text())
    assert sha256(entry["columns"]["path"]) == entry["columns"]["sha256"]
    assert columns["package_id"] == pkg.package_id and columns["sense"] == "maximize"
    assert {f["format"] for f in entry["files"]} == {"mps", "lp"}
    for f in entry["files"]:
        assert Path(f["path"]).is_file() and sha256(f["path"]) == f["sha256"]
        value, x, names = read_back(f["path"])
        if entry["role"] == "exact":
            assert value == pytest.approx(opt, rel=1e-6, abs=1e-6)
        store = [columns["x"][int(n[1:])] for n, v in zip(names, x) if n.startswith("x") and v > 0.5]
        assert not store_problems(c, store, budget)
        if entry["role"] == "exact":
            assert c.objective([c.index_of()[s] for s in store]) == pytest.approx(opt, rel=1e-6, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(packages(max_candidates=8), st.sampled_from([1.0, 2.5, 4.0]))
def test_written_models_give_the_same_optimum(tmp_path_factory, data, budget):
    pkg = Package.from_dict(data)
    (result,) = solve(pkg, budgets=[budget])
    out = tmp_path_factory.mktemp("models")
    cert = certify(pkg, result, "highs", write_model=out)
    assert cert.model_files is not None
    log1p = any(s.name == "log1p" for s in compile_package(pkg).saturations)
    assert [e["role"] for e in cert.model_files] == (["inner", "outer"] if log1p else ["exact"])
    for entry in cert.model_files:
        if entry["files"]:
            check_files(entry, pkg, budget, result.value)
        else:  # nothing can be stored: no column, no MPS, and OPT is 0
            assert result.value == 0 and json.loads(Path(entry["columns"]["path"]).read_text())["x"] == []


def test_outer_model_bounds_the_log1p_optimum(tmp_path):
    data = example_package().data
    data = {**data, "objective": {"saturation": "log1p"}}
    pkg = Package.from_dict(data)
    (result,) = solve(pkg, budgets=[30])
    cert = certify(pkg, result, "highs", write_model=tmp_path)
    by_role = {e["role"]: e for e in cert.model_files}
    inner = read_back(by_role["inner"]["files"][0]["path"])[0]
    outer = read_back(by_role["outer"]["files"][0]["path"])[0]
    assert inner <= result.value + 1e-6 <= outer + 2e-6


def test_solve_and_certify_commands_write_and_name_the_files(tmp_path, capsys):
    out = tmp_path / "models"
    assert main(["solve", str(example_package_path()), "--budget", "8,30", "--certify", "highs",
                 "--write-model", str(out), "--json"]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    for rec in records:
        (entry,) = rec["certificate"]["model_files"]
        check_files(entry, example_package(), rec["budget"], rec["opt"])
        # The id had a "/" (made "_"): a digest of the id tells it from a package named with "_".
        assert Path(entry["files"][0]["path"]).name == \
            f"example_lisbon-porto-{hashlib.sha256(b'example/lisbon-porto').hexdigest()[:8]}__B{rec['budget']:g}.mps"
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "certificate"}) + "\n" for r in records))
    again = tmp_path / "again"
    assert main(["certify", str(results), "--package", str(example_package_path()), "--solver", "highs",
                 "--write-model", str(again), "--json"]) == 0
    certified = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["certificate"]["model_files"][0]["files"][0]["sha256"] for r in certified] == \
        [r["certificate"]["model_files"][0]["files"][0]["sha256"] for r in records]


def test_write_model_needs_a_certifier_and_a_directory(tmp_path, capsys):
    assert main(["solve", str(example_package_path()), "--budget", "8", "--write-model", str(tmp_path)]) == 2
    (tmp_path / "file").write_text("x")
    assert main(["solve", str(example_package_path()), "--budget", "8", "--certify", "highs",
                 "--write-model", str(tmp_path / "file"), "--json"]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_write_model_never_writes_over_a_file_and_keeps_packages_apart(tmp_path, capsys):
    out = tmp_path / "models"
    args = ["solve", str(example_package_path()), "--budget", "8", "--certify", "highs", "--write-model", str(out),
            "--json"]
    assert main(args) == 0
    capsys.readouterr()
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    # Run again into the same directory: refused, each file as it was.
    assert main(args) == 2
    assert "exists already" in capsys.readouterr().err
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before
    # Ids that read the same once made safe for a file name, and budgets six digits do not
    # tell apart, get files of their own.
    from memaudit_fast.solve.milp import model_stem

    assert model_stem("small/base/s0000", 4.0) != model_stem("small_base_s0000", 4.0)
    assert model_stem("p", 1000000.5) != model_stem("p", 1000000.4)
    assert model_stem("p", 8.0) == "p__B8"
