"""Measurements of one package: exact OPT, every writer's ratio, the no-tombstone ablation
and the annotation-noise re-scoring; and the per-package records of each suite."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import UsageError
from ...evaluate.ablation import DEFAULT_DROP, dropped_representations
from ...evaluate.baselines import WriterContext, run_writer
from ...evaluate.scoring import ratio_of
from ...model.compiled import CompiledPackage, compile_package
from ...model.package import Package
from ...solve.exact import solve
from ...suites.costs import get_cost_model
from ...suites.locomo import locomo_packages
from ...suites.small import generate_package
from ..parallel import _map
from .config import PARTIAL_LEVEL, RANKED_WRITERS, WEIGHT_SIGMA_PER_P, ReproduceConfig, _level_key

# --- annotation noise -----------------------------------------------------------------------


def _rng(*parts: Any) -> np.random.Generator:
    # SHA-256 of the parts, not Python's hash: the same noise in every process and run.
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def perturb_annotations(data: dict[str, Any], p: float, seed: int = 0) -> dict[str, Any]:
    """A copy of a package dict with noisy coverage labels and weights.

    Each non-zero coverage value flips with probability ``p``: a full label (``>= 1``)
    becomes :data:`PARTIAL_LEVEL`, a partial one becomes 1. Each unit weight ``w`` becomes
    ``w * exp(sigma z)`` with ``z ~ N(0, 1)`` and ``sigma = WEIGHT_SIGMA_PER_P * p``. The
    draws depend only on the package id, ``p`` and ``seed``. Candidates, costs, groups and
    budgets are unchanged, so a store of the clean package is a store of the noisy one.
    """
    if not (0.0 <= p <= 1.0):
        raise UsageError(f"noise level {p!r}: expected a probability in [0, 1]")
    rng = _rng("annotation-noise", data["package_id"], repr(float(p)), seed)
    candidates = []
    for cand in data["candidates"]:
        coverage = {}
        for unit_id, value in cand["coverage"].items():
            if value > 0 and rng.random() < p:
                value = PARTIAL_LEVEL if value >= 1 else 1.0
            coverage[unit_id] = value
        candidates.append({**cand, "coverage": coverage})
    sigma = WEIGHT_SIGMA_PER_P * p
    units = []
    for unit in data["units"]:
        factor = math.exp(sigma * float(rng.standard_normal()))
        units.append({**unit, "weight": unit["weight"] * factor} if "weight" in unit else dict(unit))
    return {**data, "candidates": candidates, "units": units}


# --- one package ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opt:
    value: float
    upper_bound: float
    proven: bool


def _solve(compiled: CompiledPackage, budgets: Sequence[float], time_limit: float | None) -> list[_Opt]:
    """Exact OPT per budget (equal budgets solved once)."""
    distinct = sorted({float(b) for b in budgets})
    results = solve(compiled, budgets=distinct, time_limit=time_limit)
    by_budget = {
        b: _Opt(float(r.value), float(r.upper_bound), bool(r.proven_optimal))
        for b, r in zip(distinct, results)
    }
    return [by_budget[float(b)] for b in budgets]


def mapped_budgets(candidates: Sequence[dict[str, Any]], word_budgets: Sequence[float]) -> list[float]:
    """Words budgets rescaled to the candidates' own cost model, one per budget.

    The MEMAUDIT-Small generator's rule (budget times mean cost over mean word cost, rounded
    up, at least the cheapest candidate), without merging equal results so budgets pair up.
    """
    words = get_cost_model("words")
    total_words = sum(words(c["text"]) for c in candidates)
    total_cost = sum(float(c["cost"]) for c in candidates)
    if not candidates or total_words == 0:
        return [float(b) for b in word_budgets]
    ratio = total_cost / total_words
    cheapest = min(float(c["cost"]) for c in candidates)
    return [float(max(math.ceil(b * ratio - 1e-9), cheapest)) for b in word_budgets]


def _invalidation_units(compiled: CompiledPackage) -> np.ndarray:
    return np.array(
        [r for r, u in enumerate(compiled.package.units) if u.get("kind") == "invalidation"],
        dtype=np.int64,
    )


def _covered(compiled: CompiledPackage, chosen: Iterable[int], units: np.ndarray) -> float:
    """Sum of ``min(1, z_r)`` over the given units for a store (invalidation units covered)."""
    if units.size == 0:
        return 0.0
    z = np.zeros(len(compiled.unit_ids))
    for i in chosen:
        lo, hi = compiled.indptr[i], compiled.indptr[i + 1]
        z[compiled.indices[lo:hi]] += compiled.values[lo:hi]
    return float(np.minimum(1.0, z[units]).sum())


def _selected_indices(index: dict[str, int], selected: Iterable[Any]) -> list[int]:
    return [index[s] if isinstance(s, str) else int(s) for s in selected]


def _denominators(opts: Sequence[_Opt], values: dict[str, list[float]]) -> list[float]:
    """OPT per budget; an unproven incumbent can trail a writer, the best known store is then
    the denominator."""
    return [o.value if o.proven else max([o.value, *(vals[k] for vals in values.values())])
            for k, o in enumerate(opts)]


def _ratios(values: dict[str, list[float]], denominators: Sequence[float]) -> dict[str, list[float | None]]:
    return {w: [ratio_of(v, d) for v, d in zip(vals, denominators)] for w, vals in values.items()}


def _score_writers(
    compiled: CompiledPackage, budgets: Sequence[float], time_limit: float | None,
    writers: Sequence[str], invalidation: bool,
) -> dict[str, Any]:
    """OPT and every writer's store and ratio at each budget of one compiled package."""
    opts = _solve(compiled, budgets, time_limit)
    ctx = WriterContext(compiled)
    stores: dict[str, list[list[str]]] = {w: [] for w in writers}
    values: dict[str, list[float]] = {w: [] for w in writers}
    for b, opt in zip(budgets, opts):
        for w in writers:
            result = run_writer(ctx, b, w, opt=opt.value)
            stores[w].append(list(result.selected))
            values[w].append(result.value)
    denominators = _denominators(opts, values)
    out: dict[str, Any] = {
        "budgets": [float(b) for b in budgets],
        "opt": denominators,
        "upper_bound": [o.upper_bound for o in opts],
        "proven": [o.proven for o in opts],
        "ratios": _ratios(values, denominators),
        "stores": stores,
    }
    if invalidation:
        units = _invalidation_units(compiled)
        index = compiled.index_of()
        out["invalidation_units"] = int(units.size)
        out["invalidation"] = {
            w: [_covered(compiled, _selected_indices(index, s), units) for s in stores[w]]
            for w in writers
        }
    return out


def _ablation(compiled: CompiledPackage, budgets: Sequence[float], full: Sequence[float],
              time_limit: float | None) -> dict[str, Any]:
    """No-tombstone OPT as a fraction of the full OPT (1 when nothing is dropped)."""
    reps = dropped_representations(DEFAULT_DROP)
    kept = [c for c in compiled.package.candidates if str(c.get("representation", "")) not in reps]
    removed = len(compiled.package.candidates) - len(kept)
    if removed == 0:
        return {"removed": 0, "opt": list(full), "proven": [True] * len(budgets),
                "fraction": [ratio_of(v, v) for v in full]}
    if kept:
        data = {**compiled.package.data, "candidates": kept,
                "package_id": f"{compiled.package_id}~drop:{','.join(DEFAULT_DROP)}"}
        opts = _solve(compile_package(Package.from_dict(data)), budgets, time_limit)
    else:
        opts = [_Opt(0.0, 0.0, True) for _ in budgets]
    return {
        "removed": removed,
        "opt": [o.value for o in opts],
        "proven": [o.proven for o in opts],
        "fraction": [ratio_of(o.value, f) for o, f in zip(opts, full)],
    }


def _noise(data: dict[str, Any], stores: dict[str, list[list[str]]], budgets: Sequence[float],
           levels: Sequence[float], seed: int, time_limit: float | None) -> dict[str, Any]:
    """Re-score the clean stores against each perturbed annotation."""
    out: dict[str, Any] = {}
    for p in levels:
        noisy = compile_package(Package.from_dict(perturb_annotations(data, p, seed)))
        opts = _solve(noisy, budgets, time_limit)
        index = noisy.index_of()
        values = {w: [noisy.objective(_selected_indices(index, s)) for s in per_budget]
                  for w, per_budget in stores.items()}
        denominators = _denominators(opts, values)
        out[_level_key(p)] = {
            "opt": denominators,
            "proven": [o.proven for o in opts],
            "ratios": _ratios(values, denominators),
        }
    return out


def evaluate_pair(
    words_data: dict[str, Any], bytes_data: dict[str, Any], *, labels: Sequence[float],
    words_budgets: Sequence[float], bytes_budgets: Sequence[float], noise_levels: Sequence[float],
    noise_seed: int, time_limit: float | None, group: str, seed: int | None,
) -> dict[str, Any]:
    """Every measurement of one package (its words and bytes versions).

    Returns a per-package record: ``words`` and ``bytes`` (OPT and writer ratios per
    budget), ``ablation`` (no-tombstone OPT fraction per budget) and ``noise`` (ratios of
    the clean words stores under each perturbed annotation).
    """
    words = compile_package(Package.from_dict(words_data))
    w = _score_writers(words, words_budgets, time_limit, RANKED_WRITERS, invalidation=True)
    b = _score_writers(compile_package(Package.from_dict(bytes_data)), bytes_budgets,
                       time_limit, RANKED_WRITERS, invalidation=False)
    record = {
        "package_id": words.package_id,
        "group": group,
        "total_cost": float(words.cost.sum()),
        "seed": seed,
        "labels": [float(x) for x in labels],
        "words": w,
        "bytes": b,
        "ablation": _ablation(words, words_budgets, w["opt"], time_limit),
        "noise": _noise(words_data, w["stores"], words_budgets, noise_levels, noise_seed, time_limit),
    }
    # The stores were needed for the noise re-scoring only; ratios and values are kept.
    del w["stores"], b["stores"]
    return record


def _small_task(args: tuple[str, int, ReproduceConfig]) -> dict[str, Any]:
    distribution, seed, cfg = args
    words = generate_package(distribution, seed, budgets=list(cfg.budgets))
    bytes_data = generate_package(distribution, seed, cost_model="bytes", budgets=[0])
    bytes_budgets = mapped_budgets(bytes_data["candidates"], cfg.budgets)
    bytes_data["budgets"] = sorted(set(bytes_budgets))
    return evaluate_pair(
        words, bytes_data, labels=cfg.budgets, words_budgets=cfg.budgets,
        bytes_budgets=bytes_budgets, noise_levels=cfg.noise_levels, noise_seed=cfg.noise_seed,
        time_limit=cfg.time_limit, group=distribution, seed=seed,
    )




def small_records(cfg: ReproduceConfig, done: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """Per-package records of MEMAUDIT-Small, distribution-major, seeds 0..N-1 (``done()`` after each)."""
    tasks = [(d, s, cfg) for d in cfg.distributions for s in range(cfg.seeds)]
    out = []
    for record in _map(_small_task, tasks, cfg.workers):
        out.append(record)
        if done is not None:
            done()
    return out


def locomo_records(cfg: ReproduceConfig, done: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """Per-conversation records of the LoCoMo natural packages (budgets as fractions)."""
    if cfg.locomo is None:
        return []
    fracs = list(cfg.locomo_budget_fracs)
    words = locomo_packages(cfg.locomo, budget_fracs=fracs)
    in_bytes = locomo_packages(cfg.locomo, cost_model="bytes", budget_fracs=fracs)
    out = []
    for k, (wd, bd) in enumerate(zip(words, in_bytes)):
        if cfg.locomo_limit is not None and k >= cfg.locomo_limit:
            break
        out.append(evaluate_pair(
            wd, bd, labels=fracs, words_budgets=wd["budgets"], bytes_budgets=bd["budgets"],
            noise_levels=cfg.noise_levels, noise_seed=cfg.noise_seed,
            time_limit=cfg.locomo_time_limit, group="locomo", seed=None,
        ))
        if done is not None:
            done()
    return out
