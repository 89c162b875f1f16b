"""ENGRAM: routing, typed records in SQLite, merged retrieval, truncation, persistence."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from memaudit_fast.writers.builders import open_store
from memaudit_fast.writers.embed import HashingEmbedder
from memaudit_fast.writers.engram import EngramParams, EngramStore, build_engram
from memaudit_fast.writers.llm import OfflineLLM, RecordDraft, mask_kinds
from memaudit_fast.writers.locomo_turns import Turn, conversation_from_dict
from memaudit_fast.writers.sample import mini_locomo

EMB = HashingEmbedder(1024)


def _turn(text: str, speaker: str = "Ana", i: int = 1) -> Turn:
    return Turn(f"D1:{i}", speaker, 1, "2:00 pm on 3 March, 2023", text, "2023-03-03T14:00", i)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("I adopted a puppy yesterday.", ["episodic"]),
        ("My favourite breakfast is oatmeal.", ["semantic"]),
        ("You should stretch every morning before a run.", ["procedural"]),
        ("I love hiking and last week I went to the Alps.", ["episodic", "semantic"]),
        ("Thanks!", []),
        ("What breed is Pixel?", []),
    ],
)
def test_router_sets_the_bits_of_the_matching_stores(text: str, kinds: list[str]) -> None:
    mask = OfflineLLM(EMB).route(_turn(text))
    assert 0 <= mask <= 7
    assert mask_kinds(mask) == kinds


def test_extracted_records_are_normalised_per_type() -> None:
    llm = OfflineLLM(EMB)
    turn = _turn("I adopted a puppy yesterday. You should first rest, then stretch.")
    drafts = {d.kind: d for d in llm.extract_records(turn, 0b111)}
    assert set(drafts) == {"episodic", "semantic", "procedural"}
    assert drafts["episodic"].time_anchor == "2023-03-02"  # "yesterday" resolved
    assert drafts["episodic"].title and drafts["procedural"].title
    assert drafts["semantic"].title == ""
    assert all(d.body.startswith("Ana: ") for d in drafts.values())
    assert "stretch" in drafts["procedural"].body and "puppy" not in drafts["procedural"].body


def test_records_live_in_a_real_sqlite_file_with_embeddings(tmp_path: Path) -> None:
    conv = conversation_from_dict(mini_locomo())
    store = build_engram(conv.turns, EMB, sample_id=conv.sample_id)
    store.save(tmp_path / "s")
    db = sqlite3.connect(tmp_path / "s" / "store.sqlite")
    try:
        counts = {k: db.execute(f"SELECT COUNT(*) FROM {k}").fetchone()[0]
                  for k in ("episodic", "semantic", "procedural")}
        assert counts == {k: store.stats()[k] for k in counts}
        assert all(v > 0 for v in counts.values())
        blob, speaker = db.execute("SELECT embedding, speaker FROM semantic LIMIT 1").fetchone()
        assert len(blob) == 4 * EMB.dim and speaker in ("Ana", "Ben")
        (turns,) = db.execute("SELECT COUNT(*) FROM turns").fetchone()
        assert turns == len(conv.turns)
    finally:
        db.close()
    record = store.records("semantic")[0]
    vec = store.embedding_of(record)
    assert np.allclose(vec, store.indexes["semantic"].vector(record.record_id))


class RepeatingLLM(OfflineLLM):
    """Every turn goes to all three stores with the same text (duplicates on purpose)."""

    def route(self, turn: Turn) -> int:
        return 0b111

    def extract_records(self, turn: Turn, mask: int) -> list[RecordDraft]:
        return [RecordDraft(kind, "", f"{turn.speaker}: {turn.text}", turn.day)
                for kind in ("episodic", "semantic", "procedural")]


def _many_turns(n: int) -> list[Turn]:
    topics = ["marathon", "puppy", "violin", "garden", "recipe", "travel", "painting"]
    return [_turn(f"Note {i} about {topics[i % 7]} number {i}", "Ana" if i % 2 else "Ben", i)
            for i in range(1, n + 1)]


def test_retrieval_merges_stores_deduplicates_and_truncates_to_k() -> None:
    store = build_engram(_many_turns(40), EMB, RepeatingLLM(EMB), EngramParams(k_per_store=10))
    items = store.retrieve("marathon number 8")
    # 3 stores x 10 hits, but each text appears in all three stores: 10 distinct records.
    assert len(items) == 10
    assert len({i.text for i in items}) == len(items)
    assert len(store.retrieve("marathon number 8", k=4)) == 4
    full = build_engram(_many_turns(40), EMB, RepeatingLLM(EMB), EngramParams(k_per_store=40))
    assert len(full.retrieve("marathon")) == 25  # the default cut K = 25


def test_merge_takes_every_store_rank_by_rank() -> None:
    conv = conversation_from_dict(mini_locomo())
    store = build_engram(conv.turns, EMB)
    items = store.retrieve("How does Ana look after her knee before long runs?", k=3)
    # First layer: the best record of each store, so all three types are represented.
    assert sorted(i.kind for i in items) == ["episodic", "procedural", "semantic"]
    assert all(i.text.startswith("[2023-03-") for i in items)


def test_speaker_filter_keeps_one_speakers_bank() -> None:
    conv = conversation_from_dict(mini_locomo())
    store = build_engram(conv.turns, EMB)
    items = store.retrieve("dog puppy Pixel", speaker="Ben")
    assert items and all(": Ben:" in i.text or "] Ben:" in i.text for i in items)
    assert all(store.conn.execute(
        f"SELECT speaker FROM {i.kind} WHERE id=?", (int(i.memory_id.split('-')[1]),)
    ).fetchone()[0] == "Ben" for i in items)


def test_round_trip_answers_the_same(tmp_path: Path) -> None:
    conv = conversation_from_dict(mini_locomo())
    store = build_engram(conv.turns, EMB, sample_id=conv.sample_id)
    store.save(tmp_path / "e")
    again = open_store(tmp_path / "e")
    assert isinstance(again, EngramStore)
    assert again.stats() == store.stats()
    for qa in conv.qa:
        assert again.retrieve(qa.question) == store.retrieve(qa.question)
        assert again.ranked_context(qa.question) == store.ranked_context(qa.question)
    assert list(again.export_records()) == list(store.export_records())
