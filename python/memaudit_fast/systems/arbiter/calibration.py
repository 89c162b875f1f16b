"""Calibration of the embedding judge on a package's own annotated candidates (see the
package docstring): cosine cuts and ``top_k`` that best reproduce the annotations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .judges import DEFAULT_TOP_K, TOP_K_CHOICES, Thresholds, default_thresholds, sentence_scores

#: Annotated coverage at or above this counts as "full" when calibrating.
FULL_LABEL = 0.75
#: Verbatim copies of experiences; calibration prefers the other (rewritten) candidates.
RAW_REPRESENTATIONS = frozenset({"raw", "raw_span", "turn"})


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


#: Embedder names that choose for the user: ``auto`` is wordllama when installed, else
#: hashing (the writers' rule); ``best`` calibrates every offline embedder and keeps the
#: judge that best reproduces the package's annotations.
CHOOSING_EMBEDDERS = ("auto", "best")


def embedder_choice(spec: Any) -> tuple[list[Any], str | None]:
    """The embedders to calibrate for ``spec``, and in words how the choice is made.

    ``auto`` gives one embedder, ``best`` every offline one; any other name or an embedder
    object is used as it is (no choice to report).
    """
    from ...writers.embed import wordllama_available

    installed = wordllama_available()
    if spec == "auto":
        if installed:
            return ["wordllama"], "auto: wordllama is installed"
        return ["hashing"], "auto: wordllama is not installed, so hashing"
    if spec == "best":
        names = ["hashing", *(["wordllama"] if installed else [])]
        return names, f"best: the highest partial F1 of {', '.join(names)}"
    return [spec], None
