"""The MILP of a package at budget B, in a solver-neutral array form (MISSION.md section 3).

.. math::

    \\max \\sum_r w_r y_r \\quad\\text{s.t.}\\quad
    y_r \\le \\alpha_{rk} + \\beta_{rk} \\sum_u a_{ur} x_u \\;(\\text{each linear piece } k \\text{ of } h_r),
    \\quad 0 \\le y_r \\le h_r^{max},
    \\quad \\sum_{u \\in g} x_u \\le 1 \\;(\\text{each group } g),
    \\quad \\sum_u c_u x_u \\le B, \\quad x_u \\in \\{0, 1\\}.

For a concave, non-decreasing piecewise-linear h the hypograph rows are exact: at an
optimum ``y_r = min_k(alpha_k + beta_k z_r) = h_r(z_r)``. ``cap1`` is the single piece
``y <= z`` with ``y <= 1``; ``linear`` the single piece with no cap (bounded here by the
largest reachable coverage). ``log1p`` is not piecewise linear: :func:`build_milp` then
builds an *inner* model (chords between breakpoints, below h: its optimum bounds OPT from
below) or an *outer* one (tangents at the breakpoints, above h: its bound is an upper bound
on OPT). Breakpoints are spaced geometrically in ``1 + z`` on ``[0, Z_r]`` (``Z_r`` the
largest coverage unit r can reach with one candidate per group), which equalises the
chord error of log1p, whose curvature is ``1/(1+z)^2``.

Left out of the model because they cannot change its value: units of weight 0 or that no
affordable candidate covers, candidates costing more than B or covering no kept unit,
pieces that start beyond ``Z_r``, group rows of single-candidate groups and a budget row
that every store satisfies.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .compiled import CompiledPackage
from .errors import CertificationError

LOG1P_MODES = ("inner", "outer")
#: A store fits when its cost sum is at most ``B + COST_SLACK * max(1, B)``: the exact
#: solver's rule, which absorbs rounding in float cost sums (0.1 + 0.2 > 0.3).
COST_SLACK = 1e-12


def budget_limit(budget: float) -> float:
    """The largest cost sum that still fits budget B."""
    return budget + COST_SLACK * max(1.0, abs(budget))


@dataclass(frozen=True)
class MilpModel:
    """Columns ``[x_0..x_{n-1}, y_0..y_{m-1}]``; rows in CSR with ``row_lower <= A v <= row_upper``.

    ``candidates[j]`` is the package candidate of column ``x_j``; ``units[k]`` the unit of
    ``y_k``. The objective is maximised.
    """

    candidates: np.ndarray  # int32
    units: np.ndarray  # int32
    objective: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_starts: np.ndarray  # int32, num_rows + 1
    row_index: np.ndarray  # int32
    row_value: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    approximation: str  # "exact", "inner" or "outer"

    @property
    def num_x(self) -> int:
        return int(self.candidates.size)

    @property
    def num_cols(self) -> int:
        return int(self.objective.size)

    @property
    def num_rows(self) -> int:
        return int(self.row_lower.size)


@dataclass(frozen=True)
class Pieces:
    """Linear pieces ``alpha_k + beta_k z`` whose minimum, capped at ``cap``, models h."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    cap: float


def saturation_pieces(spec, reach: float, *, log1p_mode: str = "inner", breakpoints: int = 32) -> Pieces:
    """The pieces of one saturation h over coverage ``[0, reach]``."""
    name = spec.name
    if name == "cap1":
        return Pieces((0.0,), (1.0,), min(1.0, reach))
    if name == "linear":
        return Pieces((0.0,), (1.0,), reach)
    if name == "pwl":
        alpha: list[float] = []
        beta: list[float] = []
        cap = 0.0
        for (z0, h0), (z1, h1) in zip(spec.points, spec.points[1:]):
            if z0 >= reach:
                break
            slope = (h1 - h0) / (z1 - z0)
            cap = h0 + slope * (min(z1, reach) - z0)
            if slope > 0:
                alpha.append(h0 - slope * z0)
                beta.append(slope)
        return Pieces(tuple(alpha), tuple(beta), cap)
    if name == "log1p":
        if log1p_mode not in LOG1P_MODES:
            raise CertificationError(f"log1p_mode must be one of {LOG1P_MODES}, got {log1p_mode!r}")
        k = max(1, int(breakpoints))
        grid = [math.expm1(math.log1p(reach) * j / k) for j in range(k + 1)]
        grid[-1] = reach
        if log1p_mode == "outer":
            # Tangent at t: log1p(t) + (z - t) / (1 + t) >= log1p(z) by concavity.
            alpha = [math.log1p(t) - t / (1.0 + t) for t in grid]
            beta = [1.0 / (1.0 + t) for t in grid]
        else:
            # Chord between consecutive grid points: below log1p on [0, reach].
            alpha, beta = [], []
            for t0, t1 in itertools.pairwise(grid):
                if t1 <= t0:
                    continue
                slope = (math.log1p(t1) - math.log1p(t0)) / (t1 - t0)
                alpha.append(math.log1p(t0) - slope * t0)
                beta.append(slope)
        return Pieces(tuple(alpha), tuple(beta), math.log1p(reach))
    raise CertificationError(f"no MILP model for saturation {name!r}")


def build_milp(
    compiled: CompiledPackage, budget: float, *, log1p_mode: str = "inner", breakpoints: int = 32
) -> MilpModel:
    """The MILP of ``compiled`` at ``budget`` (see the module docstring)."""
    c = compiled
    weight = c.weight
    limit = budget_limit(budget)
    affordable = c.cost <= limit
    covered_by: dict[int, list[tuple[int, float]]] = {}
    for u in map(int, np.flatnonzero(affordable)):
        for e in range(int(c.indptr[u]), int(c.indptr[u + 1])):
            r = int(c.indices[e])
            if weight[r] > 0:
                covered_by.setdefault(r, []).append((u, float(c.values[e])))
    units = sorted(covered_by)
    x_of: dict[int, int] = {}
    for r in units:
        for u, _ in covered_by[r]:
            x_of.setdefault(u, 0)
    candidates = sorted(x_of)
    for j, u in enumerate(candidates):
        x_of[u] = j
    n_x, n_y = len(candidates), len(units)

    objective = np.concatenate([np.zeros(n_x), weight[units] if units else np.zeros(0)])
    col_lower = np.zeros(n_x + n_y)
    col_upper = np.ones(n_x + n_y)

    starts = [0]
    index: list[int] = []
    value: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def add_row(cols: list[int], coefs: list[float], lo: float, hi: float) -> None:
        index.extend(cols)
        value.extend(coefs)
        starts.append(len(index))
        lower.append(lo)
        upper.append(hi)

    for k, r in enumerate(units):
        # Largest coverage of r with one candidate per group: the model's reach of z_r.
        best_in_group: dict[int, float] = {}
        for u, a in covered_by[r]:
            g = int(c.group_of[u])
            best_in_group[g] = max(best_in_group.get(g, 0.0), a)
        reach = math.fsum(best_in_group.values())
        pieces = saturation_pieces(
            c.saturations[int(c.saturation_of[r])], reach, log1p_mode=log1p_mode, breakpoints=breakpoints
        )
        col_upper[n_x + k] = pieces.cap
        x_cols = [x_of[u] for u, _ in covered_by[r]]
        coverage = [a for _, a in covered_by[r]]
        for alpha, beta in zip(pieces.alpha, pieces.beta):
            # y_r - beta * sum_u a_ur x_u <= alpha
            add_row([n_x + k, *x_cols], [1.0, *(-beta * a for a in coverage)], -math.inf, alpha)

    members: dict[int, list[int]] = {}
    for j, u in enumerate(candidates):
        members.setdefault(int(c.group_of[u]), []).append(j)
    for cols in members.values():
        if len(cols) > 1:
            add_row(cols, [1.0] * len(cols), -math.inf, 1.0)

    costs = [float(c.cost[u]) for u in candidates]
    if math.fsum(costs) > limit:
        add_row(list(range(n_x)), costs, -math.inf, limit)

    approximation = "exact"
    if any(c.saturations[int(c.saturation_of[r])].name == "log1p" for r in units):
        approximation = log1p_mode
    return MilpModel(
        candidates=np.array(candidates, dtype=np.int32),
        units=np.array(units, dtype=np.int32),
        objective=objective.astype(np.float64),
        col_lower=col_lower,
        col_upper=col_upper,
        row_starts=np.array(starts, dtype=np.int32),
        row_index=np.array(index, dtype=np.int32),
        row_value=np.array(value, dtype=np.float64),
        row_lower=np.array(lower, dtype=np.float64),
        row_upper=np.array(upper, dtype=np.float64),
        approximation=approximation,
    )


# --- Backends ------------------------------------------------------------------------------

#: Integrality and feasibility tolerance asked of both solvers: the certificate then rounds
#: x and re-evaluates every store exactly, so only the dual bound carries solver tolerance.
FEASIBILITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class MilpOutcome:
    """What one MILP solve reported."""

    solver: str
    version: str
    status: str  # optimal, time_limit, interrupted, infeasible or error
    objective: float | None  # the incumbent's objective, if any
    bound: float | None  # the proven (dual) bound
    store: tuple[int, ...] | None  # package candidate indices of the incumbent
    nodes: int
    seconds: float


class GurobiUnavailable(CertificationError):
    """Gurobi could not take this model (not installed, no licence, or over its size limit)."""


def _abs_gap(model: MilpModel) -> float:
    # A tiny absolute gap relative to the largest possible objective.
    top = float(np.dot(model.objective, model.col_upper)) if model.num_cols else 0.0
    return 1e-9 * max(1.0, top)


def _store_from(model: MilpModel, col_value) -> tuple[int, ...]:
    return tuple(int(model.candidates[j]) for j in range(model.num_x) if col_value[j] > 0.5)


def empty_outcome(solver: str, version: str) -> MilpOutcome:
    """A model without columns (nothing worth storing) has optimum 0; no solver is run."""
    return MilpOutcome(solver, version, "optimal", 0.0, 0.0, (), 0, 0.0)


def highs_version() -> str:
    import highspy

    return ".".join(str(v) for v in (highspy.HIGHS_VERSION_MAJOR, highspy.HIGHS_VERSION_MINOR, highspy.HIGHS_VERSION_PATCH))


def solve_highs(model: MilpModel, *, time_limit: float | None = None) -> MilpOutcome:
    """Solve with HiGHS (``highspy``), to ``mip_rel_gap = 0`` and a tiny absolute gap."""
    import time

    import highspy

    version = highs_version()
    if model.num_cols == 0:
        return empty_outcome("highs", version)

    class QuietHighs(highspy.Highs):
        # The first call after construction prints a banner to stdout unless output is off
        # by then; output_flag must be set before the callbacks are enabled.
        def enableCallbacks(self) -> None:
            self.setOptionValue("output_flag", False)
            super().enableCallbacks()

    start = time.perf_counter()
    h = QuietHighs()
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", _abs_gap(model))
    h.setOptionValue("mip_feasibility_tolerance", FEASIBILITY_TOLERANCE)
    h.setOptionValue("primal_feasibility_tolerance", FEASIBILITY_TOLERANCE)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    inf = highspy.kHighsInf
    n = model.num_cols
    empty_i = np.zeros(0, dtype=np.int32)
    h.addCols(n, model.objective, model.col_lower, model.col_upper, 0, empty_i, empty_i, np.zeros(0))
    if model.num_x:
        h.changeColsIntegrality(
            model.num_x, np.arange(model.num_x, dtype=np.int32),
            np.array([highspy.HighsVarType.kInteger] * model.num_x),
        )
    if model.num_rows:
        h.addRows(
            model.num_rows,
            np.where(np.isfinite(model.row_lower), model.row_lower, -inf),
            np.where(np.isfinite(model.row_upper), model.row_upper, inf),
            int(model.row_index.size), model.row_starts[:-1], model.row_index, model.row_value,
        )
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.HandleKeyboardInterrupt = True  # Ctrl-C cancels the solve; the status says so
    h.solve()
    seconds = time.perf_counter() - start

    s = highspy.HighsModelStatus
    raw = h.getModelStatus()
    status = {
        s.kOptimal: "optimal", s.kTimeLimit: "time_limit", s.kInterrupt: "interrupted",
        s.kInfeasible: "infeasible",
    }.get(raw, "error")
    info = h.getInfo()
    has_solution = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    objective = float(info.objective_function_value) if has_solution else None
    bound: float | None = float(info.mip_dual_bound)
    if bound is not None and not math.isfinite(bound):
        bound = None
    if status == "optimal" and objective is not None and bound is not None:
        bound = max(bound, objective)
    store = _store_from(model, h.getSolution().col_value) if has_solution else None
    return MilpOutcome("highs", version, status, objective, bound, store, int(info.mip_node_count), seconds)


_GUROBI_ENV = None
# Size (columns, rows) of a model the licence refused: any model at least as large in both is
# refused too, so it goes straight to HiGHS without building a Gurobi model first.
_GUROBI_REFUSED: tuple[int, int] | None = None


def _gurobi():
    try:
        import gurobipy
    except ImportError:
        raise GurobiUnavailable("gurobipy is not installed (pip install 'memaudit_fast[gurobi]')") from None
    return gurobipy


def _gurobi_env(gp):
    global _GUROBI_ENV
    if _GUROBI_ENV is None:
        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        try:
            env.start()
        except gp.GurobiError as exc:
            raise GurobiUnavailable(f"no usable Gurobi licence (GurobiError {exc.errno}: {exc})") from None
        _GUROBI_ENV = env
    return _GUROBI_ENV


def gurobi_installed() -> bool:
    """Whether gurobipy can be imported (a licence may still refuse a model)."""
    try:
        _gurobi()
    except GurobiUnavailable:
        return False
    return True


def gurobi_version() -> str:
    gp = _gurobi()
    return ".".join(str(v) for v in gp.gurobi.version())


def solve_gurobi(model: MilpModel, *, time_limit: float | None = None) -> MilpOutcome:
    """Solve with Gurobi (``gurobipy``), to ``MIPGap = 0`` and a tiny absolute gap.

    Raises
    ------
    GurobiUnavailable
        When gurobipy is missing, has no licence, or the licence refuses the model's size
        (the pip licence stops at 2,000 variables or 2,000 constraints: GurobiError 10010).
    """
    import time

    global _GUROBI_REFUSED
    gp = _gurobi()
    version = gurobi_version()
    if model.num_cols == 0:
        return empty_outcome("gurobi", version)
    size = (model.num_cols, model.num_rows)
    too_large = (
        f"the model has {size[0]} variables and {size[1]} constraints, beyond the size-limited "
        "Gurobi licence (GurobiError 10010)"
    )
    if _GUROBI_REFUSED is not None and size[0] >= _GUROBI_REFUSED[0] and size[1] >= _GUROBI_REFUSED[1]:
        raise GurobiUnavailable(too_large)
    start = time.perf_counter()
    env = _gurobi_env(gp)
    grb = gp.GRB
    m = gp.Model(env=env)
    try:
        m.Params.MIPGap = 0.0
        m.Params.MIPGapAbs = _abs_gap(model)
        m.Params.FeasibilityTol = FEASIBILITY_TOLERANCE
        m.Params.IntFeasTol = FEASIBILITY_TOLERANCE
        m.Params.Threads = 1
        if time_limit is not None:
            m.Params.TimeLimit = float(time_limit)
        n = model.num_cols
        vtype = [grb.BINARY] * model.num_x + [grb.CONTINUOUS] * (n - model.num_x)
        cols = m.addVars(n, lb=model.col_lower.tolist(), ub=model.col_upper.tolist(),
                         obj=model.objective.tolist(), vtype=vtype)
        m.ModelSense = grb.MAXIMIZE
        for k in range(model.num_rows):
            lo, hi = int(model.row_starts[k]), int(model.row_starts[k + 1])
            expr = gp.LinExpr(model.row_value[lo:hi].tolist(), [cols[int(j)] for j in model.row_index[lo:hi]])
            # Every row of the model is a <= row (lower bounds are -inf).
            m.addLConstr(expr, grb.LESS_EQUAL, float(model.row_upper[k]))
        try:
            m.optimize()
        except gp.GurobiError as exc:
            if exc.errno == 10010:
                _GUROBI_REFUSED = size
                raise GurobiUnavailable(too_large) from None
            raise GurobiUnavailable(f"Gurobi failed (GurobiError {exc.errno}: {exc})") from None
        seconds = time.perf_counter() - start
        status = {
            grb.OPTIMAL: "optimal", grb.TIME_LIMIT: "time_limit", grb.INTERRUPTED: "interrupted",
            grb.INFEASIBLE: "infeasible",
        }.get(m.Status, "error")
        has_solution = m.SolCount > 0
        objective = float(m.ObjVal) if has_solution else None
        bound = float(m.ObjBound) if status in ("optimal", "time_limit", "interrupted") else None
        if bound is not None and not math.isfinite(bound):
            bound = None
        if status == "optimal" and objective is not None and bound is not None:
            bound = max(bound, objective)
        store = _store_from(model, [cols[j].X for j in range(model.num_x)]) if has_solution else None
        return MilpOutcome("gurobi", version, status, objective, bound, store, int(m.NodeCount), seconds)
    finally:
        m.dispose()
