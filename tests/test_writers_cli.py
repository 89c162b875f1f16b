"""memaudit write / retrieve / eval-retrieval, the export format, and one real LoCoMo run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("faiss")

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.writers.builders import open_store
from memaudit_fast.writers.embed import get_embedder
from memaudit_fast.writers.export import read_export, write_export
from memaudit_fast.writers.locomo_turns import load_locomo
from memaudit_fast.writers.retrieval_eval import evaluate_retrieval, recall_at_budget
from memaudit_fast.writers.sample import mini_locomo
from memaudit_fast.writers.store import ContextItem


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    second = mini_locomo()
    second["sample_id"] = "mini-2"
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([mini_locomo(), second]))
    return path


@pytest.mark.parametrize("writer", ["membox", "engram", "flat"])
def test_write_then_retrieve(writer: str, locomo_file: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stores"
    code = main(["write", writer, "--locomo", str(locomo_file), "--out", str(out),
                 "--sample-id", "mini-2", "--embedder", "hashing:512", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[0])
    assert summary["sample_id"] == "mini-2" and summary["embedder"] == "hashing:512"
    assert sorted(p.name for p in out.iterdir()) == ["mini-2"]
    records = list(read_export(out / "mini-2" / "memories.jsonl"))
    assert records and all(r["source_turns"] for r in records)
    # The parent holds exactly one store, so it may be named instead of the store itself.
    code = main(["retrieve", str(out), "When did Ben adopt Pixel?", "--json"])
    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["writer"] == writer and answer["items"]
    assert any("D1:6" in item["source_turns"] for item in answer["items"])
    code = main(["retrieve", str(out / "mini-2"), "Pixel", "--budget", "30"])
    assert code == 0
    text = capsys.readouterr().out
    words = int(text.splitlines()[0].split(", ")[1].split()[0])
    assert 0 < words <= 30


def test_retrieve_rejects_a_directory_of_several_stores(locomo_file: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stores"
    assert main(["write", "engram", "--locomo", str(locomo_file), "--out", str(out),
                 "--embedder", "hashing:256"]) == 0
    capsys.readouterr()
    assert main(["retrieve", str(out), "anything"]) == 2
    assert "mini-1, mini-2" in capsys.readouterr().err
    assert main(["retrieve", str(tmp_path / "nowhere"), "anything"]) == 2


def test_eval_retrieval_reports_every_category(locomo_file: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "eval.json"
    code = main(["eval-retrieval", "--locomo", str(locomo_file), "--sample-id", "mini-1",
                 "--embedder", "hashing:512", "--budgets", "20,400", "--out", str(report), "--quiet"])
    assert code == 0
    out, err = capsys.readouterr()
    assert "Evidence recall at 20 words" in out and "| all | 4 |" in out and err == ""
    body = json.loads(report.read_text())
    assert main(["eval-retrieval", "--locomo", str(locomo_file), "--sample-id", "mini-1",
                 "--embedder", "hashing:512", "--budgets", "20,400", "--json"]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)["cells"] == body["cells"] and "eval-retrieval: 3/3 stores" in printed.err
    assert body["systems"] == ["membox", "membox-boxes", "engram", "flat"]
    assert body["skipped_questions"] == 1
    cells = {(c["system"], c["category"], c["budget"]): c for c in body["cells"]}
    for system in body["systems"]:
        assert cells[(system, "all", 20)]["mean_words"] <= 20
        # 400 words hold the whole mini conversation: every evidence turn is found.
        assert cells[(system, "all", 400)]["recall"] == 1.0
    assert main(["eval-retrieval", "--locomo", str(locomo_file), "--writers", "mem0"]) == 2


def test_recall_at_budget_uses_first_fit() -> None:
    items = [ContextItem("a b c d e f", ("D1:1",), 0.9, "box", "box-0"),
             ContextItem("g h", ("D1:2",), 0.8, "event", "event-0"),
             ContextItem("i j k", ("D1:3",), 0.7, "event", "event-1")]
    assert recall_at_budget(items, ["D1:1", "D1:3"], 5) == (0.5, 5)  # skips the long box
    assert recall_at_budget(items, ["D1:1", "D1:3"], 11) == (1.0, 11)


def test_export_checks_its_fields(tmp_path: Path) -> None:
    good = {"memory_id": "m1", "text": "t", "source_turns": ["D1:1"], "time": None, "kind": "box"}
    assert write_export([good], tmp_path / "ok.jsonl") == 1
    with pytest.raises(PackageError, match="source_turns"):
        write_export([{**good, "source_turns": "D1:1"}], tmp_path / "bad.jsonl")
    with pytest.raises(PackageError, match="duplicate"):
        write_export([good, good], tmp_path / "dup.jsonl")
    (tmp_path / "missing.jsonl").write_text(json.dumps({"memory_id": "x", "text": "t"}) + "\n")
    with pytest.raises(PackageError, match="line 1.*source_turns"):
        list(read_export(tmp_path / "missing.jsonl"))


def test_real_conversation_builds_reopens_and_retrieves(tmp_path: Path, locomo_path: Path) -> None:
    path = locomo_path
    conv = load_locomo(path)[0]
    conv.qa = conv.qa[:80]  # enough questions to see recall, few enough to stay fast
    embedder = get_embedder("auto")
    result = evaluate_retrieval([conv], embedder, budgets=(200,))
    for system in result.systems:
        assert result.cell(system, "all", 200).recall > 0.05
    for writer in ("membox", "engram"):
        code = main(["write", writer, "--locomo", str(path), "--sample-id", conv.sample_id,
                     "--out", str(tmp_path / writer), "--embedder", embedder.spec])
        assert code == 0
        store = open_store(tmp_path / writer / conv.sample_id)
        again = open_store(tmp_path / writer / conv.sample_id)
        for qa in conv.qa[:25]:
            assert store.retrieve(qa.question) == again.retrieve(qa.question)
