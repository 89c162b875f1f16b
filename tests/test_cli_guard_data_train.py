"""memaudit train-estimator: never over a training set, --alpha 0 fits, options named as typed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.evaluate.estimators import fit_ridge
from memaudit_fast.model.io import save_package
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.suites.small import generate_package, generate_set
from oracles.cli_runs import run, snapshot


@pytest.fixture
def train_set(tmp_path: Path) -> Path:
    path = tmp_path / "train.jsonl"
    write_package_set(generate_set("base", range(3)), path)
    return path


# --- the inputs are never an output ---------------------------------------------------------------


def test_out_equal_to_a_set_is_refused(tmp_path: Path, train_set: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "more.jsonl"
    write_package_set(generate_set("base", range(3, 5)), other)
    before = snapshot(tmp_path)
    for target in (train_set, other):
        code, err = run(["train-estimator", str(train_set), str(other), "--out", str(target), "--force"], capsys)
        assert code == 2
        assert f"refusing to write over the input {target}" in err
    assert snapshot(tmp_path) == before


def test_a_hard_link_to_a_set_is_refused(tmp_path: Path, train_set: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "model.json"
    os.link(train_set, link)
    before = snapshot(tmp_path)
    code, err = run(["train-estimator", str(train_set), "--out", str(link), "--force"], capsys)
    assert code == 2 and "refusing to write over the input" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("member", ["p0.json", "more.jsonl", "art/queries.jsonl"])
def test_a_file_a_set_directory_holds_is_refused(tmp_path: Path, member: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    sets = tmp_path / "sets"
    sets.mkdir()
    save_package(Package.from_dict(generate_package("base", 0)), sets / "p0.json")
    write_package_set(generate_set("base", range(1, 3)), sets / "more.jsonl")
    (sets / "art").mkdir()  # an artifact directory's file (its content is not read before the refusal)
    (sets / "art" / "queries.jsonl").write_text('{"query_id": "q0"}\n')
    before = snapshot(tmp_path)
    code, err = run(["train-estimator", str(sets), "--out", str(sets / member), "--force"], capsys)
    assert code == 2
    assert f"refusing to write over the input {sets / member}" in err
    assert snapshot(tmp_path) == before


def test_the_set_directory_itself_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sets = tmp_path / "sets"
    sets.mkdir()
    save_package(Package.from_dict(generate_package("base", 0)), sets / "p0.json")
    before = snapshot(tmp_path)
    code, err = run(["train-estimator", str(sets), "--out", str(sets), "--force"], capsys)
    assert code == 2 and "refusing to write over the input" in err
    assert snapshot(tmp_path) == before


def test_a_new_file_beside_the_set_is_written(tmp_path: Path, train_set: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model.json"
    code, err = run(["train-estimator", str(train_set), "--out", str(out)], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["kind"] == "ridge"


# --- --alpha 0 ------------------------------------------------------------------------------------


def test_alpha_zero_is_least_squares(tmp_path: Path, train_set: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ols.json"
    code, err = run(["train-estimator", str(train_set), "--out", str(out), "--alpha", "0"], capsys)
    assert code == 0, err
    model = json.loads(out.read_text())
    assert model["alpha"] == 0.0
    assert all(np.isfinite(model["coef"]))


def test_alpha_zero_matches_a_tiny_ridge_penalty() -> None:
    packages = [Package.from_dict(p) for p in generate_set("base", range(4))]
    ols = fit_ridge(packages, alpha=0.0)
    tiny = fit_ridge(packages, alpha=1e-9)
    assert ols.train["r2"] == pytest.approx(tiny.train["r2"], abs=1e-6)


def test_the_help_says_what_alpha_zero_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train-estimator", "--help"]) == 0
    assert "0 = ordinary" in " ".join(capsys.readouterr().out.split())


# --- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "said"), [
    (["--seed", "-1"], "--seed -1: expected a number >= 0"),
    (["--seed", "-7"], "--seed -7: expected a number >= 0"),
    (["--alpha", "-1"], "--alpha must be finite and >= 0"),
    (["--alpha", "nan"], "--alpha must be finite and >= 0"),
    (["--alpha", "inf"], "--alpha must be finite and >= 0"),
    (["--test-frac", "0.9"], "--test-frac 0.9 holds out all 3 packages"),
    (["--test-frac", "1"], "--test-frac must be in [0, 1)"),
])
def test_bad_options_are_named_and_nothing_is_written(tmp_path: Path, train_set: Path, options: list[str],
                                                      said: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model.json"
    code, err = run(["train-estimator", str(train_set), "--out", str(out), *options], capsys)
    assert code == 2
    assert said in err
    assert not out.exists()
