"""A LoCoMo conversation end to end: natural package, ENGRAM store, union, diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.model.package import Package
from memaudit_fast.systems import build_union, embedding_arbiter, read_own, score_store
from memaudit_fast.systems.union import base_package, system_candidates


def test_engram_store_of_a_locomo_conversation(locomo_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    from memaudit_fast.suites.locomo import locomo_package, read_locomo
    from memaudit_fast.writers.builders import build_store
    from memaudit_fast.writers.embed import get_embedder
    from memaudit_fast.writers.export import export_store
    from memaudit_fast.writers.llm import OfflineLLM
    from memaudit_fast.writers.locomo_turns import load_locomo

    path = locomo_path
    record = read_locomo(path)[0]
    package = Package.from_dict(locomo_package(record, source=str(path)))
    conv = load_locomo(path, [record["sample_id"]])[0]
    embedder = get_embedder("hashing")
    store = build_store("engram", conv.turns, embedder, OfflineLLM(embedder), sample_id=conv.sample_id)
    export = read_own(export_store(store, tmp_path / "memories.jsonl"), "engram")
    assert len(export.memories) > 50

    arbiter = embedding_arbiter(package, embedder="hashing", cache=tmp_path / "cache.sqlite")
    calibration = arbiter.judge.thresholds
    assert calibration.method == "calibrated" and calibration.stats["population"] == "derived"
    assert calibration.stats["partial_f1"] > 0.3  # measured 0.50-0.60 on these conversations
    union = build_union(package, export, arbiter)
    assert base_package(union.data)["candidates"] == package.data["candidates"]
    memories = system_candidates(union.data, "engram")
    # ENGRAM records quote their turns, so turns a record cites are often judged covered.
    cited = sum(1 for m in memories for t in m["source_turns"] if f"ev:{t}" in m["coverage"])
    assert cited > 10

    budget = min(package.budgets)
    [rec] = score_store(union, [budget], time_limit=30)
    block = rec["systems"]["engram"]
    assert rec["opt"] >= rec["package_opt"]["value"] - 1e-9
    assert block["full_store_ratio"] == 0.0 and "above the budget" in block["reasons"]["full_store_ratio"]
    assert 0 < block["upper_pruned_ratio"] <= 1 + 1e-9
    assert block["upper_pruned_greedy_value"] <= block["upper_pruned_value"] + 1e-9
    json.dumps(rec)  # a JSON record
