"""Evidence-turn recall of writer stores on LoCoMo, per QA category, at equal word budgets.

For a question with evidence turns ``E`` and a store, the store ranks its context items for the
question (:meth:`MemoryStore.ranked_context`); a budget of ``B`` words keeps items in rank order,
first fit (:func:`memaudit_fast.writers.store.within_budget`); the retrieved turns ``R`` are the
union of the kept items' ``source_turns``. Recall is ``|E & R| / |E|``, averaged over the
questions of a category. Questions without resolvable evidence are left out (and counted).

Systems: ``membox`` (boxes with trace expansion), ``membox-boxes`` (boxes only, the paper's
"compact" variant), ``engram`` and ``flat`` (raw turns, FAISS). All share one embedder, so the
comparison is about what is written and how it is ranked, not about the embedding model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .builders import STORE_WRITERS, build_store
from .embed import Embedder
from .errors import UsageError
from .llm import MemoryLLM
from .locomo_turns import CATEGORY_NAMES, Conversation
from .store import ContextItem, MemoryStore, within_budget

DEFAULT_BUDGETS = (100, 200, 400, 800)


@dataclass
class RecallCell:
    """Recall sums for one (system, category, budget)."""

    questions: int = 0
    recall_sum: float = 0.0
    words_sum: float = 0.0

    @property
    def recall(self) -> float:
        return self.recall_sum / self.questions if self.questions else float("nan")

    @property
    def words(self) -> float:
        return self.words_sum / self.questions if self.questions else float("nan")


@dataclass
class RetrievalEvaluation:
    """Results of :func:`evaluate_retrieval`."""

    budgets: tuple[int, ...]
    systems: tuple[str, ...]
    cells: dict[tuple[str, str, int], RecallCell] = field(default_factory=dict)
    build_seconds: dict[str, float] = field(default_factory=dict)
    skipped_questions: int = 0
    conversations: list[str] = field(default_factory=list)
    embedder: str = ""
    llm: str = ""

    def cell(self, system: str, category: str, budget: int) -> RecallCell:
        return self.cells.setdefault((system, category, budget), RecallCell())

    def categories(self) -> list[str]:
        present = {c for _, c, _ in self.cells}
        ordered = [CATEGORY_NAMES[k] for k in sorted(CATEGORY_NAMES) if CATEGORY_NAMES[k] in present]
        return ordered + sorted(present - set(ordered) - {"all"}) + ["all"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "budgets": list(self.budgets), "systems": list(self.systems),
            "conversations": self.conversations, "embedder": self.embedder, "llm": self.llm,
            "build_seconds": {k: round(v, 3) for k, v in self.build_seconds.items()},
            "skipped_questions": self.skipped_questions,
            "cells": [
                {"system": s, "category": c, "budget": b, "questions": cell.questions,
                 "recall": round(cell.recall, 4), "mean_words": round(cell.words, 1)}
                for (s, c, b), cell in sorted(self.cells.items())
            ],
        }

    def table(self) -> str:
        """One Markdown table per budget: categories down, systems across."""
        blocks = []
        for budget in self.budgets:
            head = "| category | n | " + " | ".join(self.systems) + " |"
            rule = "|---|---:|" + "---:|" * len(self.systems)
            lines = [f"Evidence recall at {budget} words", "", head, rule]
            for cat in self.categories():
                n = self.cell(self.systems[0], cat, budget).questions
                vals = " | ".join(
                    f"{self.cell(s, cat, budget).recall:.3f}" for s in self.systems
                )
                lines.append(f"| {cat} | {n} | {vals} |")
            words = " | ".join(f"{self.cell(s, 'all', budget).words:.0f}" for s in self.systems)
            lines.append(f"| mean words used | | {words} |")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def _systems(writers: Sequence[str]) -> list[str]:
    out: list[str] = []
    for w in writers:
        if w not in STORE_WRITERS:
            raise UsageError(f"unknown writer {w!r}; choose from {', '.join(STORE_WRITERS)}")
        out += ["membox", "membox-boxes"] if w == "membox" else [w]
    return list(dict.fromkeys(out))


def _ranked(system: str, store: MemoryStore, question: str) -> list[ContextItem]:
    if system == "membox-boxes":
        return store.ranked_context(question, expand_traces=False)  # type: ignore[call-arg]
    return store.ranked_context(question)


def recall_at_budget(items: Sequence[ContextItem], evidence: Sequence[str], budget: int) -> tuple[float, int]:
    """``(recall, words used)`` of the items a budget keeps."""
    kept = within_budget(items, budget)
    retrieved = {d for item in kept for d in item.source_turns}
    hits = sum(1 for d in evidence if d in retrieved)
    return hits / len(evidence), sum(item.words for item in kept)


def evaluate_retrieval(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    *,
    writers: Sequence[str] = STORE_WRITERS,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    llm_factory: Callable[[Embedder], MemoryLLM] | None = None,
    categories: Sequence[int] | None = None,
    progress: Callable[[str], None] | None = None,
    writer_params: Mapping[str, Any] | None = None,
) -> RetrievalEvaluation:
    """Build each writer's store per conversation and measure evidence recall per budget.

    Parameters
    ----------
    llm_factory:
        Builds the LLM for the writers (default: the offline approximation).
    categories:
        LoCoMo category numbers to keep (default: all).
    writer_params:
        Parameters per writer name (``MemboxParams``, ``EngramParams``), default ones otherwise.
    """
    if not budgets or any(b <= 0 for b in budgets):
        raise UsageError("budgets must be positive word counts")
    systems = _systems(writers)
    result = RetrievalEvaluation(tuple(int(b) for b in budgets), tuple(systems))
    result.embedder = embedder.spec
    for conv in conversations:
        result.conversations.append(conv.sample_id)
        stores: dict[str, MemoryStore] = {}
        for writer in dict.fromkeys(w for w in writers):
            llm = llm_factory(embedder) if llm_factory and writer != "flat" else None
            if llm is not None:
                result.llm = llm.name
            start = time.perf_counter()
            stores[writer] = build_store(
                writer, conv.turns, embedder, llm, sample_id=conv.sample_id,
                params=(writer_params or {}).get(writer),
            )
            elapsed = time.perf_counter() - start
            result.build_seconds[writer] = result.build_seconds.get(writer, 0.0) + elapsed
            if progress:
                progress(f"{conv.sample_id}: built {writer} in {elapsed:.1f} s")
        for qa in conv.qa:
            if categories and qa.category not in categories:
                continue
            if not qa.evidence:
                result.skipped_questions += 1
                continue
            for system in systems:
                store = stores["membox" if system.startswith("membox") else system]
                items = _ranked(system, store, qa.question)
                for budget in result.budgets:
                    recall, used = recall_at_budget(items, qa.evidence, budget)
                    for cat in (qa.category_name, "all"):
                        cell = result.cell(system, cat, budget)
                        cell.questions += 1
                        cell.recall_sum += recall
                        cell.words_sum += used
    result.llm = result.llm or "offline"
    if not any(np.isfinite(c.recall) for c in result.cells.values()):
        raise UsageError("no question with evidence in the selected conversations and categories")
    return result
