"""The arbiter's embedder: ``auto`` is wordllama when installed (else hashing), ``best`` compares
the offline embedders, and the import command says which one ran and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.model.io import load_package
from memaudit_fast.systems import embedding_arbiter
from memaudit_fast.systems.arbiter import embedder_choice

EXAMPLE = example_package_path()
MEM0_EXPORT = {"results": [
    {"id": "m1", "memory": "Lives in Porto", "created_at": "2024-03-01T10:00:00Z"},
    {"id": "m2", "memory": "Teaches nursing at the university", "created_at": "2024-04-01T10:00:00Z"},
]}


@pytest.fixture
def without_wordllama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memaudit_fast.writers.embed.wordllama_available", lambda: False)


def test_auto_is_wordllama_when_installed() -> None:
    pytest.importorskip("wordllama")
    assert embedder_choice("auto") == (["wordllama"], "auto: wordllama is installed")
    judge = embedding_arbiter(load_package(EXAMPLE), embedder="auto").judge
    assert judge.embedder.spec == "wordllama"
    assert judge.thresholds.stats["embedder"] == "wordllama"
    assert judge.thresholds.stats["embedder_choice"] == "auto: wordllama is installed"
    assert "compared" not in judge.thresholds.stats


@pytest.mark.usefixtures("without_wordllama")
def test_auto_is_hashing_without_wordllama_and_says_so() -> None:
    judge = embedding_arbiter(load_package(EXAMPLE), embedder="auto").judge
    assert judge.embedder.spec.startswith("hashing")
    assert judge.thresholds.stats["embedder_choice"] == "auto: wordllama is not installed, so hashing"


@pytest.mark.usefixtures("without_wordllama")
def test_best_with_one_offline_embedder_compares_nothing() -> None:
    judge = embedding_arbiter(load_package(EXAMPLE), embedder="best").judge
    assert judge.embedder.spec.startswith("hashing")
    assert judge.thresholds.stats["embedder_choice"] == "best: the highest partial F1 of hashing"
    assert "compared" not in judge.thresholds.stats


def test_a_named_embedder_reports_no_choice() -> None:
    judge = embedding_arbiter(load_package(EXAMPLE), embedder="hashing:512").judge
    assert judge.embedder.spec == "hashing:512"
    assert "embedder_choice" not in judge.thresholds.stats


def test_given_thresholds_keep_the_auto_choice_and_refuse_best() -> None:
    package = load_package(EXAMPLE)
    judge = embedding_arbiter(package, embedder="auto", thresholds=(0.6, 0.4)).judge
    assert judge.thresholds.method == "given"
    assert judge.thresholds.stats["embedder_choice"].startswith("auto: ")
    with pytest.raises(UsageError, match="best"):
        embedding_arbiter(package, embedder="best", thresholds=(0.6, 0.4))


def _import(tmp_path: Path, *extra: str) -> int:
    export = tmp_path / "get_all.json"
    export.write_text(json.dumps(MEM0_EXPORT))
    return main(["import", "mem0", str(export), "--package", str(EXAMPLE),
                 "--out", str(tmp_path / "union.json"), "--no-cache", "--force", *extra])


def test_import_says_auto_ran_wordllama(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("wordllama")
    assert _import(tmp_path) == 0
    err = capsys.readouterr().err
    assert "arbiter: wordllama (auto: wordllama is installed) cosine" in err
    union = json.loads((tmp_path / "union.json").read_text())
    arbiter = union["meta"]["systems"]["mem0"]["arbiter"]
    assert arbiter["embedder"] == "wordllama"
    assert arbiter["calibration"]["stats"]["embedder_choice"] == "auto: wordllama is installed"


@pytest.mark.usefixtures("without_wordllama")
def test_import_says_auto_fell_back_to_hashing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(tmp_path) == 0
    assert "arbiter: hashing:1024 (auto: wordllama is not installed, so hashing) cosine" in capsys.readouterr().err


def test_import_with_a_named_embedder_prints_it_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(tmp_path, "--embedder", "hashing") == 0
    assert "arbiter: hashing:1024 cosine" in capsys.readouterr().err


def test_import_refuses_best_with_thresholds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(tmp_path, "--embedder", "best", "--thresholds", "0.6,0.4") == 2
    assert "best" in capsys.readouterr().err
