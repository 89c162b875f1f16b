"""The arbiter: calibrated embedding judge, LLM judge protocol, and the on-disk cache."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memaudit_fast.errors import UsageError
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.model.io import load_package
from memaudit_fast.systems.arbiter import (
    DEFAULT_THRESHOLDS,
    Arbiter,
    ArbiterCache,
    EmbeddingJudge,
    LLMJudge,
    Thresholds,
    calibrate,
    snap,
    split_sentences,
)
from memaudit_fast.systems.arbiter.calibration import _best_f1
from memaudit_fast.writers.embed import get_embedder

EXAMPLE = example_package_path()


@pytest.fixture
def example() -> Any:
    return load_package(EXAMPLE)


@pytest.fixture
def hashing() -> Any:
    return get_embedder("hashing")


class CountingJudge:
    """A judge that records what it was asked (to see the cache at work)."""

    def __init__(self, level: float = 1.0, tag: str = "a") -> None:
        self.calls: list[list[str]] = []
        self.level = level
        self.tag = tag

    def config(self) -> dict[str, Any]:
        return {"judge": "counting", "tag": self.tag}

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        self.calls.append(list(memories))
        out = np.zeros((len(memories), len(units)))
        for i, m in enumerate(memories):
            for r, u in enumerate(units):
                if set(m.lower().split()) & set(u.lower().split()) - {"the", "user"}:
                    out[i, r] = self.level
        return out

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        return np.full(len(memories), 0.5) if queries else None


UNITS = [("u1", "The user lives in Porto."), ("u2", "The user teaches nursing."), ("u3", "")]


def test_best_f1_picks_the_cut_and_counts_unscored_positives() -> None:
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    positive = np.array([True, True, False, True, False])
    cut, f1, precision, recall = _best_f1(scores, positive, total_positive=3, floor=-1.0)
    # Cut 0.6: TP 3, FP 1, FN 0 -> F1 6/7, better than 0.8 (TP 2, FN 1 -> 0.8).
    assert cut == 0.6 and f1 == pytest.approx(6 / 7) and precision == 0.75 and recall == 1.0
    # Two more positives never scored (outside the top-k) are misses at every cut.
    _, f15, _, recall5 = _best_f1(scores, positive, total_positive=5, floor=-1.0)
    assert recall5 == pytest.approx(3 / 5) and f15 < f1
    # Ties go together: a cut cannot separate equal scores.
    cut_t, f1_t, *_ = _best_f1(np.array([0.5, 0.5, 0.1]), np.array([True, False, False]), 1, -1.0)
    assert cut_t == 0.5 and f1_t == pytest.approx(2 / 3)  # not 1.0, as splitting the tie would give


def test_calibration_on_the_example_package(example: Any, hashing: Any) -> None:
    t = calibrate(example, hashing)
    assert t.method == "calibrated" and t.top_k in (1, 2, 3)
    assert set(t.stats["top_k_f1"]) == {"1", "2", "3"}
    assert t.stats["partial_f1"] == max(t.stats["top_k_f1"].values())
    assert -1.0 <= t.partial <= t.full <= 1.0
    # Rewritten candidates only: raw spans are verbatim copies of experiences.
    derived = [c for c in example.candidates if c["representation"] != "raw_span"]
    assert t.stats["population"] == "derived" and t.stats["candidates"] == len(derived)
    assert t.stats["positive_pairs"] == sum(1 for c in derived for v in c["coverage"].values() if v > 0)
    assert 0.0 < t.stats["partial_f1"] <= 1.0


def test_calibration_uses_all_candidates_when_rewritten_ones_are_unlabelled(example: Any, hashing: Any) -> None:
    data = json.loads(json.dumps(example.data))
    for cand in data["candidates"]:
        if cand["representation"] != "raw_span":
            cand["coverage"] = {}
    t = calibrate(data, hashing, top_ks=(2,))
    assert t.stats["population"] == "all" and t.stats["candidates"] == len(data["candidates"])


def test_calibration_falls_back_to_defaults_without_labels(example: Any, hashing: Any) -> None:
    data = json.loads(json.dumps(example.data))
    for cand in data["candidates"]:
        cand["coverage"] = {}
    t = calibrate(data, hashing)
    assert t.method == "default" and (t.full, t.partial) == DEFAULT_THRESHOLDS["hashing"]
    assert "fewer than" in t.stats["reason"]


def test_calibration_leaves_verbatim_pairs_out(example: Any, hashing: Any) -> None:
    data = json.loads(json.dumps(example.data))
    unit = data["units"][0]
    data["candidates"].append({"candidate_id": "verbatim", "cost": 5, "text": unit["text"],
                               "coverage": {unit["unit_id"]: 1.0}})
    assert calibrate(data, hashing).stats["verbatim_pairs_left_out"] == 1
    assert calibrate(data, hashing, exclude=["verbatim"]).stats["verbatim_pairs_left_out"] == 0


def test_sentences_and_the_per_sentence_cap(hashing: Any) -> None:
    assert split_sentences("Lives in Porto. Teaches nursing!\nLikes tea") == [
        "Lives in Porto.", "Teaches nursing!", "Likes tea"]
    assert split_sentences("No break here e.g. this") == ["No break here e.g. this"]
    units = ["We painted a sunset.", "We painted a horse.", "We painted a tree.", "Went hiking."]
    loose = Thresholds(0.05, 0.01, "given")
    one = EmbeddingJudge(hashing, loose, top_k=1).judge(["We painted a lot."], units)
    assert (one > 0).sum() == 1  # one sentence, one unit
    two = EmbeddingJudge(hashing, loose, top_k=1).judge(["We painted a lot. Went hiking too."], units)
    assert (two > 0).sum() == 2 and two[0, 3] > 0
    assert (EmbeddingJudge(hashing, loose, top_k=3).judge(["We painted a lot."], units) > 0).sum() == 3


def test_embedding_judge_levels(hashing: Any) -> None:
    judge = EmbeddingJudge(hashing, Thresholds(0.9, 0.3, "given"), top_k=2)
    texts = [u for _, u in UNITS]
    levels = judge.judge(["The user lives in Porto.", "Lives in Porto these days", "Bought a red bicycle"], texts)
    assert levels.shape == (3, 3)
    assert levels[0, 0] == 1.0  # the unit's own words
    assert set(np.unique(levels)) <= {0.0, 0.5, 1.0}
    assert levels[:, 2].sum() == 0  # a unit without text is never covered
    sims = hashing.encode(["Lives in Porto these days"]) @ hashing.encode([texts[0]]).T
    assert levels[1, 0] == (1.0 if sims[0, 0] >= 0.9 else 0.5 if sims[0, 0] >= 0.3 else 0.0)
    with pytest.raises(UsageError):
        EmbeddingJudge(hashing, Thresholds(0.2, 0.5, "given"))


def test_cache_makes_rescoring_free_and_is_keyed_by_config(tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.sqlite"
    judge = CountingJudge()
    arbiter = Arbiter(judge, ArbiterCache(cache_path))
    memories = ["Lives in Porto", "Teaches nursing", "Likes tea"]
    first = arbiter.coverage(memories, UNITS)
    assert first == [{"u1": 1.0}, {"u2": 1.0}, {}]
    assert (arbiter.hits, arbiter.misses) == (0, 3)

    # A new process: same decisions, no judge call.
    again = Arbiter(judge, ArbiterCache(cache_path))
    assert again.coverage(memories, UNITS) == first
    assert len(judge.calls) == 1 and (again.hits, again.misses) == (3, 0)

    # Only the new memory is judged; a changed unit text re-judges every memory.
    again.coverage(memories + ["Porto again"], UNITS)
    assert judge.calls[-1] == ["Porto again"]
    again.coverage(memories, [("u1", "The user lives in Braga."), *UNITS[1:]])
    assert judge.calls[-1] == memories

    # Another judge configuration does not see these decisions.
    other = CountingJudge(level=0.5, tag="b")
    assert Arbiter(other, ArbiterCache(cache_path)).coverage(memories, UNITS) == [{"u1": 0.5}, {"u2": 0.5}, {}]
    assert len(other.calls) == 1


def test_salience_is_cached_per_question_set(tmp_path: Path) -> None:
    judge = CountingJudge()
    arbiter = Arbiter(judge, ArbiterCache(tmp_path / "c.sqlite"))
    assert arbiter.salience(["a", "b"], []) is None
    values = arbiter.salience(["a", "b"], ["Where does the user live?"])
    assert values is not None and list(values) == [0.5, 0.5]


def test_embedding_salience_uses_questions_only(hashing: Any) -> None:
    judge = EmbeddingJudge(hashing, Thresholds(0.9, 0.3, "given"))
    s = judge.salience(["The user lives in Porto", "Bought a red bicycle"], ["Where does the user live?"])
    assert s is not None and s[0] > s[1] >= 0.0 and s[0] <= 1.0
    assert judge.salience(["x"], []) is None


class FakeChat:
    """Stands in for OpenAIChatLLM.chat_json: answers from a table, validates with parse."""

    model = "fake-model"
    base_url = "http://localhost:0"

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.prompts: list[str] = []

    def chat_json(self, system: str, user: str, parse: Any) -> Any:
        self.prompts.append(user)
        return parse(self.answers.pop(0))


def test_llm_judge_reads_levels_for_the_shown_units(hashing: Any) -> None:
    chat = FakeChat([{"coverage": {"1": 1}}, {"coverage": {"1": 0.4, "2": 0.9}}])
    judge = LLMJudge(chat, hashing, top_k=2)
    levels = judge.judge(["The user lives in Porto", "The user teaches nursing in Porto"], [u for _, u in UNITS])
    assert "Memory:\nThe user lives in Porto" in chat.prompts[0]
    # Statement 1 of each prompt is that memory's nearest unit.
    first_shown = chat.prompts[0].split("Evidence statements:\n1. ")[1].split("\n")[0]
    assert levels[0, [u for _, u in UNITS].index(first_shown)] == 1.0
    assert sorted(levels[1][levels[1] > 0]) == [0.5, 1.0]  # 0.4 and 0.9 snapped
    assert judge.config()["model"] == "fake-model"


def test_llm_judge_rejects_unknown_items(hashing: Any) -> None:
    from memaudit_fast.writers.openai_client import InvalidAnswer

    judge = LLMJudge(FakeChat([{"coverage": {"7": 1}}]), hashing, top_k=2)
    with pytest.raises(InvalidAnswer, match="unknown item"):
        judge.judge(["The user lives in Porto"], [u for _, u in UNITS])
    assert snap(0.74) == 0.5 and snap(0.2) == 0.0 and snap(0.8) == 1.0


def test_default_embedder_calibrates_and_judges(example: Any) -> None:
    pytest.importorskip("wordllama")
    emb = get_embedder("wordllama")
    t = calibrate(example, emb)
    assert t.method == "calibrated" and t.partial <= t.full
    judge = EmbeddingJudge(emb, t)
    unit_texts = [u["text"] for u in example.units]
    levels = judge.judge([unit_texts[0]], unit_texts)
    assert levels[0, 0] == 1.0


def test_best_embedder_keeps_the_best_calibrated_judge(example: Any) -> None:
    pytest.importorskip("wordllama")
    from memaudit_fast.systems.union import embedding_arbiter

    judge = embedding_arbiter(example, embedder="best").judge
    compared = judge.thresholds.stats["compared"]
    assert set(compared) == {"hashing:1024", "wordllama"}
    assert compared[judge.embedder.spec] == max(compared.values())
