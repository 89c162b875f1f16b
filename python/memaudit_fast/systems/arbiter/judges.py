"""The judges: :class:`EmbeddingJudge` (sentence-level nearest units against two cosine cuts)
and :class:`LLMJudge` (an OpenAI-compatible chat model), behind the :class:`Judge` protocol."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from ...errors import UsageError
from .cache import text_hash

#: Coverage labels the judges may give.
LEVELS = (0.0, 0.5, 1.0)
#: Nearest units per sentence (embedding judge); calibration chooses among TOP_K_CHOICES.
DEFAULT_TOP_K = 1
TOP_K_CHOICES = (1, 2, 3)

#: Fallback (t_full, t_partial) per embedder family, used when calibration has too few
#: positive pairs. Measured on LoCoMo natural packages (see the calibration docs).
DEFAULT_THRESHOLDS: dict[str, tuple[float, float]] = {
    # Medians of the calibrated cuts over the 7 LoCoMo conversations in ../shared
    # (sentence matching; every conversation calibrated to top_k 1).
    "hashing": (0.35, 0.32),
    "wordllama": (0.54, 0.46),
    # Not measured: sentence-transformers cosines run higher than WordLlama's.
    "st": (0.75, 0.55),
}


def snap(value: float) -> float:
    """The nearest coverage level (0, 0.5, 1)."""
    return 1.0 if value >= 0.75 else 0.5 if value >= 0.25 else 0.0


class Judge(Protocol):
    """Decides coverage levels for memories against units, and rates salience."""

    def config(self) -> dict[str, Any]:
        """Everything the decisions depend on (hashed into cache keys)."""
        ...

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        """Array ``(len(memories), len(units))`` of levels in {0, 0.5, 1}."""
        ...

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        """Salience in [0, 1] per memory, or ``None`` when it cannot be rated."""
        ...


def _nearest(embedder: Any, memories: Sequence[str], units: Sequence[str], top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine and index of each text's ``top_k`` nearest units (FAISS, exact search)."""
    from ...writers.index import VectorIndex

    k = min(top_k, len(units))
    if not memories or k == 0:
        return np.zeros((len(memories), 0), np.float32), np.zeros((len(memories), 0), np.int64)
    index = VectorIndex(embedder.dim)
    index.add(embedder.encode(list(units)), np.arange(len(units), dtype=np.int64))
    scores, ids = index.search(embedder.encode(list(memories)), k)
    return scores, ids


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'\[(])|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a memory: after ``.``/``!``/``?`` before a capital, digit, quote or
    bracket, and at line breaks. A text with no break is one sentence."""
    parts = [p.strip() for p in _SENTENCE_BREAK.split(text) if p and p.strip()]
    return parts or [text]


def sentence_scores(
    embedder: Any, memories: Sequence[str], units: Sequence[str], top_k: int
) -> list[dict[int, float]]:
    """For each memory, ``{unit index: best cosine}`` over its sentences' ``top_k`` neighbours."""
    flat: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(memories):
        for sentence in split_sentences(text):
            flat.append(sentence)
            owner.append(i)
    scores, ids = _nearest(embedder, flat, units, top_k)
    out: list[dict[int, float]] = [{} for _ in memories]
    for j, i in enumerate(owner):
        row = out[i]
        for s, r in zip(scores[j], ids[j]):
            r = int(r)
            if r >= 0 and s > row.get(r, -np.inf):
                row[r] = float(s)
    return out


def _units_digest(units: Sequence[str]) -> str:
    # Nearest-unit search depends on the whole unit set, so the set is part of the config.
    return text_hash("\x1f".join(units))


@dataclass(frozen=True)
class Thresholds:
    """Cosine cuts and neighbours per sentence of the embedding judge, and their origin."""

    full: float
    partial: float
    method: str  # "calibrated", "default" or "given"
    stats: dict[str, Any] = field(default_factory=dict)
    top_k: int = DEFAULT_TOP_K

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def default_thresholds(embedder: Any) -> tuple[float, float]:
    family = str(embedder.spec).partition(":")[0]
    if family == "sentence-transformers":
        family = "st"
    return DEFAULT_THRESHOLDS.get(family, DEFAULT_THRESHOLDS["st"])


class EmbeddingJudge:
    """Offline judge: sentence-level FAISS nearest units against two cuts (see module doc)."""

    def __init__(self, embedder: Any, thresholds: Thresholds, *, top_k: int | None = None) -> None:
        if not thresholds.partial <= thresholds.full:
            raise UsageError(f"t_partial ({thresholds.partial}) must not exceed t_full ({thresholds.full})")
        self.top_k = thresholds.top_k if top_k is None else top_k
        if self.top_k < 1:
            raise UsageError("top_k must be at least 1")
        self.embedder = embedder
        self.thresholds = thresholds
        self._units_digest = ""

    def bind_units(self, units: Sequence[str]) -> None:
        self._units_digest = _units_digest(units)

    def config(self) -> dict[str, Any]:
        return {
            "judge": "embedding", "match": "sentence", "embedder": self.embedder.spec,
            "top_k": self.top_k, "t_full": round(self.thresholds.full, 6),
            "t_partial": round(self.thresholds.partial, 6), "units": self._units_digest,
        }

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(memories), len(units)), dtype=np.float64)
        for i, row in enumerate(sentence_scores(self.embedder, memories, units, self.top_k)):
            for r, s in row.items():
                if not units[r].strip():
                    continue
                if s >= self.thresholds.full:
                    out[i, r] = 1.0
                elif s >= self.thresholds.partial:
                    out[i, r] = 0.5
        return out

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        queries = [q for q in queries if q.strip()]
        if not queries or not memories:
            return None
        m = self.embedder.encode(list(memories))
        q = self.embedder.encode(queries)
        return np.clip((m @ q.T).max(axis=1), 0.0, 1.0).astype(np.float64)


class LLMJudge:
    """Judge through an OpenAI-compatible chat model (see module doc).

    Parameters
    ----------
    llm:
        An object with ``chat_json(system, user, parse)`` and a ``model`` attribute, as
        :class:`memaudit_fast.writers.openai_client.OpenAIChatLLM`.
    embedder:
        For the nearest-unit prefilter.
    top_k:
        Units shown to the model per memory.
    """

    PROMPT_VERSION = 1
    SYSTEM = (
        "You audit a memory store. For one stored memory and a numbered list of evidence "
        "statements, decide which statements the memory states. Answer with JSON "
        "{\"coverage\": {\"<number>\": <value>}} listing only covered statements, value 1 when "
        "the memory states the whole statement and 0.5 when it states a useful part of it. "
        "Use only the memory text; do not guess."
    )
    SALIENCE_SYSTEM = (
        "You rate stored memories of a long conversation. For each numbered memory, rate how "
        "likely it is to be needed to answer questions about the conversation later, from 0 "
        "(trivia, chit-chat) to 1 (a key fact, event, date or change). Answer with JSON "
        "{\"salience\": {\"<number>\": <value>}} covering every memory."
    )

    def __init__(self, llm: Any, embedder: Any, *, top_k: int = 12, batch: int = 20) -> None:
        self.llm = llm
        self.embedder = embedder
        self.top_k = top_k
        self.batch = batch
        self._units_digest = ""

    def bind_units(self, units: Sequence[str]) -> None:
        self._units_digest = _units_digest(units)

    def config(self) -> dict[str, Any]:
        return {
            "judge": "llm", "model": getattr(self.llm, "model", "?"),
            "base_url": getattr(self.llm, "base_url", "?"), "prompt": self.PROMPT_VERSION,
            "prefilter": self.embedder.spec, "top_k": self.top_k, "units": self._units_digest,
        }

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(memories), len(units)), dtype=np.float64)
        _, ids = _nearest(self.embedder, memories, units, self.top_k)
        for i, memory in enumerate(memories):
            shown = [int(r) for r in ids[i] if r >= 0 and units[int(r)].strip()]
            if not shown:
                continue
            listing = "\n".join(f"{n}. {units[r]}" for n, r in enumerate(shown, start=1))
            user = f"Memory:\n{memory}\n\nEvidence statements:\n{listing}"
            decided = self.llm.chat_json(self.SYSTEM, user, _level_parser("coverage", len(shown), partial=True))
            for n, value in decided.items():
                out[i, shown[n - 1]] = value
        return out

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        out = np.zeros(len(memories), dtype=np.float64)
        for start in range(0, len(memories), self.batch):
            chunk = memories[start : start + self.batch]
            listing = "\n".join(f"{n}. {m}" for n, m in enumerate(chunk, start=1))
            rated = self.llm.chat_json(self.SALIENCE_SYSTEM, f"Memories:\n{listing}",
                                       _level_parser("salience", len(chunk), partial=False))
            for n in range(1, len(chunk) + 1):
                out[start + n - 1] = rated.get(n, 0.0)
        return out


def _level_parser(key: str, n: int, *, partial: bool) -> Any:
    from ...writers.openai_client import InvalidAnswer

    def parse(obj: dict[str, Any]) -> dict[int, float]:
        block = obj.get(key)
        if not isinstance(block, dict):
            raise InvalidAnswer(f"expected an object under {key!r}")
        out: dict[int, float] = {}
        for label, value in block.items():
            if not str(label).isdigit() or not 1 <= int(label) <= n:
                raise InvalidAnswer(f"unknown item number {label!r}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise InvalidAnswer(f"value {value!r} for {label} is not a number in [0, 1]")
            out[int(label)] = snap(float(value)) if partial else float(value)
        return out

    return parse
