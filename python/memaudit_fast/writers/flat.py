"""The flat baseline: every raw turn embedded as is, ranked by cosine to the query (FAISS).

No writing decision at all, which is what makes it the reference for the two writers: a writer
earns its keep when, at the same number of context words, it puts more evidence in front of
the model than this does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .embed import Embedder, get_embedder
from .errors import StoreError
from .index import DEFAULT_HNSW_THRESHOLD, VectorIndex
from .locomo_turns import Turn
from .store import (
    DATABASE,
    ContextItem,
    copy_database,
    load_database,
    reopen_manifest,
    write_store_manifest,
)


@dataclass(frozen=True)
class FlatParams:
    top_k: int = 10
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD


class FlatStore:
    """Raw turns with a FAISS index over their embeddings (ids = turn positions)."""

    writer = "flat"

    def __init__(
        self, embedder: Embedder, params: FlatParams | None = None, *, sample_id: str = ""
    ) -> None:
        self.embedder = embedder
        self.params = params or FlatParams()
        self.sample_id = sample_id
        self.turns: list[Turn] = []
        self.index = VectorIndex(embedder.dim, hnsw_threshold=self.params.hnsw_threshold)

    def add_turns(self, turns: Iterable[Turn]) -> None:
        new = list(turns)
        if not new:
            return
        start = len(self.turns)
        self.turns.extend(new)
        self.index.add(
            self.embedder.encode([f"{t.speaker}: {t.text}" for t in new]), list(range(start, start + len(new)))
        )

    def _items(self, query: str, k: int) -> list[ContextItem]:
        q = self.embedder.encode([query])[0]
        return [
            ContextItem(self.turns[i].render(), (self.turns[i].dia_id,), s, "turn",
                        f"turn-{self.turns[i].dia_id}")
            for i, s in self.index.search_one(q, k)
        ]

    def retrieve(self, query: str, k: int | None = None) -> list[ContextItem]:
        return self._items(query, k or self.params.top_k)

    def ranked_context(self, query: str) -> list[ContextItem]:
        return self._items(query, len(self.turns))

    def export_records(self) -> Iterator[dict[str, Any]]:
        for t in self.turns:
            yield {
                "memory_id": f"turn-{t.dia_id}", "text": t.render(), "source_turns": [t.dia_id],
                "time": t.time, "kind": "turn", "speaker": t.speaker,
            }

    def stats(self) -> dict[str, Any]:
        return {"turns": len(self.turns)}

    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(":memory:")
        conn.execute(
            "CREATE TABLE turns(pos INTEGER PRIMARY KEY, dia_id TEXT, speaker TEXT, "
            "session INTEGER, session_date TEXT, time TEXT, text TEXT, idx INTEGER)"
        )
        conn.executemany(
            "INSERT INTO turns VALUES (?,?,?,?,?,?,?,?)",
            [(i, t.dia_id, t.speaker, t.session, t.session_date, t.time, t.text, t.index)
             for i, t in enumerate(self.turns)],
        )
        conn.commit()
        copy_database(conn, directory / DATABASE)
        conn.close()
        self.index.save(directory / "turns.faiss")
        write_store_manifest(directory, self, None)
        return directory

    @classmethod
    def open(cls, directory: str | Path, embedder: Embedder | None = None) -> FlatStore:
        directory = Path(directory)
        manifest, embedder = reopen_manifest(directory, cls.writer, embedder)
        params = FlatParams(**manifest.get("params", {}))
        store = cls(embedder, params, sample_id=manifest.get("sample_id", ""))
        conn = load_database(directory / DATABASE)
        try:
            store.turns = [
                Turn(dia_id, speaker, session, date, text, time, idx)
                for _pos, dia_id, speaker, session, date, time, text, idx in conn.execute(
                    "SELECT * FROM turns ORDER BY pos"
                )
            ]
        finally:
            conn.close()
        store.index = VectorIndex.load(directory / "turns.faiss", hnsw_threshold=params.hnsw_threshold)
        if len(store.index) != len(store.turns):
            raise StoreError(f"{directory}: turns.faiss does not match the turns table")
        return store


def build_flat(
    turns: Iterable[Turn], embedder: Embedder | str | None = None, *, sample_id: str = ""
) -> FlatStore:
    store = FlatStore(get_embedder(embedder), sample_id=sample_id)
    store.add_turns(turns)
    return store
