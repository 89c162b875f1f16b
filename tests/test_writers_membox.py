"""Membox: Topic Loom sealing, Trace Weaver matching, retrieval and persistence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from memaudit_fast.writers.builders import open_store
from memaudit_fast.writers.embed import HashingEmbedder
from memaudit_fast.writers.export import read_export
from memaudit_fast.writers.llm import BoxExtraction, EventDraft, OfflineLLM
from memaudit_fast.writers.locomo_turns import Turn, conversation_from_dict
from memaudit_fast.writers.membox import (
    MemboxParams,
    MemboxStore,
    MemboxWriter,
    build_membox,
)
from memaudit_fast.writers.sample import mini_locomo


def _turn(i: int, session: int = 1, text: str | None = None, speaker: str = "Ana") -> Turn:
    return Turn(f"D{session}:{i}", speaker, session, "", text or f"message number {i}", None, i)


class ScriptedLLM(OfflineLLM):
    """Offline LLM whose continuation labels and events are given per turn."""

    name = "scripted"

    def __init__(self, labels: Mapping[str, str] | None = None,
                 events: Mapping[str, Sequence[str]] | None = None,
                 verdict: dict[int, tuple[int, ...]] | None = None) -> None:
        super().__init__(HashingEmbedder(256))
        self.labels = dict(labels or {})
        self.event_map = dict(events or {})
        self.verdict = verdict
        self.asked: list[str] = []
        self.verified: list[dict[int, list[str]]] = []

    def topic_continuation(self, box: Sequence[Turn], turn: Turn) -> str:
        self.asked.append(turn.dia_id)
        return self.labels.get(turn.dia_id, "continuous")

    def extract_box(self, box: Sequence[Turn]) -> BoxExtraction:
        events = tuple(
            EventDraft(text, (t.dia_id,)) for t in box for text in self.event_map.get(t.dia_id, ())
        )
        return BoxExtraction(f"box from {box[0].dia_id}", ("kw",), events)

    def verify_traces(self, events: Sequence[str], traces: Mapping[int, Sequence[str]]):
        self.verified.append({t: list(v) for t, v in traces.items()})
        if self.verdict is not None:
            return self.verdict
        return super().verify_traces(events, traces)


def _boxes(store: MemboxStore) -> list[list[str]]:
    return [list(b.dia_ids) for b in store.boxes.values()]


def test_a_box_holds_two_turns_before_a_shift_can_seal_it() -> None:
    # A shift on the second turn is not even asked about; a shift on the third seals.
    llm = ScriptedLLM({"D1:2": "discontinuous", "D1:3": "partial_shift", "D1:5": "discontinuous"})
    store = build_membox([_turn(i) for i in range(1, 7)], HashingEmbedder(256), llm)
    assert _boxes(store) == [["D1:1", "D1:2"], ["D1:3", "D1:4"], ["D1:5", "D1:6"]]
    assert "D1:2" not in llm.asked and "D1:4" not in llm.asked
    assert "D1:3" in llm.asked and "D1:5" in llm.asked


def test_a_new_session_seals_even_a_single_turn_box() -> None:
    llm = ScriptedLLM()
    turns = [_turn(1, 1), _turn(1, 2), _turn(2, 2), _turn(3, 2)]
    store = build_membox(turns, HashingEmbedder(256), llm)
    assert _boxes(store) == [["D1:1"], ["D2:1", "D2:2", "D2:3"]]
    assert all(box.session == box.turns[0].session for box in store.boxes.values())


def test_max_box_turns_caps_a_continuous_box() -> None:
    store = build_membox([_turn(i) for i in range(1, 8)], HashingEmbedder(256), ScriptedLLM(),
                         MemboxParams(max_box_turns=3))
    assert [len(b) for b in _boxes(store)] == [3, 3, 1]


def _weave_turns() -> list[Turn]:
    return [_turn(i, s) for s in (1, 2, 3) for i in (1, 2)]


EVENTS = {
    "D1:1": ["Ana started marathon training for the city race"],
    "D1:2": ["Ben adopted a border collie puppy named Pixel"],
    "D2:1": ["Ana continued marathon training for the city race with long runs"],
    "D3:1": ["Ben bought a violin and started lessons"],
}


def test_events_join_the_trace_of_their_most_similar_stored_event() -> None:
    store = build_membox(_weave_turns(), HashingEmbedder(512), ScriptedLLM(events=EVENTS))
    by_text = {e.text: e for e in store.events.values()}
    first = by_text[EVENTS["D1:1"][0]]
    again = by_text[EVENTS["D2:1"][0]]
    puppy = by_text[EVENTS["D1:2"][0]]
    violin = by_text[EVENTS["D3:1"][0]]
    assert again.trace_ids == first.trace_ids  # matched and verified into the marathon trace
    assert puppy.trace_ids != first.trace_ids  # two unrelated events of one box: two traces
    assert set(violin.trace_ids).isdisjoint(first.trace_ids + puppy.trace_ids)  # new trace
    assert store.stats()["multi_box_traces"] == 1
    for trace_id, members in store.traces.items():
        assert all(trace_id in store.events[e].trace_ids for e in members)


def test_verification_sees_only_voted_traces_and_may_accept_several() -> None:
    llm = ScriptedLLM(events=EVENTS, verdict={0: (0, 1)})
    store = build_membox(_weave_turns()[:4], HashingEmbedder(512), llm)
    # Box 2's event voted for the marathon trace only, but the batch verdict may name any
    # shown trace; trace 1 (the puppy) was not shown, so it is ignored.
    assert llm.verified == [{0: [EVENTS["D1:1"][0]]}]
    later = next(e for e in store.events.values() if e.text == EVENTS["D2:1"][0])
    assert later.trace_ids == [0]


def test_unmatched_events_start_new_traces_when_nothing_is_similar() -> None:
    events = {"D1:1": ["alpha beta gamma"], "D2:1": ["completely different words here"]}
    store = build_membox(_weave_turns()[:4], HashingEmbedder(512),
                         ScriptedLLM(events=events), MemboxParams(match_threshold=0.9))
    assert len(store.traces) == 2
    assert all(len(members) == 1 for members in store.traces.values())


def test_retrieval_ranks_boxes_and_expands_through_traces() -> None:
    store = build_membox(_weave_turns(), HashingEmbedder(512), ScriptedLLM(events=EVENTS))
    query = "marathon training for the city race"
    plain = store.retrieve(query, k=1, expand_traces=False)
    assert [i.kind for i in plain] == ["box"]
    top_box = plain[0]
    expanded = store.retrieve(query, k=1, expand_traces=True)
    assert expanded[0] == top_box
    extra = [i for i in expanded if i.kind == "event"]
    assert extra, "trace expansion added nothing"
    # Expansion brings the marathon event of the *other* box, never events of the box shown.
    assert all(set(i.source_turns).isdisjoint(top_box.source_turns) for i in extra)
    assert {"D1:1", "D2:1"} <= set(top_box.source_turns) | {d for i in extra for d in i.source_turns}
    ranked = store.ranked_context(query, expand_traces=False)
    assert len(ranked) == len(store.boxes)
    assert [i.score for i in ranked] == sorted((i.score for i in ranked), reverse=True)


def test_offline_loom_on_the_mini_conversation() -> None:
    conv = conversation_from_dict(mini_locomo())
    store = build_membox(conv.turns, HashingEmbedder(1024), sample_id=conv.sample_id)
    boxes = list(store.boxes.values())
    covered = [d for b in boxes for d in b.dia_ids]
    assert covered == [t.dia_id for t in conv.turns]  # every turn once, in order
    for box in boxes:
        last_of_session = box.turns[-1].dia_id in ("D1:9", "D2:6")
        assert len(box.turns) >= 2 or last_of_session
        assert box.keywords and box.topic
    assert all(e.text.split(":")[0] in ("Ana", "Ben") for e in store.events.values())


def test_store_round_trip_answers_the_same(tmp_path: Path) -> None:
    conv = conversation_from_dict(mini_locomo())
    store = build_membox(conv.turns, HashingEmbedder(1024), sample_id=conv.sample_id)
    store.save(tmp_path / "mini")
    for name in ("manifest.json", "store.sqlite", "boxes.faiss", "events.faiss"):
        assert (tmp_path / "mini" / name).is_file()
    again = open_store(tmp_path / "mini")
    assert isinstance(again, MemboxStore)
    assert again.stats() == store.stats()
    for qa in conv.qa:
        assert again.ranked_context(qa.question) == store.ranked_context(qa.question)
        assert again.retrieve(qa.question) == store.retrieve(qa.question)
    assert list(again.export_records()) == list(store.export_records())


def test_export_lists_boxes_and_events_with_source_turns(tmp_path: Path) -> None:
    from memaudit_fast.writers.export import export_store

    conv = conversation_from_dict(mini_locomo())
    store = build_membox(conv.turns, HashingEmbedder(1024))
    path = export_store(store, tmp_path)
    records = list(read_export(path))
    kinds = {r["kind"] for r in records}
    assert kinds == {"box", "event"}
    boxes = [r for r in records if r["kind"] == "box"]
    assert sorted(d for r in boxes for d in r["source_turns"]) == sorted(t.dia_id for t in conv.turns)
    assert all(r["time"].startswith("2023-03") for r in records)
    assert len(records) == len(store.boxes) + len(store.events)


def test_writer_streams_and_reports_sealed_boxes() -> None:
    writer = MemboxWriter(HashingEmbedder(256), ScriptedLLM({"D1:3": "discontinuous"}))
    sealed = [writer.add_turn(_turn(i)) for i in range(1, 5)]
    assert [b.box_id if b else None for b in sealed] == [None, None, 0, None]
    store = writer.flush()
    assert len(store.boxes) == 2 and writer.seal() is None
    assert np.isclose(np.linalg.norm(store.box_index.vector(0)), 1.0, atol=1e-5)
