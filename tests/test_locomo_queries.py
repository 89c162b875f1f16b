"""Per-query natural packages (the paper's Natural-87 protocol) from LoCoMo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.io import load_package
from memaudit_fast.model.package import Package
from memaudit_fast.suites.locomo import locomo_package, read_locomo
from memaudit_fast.suites.locomo_queries import (
    DEFAULT_QUERY_BUDGETS,
    locomo_query_packages,
    query_package,
)
from oracles.packages import handmade

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo7.json"


def three_sessions() -> dict:
    record = handmade()
    conv = record["conversation"]
    conv["session_3"] = [{"speaker": "Ana", "dia_id": f"D3:{k}", "text": f"Pixel ran {k} laps today."}
                         for k in range(1, 5)]
    conv["session_4"] = [{"speaker": "Bo", "dia_id": "D4:1", "text": "Pottery is going well."}]
    record["qa"].append({"question": "How many laps?", "answer": "4", "evidence": ["D3:4"], "category": 1})
    return record


def check_cut(pkg: dict, conv: dict, context: int) -> None:
    """The invariants of a per-query package against its conversation package."""
    Package.from_dict(pkg)
    (query,) = pkg["queries"]
    assert [u["unit_id"] for u in pkg["units"]] == query["required_unit_ids"]
    assert all(u["weight"] == 1.0 for u in pkg["units"])
    evidence = {u.removeprefix("ev:") for u in query["required_unit_ids"]}
    turns = conv["experiences"]
    sessions = {e["session_id"] for e in turns if e["experience_id"] in evidence}
    kept = {e["experience_id"] for e in pkg["experiences"]}
    core = [i for i, e in enumerate(turns) if e["session_id"] in sessions]
    assert {turns[i]["experience_id"] for i in core} <= kept
    for i, e in enumerate(turns):  # a turn outside the sessions is kept iff within K of them
        if e["session_id"] not in sessions:
            near = min(abs(i - j) for j in core) <= context
            assert (e["experience_id"] in kept) == near, e["experience_id"]
    assert [e["timestamp"] for e in pkg["experiences"]] == sorted(e["timestamp"] for e in pkg["experiences"])
    by_id = {c["candidate_id"]: c for c in conv["candidates"]}
    expected = [c["candidate_id"] for c in conv["candidates"] if c["experience_id"] in kept]
    assert [c["candidate_id"] for c in pkg["candidates"]] == expected
    wanted = set(query["required_unit_ids"])
    for cand in pkg["candidates"]:
        full = by_id[cand["candidate_id"]]
        assert cand["coverage"] == {u: a for u, a in full["coverage"].items() if u in wanted}
        assert cand["group"] == full["group"] and cand["cost"] == full["cost"]
    for d in evidence:
        assert by_id[f"{d}:raw"]["candidate_id"] in {c["candidate_id"] for c in pkg["candidates"]}


@pytest.mark.parametrize("context", [0, 1, 2, 10])
def test_cut_rules_on_a_handmade_conversation(context):
    record = three_sessions()
    conv = locomo_package(record, budgets=list(DEFAULT_QUERY_BUDGETS))
    pkgs = [query_package(conv, q, budgets=conv["budgets"], context=context) for q in conv["queries"]]
    assert [p["package_id"] for p in pkgs] == [f"locomo-tiny-1-{q['query_id']}" for q in conv["queries"]]
    for pkg in pkgs:
        check_cut(pkg, conv, context)
        assert pkg["budgets"] == [30.0, 60.0, 100.0]
        assert pkg["meta"]["context"] == context
    laps = pkgs[-1]
    ids = [e["experience_id"] for e in laps["experiences"]]
    assert {"D3:1", "D3:4"} <= set(ids)
    if context == 0:
        assert ids == ["D3:1", "D3:2", "D3:3", "D3:4"]
    if context == 1:
        assert ids == ["D2:1", "D3:1", "D3:2", "D3:3", "D3:4", "D4:1"]


def test_cli_per_query_writes_sets_and_directories(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([three_sessions()]))
    out = tmp_path / "pq.jsonl"
    assert main(["natural", "locomo", str(path), "--per-query", "--context", "1", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [d["package_id"] for d in lines] == ["locomo-tiny-1-q0", "locomo-tiny-1-q1", "locomo-tiny-1-q2",
                                                "locomo-tiny-1-q5", "locomo-tiny-1-q6"]
    assert main(["natural", "locomo", str(path), "--per-query", "--out", str(tmp_path / "dir"),
                 "--budgets", "5,10"]) == 0
    assert load_package(tmp_path / "dir" / "locomo-tiny-1-q6.json").budgets == [5.0, 10.0]
    assert main(["natural", "locomo", str(path), "--per-query", "--out", str(tmp_path / "dir")]) == 2
    assert main(["natural", "locomo", str(path), "--per-query", "--budget-fracs", "0.1", "--out",
                 str(tmp_path / "x.jsonl")]) == 2
    assert main(["natural", "locomo", str(path), "--context", "2", "--out", str(tmp_path / "y.jsonl")]) == 2
    assert main(["natural", "locomo", str(path), "--per-query", "--context", "-1", "--out",
                 str(tmp_path / "z.jsonl")]) == 2
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "y.jsonl").exists()


def test_sweep_gives_every_writer_on_per_query_packages(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([three_sessions()]))
    out = tmp_path / "pq.jsonl"
    assert main(["natural", "locomo", str(path), "--per-query", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["sweep", str(out), "--estimator", "embed", "--json"]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(records) == 5 * 3
    for rec in records:
        assert rec["status"] == "optimal" and rec["budget"] in (30, 60, 100)
        assert rec["writers"]["estimated_gvt"]["estimate"]["estimator"] == "embedding"
        assert all(w["ratio"] <= 1 + 1e-9 for w in rec["writers"].values())
    assert main(["sweep", str(out), "--estimator", "embed"]) == 0
    table = capsys.readouterr().out
    assert "estimated_gvt" in table and "mean of 5" in table


def test_import_and_score_store_on_a_per_query_package(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([three_sessions()]))
    assert main(["natural", "locomo", str(path), "--per-query", "--out", str(tmp_path / "d")]) == 0
    notes = [{"id": "n1", "content": "Ana adopted a greyhound named Pixel.", "timestamp": "202305011300"},
             {"id": "n2", "content": "Bo likes pottery.", "timestamp": "202305031300"}]
    (tmp_path / "notes.json").write_text(json.dumps(notes))
    union = tmp_path / "union.json"
    assert main(["import", "amem", str(tmp_path / "notes.json"), "--package", str(tmp_path / "d" / "locomo-tiny-1-q0.json"),
                 "--out", str(union), "--embedder", "hashing", "--cache", str(tmp_path / "c.sqlite")]) == 0
    capsys.readouterr()
    assert main(["score-store", str(union), "--json"]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["budget"] for r in records] == [30, 60, 100]
    assert all("amem" in r["systems"] for r in records)


@pytest.fixture(scope="module")
def shared_file() -> Path:
    if not LOCOMO.is_file():
        pytest.skip("../shared/data/locomo/locomo7.json is not beside this checkout")
    return LOCOMO


def test_every_question_with_evidence_of_the_shared_file(shared_file):
    records = read_locomo(shared_file)
    convs = [locomo_package(r, budgets=list(DEFAULT_QUERY_BUDGETS)) for r in records]
    pkgs = list(locomo_query_packages(shared_file, context=2))
    assert len(pkgs) == sum(len(c["queries"]) for c in convs)
    assert len({p["package_id"] for p in pkgs}) == len(pkgs)
    by_sample = {c["meta"]["sample_id"]: c for c in convs}
    for pkg in pkgs[::25]:
        check_cut(pkg, by_sample[pkg["meta"]["sample_id"]], 2)
