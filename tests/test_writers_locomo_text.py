"""LoCoMo turn loader and the text utilities behind the offline writer decisions."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from memaudit_fast.errors import PackageError, UsageError
from memaudit_fast.writers.locomo_turns import (
    conversation_from_dict,
    load_locomo,
    parse_evidence,
    parse_locomo_date,
)
from memaudit_fast.writers.sample import mini_locomo
from memaudit_fast.writers.text import resolve_time_anchor, sentences, top_keywords


def test_mini_conversation_becomes_ordered_turns_with_sessions_and_dates() -> None:
    conv = conversation_from_dict(mini_locomo())
    assert conv.sample_id == "mini-1"
    assert conv.speakers == ("Ana", "Ben")
    assert [t.index for t in conv.turns] == list(range(15))
    assert [t.session for t in conv.turns] == [1] * 9 + [2] * 6
    assert conv.turns[0].time == "2023-03-03T14:00"
    assert conv.turns[-1].time == "2023-03-20T10:30"
    assert conv.turns[0].render().startswith("[2023-03-03] Ana: Hi Ben!")
    # The image caption is kept with the turn that shared it.
    assert "[shares an image: a photo of a black and white dog" in conv.turns[13].text


def test_evidence_strings_are_recovered_or_counted() -> None:
    known = {"D1:1", "D2:4", "D11:26"}
    assert parse_evidence(["D2:4; D1:1"], known) == (("D2:4", "D1:1"), 0)
    assert parse_evidence(["D:11:26"], known) == (("D11:26",), 0)
    assert parse_evidence(["D", "D9:9", "D1:1", "D1:1"], known) == (("D1:1",), 2)
    conv = conversation_from_dict(mini_locomo())
    by_q = {q.question: q for q in conv.qa}
    assert by_q["When is Ana's marathon?"].evidence == ("D2:4", "D1:1")
    assert by_q["What is Ben's favourite film?"].evidence == ()
    assert by_q["When did Ben adopt Pixel?"].category_name == "temporal"


def test_locomo_dates_parse_to_iso_minutes() -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == "2023-05-08T13:56"
    assert parse_locomo_date("12:05 am on 1 January, 2022") == "2022-01-01T00:05"
    assert parse_locomo_date("sometime in spring") is None


def test_malformed_records_and_unknown_ids_are_reported(tmp_path: Path) -> None:
    bad = copy.deepcopy(mini_locomo())
    del bad["conversation"]["session_1"][2]["dia_id"]
    with pytest.raises(PackageError, match=r"session_1\[2\]"):
        conversation_from_dict(bad)
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([mini_locomo()]))
    with pytest.raises(UsageError, match="conv-99"):
        load_locomo(path, ["conv-99"])
    assert [c.sample_id for c in load_locomo(path, ["mini-1"])] == ["mini-1"]
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(PackageError, match="not valid JSON"):
        load_locomo(tmp_path / "broken.json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went there yesterday.", "2023-05-07"),
        ("We met last Friday!", "2023-05-05"),
        ("It was 3 days ago.", "2023-05-05"),
        ("I moved two years ago.", "2021"),
        ("Last week I ran a 10k.", "week of 2023-05-01"),
        ("The show is next month.", "2023-06"),
        ("I painted a lake.", "2023-05-08"),
    ],
)
def test_relative_time_expressions_resolve_against_the_session_day(text: str, expected: str) -> None:
    # 8 May 2023 was a Monday.
    assert resolve_time_anchor(text, "2023-05-08T13:56") == expected


def test_keywords_prefer_names_and_skip_stop_and_time_words() -> None:
    words = top_keywords(["Caroline went to the support group yesterday.",
                          "The support group helped Caroline a lot."], k=3)
    assert words[0] == "caroline"
    assert "support" in words and "group" in words
    assert "yesterday" not in words and "the" not in words
    assert sentences("I ran. Then I slept! Did you? Yes.") == ["I ran.", "Then I slept!", "Did you?", "Yes."]


def test_real_locomo_file_loads_and_evidence_resolves(locomo_path: Path) -> None:
    convs = load_locomo(locomo_path)
    assert convs, "no conversation loaded"
    for conv in convs:
        ids = conv.turn_ids()
        assert len(ids) == len(conv.turns)
        assert all(d in ids for q in conv.qa for d in q.evidence)
        assert all(t.time is not None for t in conv.turns)
