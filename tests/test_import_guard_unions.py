"""memaudit import / score-store: what an import or a union must hold, refused with exit 2.

- a system memory sharing its group (a hand-edited union) is refused by score-store, which
  would otherwise score ratios above 1; an import whose memory would join an existing group is
  refused as a candidate-id clash is;
- a refused import writes nothing, not even the arbiter cache beside --out;
- A-Mem's JSON-text fields and Letta's passages are blamed on their own file, record and field;
- JSONL is split at '\\n' only and read gzipped from a file as from stdin;
- a Mem0 history that adds a memory twice or changes it after its DELETE is refused;
- a writer's memories.jsonl without its manifest is refused.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from memaudit_fast.model.examples import example_package_path
from oracles.cli_runs import run, snapshot
from oracles.exports import GET_ALL, LETTA, NOTES

EXAMPLE = example_package_path()

ADD = {"memory_id": "m1", "old_memory": None, "new_memory": "Vik has taken up running", "event": "ADD",
       "created_at": "2024-01-01T00:00:00Z", "is_deleted": 0}
UPDATE = {"memory_id": "m1", "old_memory": "Vik has taken up running", "new_memory": "Vik runs every day",
          "event": "UPDATE", "created_at": "2024-01-02T00:00:00Z", "is_deleted": 0}
DELETE = {"memory_id": "m1", "old_memory": "Vik runs every day", "new_memory": None,
          "event": "DELETE", "created_at": "2024-01-03T00:00:00Z", "is_deleted": 1}
LATE_UPDATE = {**UPDATE, "old_memory": "x", "new_memory": "Vik is back", "created_at": "2024-01-04T00:00:00Z"}


def import_argv(tmp_path: Path, system: str, export: Path | str, *extra: str, package: Path = EXAMPLE,
                cache: bool = False) -> list[str]:
    return ["import", system, str(export), "--package", str(package), "--out", str(tmp_path / "out" / "u.json"),
            "--embedder", "hashing", "--thresholds", "0.6,0.4", *([] if cache else ["--no-cache"]), *extra]


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


@pytest.fixture
def outdir(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


def mem0_union(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    export = write_json(tmp_path / "m0.json", GET_ALL)
    (tmp_path / "out").mkdir(exist_ok=True)
    code, err = run(import_argv(tmp_path, "mem0", export), capsys)
    assert code == 0, err
    return json.loads((tmp_path / "out" / "u.json").read_text())  # type: ignore[no-any-return]


# ------------------------------------------------- 1. score-store: one-member groups


@pytest.mark.parametrize("shared_with", ["system", "package"])
def test_score_store_refuses_a_system_memory_sharing_its_group(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               shared_with: str) -> None:
    union = mem0_union(tmp_path, capsys)
    mine = [c for c in union["candidates"] if c.get("system") == "mem0"]
    other = mine[1] if shared_with == "system" else next(c for c in union["candidates"] if "system" not in c)
    mine[0]["group"] = other["group"] = "G"
    path = write_json(tmp_path / "shared.json", union)
    assert run(["validate", str(path)], capsys)[0] == 0  # a valid package, not a scorable union
    code, err = run(["score-store", str(path), "--budgets", "30", "--json"], capsys)
    assert code == 2
    assert "shared.json" in err and "field 'group'" in err and repr(mine[0]["candidate_id"]) in err
    assert "Traceback" not in err and "internal error" not in err


def test_score_store_ratios_stay_at_most_one_on_an_imported_union(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = write_json(tmp_path / "u.json", mem0_union(tmp_path, capsys))
    assert run(["score-store", str(path), "--budgets", "5,30", "--json"], capsys)[0] == 0


# ------------------------------------------------- 2. import: a memory never joins a group


@pytest.mark.parametrize("how", ["group", "experience_id"])
def test_import_refuses_a_memory_whose_group_the_package_has(tmp_path: Path, outdir: Path,
                                                             capsys: pytest.CaptureFixture[str], how: str) -> None:
    package = json.loads(EXAMPLE.read_text())
    first_id = GET_ALL["results"][0]["id"]
    cand = package["candidates"][0]
    cand.pop("group", None)
    cand[how] = f"mem0:{first_id}"
    if how == "experience_id":
        package.setdefault("experiences", [])
        if not any(e.get("experience_id") == cand[how] for e in package["experiences"]):
            package["experiences"].append({"experience_id": cand[how], "text": "an experience"})
    pkg = write_json(tmp_path / "pkg.json", package)
    if run(["validate", str(pkg)], capsys)[0] != 0:
        pytest.skip("this package layout does not take the field")
    export = write_json(tmp_path / "m0.json", GET_ALL)
    code, err = run(import_argv(tmp_path, "mem0", export, package=pkg, cache=True), capsys)
    assert code == 2
    assert f"group 'mem0:{first_id}' already exists" in err and "m0.json" in err
    assert snapshot(outdir) == {}  # not even the arbiter cache


def test_import_under_another_name_avoids_the_group_clash(tmp_path: Path, outdir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    package = json.loads(EXAMPLE.read_text())
    package["candidates"][0]["group"] = f"mem0:{GET_ALL['results'][0]['id']}"
    pkg = write_json(tmp_path / "pkg.json", package)
    export = write_json(tmp_path / "m0.json", GET_ALL)
    code, err = run(import_argv(tmp_path, "mem0", export, "--name", "m0b", package=pkg), capsys)
    assert code == 0, err


# ------------------------------------------------- 5/6. A-Mem JSON-text fields, nothing written


@pytest.mark.parametrize(("key", "text", "field"), [
    ("keywords", '["\\ud800"]', "keywords[0]"),
    ("tags", '["ok", "\\udfff"]', "tags[1]"),
    ("links", '["\\ud800"]', "links[0]"),
    ("evolution_history", '[{"a": "\\udc00"}]', "evolution_history[0].a"),
])
def test_amem_lone_surrogate_in_json_text_names_file_record_field(
    tmp_path: Path, outdir: Path, capsys: pytest.CaptureFixture[str], key: str, text: str, field: str,
) -> None:
    export = write_json(tmp_path / "notes.json", [{"id": "n1", "content": "hello there", key: text}])
    code, err = run(import_argv(tmp_path, "amem", export, cache=True), capsys)
    assert code == 2
    assert "notes.json" in err and "record [0]" in err and f"field '{field}'" in err and "surrogate" in err
    assert snapshot(outdir) == {}


def test_amem_valid_json_text_fields_still_import(tmp_path: Path, outdir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    notes = [{**n, "keywords": json.dumps(n["keywords"]), "links": json.dumps(n["links"])} for n in NOTES]
    code, err = run(import_argv(tmp_path, "amem", write_json(tmp_path / "notes.json", notes)), capsys)
    assert code == 0, err


# ------------------------------------------------- 7. Letta: the export's own passages


def test_letta_bad_passage_of_the_export_is_blamed_on_the_export(tmp_path: Path, outdir: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    export = write_json(tmp_path / "emb_bad.json", {**LETTA, "passages": [{"id": "p", "text": 5}]})
    separate = tmp_path / "sep_ok.jsonl"
    separate.write_text('{"id": "q", "text": "fine passage"}\n')
    code, err = run(import_argv(tmp_path, "letta", export, "--passages", str(separate)), capsys)
    assert code == 2
    assert err.count("emb_bad.json: passages[0]: field 'text'") == 1 and "sep_ok.jsonl" not in err


def test_letta_bad_passage_of_the_separate_file_is_blamed_on_it(tmp_path: Path, outdir: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    export = write_json(tmp_path / "emb.json", LETTA)
    separate = tmp_path / "sep_bad.jsonl"
    separate.write_text('{"id": "q", "text": 7}\n')
    code, err = run(import_argv(tmp_path, "letta", export, "--passages", str(separate)), capsys)
    assert code == 2 and "sep_bad.jsonl: line 1: field 'text'" in err


# ------------------------------------------------- 8/9. JSONL: gzip files, line breaks in strings


def test_mem0_history_jsonl_gz_file_is_read_like_jsonl(tmp_path: Path, outdir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    text = "".join(json.dumps(r) + "\n" for r in (ADD, UPDATE))
    (tmp_path / "h.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "h1.jsonl.gz").write_bytes(gzip.compress((json.dumps(ADD) + "\n").encode()))
    for name in ("h.jsonl.gz", "h1.jsonl.gz"):
        code, err = run(import_argv(tmp_path, "mem0", tmp_path / name, "--force"), capsys)
        assert code == 0, err
    union = json.loads((outdir / "u.json").read_text())
    assert any(c.get("memory_id") == "m1" for c in union["candidates"])


@pytest.mark.parametrize("brk", ["\u2028", "\u2029", "\x85", "\x0b", "\x1c"])
def test_jsonl_string_holding_a_unicode_line_break_is_one_line(tmp_path: Path, outdir: Path,
                                                               capsys: pytest.CaptureFixture[str], brk: str) -> None:
    if brk in ("\x0b", "\x1c"):  # control characters are not allowed raw in JSON strings: escaped
        line = json.dumps({**ADD, "new_memory": f"Vik went{brk}running"})
    else:
        line = json.dumps({**ADD, "new_memory": f"Vik went{brk}running"}, ensure_ascii=False)
    (tmp_path / "h.jsonl").write_text(line + "\n", encoding="utf-8")
    code, err = run(import_argv(tmp_path, "mem0", tmp_path / "h.jsonl"), capsys)
    assert code == 0, err
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "n1", "content": f"hello{brk}there"}, ensure_ascii=False) + "\n",
                     encoding="utf-8")
    code, err = run(import_argv(tmp_path, "amem", notes, "--force"), capsys)
    assert code == 0, err


# ------------------------------------------------- 10. Mem0 history: a memory's lifecycle


@pytest.mark.parametrize(("rows", "line", "first", "what"), [
    ([ADD, UPDATE, DELETE, LATE_UPDATE], 4, 3, "after its DELETE"),
    ([ADD, DELETE, {**DELETE, "created_at": "2024-01-05T00:00:00Z"}], 3, 2, "after its DELETE"),
    ([ADD, {**ADD, "created_at": "2024-01-05T00:00:00Z"}], 2, 1, "a second ADD"),
    ([ADD, DELETE, {**ADD, "created_at": "2024-01-05T00:00:00Z"}], 3, 2, "after its DELETE"),
], ids=["update-after-delete", "double-delete", "double-add", "add-after-delete"])
def test_mem0_history_resurrection_is_refused_naming_both_rows(
    tmp_path: Path, outdir: Path, capsys: pytest.CaptureFixture[str], rows: list[dict[str, Any]], line: int,
    first: int, what: str,
) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = run(import_argv(tmp_path, "mem0", history), capsys)
    assert code == 2
    assert f"h.jsonl: line {line}: field 'event'" in err and what in err and f"line {first}" in err
    assert snapshot(outdir) == {}


def test_mem0_history_add_update_delete_imports(tmp_path: Path, outdir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(r) + "\n" for r in (ADD, UPDATE, DELETE)))
    code, err = run(import_argv(tmp_path, "mem0", history), capsys)
    assert code == 0, err


# ------------------------------------------------- 11. a writer store's manifest


@pytest.fixture
def engram_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    from oracles.cli_runs import locomo

    src = locomo(tmp_path / "conv.json", "conv-x")
    code, err = run(["write", "engram", "--locomo", str(src), "--out", str(tmp_path / "st"), "--embedder",
                     "hashing", "--quiet"], capsys)
    assert code == 0, err
    return tmp_path / "st" / "conv-x"


def conversation_package(tmp_path: Path, sample_id: str) -> Path:
    """The example package, said to be LoCoMo conversation ``sample_id`` (as natural packages are)."""
    package = json.loads(EXAMPLE.read_text())
    package["meta"] = {**(package.get("meta") or {}), "sample_id": sample_id}
    return write_json(tmp_path / f"pkg-{sample_id}.json", package)


@pytest.mark.parametrize("name", ["memories.jsonl", "loose.jsonl"])
@pytest.mark.parametrize("sample_id", ["conv-x", "conv-y"])
def test_writer_export_without_its_manifest_is_refused_by_a_conversation_package(
    tmp_path: Path, outdir: Path, engram_store: Path, capsys: pytest.CaptureFixture[str], name: str, sample_id: str,
) -> None:
    (tmp_path / "away").mkdir()
    loose = tmp_path / "away" / name
    loose.write_bytes((engram_store / "memories.jsonl").read_bytes())
    package = conversation_package(tmp_path, sample_id)
    code, err = run(import_argv(tmp_path, "engram", loose, package=package, cache=True), capsys)
    assert code == 2
    assert str(loose) in err and "manifest" in err and repr(sample_id) in err
    assert snapshot(outdir) == {}


def test_writer_store_directory_and_its_memories_jsonl_import(tmp_path: Path, outdir: Path, engram_store: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    package = conversation_package(tmp_path, "conv-x")
    for export in (engram_store, engram_store / "memories.jsonl"):
        code, err = run(import_argv(tmp_path, "engram", export, "--force", package=package), capsys)
        assert code == 0, err
    other = conversation_package(tmp_path, "conv-y")
    code, err = run(import_argv(tmp_path, "engram", engram_store, "--force", package=other), capsys)
    assert code == 2 and "'conv-x'" in err  # the manifest's conversation is checked


def test_a_flat_store_is_not_imported_under_another_writer(tmp_path: Path, outdir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from oracles.cli_runs import locomo

    src = locomo(tmp_path / "conv.json", "conv-x")
    assert run(["write", "flat", "--locomo", str(src), "--out", str(tmp_path / "st"), "--embedder", "hashing",
                "--quiet"], capsys)[0] == 0
    code, err = run(import_argv(tmp_path, "membox", tmp_path / "st" / "conv-x"), capsys)
    assert code == 2 and "written by 'flat'" in err and "import it as flat" not in err
