"""One LoCoMo reader: the natural packages and the writers' turn stream read a file alike."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from memaudit_fast.errors import PackageError
from memaudit_fast.suites.locomo import CATEGORY_NAMES as SUITE_CATEGORIES
from memaudit_fast.suites.locomo import locomo_package
from memaudit_fast.suites.locomo_reader import CATEGORY_NAMES, dia_ids, read_turns
from memaudit_fast.writers.locomo_turns import CATEGORY_NAMES as WRITER_CATEGORIES
from memaudit_fast.writers.locomo_turns import Turn, conversation_from_dict
from memaudit_fast.writers.sample import mini_locomo


def test_one_category_table() -> None:
    assert SUITE_CATEGORIES is CATEGORY_NAMES and WRITER_CATEGORIES is CATEGORY_NAMES


@pytest.mark.parametrize(("text", "ids"), [
    ("D8:6; D9:17", ["D8:6", "D9:17"]), ("D:11:26", ["D11:26"]), ("D3:4", ["D3:4"]), ("D", []),
])
def test_dia_ids_inside_a_reference(text: str, ids: list[str]) -> None:
    assert dia_ids(text) == ids


def test_package_experiences_are_the_writers_turns() -> None:
    record = mini_locomo()
    conv = conversation_from_dict(record)
    package = locomo_package(record)
    assert [(e["experience_id"], e["speaker"], e["session_id"], e["timestamp"], e["text"],
             e["session_date"]) for e in package["experiences"]] == [
        (t.dia_id, t.speaker, f"session_{t.session}", t.index, t.text, t.session_date)
        for t in conv.turns
    ]
    assert list(conv.speakers) == package["meta"]["speakers"]
    assert all(isinstance(t, Turn) for t in read_turns(record["conversation"], "mini-1", None))


def _broken(edit: Any) -> dict[str, Any]:
    record = copy.deepcopy(mini_locomo())
    edit(record["conversation"])
    return record


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["session_1"][2].pop("dia_id"), r"session_1\[2\]: expected a turn with a 'dia_id' string"),
    (lambda c: c["session_2"][0].update(dia_id=c["session_1"][0]["dia_id"]), r"session_2\[0\]: dia_id 'D1:1' appears twice"),
    (lambda c: c.update(session_1="not a list"), "expected a list of turns"),
    (lambda c: c["session_1"][1].update(text=5), r"session_1\[1\] \(D1:2\): field 'text': expected a string, got int 5"),
    (lambda c: c["session_2"][0].update(text=["a", "b"]), r"field 'text': expected a string, got list"),
    (lambda c: c["session_1"][0].update(speaker=7), r"field 'speaker': expected a non-empty string"),
    (lambda c: c["session_1"][0].update(speaker=" "), r"field 'speaker': expected a non-empty string"),
    (lambda c: c["session_1"][0].update(blip_caption={"x": 1}), r"field 'blip_caption': expected a string"),
])
def test_both_readers_refuse_a_broken_conversation_alike(edit: Any, message: str) -> None:
    record = _broken(edit)
    with pytest.raises(PackageError, match=message) as from_writers:
        conversation_from_dict(record)
    with pytest.raises(PackageError, match=message) as from_suite:
        locomo_package(record)
    assert str(from_writers.value) == str(from_suite.value)


def test_the_writers_refuse_a_conversation_without_turns_and_a_repeated_sample_id(tmp_path) -> None:
    import json

    from memaudit_fast.writers.locomo_turns import load_locomo

    record = mini_locomo()
    empty = {"sample_id": "empty", "conversation": {"speaker_a": "A", "speaker_b": "B"}, "qa": []}
    with pytest.raises(PackageError, match="empty.*field 'conversation': the conversation has no turns"):
        conversation_from_dict(empty)
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([record, copy.deepcopy(record)]))
    with pytest.raises(PackageError, match=f"{record['sample_id']}.*field 'sample_id': two conversations have this sample_id"):
        load_locomo(path)
    path.write_text(json.dumps([record]))
    assert [c.sample_id for c in load_locomo(path, [record["sample_id"]] * 2)] == [record["sample_id"]]
