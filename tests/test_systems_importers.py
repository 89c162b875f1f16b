"""Importers read stores exactly as Mem0, Letta, A-Mem and the project's writers export them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memaudit_fast.errors import PackageError, UsageError
from memaudit_fast.systems import (
    read_amem,
    read_letta,
    read_mem0,
    read_own,
    read_system,
    split_block,
)
from memaudit_fast.systems.records import parse_time
from oracles.exports import (
    ENGRAM_RECORDS,
    GET_ALL,
    HISTORY_ROWS,
    LETTA,
    MEM0_HISTORY_DDL,
    MEM0_OLD_HISTORY_DDL,
    MEMBOX_RECORDS,
    NOTES,
)

# ---------------------------------------------------------------------------------- Mem0


def write_history(path: Path, rows: list[tuple], ddl: str = MEM0_HISTORY_DDL) -> Path:
    con = sqlite3.connect(path)
    con.execute(ddl)
    marks = ",".join("?" * len(rows[0]))
    con.executemany(f"INSERT INTO history VALUES ({marks})", rows)
    con.commit()
    con.close()
    return path


@pytest.fixture
def mem0_files(tmp_path: Path) -> tuple[Path, Path]:
    get_all = tmp_path / "get_all.json"
    get_all.write_text(json.dumps(GET_ALL))
    return get_all, write_history(tmp_path / "history.db", HISTORY_ROWS)


def test_mem0_get_all_alone_gives_active_memories(mem0_files: tuple[Path, Path]) -> None:
    export = read_mem0(mem0_files[0])
    assert [(m.memory_id, m.text, m.status) for m in export.memories] == [
        ("9f1c", "Lives in Porto", "active"),
        ("77aa", "Teaches nursing at the university", "active"),
    ]
    first = export.memories[0]
    # Timed by updated_at when present, with its offset.
    assert first.time == "2024-05-02T09:00:00-08:00"
    assert first.time_key == parse_time("2024-05-02T17:00:00Z")
    assert export.memories[1].extra["metadata"] == {"category": "work"}


def test_mem0_history_keeps_updates_and_deletions(mem0_files: tuple[Path, Path]) -> None:
    export = read_mem0(mem0_files[0], history=mem0_files[1])
    by_id = {m.memory_id: m for m in export.memories}
    update = by_id["9f1c@update1"]
    assert update.status == "superseded" and update.kind == "update"
    assert update.text == "[2024-05-02] Updated: Lives in Lisbon -> Lives in Porto"
    deletion = by_id["c3d0@delete"]
    assert deletion.status == "deleted"
    assert deletion.text == "[2024-04-01] Deleted: Works as a nurse at the city hospital"
    assert deletion.extra["history_row"] == "history row 5"
    assert export.by_status() == {"active": 2, "deleted": 1, "superseded": 1}
    assert export.details["events"] == {"ADD": 3, "UPDATE": 1, "DELETE": 1}
    assert [m.position for m in export.memories] == list(range(4))


def test_mem0_history_alone_rebuilds_the_store(tmp_path: Path) -> None:
    db = write_history(tmp_path / "h.db", HISTORY_ROWS)
    export = read_mem0(db)  # a .db given as the export is the history
    active = {m.memory_id: m.text for m in export.memories if m.status == "active"}
    assert active == {"9f1c": "Lives in Porto", "77aa": "Teaches nursing at the university"}
    assert export.details["active_from"] == "history"


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_mem0_history_alone_as_json_given_as_the_export(tmp_path: Path, suffix: str) -> None:
    columns = ("id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted",
               "actor_id", "role")
    rows = [dict(zip(columns, row)) for row in HISTORY_ROWS]
    path = tmp_path / f"history{suffix}"
    path.write_text(json.dumps(rows) if suffix == ".json" else "".join(json.dumps(r) + "\n" for r in rows))
    export = read_mem0(path)
    expected = read_mem0(None, history=write_history(tmp_path / "h.db", HISTORY_ROWS))
    assert [(m.memory_id, m.text, m.status) for m in export.memories] == \
        [(m.memory_id, m.text, m.status) for m in expected.memories]
    assert export.details["active_from"] == "history"


def test_mem0_old_history_schema_and_json_rows(tmp_path: Path) -> None:
    old = [("a", "m1", None, "Likes tea", "ADD", "2024-01-01T00:00:00", 0),
           ("b", "m1", "Likes tea", None, "DELETE", "2024-02-01T00:00:00", 1)]
    db = write_history(tmp_path / "old.db", old, MEM0_OLD_HISTORY_DDL)
    from_db = read_mem0(None, history=db)
    assert [(m.memory_id, m.text) for m in from_db.memories] == [("m1@delete", "[2024-02-01] Deleted: Likes tea")]
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps({
        "id": r[0], "memory_id": r[1], "old_memory": r[2], "new_memory": r[3], "event": r[4],
        "created_at": r[5], "updated_at": None, "is_deleted": bool(r[6])}) for r in old) + "\n")
    from_json = read_mem0(None, history=rows)
    assert [m.text for m in from_json.memories] == [m.text for m in from_db.memories]


@pytest.mark.parametrize(
    ("mutate", "record", "field"),
    [
        (lambda d: d["results"][1].pop("memory"), "results[1]", "memory"),
        (lambda d: d["results"][1].update(id=""), "results[1]", "id"),
        (lambda d: d["results"][1].update(created_at="yesterday"), "results[1]", "created_at"),
        (lambda d: d["results"][1].update(id="9f1c"), "results[1]", "id"),
        (lambda d: d["results"][0].update(metadata=[1]), "results[0]", "metadata"),
    ],
)
def test_mem0_bad_item_is_named(tmp_path: Path, mutate, record: str, field: str) -> None:
    data = json.loads(json.dumps(GET_ALL))
    mutate(data)
    path = tmp_path / "get_all.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PackageError) as err:
        read_mem0(path)
    assert (err.value.record, err.value.field, err.value.source) == (record, field, str(path))


def test_mem0_bad_history_row_is_named(tmp_path: Path) -> None:
    rows = list(HISTORY_ROWS)
    rows[3] = ("r4", "c3d0", None, "x", "MERGE", "2024-03-01T11:00:00Z", None, 0, None, None)
    db = write_history(tmp_path / "h.db", rows)
    with pytest.raises(PackageError) as err:
        read_mem0(None, history=db)
    assert err.value.record == "history row 4" and err.value.field == "event"
    assert "MERGE" in str(err.value) and "ADD, UPDATE, DELETE" in str(err.value)
    rows[3] = ("r4", "c3d0", None, None, "UPDATE", "2024-03-01T11:00:00Z", None, 0, None, None)
    db2 = write_history(tmp_path / "h2.db", rows)
    with pytest.raises(PackageError, match="previous memory") as err:
        read_mem0(None, history=db2)
    assert err.value.field == "old_memory"


def test_mem0_file_that_is_not_a_history_database(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(PackageError, match="history"):
        read_mem0(None, history=db)


# ---------------------------------------------------------------------------------- Letta


def test_letta_block_split_rule() -> None:
    atoms, dropped = split_block(LETTA["blocks"][0]["value"])
    assert atoms == ["Name: Ana Sousa.", "Lives in Porto.", "Moved there from Lisbon in 2024.",
                     "Teaches nursing at the university"]
    assert dropped == 1
    # Abbreviation-like dots without a following capital do not split.
    assert split_block("Works at St. luke's clinic. Likes tea")[0] == ["Works at St. luke's clinic.", "Likes tea"]


def test_letta_blocks_and_passages(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(LETTA))
    export = read_letta(path)
    ids = [m.memory_id for m in export.memories]
    assert ids == ["human#1", "human#2", "human#3", "human#4", "persona#1", "passage-a1", "passage-a2"]
    by_id = {m.memory_id: m for m in export.memories}
    assert by_id["human#2"].extra == {"label": "human", "block_atom": 2, "block_id": "block-1"}
    assert by_id["human#2"].time is None  # blocks carry no time
    assert by_id["passage-a1"].extra["tags"] == ["sport"]
    deleted = by_id["passage-a2"]
    assert deleted.status == "deleted"
    assert deleted.text == "[2024-04-02] Deleted: Ana works at the city hospital."
    assert export.details["separators_dropped"] == 1
    only_human = read_letta(path, labels=["human"])
    assert [m.memory_id for m in only_human.memories][:4] == ids[:4]
    assert only_human.details["blocks_skipped"] == 1
    # A label no block has (a typo) is refused, not an empty store.
    with pytest.raises(UsageError, match="'humans'"):
        read_letta(path, labels=["human", "humans"])


def test_letta_agent_state_and_separate_passages(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"id": "agent-1", "memory": {"blocks": LETTA["blocks"][:1]}}))
    passages = tmp_path / "passages.jsonl"
    passages.write_text("\n".join(json.dumps(p) for p in LETTA["passages"]) + "\n")
    export = read_letta(state, passages=passages)
    assert sum(m.kind == "core_atom" for m in export.memories) == 4
    assert sum(m.kind == "passage" for m in export.memories) == 2


@pytest.mark.parametrize(
    ("mutate", "record", "field", "message"),
    [
        (lambda d: d["blocks"][0].update(limit=10), "blocks[0]", "value", "limit 10"),
        (lambda d: d["blocks"][1].update(label="human"), "blocks[1]", "label", "second block"),
        (lambda d: d["blocks"][1].pop("value"), "blocks[1]", "value", "missing"),
        (lambda d: d["passages"][1].update(is_deleted="yes"), "passages[1]", "is_deleted", "true/false"),
        (lambda d: d["passages"][0].update(tags="sport"), "passages[0]", "tags", "list of strings"),
        (lambda d: d["passages"][1].update(id="passage-a1"), "passages[1]", "id", "duplicate"),
    ],
)
def test_letta_bad_record_is_named(tmp_path: Path, mutate, record: str, field: str, message: str) -> None:
    data = json.loads(json.dumps(LETTA))
    mutate(data)
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PackageError, match=message) as err:
        read_letta(path)
    assert (err.value.record, err.value.field) == (record, field)


def test_letta_needs_blocks_or_passages(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"agents": []}))
    with pytest.raises(PackageError, match="neither 'blocks' nor 'passages'"):
        read_letta(path)


# ---------------------------------------------------------------------------------- A-Mem


def test_amem_views(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(NOTES))
    full = read_amem(path)
    assert full.memories[0].text == ("Ana moved to Porto in May 2024. Context: Relocation of the user. "
                                     "Keywords: Ana, Porto, move. Tags: personal, location.")
    assert full.memories[1].text == "Ana teaches nursing. Context: General."
    content = read_amem(path, view="content")
    assert [m.text for m in content.memories] == [n["content"] for n in NOTES]
    assert full.memories[0].time_key == parse_time("2024-05-02T15:30:00Z")
    assert full.memories[0].extra["links"] == ["n2"]
    with pytest.raises(UsageError):
        read_amem(path, view="summary")


def test_amem_dict_and_chroma_encodings(tmp_path: Path) -> None:
    chroma = {"n1": {**NOTES[0], "keywords": json.dumps(NOTES[0]["keywords"]), "tags": json.dumps(NOTES[0]["tags"]),
                     "links": json.dumps(["n2", "gone"]), "timestamp": 202405021530},
              "n2": {k: v for k, v in NOTES[1].items() if k != "id"}}
    path = tmp_path / "memories.json"
    path.write_text(json.dumps(chroma))
    export = read_amem(path)
    assert [m.memory_id for m in export.memories] == ["n1", "n2"]
    assert export.memories[0].extra["keywords"] == ["Ana", "Porto", "move"]
    assert export.details["dangling_links"] == ["gone"]


@pytest.mark.parametrize(
    ("note", "field", "message"),
    [
        ({"id": "x", "content": "a", "timestamp": "2024-05-02"}, "timestamp", "YYYYMMDDHHMM"),
        ({"id": "x", "content": "a", "timestamp": "202413011200"}, "timestamp", "YYYYMMDDHHMM"),
        ({"id": "x", "content": 3}, "content", "string"),
        ({"id": "x", "content": "a", "keywords": [1]}, "keywords", "list of strings"),
        ({"content": "a"}, "id", "missing"),
        ({"id": "x", "content": "a", "links": [None]}, "links", "note ids"),
    ],
)
def test_amem_bad_note_is_named(tmp_path: Path, note: dict, field: str, message: str) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps(NOTES[1]) + "\n\n" + json.dumps(note) + "\n")
    with pytest.raises(PackageError, match=message) as err:
        read_amem(path)
    assert err.value.record == "line 3" and err.value.field == field


def test_amem_key_and_id_must_agree(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"n9": NOTES[0]}))
    with pytest.raises(PackageError, match="must match"):
        read_amem(path)


# ------------------------------------------------------------------- Membox and ENGRAM


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_own_exports(tmp_path: Path) -> None:
    membox = read_own(write_jsonl(tmp_path / "m.jsonl", MEMBOX_RECORDS), "membox")
    assert [m.kind for m in membox.memories] == ["box", "event"]
    assert membox.memories[0].source_turns == ("D1:3", "D1:4")
    assert membox.memories[0].extra["topic"] == "support group"
    assert membox.memories[1].time_key == parse_time("2023-05-01")  # coarse anchor read
    engram = read_system("engram", write_jsonl(tmp_path / "e.jsonl", ENGRAM_RECORDS))
    assert engram.details["kinds"] == {"episodic": 1, "semantic": 1, "procedural": 0}
    assert engram.memories[1].time is None and engram.memories[1].time_key is None


def test_own_export_of_the_other_writer_is_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "e.jsonl", ENGRAM_RECORDS)
    with pytest.raises(PackageError, match="expected one of box, event") as err:
        read_own(path, "membox")
    assert err.value.field == "kind" and err.value.source == str(path)


def test_own_store_directory_and_manifest(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "manifest.json").write_text(json.dumps({"format": "memaudit.writer-store/1", "writer": "engram"}))
    with pytest.raises(PackageError, match="no memories.jsonl"):
        read_own(store, "engram")
    write_jsonl(store / "memories.jsonl", ENGRAM_RECORDS)
    assert len(read_own(store, "engram").memories) == 2
    with pytest.raises(PackageError, match="written by 'engram'"):
        read_own(store, "membox")


def test_own_bad_line_is_named(tmp_path: Path) -> None:
    bad = [ENGRAM_RECORDS[0], {**ENGRAM_RECORDS[1], "source_turns": "D2:1"}]
    path = write_jsonl(tmp_path / "e.jsonl", bad)
    with pytest.raises(PackageError) as err:
        read_own(path, "engram")
    assert (err.value.record, err.value.field, err.value.source) == ("line 2", "source_turns", str(path))
