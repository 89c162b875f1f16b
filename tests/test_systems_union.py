"""The union package: a package's candidates plus each system's memories as one-member groups."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memaudit_fast.errors import PackageError, UsageError
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.model.io import load_package
from memaudit_fast.model.package import Package
from memaudit_fast.systems import build_union, embedding_arbiter, read_amem, read_mem0
from memaudit_fast.systems.arbiter import Arbiter, ArbiterCache
from memaudit_fast.systems.records import ExportedMemory, SystemExport
from memaudit_fast.systems.union import (
    base_package,
    system_candidates,
    system_names,
    system_package,
)

EXAMPLE = example_package_path()


class TableJudge:
    """Coverage from a table {memory text: {unit text: level}}; salience = 1/(1+position)."""

    def __init__(self, table: dict[str, dict[str, float]]) -> None:
        self.table = table

    def config(self) -> dict[str, Any]:
        return {"judge": "table", "table": json.dumps(self.table, sort_keys=True)}

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        return np.array([[self.table.get(m, {}).get(u, 0.0) for u in units] for m in memories]).reshape(
            len(memories), len(units))

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        return np.array([1.0 / (1 + i) for i in range(len(memories))]) if queries else None


def export_of(name: str, items: list[tuple[str, str, str | None]]) -> SystemExport:
    from memaudit_fast.systems.records import parse_time

    return SystemExport(name, f"{name}.json", [
        ExportedMemory(mid, text, "memory", "active", t, parse_time(t) if t else None, i)
        for i, (mid, text, t) in enumerate(items)
    ])


@pytest.fixture
def example() -> Package:
    return load_package(EXAMPLE)


def test_union_adds_one_member_groups_with_costs_and_coverage(example: Package) -> None:
    units = {u["unit_id"]: u["text"] for u in example.units}
    judge = TableJudge({"Lives in Porto now": {units["u_city"]: 1.0, units["u_city_old"]: 0.5}})
    export = export_of("mem0", [("a", "Lives in Porto now", "2024-05-01"), ("b", "Likes tea", None)])
    union = build_union(example, export, Arbiter(judge))
    assert isinstance(union, Package)
    added = system_candidates(union.data, "mem0")
    assert [c["candidate_id"] for c in added] == ["mem0:a", "mem0:b"]
    assert all(c["group"] == c["candidate_id"] and c["representation"] == "system:mem0" for c in added)
    assert [c["cost"] for c in added] == [4, 2]  # the package's cost model: words
    assert added[0]["coverage"] == {"u_city": 1.0, "u_city_old": 0.5} and added[1]["coverage"] == {}
    # Recency rank: memories without a time count as oldest.
    assert [c["recency_rank"] for c in added] == [1, 0]
    assert [c["salience"] for c in added] == [1.0, 0.5]
    info = union.data["meta"]["systems"]["mem0"]
    assert info["memories"] == 2 and info["store_cost"] == 6 and info["units_covered"] == 2
    assert union.package_id == "example/lisbon-porto+systems"
    assert union.data["meta"]["union"]["base_package_id"] == example.package_id
    # The package's own part is untouched; weights and units are the same.
    base = base_package(union.data)
    assert base["candidates"] == example.data["candidates"] and base["package_id"] == example.package_id
    assert union.unit_weights == example.unit_weights
    assert "systems" not in base["meta"]


def test_union_accumulates_and_replaces(example: Package, tmp_path: Path) -> None:
    judge = Arbiter(TableJudge({}))
    first = build_union(example, export_of("mem0", [("a", "Lives in Porto", None)]), judge)
    path = tmp_path / "u.json"
    path.write_text(json.dumps(first.data))
    second = build_union(load_package(path), export_of("amem", [("n1", "Teaches nursing", None)]), judge)
    assert system_names(second.data) == ["mem0", "amem"]
    assert second.package_id == first.package_id  # suffixed once
    assert len(second.candidates) == len(example.candidates) + 2
    with pytest.raises(UsageError, match="already holds"):
        build_union(second, export_of("mem0", [("a", "x", None)]), judge)
    replaced = build_union(second, export_of("mem0", [("z", "x y", None), ("w", "q", None)]), judge, replace=True)
    assert [c["candidate_id"] for c in system_candidates(replaced.data, "mem0")] == ["mem0:z", "mem0:w"]
    assert len(system_candidates(replaced.data, "amem")) == 1
    two = build_union(second, export_of("mem0", [("a", "x", None)]), judge, name="mem0-b")
    assert system_names(two.data) == ["mem0", "amem", "mem0-b"]
    sub = system_package(two.data, "amem")
    assert [c["candidate_id"] for c in sub["candidates"]] == ["amem:n1"]
    Package.from_dict(sub)


def test_union_cost_model_override_and_bad_names(example: Package) -> None:
    judge = Arbiter(TableJudge({}))
    export = export_of("mem0", [("a", "Lives in Porto now", None)])
    union = build_union(example, export, judge, cost_model="bytes")
    assert system_candidates(union.data, "mem0")[0]["cost"] == 8 + 1  # 8 + ceil(18/24)
    assert union.data["meta"]["systems"]["mem0"]["cost_model"] == "bytes"
    with pytest.raises(UsageError, match="cost model"):
        build_union(example, export, judge, cost_model="syllables")
    with pytest.raises(UsageError, match="system name"):
        build_union(example, export, judge, name="bad name")


def test_union_refuses_colliding_candidate_ids(example: Package) -> None:
    data = json.loads(json.dumps(example.data))
    data["candidates"][0]["candidate_id"] = "mem0:a"
    with pytest.raises(PackageError, match="already exists"):
        build_union(data, export_of("mem0", [("a", "x", None)]), Arbiter(TableJudge({})))


def test_offline_arbiter_end_to_end_with_cache(example: Package, tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps([
        {"id": "n1", "content": "The user lives in Porto.", "timestamp": "202405021530", "keywords": ["Porto"]},
        {"id": "n2", "content": "Reading a novel about the sea.", "timestamp": "202405031530"},
    ]))
    export = read_amem(notes, view="content")
    cache = tmp_path / "arb.sqlite"
    union = build_union(example, export, embedding_arbiter(example, embedder="hashing", cache=cache))
    n1 = system_candidates(union.data, "amem")[0]
    assert n1["coverage"].get("u_city") == 1.0  # verbatim unit text
    arb = union.data["meta"]["systems"]["amem"]["arbiter"]
    assert arb["judge"] == "embedding" and arb["calibration"]["method"] == "calibrated"
    assert arb["cache_misses"] == 2
    again = build_union(example, export, embedding_arbiter(example, embedder="hashing", cache=ArbiterCache(cache)))
    assert again.data["meta"]["systems"]["amem"]["arbiter"]["cache_hits"] == 2
    assert system_candidates(again.data, "amem") == system_candidates(union.data, "amem")


def test_mem0_history_memories_enter_the_union(example: Package, tmp_path: Path) -> None:
    get_all = tmp_path / "g.json"
    get_all.write_text(json.dumps({"results": [{"id": "m1", "memory": "The user lives in Porto."}]}))
    rows = tmp_path / "h.json"
    rows.write_text(json.dumps([
        {"memory_id": "m1", "old_memory": None, "new_memory": "The user lives in Lisbon.", "event": "ADD",
         "created_at": "2024-01-01T00:00:00Z", "is_deleted": 0},
        {"memory_id": "m1", "old_memory": "The user lives in Lisbon.", "new_memory": "The user lives in Porto.",
         "event": "UPDATE", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-05-01T00:00:00Z",
         "is_deleted": 0},
    ]))
    units = {u["unit_id"]: u["text"] for u in example.units}
    update_text = "[2024-05-01] Updated: The user lives in Lisbon. -> The user lives in Porto."
    judge = TableJudge({update_text: {units["u_city_old"]: 1.0, units["u_city"]: 1.0}})
    union = build_union(example, read_mem0(get_all, history=rows), Arbiter(judge))
    by_status = {c["memory_status"]: c for c in system_candidates(union.data, "mem0")}
    assert by_status["superseded"]["coverage"] == {"u_city": 1.0, "u_city_old": 1.0}
    assert by_status["superseded"]["cost"] == len(update_text.split())
    assert union.data["meta"]["systems"]["mem0"]["by_status"] == {"active": 1, "superseded": 1}


def _edited_union(example: Package, edit: Any) -> dict[str, Any]:
    units = {u["unit_id"]: u["text"] for u in example.units}
    judge = TableJudge({"Lives in Porto now": {units["u_city"]: 1.0}})
    export = export_of("mem0", [("a", "Lives in Porto now", "2024-05-01"), ("b", "Likes tea", None)])
    data = json.loads(json.dumps(build_union(example, export, Arbiter(judge)).data))
    edit(data)
    return data


def _first_system(data: dict[str, Any], key: str, value: Any) -> None:
    next(c for c in data["candidates"] if c.get("system")).update({key: value})


@pytest.mark.parametrize("edit,field", [
    (lambda d: d["meta"].update(systems="x"), "meta.systems"),
    (lambda d: d["meta"].update(systems=[1]), "meta.systems"),
    (lambda d: d["meta"].update(union="x"), "meta.union"),
    (lambda d: _first_system(d, "salience", "high"), "salience"),
    (lambda d: _first_system(d, "recency_rank", "x"), "recency_rank"),
    (lambda d: _first_system(d, "system", "ghost"), "system"),
    (lambda d: d["meta"]["systems"]["mem0"].update(memories=99), "meta.systems.mem0.memories"),
])
def test_a_malformed_union_is_refused_naming_the_field(example: Package, edit: Any, field: str) -> None:
    from memaudit_fast.systems.diagnostics import score_store

    data = _edited_union(example, edit)
    with pytest.raises(PackageError, match=field.replace(".", r"\.")):
        score_store(data, [8])
    judge = TableJudge({})
    with pytest.raises(PackageError, match=field.replace(".", r"\.")):
        build_union(Package.from_dict(data), export_of("amem", [("n", "Likes tea", None)]), Arbiter(judge))


def test_a_union_without_salience_values_is_scored(example: Package) -> None:
    from memaudit_fast.systems.diagnostics import score_store

    data = _edited_union(example, lambda d: _first_system(d, "salience", None))
    (record,) = score_store(data, [8])
    assert record["systems"]["mem0"]["memories"] == 2
