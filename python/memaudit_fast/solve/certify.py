"""Independent MILP certificates of branch-and-bound results (MISSION.md section 3).

A result claims a value ``V`` (the incumbent, ``F`` of its selection), a proven upper bound
``U`` (``U = V`` when proven optimal) and a selection. :func:`certify` checks the selection
(known ids, one candidate per group, cost within B, ``F(selection) = V``), then solves the
package's MILP (:mod:`memaudit_fast.solve.milp`) with HiGHS or Gurobi and compares, within the
tolerance ``tol = rel_tol * max(1, |V|)``:

- the MILP's proven bound ``D`` must not fall below ``V - tol`` (else no store reaches V);
- the MILP's store, re-evaluated exactly, must not exceed ``U + tol`` (else U was no bound).

``agrees`` is ``True`` only when the MILP was solved to optimality, its bound is within ``U +
tol`` and nothing contradicts the result; ``False`` on any contradiction; ``None`` when the MILP
stopped early without contradiction (status ``time_limit`` with its bounds: never a false
"agrees"), or when its optimum lies above ``U`` on a store that fits the budget only within the
solver's tolerance (``note`` says so).

For ``log1p`` (not piecewise linear) two MILPs bracket OPT: chords below h (inner) and
tangents above h (outer). ``lower`` is the best exactly-evaluated store of either and
``upper`` the outer model's proven bound, so ``lower <= OPT <= upper``. The certificate
reports the bracket and whether the result lies inside it; it never claims equality
(``agrees`` is ``None`` inside the bracket, ``False`` outside).

Solvers: ``highs`` (the default certifier, a required dependency), ``gurobi`` (optional
extra) and ``auto`` (Gurobi when importable and its licence takes the model, else HiGHS;
the certificate records why Gurobi was skipped in ``fallback``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CertificationError, MemauditError, UsageError
from ..model.compiled import (
    CompiledPackage,
    _indices,
    check_budget,
    compile_package,
    store_problems,
)
from ..model.estimates import with_group_capacity
from ..model.jsonio import MAX_EXACT_INT
from ..model.package import Package
from .backends import (
    GurobiSession,
    GurobiUnavailable,
    MilpOutcome,
    gurobi_installed,
    solve_gurobi,
    solve_highs,
)
from .milp import MilpModel, build_milp
from .model_files import ModelWriter, bounded_model_stem

SOLVERS = ("auto", "highs", "gurobi")
DEFAULT_REL_TOL = 1e-6
DEFAULT_BREAKPOINTS = 32
#: The certifier's Gurobi environment, started once on first use (thread-safe).
GUROBI = GurobiSession()


@dataclass(frozen=True)
class Claim:
    """What a result asserts, normalised from a SolveResult or a ``memaudit.result/1`` dict."""

    package_id: str | None
    budget: float
    value: float
    upper_bound: float
    status: str
    selected: tuple[str, ...]
    group_capacity: int | None = None  # as the result states it (None: not stated)


def claim_of(result: Any) -> Claim:
    """Read the claim of a SolveResult-like object or a ``memaudit.result/1`` record."""
    if isinstance(result, dict):
        get = result.get
        value: Any = get("opt", get("value"))
    else:
        def get(key: str, default: Any = None) -> Any:
            return getattr(result, key, default)

        value = get("value")
    status = str(get("status", "optimal"))
    if status == "error":
        raise CertificationError(f"the result has status 'error' ({get('error', 'no cause given')}); nothing to certify")
    budget: Any = get("budget")
    selected: Any = get("selected")
    for name, item in (("budget", budget), ("opt", value), ("selected", selected)):
        if item is None:
            raise CertificationError(f"the result has no {name!r}; expected a memaudit.result/1 record")
    if isinstance(budget, (int, np.integer)) and not isinstance(budget, (bool, np.bool_)) \
            and abs(int(budget)) > MAX_EXACT_INT:
        raise CertificationError(f"the result's budget {budget} is an integer beyond 2^53 = {MAX_EXACT_INT} "
                                 "(a double would round it); expected a memaudit.result/1 record")
    if isinstance(selected, (str, bytes)):
        raise CertificationError(f"the result's selected is one string {selected!r}; expected a list of candidate ids")
    upper = get("upper_bound")
    stated_k = get("group_capacity")
    if stated_k is not None and (type(stated_k) is not int or stated_k < 1):
        raise CertificationError(f"the result's group_capacity is {stated_k!r}; expected an integer >= 1")
    try:
        return Claim(
            package_id=get("package_id"),
            budget=check_budget(budget),
            value=float(value),
            upper_bound=float(value if upper is None else upper),
            status=status,
            selected=tuple(str(s) for s in selected),
            group_capacity=stated_k,
        )
    except (TypeError, ValueError) as exc:
        raise CertificationError(f"the result is malformed ({exc}); expected a memaudit.result/1 record") from None


@dataclass(frozen=True)
class Certificate:
    """The outcome of certifying one result (``to_dict`` gives the JSON ``certificate``)."""

    solver: str
    version: str
    status: str
    value: float | None  # the MILP's optimum (None for a log1p bracket)
    bound: float | None  # the MILP's proven upper bound
    agrees: bool | None
    tolerance: float
    seconds: float
    exact: bool  # False when h had to be approximated (log1p)
    selection_feasible: bool
    selection_value: float | None
    store_value: float | None = None  # F of the MILP's own store, evaluated exactly
    issues: tuple[str, ...] = ()
    fallback: str | None = None
    bracket: dict[str, Any] | None = None
    model: dict[str, int] = field(default_factory=dict)
    model_files: list[dict[str, Any]] | None = None  # --write-model: each MILP as .mps / .lp
    note: str | None = None  # why an optimal MILP neither confirms nor contradicts (agrees None)

    @property
    def ok(self) -> bool:
        """True when nothing contradicts the result (agreeing, or unverified but consistent)."""
        return self.agrees is not False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "solver": self.solver,
            "version": self.version,
            "value": self.value,
            "status": self.status,
            "agrees": self.agrees,
            "seconds": self.seconds,
            "bound": self.bound,
            "tolerance": self.tolerance,
            "exact": self.exact,
            "selection_feasible": self.selection_feasible,
            "selection_value": self.selection_value,
            "store_value": self.store_value,
            "issues": list(self.issues),
            "model": dict(self.model),
        }
        if self.fallback is not None:
            out["fallback"] = self.fallback
        if self.bracket is not None:
            out["bracket"] = dict(self.bracket)
        if self.model_files is not None:
            out["model_files"] = list(self.model_files)
        if self.note is not None:
            out["note"] = self.note
        return out


def model_stems(package: Package | CompiledPackage | dict[str, Any] | str | Path, result: Any,
                group_capacity: int | None = None) -> list[str]:
    """The file stems :func:`certify` gives the MILPs of ``result`` under ``write_model``
    (one, or ``__inner`` and ``__outer`` for log1p), so that a run can check every output name
    before it writes any."""
    c = compile_package(package)
    claim = claim_of(result)
    return _stems(c, claim.budget, _capacity(claim, group_capacity))


def budget_stems(package: Package | CompiledPackage, budgets: Iterable[float]) -> list[str]:
    """The file stems :func:`certify` gives the MILPs of ``package``'s results at ``budgets``
    (results that state the package's own group capacity, as a solve of it gives), known
    before anything is solved: a run over several packages checks each one's names first."""
    c = compile_package(package)
    return [stem for budget in budgets for stem in _stems(c, check_budget(budget), None)]


def _capacity(claim: Claim, group_capacity: int | None) -> int | None:
    return claim.group_capacity if claim.group_capacity is not None else group_capacity


def _stems(c: CompiledPackage, budget: float, k: int | None) -> list[str]:
    exact = not any(s.name == "log1p" for s in c.saturations)
    suffixes = [""] if exact else ["__inner", "__outer"]
    # A group capacity other than the package's own is another MILP: another name.
    capacity = f"__K{k}" if k is not None and k != c.group_capacity else ""
    return [bounded_model_stem(c.package_id, budget, capacity + suffix) for suffix in suffixes]


def _exact_store_value(c: CompiledPackage, store: tuple[int, ...] | None, budget: float) -> float | None:
    """F of a MILP store, or None when it is missing or only tolerance-feasible."""
    if store is None:
        return None
    if store_problems(c, [c.candidate_ids[i] for i in store], budget):
        return None
    return c.objective(list(store))


def _check_arguments(solver: Any, time_limit: Any, rel_tol: Any, breakpoints: Any, write_model: Any,
                     group_capacity: Any) -> None:
    """certify()'s arguments, each named with what it must be, before any work."""
    def is_number(value: Any) -> bool:
        return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))

    if not (isinstance(solver, str) and solver in SOLVERS):
        raise UsageError(f"solver: unknown certifier {solver!r}; expected one of {', '.join(SOLVERS)}")
    if time_limit is not None and not (is_number(time_limit) and time_limit >= 0):
        raise UsageError(f"time_limit must be a number of seconds >= 0 (or None), got {time_limit!r}")
    if not (is_number(rel_tol) and 0 <= rel_tol < 1):
        raise UsageError(f"rel_tol must be a number from 0 to below 1, got {rel_tol!r}")
    if isinstance(breakpoints, (bool, np.bool_)) or not isinstance(breakpoints, (int, np.integer)) or breakpoints < 1:
        raise UsageError(f"breakpoints must be an integer >= 1, got {breakpoints!r}")
    if write_model is not None and not isinstance(write_model, (str, os.PathLike, ModelWriter)):
        raise UsageError(f"write_model must be a directory path (or None), got {type(write_model).__name__}")
    if group_capacity is not None and (type(group_capacity) is not int or not 1 <= group_capacity <= MAX_EXACT_INT):
        raise UsageError(f"group_capacity must be an integer from 1 to 2^53 (or None), got {group_capacity!r}")


def _run(models: list[MilpModel], solver: str, time_limit: float | None) -> tuple[list[MilpOutcome], str | None]:
    """Solve every model with one backend, falling back from Gurobi to HiGHS when needed."""
    if solver not in SOLVERS:
        raise UsageError(f"unknown certifier {solver!r}; expected one of {', '.join(SOLVERS)}")
    fallback = None
    if solver == "gurobi" and not gurobi_installed():
        raise CertificationError("gurobi was asked for but gurobipy is not installed "
                                 "(pip install 'memaudit_fast[gurobi]'); use highs or auto")
    if solver in ("auto", "gurobi"):
        try:
            return [solve_gurobi(m, GUROBI, time_limit=time_limit) for m in models], None
        except GurobiUnavailable as exc:
            fallback = f"gurobi skipped: {exc}; certified with HiGHS"
    return [solve_highs(m, time_limit=time_limit) for m in models], fallback


def _worst_status(outcomes: Iterable[MilpOutcome]) -> str:
    statuses = [o.status for o in outcomes]
    for s in ("error", "infeasible", "interrupted", "time_limit"):
        if s in statuses:
            return s
    return "optimal"


def certify(
    package: Package | CompiledPackage | dict[str, Any] | str | Path,
    result: Any,
    solver: str = "auto",
    *,
    time_limit: float | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
    breakpoints: int = DEFAULT_BREAKPOINTS,
    write_model: str | Path | ModelWriter | None = None,
    group_capacity: int | None = None,
) -> Certificate:
    """Certify one branch-and-bound result with an independent MILP.

    Parameters
    ----------
    package
        The package the result is for (or its compiled form, a dict, a path).
    result
        A ``SolveResult`` or a ``memaudit.result/1`` dict (``opt``, ``upper_bound``,
        ``selected``, ``budget``, ``status``).
    solver
        ``auto`` (Gurobi when usable, else HiGHS), ``highs`` or ``gurobi``.
    time_limit
        Seconds per MILP solve; a MILP stopped by it gives status ``time_limit`` and
        ``agrees`` ``None`` unless its bounds already contradict the result.
    rel_tol
        Relative tolerance of every comparison: ``tol = rel_tol * max(1, |V|)``.
    breakpoints
        Pieces per unit of the log1p approximations.
    write_model
        A directory: every MILP solved is also written there as ``.mps`` and ``.lp`` (see
        :func:`memaudit_fast.solve.milp.write_milp`), and the certificate's ``model_files``
        names each file with its sha256, so any MILP solver can re-check the optimum. Files
        are named by :func:`model_stems`; one that exists already is never written over (a
        UsageError, and nothing written). A :class:`ModelWriter` shares one directory between
        the certificates of a run (its caller then removes the files when the run fails).
    group_capacity
        Candidates a group may hold when the result does not state its own
        ``group_capacity`` (default: the package's ``objective.group_capacity``).

    Returns
    -------
    Certificate
    """
    start = time.perf_counter()
    _check_arguments(solver, time_limit, rel_tol, breakpoints, write_model, group_capacity)
    c = compile_package(package)
    claim = claim_of(result)
    if claim.package_id is not None and claim.package_id != c.package_id:
        raise CertificationError(f"the result is for package {claim.package_id!r}, not {c.package_id!r}")
    k = _capacity(claim, group_capacity)
    stems = _stems(c, claim.budget, k)
    if k is not None and k != c.group_capacity:
        c = compile_package(with_group_capacity(c.package, k))
    budget = claim.budget
    tol = rel_tol * max(1.0, abs(claim.value))

    issues = store_problems(c, claim.selected, budget)
    feasible = not issues
    chosen, unknown = _indices(c, claim.selected)
    selection_value = None if unknown else c.objective(list(dict.fromkeys(chosen)))
    if selection_value is not None and abs(selection_value - claim.value) > tol:
        issues.append(f"the claimed value {claim.value:.12g} differs from F(selection) = {selection_value:.12g}")
    if claim.upper_bound < claim.value - tol:
        issues.append(f"the claimed upper bound {claim.upper_bound:.12g} is below the claimed value")

    exact = not any(s.name == "log1p" for s in c.saturations)
    if exact:
        models = [build_milp(c, budget)]
    else:
        models = [build_milp(c, budget, log1p_mode=m, breakpoints=breakpoints) for m in ("inner", "outer")]
    model_files = None
    if write_model is not None:
        roles = ["exact"] if exact else ["inner", "outer"]
        writer = write_model if isinstance(write_model, ModelWriter) else ModelWriter(write_model)
        writer.check(stems)  # every name before any file
        try:
            model_files = [{"role": role, **writer.write(m, c, stem)} for m, role, stem in zip(models, roles, stems)]
        except BaseException:
            if writer is not write_model:  # this call's own files; a shared writer's run removes its
                writer.remove_written()
            raise
    outcomes, fallback = _run(models, solver, time_limit)
    status = _worst_status(outcomes)
    store_values = [_exact_store_value(c, o.store, budget) for o in outcomes]
    best_store = max((v for v in store_values if v is not None), default=None)

    bracket = None
    if exact:
        (outcome,) = outcomes
        value, bound = outcome.objective, outcome.bound
    else:
        inner, outer = outcomes
        value, bound = None, outer.bound
        bracket = {
            "lower": best_store,
            "upper": outer.bound,
            "inner_value": inner.objective,
            "outer_value": outer.objective,
            "breakpoints": breakpoints,
            # lower <= OPT <= upper, and the result claims V <= OPT <= U.
            "contains_result": (
                None if best_store is None or outer.bound is None
                else best_store - tol <= claim.upper_bound and claim.value <= outer.bound + tol
            ),
            "method": "log1p between chords (inner) and tangents (outer) at geometric breakpoints",
        }
    if status in ("error", "infeasible"):
        issues.append(f"the MILP solver reported {status!r}")
    if bound is not None and bound < claim.value - tol:
        issues.append(f"the MILP proves OPT <= {bound:.12g}, below the claimed value {claim.value:.12g}")
    if best_store is not None and best_store > claim.upper_bound + tol:
        issues.append(f"the MILP found a store of value {best_store:.12g}, above the claimed bound {claim.upper_bound:.12g}")

    note = None
    if issues:
        agrees: bool | None = False
    elif exact and status == "optimal" and bound is not None and bound <= claim.upper_bound + tol:
        agrees = True
    else:
        agrees = None
        if exact and status == "optimal" and bound is not None:
            # The MILP's optimum rests on a store that is feasible only within the solver's
            # tolerance (a cost sum a hair over B): it neither confirms the claimed bound nor
            # refutes it (that takes a store that fits B exactly).
            note = (f"the MILP's optimum {bound:.12g} is above the claimed bound {claim.upper_bound:.12g}, "
                    "but its store fits the budget only within the solver's tolerance; not confirmed")
    used = outcomes[0]
    return Certificate(
        solver=used.solver,
        version=used.version,
        status=status,
        value=value,
        bound=bound,
        agrees=agrees,
        tolerance=tol,
        seconds=time.perf_counter() - start,
        exact=exact,
        selection_feasible=feasible,
        selection_value=selection_value,
        store_value=best_store,
        issues=tuple(issues),
        fallback=fallback,
        bracket=bracket,
        model={"columns": models[0].num_cols, "rows": models[0].num_rows},
        model_files=model_files,
        note=note,
    )


def certify_results(
    package: Package | CompiledPackage | dict[str, Any] | str | Path,
    results: Iterable[Any],
    solver: str = "auto",
    *,
    time_limit: float | None = None,
    write_model: str | Path | ModelWriter | None = None,
) -> list[dict[str, Any]]:
    """``memaudit.result/1`` records of ``results`` with a ``certificate`` attached.

    Meant for ``memaudit solve --certify``: ``solver`` may also be ``none`` (records come back
    unchanged). A result that cannot be certified (status ``error``) gets a certificate with
    status ``not_certified``, ``agrees`` None and the reason. With ``write_model`` every
    model's name is checked before any is written, and when a write fails the files of this
    call are removed; a :class:`ModelWriter` given instead spans several calls (its owner
    removes the files of a failed run with :meth:`ModelWriter.remove_written`).
    """
    records = []
    results = list(results)
    compiled = None if solver == "none" else compile_package(package)
    writer = None
    if compiled is not None and write_model is not None:
        writer = write_model if isinstance(write_model, ModelWriter) else ModelWriter(write_model)
        writer.check(stem for result in results for stem in planned_stems(compiled, result))
    try:
        for result in results:
            record = dict(result) if isinstance(result, dict) else result.to_record()
            if compiled is not None:
                try:
                    record["certificate"] = certify(compiled, result, solver, time_limit=time_limit,
                                                    write_model=writer).to_dict()
                except CertificationError as exc:
                    record["certificate"] = not_certified(str(exc), solver=solver)
            records.append(record)
    except (MemauditError, OSError):
        if writer is not None and writer is not write_model:
            writer.remove_written()
        raise
    return records


def not_certified(reason: str, *, solver: str | None = None, failed: bool = False) -> dict[str, Any]:
    """The certificate of a result no MILP value was obtained for: ``agrees`` is None (nothing
    was compared), unless ``failed`` (the result itself cannot hold, e.g. its package is missing)."""
    return {"solver": solver, "status": "not_certified", "agrees": False if failed else None, "issues": [reason]}


def planned_stems(c: Package | CompiledPackage, result: Any, group_capacity: int | None = None) -> list[str]:
    """The model names a result will take (none when it cannot be certified at all)."""
    try:
        return model_stems(c, result, group_capacity)
    except CertificationError:
        return []

