"""ENGRAM: typed memory (episodic, semantic, procedural) with one router and one dense retriever.

After the ENGRAM paper (typed memory with a single router and retriever, evaluated on LoCoMo
and LongMemEval):

1. **Routing.** Each turn gets a 3-bit mask, bit 0 episodic, bit 1 semantic, bit 2 procedural
   (``MemoryLLM.route``); a mask of 0 stores nothing.
2. **Extraction.** For every set bit the extractor writes one normalised record:
   episodic ``(title, summary, time_anchor)``, semantic ``(fact, time_anchor)``, procedural
   ``(title, content, time_anchor)``. Each record keeps its speaker, the day it was said and its
   source turn, and is stored with its embedding in a SQLite database (one table per type).
3. **Dense retrieval.** The query is embedded; each store returns its top ``k_per_store``
   records by cosine (FAISS, one index per store, ids = SQLite row ids). With ``speaker``
   given, only that speaker's records answer (speaker banks).
4. **Aggregation.** The three lists are merged rank by rank (every store's first hit, then every
   store's second, ...; within a rank by score), so that all evidence types are represented;
   duplicates (same normalised text, or cosine of at least ``dedupe_threshold`` to a record
   already kept) are dropped; the result is cut to ``max_records`` records (25 by default).
5. **Serialisation.** One line per record, with its time anchor:
   ``[2023-05-07] support group, LGBTQ: Caroline: I went to a LGBTQ support group yesterday.``
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .embed import Embedder, get_embedder
from .errors import StoreError, UsageError
from .index import DEFAULT_HNSW_THRESHOLD, VectorIndex
from .llm import RECORD_KINDS, MemoryLLM, OfflineLLM, RecordDraft
from .locomo_turns import Turn
from .store import (
    DATABASE,
    ContextItem,
    blob_embedding,
    copy_database,
    embedding_blob,
    load_database,
    reopen_manifest,
    write_store_manifest,
)

# Column names of each store's title and body, as the paper names the fields.
_FIELDS = {
    "episodic": ("title", "summary"),
    "semantic": (None, "fact"),
    "procedural": ("title", "content"),
}


@dataclass(frozen=True)
class EngramParams:
    """Retrieval knobs: per-store depth, total records kept, duplicate threshold."""

    k_per_store: int = 25
    max_records: int = 25
    dedupe_threshold: float = 0.95
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD


@dataclass(frozen=True)
class EngramRecord:
    """A stored record. ``title`` is empty for semantic records."""

    record_id: int
    kind: str
    speaker: str
    title: str
    body: str
    time_anchor: str | None
    said_at: str | None
    source_turns: tuple[str, ...]

    @property
    def memory_id(self) -> str:
        return f"{self.kind}-{self.record_id}"

    def embedding_text(self) -> str:
        return f"{self.title}: {self.body}" if self.title else self.body

    def render(self) -> str:
        stamp = f"[{self.time_anchor}] " if self.time_anchor else ""
        return stamp + self.embedding_text()


def _norm_text(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


class EngramStore:
    """Three typed stores in one SQLite database, each with a FAISS index."""

    writer = "engram"

    _SCHEMA = """
    CREATE TABLE turns(dia_id TEXT PRIMARY KEY, idx INTEGER, speaker TEXT, session INTEGER,
                       session_date TEXT, time TEXT, text TEXT, route_mask INTEGER);
    CREATE TABLE episodic(id INTEGER PRIMARY KEY, speaker TEXT, title TEXT, summary TEXT,
                          time_anchor TEXT, said_at TEXT, source_turns TEXT, embedding BLOB);
    CREATE TABLE semantic(id INTEGER PRIMARY KEY, speaker TEXT, fact TEXT,
                          time_anchor TEXT, said_at TEXT, source_turns TEXT, embedding BLOB);
    CREATE TABLE procedural(id INTEGER PRIMARY KEY, speaker TEXT, title TEXT, content TEXT,
                            time_anchor TEXT, said_at TEXT, source_turns TEXT, embedding BLOB);
    CREATE INDEX episodic_speaker ON episodic(speaker);
    CREATE INDEX semantic_speaker ON semantic(speaker);
    CREATE INDEX procedural_speaker ON procedural(speaker);
    """

    def __init__(
        self,
        embedder: Embedder,
        params: EngramParams | None = None,
        *,
        sample_id: str = "",
        llm_name: str = "offline",
        conn: sqlite3.Connection | None = None,
    ) -> None:
        self.embedder = embedder
        self.params = params or EngramParams()
        self.sample_id = sample_id
        self.llm_name = llm_name
        if conn is None:
            conn = sqlite3.connect(":memory:")
            conn.executescript(self._SCHEMA)
        self.conn = conn
        self.indexes = {
            kind: VectorIndex(embedder.dim, hnsw_threshold=self.params.hnsw_threshold)
            for kind in RECORD_KINDS
        }
        self._records: dict[str, dict[int, EngramRecord]] = {kind: {} for kind in RECORD_KINDS}
        self._keys: dict[str, str] = {}

    def close(self) -> None:
        """Release the in-memory database (the store cannot answer afterwards)."""
        self.conn.close()

    def __del__(self) -> None:
        # Close explicitly so that interpreters that warn about unclosed connections stay quiet.
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()

    # -- writing --------------------------------------------------------------------------
    def add_turn(self, turn: Turn, mask: int) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO turns VALUES (?,?,?,?,?,?,?,?)",
            (turn.dia_id, turn.index, turn.speaker, turn.session, turn.session_date, turn.time,
             turn.text, mask),
        )

    def add_records(self, turn: Turn, drafts: list[RecordDraft]) -> list[EngramRecord]:
        """Embed and insert the drafts of one turn; return the stored records."""
        drafts = [d for d in drafts if d.kind in RECORD_KINDS and d.body.strip()]
        if not drafts:
            return []
        out = []
        texts = [f"{d.title}: {d.body}" if d.title else d.body for d in drafts]
        vectors = self.embedder.encode(texts)
        for draft, vec in zip(drafts, vectors):
            title_col, body_col = _FIELDS[draft.kind]
            cols = ["speaker", body_col, "time_anchor", "said_at", "source_turns", "embedding"]
            vals: list[Any] = [turn.speaker, draft.body, draft.time_anchor, turn.day,
                               json.dumps([turn.dia_id]), embedding_blob(vec)]
            title = draft.title if title_col else ""
            if title_col:
                cols.insert(1, title_col)
                vals.insert(1, title)
            cur = self.conn.execute(
                f"INSERT INTO {draft.kind} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                vals,
            )
            record_id = int(cur.lastrowid or 0)
            record = EngramRecord(
                record_id, draft.kind, turn.speaker, title, draft.body, draft.time_anchor,
                turn.day, (turn.dia_id,),
            )
            self._records[draft.kind][record_id] = record
            self.indexes[draft.kind].add(vec.reshape(1, -1), [record_id])
            out.append(record)
        return out

    # -- reading --------------------------------------------------------------------------
    def records(self, kind: str | None = None) -> list[EngramRecord]:
        kinds = [kind] if kind else list(RECORD_KINDS)
        return [r for k in kinds for r in self._records[k].values()]

    def _load_records(self) -> None:
        for kind in RECORD_KINDS:
            title_col, body_col = _FIELDS[kind]
            select = f"id, speaker, {title_col or repr('')}, {body_col}, time_anchor, said_at, source_turns"
            for row in self.conn.execute(f"SELECT {select} FROM {kind} ORDER BY id"):
                rid, speaker, title, body, anchor, said, source = row
                self._records[kind][rid] = EngramRecord(
                    rid, kind, speaker, title, body, anchor, said, tuple(json.loads(source))
                )

    def _dedupe_key(self, record: EngramRecord) -> str:
        key = self._keys.get(record.memory_id)
        if key is None:
            key = self._keys[record.memory_id] = _norm_text(record.body)
        return key

    def _store_hits(
        self, kind: str, q: np.ndarray, k: int, speaker: str | None
    ) -> list[tuple[EngramRecord, float]]:
        index = self.indexes[kind]
        depth = k if speaker is None else min(len(index), 4 * k)
        while True:
            hits = [
                (self._records[kind][i], s)
                for i, s in index.search_one(q, depth)
                if speaker is None or self._records[kind][i].speaker == speaker
            ]
            if len(hits) >= k or depth >= len(index):
                return hits[:k]
            depth = min(len(index), depth * 2)

    def _merged(
        self, query: str, k_per_store: int, max_records: int, speaker: str | None
    ) -> list[ContextItem]:
        # Never more than the store holds: k sizes an array (flat and membox clamp it the same way).
        total = sum(len(ix) for ix in self.indexes.values())
        max_records = max(0, min(int(max_records), total))
        k_per_store = max(0, min(int(k_per_store), total))
        q = self.embedder.encode([query])[0]
        per_store = [self._store_hits(kind, q, k_per_store, speaker) for kind in RECORD_KINDS]
        kept: list[ContextItem] = []
        kept_vecs = np.zeros((max_records, self.embedder.dim), dtype=np.float32)
        seen: set[str] = set()
        for rank in range(max((len(h) for h in per_store), default=0)):
            layer = sorted(
                (hits[rank] for hits in per_store if rank < len(hits)),
                key=lambda rs: (-rs[1], rs[0].memory_id),
            )
            for record, score in layer:
                key = self._dedupe_key(record)
                vec = self.indexes[record.kind].vector(record.record_id)
                if key in seen or (
                    kept and float((kept_vecs[: len(kept)] @ vec).max()) >= self.params.dedupe_threshold
                ):
                    continue
                seen.add(key)
                kept_vecs[len(kept)] = vec
                kept.append(
                    ContextItem(record.render(), record.source_turns, score, record.kind,
                                record.memory_id)
                )
                if len(kept) >= max_records:
                    return kept
        return kept

    def retrieve(
        self, query: str, k: int | None = None, *, speaker: str | None = None
    ) -> list[ContextItem]:
        """Top-``k_per_store`` per store, merged, de-duplicated, cut to ``k`` (default 25)."""
        return self._merged(
            query, self.params.k_per_store, k or self.params.max_records, speaker
        )

    def ranked_context(self, query: str, *, speaker: str | None = None) -> list[ContextItem]:
        """Every record, merged rank by rank and de-duplicated (a word budget cuts it)."""
        total = sum(len(ix) for ix in self.indexes.values())
        return self._merged(query, total, total, speaker)

    @staticmethod
    def serialise(items: Iterable[ContextItem]) -> str:
        """The prompt block: one record per line, time anchor first."""
        return "\n".join(item.text for item in items)

    # -- export and stats -----------------------------------------------------------------
    def export_records(self) -> Iterator[dict[str, Any]]:
        for record in self.records():
            yield {
                "memory_id": record.memory_id, "text": record.render(),
                "source_turns": list(record.source_turns), "time": record.time_anchor,
                "kind": record.kind, "speaker": record.speaker, "said_at": record.said_at,
                "title": record.title, "body": record.body,
            }

    def stats(self) -> dict[str, Any]:
        routed = dict(
            self.conn.execute(
                "SELECT route_mask, COUNT(*) FROM turns GROUP BY route_mask"
            ).fetchall()
        )
        return {
            **{kind: len(self._records[kind]) for kind in RECORD_KINDS},
            "turns": sum(routed.values()),
            "turns_unrouted": routed.get(0, 0),
        }

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write ``store.sqlite``, one ``<kind>.faiss`` per store and the manifest."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.conn.commit()
        copy_database(self.conn, directory / DATABASE)
        for kind, index in self.indexes.items():
            index.save(directory / f"{kind}.faiss")
        write_store_manifest(directory, self, self.llm_name)
        return directory

    @classmethod
    def open(cls, directory: str | Path, embedder: Embedder | None = None) -> EngramStore:
        """Reopen a saved store (database copied into memory, FAISS indexes read from disk)."""
        directory = Path(directory)
        manifest, embedder = reopen_manifest(directory, cls.writer, embedder)
        params = EngramParams(**manifest.get("params", {}))
        conn = load_database(directory / DATABASE)
        store = cls(
            embedder, params, sample_id=manifest.get("sample_id", ""),
            llm_name=manifest.get("llm", "offline"), conn=conn,
        )
        try:
            store._load_records()
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            raise StoreError(f"{directory}: unreadable engram database ({exc})") from None
        for kind in RECORD_KINDS:
            index = VectorIndex.load(directory / f"{kind}.faiss", hnsw_threshold=params.hnsw_threshold)
            if set(index.ids.tolist()) != set(store._records[kind]):
                raise StoreError(f"{directory}: {kind}.faiss does not match the {kind} table")
            store.indexes[kind] = index
        return store

    def embedding_of(self, record: EngramRecord) -> np.ndarray:
        """The embedding stored in SQLite for ``record`` (the FAISS copy is equal)."""
        (blob,) = self.conn.execute(
            f"SELECT embedding FROM {record.kind} WHERE id=?", (record.record_id,)
        ).fetchone()
        return blob_embedding(blob, self.embedder.dim)


class EngramWriter:
    """Routes each turn and stores its extracted records."""

    def __init__(
        self,
        embedder: Embedder,
        llm: MemoryLLM | None = None,
        params: EngramParams | None = None,
        *,
        sample_id: str = "",
    ) -> None:
        self.llm = llm or OfflineLLM(embedder)
        self.store = EngramStore(embedder, params, sample_id=sample_id, llm_name=self.llm.name)

    def add_turn(self, turn: Turn) -> list[EngramRecord]:
        mask = int(self.llm.route(turn))
        if not 0 <= mask <= 7:
            raise UsageError(f"router returned mask {mask} for turn {turn.dia_id}; expected 0..7")
        self.store.add_turn(turn, mask)
        if mask == 0:
            return []
        return self.store.add_records(turn, self.llm.extract_records(turn, mask))


def build_engram(
    turns: Iterable[Turn],
    embedder: Embedder | str | None = None,
    llm: MemoryLLM | None = None,
    params: EngramParams | None = None,
    *,
    sample_id: str = "",
) -> EngramStore:
    """Route, extract and store every turn; return the store."""
    writer = EngramWriter(get_embedder(embedder), llm, params, sample_id=sample_id)
    for turn in turns:
        writer.add_turn(turn)
    writer.store.conn.commit()
    return writer.store
