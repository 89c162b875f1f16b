"""Membox: topic-continuity memory (Topic Loom boxes woven into Trace Weaver traces).

After the Membox paper (topic-continuity memory for LLM agents, evaluated on LoCoMo):

**Topic Loom.** Turns stream in. The open box either takes the new turn or is *sealed*:

* a new session always seals (a box never spans two sessions);
* otherwise, once the box holds at least ``min_box_turns`` turns (2: a lone message is never a
  box of its own), the LLM labels the turn ``continuous``, ``partial_shift`` or
  ``discontinuous``; anything but ``continuous`` seals the box and the turn opens the next one;
* the end of the stream seals the last box.

On sealing, the box gets a topic, keywords and events (concrete actions, developments, plans).

**Trace Weaver.** Each event of a newly sealed box votes for the trace that holds its most
similar stored event (cosine over a FAISS index of all earlier events, kept when at least
``match_threshold``). The voted traces and all new events go to one batch verification, which
may put an event into several traces. Events accepted nowhere are grouped into new traces.

**Retrieval.** Boxes are ranked by the cosine between the query and the box's representation
(topic + events + keywords); the top ``top_k`` boxes give their turns. With trace expansion, the
most query-relevant event of each retrieved box brings the events of its traces (those not
already present through a retrieved box), at most ``max_trace_events`` per box, most relevant
first. Raw turns of boxes that were not retrieved never enter the context.

Deviations, stated: with the offline LLM every decision is the approximation documented in
:mod:`memaudit_fast.writers.llm`; the cap on expanded events bounds context size (the paper
adds whole traces).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .embed import Embedder, get_embedder
from .errors import StoreError
from .index import DEFAULT_HNSW_THRESHOLD, VectorIndex
from .llm import MemoryLLM, OfflineLLM
from .locomo_turns import Turn
from .store import (
    DATABASE,
    ContextItem,
    copy_database,
    load_database,
    reopen_manifest,
    write_store_manifest,
)

#: Event-to-event match thresholds fitted to each embedder's cosine scale.
MATCH_THRESHOLDS = {"wordllama": 0.40, "hashing": 0.30, "st": 0.50}


@dataclass(frozen=True)
class MemboxParams:
    """Knobs of the Topic Loom, Trace Weaver and retrieval.

    ``match_threshold=None`` takes the value fitted to the embedder (:data:`MATCH_THRESHOLDS`).
    ``max_box_turns=None`` lets topic continuity alone decide box length.
    ``index_turns=True`` appends the box's raw turns to the text it is ranked by (not in the
    paper; it helps when extraction is the lossy offline approximation).
    """

    min_box_turns: int = 2
    max_box_turns: int | None = None
    match_threshold: float | None = None
    match_neighbours: int = 5
    max_trace_context: int = 8
    top_k: int = 3
    expand_traces: bool = True
    index_turns: bool = False
    max_trace_events: int = 6
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD

    def resolved_match_threshold(self, embedder: Embedder) -> float:
        if self.match_threshold is not None:
            return self.match_threshold
        return MATCH_THRESHOLDS.get(embedder.spec.partition(":")[0], 0.45)


@dataclass
class Box:
    """A sealed box: contiguous turns of one session on one topic."""

    box_id: int
    session: int
    turns: list[Turn]
    topic: str = ""
    keywords: tuple[str, ...] = ()
    event_ids: list[int] = field(default_factory=list)

    @property
    def dia_ids(self) -> tuple[str, ...]:
        return tuple(t.dia_id for t in self.turns)

    @property
    def time(self) -> str | None:
        return self.turns[0].time if self.turns else None

    def render(self) -> str:
        """The box as context: a date line, then ``Speaker: text`` per turn."""
        day = self.turns[0].day if self.turns else None
        head = f"[{day}]\n" if day else ""
        return head + "\n".join(f"{t.speaker}: {t.text}" for t in self.turns)


@dataclass
class Event:
    """An event of a box; it belongs to one or more traces."""

    event_id: int
    box_id: int
    text: str
    time: str | None
    source_turns: tuple[str, ...]
    trace_ids: list[int] = field(default_factory=list)

    def render(self) -> str:
        return f"[{self.time[:10]}] {self.text}" if self.time else self.text


class MemboxStore:
    """Boxes, events and traces with their FAISS indexes; answers queries.

    Build one with :class:`MemboxWriter` (or :func:`build_membox`); reopen one with
    :meth:`open`.
    """

    writer = "membox"

    def __init__(
        self,
        embedder: Embedder,
        params: MemboxParams | None = None,
        *,
        sample_id: str = "",
        llm_name: str = "offline",
    ) -> None:
        self.embedder = embedder
        self.params = params or MemboxParams()
        self.sample_id = sample_id
        self.llm_name = llm_name
        self.boxes: dict[int, Box] = {}
        self.events: dict[int, Event] = {}
        self.traces: dict[int, list[int]] = {}
        self.box_index = VectorIndex(embedder.dim, hnsw_threshold=self.params.hnsw_threshold)
        self.event_index = VectorIndex(embedder.dim, hnsw_threshold=self.params.hnsw_threshold)

    # -- representation -------------------------------------------------------------------
    def representation(self, box: Box) -> str:
        """The text a box is ranked by: topic, events, keywords."""
        events = " ".join(self.events[e].text for e in box.event_ids)
        text = f"{box.topic}. {events} Keywords: {', '.join(box.keywords)}"
        if self.params.index_turns:
            text += " " + " ".join(f"{t.speaker}: {t.text}" for t in box.turns)
        return text

    # -- retrieval ------------------------------------------------------------------------
    def _query_vector(self, query: str) -> np.ndarray:
        return self.embedder.encode([query])[0]

    def _expansion(
        self, scores: dict[int, float], box: Box, present_boxes: set[int],
        present_events: set[int],
    ) -> list[tuple[Event, float]]:
        """Events of the traces linked to the box's most query-relevant event.

        ``scores`` holds the query's cosine with every event.
        """
        if not box.event_ids:
            return []
        anchor = self.events[max(box.event_ids, key=lambda e: (scores[e], -e))]
        pool: dict[int, float] = {}
        for trace_id in anchor.trace_ids:
            for e in self.traces[trace_id]:
                ev = self.events[e]
                if ev.box_id in present_boxes or e in present_events or e in pool:
                    continue
                pool[e] = scores[e]
        best = sorted(pool.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(self.events[e], s) for e, s in best[: self.params.max_trace_events]]

    def _context(self, query: str, k: int, expand: bool) -> list[ContextItem]:
        q = self._query_vector(query)
        items: list[ContextItem] = []
        present_boxes: set[int] = set()
        present_events: set[int] = set()
        event_scores = self.event_index.scores(q) if expand else {}
        for box_id, score in self.box_index.search_one(q, k):
            box = self.boxes[box_id]
            present_boxes.add(box_id)
            items.append(
                ContextItem(box.render(), box.dia_ids, score, "box", f"box-{box_id}")
            )
            if not expand:
                continue
            for event, ev_score in self._expansion(
                event_scores, box, present_boxes, present_events
            ):
                present_events.add(event.event_id)
                items.append(
                    ContextItem(
                        event.render(), event.source_turns, ev_score, "event",
                        f"event-{event.event_id}",
                    )
                )
        return items

    def retrieve(
        self, query: str, k: int | None = None, *, expand_traces: bool | None = None
    ) -> list[ContextItem]:
        """Top-``k`` boxes (default ``params.top_k``), each followed by its trace expansion."""
        expand = self.params.expand_traces if expand_traces is None else expand_traces
        return self._context(query, k or self.params.top_k, expand)

    def ranked_context(
        self, query: str, *, expand_traces: bool | None = None
    ) -> list[ContextItem]:
        """Every box in rank order (with expansions): what a word budget is cut from."""
        expand = self.params.expand_traces if expand_traces is None else expand_traces
        return self._context(query, len(self.boxes), expand)

    # -- export ---------------------------------------------------------------------------
    def export_records(self) -> Iterator[dict[str, Any]]:
        for box in self.boxes.values():
            yield {
                "memory_id": f"box-{box.box_id}", "text": box.render(),
                "source_turns": list(box.dia_ids), "time": box.time, "kind": "box",
                "topic": box.topic, "keywords": list(box.keywords),
                "event_ids": [f"event-{e}" for e in box.event_ids],
            }
        for ev in self.events.values():
            yield {
                "memory_id": f"event-{ev.event_id}", "text": ev.render(),
                "source_turns": list(ev.source_turns), "time": ev.time, "kind": "event",
                "box_id": f"box-{ev.box_id}", "trace_ids": [f"trace-{t}" for t in ev.trace_ids],
            }

    def stats(self) -> dict[str, Any]:
        sizes = [len(b.turns) for b in self.boxes.values()]
        return {
            "boxes": len(self.boxes), "events": len(self.events), "traces": len(self.traces),
            "turns": sum(sizes),
            "mean_box_turns": round(float(np.mean(sizes)), 2) if sizes else 0.0,
            "multi_box_traces": sum(
                1 for evs in self.traces.values()
                if len({self.events[e].box_id for e in evs}) > 1
            ),
        }

    # -- persistence ----------------------------------------------------------------------
    _SCHEMA = """
    CREATE TABLE turns(dia_id TEXT PRIMARY KEY, idx INTEGER, speaker TEXT, session INTEGER,
                       session_date TEXT, time TEXT, text TEXT);
    CREATE TABLE boxes(box_id INTEGER PRIMARY KEY, session INTEGER, topic TEXT,
                       keywords TEXT, time TEXT);
    CREATE TABLE box_turns(box_id INTEGER, position INTEGER, dia_id TEXT,
                           PRIMARY KEY(box_id, position));
    CREATE TABLE events(event_id INTEGER PRIMARY KEY, box_id INTEGER, text TEXT, time TEXT,
                        source_turns TEXT);
    CREATE TABLE trace_events(trace_id INTEGER, position INTEGER, event_id INTEGER,
                              PRIMARY KEY(trace_id, position));
    """

    def save(self, directory: str | Path) -> Path:
        """Write ``store.sqlite``, ``boxes.faiss``, ``events.faiss`` and the manifest."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(":memory:")
        conn.executescript(self._SCHEMA)
        for box in self.boxes.values():
            conn.execute(
                "INSERT INTO boxes VALUES (?,?,?,?,?)",
                (box.box_id, box.session, box.topic, json.dumps(list(box.keywords)), box.time),
            )
            for pos, t in enumerate(box.turns):
                conn.execute(
                    "INSERT INTO turns VALUES (?,?,?,?,?,?,?)",
                    (t.dia_id, t.index, t.speaker, t.session, t.session_date, t.time, t.text),
                )
                conn.execute("INSERT INTO box_turns VALUES (?,?,?)", (box.box_id, pos, t.dia_id))
        for ev in self.events.values():
            conn.execute(
                "INSERT INTO events VALUES (?,?,?,?,?)",
                (ev.event_id, ev.box_id, ev.text, ev.time, json.dumps(list(ev.source_turns))),
            )
        for trace_id, members in self.traces.items():
            conn.executemany(
                "INSERT INTO trace_events VALUES (?,?,?)",
                [(trace_id, pos, e) for pos, e in enumerate(members)],
            )
        conn.commit()
        copy_database(conn, directory / DATABASE)
        conn.close()
        self.box_index.save(directory / "boxes.faiss")
        self.event_index.save(directory / "events.faiss")
        write_store_manifest(directory, self, self.llm_name)
        return directory

    @classmethod
    def open(cls, directory: str | Path, embedder: Embedder | None = None) -> MemboxStore:
        """Reopen a saved store; queries are embedded with the embedder named in the manifest."""
        directory = Path(directory)
        manifest, embedder = reopen_manifest(directory, cls.writer, embedder)
        params = MemboxParams(**manifest.get("params", {}))
        store = cls(
            embedder, params, sample_id=manifest.get("sample_id", ""),
            llm_name=manifest.get("llm", "offline"),
        )
        conn = load_database(directory / DATABASE)
        try:
            turns = {
                row[0]: Turn(row[0], row[2], row[3], row[4], row[6], row[5], row[1])
                for row in conn.execute("SELECT * FROM turns")
            }
            for box_id, session, topic, keywords, _time in conn.execute(
                "SELECT * FROM boxes ORDER BY box_id"
            ):
                members = [
                    turns[r[0]]
                    for r in conn.execute(
                        "SELECT dia_id FROM box_turns WHERE box_id=? ORDER BY position", (box_id,)
                    )
                ]
                store.boxes[box_id] = Box(box_id, session, members, topic, tuple(json.loads(keywords)))
            for event_id, box_id, text, time, source in conn.execute(
                "SELECT * FROM events ORDER BY event_id"
            ):
                store.events[event_id] = Event(event_id, box_id, text, time, tuple(json.loads(source)))
                store.boxes[box_id].event_ids.append(event_id)
            for trace_id, _pos, event_id in conn.execute(
                "SELECT * FROM trace_events ORDER BY trace_id, position"
            ):
                store.traces.setdefault(trace_id, []).append(event_id)
                store.events[event_id].trace_ids.append(trace_id)
        except (sqlite3.DatabaseError, KeyError) as exc:
            raise StoreError(f"{directory}: inconsistent membox database ({exc!r})") from None
        finally:
            conn.close()
        store.box_index = VectorIndex.load(directory / "boxes.faiss", hnsw_threshold=params.hnsw_threshold)
        store.event_index = VectorIndex.load(directory / "events.faiss", hnsw_threshold=params.hnsw_threshold)
        if len(store.box_index) != len(store.boxes) or len(store.event_index) != len(store.events):
            raise StoreError(f"{directory}: FAISS indexes do not match the database")
        return store


class MemboxWriter:
    """Streams turns into a :class:`MemboxStore` (Topic Loom, then Trace Weaver per sealed box).

    Parameters
    ----------
    embedder:
        Embeds events, box representations and queries.
    llm:
        Decides continuation, extraction and verification (default: :class:`OfflineLLM`).
    """

    def __init__(
        self,
        embedder: Embedder,
        llm: MemoryLLM | None = None,
        params: MemboxParams | None = None,
        *,
        sample_id: str = "",
    ) -> None:
        self.llm = llm or OfflineLLM(embedder)
        self.store = MemboxStore(embedder, params, sample_id=sample_id, llm_name=self.llm.name)
        self.params = self.store.params
        self.embedder = embedder
        self._open: list[Turn] = []
        self._match_threshold = self.params.resolved_match_threshold(embedder)

    # -- Topic Loom -----------------------------------------------------------------------
    def add_turn(self, turn: Turn) -> Box | None:
        """Feed one turn; return the box it sealed, if any."""
        sealed = None
        if self._open and self._should_seal(turn):
            sealed = self.seal()
        self._open.append(turn)
        return sealed

    def _should_seal(self, turn: Turn) -> bool:
        box = self._open
        if turn.session != box[-1].session:
            return True
        if self.params.max_box_turns is not None and len(box) >= self.params.max_box_turns:
            return True
        if len(box) < self.params.min_box_turns:
            return False
        return self.llm.topic_continuation(box, turn) != "continuous"

    def seal(self) -> Box | None:
        """Seal the open box (extraction, weaving, indexing); ``None`` when nothing is open."""
        if not self._open:
            return None
        turns, self._open = self._open, []
        extraction = self.llm.extract_box(turns)
        store = self.store
        box = Box(
            box_id=len(store.boxes), session=turns[0].session, turns=turns,
            topic=extraction.topic, keywords=extraction.keywords,
        )
        store.boxes[box.box_id] = box
        new_events: list[Event] = []
        for draft in extraction.events:
            ev = Event(len(store.events), box.box_id, draft.text, turns[0].time, draft.source_turns)
            store.events[ev.event_id] = ev
            box.event_ids.append(ev.event_id)
            new_events.append(ev)
        vectors = (
            self.embedder.encode([e.text for e in new_events])
            if new_events
            else np.zeros((0, self.embedder.dim), np.float32)
        )
        self._weave(new_events, vectors)
        store.event_index.add(vectors, [e.event_id for e in new_events])
        store.box_index.add(self.embedder.encode([store.representation(box)]), [box.box_id])
        return box

    def flush(self) -> MemboxStore:
        """Seal the last box and return the store."""
        self.seal()
        return self.store

    # -- Trace Weaver ---------------------------------------------------------------------
    def candidate_traces(self, vectors: np.ndarray) -> list[int]:
        """Event-to-trace voting: each event votes for the traces of its nearest stored event."""
        store = self.store
        votes: set[int] = set()
        for vec in vectors:
            for event_id, score in store.event_index.search_one(vec, self.params.match_neighbours):
                if score < self._match_threshold:
                    break
                votes.update(store.events[event_id].trace_ids)
                break  # only the most similar stored event votes
        return sorted(votes)

    def _weave(self, new_events: Sequence[Event], vectors: np.ndarray) -> None:
        if not new_events:
            return
        store = self.store
        accepted: dict[int, tuple[int, ...]] = {}
        candidates = self.candidate_traces(vectors)
        if candidates:
            shown = {
                t: [store.events[e].text for e in store.traces[t][-self.params.max_trace_context :]]
                for t in candidates
            }
            verdict = self.llm.verify_traces([e.text for e in new_events], shown)
            accepted = {
                i: tuple(t for t in ts if t in shown)
                for i, ts in verdict.items()
                if 0 <= i < len(new_events)
            }
        for i, trace_ids in accepted.items():
            for t in trace_ids:
                store.traces[t].append(new_events[i].event_id)
                new_events[i].trace_ids.append(t)
        leftover = [i for i in range(len(new_events)) if not new_events[i].trace_ids]
        groups = self.llm.group_events([new_events[i].text for i in leftover]) if leftover else []
        grouped = {j for g in groups for j in g}
        # Any event the grouping forgot still gets a trace of its own: nothing is dropped.
        groups += [[j] for j in range(len(leftover)) if j not in grouped]
        for group in groups:
            trace_id = max(store.traces, default=-1) + 1
            store.traces[trace_id] = []
            for j in group:
                if not 0 <= j < len(leftover):
                    continue
                ev = new_events[leftover[j]]
                if trace_id not in ev.trace_ids:
                    store.traces[trace_id].append(ev.event_id)
                    ev.trace_ids.append(trace_id)
            if not store.traces[trace_id]:
                del store.traces[trace_id]


def build_membox(
    turns: Iterable[Turn],
    embedder: Embedder | str | None = None,
    llm: MemoryLLM | None = None,
    params: MemboxParams | None = None,
    *,
    sample_id: str = "",
) -> MemboxStore:
    """Run the Topic Loom and Trace Weaver over a turn stream and return the store."""
    emb = get_embedder(embedder)
    writer = MemboxWriter(emb, llm, params, sample_id=sample_id)
    for turn in turns:
        writer.add_turn(turn)
    return writer.flush()
