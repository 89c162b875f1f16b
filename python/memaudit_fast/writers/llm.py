"""The few LLM decisions the writers make, behind one small protocol, and an offline default.

Membox (Topic Loom, Trace Weaver) and ENGRAM (router, extractors) call an LLM for five kinds of
decision. :class:`MemoryLLM` names them; a writer never talks to a model any other way.

* ``topic_continuation`` -- does a new turn continue the open box? One of ``continuous``,
  ``partial_shift``, ``discontinuous`` (Membox's three labels; only ``continuous`` keeps the box
  open).
* ``extract_box`` -- topic, keywords and events of a sealed box (Membox).
* ``verify_traces`` / ``group_events`` -- which new events join which candidate traces, and how
  the leftover events group into new traces (Membox's batch verification and secondary
  initialisation).
* ``route`` -- a 3-bit mask per turn: bit 0 episodic, bit 1 semantic, bit 2 procedural (ENGRAM).
* ``extract_records`` -- normalised records for the routed stores (ENGRAM).

:class:`OfflineLLM` answers all of them deterministically with embedding similarity, keyword
statistics and English cue patterns. It is an *approximation* of the papers' LLM calls, not a
reproduction: it segments on lexical and embedding drift rather than on discourse understanding,
its events are selected sentences rather than abstractive summaries, and its router reads
surface cues. Its virtue is that it is free, fast, offline and repeatable. For the real thing,
:class:`memaudit_fast.writers.openai_client.OpenAIChatLLM` asks any OpenAI-compatible endpoint
through the ``openai`` SDK (the ``llm`` extra), with retries and an optional disk cache of answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from .embed import Embedder
from .locomo_turns import Turn
from .text import (
    EVENT_CUES,
    FACT_CUES,
    PROCEDURE_CUES,
    SHIFT_MARKERS,
    content_words,
    is_question,
    resolve_time_anchor,
    sentences,
    shorten,
    strip_image_note,
    top_keywords,
)

ContinuationLabel = Literal["continuous", "partial_shift", "discontinuous"]
CONTINUATION_LABELS: tuple[str, ...] = ("continuous", "partial_shift", "discontinuous")

RecordKind = Literal["episodic", "semantic", "procedural"]
#: Router mask bits, in the order ENGRAM lists its stores.
ROUTE_BITS: dict[str, int] = {"episodic": 1, "semantic": 2, "procedural": 4}
RECORD_KINDS: tuple[str, ...] = ("episodic", "semantic", "procedural")


def mask_kinds(mask: int) -> list[str]:
    """The store names whose bit is set in a router mask, in canonical order."""
    return [kind for kind in RECORD_KINDS if mask & ROUTE_BITS[kind]]


@dataclass(frozen=True)
class EventDraft:
    """An event extracted from a box: one line of text and the turns it comes from."""

    text: str
    source_turns: tuple[str, ...]


@dataclass(frozen=True)
class BoxExtraction:
    """What the Topic Loom keeps of a sealed box besides its turns."""

    topic: str
    keywords: tuple[str, ...]
    events: tuple[EventDraft, ...]


@dataclass(frozen=True)
class RecordDraft:
    """An ENGRAM record before it is embedded and stored.

    ``title`` is empty for semantic records; ``body`` is the summary (episodic), the fact
    (semantic) or the normalised content (procedural).
    """

    kind: str
    title: str
    body: str
    time_anchor: str | None


@runtime_checkable
class MemoryLLM(Protocol):
    """The decisions a memory writer delegates to a language model."""

    name: str

    def topic_continuation(self, box: Sequence[Turn], turn: Turn) -> str:
        """One of :data:`CONTINUATION_LABELS` for ``turn`` after the open ``box``."""
        ...

    def extract_box(self, box: Sequence[Turn]) -> BoxExtraction:
        """Topic, keywords and events of a box being sealed."""
        ...

    def verify_traces(
        self, events: Sequence[str], traces: Mapping[int, Sequence[str]]
    ) -> dict[int, tuple[int, ...]]:
        """For each new event (by index) the candidate trace ids it joins; may be several."""
        ...

    def group_events(self, events: Sequence[str]) -> list[list[int]]:
        """Partition new events (by index) into groups, each starting a new trace."""
        ...

    def route(self, turn: Turn) -> int:
        """ENGRAM's 3-bit mask for a turn (0 stores nothing)."""
        ...

    def extract_records(self, turn: Turn, mask: int) -> list[RecordDraft]:
        """Normalised records of ``turn`` for the stores set in ``mask``."""
        ...


@dataclass(frozen=True)
class OfflineParams:
    """Thresholds of :class:`OfflineLLM`, in cosine units of the embedder in use.

    Attributes
    ----------
    continue_threshold:
        A turn continues the box when its similarity to the box (max of: to the box's
        recency-weighted centroid, to the last turn) reaches this, or when it shares enough
        content words with the box.
    shift_margin:
        With a topic-shift phrase ("by the way", "anyway") a turn must clear
        ``continue_threshold + shift_margin`` to continue.
    short_turn_words:
        Turns with at most this many content words are reactions and always continue.
    overlap_words:
        Shared content words with the box that count as continuation on their own.
    verify_threshold:
        An event joins a candidate trace when its best similarity to the trace's events
        reaches this.
    group_threshold:
        Leftover events of one box go into the same new trace above this similarity.
    max_events:
        Events kept per box.
    min_record_words:
        A turn that matched no router cue is still stored as an episode when it has at least
        this many content words (chat rarely announces its events).
    """

    continue_threshold: float = 0.30
    shift_margin: float = 0.15
    short_turn_words: int = 2
    overlap_words: int = 2
    verify_threshold: float = 0.45
    group_threshold: float = 0.55
    max_events: int = 4
    min_record_words: int = 4


#: Thresholds that fit each embedder's similarity scale (WordLlama's cosines run low).
OFFLINE_DEFAULTS: dict[str, OfflineParams] = {
    "wordllama": OfflineParams(),
    "hashing": OfflineParams(continue_threshold=0.22, verify_threshold=0.35, group_threshold=0.45),
    "st": OfflineParams(continue_threshold=0.35, verify_threshold=0.55, group_threshold=0.65),
}


def default_offline_params(embedder: Embedder) -> OfflineParams:
    return OFFLINE_DEFAULTS.get(embedder.spec.partition(":")[0], OfflineParams())


def _image_sentence(text: str) -> str:
    """Turn ``[shares an image: X]`` into a sentence ``Shared an image: X.``."""
    return text.replace("[shares an image:", "Shared an image:").replace("]", ".")


class OfflineLLM:
    """Deterministic stand-in for the writers' LLM calls (see the module docstring).

    Parameters
    ----------
    embedder:
        Used for every similarity judgement (turn-to-box, event-to-trace, centrality).
    params:
        Thresholds; by default those fitted to the embedder's similarity scale.
    """

    name = "offline"

    def __init__(self, embedder: Embedder, params: OfflineParams | None = None) -> None:
        self.embedder = embedder
        self.params = params or default_offline_params(embedder)
        self._cache: dict[str, np.ndarray] = {}

    # -- helpers --------------------------------------------------------------------------
    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            if len(self._cache) > 50_000:  # bound memory on very long streams
                self._cache.clear()
            for text, vec in zip(todo, self.embedder.encode(todo)):
                self._cache[text] = vec
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    # -- Membox: Topic Loom ---------------------------------------------------------------
    def topic_continuation(self, box: Sequence[Turn], turn: Turn) -> str:
        p = self.params
        new_words = set(content_words(strip_image_note(turn.text)))
        if len(new_words) <= p.short_turn_words:
            return "continuous"
        shifted = bool(SHIFT_MARKERS.search(turn.text))
        box_words: set[str] = set()
        for t in box[-3:]:
            box_words.update(content_words(strip_image_note(t.text)))
        vecs = self._embed([t.text for t in box] + [turn.text])
        history, new = vecs[:-1], vecs[-1]
        # Recent turns weigh more: topics drift, the box's start matters less than its end.
        weights = 0.6 ** np.arange(len(history))[::-1]
        centroid = weights @ history
        norm = float(np.linalg.norm(centroid))
        sim_box = float(centroid @ new) / norm if norm > 0 else 0.0
        sim_last = float(history[-1] @ new)
        similarity = max(sim_box, sim_last)
        threshold = p.continue_threshold + (p.shift_margin if shifted else 0.0)
        if similarity >= threshold or (
            not shifted and len(new_words & box_words) >= p.overlap_words
        ):
            return "continuous"
        return "partial_shift" if shifted else "discontinuous"

    def extract_box(self, box: Sequence[Turn]) -> BoxExtraction:
        p = self.params
        keywords = tuple(top_keywords([t.text for t in box], k=8))
        scored: list[tuple[float, int, str, str]] = []  # (score, order, sentence, dia_id)
        order = 0
        for turn in box:
            for sentence in sentences(_image_sentence(turn.text)):
                order += 1
                n_content = len(content_words(sentence))
                if is_question(sentence) or n_content < 3:
                    continue
                cues = len(EVENT_CUES.findall(sentence))
                first_person = 1.0 if sentence.lower().startswith(("i ", "i'", "we ", "my ")) else 0
                score = 2.0 * cues + first_person + 0.1 * min(n_content, 10)
                scored.append((score, order, f"{turn.speaker}: {sentence}", turn.dia_id))
        with_cues = [s for s in scored if s[0] >= 2.0]
        chosen = sorted(with_cues or scored, key=lambda s: (-s[0], s[1]))[: p.max_events]
        chosen.sort(key=lambda s: s[1])
        events = tuple(EventDraft(text=s[2], source_turns=(s[3],)) for s in chosen)
        topic = self._central_sentence(box) or ", ".join(keywords[:3])
        return BoxExtraction(topic=topic, keywords=keywords, events=events)

    def _central_sentence(self, box: Sequence[Turn]) -> str:
        """The non-question sentence closest to the box's centroid, shortened to 14 words."""
        pool = [
            s
            for t in box
            for s in sentences(strip_image_note(t.text))
            if not is_question(s) and len(content_words(s)) >= 2
        ]
        if not pool:
            return ""
        vecs = self._embed(pool)
        centroid = vecs.mean(axis=0)
        best = int(np.argmax(vecs @ centroid))
        return shorten(pool[best], 14)

    # -- Membox: Trace Weaver -------------------------------------------------------------
    def verify_traces(
        self, events: Sequence[str], traces: Mapping[int, Sequence[str]]
    ) -> dict[int, tuple[int, ...]]:
        if not events or not traces:
            return {}
        new = self._embed(list(events))
        accepted: dict[int, list[int]] = {}
        for trace_id in sorted(traces):
            members = list(traces[trace_id])
            if not members:
                continue
            best = (new @ self._embed(members).T).max(axis=1)
            for i in np.flatnonzero(best >= self.params.verify_threshold):
                accepted.setdefault(int(i), []).append(trace_id)
        return {i: tuple(ids) for i, ids in sorted(accepted.items())}

    def group_events(self, events: Sequence[str]) -> list[list[int]]:
        """Greedy single-link grouping in event order."""
        if not events:
            return []
        vecs = self._embed(list(events))
        groups: list[list[int]] = []
        for i in range(len(events)):
            for group in groups:
                if float((vecs[group] @ vecs[i]).max()) >= self.params.group_threshold:
                    group.append(i)
                    break
            else:
                groups.append([i])
        return groups

    # -- ENGRAM ---------------------------------------------------------------------------
    def _statements(self, turn: Turn) -> list[str]:
        return [s for s in sentences(_image_sentence(turn.text)) if not is_question(s)]

    def route(self, turn: Turn) -> int:
        statements = self._statements(turn)
        informative = sum(len(content_words(s)) for s in statements)
        if informative < 2:  # small talk ("You got this!", "Thanks!") is not worth a record
            return 0
        mask = 0
        if any(EVENT_CUES.search(s) for s in statements) or "[shares an image:" in turn.text:
            mask |= ROUTE_BITS["episodic"]
        if any(FACT_CUES.search(s) for s in statements):
            mask |= ROUTE_BITS["semantic"]
        if any(PROCEDURE_CUES.search(s) for s in statements):
            mask |= ROUTE_BITS["procedural"]
        if mask == 0 and informative >= self.params.min_record_words:
            mask = ROUTE_BITS["episodic"]
        return mask

    def extract_records(self, turn: Turn, mask: int) -> list[RecordDraft]:
        statements = self._statements(turn)
        if not statements:
            return []
        out: list[RecordDraft] = []
        for kind in mask_kinds(mask):
            cue = {"episodic": EVENT_CUES, "semantic": FACT_CUES, "procedural": PROCEDURE_CUES}[kind]
            picked = [s for s in statements if cue.search(s)] or statements
            body = f"{turn.speaker}: {' '.join(picked)}"
            if kind == "semantic":
                out.append(RecordDraft(kind, "", body, turn.day))
                continue
            keywords = top_keywords(picked, k=4)
            title = ", ".join(keywords) if keywords else shorten(picked[0], 6)
            anchor = resolve_time_anchor(" ".join(picked), turn.day) if kind == "episodic" else (
                turn.day
            )
            out.append(RecordDraft(kind, title, body, anchor))
        return out
