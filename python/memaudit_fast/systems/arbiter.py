"""The arbiter: coverage rows ``a[m, r]`` for exported memories, from a pluggable judge.

An external system's memory ``m`` has no annotated coverage; the arbiter decides, for each
evidence unit ``r`` of the package, ``a[m, r] = 1`` (the memory states the unit), ``0.5``
(it states part of it) or ``0``. Two judges:

:class:`EmbeddingJudge` (offline default) -- an **approximation**
    A memory is split into sentences (a sentence states one thing; a Membox box holds many).
    Sentences and units are embedded (the writers' embedder, rows L2-normalised) and each
    sentence's ``top_k`` nearest units are found with FAISS (inner product = cosine). The
    score of ``(m, r)`` is the best cosine of a sentence of ``m`` that has ``r`` among its
    ``top_k``; it gives ``1`` when ``>= t_full``, ``0.5`` when ``>= t_partial``, else ``0``.
    So a memory is credited with at most ``top_k`` units per sentence, and one generic
    sentence cannot claim every unit that shares its words. Similarity is not entailment:
    a memory that *contradicts* a unit in the same words scores high.
:class:`LLMJudge`
    An OpenAI-compatible chat model (the writers' :class:`OpenAIChatLLM`) reads each memory
    with its ``top_k`` nearest units (FAISS on the whole memory) and answers which units the
    memory states fully or partly. Units outside the prefilter get ``0``.

Calibration (:func:`calibrate`). The package's own candidates carry annotated coverage, so
they are labelled examples of the judge's task: every (candidate, unit) pair is labelled
*full* (``a >= 0.75``), *partial* (``0 < a < 0.75``) or *none*. Exported memories are
rewritten text, so the calibration uses the candidates that are rewritten too (every
representation but the raw ones: ``raw``, ``raw_span``, ``turn``) unless they hold fewer than
``min_positives`` positive pairs, in which case all candidates are used; pairs in which the
candidate's text is the unit's text verbatim are always left out (they teach nothing about
paraphrase). With the candidates scored exactly as memories are, ``t_partial`` is the cosine
cut that maximises F1 of "covers at least partly" over all labelled pairs (positives the
search never reaches count as misses), ``t_full >= t_partial`` the cut that maximises F1 of
"covers fully", and ``top_k`` the value in (1, 2, 3) with the best partial F1. With fewer than
``min_positives`` positive pairs the embedder family's defaults are used, and the result
says so. On the 7 LoCoMo natural packages in ``../shared`` this gives partial F1 0.50-0.60
with the hashing embedder and 0.34-0.57 with WordLlama, ``top_k`` 1 throughout (whole-memory
matching with eight neighbours: 0.41-0.52 and 0.24-0.44; raw turns in the calibration
population halve it again).

Salience (for the salience-pruned store, no gold labels): the embedding judge rates a memory
by its largest cosine to the package's *questions* (their text only, never answers or
evidence), clipped to [0, 1]; the LLM judge asks the model how useful the memory is likely to
be later, on a 0-1 scale, without showing it any question.

Every decision is cached on disk (:class:`ArbiterCache`, SQLite), keyed by hashes of the
memory text, the unit text and the judge's configuration, so re-importing is free and
reproducible.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import UsageError

#: Coverage labels the judges may give.
LEVELS = (0.0, 0.5, 1.0)
#: Annotated coverage at or above this counts as "full" when calibrating.
FULL_LABEL = 0.75
#: Verbatim copies of experiences; calibration prefers the other (rewritten) candidates.
RAW_REPRESENTATIONS = frozenset({"raw", "raw_span", "turn"})
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


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def config_hash(config: dict[str, Any]) -> str:
    body = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


def snap(value: float) -> float:
    """The nearest coverage level (0, 0.5, 1)."""
    return 1.0 if value >= 0.75 else 0.5 if value >= 0.25 else 0.0


# --------------------------------------------------------------------------------------------
# Cache


class ArbiterCache:
    """SQLite cache of judge decisions and saliences.

    Tables: ``decisions(config, memory, unit, value)`` and ``salience(config, memory, context,
    value)``, each keyed by hashes (``context`` hashes what a salience was rated against).
    Zeros are stored too: a cached row is a complete answer.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(str(self.path))
            self.conn.executescript(
                """
                CREATE TABLE IF NOT EXISTS configs(config TEXT PRIMARY KEY, body TEXT);
                CREATE TABLE IF NOT EXISTS decisions(config TEXT, memory TEXT, unit TEXT,
                    value REAL, PRIMARY KEY(config, memory, unit)) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS salience(config TEXT, memory TEXT, context TEXT,
                    value REAL, PRIMARY KEY(config, memory, context)) WITHOUT ROWID;
                """
            )
        except sqlite3.Error as exc:
            raise UsageError(f"cannot use {self.path} as the arbiter cache: {exc}") from None

    def close(self) -> None:
        self.conn.close()

    def remember_config(self, key: str, config: dict[str, Any]) -> None:
        self.conn.execute("INSERT OR IGNORE INTO configs VALUES (?, ?)", (key, json.dumps(config, sort_keys=True)))

    def rows(self, config: str, memory: str) -> dict[str, float]:
        cur = self.conn.execute("SELECT unit, value FROM decisions WHERE config=? AND memory=?", (config, memory))
        return dict(cur.fetchall())

    def put_rows(self, config: str, rows: Sequence[tuple[str, str, float]]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?)", [(config, m, u, v) for m, u, v in rows]
        )
        self.conn.commit()

    def salience(self, config: str, memory: str, context: str) -> float | None:
        cur = self.conn.execute(
            "SELECT value FROM salience WHERE config=? AND memory=? AND context=?", (config, memory, context)
        )
        row = cur.fetchone()
        return None if row is None else float(row[0])

    def put_salience(self, config: str, context: str, values: Sequence[tuple[str, float]]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO salience VALUES (?, ?, ?, ?)", [(config, m, context, v) for m, v in values]
        )
        self.conn.commit()


# --------------------------------------------------------------------------------------------
# Judges


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
    from ..writers.index import VectorIndex

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


def _best_f1(scores: np.ndarray, positive: np.ndarray, total_positive: int, floor: float) -> tuple[float, float, float, float]:
    """Cut maximising F1 of ``score >= cut`` (cuts at observed scores >= floor).

    Returns (cut, f1, precision, recall). Positives never scored (outside the top-k) are in
    ``total_positive`` and count as misses at every cut.
    """
    order = np.argsort(-scores, kind="stable")
    s, pos = scores[order], positive[order]
    tp = np.cumsum(pos)
    fp = np.cumsum(~pos)
    # Only the last of a run of equal scores is a valid cut (ties go together).
    last = np.append(s[1:] != s[:-1], True) & (s >= floor)
    if not last.any() or total_positive == 0:
        return float("inf"), 0.0, 0.0, 0.0
    f1 = np.where(last, 2 * tp / (2 * tp + fp + (total_positive - tp)), -1.0)
    best = int(np.argmax(f1))
    precision = tp[best] / (tp[best] + fp[best])
    return float(s[best]), float(f1[best]), float(precision), float(tp[best] / total_positive)


def calibrate(
    package: Any,
    embedder: Any,
    *,
    top_ks: Sequence[int] = TOP_K_CHOICES,
    min_positives: int = 5,
    max_candidates: int = 3000,
    exclude: Sequence[str] = (),
) -> Thresholds:
    """Thresholds (and ``top_k``) of the embedding judge fitted to a package's annotations.

    Parameters
    ----------
    package:
        A :class:`~memaudit_fast.model.package.Package` or package dict.
    top_ks:
        Neighbours per sentence to choose from (the best partial F1 wins; ties: smaller).
    exclude:
        Candidate ids to leave out (the systems' memories already in a union package).
    max_candidates:
        Above this many candidates, an evenly spaced subset is used (deterministic).
    """
    data = package.data if hasattr(package, "data") else package
    units = data["units"]
    unit_index = {u["unit_id"]: r for r, u in enumerate(units)}
    unit_texts = [str(u.get("text") or "") for u in units]
    skip = set(exclude)
    cands = [c for c in data["candidates"] if c["candidate_id"] not in skip and str(c.get("text") or "").strip()]
    derived = [c for c in cands if str(c.get("representation", "")) not in RAW_REPRESENTATIONS]
    derived_positives = sum(1 for c in derived for a in c["coverage"].values() if float(a) > 0)
    population = "derived"
    if derived_positives >= min_positives:
        cands = derived
    else:
        population = "all"
    if len(cands) > max_candidates:
        step = len(cands) / max_candidates
        cands = [cands[int(i * step)] for i in range(max_candidates)]
    default_full, default_partial = default_thresholds(embedder)

    texts = [str(c["text"]) for c in cands]
    norm_units = [" ".join(t.lower().split()) for t in unit_texts]
    labels: list[dict[int, float]] = []
    same: list[set[int]] = []
    total = {"partial": 0, "full": 0}
    for i, cand in enumerate(cands):
        own = " ".join(texts[i].lower().split())
        same.append({r for r in range(len(units)) if norm_units[r] and norm_units[r] == own})
        labels.append({unit_index[r]: float(a) for r, a in cand["coverage"].items() if float(a) > 0})
        for r, a in labels[-1].items():
            if r not in same[-1] and unit_texts[r].strip():
                total["partial"] += 1
                total["full"] += a >= FULL_LABEL
    base_stats: dict[str, Any] = {
        "population": population, "candidates": len(cands), "positive_pairs": total["partial"],
        "full_pairs": total["full"], "verbatim_pairs_left_out": sum(len(x) for x in same),
        "embedder": embedder.spec,
    }
    if total["partial"] < min_positives:
        base_stats["reason"] = f"fewer than {min_positives} annotated positive pairs"
        return Thresholds(default_full, default_partial, "default", base_stats, DEFAULT_TOP_K)

    fits = []
    for k in sorted(set(top_ks)):
        pair_scores: list[float] = []
        pair_level: list[float] = []
        for i, row in enumerate(sentence_scores(embedder, texts, unit_texts, k)):
            for r, score in row.items():
                if r in same[i] or not unit_texts[r].strip():
                    continue
                pair_scores.append(score)
                pair_level.append(labels[i].get(r, 0.0))
        s = np.array(pair_scores, dtype=np.float64)
        level = np.array(pair_level, dtype=np.float64)
        t_partial, f1_p, prec_p, rec_p = _best_f1(s, level > 0, total["partial"], -1.0)
        stats = {**base_stats, "top_k": k, "scored_pairs": len(pair_scores), "partial_f1": round(f1_p, 4),
                 "partial_precision": round(prec_p, 4), "partial_recall": round(rec_p, 4)}
        if not np.isfinite(t_partial):
            continue
        if total["full"] >= min_positives:
            t_full, f1_f, prec_f, rec_f = _best_f1(s, level >= FULL_LABEL, total["full"], t_partial)
            stats.update(full_f1=round(f1_f, 4), full_precision=round(prec_f, 4), full_recall=round(rec_f, 4))
            if not np.isfinite(t_full):
                t_full = max(default_full, t_partial)
        else:
            t_full = max(default_full, t_partial)
            stats["full_reason"] = f"fewer than {min_positives} full pairs; t_full from the defaults"
        fits.append((f1_p, -k, Thresholds(float(t_full), float(t_partial), "calibrated", stats, k)))
    if not fits:
        base_stats["reason"] = "no cut separates the annotated pairs"
        return Thresholds(default_full, default_partial, "default", base_stats, DEFAULT_TOP_K)
    best = max(fits, key=lambda f: (f[0], f[1]))[2]
    best.stats["top_k_f1"] = {str(-f[1]): round(f[0], 4) for f in fits}
    return best


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
    from ..writers.openai_client import InvalidAnswer

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


# --------------------------------------------------------------------------------------------
# Arbiter


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
