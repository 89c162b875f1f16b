"""Type stubs of the compiled core (``cpp/bindings``): objective, exact solver, writers."""


import enum
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

_FloatArray = npt.ArrayLike
_IndexArray = npt.ArrayLike

#: A store fits budget B when its cost sum is at most ``B + COST_SLACK * max(1, B)``.
COST_SLACK: float

class SaturationKind(enum.IntEnum):
    """The family of a saturation h (plain integers 0..3 convert implicitly)."""

    cap1 = 0
    linear = 1
    log1p = 2
    pwl = 3

class Problem:
    """A compiled package: costs, groups, weights, CSR coverage, saturations.

    Piecewise-linear saturations take their breakpoints ``z``/``h``; the others ignore them.
    """

    def __init__(
        self,
        cost: _FloatArray,
        group_of: _IndexArray,
        num_groups: int,
        weight: _FloatArray,
        indptr: _IndexArray,
        indices: _IndexArray,
        values: _FloatArray,
        saturation_of: _IndexArray,
        saturation_kinds: Sequence[SaturationKind | int],
        saturation_z: Sequence[_FloatArray],
        saturation_h: Sequence[_FloatArray],
    ) -> None: ...
    @property
    def num_candidates(self) -> int: ...
    @property
    def num_groups(self) -> int: ...
    @property
    def num_units(self) -> int: ...
    def objective(self, selected: _IndexArray) -> float:
        """F(X) for candidate indices X."""
    def marginal_gains(self, selected: _IndexArray) -> npt.NDArray[np.float64]:
        """F(u | X) for every candidate u."""
    def coverage(self, selected: _IndexArray) -> npt.NDArray[np.float64]:
        """Coverage vector z(X)."""

class CoverageState:
    """Incremental coverage vector and F(X)."""

    def __init__(self, problem: Problem) -> None: ...
    @property
    def value(self) -> float: ...
    def marginal_gain(self, candidate: int) -> float: ...
    def marginal_loss(self, candidate: int) -> float: ...
    def add(self, candidate: int) -> None: ...
    def remove(self, candidate: int) -> None: ...
    def clear(self) -> None: ...

class CancelToken:
    """A flag any thread may set to stop the solves watching it (status ``interrupted``)."""

    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    def reset(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

class BudgetStop:
    """Names, from any thread, the one budget whose search must stop (status ``time_limit``)."""

    def __init__(self) -> None: ...
    def stop(self, budget: float) -> None: ...
    @property
    def budget(self) -> float: ...
    def bound(self, budget: float, bound: float) -> None:
        """Hand the search of ``budget`` an upper bound on its OPT proven elsewhere (it prunes
        with it; ``SolveResult.external_bound_used`` says when it did)."""
    def bound_of(self, budget: float) -> float: ...
    def incumbent_of(self, budget: float) -> tuple[float, list[int]] | None:
        """The best store the search of ``budget`` has found so far (value, package candidate
        indices), or None before its first store."""

class SolveResult:
    """Outcome of one budget: incumbent, proven bound, status."""

    @property
    def budget(self) -> float: ...
    @property
    def status(self) -> str:
        """``optimal``, ``time_limit``, ``node_limit`` or ``interrupted``."""
    @property
    def proven_optimal(self) -> bool: ...
    @property
    def value(self) -> float:
        """F(selected), evaluated from scratch."""
    @property
    def upper_bound(self) -> float:
        """Proven: OPT(B) <= upper_bound."""
    @property
    def gap(self) -> float: ...
    @property
    def selected(self) -> npt.NDArray[np.int32]:
        """Candidate indices of the store, increasing."""
    @property
    def cost(self) -> float: ...
    @property
    def nodes(self) -> int: ...
    @property
    def external_bound_used(self) -> bool:
        """Part of the tree was pruned by the bound handed through ``BudgetStop.bound``."""
    @property
    def seconds(self) -> float: ...
    @property
    def root_bound(self) -> float:
        """Upper bound proven at the root, before branching."""
    @property
    def reduced_candidates(self) -> int:
        """Candidates left after the exact reductions (worthless and dominated ones removed)."""
    @property
    def open_candidates(self) -> npt.NDArray[np.int32]:
        """Candidates any store better than ``value`` must be made of (empty when proven)."""

class SolveProgress:
    """One line of the solver log."""

    @property
    def budget(self) -> float: ...
    @property
    def nodes(self) -> int: ...
    @property
    def incumbent(self) -> float: ...
    @property
    def upper_bound(self) -> float:
        """Proven at that moment: OPT(B) <= upper_bound."""
    @property
    def gap(self) -> float: ...
    @property
    def seconds(self) -> float:
        """Since the start of this budget's search."""
    @property
    def root_done(self) -> bool: ...

def solve(
    problem: Problem,
    budgets: Sequence[float],
    time_limit: float | None = None,
    node_limit: int | None = None,
    cancel: CancelToken | None = None,
    relative_tolerance: float = 1e-9,
    root_iterations: int = 0,
    node_iterations: int = 3,
    start: Sequence[int] = ...,
    progress: Callable[[SolveProgress], bool | None] | None = None,
    progress_interval: float = 1.0,
    cut_rounds: int = 8,
    cut_min_candidates: int = 400,
    progress_first: float = 0.0,
    budget_stop: BudgetStop | None = None,
) -> list[SolveResult]:
    """Exact OPT(B) for every budget (a sweep sharing preprocessing and warm starts).

    ``root_iterations`` caps the subgradient steps at the root (0: automatic, 40 to 300 with
    the package size); ``node_iterations`` those at every other node. ``start`` is a
    feasible store offered as incumbent; ``progress`` is called about every
    ``progress_interval`` seconds with a :class:`SolveProgress`. ``cut_rounds`` coverage-cut
    rounds run at the root of packages with at least ``cut_min_candidates`` candidates.
    ``progress_first``: seconds before each budget's first progress line (0: the interval).
    ``budget_stop``: the budget another thread names there stops (status ``time_limit``).
    """

def scan_package(
    raw: bytes, max_candidates: int, max_units: int, max_nonzeros: int, max_budgets: int, max_depth: int,
) -> dict[str, Any] | None:
    """The fields and arrays of a valid package's JSON text, read in one pass; None whenever
    the Python readers must look (they word every error). Keys: see model/fastpath.py."""

def compact_json(raw: bytes) -> bytes:
    """The text without the whitespace between JSON tokens (space, tab, line feed, carriage
    return outside strings); strings stay as written. Any text is accepted."""

def count_package(raw: bytes, max_depth: int) -> dict[str, Any] | None:
    """``package_id`` (None when absent or escaped), ``candidates``, ``units``, ``nonzeros``
    (coverage entries) and ``budgets`` of a package's JSON text, counted in one pass that keeps
    nothing; None when the scanner cannot read the text."""

def run_writer(
    problem: Problem,
    name: str,
    budget: float,
    order: _IndexArray,
    id_rank: _IndexArray,
    group_capacity: int = 1,
) -> npt.NDArray[np.int32]:
    """Run the core writer ``name`` (density_only, greedy, gvt); indices in insertion order."""

_Cut: TypeAlias = tuple[int, float, list[int], list[float]]

def coverage_cut_family(problem: Problem) -> tuple[list[int], list[_Cut]]:
    """(kept candidates, every coverage cut (unit, intercept, candidates, coefficients) at
    each cap1 unit's breakpoints); the cuts hold for stores of kept candidates."""

def objective_granularity(problem: Problem) -> float:
    """The largest delta > 0 with F(X) in delta * Z for every store X (0: none known)."""

def separate_coverage_cuts(problem: Problem, x: Sequence[float], pairs: bool = True) -> tuple[list[int], list[_Cut]]:
    """(kept candidates, the most violated coverage cut of each unit at a fractional x)."""

def rows_times(
    row_starts: npt.ArrayLike, row_columns: npt.ArrayLike, row_values: npt.ArrayLike, num_columns: int,
    multipliers: npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    """``lam A`` for each row ``lam`` of ``multipliers`` (k x m), the m rows of ``A`` in CSR over
    ``num_columns`` columns; every column's sum is taken in the order of the entries."""

def mir_cuts(
    row_starts: npt.ArrayLike, row_columns: npt.ArrayLike, row_values: npt.ArrayLike, rhs: npt.ArrayLike,
    lower: npt.ArrayLike, upper: npt.ArrayLike, step: npt.ArrayLike, point: npt.ArrayLike,
    min_efficacy: float = 1e-6,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float64], npt.NDArray[np.float64],
           npt.NDArray[np.float64], npt.NDArray[np.int32]]:
    """The c-MIR cut of each row where one is found (mir_cuts.hpp): (starts, columns, values,
    rhs, efficacies, source rows)."""
