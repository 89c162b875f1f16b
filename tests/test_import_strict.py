"""memaudit import refuses what it cannot import faithfully, and says what it tolerates.

- a Membox/ENGRAM store written for another LoCoMo conversation than the package's;
- Mem0 history rows that change a memory the history never added;
- A-Mem links to notes the export does not hold (tolerated, as A-Mem leaves them behind, but
  said on stderr), and note fields of the wrong type;
- an export holding no memories at all.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.systems import (
    build_union,
    read_amem,
    read_letta,
    read_mem0,
    read_own,
    read_system,
    score_store,
)
from memaudit_fast.systems.arbiter import Arbiter
from memaudit_fast.systems.records import ExportedMemory, SystemExport
from oracles.exports import (
    ENGRAM_RECORDS,
    GET_ALL,
    HISTORY_ROWS,
    LETTA,
    MEM0_HISTORY_DDL,
    MEMBOX_RECORDS,
    NOTES,
)
from oracles.judges import ZeroJudge
from oracles.objective import brute_solver

EXAMPLE = example_package_path()
STORE_FORMAT = "memaudit.writer-store/1"


def import_cli(tmp_path: Path, system: str, export: Path, *extra: str, package: Path = EXAMPLE,
               out: str = "u.json") -> int:
    return main(["import", system, str(export), "--package", str(package), "--out", str(tmp_path / out),
                 "--embedder", "hashing", "--thresholds", "0.6,0.4", "--no-cache", *extra])


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ------------------------------------------------- 1. a store of another LoCoMo conversation


def locomo_like_package(tmp_path: Path, sample_id: str | None) -> Path:
    data = json.loads(EXAMPLE.read_text())
    if sample_id is not None:
        data["meta"] = {**data.get("meta", {}), "suite": "locomo", "sample_id": sample_id}
    path = tmp_path / f"package-{sample_id}.json"
    path.write_text(json.dumps(data))
    return path


def writer_store(tmp_path: Path, writer: str, sample_id: Any, name: str | None = None) -> Path:
    store = tmp_path / "stores" / writer / (name or str(sample_id))
    store.mkdir(parents=True)
    (store / "manifest.json").write_text(json.dumps({"format": STORE_FORMAT, "writer": writer,
                                                     "sample_id": sample_id}))
    write_jsonl(store / "memories.jsonl", MEMBOX_RECORDS if writer == "membox" else ENGRAM_RECORDS)
    return store


@pytest.mark.parametrize("writer", ["membox", "engram"])
@pytest.mark.parametrize("as_file", [False, True])
def test_store_of_another_conversation_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  writer: str, as_file: bool) -> None:
    package = locomo_like_package(tmp_path, "conv-26")
    store = writer_store(tmp_path, writer, "conv-30")
    export = store / "memories.jsonl" if as_file else store
    assert import_cli(tmp_path, writer, export, package=package) == 2
    err = capsys.readouterr().err
    assert "'conv-30'" in err and "'conv-26'" in err and "sample_id" in err
    assert not (tmp_path / "u.json").exists()


def test_store_of_the_same_conversation_is_imported(tmp_path: Path) -> None:
    package = locomo_like_package(tmp_path, "conv-26")
    store = writer_store(tmp_path, "membox", "conv-26")
    assert import_cli(tmp_path, "membox", store, package=package) == 0
    union = json.loads((tmp_path / "u.json").read_text())
    assert union["meta"]["systems"]["membox"]["details"]["sample_id"] == "conv-26"
    # The file inside the store directory is read with its manifest too.
    export = read_own(store / "memories.jsonl", "membox")
    assert export.details["sample_id"] == "conv-26"


def test_stores_of_two_conversations_in_one_union_are_refused(tmp_path: Path) -> None:
    # A package that names no conversation: the systems already in the union still do.
    first = build_union(json.loads(EXAMPLE.read_text()), read_own(writer_store(tmp_path, "engram", "conv-26"), "engram"),
                        Arbiter(ZeroJudge()))
    other = read_own(writer_store(tmp_path, "membox", "conv-30"), "membox")
    with pytest.raises(PackageError, match="conv-30") as err:
        build_union(first, other, Arbiter(ZeroJudge()))
    assert "conv-26" in str(err.value) and err.value.field == "sample_id"
    same = read_own(writer_store(tmp_path, "membox", "conv-26", name="again"), "membox")
    assert build_union(first, same, Arbiter(ZeroJudge())).data["meta"]["systems"]["membox"]["memories"] == 2


def test_the_conversation_is_checked_before_the_arbiter_and_a_replaced_system_does_not_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memaudit_fast.cli import import_store

    first = writer_store(tmp_path, "engram", "conv-30", name="wrong")
    assert import_cli(tmp_path, "engram", first, out="u1.json") == 0
    arbiters = []
    real = import_store._arbiter
    monkeypatch.setattr(import_store, "_arbiter", lambda *a: arbiters.append(1) or real(*a))
    right = writer_store(tmp_path, "engram", "conv-26", name="right")
    # Into the union of conversation conv-30: refused before any arbiter is made.
    assert import_cli(tmp_path, "membox", writer_store(tmp_path, "membox", "conv-26"),
                      package=tmp_path / "u1.json", out="u2.json") == 2
    assert arbiters == []
    # Replacing the system of the other conversation by the right store is allowed.
    assert import_cli(tmp_path, "engram", right, "--replace", package=tmp_path / "u1.json", out="u3.json") == 0
    union = json.loads((tmp_path / "u3.json").read_text())
    assert union["meta"]["systems"]["engram"]["details"]["sample_id"] == "conv-26"


def test_store_manifest_with_a_bad_sample_id_is_refused(tmp_path: Path) -> None:
    store = writer_store(tmp_path, "membox", ["conv-26"], name="bad")
    with pytest.raises(PackageError, match="expected a non-empty string") as err:
        read_own(store, "membox")
    assert err.value.field == "sample_id"


def test_file_beside_a_manifest_of_the_other_writer_is_refused(tmp_path: Path) -> None:
    store = writer_store(tmp_path, "engram", "conv-26")
    write_jsonl(store / "memories.jsonl", MEMBOX_RECORDS)  # records of the other writer
    with pytest.raises(PackageError, match="written by 'engram'"):
        read_own(store / "memories.jsonl", "membox")


# ------------------------------------------------- 2. Mem0 history rows of unknown memories


def history_json(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "history.json"
    path.write_text(json.dumps(rows))
    return path


ADD_M1 = {"memory_id": "m1", "old_memory": None, "new_memory": "Likes tea", "event": "ADD",
          "created_at": "2024-01-01T00:00:00Z", "is_deleted": 0}


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
@pytest.mark.parametrize("with_get_all", [False, True])
def test_mem0_change_of_a_memory_never_added_is_refused(tmp_path: Path, event: str, with_get_all: bool) -> None:
    unknown = {"memory_id": "zz99", "old_memory": "Likes coffee", "new_memory": "Likes tea" if event == "UPDATE" else None,
               "event": event, "created_at": "2024-02-01T00:00:00Z", "is_deleted": int(event == "DELETE")}
    history = history_json(tmp_path, [ADD_M1, unknown])
    get_all = None
    if with_get_all:
        get_all = tmp_path / "get_all.json"
        get_all.write_text(json.dumps({"results": [{"id": "m1", "memory": "Likes tea"}]}))
    with pytest.raises(PackageError) as err:
        read_mem0(get_all, history=history)
    assert err.value.record == "record [1]" and err.value.field == "memory_id"
    assert "'zz99'" in str(err.value) and event in str(err.value) and "ADD" in str(err.value)
    assert err.value.source == str(history)


def test_mem0_unknown_id_in_the_sqlite_history_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "history.db"
    con = sqlite3.connect(db)
    con.execute(MEM0_HISTORY_DDL)
    rows = [r for r in HISTORY_ROWS if r[0] != "r3"]  # 77aa is never added ...
    rows.append(("r6", "77aa", "Teaches nursing", "Teaches nursing at the university", "UPDATE",
                 "2024-04-01T10:00:00Z", "2024-04-02T10:00:00Z", 0, None, None))  # ... but updated
    con.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    assert import_cli(tmp_path, "mem0", db) == 2
    err = capsys.readouterr().err
    assert "history row 5" in err and "'77aa'" in err and "'memory_id'" in err


def test_mem0_update_of_a_memory_get_all_lists_is_kept(tmp_path: Path) -> None:
    # The history may start later than the store (Mem0 logged the ADD elsewhere), but get_all
    # shows that the memory exists: the change is real and kept.
    get_all = tmp_path / "get_all.json"
    get_all.write_text(json.dumps({"results": [{"id": "m2", "memory": "Lives in Porto"}]}))
    history = history_json(tmp_path, [{"memory_id": "m2", "old_memory": "Lives in Lisbon",
                                        "new_memory": "Lives in Porto", "event": "UPDATE",
                                        "updated_at": "2024-05-01T00:00:00Z", "is_deleted": 0}])
    export = read_mem0(get_all, history=history)
    assert [m.memory_id for m in export.memories] == ["m2", "m2@update1"]


# ------------------------------------------------- 3. A-Mem links to missing notes


def test_amem_dangling_links_are_said_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = [{**NOTES[0], "links": ["n2", "gone"]}, {**NOTES[1], "links": ["n1", 7]}]
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(notes))
    assert import_cli(tmp_path, "amem", path) == 0
    err = capsys.readouterr().err
    assert "note 'n1' -> 'gone'" in err and "note 'n2' -> '7'" in err and "2 links" in err
    export = read_amem(path)
    assert export.details["dangling_links"] == ["7", "gone"]
    assert len(export.notices) == 1 and "'gone'" in export.notices[0]


def test_amem_without_dangling_links_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(NOTES))
    assert import_cli(tmp_path, "amem", path) == 0
    assert "note:" not in capsys.readouterr().err


def test_mem0_deleted_but_listed_is_said_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Same kind: get_all and the history taken at different moments; kept, and now said.
    get_all = tmp_path / "get_all.json"
    get_all.write_text(json.dumps({"results": [{"id": "m1", "memory": "Likes tea"}]}))
    history = history_json(tmp_path, [ADD_M1, {"memory_id": "m1", "old_memory": "Likes tea", "new_memory": None,
                                               "event": "DELETE", "updated_at": "2024-03-01T00:00:00Z",
                                               "is_deleted": 1}])
    assert import_cli(tmp_path, "mem0", get_all, "--history", str(history)) == 0
    err = capsys.readouterr().err
    assert "'m1'" in err and "deleted" in err and "get_all" in err


# ------------------------------------------------- 4. fields of the wrong type


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("retrieval_count", "many", "integer >= 0"),
        ("retrieval_count", "2.5", "integer >= 0"),
        ("retrieval_count", -1, "integer >= 0"),
        ("retrieval_count", 1.5, "integer >= 0"),
        ("retrieval_count", True, "integer >= 0"),
        ("retrieval_count", [1], "integer >= 0"),
        ("evolution_history", "changed twice", "list"),
        ("evolution_history", 3, "list"),
        ("evolution_history", {"a": 1}, "list"),
        ("evolution_history", "{\"a\": 1}", "list"),
        ("context", ["General"], "string"),
        ("category", ["work"], "string"),
        ("content", ["Ana teaches nursing."], "string"),
        ("id", ["x"], "string id"),
        ("keywords", "Ana", "list of strings"),
        ("tags", 5, "list of strings"),
        ("timestamp", ["202404011000"], "YYYYMMDDHHMM"),
        ("last_accessed", 2.5, "YYYYMMDDHHMM"),
        ("links", {"n1": "strong"}, "number"),
    ],
)
def test_amem_field_of_the_wrong_type_is_named(tmp_path: Path, field: str, value: Any, message: str) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps(NOTES[0]) + "\n" + json.dumps({**NOTES[1], field: value}) + "\n")
    with pytest.raises(PackageError, match=message) as err:
        read_amem(path)
    assert (err.value.record, err.value.field) == ("line 2", field)


def test_amem_chroma_encodings_of_numbers_and_lists_are_read(tmp_path: Path) -> None:
    # What A-Mem's Chroma collection gives back: every value as text.
    note = {**NOTES[0], "retrieval_count": "2", "evolution_history": "[]", "links": "[\"n2\"]",
            "timestamp": "202405021530", "keywords": json.dumps(NOTES[0]["keywords"])}
    early = {**NOTES[1], "retrieval_count": 0, "evolution_history": [{"tags": ["x"]}], "links": {"n1": 0.8}}
    path = tmp_path / "notes.json"
    path.write_text(json.dumps([note, early]))
    export = read_amem(path)
    assert [m.memory_id for m in export.memories] == ["n1", "n2"]
    assert export.memories[1].extra["links"] == ["n1"]


@pytest.mark.parametrize(
    ("mutate", "record", "field"),
    [
        (lambda d: d["results"][0].update(score="high"), "results[0]", "score"),
        (lambda d: d["results"][0].update(score=True), "results[0]", "score"),
    ],
)
def test_mem0_item_field_of_the_wrong_type_is_named(tmp_path: Path, mutate: Any, record: str, field: str) -> None:
    data = json.loads(json.dumps(GET_ALL))
    mutate(data)
    path = tmp_path / "get_all.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PackageError, match="number") as err:
        read_mem0(path)
    assert (err.value.record, err.value.field) == (record, field)


@pytest.mark.parametrize("field", ["actor_id", "role"])
def test_mem0_history_field_of_the_wrong_type_is_named(tmp_path: Path, field: str) -> None:
    history = history_json(tmp_path, [{**ADD_M1, field: ["user"]}])
    with pytest.raises(PackageError, match="string") as err:
        read_mem0(None, history=history)
    assert (err.value.record, err.value.field) == ("record [0]", field)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("description", ["About"], "string"), ("read_only", "no", "true/false"), ("metadata", [1], "object")],
)
def test_letta_block_field_of_the_wrong_type_is_named(tmp_path: Path, field: str, value: Any, message: str) -> None:
    data = json.loads(json.dumps(LETTA))
    data["blocks"][0][field] = value
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PackageError, match=message) as err:
        read_letta(path)
    assert (err.value.record, err.value.field) == ("blocks[0]", field)


# ------------------------------------------------- 5. an export holding no memories


def empty_exports(tmp_path: Path) -> list[tuple[str, Path, tuple[str, ...]]]:
    (tmp_path / "get_all.json").write_text(json.dumps({"results": [], "relations": []}))
    (tmp_path / "get_all_list.json").write_text("[]")
    (tmp_path / "rows.json").write_text("[]")
    (tmp_path / "only_adds.json").write_text(json.dumps([ADD_M1]))
    (tmp_path / "letta.json").write_text(json.dumps({"blocks": [{"label": "human", "value": "---\n"}],
                                                     "passages": []}))
    (tmp_path / "letta_labels.json").write_text(json.dumps({"blocks": [{"label": "human", "value": ""},
                                                                       {"label": "persona", "value": "Kind."}]}))
    (tmp_path / "notes.json").write_text("[]")
    (tmp_path / "notes_dict.json").write_text("{}")
    (tmp_path / "notes.jsonl").write_text("\n")
    (tmp_path / "memories.jsonl").write_text("")
    return [
        ("mem0", tmp_path / "get_all.json", ()),
        ("mem0", tmp_path / "get_all_list.json", ()),
        ("mem0", tmp_path / "get_all.json", ("--history", str(tmp_path / "only_adds.json"))),
        ("letta", tmp_path / "letta.json", ()),
        ("letta", tmp_path / "letta_labels.json", ("--labels", "human")),
        ("amem", tmp_path / "notes.json", ()),
        ("amem", tmp_path / "notes_dict.json", ()),
        ("amem", tmp_path / "notes.jsonl", ()),
        ("membox", tmp_path / "memories.jsonl", ()),
        ("engram", tmp_path / "memories.jsonl", ()),
    ]


def test_empty_exports_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for system, path, extra in empty_exports(tmp_path):
        assert import_cli(tmp_path, system, path, *extra) == 2, (system, path, extra)
        err = capsys.readouterr().err
        assert "holds no memories" in err and str(path) in err, err
        assert not (tmp_path / "u.json").exists()


def test_empty_history_alone_is_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    rows.write_text("[]")
    with pytest.raises(PackageError, match="holds no memories"):
        read_mem0(None, history=rows)
    with pytest.raises(PackageError, match="holds no memories"):
        read_system("mem0", None, history=rows)


def test_empty_store_in_a_union_has_no_selection_quality() -> None:
    # A union built through the API may still hold an empty system: its selection quality is
    # not 1 (0 of 0), it is undefined, with the reason.
    union = build_union(json.loads(EXAMPLE.read_text()), SystemExport("mem0", "empty", []), Arbiter(ZeroJudge()))
    [rec] = score_store(union, [16], solver=brute_solver)
    block = rec["systems"]["mem0"]
    for key in ("recency_selection_quality", "salience_selection_quality", "greedy_upper_quality"):
        assert block[key] is None
        assert block["reasons"][key] == "no memories"
    full = build_union(json.loads(EXAMPLE.read_text()),
                       SystemExport("mem0", "one", [ExportedMemory("a", "Likes tea", "memory")]),
                       Arbiter(ZeroJudge()))
    [rec] = score_store(full, [16], solver=brute_solver)
    assert rec["systems"]["mem0"]["recency_selection_quality"] == 1.0  # 0 of a 0 ceiling, as before
