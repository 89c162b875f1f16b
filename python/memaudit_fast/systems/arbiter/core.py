"""The arbiter: a judge plus its cache, giving coverage rows and saliences for memories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cache import ArbiterCache, config_hash, text_hash


@dataclass
class Arbiter:
    """A judge plus its cache: coverage rows and saliences for lists of memories."""

    judge: Any
    cache: ArbiterCache | None = None
    hits: int = 0
    misses: int = 0

    def coverage(self, memories: Sequence[str], units: Sequence[tuple[str, str]]) -> list[dict[str, float]]:
        """``{unit_id: level}`` (non-zero levels only) for each memory text."""
        unit_ids = [u for u, _ in units]
        unit_texts = [t for _, t in units]
        if hasattr(self.judge, "bind_units"):
            self.judge.bind_units(unit_texts)
        cfg = self.judge.config()
        key = config_hash(cfg)
        unit_hashes = [text_hash(t) for t in unit_texts]
        rows: list[dict[str, float] | None] = [None] * len(memories)
        todo: list[int] = []
        if self.cache is not None:
            self.cache.remember_config(key, cfg)
            for i, text in enumerate(memories):
                cached = self.cache.rows(key, text_hash(text))
                if all(h in cached for h in unit_hashes):
                    rows[i] = {u: cached[h] for u, h in zip(unit_ids, unit_hashes) if cached[h] > 0}
                else:
                    todo.append(i)
        else:
            todo = list(range(len(memories)))
        self.hits += len(memories) - len(todo)
        self.misses += len(todo)
        if todo:
            levels = self.judge.judge([memories[i] for i in todo], unit_texts)
            fresh: list[tuple[str, str, float]] = []
            for row, i in zip(levels, todo):
                rows[i] = {u: float(v) for u, v in zip(unit_ids, row) if v > 0}
                mh = text_hash(memories[i])
                fresh.extend((mh, h, float(v)) for h, v in zip(unit_hashes, row))
            if self.cache is not None:
                self.cache.put_rows(key, fresh)
        return [r if r is not None else {} for r in rows]

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        """Salience per memory (see the module doc); ``None`` when the judge cannot rate it."""
        cfg = {k: v for k, v in self.judge.config().items() if k != "units"}
        key = config_hash({**cfg, "use": "salience"})
        context = text_hash("\x1f".join(queries))
        values: list[float | None] = [None] * len(memories)
        if self.cache is not None:
            values = [self.cache.salience(key, text_hash(m), context) for m in memories]
        todo = [i for i, v in enumerate(values) if v is None]
        if todo:
            fresh = self.judge.salience([memories[i] for i in todo], queries)
            if fresh is None:
                return None
            for i, v in zip(todo, fresh):
                values[i] = float(v)
            if self.cache is not None:
                self.cache.put_salience(key, context, [(text_hash(memories[i]), float(values[i])) for i in todo])  # type: ignore[arg-type]
        return np.array(values, dtype=np.float64)
