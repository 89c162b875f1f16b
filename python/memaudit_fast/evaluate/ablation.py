"""Candidate-family ablations: how much of OPT survives without some representations.

MEMAUDIT's no-tombstone ablation (Bhargava & Sobral Barrento, 2026) drops the validity
candidates (tombstones and compound updates) and solves again; the ablated optimum as a
fraction of the full one,

.. math::

    \\rho(B) = OPT_{-D}(B) / OPT(B),

shows that candidate *generation* limits a writer independently of *selection* (the paper
reports about 0.52 to 0.82 of full OPT over budgets 2 to 16). Units, weights and budgets
are unchanged; only candidates go. ``OPT(B) = 0`` gives ``rho = 1``, the artifact's
convention.

Family names: ``tombstone`` drops ``tombstone``; ``update`` and the artifact's
``compound_update`` both drop ``update`` and ``compound_update`` (the project's generator
and the artifact name the same family differently). Any other name drops the
representation of that exact name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.compiled import as_package, check_budgets
from ..model.package import Package
from ..solve.exact import solve
from .scoring import ratio_of

FAMILIES: dict[str, frozenset[str]] = {
    "tombstone": frozenset({"tombstone"}),
    "update": frozenset({"update", "compound_update"}),
    "compound_update": frozenset({"update", "compound_update"}),
}
#: The paper's no-tombstone ablation.
DEFAULT_DROP = ("tombstone", "update")


def parse_drop(drop: str | Iterable[str]) -> tuple[str, ...]:
    """Family names from ``"tombstone,update"`` or a list (order kept, duplicates removed)."""
    names = drop.split(",") if isinstance(drop, str) else list(drop)
    out = [n.strip() for n in names if n.strip()]
    if not out:
        raise UsageError("--drop needs at least one representation family, e.g. tombstone,update")
    return tuple(dict.fromkeys(out))


def dropped_representations(drop: str | Iterable[str]) -> frozenset[str]:
    """Every representation the given family names remove."""
    reps: set[str] = set()
    for name in parse_drop(drop):
        reps |= FAMILIES.get(name, frozenset({name}))
    return frozenset(reps)


def ablated_package(package: Package | dict[str, Any] | str | Path, drop: str | Iterable[str] = DEFAULT_DROP) -> Package | None:
    """The package without the dropped representations (None when no candidate is left)."""
    pkg = as_package(package)
    reps = dropped_representations(drop)
    kept = [c for c in pkg.candidates if str(c.get("representation", "")) not in reps]
    if not kept:
        return None
    data = dict(pkg.data)
    data["candidates"] = kept
    data["package_id"] = f"{pkg.package_id}~drop:{','.join(parse_drop(drop))}"
    return Package.from_dict(data, source=pkg.source)


@dataclass(frozen=True)
class AblationResult:
    """Full and ablated optimum of one package at one budget."""

    package_id: str
    budget: float
    dropped: tuple[str, ...]  # family names as given
    removed: int  # candidates removed
    full_opt: float
    full_status: str
    ablated_opt: float
    ablated_status: str
    fraction: float | None  # ablated_opt / full_opt

    @property
    def label(self) -> str:
        """The key of this ablation in a record's ``ablation`` block, e.g. ``tombstone,update``."""
        return ",".join(self.dropped)

    def to_record(self) -> dict[str, Any]:
        """One entry of the ``ablation`` block of a ``memaudit.result/1`` record."""
        return {
            "dropped": list(self.dropped),
            "removed": self.removed,
            "opt": self.ablated_opt,
            "status": self.ablated_status,
            "full_opt": self.full_opt,
            "fraction_of_opt": self.fraction,
        }


def ablation_block(results: Iterable[AblationResult]) -> dict[str, dict[str, Any]]:
    """The ``ablation`` block of a record: ``{label: entry}`` for one budget's ablations."""
    return {r.label: r.to_record() for r in results}


def _solve_values(package: Package, budgets: Sequence[float], time_limit: float | None) -> list[tuple[float, str]]:
    """(OPT, status) per budget from the exact solver."""
    results = solve(package, budgets=[float(b) for b in budgets], time_limit=time_limit)
    return [(float(r.value), str(r.status)) for r in results]


def ablate(
    package: Package | dict[str, Any] | str | Path,
    budgets: float | Sequence[float] | None = None,
    drop: str | Iterable[str] = DEFAULT_DROP,
    *,
    full_opt: Sequence[float] | None = None,
    time_limit: float | None = None,
) -> list[AblationResult]:
    """Solve a package with and without some candidate families.

    Parameters
    ----------
    package
        The package (or a dict / path).
    budgets
        One budget or several; the package's own budgets when omitted.
    drop
        Family names (``"tombstone,update"`` or a list); see the module docstring.
    full_opt
        The full package's OPT per budget, when already known (skips that solve).
    time_limit
        Seconds per solve.

    Returns
    -------
    list of AblationResult
        One per budget, in the given order.
    """
    pkg = as_package(package)
    if budgets is None:
        budgets = pkg.budgets
        if not budgets:
            raise UsageError(f"package {pkg.package_id!r} has no budgets; pass budgets=")
    budget_list = check_budgets(budgets)  # numpy scalars and arrays too
    names = parse_drop(drop)
    if full_opt is None:
        full = _solve_values(pkg, budget_list, time_limit)
    else:
        if len(full_opt) != len(budget_list):
            raise UsageError("full_opt needs one value per budget")
        full = [(float(v), "given") for v in full_opt]
    reduced = ablated_package(pkg, names)
    removed = len(pkg.candidates) - (len(reduced.candidates) if reduced is not None else 0)
    ablated = _solve_values(reduced, budget_list, time_limit) if reduced is not None else [(0.0, "optimal")] * len(budget_list)
    return [
        AblationResult(
            package_id=pkg.package_id,
            budget=b,
            dropped=names,
            removed=removed,
            full_opt=fv,
            full_status=fs,
            ablated_opt=av,
            ablated_status=as_,
            fraction=ratio_of(av, fv),
        )
        for b, (fv, fs), (av, as_) in zip(budget_list, full, ablated)
    ]
