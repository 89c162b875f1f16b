"""memaudit write / eval-retrieval / retrieve: every LoCoMo field the writers read is checked.

A QA's evidence that is no list of strings, a speaker that is no string, a session date that is
no readable LoCoMo date, a turn without text, a lone surrogate anywhere and a file of no
conversation are refused with exit 2 naming file, conversation, record and field, and nothing
is written. Evidence ids that name no turn are said on stderr by eval-retrieval. retrieve
caps -k at the store's size for ENGRAM as for flat and Membox.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oracles.cli_runs import locomo, run, snapshot


def edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    path = locomo(tmp_path / "conv.json", "conv-x")
    data = json.loads(path.read_text())
    edit(data[0])
    path.write_text(json.dumps(data))
    return path


def _set(where: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda rec: where(rec).__setitem__(key, value)


def _conv(rec: dict[str, Any]) -> dict[str, Any]:
    return rec["conversation"]  # type: ignore[no-any-return]


CASES = {
    "evidence-int": (_set(lambda r: r["qa"][0], "evidence", 5), "qa[0]", "evidence"),
    "evidence-of-ints": (_set(lambda r: r["qa"][1], "evidence", [1, 2]), "qa[1]", "evidence"),
    "question-int": (_set(lambda r: r["qa"][0], "question", 3), "qa[0]", "question"),
    "date-int": (_set(_conv, "session_1_date_time", 20230508), None, "conversation.session_1_date_time"),
    "date-odd": (_set(_conv, "session_2_date_time", "sometime in spring"), None,
                 "conversation.session_2_date_time"),
    "date-missing": (lambda r: r["conversation"].pop("session_1_date_time"), None,
                     "conversation.session_1_date_time"),
    "speaker-int": (_set(_conv, "speaker_a", 5), None, "conversation.speaker_a"),
    "speaker-empty": (_set(_conv, "speaker_b", " "), None, "conversation.speaker_b"),
    "text-missing": (lambda r: r["conversation"]["session_1"][0].pop("text"), "session_1[0] (D1:1)", "text"),
    "text-null": (_set(lambda r: r["conversation"]["session_2"][1], "text", None), "session_2[1] (D2:2)", "text"),
    "text-surrogate": (_set(lambda r: r["conversation"]["session_1"][0], "text", "hi \ud800 there"),
                       "session_1[0]", "text"),
    "speaker-surrogate": (_set(lambda r: r["conversation"]["session_1"][2], "speaker", "A\udc00"),
                          "session_1[2]", "speaker"),
    "question-surrogate": (_set(lambda r: r["qa"][2], "question", "why \ud801?"), "qa[2]", "question"),
}


@pytest.mark.parametrize("writer", ["flat", "membox", "engram"])
@pytest.mark.parametrize("case", list(CASES))
def test_write_refuses_a_bad_locomo_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: str,
                                          case: str) -> None:
    edit, record, field = CASES[case]
    src = edited(tmp_path, edit)
    (tmp_path / "out").mkdir()
    code, err = run(["write", writer, "--locomo", str(src), "--out", str(tmp_path / "out"), "--embedder",
                     "hashing", "--quiet"], capsys)
    assert code == 2, err
    assert "conv.json" in err and "'conv-x'" in err and f"field '{field}'" in err
    if record:
        assert record in err
    assert "internal error" not in err and "Traceback" not in err and "UTF-8" not in err
    assert snapshot(tmp_path / "out") == {}


@pytest.mark.parametrize("case", ["evidence-int", "date-odd", "text-surrogate"])
def test_eval_retrieval_refuses_a_bad_locomo_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   case: str) -> None:
    edit, _, field = CASES[case]
    src = edited(tmp_path, edit)
    code, err = run(["eval-retrieval", "--locomo", str(src), "--writers", "flat", "--embedder", "hashing",
                     "--quiet", "--out", str(tmp_path / "r.json")], capsys)
    assert code == 2 and f"field '{field}'" in err and "internal error" not in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("text", ["[]", "{}"])
def test_write_refuses_a_file_of_no_conversation(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 text: str) -> None:
    src = tmp_path / "empty.json"
    src.write_text(text)
    code, err = run(["write", "flat", "--locomo", str(src), "--out", str(tmp_path / "out"), "--embedder",
                     "hashing", "--quiet"], capsys)
    assert code == 2 and "empty.json" in err
    assert not (tmp_path / "out").exists()


def test_write_still_accepts_the_sample_conversation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo(tmp_path / "conv.json", "conv-x")
    code, err = run(["write", "flat", "--locomo", str(src), "--out", str(tmp_path / "out"), "--embedder",
                     "hashing", "--quiet"], capsys)
    assert code == 0, err


def test_eval_retrieval_says_which_evidence_names_no_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = edited(tmp_path, _set(lambda r: r["qa"][0], "evidence", ["D99:1", "D1:6"]))
    code, err = run(["eval-retrieval", "--locomo", str(src), "--writers", "flat", "--embedder", "hashing",
                     "--quiet", "--out", str(tmp_path / "r.json")], capsys)
    assert code == 0, err
    assert "1 evidence id(s) name no turn" in err and "conv-x qa[0]" in err


@pytest.mark.parametrize("writer", ["flat", "membox", "engram"])
@pytest.mark.parametrize("k", ["10000000", "2147483648", "100000000000"])
def test_retrieve_caps_k_at_the_store_size(tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: str,
                                           k: str) -> None:
    src = locomo(tmp_path / "conv.json", "conv-x")
    assert run(["write", writer, "--locomo", str(src), "--out", str(tmp_path / "st"), "--embedder", "hashing",
                "--quiet"], capsys)[0] == 0
    code = run(["retrieve", str(tmp_path / "st" / "conv-x"), "marathon knee", "-k", k, "--json"], capsys)[0]
    assert code == 0


@pytest.mark.parametrize("option", ["question", "--speaker"])
def test_retrieve_refuses_text_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                option: str) -> None:
    src = locomo(tmp_path / "conv.json", "conv-x")
    assert run(["write", "engram", "--locomo", str(src), "--out", str(tmp_path / "st"), "--embedder", "hashing",
                "--quiet"], capsys)[0] == 0
    undecoded = b"caf\xe9 knee".decode("utf-8", "surrogateescape")  # how Python hands such an argument over
    argv = ["retrieve", str(tmp_path / "st" / "conv-x"), undecoded if option == "question" else "knee", "--json"]
    if option == "--speaker":
        argv += ["--speaker", undecoded]
    code, err = run(argv, capsys)
    assert code == 2 and "not UTF-8" in err and "\\udce9" not in capsys.readouterr().out
