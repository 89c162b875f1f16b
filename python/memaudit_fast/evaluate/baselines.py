"""Baseline memory writers over a package's candidates, scored as ``F(X) / OPT``.

The rules are those of the MEMAUDIT artifact's evaluation (Bhargava & Sobral Barrento,
2026), reproduced to the tie so the project's figures match the paper's. For the current
store S,

.. math::

    gain(u) = F(S + u) - F(S), \\qquad dens(u) = gain(u) / \\max(c_u, 10^{-12}),

and a candidate is skipped when it does not fit the remaining budget or
``gain(u) <= 1e-12``. **Arrival order** of groups is the smallest timestamp among a group's
candidates (the experience's timestamp), then the group id; inside a group candidates go by
(cost, candidate id). Keys are compared as tuples, larger wins, so on a full tie the
lexicographically largest candidate id wins.

Writers (``BASELINE_WRITERS``):

- ``density_only``: one pass over groups in arrival order; per group insert the
  candidate with the largest (dens, gain, -cost, id).
- ``greedy``: repeatedly insert, over all candidates of unused groups, the one with the
  largest (dens, gain, -cost, id).
- ``gvt`` (Group Value-Threshold): one arrival-order pass per threshold
  ``t in {0} U {F({u}) / max(c_u, 1e-12) : c_u <= B}`` (decreasing), inserting per group the
  candidate with ``dens + 1e-12 >= t`` and the largest (gain, -cost, id); the best store
  wins (higher value by more than 1e-12, then lower cost, then the earlier threshold).
- ``recency_raw``: raw candidates (``raw``, ``raw_span``) by (-timestamp, cost, id), first
  fit, one per group (up to the group capacity). It does not look at gains.
- ``fact_only``, ``summary_only``, ``raw_only``: ``greedy`` restricted to the
  representations ``fact``/``atomic_fact`` (the artifact's name), ``summary``, and
  ``raw``/``raw_span``.
- ``random``: candidates in a seeded random order, first fit, one per group (up to the group
  capacity), blind to gains.
- ``no_tombstone_greedy``, ``no_tombstone_gvt``: ``greedy``/``gvt`` after dropping the
  representations ``tombstone``, ``update`` and ``compound_update`` (the artifact's name).
  Arrival order and GVT thresholds are then computed over the remaining candidates only.
- ``estimated_greedy``, ``estimated_gvt`` (``ESTIMATED_WRITERS``, coverage-blind): the
  ``greedy`` and ``gvt`` rules with every gain taken from a write-time estimate ``F~``
  (:mod:`memaudit_fast.evaluate.estimators`: the candidates' ``estimated_coverage`` through
  the package's saturation, else ``estimated_value``, else an estimator), scored with the
  true ``F``. Their record names where each estimate came from.

``density_only``, ``greedy`` and ``gvt`` run in the C++ core (``_core.run_writer``); the
rest are cheap in Python. Every writer returns a feasible store.

With a group capacity k > 1 (``objective.group_capacity``) a group stays open until k of
its candidates are stored (see ``writers.hpp``).

The score is ``F(X) / OPT``; when ``OPT`` is 0 every feasible store scores 1 (the
artifact's convention, which its tables rely on).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._core import run_writer as core_writer
from ..errors import UsageError
from ..model.compiled import CompiledPackage, budget_limit, check_budget, compile_package
from ..model.package import Package
from ..solve.exact import exact_opt
from .scoring import ratio_of

RAW_REPRESENTATIONS = frozenset({"raw", "raw_span"})
FACT_REPRESENTATIONS = frozenset({"fact", "atomic_fact"})
SUMMARY_REPRESENTATIONS = frozenset({"summary"})
# The validity candidates whose removal the paper's no-tombstone ablation studies.
TOMBSTONE_REPRESENTATIONS = frozenset({"tombstone", "update", "compound_update"})


@dataclass(frozen=True)
class _Spec:
    algorithm: str  # a core writer name, or "recency" / "random"
    keep: frozenset[str] | None = None  # admit only these representations
    drop: frozenset[str] = frozenset()  # then drop these
    description: str = ""
    estimated: bool = False  # gains from the write-time estimate F~, not from F


_SPECS: dict[str, _Spec] = {
    "density_only": _Spec("density_only", description="best density per arriving group, one pass"),
    "greedy": _Spec("greedy", description="global density greedy over unused groups"),
    "gvt": _Spec("gvt", description="group value-threshold, best store over thresholds"),
    "recency_raw": _Spec("recency", keep=RAW_REPRESENTATIONS, description="newest raw turns first, first fit"),
    "fact_only": _Spec("greedy", keep=FACT_REPRESENTATIONS, description="greedy over facts only"),
    "summary_only": _Spec("greedy", keep=SUMMARY_REPRESENTATIONS, description="greedy over summaries only"),
    "raw_only": _Spec("greedy", keep=RAW_REPRESENTATIONS, description="greedy over raw turns only"),
    "random": _Spec("random", description="seeded random order, first fit"),
    "no_tombstone_greedy": _Spec("greedy", drop=TOMBSTONE_REPRESENTATIONS, description="greedy without tombstones/updates"),
    "no_tombstone_gvt": _Spec("gvt", drop=TOMBSTONE_REPRESENTATIONS, description="gvt without tombstones/updates"),
    "estimated_greedy": _Spec("greedy", estimated=True, description="greedy on estimated gains (coverage-blind)"),
    "estimated_gvt": _Spec("gvt", estimated=True, description="gvt on estimated gains (coverage-blind)"),
}

#: The writers that plan with the true coverage, in report order (the default set).
BASELINE_WRITERS: tuple[str, ...] = tuple(n for n, s in _SPECS.items() if not s.estimated)
#: The coverage-blind writers: they need estimates in the package or an estimator.
ESTIMATED_WRITERS: tuple[str, ...] = tuple(n for n, s in _SPECS.items() if s.estimated)
#: Every writer name.
ALL_WRITERS: tuple[str, ...] = tuple(_SPECS)


def describe_writers() -> dict[str, str]:
    """One line per writer, for ``--help`` texts."""
    return {name: spec.description for name, spec in _SPECS.items()}




@dataclass(frozen=True)
class WriterResult:
    """The store one writer chose for one budget, with its value and ratio to OPT."""

    writer: str
    budget: float
    selected: tuple[str, ...]  # candidate ids in insertion order
    value: float
    cost: float
    opt: float | None
    ratio: float | None
    seconds: float
    estimate: dict[str, Any] | None = None  # estimated writers: where F~ came from

    def to_record(self) -> dict[str, Any]:
        """The entry of the ``writers`` block of a ``memaudit.result/1`` record."""
        out: dict[str, Any] = {
            "value": self.value,
            "ratio": self.ratio,
            "selected": list(self.selected),
            "cost": self.cost,
        }
        if self.estimate is not None:
            out["estimate"] = self.estimate
        return out


@dataclass
class WriterContext:
    """What every writer of one package needs, computed once and reused across budgets.

    Holds the compiled arrays, the rank of every candidate id (for tie-breaking in the
    core) and the arrival orders of each admitted candidate set.
    """

    compiled: CompiledPackage
    estimator: Any = None  # for the estimated writers (see evaluate.estimators)
    id_rank: np.ndarray = field(init=False)
    _orders: dict[tuple[frozenset[str] | None, frozenset[str]], np.ndarray] = field(
        init=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        ids = self.compiled.candidate_ids
        rank = np.empty(len(ids), dtype=np.int32)
        for position, index in enumerate(sorted(range(len(ids)), key=ids.__getitem__)):
            rank[index] = position
        self.id_rank = rank
        self._estimate: Any = None

    def estimate(self) -> Any:
        """The estimate problem F~ of the estimated writers, built once."""
        if self._estimate is None:
            from .estimators import estimate_problem, load_estimator

            self._estimate = estimate_problem(self.compiled, load_estimator(self.estimator))
        return self._estimate

    def admitted(self, keep: frozenset[str] | None, drop: frozenset[str]) -> list[int]:
        reps = self.compiled.representations
        return [
            i for i in range(self.compiled.num_candidates)
            if (keep is None or reps[i] in keep) and reps[i] not in drop
        ]

    def arrival_order(self, keep: frozenset[str] | None = None, drop: frozenset[str] = frozenset()) -> np.ndarray:
        """Admitted candidates grouped, groups in arrival order, inside by (cost, id).

        A group arrives at the smallest timestamp among its *admitted* candidates, as in
        the artifact, which filters candidates before ordering groups.
        """
        key = (keep, drop)
        if key not in self._orders:
            c = self.compiled
            admitted = self.admitted(keep, drop)
            first: dict[int, float] = {}
            for i in admitted:
                g = int(c.group_of[i])
                t = float(c.times[i])
                if g not in first or t < first[g]:
                    first[g] = t

            def sort_key(i: int) -> tuple[float, str, int, float, str]:
                g = int(c.group_of[i])
                # The group index keeps groups apart if two ever share an id string.
                return (first[g], c.group_ids[g], g, float(c.cost[i]), c.candidate_ids[i])

            self._orders[key] = np.array(sorted(admitted, key=sort_key), dtype=np.int32)
        return self._orders[key]


def writer_context(
    package: Package | CompiledPackage | WriterContext | dict[str, Any] | str | Path, estimator: Any = None
) -> WriterContext:
    """A reusable :class:`WriterContext` for a package (or the context itself).

    ``estimator`` (a model path, ``embed``, or an estimator object) supplies the estimated
    writers' values where the package carries no estimate.
    """
    if isinstance(package, WriterContext):
        if estimator is not None and package.estimator is None:
            package.estimator = estimator
        return package
    return WriterContext(compile_package(package), estimator)


def _check_writer(name: str) -> _Spec:
    if name not in _SPECS:
        raise UsageError(f"unknown writer {name!r}; expected one of {', '.join(ALL_WRITERS)}")
    return _SPECS[name]


def check_writers(names: Iterable[str] | str) -> list[str]:
    """Validate writer names (raises UsageError naming the unknown one); a str is one name or
    a comma-separated list ("gvt,greedy"), not its characters."""
    out = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
    for name in out:
        _check_writer(name)
    return out


def _select(ctx: WriterContext, spec: _Spec, budget: float, seed: int) -> list[int]:
    c = ctx.compiled
    if spec.algorithm in ("density_only", "greedy", "gvt"):
        order = ctx.arrival_order(spec.keep, spec.drop)
        problem = ctx.estimate().problem if spec.estimated else c.problem
        # A store fits within budget_limit(B), as OPT's do; a capacity above the number of
        # candidates holds them all (the core takes a 32-bit count).
        return [int(u) for u in core_writer(problem, spec.algorithm, budget_limit(float(budget)), order, ctx.id_rank,
                                            min(c.group_capacity, max(1, c.num_candidates)))]
    if spec.algorithm == "recency":
        pool = sorted(
            ctx.admitted(spec.keep, spec.drop),
            key=lambda i: (-float(c.times[i]), float(c.cost[i]), c.candidate_ids[i]),
        )
    else:  # random
        pool = [int(i) for i in np.random.default_rng(seed).permutation(c.num_candidates)]
    return _first_fit(c, pool, budget)


def _first_fit(c: CompiledPackage, pool: Sequence[int], budget: float) -> list[int]:
    """Insert in the given order whatever fits, up to the group capacity per group."""
    held: dict[int, int] = {}
    used = 0.0
    out: list[int] = []
    for i in pool:
        g = int(c.group_of[i])
        cost = float(c.cost[i])
        if held.get(g, 0) >= c.group_capacity or used + cost > budget_limit(budget):
            continue
        out.append(i)
        held[g] = held.get(g, 0) + 1
        used += cost
    return out




def run_writer(
    package: Package | CompiledPackage | WriterContext | dict[str, Any] | str | Path,
    budget: float,
    writer: str,
    *,
    opt: float | None = None,
    seed: int = 0,
    estimator: Any = None,
) -> WriterResult:
    """Run one baseline writer on a package at budget ``B`` and score its store.

    Parameters
    ----------
    package
        A package (or dict / path), its compiled form, or a :class:`WriterContext`
        (reuse one across budgets and writers to skip recompiling and re-sorting).
    budget
        The storage budget ``B``.
    writer
        One of :data:`BASELINE_WRITERS`.
    opt
        ``OPT(B)``; solved exactly when not given.
    seed
        Seed of the ``random`` writer.
    estimator
        For the estimated writers: a ridge model path, ``embed``, or an estimator object
        (used for candidates without an estimate of their own).

    Returns
    -------
    WriterResult
        The store (candidate ids in insertion order), ``F(X)``, its cost and
        ``F(X) / OPT(B)``.
    """
    spec = _check_writer(writer)
    budget = check_budget(budget)
    ctx = writer_context(package, estimator)
    c = ctx.compiled
    start = time.perf_counter()
    chosen = _select(ctx, spec, float(budget), seed)
    seconds = time.perf_counter() - start
    value = c.objective(chosen)
    if opt is None:
        opt = exact_opt(c, budget)
    return WriterResult(
        writer=writer,
        budget=float(budget),
        selected=tuple(c.candidate_ids[i] for i in chosen),
        value=value,
        cost=float(sum(float(c.cost[i]) for i in chosen)),
        opt=float(opt),
        ratio=ratio_of(value, float(opt)),
        seconds=seconds,
        estimate=ctx.estimate().info if spec.estimated else None,
    )


def run_writers(
    package: Package | CompiledPackage | WriterContext | dict[str, Any] | str | Path,
    budget: float,
    writers: Iterable[str] | str = BASELINE_WRITERS,
    *,
    opt: float | None = None,
    seed: int = 0,
    estimator: Any = None,
) -> dict[str, WriterResult]:
    """Run several writers on one package and budget (OPT solved once when not given)."""
    names = check_writers(writers)
    ctx = writer_context(package, estimator)
    if opt is None:
        opt = exact_opt(ctx.compiled, budget)
    return {name: run_writer(ctx, budget, name, opt=opt, seed=seed) for name in names}


def writers_block(results: dict[str, WriterResult]) -> dict[str, dict[str, Any]]:
    """The ``writers`` block of a ``memaudit.result/1`` record."""
    return {name: r.to_record() for name, r in results.items()}


def writer_scores(
    package: Package | CompiledPackage | WriterContext | dict[str, Any] | str | Path,
    budget: float,
    writers: Iterable[str] | str = BASELINE_WRITERS,
    *,
    opt: float | None = None,
    seed: int = 0,
    estimator: Any = None,
) -> dict[str, dict[str, Any]]:
    """The ``writers`` block (value, ratio, selected, cost per writer) for one budget."""
    return writers_block(run_writers(package, budget, writers, opt=opt, seed=seed, estimator=estimator))
