"""memaudit eval-retrieval and retrieve: never over the input, writer lists and budgets checked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("faiss")

from memaudit_fast.cli.main import main
from memaudit_fast.writers.sample import mini_locomo
from oracles.cli_runs import run, snapshot


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "locomo.json"
    path.parent.mkdir()
    path.write_text(json.dumps([mini_locomo()]))
    return path


EVAL = ["eval-retrieval", "--writers", "flat", "--embedder", "hashing:64", "--quiet", "--budgets", "50"]


# --- eval-retrieval --out ---------------------------------------------------------------------


def test_out_equal_to_the_locomo_input_is_refused(tmp_path: Path, locomo_file: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(tmp_path)
    code, err = run([*EVAL, "--locomo", str(locomo_file), "--out", str(locomo_file), "--force"], capsys)
    assert code == 2
    assert f"refusing to write over the input {locomo_file}" in err
    assert snapshot(tmp_path) == before


def test_another_spelling_of_the_input_is_refused(tmp_path: Path, locomo_file: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "results.json"
    os.link(locomo_file, link)
    spelled = locomo_file.parent / ".." / "in" / locomo_file.name
    before = snapshot(tmp_path)
    for out in (link, spelled):
        code, err = run([*EVAL, "--locomo", str(locomo_file), "--out", str(out), "--force"], capsys)
        assert code == 2 and "refusing to write over the input" in err
    assert snapshot(tmp_path) == before


def test_out_beside_the_input_is_written(tmp_path: Path, locomo_file: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    code, err = run([*EVAL, "--locomo", str(locomo_file), "--out", str(out)], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["conversations"] == ["mini-1"]


# --- eval-retrieval --writers -------------------------------------------------------------------


@pytest.mark.parametrize(("writers", "said"), [
    ("", "--writers is empty; give one or more of membox, engram, flat"),
    (" ", "--writers is empty"),
    ("flat,bogus", "--writers: unknown 'bogus'; choose from membox, engram, flat"),
])
def test_a_writer_list_without_a_writer_is_named(tmp_path: Path, locomo_file: Path, writers: str, said: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    code, err = run(["eval-retrieval", "--locomo", str(locomo_file), "--writers", writers, "--embedder",
                     "hashing:64", "--quiet", "--out", str(out)], capsys)
    assert code == 2
    assert said in err
    assert "evidence" not in err
    assert not out.exists()


def test_an_empty_sample_id_list_is_not_every_conversation(tmp_path: Path, locomo_file: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    code, err = run([*EVAL, "--locomo", str(locomo_file), "--sample-id", "", "--out", str(out)], capsys)
    assert code == 2
    assert "--sample-id is empty" in err
    assert not out.exists()


# --- retrieve --budget --------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path, locomo_file: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "stores"
    assert main(["write", "flat", "--locomo", str(locomo_file), "--out", str(out), "--quiet",
                 "--embedder", "hashing:64"]) == 0
    capsys.readouterr()
    return out / "mini-1"


@pytest.mark.parametrize("budget", ["-5", "-1", "0", "nan", "inf", "-inf", "1e3", "2.5", ""])
def test_a_budget_that_is_not_a_positive_word_count_is_refused(store: Path, budget: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["retrieve", str(store), "Pixel", "--budget", budget])
    captured = capsys.readouterr()
    assert code == 2
    assert "argument --budget" in captured.err
    assert captured.out == ""


def test_a_positive_budget_retrieves(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retrieve", str(store), "Pixel", "--budget", "40", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert 0 < answer["words"] <= 40
