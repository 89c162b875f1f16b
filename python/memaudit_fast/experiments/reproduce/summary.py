"""Summary tables of per-package records: mean ratios, Kendall tau of writer rankings, and
the rows that set our figures beside the paper's."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ...errors import UsageError
from .config import (
    PAPER_DENSITY_ONLY,
    PAPER_NO_TOMBSTONE,
    PAPER_STRESS_NO_TOMBSTONE_B6,
    RANKED_WRITERS,
    TABLE_WRITERS,
    Reproduction,
    _level_key,
)

# --- Kendall tau ----------------------------------------------------------------------------


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b between two paired score vectors.

    .. math::

        \\tau_b = \\frac{n_c - n_d}{\\sqrt{(n_0 - t_x)(n_0 - t_y)}}

    over the ``n_0 = n(n-1)/2`` pairs, with ``n_c``/``n_d`` the concordant/discordant pairs
    and ``t_x``/``t_y`` the pairs tied in ``x``/``y``. Returns None when undefined (fewer than
    two items, or every item tied in ``x`` or in ``y``).
    """
    if len(x) != len(y):
        raise UsageError(f"kendall_tau: vectors of different lengths ({len(x)} and {len(y)})")
    n = len(x)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = np.sign(x[i] - x[j])
            dy = np.sign(y[i] - y[j])
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx != 0 and dy != 0:
                if dx == dy:
                    concordant += 1
                else:
                    discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    if denominator == 0:
        return None
    return (concordant - discordant) / denominator


# --- aggregation ----------------------------------------------------------------------------


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return math.fsum(kept) / len(kept) if kept else None


def _groups(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Records per group in first-seen order, plus ``overall`` when there are several groups."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        out.setdefault(r["group"], []).append(r)
    if len(out) > 1:
        out["overall"] = list(records)
    return out


def _writer_means(records: list[dict[str, Any]], pick: Callable[[dict[str, Any]], dict[str, list[Any]]],
                  writers: Sequence[str], n: int) -> dict[str, list[float | None]]:
    return {w: [_mean(pick(r)[w][k] for r in records) for k in range(n)] for w in writers}


def _rank_tau(a: dict[str, list[float | None]], b: dict[str, list[float | None]], k: int) -> float | None:
    writers = [w for w in a if a[w][k] is not None and b[w][k] is not None]
    return kendall_tau([a[w][k] for w in writers], [b[w][k] for w in writers])  # type: ignore[misc]


def summarize(records: list[dict[str, Any]], noise_levels: Sequence[float]) -> dict[str, Any] | None:
    """Tables of one suite: writer ratios, invalidation coverage, ablation, rank stability."""
    if not records:
        return None
    labels = records[0]["labels"]
    n = len(labels)
    groups = _groups(records)
    out: dict[str, Any] = {
        "labels": labels,
        "packages": len(records),
        "groups": {g: len(rs) for g, rs in groups.items()},
        "unproven": _unproven(records),
        "writers": {}, "invalidation": {}, "opt_invalidation": {}, "invalidation_units": {},
        "ablation": {}, "bytes_writers": {}, "cost_tau": {}, "noise": {},
        "total_cost": {g: _mean(r["total_cost"] for r in rs) for g, rs in groups.items()},
        "ablation_removed": _mean(r["ablation"]["removed"] for r in records),
    }
    for g, rs in groups.items():
        clean = _writer_means(rs, lambda r: r["words"]["ratios"], RANKED_WRITERS, n)
        in_bytes = _writer_means(rs, lambda r: r["bytes"]["ratios"], RANKED_WRITERS, n)
        out["writers"][g] = clean
        out["bytes_writers"][g] = in_bytes
        out["cost_tau"][g] = [_rank_tau(clean, in_bytes, k) for k in range(n)]
        out["ablation"][g] = [_mean(r["ablation"]["fraction"][k] for r in rs) for k in range(n)]
        if "invalidation" in rs[0]["words"]:
            out["invalidation"][g] = _writer_means(rs, lambda r: r["words"]["invalidation"], TABLE_WRITERS, n)
            out["invalidation_units"][g] = _mean(r["words"]["invalidation_units"] for r in rs)
        for p in noise_levels:
            key = _level_key(p)
            noisy = _writer_means(rs, _noise_ratios(key), RANKED_WRITERS, n)
            mad = [_mean(abs(r["noise"][key]["ratios"][w][k] - r["words"]["ratios"][w][k])
                         for r in rs for w in RANKED_WRITERS
                         if r["noise"][key]["ratios"][w][k] is not None
                         and r["words"]["ratios"][w][k] is not None) for k in range(n)]
            out["noise"].setdefault(key, {"tau": {}, "mad": {}, "writers": {}})
            out["noise"][key]["tau"][g] = [_rank_tau(clean, noisy, k) for k in range(n)]
            out["noise"][key]["mad"][g] = mad
            out["noise"][key]["writers"][g] = noisy
    return out


def _noise_ratios(key: str) -> Callable[[dict[str, Any]], dict[str, list[Any]]]:
    """The noisy-ratio table of one noise level of a record."""
    return lambda r: r["noise"][key]["ratios"]


def _unproven(records: list[dict[str, Any]]) -> dict[str, int]:
    count = {"words": 0, "bytes": 0, "ablation": 0, "noise": 0, "solves": 0}
    for r in records:
        for part in ("words", "bytes", "ablation"):
            count[part] += sum(not x for x in r[part]["proven"])
            count["solves"] += len(r[part]["proven"])
        for level in r["noise"].values():
            count["noise"] += sum(not x for x in level["proven"])
            count["solves"] += len(level["proven"])
    return count


def max_ratio(records: list[dict[str, Any]]) -> float:
    """The largest writer ratio of any record (at most 1 + round-off with exact OPT)."""
    best = 0.0
    for r in records:
        parts = [r["words"]["ratios"], r["bytes"]["ratios"], *(v["ratios"] for v in r["noise"].values())]
        for ratios in parts:
            for vals in ratios.values():
                best = max([best, *(v for v in vals if v is not None)])
    return best


def comparison_rows(run: Reproduction) -> list[dict[str, Any]]:
    """Our figure next to each paper figure that the run measured (base distribution)."""
    small = run.summary.get("small")
    if not small or "base" not in small["writers"]:
        return []
    labels = small["labels"]
    rows = []
    for finding, paper, ours in (
        ("density_only / OPT", PAPER_DENSITY_ONLY, small["writers"]["base"]["density_only"]),
        ("no-tombstone OPT / OPT", PAPER_NO_TOMBSTONE, small["ablation"]["base"]),
    ):
        for k, b in enumerate(labels):
            if b in paper and ours[k] is not None:
                rows.append({"finding": finding, "distribution": "base", "budget": b,
                             "paper": paper[b], "ours": ours[k], "difference": ours[k] - paper[b]})
    for k, b in enumerate(labels):
        if b == 6.0:
            for d, paper_value in PAPER_STRESS_NO_TOMBSTONE_B6.items():
                if d in small["ablation"]:
                    ours_value = small["ablation"][d][k]
                    rows.append({"finding": "no-tombstone OPT / OPT", "distribution": d, "budget": b,
                                 "paper": paper_value, "ours": ours_value,
                                 "difference": ours_value - paper_value})
    return rows
